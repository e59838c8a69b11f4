package inventory_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/inventory"
)

// TestReservedAndSpare: a handover declares rack position r02 reserved
// and empty, and a spare compute tray on a-r01's shelf. The reserved
// rack holds nothing (no trays, no busbar, no nodes); the spare is no
// node, draws nothing and is listed, and found by its serial.
func TestReservedAndSpare(t *testing.T) {
	src := strings.Replace(smallRacks, `"pdu": "b"}
  ]}`, `"pdu": "b"},
    {"spare": true, "kind": "compute", "serial": "SN-SPARE-1"}
  ]},
  {"module": "ma", "position": "r02", "reserved": true}`, 1)
	require.NotEqual(t, smallRacks, src)
	h, diags, err := inventory.ParseHandover("racks.json", []byte(src))
	require.NoError(t, err)
	require.Empty(t, diags, text(diags))
	g, bd := inventory.Build(smallSite(t), h)
	diags = append(bd, inventory.Check(g)...)
	require.Empty(t, diags, text(diags))

	var nodes []string
	for _, id := range g.OfKind(inventory.KindCompute) {
		nodes = append(nodes, g.El(id).Key)
	}
	assert.Equal(t, []string{"ma/r01/compute-01", "ma/r01/compute-02"}, nodes, "the spare and the reserved rack are no nodes")
	spares := g.OfKind(inventory.KindSpare)
	require.Len(t, spares, 1)
	assert.Equal(t, "ma/r01/spare-compute-01", g.El(spares[0]).Key)
	assert.Zero(t, g.El(spares[0]).PowerW)
	assert.Empty(t, g.In(inventory.Powers, spares[0]), "a spare is powered by nothing")
	id, ok := g.Find("SN-SPARE-1")
	require.True(t, ok)
	assert.Equal(t, spares[0], id)
	bus, ok := g.Lookup("ma/r01/busbar")
	require.True(t, ok)
	assert.Equal(t, int64(20000), g.El(bus).PowerW, "the spare draws no design power")

	r02, ok := g.Lookup("ma/r02")
	require.True(t, ok)
	assert.True(t, g.El(r02).Reserved)
	for _, c := range g.Children(r02) {
		assert.Equal(t, inventory.KindPDU, g.El(c).Kind, "a reserved position holds nothing but its PDUs: %s", g.El(c).Key)
	}
}

// TestReservedAndSpareRefused: what the declarations cannot say.
func TestReservedAndSpareRefused(t *testing.T) {
	for _, c := range []struct{ name, old, new, want string }{
		{"a spare in a slot", `"pdu": "b"}`, `"pdu": "b"}, {"spare": true, "slot": 6, "kind": "compute"}`,
			"rack a-r01: tray 6 is a spare in slot U6: a spare is on the shelf, in no slot"},
		{"a spare of no kind", `"pdu": "b"}`, `"pdu": "b"}, {"spare": true}`,
			`rack a-r01: tray 6 has no a "kind"`},
		{"a reserved position with trays", `"serial": "SN-R1",`, `"serial": "SN-R1", "reserved": true,`,
			"rack a-r01 is reserved, but lists 5 installed trays: a reserved position holds nothing"},
	} {
		t.Run(c.name, func(t *testing.T) {
			require.Contains(t, smallRacks, c.old)
			_, diags, err := inventory.ParseHandover("racks.json", []byte(strings.Replace(smallRacks, c.old, c.new, 1)))
			require.NoError(t, err)
			require.Len(t, diags, 1, text(diags))
			assert.Contains(t, diags[0].Message, c.want)
		})
	}
}
