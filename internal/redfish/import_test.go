package redfish_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/inventory"
	"github.com/seamdc/seam/internal/peer"
	"github.com/seamdc/seam/internal/redfish"
)

// mockups is where DMTF's published mockups are kept, next to the
// repository (shared/samples/redfish, with their PROVENANCE.md and
// LICENSE.md): the tests read them in place, they are not copied in.
func mockups(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(peer.Root(t), "..", "shared", "samples", "redfish")
	if _, err := os.Stat(filepath.Join(dir, "PROVENANCE.md")); err != nil {
		t.Fatalf("DMTF's mockups are not at %s (shared/samples/redfish next to the repository): %v", dir, err)
	}
	return dir
}

// Every DMTF mockup imports without problems, and yields what its files
// hold, counted by hand: chassis, systems, managers, power supplies
// (PowerSubsystem members, or a chassis's deprecated Power array when it
// has no PowerSubsystem), CDUs, and the elements made of them.
func TestDMTFMockups(t *testing.T) {
	for _, c := range []struct {
		mockup string
		types  map[string]int // documents (and embedded power supplies) by type
		kinds  map[string]int
		check  func(t *testing.T, g *inventory.Graph, rep *redfish.Report)
	}{
		{"public-bladed",
			// an enclosure of four blades, each its own system and BMC; the
			// enclosure's Power holds the two power supplies the blades'
			// PoweredBy name (Power#/PowerSupplies/0 and /1)
			map[string]int{"Chassis": 5, "ComputerSystem": 4, "Manager": 5, "PowerSupply": 2, "CoolingUnit": 0},
			map[string]int{"rack": 1, "compute": 4, "bmc": 5, "psu": 2, "cpu": 4},
			func(t *testing.T, g *inventory.Graph, rep *redfish.Report) {
				blade := lookup(t, g, "MultiBladeEncl/Blade1")
				assert.Equal(t, "529QB9450R6", g.El(blade).Identity.Serial)
				assert.Equal(t, []string{"MultiBladeEncl/PowerSupply-0", "MultiBladeEncl/PowerSupply-1"}, keysOf(g, g.In(inventory.Powers, blade)))
				assert.Equal(t, []string{"Blade1BMC"}, keysOf(g, g.Out(inventory.ManagedBy, blade)), "a manager it names, not one in it")
				assert.Equal(t, 8, rep.Relations["powers"], "4 blades × 2 power supplies")
				assertNote(t, rep, "a cools link leads to Fans, which seam has no kind for")
			}},
		{"public-cooling-unit",
			map[string]int{"Chassis": 1, "ComputerSystem": 0, "Manager": 1, "PowerSupply": 0, "CoolingUnit": 1, "Pump": 2},
			map[string]int{"cdu": 1, "pump": 2, "bmc": 1},
			func(t *testing.T, g *inventory.Graph, rep *redfish.Report) {
				cdu := lookup(t, g, "1")
				assert.Equal(t, "29347ZT536", g.El(cdu).Identity.Serial)
				assert.Equal(t, []string{"1/1", "1/2"}, keysOf(g, g.Children(cdu)))
				assertNote(t, rep, "a RackMount chassis with no system, power shelf or CDU: not an element")
			}},
		{"public-liquid-cooled-server",
			map[string]int{"Chassis": 1, "ComputerSystem": 1, "Manager": 1, "PowerSupply": 2, "CoolingUnit": 0},
			map[string]int{"compute": 1, "bmc": 1, "psu": 2, "cpu": 2, "memory": 4, "pump": 2},
			nil},
		{"public-power-shelf",
			// six bays, though the PowerSupplies collection lists Bay3 twice
			// and Bay2 not at all
			map[string]int{"Chassis": 1, "ComputerSystem": 0, "Manager": 1, "PowerSupply": 6, "CoolingUnit": 0, "PowerDistribution": 3},
			map[string]int{"power-shelf": 1, "psu": 6, "busbar": 2, "module": 2, "bmc": 1},
			func(t *testing.T, g *inventory.Graph, rep *redfish.Report) {
				shelf := lookup(t, g, "Building/Room237/PowerShelf")
				assert.Equal(t, int64(12000), g.El(shelf).PowerW, "its PowerSubsystem's CapacityWatts")
				assert.Len(t, g.Children(shelf), 6+1, "six PSUs and the BMC it lists in ManagersInChassis")
				psu := lookup(t, g, "Building/Room237/PowerShelf/Bay1")
				assert.Equal(t, int64(2000), g.El(psu).PowerW)
				assert.Equal(t, "3488247", g.El(psu).Identity.Serial)
				assertNote(t, rep, "lists /redfish/v1/Chassis/PowerShelf/PowerSubsystem/PowerSupplies/Bay3 twice")
				assertNote(t, rep, "PowerSubsystem links to /redfish/v1/Chassis/PowerShelf/Sensors, a SensorCollection")
				assertNote(t, rep, "links to another service: https://192.168.1.44/redfish/v1/Chassis/1/PowerSubsystem/PowerSupplies/Bay1")
			}},
		{"public-rackmount1",
			// the deprecated Power resource's one supply is not read: the
			// chassis has a PowerSubsystem with two
			map[string]int{"Chassis": 1, "ComputerSystem": 1, "Manager": 1, "PowerSupply": 2, "CoolingUnit": 0},
			map[string]int{"compute": 1, "bmc": 1, "psu": 2, "cpu": 2, "memory": 4},
			func(t *testing.T, g *inventory.Graph, rep *redfish.Report) {
				node := lookup(t, g, "1U")
				e := g.El(node)
				assert.Equal(t, "437XR1138R2", e.Identity.Serial)
				assert.Equal(t, "P79 v1.45", e.Identity.Firmware["FEE82A67-6CE2-4625-9F44-237AD2402C28"], "FirmwareInventory/BIOS, related to the system")
				assert.Equal(t, 12, e.Slot, "Placement.RackOffset")
				assert.Equal(t, 1, e.HeightU)
				assert.Equal(t, []string{"1U/BMC"}, keysOf(g, g.Out(inventory.ManagedBy, node)))
				assertNote(t, rep, "deprecated Power resource: its power supplies are not read")
			}},
	} {
		t.Run(c.mockup, func(t *testing.T) {
			tree, err := redfish.ReadDir(filepath.Join(mockups(t), c.mockup))
			require.NoError(t, err)
			g, rep := redfish.Import(tree, c.mockup)
			assert.Empty(t, rep.Problems)
			for typ, n := range c.types {
				assert.Equal(t, n, rep.Types[typ], "%s read", typ)
			}
			kinds := map[string]int{}
			for k, n := range rep.Kinds {
				kinds[k] = n
			}
			assert.Equal(t, c.kinds, kinds)
			if c.check != nil {
				c.check(t, g, rep)
			}
			// and seam exports what it read, and reads that back the same
			again, rep2 := redfish.Import(redfish.Export(g), "re-export")
			assert.Empty(t, rep2.Problems)
			assertSameGraph(t, g, again)
		})
	}
}

func lookup(t *testing.T, g *inventory.Graph, key string) inventory.ID {
	t.Helper()
	id, ok := g.Lookup(key)
	if !ok {
		var all []string
		for i := range g.Len() {
			all = append(all, g.El(inventory.ID(i)).Key)
		}
		t.Fatalf("no element %s; the graph has %s", key, strings.Join(all, ", "))
	}
	return id
}

func keysOf(g *inventory.Graph, ids []inventory.ID) []string {
	var out []string
	for _, id := range ids {
		out = append(out, g.El(id).Key)
	}
	return out
}

func assertNote(t *testing.T, rep *redfish.Report, part string) {
	t.Helper()
	for _, n := range rep.Notes {
		if strings.Contains(n.String(), part) {
			return
		}
	}
	t.Errorf("no note says %q; the notes:\n%v", part, rep.Notes)
}
