package satcmd

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/seamdc/seam/internal/evidence"
	"github.com/seamdc/seam/internal/plan"
)

// openPTY opens a pseudo-terminal's follower side: a real terminal for
// isTerminal to recognise.
func openPTY(t *testing.T) *os.File {
	t.Helper()
	_, follower := openPTYPair(t)
	return follower
}

// openPTYPair opens a pseudo-terminal: the leader side types into the
// follower side.
func openPTYPair(t *testing.T) (leader, follower *os.File) {
	t.Helper()
	leader, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	require.NoError(t, err)
	t.Cleanup(func() { leader.Close() })
	require.NoError(t, unix.IoctlSetPointerInt(int(leader.Fd()), unix.TIOCSPTLCK, 0))
	n, err := unix.IoctlGetInt(int(leader.Fd()), unix.TIOCGPTN)
	require.NoError(t, err)
	follower, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	require.NoError(t, err)
	t.Cleanup(func() { follower.Close() })
	return leader, follower
}

// Progress redraws a status line only on a terminal: not on /dev/null
// (a character device, not a terminal), a pipe or a buffer, and not on a
// terminal whose TERM is dumb.
func TestIsTerminal(t *testing.T) {
	t.Setenv("TERM", "xterm-256color")
	null, err := os.Open(os.DevNull)
	require.NoError(t, err)
	defer null.Close()
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	defer w.Close()
	pty := openPTY(t)

	require.True(t, isTerminal(pty), "a pseudo-terminal")
	require.False(t, isTerminal(null), "/dev/null")
	require.False(t, isTerminal(w), "a pipe")
	require.False(t, isTerminal(&strings.Builder{}), "a buffer")
	t.Setenv("TERM", "dumb")
	require.False(t, isTerminal(pty), "TERM=dumb")
}

// syncBuffer is a buffer written by a run and read by the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// At a terminal, p and Enter pauses the run: the case stops, its load
// goes to 0 kW, and r and Enter runs it again; the run still passes.
func TestPauseAtTheTerminal(t *testing.T) {
	t.Setenv("TERM", "xterm-256color")
	leader, follower := openPTYPair(t)
	out := filepath.Join(t.TempDir(), "ev")
	args := []string{examplePlan(t, plan.SAT), "--sim", "--contracts", exampleDir, "--fixtures", fixturesDir,
		"--time-scale", e2eScale, "--operator", "Ana", "--out", out}
	var stdout, stderr syncBuffer
	code := make(chan int, 1)
	ctl := &control{interrupt: make(chan struct{}), kill: make(chan struct{})}
	go func() { code <- runCtx(context.Background(), args, &stdout, &stderr, follower, os.LookupEnv, ctl) }()
	typeUntil := func(key, want string) {
		t.Helper()
		for !strings.Contains(stderr.String(), want) {
			select {
			case c := <-code:
				t.Fatalf("the run ended (exit %d) before %q:\n%s", c, want, stderr.String())
			case <-time.After(20 * time.Millisecond):
			}
			if strings.Contains(stderr.String(), "type p and Enter") {
				_, err := leader.Write([]byte(key + "\n"))
				require.NoError(t, err)
			}
		}
	}
	typeUntil("p", "PAUSED by Ana")
	typeUntil("r", "resumed by Ana")
	require.Equal(t, 0, <-code, "stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	journal, err := os.ReadFile(filepath.Join(out, evidence.JournalFile))
	require.NoError(t, err)
	assert.Contains(t, string(journal), `"kind":"pause"`)
	assert.Contains(t, string(journal), `"kind":"resume_pause"`)
	vcode, vout, _ := sat(t, "verify", out)
	assert.Equal(t, 0, vcode, vout)
}
