package contract_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/inventory"
	"github.com/seamdc/seam/internal/sitegen"
)

const vetBase = "testdata/vet/base"

// The vet base's handover inventory is sitegen.Handover's output for the
// base's site, as the worked example's is: go test ./internal/contract
// -run TestVetBaseHandover -update rewrites it.
func TestVetBaseHandover(t *testing.T) {
	c, diags, err := contract.Load(vetBase)
	require.NoError(t, err)
	require.Empty(t, diags)
	got := sitegen.Handover(c.Site)
	path := filepath.Join(vetBase, contract.InventoryDir, "racks.json")
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test ./internal/contract -run TestVetBaseHandover -update")
	assert.Equal(t, string(want), string(got), "run go test ./internal/contract -run TestVetBaseHandover -update")
}

// The base every case seeds its defect into vets clean, with its rack
// design and handover inventory.
func TestVetBaseClean(t *testing.T) {
	c, diags, err := contract.Vet(vetBase)
	require.NoError(t, err)
	require.Empty(t, diags, "the vet base must vet clean:\n%s", render(diags))
	require.Len(t, c.Handovers, 1)
	g, _ := c.Graph()
	assert.Len(t, g.OfKind(inventory.KindCompute), 16*18)
}
