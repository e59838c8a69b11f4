package redfish_test

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stmcginnis/gofish"
	"github.com/stmcginnis/gofish/schemas"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/inventory"
	"github.com/seamdc/seam/internal/peer"
)

// serveExample runs `contractc redfish EXAMPLE --serve` on a loopback
// port the kernel picks (port 0) until the test ends, and returns the
// address it says it serves at. (A port picked free beforehand can be
// taken meanwhile by another test's server, which then answered the
// readiness probe in contractc's place.)
func serveExample(t *testing.T) string {
	t.Helper()
	bin := peer.BuildGo(t, "./cmd/contractc")
	dir, err := filepath.Abs(example)
	require.NoError(t, err)
	p := peer.Start(t, "contractc redfish --serve", peer.Spec{Args: []string{bin, "redfish", dir, "--serve", "127.0.0.1:0"}})
	serving := regexp.MustCompile(`serving .* at http://(127\.0\.0\.1:\d+)/redfish/v1/`)
	var addr string
	require.Eventually(t, func() bool {
		if m := serving.FindStringSubmatch(p.Output()); m != nil {
			addr = m[1]
		}
		return addr != ""
	}, 2*time.Minute, 50*time.Millisecond, "contractc redfish --serve says where it serves:\n%s", p.Output())
	return addr
}

// idOf is the Id of an element's top-level resource: its key flattened,
// as FORMAT.md says.
func idOf(key string) string { return strings.ReplaceAll(key, "/", "-") }

// gofish v0.23.0 reads the export that `contractc redfish --serve`
// serves: the service root; every chassis, system and manager, their
// counts the graph's; every chassis's ContainedBy, Contains, PoweredBy,
// CooledBy and ManagedBy leading to resources of the export and saying
// what the graph says; one rack walked fully through gofish's own link
// methods; the power shelves, rack PDUs, CDUs and loops.
func TestGofishReadsTheServedExport(t *testing.T) {
	g := exampleGraph(t)
	addr := serveExample(t)
	c, err := gofish.Connect(gofish.ClientConfig{Endpoint: "http://" + addr, Username: "seam", Password: "read-only",
		BasicAuth: true, ReuseConnections: true, MaxConcurrentRequests: 8})
	require.NoError(t, err)
	defer c.Logout()
	svc := c.GetService()
	assert.Equal(t, "1.15.0", svc.RedfishVersion)
	assert.Equal(t, "seam", svc.Vendor)

	count := func(kinds ...inventory.Kind) int {
		n := 0
		for _, k := range kinds {
			n += len(g.OfKind(k))
		}
		return n
	}
	chassis, err := svc.Chassis()
	require.NoError(t, err)
	require.Len(t, chassis, count(inventory.KindRack, inventory.KindCompute, inventory.KindScaleUpSwitch, inventory.KindPowerShelf,
		inventory.KindTorSwitch, inventory.KindManagementSwitch, inventory.KindManifold, inventory.KindUPS, inventory.KindShared,
		inventory.KindLoadBank))
	systems, err := svc.Systems()
	require.NoError(t, err)
	require.Len(t, systems, count(inventory.KindCompute))
	managers, err := svc.Managers()
	require.NoError(t, err)
	require.Len(t, managers, count(inventory.KindBMC))
	pe, err := svc.PowerEquipment()
	require.NoError(t, err)
	shelves, err := pe.PowerShelves()
	require.NoError(t, err)
	assert.Len(t, shelves, count(inventory.KindPowerShelf))
	pdus, err := pe.RackPDUs()
	require.NoError(t, err)
	assert.Len(t, pdus, count(inventory.KindPDU))
	buses, err := pe.ElectricalBuses()
	require.NoError(t, err)
	assert.Len(t, buses, count(inventory.KindBusbar))
	te, err := svc.ThermalEquipment()
	require.NoError(t, err)
	cdus, err := te.CDUs()
	require.NoError(t, err)
	assert.Len(t, cdus, count(inventory.KindCDU))
	loops, err := te.CoolingLoops()
	require.NoError(t, err)
	assert.Len(t, loops, count(inventory.KindLoop))

	// what the links may lead to: everything gofish read above
	known := map[string]bool{}
	for _, ids := range [][]string{odataIDs(chassis), odataIDs(managers), odataIDs(pdus), odataIDs(shelves), odataIDs(buses), odataIDs(cdus)} {
		for _, id := range ids {
			known[id] = true
		}
	}
	bySystem := map[string]*schemas.ComputerSystem{}
	for _, s := range systems {
		bySystem[s.ODataID] = s
	}
	for _, ch := range chassis {
		id, ok := g.Lookup(ch.Name)
		require.True(t, ok, "%s: its Name %q is no element of the graph", ch.ODataID, ch.Name)
		var raw struct {
			Links struct {
				ContainedBy struct {
					ID string `json:"@odata.id"`
				}
				Contains, PoweredBy, CooledBy, ManagedBy, ComputerSystems []struct {
					ID string `json:"@odata.id"`
				}
			}
		}
		require.NoError(t, json.Unmarshal(ch.RawData, &raw))
		links := map[string][]string{"ContainedBy": {}, "Contains": {}, "PoweredBy": {}, "CooledBy": {}, "ManagedBy": {}}
		if raw.Links.ContainedBy.ID != "" {
			links["ContainedBy"] = []string{raw.Links.ContainedBy.ID}
		}
		for name, l := range map[string][]struct {
			ID string `json:"@odata.id"`
		}{"Contains": raw.Links.Contains, "PoweredBy": raw.Links.PoweredBy, "CooledBy": raw.Links.CooledBy, "ManagedBy": raw.Links.ManagedBy} {
			for _, x := range l {
				links[name] = append(links[name], x.ID)
			}
		}
		for name, uris := range links {
			for _, u := range uris {
				require.True(t, known[u], "%s: Links.%s leads to %s, which gofish did not read", ch.ODataID, name, u)
			}
		}
		assert.Equal(t, ids(g, g.In(inventory.Powers, id)), idsOf(links["PoweredBy"]), "%s PoweredBy", ch.ODataID)
		assert.Equal(t, ids(g, g.In(inventory.Cools, id)), idsOf(links["CooledBy"]), "%s CooledBy", ch.ODataID)
		assert.Equal(t, ids(g, g.Out(inventory.ManagedBy, id)), idsOf(links["ManagedBy"]), "%s ManagedBy", ch.ODataID)
		if p := g.Parent(id); p != inventory.None && g.El(p).Kind == inventory.KindRack {
			assert.Equal(t, []string{idOf(g.El(p).Key)}, idsOf(links["ContainedBy"]), ch.ODataID)
		}
		for _, s := range raw.Links.ComputerSystems {
			sys := bySystem[s.ID]
			require.NotNil(t, sys, "%s: its system %s is not in /redfish/v1/Systems", ch.ODataID, s.ID)
			assert.Equal(t, g.El(id).Names.Slurm, sys.HostName)
		}
	}

	// one rack, walked through gofish's own methods
	rack := chassis[slices.IndexFunc(chassis, func(c *schemas.Chassis) bool { return c.ID == "ma-r01" })]
	rid, _ := g.Lookup("ma/r01")
	trays, err := rack.Contains()
	require.NoError(t, err)
	assert.Len(t, trays, len(g.Children(rid))-2-1-1, "its chassis: every child but the two PDUs, the busbar and the scale-up domain")
	psus := 0
	for _, tray := range trays {
		tid, _ := g.Lookup(tray.Name)
		up, err := tray.ContainedBy()
		require.NoError(t, err)
		assert.Equal(t, rack.ODataID, up.ODataID)
		powered, err := tray.PoweredBy()
		require.NoError(t, err)
		assert.Equal(t, ids(g, g.In(inventory.Powers, tid)), idsOf(odataIDs(powered)), tray.ID)
		cooled, err := tray.CooledBy()
		require.NoError(t, err)
		assert.Equal(t, ids(g, g.In(inventory.Cools, tid)), idsOf(odataIDs(cooled)), tray.ID)
		bmcs, err := tray.ManagedBy()
		require.NoError(t, err)
		assert.Equal(t, ids(g, g.Out(inventory.ManagedBy, tid)), idsOf(odataIDs(bmcs)), tray.ID)
		for _, m := range bmcs {
			bid, _ := g.Lookup(m.Name)
			assert.Equal(t, "https://"+g.El(bid).BMCAddress+"/redfish/v1", m.RemoteRedfishServiceURI, m.ID)
		}
		sys, err := tray.ComputerSystems()
		require.NoError(t, err)
		if g.El(tid).Kind == inventory.KindCompute {
			require.Len(t, sys, 1, tray.ID)
			procs, err := sys[0].Processors()
			require.NoError(t, err)
			assert.Len(t, procs, 6, "4 GPUs, 2 CPUs")
			assert.Equal(t, g.El(tid).Identity.Serial, tray.SerialNumber)
		}
		if g.El(tid).Kind == inventory.KindPowerShelf {
			ps, err := tray.PowerSubsystem()
			require.NoError(t, err)
			supplies, err := ps.PowerSupplies()
			require.NoError(t, err)
			assert.Len(t, supplies, len(g.Children(tid)), tray.ID)
			for _, s := range supplies {
				assert.EqualValues(t, 5500, *s.PowerCapacityWatts, s.ODataID)
			}
			psus += len(supplies)
			pd, err := tray.PowerDistribution()
			require.NoError(t, err)
			assert.Equal(t, schemas.PowerShelfPowerEquipmentType, pd.EquipmentType)
		}
	}
	assert.Equal(t, 48, psus, "8 shelves × 6 PSUs")
	pumps, err := cdus[0].Pumps()
	require.NoError(t, err)
	assert.Len(t, pumps, 2)
}

func odataIDs[T interface{ GetODataID() string }](xs []T) []string {
	var out []string
	for _, x := range xs {
		out = append(out, x.GetODataID())
	}
	return out
}

// ids are elements as the Ids of their resources (their keys
// flattened, for top-level resources), sorted.
func ids(g *inventory.Graph, els []inventory.ID) []string {
	out := []string{}
	for _, e := range els {
		out = append(out, idOf(g.El(e).Key))
	}
	slices.Sort(out)
	return out
}

func idsOf(uris []string) []string {
	out := []string{}
	for _, u := range uris {
		out = append(out, u[strings.LastIndex(u, "/")+1:])
	}
	slices.Sort(out)
	return out
}

// Debian's redfishtool lists the Chassis of the export that `contractc
// redfish --serve` serves (it reads every member), and reads one chassis
// and one system.
func TestRedfishtoolReadsTheServedExport(t *testing.T) {
	rt := peer.Need(t, "redfishtool")
	addr := serveExample(t)
	run := func(args ...string) map[string]any {
		t.Helper()
		out, err := peer.Run(2*time.Minute, append([]string{rt, "-r", addr, "-S", "Never", "-u", "seam", "-p", "read-only"}, args...)...)
		require.NoError(t, err)
		var v map[string]any
		require.NoError(t, json.Unmarshal([]byte(out), &v), out)
		return v
	}
	list := run("Chassis", "list")
	assert.EqualValues(t, 48+48*37+48+6+2+3, list["Members@odata.count"])
	members, _ := list["Members"].([]any)
	assert.Len(t, members, 48+48*37+48+6+2+3)
	assert.Contains(t, members, map[string]any{"Id": "ma-r01-compute-03", "@odata.id": "/redfish/v1/Chassis/ma-r01-compute-03", "AssetTag": "AT-a-r01-U07"})

	ch := run("Chassis", "-I", "ma-r01-compute-03")
	assert.Equal(t, "SN-COMPUTE-0000003", ch["SerialNumber"])
	assert.Equal(t, "Sled", ch["ChassisType"])
	sys := run("Systems", "-I", "ma-r01-compute-03")
	assert.Equal(t, "gpu-a-r01-n03", sys["HostName"])
	assert.Equal(t, "ma/r01/compute-03", sys["Name"])
}
