package sitegen_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/sitegen"
)

func TestWriteVetsClean(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, sitegen.Write(dir, 4))
	c, diags, err := contract.Vet(dir)
	require.NoError(t, err)
	require.Empty(t, diags.Sorted(), "a generated site must vet clean")
	require.Len(t, c.Site.Modules, 4*3+1)
	require.Len(t, c.Boundaries, 4*3)
	require.Len(t, c.Site.LoadBanks, 4)
	for _, b := range c.Boundaries {
		require.NotEmpty(t, b.Steady, b.ID)
		require.NotEmpty(t, b.Failure, b.ID)
	}
}

func TestWriteRejectsBadCounts(t *testing.T) {
	for _, n := range []int{0, -1, 10000} {
		err := sitegen.Write(t.TempDir(), n)
		require.ErrorContains(t, err, "want 1 to 9999")
	}
}

func TestWriteReportsUnwritableDir(t *testing.T) {
	err := sitegen.Write("/proc/no-such-dir/site", 1)
	require.Error(t, err)
	require.Contains(t, err.Error(), "sitegen")
}
