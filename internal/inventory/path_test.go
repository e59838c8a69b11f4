package inventory_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/inventory"
)

// A node of the example draws from its rack's busbar, which eight
// shelves of six 5.5 kW PSUs feed (shelves 01–04 on PDU b and feed
// p1/block/b, 05–08 on PDU a and feed p1/block/a): eight branches up to
// block p1/block. Its coolant comes through the rack's manifold from
// each of l1's three CDUs: three branches up to the loop.
func TestPathOfNode(t *testing.T) {
	g := sharedExample(t)
	n, ok := g.Find("gpu-a-r01-n03")
	require.True(t, ok)
	p := inventory.PathOf(g, n)
	assert.Equal(t, "ma/r01/compute-03", p.Key)
	assert.Equal(t, "gpu-a-r01-n03", p.Slurm)
	assert.Equal(t, int64(6400), p.PowerW)

	require.Len(t, p.Power, 8)
	for i, b := range p.Power {
		side := "b"
		if i >= 4 {
			side = "a"
		}
		shelf := fmt.Sprintf("ma/r01/shelf-%02d", i+1)
		assert.Equal(t, []string{"ma/r01/busbar", shelf, "ma/r01/" + side, "p1/block/" + side, "p1/block"}, keys(b), "branch %d", i+1)
		assert.Equal(t, inventory.Hop{Key: shelf, Kind: "psu", Count: 6, PowerW: 33000, Note: "6 × 5.5 kW"}, b[1])
	}
	bus := p.Power[0][0]
	// it carries the rack's 130 kW on 48 × 5.5 kW of PSUs; its trays draw
	// 18 × 6.4 kW + 9 × 1.2 kW + 2 × 0.15 kW
	assert.Equal(t, int64(130000), bus.PowerW)
	assert.Equal(t, "48 PSUs of 264 kW in all; its trays draw 126.3 kW", bus.Note)
	assert.Equal(t, "breaker 250 A", p.Power[0][2].Note)
	assert.Equal(t, "breaker 4000 A, UPS 2.5 MW for 5 min", p.Power[0][3].Note)
	assert.Equal(t, inventory.Hop{Key: "p1/block", Kind: "block", PowerW: 2_500_000, Note: "2N"}, p.Power[0][4])

	require.Len(t, p.Cooling, 3)
	for i, b := range p.Cooling {
		assert.Equal(t, []string{"ma/r01/manifold", fmt.Sprintf("l1/loop/cdu-%d", i+1), "l1/loop"}, keys(b))
		assert.Equal(t, int64(1_200_000), b[1].PowerW)
		assert.Equal(t, "2 pumps, N+1", b[1].Note)
		// 16 racks × 130 kW × 90 %
		assert.Equal(t, "N+1, 1.872 MW of heat", b[2].Note)
	}
}

// A ToR switch is dual-corded: one branch per rack PDU; air-cooled, it
// has no cooling path.
func TestPathOfSwitch(t *testing.T) {
	g := sharedExample(t)
	id, ok := g.Lookup("ma/r01/tor-01")
	require.True(t, ok)
	p := inventory.PathOf(g, id)
	require.Len(t, p.Power, 2)
	assert.Equal(t, []string{"ma/r01/a", "p1/block/a", "p1/block"}, keys(p.Power[0]))
	assert.Equal(t, []string{"ma/r01/b", "p1/block/b", "p1/block"}, keys(p.Power[1]))
	assert.Empty(t, p.Cooling)
}

func keys(b inventory.Branch) []string {
	var out []string
	for _, h := range b {
		out = append(out, h.Key)
	}
	return out
}
