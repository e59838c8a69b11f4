package satcmd

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal's follower side: a real terminal for
// isTerminal to recognise.
func openPTY(t *testing.T) *os.File {
	t.Helper()
	leader, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	require.NoError(t, err)
	t.Cleanup(func() { leader.Close() })
	require.NoError(t, unix.IoctlSetPointerInt(int(leader.Fd()), unix.TIOCSPTLCK, 0))
	n, err := unix.IoctlGetInt(int(leader.Fd()), unix.TIOCGPTN)
	require.NoError(t, err)
	follower, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	require.NoError(t, err)
	t.Cleanup(func() { follower.Close() })
	return follower
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
