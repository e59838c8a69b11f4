package redfish_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/inventory"
	"github.com/seamdc/seam/internal/redfish"
)

// A graph Build never makes round-trips all the same: every kind, parts
// in containers whose resources cannot hold them (they become Chassis of
// type Other), keys that flatten to the same Id, BMC addresses that are
// no host, names on a non-node, firmware on a PSU, relations Redfish has
// no link for.
func TestOddGraphRoundTrips(t *testing.T) {
	g := inventory.NewGraph(&inventory.Site{Name: "odd"}, 0)
	add := func(parent inventory.ID, e inventory.Element) inventory.ID {
		id, ok := g.Add(parent, e)
		require.True(t, ok, e.Key)
		return id
	}
	site := add(inventory.None, inventory.Element{Key: "odd", Kind: inventory.KindSite})
	m := add(site, inventory.Element{Key: "m", Kind: inventory.KindModule})
	rack := add(m, inventory.Element{Key: "m/r", Kind: inventory.KindRack, PowerW: 50000, HeightU: 42})
	twin := add(m, inventory.Element{Key: "m-r", Kind: inventory.KindRack}) // flattens like m/r
	sw := add(rack, inventory.Element{Key: "m/r/sw", Kind: inventory.KindScaleUpSwitch, Slot: 3, HeightU: 2, Liquid: true,
		Identity: &inventory.Identity{Serial: "S1", Firmware: map[string]string{"bmc": "1", "bios": "2", "nv/link": "3"}}})
	asic := add(sw, inventory.Element{Key: "m/r/sw/asic-1", Kind: inventory.KindASIC, Slot: 1}) // no domain: no fabric
	cpu := add(sw, inventory.Element{Key: "m/r/sw/cpu-1", Kind: inventory.KindCPU, Slot: 1})    // the tray gets a system
	bmc := add(sw, inventory.Element{Key: "m/r/sw/bmc", Kind: inventory.KindBMC, BMCAddress: "fe80::1",
		Identity: &inventory.Identity{AssetTag: "no AssetTag on a Manager"}})
	bmc2 := add(twin, inventory.Element{Key: "m-r/bmc", Kind: inventory.KindBMC, BMCAddress: "bmc.example/path"})
	pdu := add(rack, inventory.Element{Key: "m/r/pdu", Kind: inventory.KindPDU, PowerW: 17, Slot: 2, Identity: &inventory.Identity{Model: "P"}})
	psu := add(pdu, inventory.Element{Key: "m/r/pdu/psu", Kind: inventory.KindPSU, PowerW: 3000, Slot: 1, // in a PDU: no PowerSupply
		Identity: &inventory.Identity{Firmware: map[string]string{"fw": "9"}}})
	feed := add(m, inventory.Element{Key: "m/feed", Kind: inventory.KindFeed}) // not in a block: no Circuit
	gpu := add(m, inventory.Element{Key: "m/gpu", Kind: inventory.KindGPU, Names: &inventory.NodeNames{Kubernetes: "k"}})
	loop := add(rack, inventory.Element{Key: "m/r/loop", Kind: inventory.KindLoop}) // a loop in a chassis
	cdu := add(site, inventory.Element{Key: "cdu", Kind: inventory.KindCDU, PowerW: 1})
	pump := add(cdu, inventory.Element{Key: "cdu/pump", Kind: inventory.KindPump, Slot: 2})
	dom := add(m, inventory.Element{Key: "m/scale-up/x", Kind: inventory.KindScaleUpDomain})
	add(site, inventory.Element{Key: "shared/w", Kind: inventory.KindShared})
	lb := add(site, inventory.Element{Key: "lb", Kind: inventory.KindLoadBank, PowerW: 1000})
	for _, k := range []inventory.Kind{inventory.KindDrive, inventory.KindMemory, inventory.KindNIC, inventory.KindDPU} {
		add(sw, inventory.Element{Key: "m/r/sw/" + k.String(), Kind: k, Slot: 4})
	}
	for _, e := range []struct {
		r        inventory.Relation
		from, to inventory.ID
	}{
		{inventory.Powers, feed, pdu}, {inventory.Powers, pdu, psu}, {inventory.Powers, psu, sw}, {inventory.Powers, lb, cpu},
		{inventory.Cools, loop, cdu}, {inventory.Cools, cdu, sw}, {inventory.Cools, pump, gpu},
		{inventory.Connects, bmc, twin}, {inventory.Connects, lb, m}, {inventory.Connects, asic, dom},
		{inventory.ManagedBy, sw, bmc}, {inventory.ManagedBy, pdu, bmc2}, {inventory.ManagedBy, cdu, gpu},
	} {
		require.True(t, g.Link(e.r, e.from, e.to))
	}
	assert.False(t, g.Link(inventory.Contains, site, m), "Contains comes from Add")
	assert.False(t, g.Link(inventory.Powers, site, 999))
	g.Seal()
	_, ok := g.Add(site, inventory.Element{Key: "late"})
	assert.False(t, ok, "a sealed graph takes nothing more")

	tree := redfish.Export(g)
	back, rep := redfish.Import(tree, "odd")
	require.Empty(t, rep.Problems)
	assert.Empty(t, rep.Notes)
	assertSameGraph(t, g, back)
	assert.Empty(t, tree.Diff(redfish.Export(back)))

	assert.Equal(t, "https://[fe80::1]/redfish/v1", doc(t, tree, "/redfish/v1/Managers/m-r-sw-bmc")["RemoteRedfishServiceUri"])
	assert.Equal(t, "bmc.example/path", at(doc(t, tree, "/redfish/v1/Managers/m-r-bmc"), "Oem", "Seam", "Address"))
	assert.Equal(t, "m-r", doc(t, tree, "/redfish/v1/Chassis/m-r")["Name"])
	assert.Equal(t, "m/r", doc(t, tree, "/redfish/v1/Chassis/m-r~2")["Name"], "m/r sorts after m-r: its Id is the second")
	assert.Equal(t, "Other", doc(t, tree, "/redfish/v1/Chassis/m-r-pdu-psu")["ChassisType"], "a PSU in a PDU")
	assert.Equal(t, "Other", doc(t, tree, "/redfish/v1/Chassis/m-r-sw-asic-1")["ChassisType"], "an ASIC in no fabric")
	assert.Equal(t, "/redfish/v1/Systems/m-r-sw/Processors/cpu-1", doc(t, tree, "/redfish/v1/Systems/m-r-sw/Processors/cpu-1")["@odata.id"])
}

// An empty graph exports the service root and its collections, and
// reads back empty.
func TestEmptyGraph(t *testing.T) {
	g := inventory.NewGraph(&inventory.Site{}, 0)
	g.Seal()
	tree := redfish.Export(g)
	assert.Equal(t, 0, tree.Members("/redfish/v1/Chassis"))
	back, rep := redfish.Import(tree, "empty")
	assert.Empty(t, rep.Problems)
	assert.Equal(t, 0, back.Len())
	assert.Empty(t, tree.Diff(redfish.Export(back)))
}
