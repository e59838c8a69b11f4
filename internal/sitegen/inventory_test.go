package sitegen_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/inventory"
	"github.com/seamdc/seam/internal/sitegen"
)

// NVL72 is the worked example's rack design, field for field.
func TestNVL72IsTheExamplesDesign(t *testing.T) {
	c, diags, err := contract.Load(example)
	require.NoError(t, err)
	require.Empty(t, diags)
	want := c.Site.Module("ma").RackDesign("gb300-nvl72")
	require.NotNil(t, want)
	assert.Equal(t, strip(want), strip(sitegen.NVL72()))
}

// strip drops what only a contract file has: paths and positions.
func strip(d *inventory.RackDesign) *inventory.RackDesign {
	out := *d
	out.Path, out.Pos, out.Trays = "", inventory.RackDesign{}.Pos, nil
	for _, t := range d.Trays {
		tc := *t
		tc.Path, tc.Pos, tc.Parts, tc.Feeds = "", out.Pos, nil, nil
		q := func(x inventory.Q) inventory.Q { x.Pos = out.Pos; return x }
		tc.Power, tc.PSUPower = q(t.Power), q(t.PSUPower)
		for _, f := range t.Feeds {
			tc.Feeds = append(tc.Feeds, inventory.Ref{To: f.To})
		}
		for _, p := range t.Parts {
			pc := *p
			pc.Pos = out.Pos
			tc.Parts = append(tc.Parts, &pc)
		}
		out.Trays = append(out.Trays, &tc)
	}
	return &out
}

// A generated inventory builds and checks clean, with every rack,
// node and part of its cells, and its handover is what Handover writes.
func TestInventory(t *testing.T) {
	site, h, err := sitegen.Inventory(2)
	require.NoError(t, err)
	g, diags := inventory.Build(site, h)
	diags = append(diags, inventory.Check(g)...)
	require.Empty(t, diags)
	count := func(k inventory.Kind) int { return len(g.OfKind(k)) }
	assert.Equal(t, 2*16, count(inventory.KindRack))
	assert.Equal(t, 2*16*18, count(inventory.KindCompute))
	assert.Equal(t, 2*16*72, count(inventory.KindGPU))
	assert.Equal(t, 2*16*48, count(inventory.KindPSU))
	assert.Equal(t, 2, count(inventory.KindLoop))
	id, ok := g.Find("gpu-002-r16-n18")
	require.True(t, ok)
	assert.Equal(t, "m002/r16/compute-18", g.El(id).Key)

	written, pd, err := inventory.ParseHandover("racks.json", sitegen.Handover(site))
	require.NoError(t, err)
	require.Empty(t, pd)
	a, err := json.Marshal(written.Racks)
	require.NoError(t, err)
	b, err := json.Marshal(h.Racks)
	require.NoError(t, err)
	assert.JSONEq(t, string(a), string(b))

	// the blast radius of a loop is its module's
	loop, ok := g.Lookup("l002/loop")
	require.True(t, ok)
	assert.Len(t, inventory.Blast(g, loop).Nodes, 16*18)
}

func TestInventoryRejectsBadCounts(t *testing.T) {
	for _, n := range []int{0, 10000} {
		_, _, err := sitegen.Inventory(n)
		require.ErrorContains(t, err, "want 1 to 9999")
	}
}
