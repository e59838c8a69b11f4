package inventory_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/inventory"
)

const example = "../../contracts/examples/threemodule"

// example loads the worked example with its handover inventory.
func exampleGraph(t testing.TB) (*contract.Contracts, *inventory.Graph) {
	t.Helper()
	c, diags, err := contract.Load(example)
	require.NoError(t, err)
	require.Empty(t, diags)
	hd, err := c.ReadInventory(nil)
	require.NoError(t, err)
	require.Empty(t, hd)
	g, gd := c.Graph()
	require.Empty(t, gd)
	return c, g
}

// The example's graph holds every rack, tray and part of the design,
// with the as-built's identities and names, and the relations that
// carry power, coolant and the fabrics.
func TestExampleGraph(t *testing.T) {
	_, g := exampleGraph(t)
	count := func(k inventory.Kind) int { return len(g.OfKind(k)) }
	assert.Equal(t, 48, count(inventory.KindRack))
	assert.Equal(t, 48*18, count(inventory.KindCompute), "3 modules × 16 racks × 18 compute trays")
	assert.Equal(t, 48*9, count(inventory.KindScaleUpSwitch))
	assert.Equal(t, 48*8, count(inventory.KindPowerShelf))
	assert.Equal(t, 48*8*6, count(inventory.KindPSU))
	assert.Equal(t, 48*72, count(inventory.KindGPU))
	assert.Equal(t, 48*(18+9), count(inventory.KindBMC))
	assert.Equal(t, 48, count(inventory.KindScaleUpDomain), "each rack its own NVL72 domain")

	n, ok := g.Find("gpu-a-r01-n03")
	require.True(t, ok)
	node := g.El(n)
	assert.Equal(t, "ma/r01/compute-03", node.Key)
	assert.Equal(t, 7, node.Slot, "the third compute tray from the bottom sits at U7")
	assert.Equal(t, "gpu-a-r01-n03.cluster.example", node.Names.Kubernetes)
	assert.Equal(t, int64(6400), node.PowerW)
	require.NotNil(t, node.Identity)
	assert.Equal(t, "SN-COMPUTE-0000003", node.Identity.Serial)

	// power: busbar ← 48 PSUs ← PDUs a and b ← feeds of p1
	in := g.In(inventory.Powers, n)
	require.Len(t, in, 1)
	bus := g.El(in[0])
	assert.Equal(t, "ma/r01/busbar", bus.Key)
	assert.Len(t, g.In(inventory.Powers, in[0]), 48)
	// coolant: manifold ← the three CDUs of l1
	cool := g.In(inventory.Cools, n)
	require.Len(t, cool, 1)
	assert.Equal(t, "ma/r01/manifold", g.El(cool[0]).Key)
	assert.Len(t, g.In(inventory.Cools, cool[0]), 3)
	// its BMC manages it and sits on the management switch
	bmc := g.Out(inventory.ManagedBy, n)
	require.Len(t, bmc, 1)
	assert.Equal(t, "10.1.1.7", g.El(bmc[0]).BMCAddress)
	sw := g.Out(inventory.Connects, bmc[0])
	require.Len(t, sw, 1)
	assert.Equal(t, "ma/r01/mgmt-01", g.El(sw[0]).Key)
}
