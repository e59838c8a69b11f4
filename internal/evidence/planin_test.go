package evidence

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A bundle stopped between recording its plan and putting it in place
// still names its plan (sat run --resume DIR reads it from there).
func TestPlanIn(t *testing.T) {
	dir := t.TempDir()
	assert.Equal(t, filepath.Join(dir, PlanFile), PlanIn(dir), "no plan at all: the usual path, for the error")
	require.NoError(t, os.WriteFile(filepath.Join(dir, tmpPrefix+PlanFile), []byte("{}"), 0o644))
	assert.Equal(t, filepath.Join(dir, tmpPrefix+PlanFile), PlanIn(dir))
	require.NoError(t, os.WriteFile(filepath.Join(dir, PlanFile), []byte("{}"), 0o644))
	assert.Equal(t, filepath.Join(dir, PlanFile), PlanIn(dir))
}
