package contractc

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestWriteOutKeepsSpecialFiles: -o to a pipe or device writes into it
// and leaves it what it was; a regular file is replaced whole.
func TestWriteOutKeepsSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	got := make(chan []byte)
	go func() {
		f, err := os.Open(fifo)
		if err != nil {
			got <- nil
			return
		}
		b, _ := io.ReadAll(f)
		f.Close()
		got <- b
	}()
	require.NoError(t, writeOut(fifo, []byte("plan\n"), io.Discard))
	require.Equal(t, "plan\n", string(<-got))
	st, err := os.Stat(fifo)
	require.NoError(t, err)
	require.Equal(t, os.ModeNamedPipe, st.Mode().Type(), "the pipe must stay a pipe")

	file := filepath.Join(dir, "plan.json")
	require.NoError(t, os.WriteFile(file, []byte("old and longer\n"), 0o644))
	require.NoError(t, writeOut(file, []byte("new\n"), io.Discard))
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	require.Equal(t, "new\n", string(b))
	left, err := filepath.Glob(filepath.Join(dir, ".plan-*"))
	require.NoError(t, err)
	require.Empty(t, left, "no temporary file may be left behind")

	var out bytes.Buffer
	require.NoError(t, writeOut("-", []byte("x"), &out))
	require.Equal(t, "x", out.String())
	require.ErrorContains(t, writeOut(dir, []byte("x"), io.Discard), "is a directory")
}
