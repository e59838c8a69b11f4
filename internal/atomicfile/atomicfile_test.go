package atomicfile_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/atomicfile"
)

// The file is replaced whole with the mode asked for, and nothing is
// left beside it; a directory that does not exist is an error naming
// the path.
func TestWrite(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "head.json")
	require.NoError(t, os.WriteFile(p, []byte("old, longer content"), 0o600))
	require.NoError(t, atomicfile.Write(p, []byte("new"), 0o644))
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	assert.Equal(t, "new", string(b))
	st, err := os.Stat(p)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o644), st.Mode().Perm())
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "no temporary file left")

	err = atomicfile.Write(filepath.Join(dir, "missing", "x"), nil, 0o644)
	assert.ErrorContains(t, err, filepath.Join(dir, "missing"))
}
