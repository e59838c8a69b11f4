package inventory_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/inventory"
)

// The example has 3 modules × 16 racks × 18 nodes = 864 nodes: 288 per
// failure domain, block, loop and feed (each node is on both feeds of
// its block), 18 per rack and scale-up domain, all of one generation.
func TestNodesBy(t *testing.T) {
	g := sharedExample(t)
	sizes := func(by string) map[string]int {
		groups, err := inventory.NodesBy(g, by)
		require.NoError(t, err)
		out := map[string]int{}
		for _, gr := range groups {
			out[gr.Key] = len(gr.Nodes)
		}
		return out
	}
	assert.Equal(t, map[string]int{"fd-a": 288, "fd-b": 288, "fd-c": 288}, sizes(inventory.ByDomain))
	assert.Equal(t, map[string]int{"p1/block": 288, "p2/block": 288, "p3/block": 288}, sizes(inventory.ByBlock))
	assert.Equal(t, map[string]int{"p1/block/a": 288, "p1/block/b": 288, "p2/block/a": 288, "p2/block/b": 288,
		"p3/block/a": 288, "p3/block/b": 288}, sizes(inventory.ByFeed))
	assert.Equal(t, map[string]int{"l1/loop": 288, "l2/loop": 288, "l3/loop": 288}, sizes(inventory.ByLoop))
	assert.Equal(t, map[string]int{"gb300-nvl72": 864}, sizes(inventory.ByGeneration))
	racks := sizes(inventory.ByRack)
	assert.Len(t, racks, 48)
	assert.Equal(t, 18, racks["mb/r07"])
	domains := sizes(inventory.ByScaleUp)
	assert.Len(t, domains, 48)
	assert.Equal(t, 18, domains["mc/r16/scale-up"])

	groups, err := inventory.NodesBy(g, inventory.ByRack)
	require.NoError(t, err)
	assert.Equal(t, "ma/r01", groups[0].Key, "groups sorted by key")
	assert.Equal(t, "ma/r01/compute-01", g.El(groups[0].Nodes[0]).Key, "nodes sorted by key")
	assert.Equal(t, 4, inventory.NodeGPUs(g, groups[0].Nodes[0]))

	_, err = inventory.NodesBy(g, "colour")
	assert.EqualError(t, err, `nodes by "colour": want one of domain, block, feed, loop, rack, scale-up, generation`)
}

// Lookup finds parts (kept out of the key index) through their tray;
// Find takes keys, node names and serials.
func TestLookupParts(t *testing.T) {
	g := sharedExample(t)
	id, ok := g.Lookup("ma/r01/compute-03/gpu-2")
	require.True(t, ok)
	assert.Equal(t, inventory.KindGPU, g.El(id).Kind)
	id, ok = g.Lookup("ma/r01/shelf-08/psu-6")
	require.True(t, ok)
	assert.Equal(t, inventory.KindPSU, g.El(id).Kind)
	_, ok = g.Lookup("ma/r01/compute-03/gpu-9")
	assert.False(t, ok)
	_, ok = g.Lookup("ma/r99/compute-03/gpu-1")
	assert.False(t, ok)
	id, ok = g.Find("ma/r01/compute-03/gpu-2")
	require.True(t, ok)
	assert.Equal(t, "ma/r01/compute-03/gpu-2", g.El(id).Key)
	id, ok = g.Find("SN-PSU-0000001")
	require.True(t, ok)
	assert.Equal(t, "ma/r01/shelf-01/psu-1", g.El(id).Key)
}

// Parts added under a tray in two runs are still found once each: the
// second run puts every part in the key index.
func TestAddPartsInTwoRuns(t *testing.T) {
	g := inventory.NewGraph(&inventory.Site{Name: "s"}, 8)
	tray, _ := g.Add(inventory.None, inventory.Element{Key: "r/t", Kind: inventory.KindCompute})
	other, _ := g.Add(inventory.None, inventory.Element{Key: "r/u", Kind: inventory.KindCompute})
	gpu1, ok := g.Add(tray, inventory.Element{Key: "r/t/gpu-1", Kind: inventory.KindGPU})
	require.True(t, ok)
	_, ok = g.Add(tray, inventory.Element{Key: "r/t/gpu-1", Kind: inventory.KindGPU})
	assert.False(t, ok, "a part twice in one run")
	got, _ := g.Lookup("r/t/gpu-1")
	assert.Equal(t, gpu1, got, "found before the graph is sealed")
	_, ok = g.Add(other, inventory.Element{Key: "r/u/gpu-1", Kind: inventory.KindGPU})
	require.True(t, ok)
	again, ok := g.Add(tray, inventory.Element{Key: "r/t/gpu-1", Kind: inventory.KindGPU})
	assert.False(t, ok, "a part twice in two runs")
	assert.Equal(t, gpu1, again)
	_, ok = g.Add(tray, inventory.Element{Key: "r/t/gpu-2", Kind: inventory.KindGPU})
	require.True(t, ok)
	g.Seal()
	for _, k := range []string{"r/t/gpu-1", "r/t/gpu-2", "r/u/gpu-1"} {
		id, ok := g.Lookup(k)
		require.True(t, ok, k)
		assert.Equal(t, k, g.El(id).Key)
	}
	assert.Len(t, g.Children(tray), 2)
}
