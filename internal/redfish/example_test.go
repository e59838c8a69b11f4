package redfish_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/inventory"
)

const example = "../../contracts/examples/threemodule"

// exampleGraph loads the worked example with its handover inventory.
func exampleGraph(t testing.TB) *inventory.Graph {
	t.Helper()
	c, diags, err := contract.Load(example)
	require.NoError(t, err)
	require.Empty(t, diags)
	hd, err := c.ReadInventory(nil)
	require.NoError(t, err)
	require.Empty(t, hd)
	g, gd := c.Graph()
	require.Empty(t, gd)
	return g
}
