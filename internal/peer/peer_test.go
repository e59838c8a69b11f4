package peer

import (
	"context"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The test binary is its own peer: with SEAM_PEER_LISTEN set it listens
// there after a pause (a server slow to start, which Start must wait
// for), and spawns a child that would outlive it. Left running, it
// exits after a minute.
func TestMain(m *testing.M) {
	if addr := os.Getenv("SEAM_PEER_LISTEN"); addr != "" {
		time.Sleep(200 * time.Millisecond)
		l, err := net.Listen("tcp", addr)
		if err != nil {
			os.Exit(3)
		}
		child := exec.Command("sleep", "600")
		_ = child.Start()
		os.Stdout.WriteString("listening, child " + child.Path + "\n")
		_ = l.(*net.TCPListener).SetDeadline(time.Now().Add(time.Minute))
		for {
			c, err := l.Accept()
			if err != nil {
				os.Exit(4)
			}
			c.Close()
		}
	}
	os.Exit(m.Run())
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

// A peer is ready once it serves, and gone with its children once the
// test that started it ends.
func TestStartWaitsAndStops(t *testing.T) {
	var pid int
	t.Run("peer", func(t *testing.T) {
		addr := FreeTCP(t)
		p := Start(t, "self", Spec{Args: []string{os.Args[0]}, Env: []string{"SEAM_PEER_LISTEN=" + addr}, Ready: TCP(addr)})
		pid = p.Pid()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		assert.NoError(t, TCP(addr)(ctx), "Start returned before the peer served")
		assert.Eventually(t, func() bool { return strings.Contains(p.Output(), "listening") }, 5*time.Second, 10*time.Millisecond,
			"the peer's output (its \"listening\" line) is not kept")
	})
	assert.False(t, alive(pid), "the peer is stopped")
	assert.Eventually(t, func() bool { // killed, and reaped by init
		return exec.Command("pgrep", "-g", strconv.Itoa(pid)).Run() != nil
	}, 5*time.Second, 10*time.Millisecond, "nothing is left in the peer's process group")
}

// A peer that exits before it is ready says so, with what it printed.
func TestWaitSeesAnEarlyExit(t *testing.T) {
	cmd := exec.Command("sh", "-c", "echo no config; exit 2")
	p := &Peer{name: "early", cmd: cmd, out: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	require.NoError(t, cmd.Start())
	go func() { p.err = cmd.Wait(); close(p.done) }()
	err := p.wait(TCP(FreeTCP(t)), 10*time.Second)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "it exited (exit status 2) before it was ready")
	assert.Contains(t, p.Output(), "no config")
}

// Run bounds a command and reports its output on failure.
func TestRun(t *testing.T) {
	out, err := Run(5*time.Second, "sh", "-c", "echo hi")
	require.NoError(t, err)
	assert.Equal(t, "hi\n", out)
	_, err = Run(100*time.Millisecond, "sleep", "5")
	assert.ErrorContains(t, err, "context deadline exceeded after 100ms")
}

// Every program a test needs is in .ci/packages.
func TestPackagesNameTheirPrograms(t *testing.T) {
	pk := packages(t)
	for _, program := range []string{"snmpget", "snmpd", "snmpsimd", "mbpoll", "ssh-keygen", "chromium", "python3:pymodbus"} {
		assert.NotEmpty(t, pk[program], program)
	}
}
