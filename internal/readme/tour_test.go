// Package readme tests that the README's commands work as written.
package readme

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/peer"
	"github.com/seamdc/seam/internal/peer/slurmtest"
	"github.com/seamdc/seam/internal/topology/hostlist"
)

// TestTour runs the README's tour, line by line, with bash, as a new
// user would in a clone: the binaries built from this tree, the example
// copied, a git repository with a main branch, an SSH key in ~/.ssh, a
// real Slurm (running the topology the tour generated) for the lines
// that read it, which the README marks "needs Slurm". Each line must
// exit 0, or the code its comment names ("exit 2"). What differs from a
// user's shell: /tmp/ is the test's own directory, the build line runs
// in the repository (the copy has no go.mod), and after a line that
// starts a server in the background the test waits for the binding it
// writes, as a user waits for its first line.
func TestTour(t *testing.T) {
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	lines := tourLines(t, filepath.Join(root, "README.md"))
	require.Greater(t, len(lines), 20, "the tour")

	w := t.TempDir()
	home, tmp := filepath.Join(w, "home"), filepath.Join(w, "tmp")
	for _, d := range []string{filepath.Join(home, ".ssh"), tmp, filepath.Join(w, "contracts", "examples")} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	must(t, root, nil, "cp", "-r", "contracts/examples/threemodule", filepath.Join(w, "contracts", "examples"))
	for _, d := range []string{"fixtures", "deploy"} { // read, never written, by the tour
		require.NoError(t, os.Symlink(filepath.Join(root, d), filepath.Join(w, d)))
	}
	must(t, w, nil, peer.Need(t, "ssh-keygen"), "-q", "-t", "ed25519", "-N", "", "-C", "tour", "-f", filepath.Join(home, ".ssh", "id_ed25519"))
	git := []string{"-c", "user.name=tour", "-c", "user.email=tour@example.com"}
	must(t, w, nil, "git", "init", "-q", "-b", "main")
	must(t, w, nil, "git", append(git, "add", "-A")...)
	must(t, w, nil, "git", append(git, "commit", "-q", "-m", "the example")...)

	env := append(os.Environ(), "HOME="+home, "TERM=dumb")

	var vars []string // NAME=value lines, which every later line needs
	slurmUp := false
	var pgids []int
	t.Cleanup(func() {
		for _, g := range pgids {
			_ = syscall.Kill(-g, syscall.SIGTERM)
		}
	})
	for _, l := range lines {
		if strings.HasPrefix(l.cmd, "go build ") {
			must(t, root, nil, "go", "build", "-o", filepath.Join(w, "bin")+"/", "./cmd/...")
			continue
		}
		cmd := strings.ReplaceAll(l.cmd, "/tmp/", tmp+"/")
		if regexp.MustCompile(`^[A-Z_]+=\S+$`).MatchString(cmd) {
			vars = append(vars, cmd)
			continue
		}
		if strings.Contains(cmd, "--slurm") {
			// where Slurm is not installed such a line says so and exits
			// 1 (internal/contractc's TestSlurmUnreachable): the README
			// marks it
			require.Contains(t, l.cmd, "# needs Slurm", "README line %d reads the live Slurm: mark it", l.n)
		}
		if strings.Contains(cmd, "--slurm") && !slurmUp {
			// the site's Slurm, running the topology the tour generated
			slurm := startSlurm(t, filepath.Join(w, "topology.conf"))
			env, slurmUp = append(env, slurm.Env()...), true
		}
		script := strings.Join(append(append([]string{}, vars...), cmd), "\n")
		code, out, pgid := run(t, w, env, script)
		if background.MatchString(cmd) {
			pgids = append(pgids, pgid)
			waitFor(t, binding(cmd), pgid, out)
			continue
		}
		if code != 0 && code != l.exit {
			t.Fatalf("README line %d: %s\nexited %d (its comment allows %d):\n%s", l.n, l.cmd, code, l.exit, out)
		}
		require.NotContains(t, out.String(), "panic:", "README line %d: %s", l.n, l.cmd)
		t.Logf("line %d: exit %d: %s", l.n, code, l.cmd)
	}
}

// background is a line that starts a server: it ends in &, before its
// comment.
var background = regexp.MustCompile(`&\s*(#.*)?$`)

// startSlurm starts a real slurmctld whose nodes and topology are
// topology.conf's (no slurmd: the nodes need only exist).
func startSlurm(t *testing.T, topologyConf string) *slurmtest.Cluster {
	t.Helper()
	b, err := os.ReadFile(topologyConf)
	require.NoError(t, err, "the tour writes topology.conf before it reads the live Slurm")
	var nodes []slurmtest.Node
	for _, m := range regexp.MustCompile(`(?m)\bNodes=(\S+)`).FindAllStringSubmatch(string(b), -1) {
		names, err := hostlist.Expand(m[1])
		require.NoError(t, err)
		for _, n := range names {
			nodes = append(nodes, slurmtest.Node{Name: n})
		}
	}
	require.NotEmpty(t, nodes, "%s names no nodes", topologyConf)
	return slurmtest.Start(t, slurmtest.Config{Nodes: nodes, Topology: b})
}

type tourLine struct {
	n    int
	cmd  string // the line, comment and all
	exit int    // the non-zero exit its comment names, else 0
}

// tourLines are the commands of the README's tour: its first sh block
// after "## A tour".
func tourLines(t *testing.T, readme string) []tourLine {
	t.Helper()
	b, err := os.ReadFile(readme)
	require.NoError(t, err)
	var out []tourLine
	in, inTour := false, false
	exitRe := regexp.MustCompile(`\(exit (\d)\b`)
	for i, l := range strings.Split(string(b), "\n") {
		switch {
		case strings.HasPrefix(l, "## "):
			inTour = l == "## A tour"
		case inTour && l == "```sh":
			in = true
		case in && l == "```":
			return out
		case in && strings.TrimSpace(l) != "":
			tl := tourLine{n: i + 1, cmd: l}
			if m := exitRe.FindStringSubmatch(l); m != nil {
				tl.exit, _ = strconv.Atoi(m[1])
			}
			out = append(out, tl)
		}
	}
	t.Fatalf("%s: no ```sh block under ## A tour", readme)
	return nil
}

// run runs script with bash in dir, in its own process group (a server
// it starts in the background stays in it, to be stopped at the end).
// The output goes to a file, not a pipe: a background server keeps its
// end of a pipe open, and Wait would wait for it.
func run(t *testing.T, dir string, env []string, script string) (int, *output, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	f, err := os.CreateTemp(t.TempDir(), "line-*.log")
	require.NoError(t, err)
	defer f.Close()
	c := exec.CommandContext(ctx, "bash", "-c", script)
	c.Dir, c.Env, c.Stdout, c.Stderr = dir, env, f, f
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, c.Start())
	pgid := c.Process.Pid
	err = c.Wait()
	out := &output{file: f.Name()}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), out, pgid
	}
	require.NoError(t, err, script)
	return 0, out, pgid
}

// output is what a line printed, read when asked (a server in the
// background goes on writing).
type output struct{ file string }

func (o *output) String() string {
	b, _ := os.ReadFile(o.file)
	return string(b)
}

// binding is the binding file a backgrounded sat sim writes (--out DIR).
func binding(cmd string) string {
	m := regexp.MustCompile(`--out (\S+)`).FindStringSubmatch(cmd)
	if m == nil {
		return ""
	}
	return filepath.Join(m[1], "binding.cue")
}

// waitFor waits for file, which the server left running in process
// group pgid writes: three minutes at most, a bound, not a measure (a
// busy machine opens the simulated site's 1,800 ports slowly); a server
// that exits first fails at once.
func waitFor(t *testing.T, file string, pgid int, out *output) {
	t.Helper()
	require.NotEmpty(t, file, "a line run in the background that writes no --out binding")
	const within = 3 * time.Minute
	deadline := time.After(within)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, err := os.Stat(file); err == nil {
			return
		}
		if syscall.Kill(-pgid, 0) != nil {
			t.Fatalf("the server exited without writing %s:\n%s", file, out)
		}
		select {
		case <-deadline:
			t.Fatalf("%s was not written within %s:\n%s", file, within, out)
		case <-tick.C:
		}
	}
}

func must(t *testing.T, dir string, env []string, prog string, args ...string) {
	t.Helper()
	c := exec.Command(prog, args...)
	c.Dir = dir
	if env != nil {
		c.Env = env
	}
	out, err := c.CombinedOutput()
	require.NoError(t, err, "%s %s:\n%s", prog, strings.Join(args, " "), out)
}
