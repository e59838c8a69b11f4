package redfish_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/inventory"
	"github.com/seamdc/seam/internal/redfish"
)

// Export → Import → Export of the worked example is byte-identical, and
// the graph read back is the graph exported: every element with every
// field, every edge of every relation. Import adds its elements in
// another order than Build (containers first, then by key), so this
// also shows that the export does not depend on the graph's order.
func TestExportImportExport(t *testing.T) {
	g := exampleGraph(t)
	tree := redfish.Export(g)
	back, rep := redfish.Import(tree, "the export")
	require.Empty(t, rep.Problems)
	require.Empty(t, rep.Notes)
	assert.Empty(t, tree.Diff(redfish.Export(back)), "export → import → export")
	assertSameGraph(t, g, back)
	assert.Equal(t, "threemodule", back.Site.Name)

	// the same through a tall mockup directory
	dir := t.TempDir()
	require.NoError(t, tree.WriteDir(dir))
	assert.FileExists(t, filepath.Join(dir, "redfish", "v1", "index.json"))
	assert.FileExists(t, filepath.Join(dir, "redfish", "v1", "Chassis", "ma-r01-compute-03", "index.json"))
	read, err := redfish.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, tree.Diff(read), "WriteDir → ReadDir")
}

// describe is an element as text: every field but its position, and its
// neighbours in every relation by key.
func describe(g *inventory.Graph, id inventory.ID) string {
	e := g.El(id)
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s slot=%d h=%d w=%d liquid=%v domain=%q addr=%q", e.Kind, e.Key, e.Slot, e.HeightU, e.PowerW, e.Liquid, e.Domain, e.BMCAddress)
	if n := e.Names; n != nil && *n != (inventory.NodeNames{}) {
		fmt.Fprintf(&b, " names=%+v", *n)
	}
	if i := e.Identity; i != nil {
		fw := ""
		for _, k := range slices.Sorted(maps.Keys(i.Firmware)) {
			fw += k + "=" + i.Firmware[k] + ","
		}
		if s := fmt.Sprintf("%s|%s|%s|%s|%s", i.PartNumber, i.Serial, i.AssetTag, i.Model, fw); s != "||||" {
			b.WriteString(" id=" + s)
		}
	}
	keys := func(ids []inventory.ID) []string {
		var out []string
		for _, x := range ids {
			out = append(out, g.El(x).Key)
		}
		slices.Sort(out)
		return out
	}
	if p := g.Parent(id); p != inventory.None {
		fmt.Fprintf(&b, " in=%s", g.El(p).Key)
	}
	for _, r := range []inventory.Relation{inventory.Contains, inventory.Powers, inventory.Cools, inventory.Connects, inventory.ManagedBy} {
		if out := keys(g.Out(r, id)); len(out) > 0 {
			fmt.Fprintf(&b, " %s=%v", r, out)
		}
	}
	return b.String()
}

func assertSameGraph(t *testing.T, want, got *inventory.Graph) {
	t.Helper()
	require.Equal(t, want.Len(), got.Len(), "elements")
	for _, r := range []inventory.Relation{inventory.Contains, inventory.Powers, inventory.Cools, inventory.Connects, inventory.ManagedBy} {
		assert.Equal(t, want.Edges(r), got.Edges(r), "%s edges", r)
	}
	bad := 0
	for i := range want.Len() {
		w := want.El(inventory.ID(i))
		id, ok := got.Lookup(w.Key)
		if !assert.True(t, ok, "%s is not read back", w.Key) {
			bad++
		} else if !assert.Equal(t, describe(want, inventory.ID(i)), describe(got, id)) {
			bad++
		}
		if bad > 5 {
			t.Fatal("and more")
		}
	}
}

// The export's shape: the top-level collections hold what the graph
// has, with the schema versions and the links a Redfish client expects.
func TestExportShape(t *testing.T) {
	g := exampleGraph(t)
	tree := redfish.Export(g)
	count := func(kinds ...inventory.Kind) int {
		n := 0
		for _, k := range kinds {
			n += len(g.OfKind(k))
		}
		return n
	}
	chassis := count(inventory.KindRack, inventory.KindCompute, inventory.KindScaleUpSwitch, inventory.KindPowerShelf,
		inventory.KindTorSwitch, inventory.KindManagementSwitch, inventory.KindManifold, inventory.KindUPS, inventory.KindShared,
		inventory.KindLoadBank)
	assert.Equal(t, 48+48*37+48+6+2+3, chassis)
	for coll, want := range map[string]int{
		"/redfish/v1/Chassis":                                              chassis,
		"/redfish/v1/Systems":                                              count(inventory.KindCompute),
		"/redfish/v1/Managers":                                             count(inventory.KindBMC),
		"/redfish/v1/Facilities":                                           count(inventory.KindSite, inventory.KindModule),
		"/redfish/v1/Fabrics":                                              count(inventory.KindScaleUpDomain, inventory.KindNetwork),
		"/redfish/v1/PowerEquipment/PowerShelves":                          count(inventory.KindPowerShelf),
		"/redfish/v1/PowerEquipment/RackPDUs":                              count(inventory.KindPDU),
		"/redfish/v1/PowerEquipment/ElectricalBuses":                       count(inventory.KindBusbar),
		"/redfish/v1/PowerEquipment/Switchgear":                            count(inventory.KindBlock),
		"/redfish/v1/ThermalEquipment/CDUs":                                count(inventory.KindCDU),
		"/redfish/v1/ThermalEquipment/CoolingLoops":                        count(inventory.KindLoop),
		"/redfish/v1/UpdateService/FirmwareInventory":                      2*count(inventory.KindCompute, inventory.KindScaleUpSwitch) + count(inventory.KindPowerShelf), // the shelves carry their firmware
		"/redfish/v1/Chassis/ma-r01-shelf-01/PowerSubsystem/PowerSupplies": 6,
		"/redfish/v1/Systems/ma-r01-compute-03/Processors":                 6,
		"/redfish/v1/Chassis/ma-r01-compute-03/NetworkAdapters":            5,
		"/redfish/v1/Fabrics/ma-r01-scale-up/Switches":                     18,
		"/redfish/v1/ThermalEquipment/CDUs/l1-loop-cdu-1/Pumps":            2,
		"/redfish/v1/PowerEquipment/Switchgear/p1-block/Feeders":           2,
	} {
		assert.Equal(t, want, tree.Members(coll), coll)
	}

	node := doc(t, tree, "/redfish/v1/Chassis/ma-r01-compute-03")
	assert.Equal(t, "#Chassis.v1_28_0.Chassis", node["@odata.type"])
	assert.Equal(t, "Sled", node["ChassisType"])
	assert.Equal(t, "ma/r01/compute-03", node["Name"])
	assert.Equal(t, "SN-COMPUTE-0000003", node["SerialNumber"])
	assert.EqualValues(t, 7, at(node, "Location", "PartLocation", "LocationOrdinalValue"), "U7")
	assert.EqualValues(t, 6400, node["MaxPowerWatts"])
	assert.Equal(t, []string{"/redfish/v1/PowerEquipment/ElectricalBuses/ma-r01-busbar"}, links(node, "Links", "PoweredBy"))
	assert.Equal(t, []string{"/redfish/v1/Chassis/ma-r01-manifold"}, links(node, "Links", "CooledBy"))
	assert.Equal(t, []string{"/redfish/v1/Chassis/ma-r01"}, links(node, "Links", "ContainedBy"))
	assert.Equal(t, []string{"/redfish/v1/Managers/ma-r01-compute-03-bmc-1"}, links(node, "Links", "ManagedBy"))
	assert.Equal(t, []string{"/redfish/v1/Chassis/ma-r01-tor-01", "/redfish/v1/Fabrics/ma-r01-scale-up"},
		links(node, "Links", "Oem", "Seam", "ConnectedTo"))
	sys := doc(t, tree, "/redfish/v1/Systems/ma-r01-compute-03")
	assert.Equal(t, "gpu-a-r01-n03", sys["HostName"], "the Slurm name")
	assert.Equal(t, "gpu-a-r01-n03.cluster.example", at(sys, "Oem", "Seam", "Kubernetes"))
	bmc := doc(t, tree, "/redfish/v1/Managers/ma-r01-compute-03-bmc-1")
	assert.Equal(t, "https://10.1.1.7/redfish/v1", bmc["RemoteRedfishServiceUri"])
	psu := doc(t, tree, "/redfish/v1/Chassis/ma-r01-shelf-01/PowerSubsystem/PowerSupplies/psu-1")
	assert.EqualValues(t, 5500, psu["PowerCapacityWatts"])
	assert.Equal(t, "Bay", at(psu, "Location", "PartLocation", "LocationType"))
	rack := doc(t, tree, "/redfish/v1/Chassis/ma-r01")
	assert.Len(t, links(rack, "Links", "Contains"), 18+9+8+2+1, "trays and the manifold")
	assert.Equal(t, "Rack", rack["ChassisType"])
	shelf := doc(t, tree, "/redfish/v1/Chassis/ma-r01-shelf-01/PowerSubsystem")
	assert.EqualValues(t, 33000, shelf["CapacityWatts"])

	// every resource has its Id, Name and a real schema; Oem.Seam holds
	// only what FORMAT.md documents
	documented := map[string]bool{"@odata.type": true, "Kind": true, "PartNumber": true, "SerialNumber": true, "AssetTag": true,
		"Model": true, "Slot": true, "HeightU": true, "PowerW": true, "Liquid": true, "ScaleUpDomain": true, "Address": true,
		"Slurm": true, "Kubernetes": true, "BMC": true, "ContainedBy": true, "PoweredBy": true, "CooledBy": true,
		"ManagedBy": true, "ConnectedTo": true}
	for _, u := range tree.URIs() {
		d := doc(t, tree, u)
		typ, _ := d["@odata.type"].(string)
		require.Regexp(t, `^#[A-Za-z]+(\.v1_\d+_\d+)?\.[A-Za-z]+$`, typ, u)
		require.NotEmpty(t, d["Name"], u)
		for _, o := range []any{at(d, "Oem", "Seam"), at(d, "Links", "Oem", "Seam")} {
			if m, ok := o.(map[string]any); ok {
				for k := range m {
					require.True(t, documented[k], "%s: Oem.Seam.%s is not documented", u, k)
				}
			}
		}
	}
}

func doc(t *testing.T, tree *redfish.Tree, uri string) map[string]any {
	t.Helper()
	b, ok := tree.Get(uri)
	require.True(t, ok, uri)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m), uri)
	return m
}

func at(m map[string]any, path ...string) any {
	var v any = m
	for _, p := range path {
		o, _ := v.(map[string]any)
		v = o[p]
	}
	return v
}

// links are the URIs of the reference or references at path.
func links(m map[string]any, path ...string) []string {
	var out []string
	switch v := at(m, path...).(type) {
	case map[string]any:
		out = append(out, v["@odata.id"].(string))
	case []any:
		for _, x := range v {
			out = append(out, x.(map[string]any)["@odata.id"].(string))
		}
	}
	return out
}
