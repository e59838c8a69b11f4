// Package peer runs the third-party programs seam's tests talk to —
// net-snmp, snmpsim, pymodbus, mbpoll, ssh-keygen, Chromium, and the
// operate side's servers — the same way everywhere: found or named with
// the Debian package that installs it (never skipped), started on free
// loopback ports in a process group of its own, waited for with a
// bound, its output attached to the failure of the test that started
// it, and stopped by its process group when the test ends. Go programs
// a test needs (sat itself, servers built from source) are built once
// per test process.
//
// The packages are listed once, in .ci/packages at the repository root,
// which .ci/run and make test install from.
package peer

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Root is the repository root: the directory of go.mod above the
// working directory.
func Root(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			t.Fatalf("no go.mod above %s", dir)
		}
	}
}

// packages maps what shows a package installed (a program, python3:M,
// file:P) to the package, from .ci/packages.
func packages(t testing.TB) map[string]string {
	t.Helper()
	f, err := os.Open(filepath.Join(Root(t), ".ci", "packages"))
	if err != nil {
		t.Fatalf("the list of test peers: %v", err)
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		for _, probe := range fields[1:] {
			out[probe] = fields[0]
		}
	}
	return out
}

// missing fails the test saying what to install.
func missing(t testing.TB, what, probe string) {
	t.Helper()
	pkg := packages(t)[probe]
	if pkg == "" {
		t.Fatalf("%s not found, and .ci/packages does not say which Debian package has it: add it there", what)
	}
	t.Fatalf("%s not found: install the Debian package %s (sudo apt-get install -y %s; make test and .ci/run install every package of .ci/packages)", what, pkg, pkg)
}

// Need returns the path of program, found on PATH or in /usr/sbin, or
// fails the test naming the package to install.
func Need(t testing.TB, program string) string {
	t.Helper()
	if p, err := exec.LookPath(program); err == nil {
		return p
	}
	for _, dir := range []string{"/usr/sbin", "/sbin", "/usr/bin"} {
		p := filepath.Join(dir, program)
		if st, err := os.Stat(p); err == nil && st.Mode()&0o111 != 0 {
			return p
		}
	}
	missing(t, program, program)
	return ""
}

// Python returns Debian's python3 once it imports module, or fails the
// test naming the package (a python3 on PATH may be another one).
func Python(t testing.TB, module string) string {
	t.Helper()
	const python = "/usr/bin/python3"
	if err := exec.Command(python, "-c", "import "+module).Run(); err != nil {
		missing(t, python+" with the module "+module, "python3:"+module)
	}
	return python
}

// FreeTCP is a loopback TCP address that was free a moment ago.
func FreeTCP(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// FreeUDP is a loopback UDP address that was free a moment ago.
func FreeUDP(t testing.TB) string {
	t.Helper()
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.LocalAddr().String()
}

// Spec is a peer to start.
type Spec struct {
	Args []string // the program first
	Env  []string // added to the test's environment
	Dir  string
	// Ready returns nil once the peer serves; nil: started is ready.
	Ready func(ctx context.Context) error
	// Within bounds the wait for Ready (default 30 s).
	Within time.Duration
	// Stop is how long the peer may take to exit after SIGTERM before it
	// is killed (default 5 s).
	Stop time.Duration
}

// Peer is a running peer.
type Peer struct {
	name string
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{}
	err  error // how it exited, once done is closed
}

// Start runs a peer until the test ends, ready. Its output is shown if
// the test fails; a peer that exits before it is ready, or is not ready
// within the bound, fails the test with its output.
func Start(t testing.TB, name string, s Spec) *Peer {
	t.Helper()
	if len(s.Args) == 0 {
		t.Fatalf("peer %s: no program", name)
	}
	cmd := exec.Command(s.Args[0], s.Args[1:]...)
	cmd.Env = append(os.Environ(), s.Env...)
	cmd.Dir = s.Dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p := &Peer{name: name, cmd: cmd, out: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if err := cmd.Start(); err != nil {
		t.Fatalf("peer %s: %v", name, err)
	}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.stop(s.Stop)
		if t.Failed() {
			t.Logf("peer %s (%s) said:\n%s", name, strings.Join(s.Args, " "), p.out.String())
		}
	})
	if s.Ready != nil {
		if err := p.wait(s.Ready, s.Within); err != nil {
			t.Fatalf("peer %s is not ready: %v\n%s said:\n%s", name, err, name, p.out.String())
		}
	}
	return p
}

// wait polls ready until it returns nil, the peer exits, or within
// passes.
func (p *Peer) wait(ready func(context.Context) error, within time.Duration) error {
	if within <= 0 {
		within = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	var last error
	for {
		attempt, stop := context.WithTimeout(ctx, time.Second)
		last = ready(attempt)
		stop()
		if last == nil {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("it exited (%v) before it was ready: %w", p.err, last)
		case <-ctx.Done():
			return fmt.Errorf("not within %s: %w", within, last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// stop ends the peer's process group: SIGTERM, then SIGKILL.
func (p *Peer) stop(grace time.Duration) {
	if grace <= 0 {
		grace = 5 * time.Second
	}
	pgid := -p.cmd.Process.Pid
	_ = syscall.Kill(pgid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = syscall.Kill(pgid, syscall.SIGKILL)
		<-p.done
	}
	_ = syscall.Kill(pgid, syscall.SIGKILL) // anything it left behind
}

// Output is what the peer printed so far.
func (p *Peer) Output() string { return p.out.String() }

// Pid is the peer's process id.
func (p *Peer) Pid() int { return p.cmd.Process.Pid }

// TCP is ready once addr accepts a connection.
func TCP(addr string) func(context.Context) error {
	return func(ctx context.Context) error {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return err
		}
		return c.Close()
	}
}

// Run runs a program to its end within timeout and returns its standard
// output; an error carries the command, its exit and both outputs.
func Run(timeout time.Duration, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w after %s", ctx.Err(), timeout)
		}
		return out.String() + errb.String(), fmt.Errorf("%s: %w\n%s%s", strings.Join(args, " "), err, out.String(), errb.String())
	}
	return out.String(), nil
}

var (
	builtMu sync.Mutex
	built   = map[string]string{}
)

// BuildGo builds the main package pkg (relative to the repository root,
// "./cmd/sat") once per test process and returns the binary. Binaries go
// to the user's cache directory (seam-test-bin), so that runs do not
// leave copies behind; go's build cache makes a rebuild cheap.
func BuildGo(t testing.TB, pkg string) string {
	t.Helper()
	builtMu.Lock()
	defer builtMu.Unlock()
	if bin, ok := built[pkg]; ok {
		return bin
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	root := Root(t)
	dir := filepath.Join(cache, "seam-test-bin", strings.ReplaceAll(strings.Trim(root, "/"), "/", "_"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, filepath.Base(pkg))
	cmd := exec.Command("go", "build", "-o", bin, pkg)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
	built[pkg] = bin
	return bin
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.b.Len() > 1<<20 {
		return len(p), nil // keep the first MiB
	}
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
