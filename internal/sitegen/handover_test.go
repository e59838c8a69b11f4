package sitegen_test

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/sitegen"
)

var update = flag.Bool("update", false, "rewrite the example's handover inventory")

const example = "../../contracts/examples/threemodule"

// The worked example's handover inventory is this generator's output
// (go test ./internal/sitegen -update writes it).
func TestExampleHandoverIsGenerated(t *testing.T) {
	c, diags, err := contract.Load(example)
	require.NoError(t, err)
	require.Empty(t, diags)
	got := sitegen.Handover(c.Site)
	path := filepath.Join(example, contract.InventoryDir, "racks.json")
	if *update {
		require.NoError(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, string(want), string(got), "run go test ./internal/sitegen -update")
}
