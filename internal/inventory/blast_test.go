package inventory_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/inventory"
)

// The expected numbers come from the example's figures, not from the
// code: each IT module (ma on p1 and l1) has 16 racks of 130 kW with 90 %
// of their heat to liquid; a rack has 8 power shelves of six 5.5 kW
// PSUs (33 kW a shelf, 264 kW in all), shelves 01–04 on PDU b (feed
// p1/block/b) and 05–08 on PDU a (feed p1/block/a), one busbar, 18
// compute trays of 4 GPUs and 9 NVLink switch trays, all liquid, a ToR
// and a management switch on both PDUs, and is its own scale-up
// domain; loop l1/loop has three CDUs of 1.2 MW, each with two pumps
// (N+1).

var shared struct {
	once sync.Once
	g    *inventory.Graph
}

// sharedExample is the worked example's graph, loaded once for the tests of
// this file (a graph is read-only).
func sharedExample(t *testing.T) *inventory.Graph {
	t.Helper()
	shared.once.Do(func() { _, shared.g = exampleGraph(t) })
	require.NotNil(t, shared.g)
	return shared.g
}

func blast(t *testing.T, g *inventory.Graph, keys ...string) inventory.Impact {
	t.Helper()
	var ids []inventory.ID
	for _, k := range keys {
		id, ok := g.Lookup(k)
		require.True(t, ok, k)
		ids = append(ids, id)
	}
	return inventory.Blast(g, ids...)
}

// racksOf lists racks r<from>..r<to> of module m.
func racksOf(m string, from, to int) []string {
	var out []string
	for i := from; i <= to; i++ {
		out = append(out, fmt.Sprintf("%s/r%02d", m, i))
	}
	return out
}

func suffixed(keys []string, suffix string) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k + suffix
	}
	return out
}

func reasons(items []inventory.Item) map[string]string {
	out := map[string]string{}
	for _, it := range items {
		out[it.Key] = it.Reason
	}
	return out
}

func assertNothingStops(t *testing.T, imp inventory.Impact) {
	t.Helper()
	assert.False(t, imp.Stops())
	assert.Empty(t, imp.Nodes)
	assert.Zero(t, imp.GPUs)
	assert.Empty(t, imp.Racks)
	assert.Empty(t, imp.Domains)
	assert.Empty(t, imp.Modules)
	assert.Empty(t, imp.Causes)
}

// Feed a of p1 lost: every rack of ma loses PDU a and its four shelves
// on it; the four on feed b give 4 × 6 × 5.5 kW = 132 kW ≥ 130 kW, so
// nothing stops, and 16 busbars, 16 racks (one PDU of two) and the
// block (one feed of two) lose redundancy.
func TestBlastFeed(t *testing.T) {
	g := sharedExample(t)
	imp := blast(t, g, "p1/block/a")
	assertNothingStops(t, imp)
	assert.Equal(t, []string{"p1/block/a"}, imp.Failed)
	want := map[string]string{"p1/block": "1 of 2 feeds"}
	for _, r := range racksOf("ma", 1, 16) {
		want[r] = "1 of 2 PDUs (a lost)"
		want[r+"/busbar"] = "4 of 8 shelves (132 kW for a 130 kW rack)"
	}
	assert.Equal(t, want, reasons(imp.Degraded))
	assert.Len(t, imp.Degraded, 1+16+16)
}

// One PSU: 47 × 5.5 kW = 258.5 kW for 130 kW; one shelf: 7 × 33 kW =
// 231 kW. Only the busbar loses redundancy.
func TestBlastPSUAndShelf(t *testing.T) {
	g := sharedExample(t)
	imp := blast(t, g, "ma/r01/shelf-01/psu-1")
	assertNothingStops(t, imp)
	assert.Equal(t, map[string]string{"ma/r01/busbar": "47 of 48 PSUs (258.5 kW for a 130 kW rack)"}, reasons(imp.Degraded))

	imp = blast(t, g, "ma/r01/shelf-01")
	assertNothingStops(t, imp)
	assert.Equal(t, map[string]string{"ma/r01/busbar": "7 of 8 shelves (231 kW for a 130 kW rack)"}, reasons(imp.Degraded))

	// a shelf and a PSU of another shelf: 7 shelves left, 41 PSUs
	imp = blast(t, g, "ma/r01/shelf-01", "ma/r01/shelf-08/psu-6")
	assertNothingStops(t, imp)
	assert.Equal(t, map[string]string{"ma/r01/busbar": "7 of 8 shelves, 41 of 48 PSUs (225.5 kW for a 130 kW rack)"}, reasons(imp.Degraded))
}

// cdu-2 of l1: the loop's heat is 16 × 130 kW × 90 % = 1.872 MW; the two
// CDUs left give 2 × 1.2 MW = 2.4 MW, so nothing stops and the loop
// loses redundancy.
func TestBlastCDU(t *testing.T) {
	g := sharedExample(t)
	imp := blast(t, g, "l1/loop/cdu-2")
	assertNothingStops(t, imp)
	assert.Equal(t, map[string]string{"l1/loop": "2 of 3 CDUs (2.4 MW for 1.872 MW of heat)"}, reasons(imp.Degraded))
}

// The l1 loop lost: every liquid tray of ma stops: 16 × 18 = 288 nodes,
// 288 × 4 = 1,152 GPUs, 16 racks, 16 scale-up domains and module ma.
func TestBlastLoop(t *testing.T) {
	g := sharedExample(t)
	imp := blast(t, g, "l1/loop")
	assert.True(t, imp.Stops())
	assert.Len(t, imp.Nodes, 288)
	assert.Equal(t, 1152, imp.GPUs)
	assert.Equal(t, racksOf("ma", 1, 16), imp.Racks)
	assert.Equal(t, suffixed(racksOf("ma", 1, 16), "/scale-up"), imp.Domains)
	assert.Equal(t, []string{"ma"}, imp.Modules)
	assert.Equal(t, []inventory.Item{{Key: "l1/loop", Kind: "loop", Reason: "failed", Nodes: 288}}, imp.Causes)
	assert.Empty(t, imp.Degraded)
	first := imp.Nodes[0]
	assert.Equal(t, inventory.StoppedNode{Key: "ma/r01/compute-01", Slurm: "gpu-a-r01-n01", GPUs: 4, Why: "cooling", Cause: "l1/loop"}, first)
	assert.Equal(t, "gpu-a-r16-n18", imp.Nodes[287].Slurm)
}

// Two CDUs of three: 1.2 MW for 1.872 MW of heat: the loop cannot cool
// ma, and all of it stops. With racks out too, the heat left decides:
// ten racks at 117 kW are 1.17 MW ≤ 1.2 MW (the loop carries them),
// eleven are 1.287 MW > 1.2 MW (it carries none).
func TestBlastLoopCapacity(t *testing.T) {
	g := sharedExample(t)
	imp := blast(t, g, "l1/loop/cdu-1", "l1/loop/cdu-2")
	assert.Len(t, imp.Nodes, 288)
	assert.Equal(t, []inventory.Item{{Key: "l1/loop", Kind: "loop", Reason: "1 of 3 CDUs (1.2 MW for 1.872 MW of heat)", Nodes: 288}}, imp.Causes)

	six := append([]string{"l1/loop/cdu-1", "l1/loop/cdu-2"}, racksOf("ma", 1, 6)...)
	imp = blast(t, g, six...)
	assert.Len(t, imp.Nodes, 6*18, "only the failed racks stop")
	assert.Equal(t, racksOf("ma", 1, 6), imp.Racks)
	assert.Empty(t, imp.Modules)
	assert.Equal(t, "1 of 3 CDUs (1.2 MW for 1.17 MW of heat)", reasons(imp.Degraded)["l1/loop"])

	five := append([]string{"l1/loop/cdu-1", "l1/loop/cdu-2"}, racksOf("ma", 1, 5)...)
	imp = blast(t, g, five...)
	assert.Len(t, imp.Nodes, 288)
	assert.Equal(t, []string{"ma"}, imp.Modules)
	assert.Equal(t, "1 of 3 CDUs (1.2 MW for 1.287 MW of heat)", reasons(imp.Causes)["l1/loop"])
}

// The same with the racks' busbars lost instead of the racks: a rack
// whose trays all lost power puts no heat into the loop, though its
// manifold is still there (an outsider's site once stopped the whole
// module here).
func TestBlastLoopCapacityAfterThePowerStep(t *testing.T) {
	g := sharedExample(t)
	cdus := []string{"l1/loop/cdu-1", "l1/loop/cdu-2"}
	six := append(cdus, suffixed(racksOf("ma", 1, 6), "/busbar")...)
	imp := blast(t, g, six...)
	assert.Len(t, imp.Nodes, 6*18, "only the nodes of the busbars lost stop")
	assert.Empty(t, imp.Modules)
	assert.Equal(t, "1 of 3 CDUs (1.2 MW for 1.17 MW of heat)", reasons(imp.Degraded)["l1/loop"])

	five := append(cdus[:2:2], suffixed(racksOf("ma", 1, 5), "/busbar")...)
	imp = blast(t, g, five...)
	assert.Len(t, imp.Nodes, 288)
	assert.Equal(t, "1 of 3 CDUs (1.2 MW for 1.287 MW of heat)", reasons(imp.Causes)["l1/loop"])
}

// A pump of a CDU with two (N+1) costs the CDU its redundancy; both
// pumps cost the CDU, and the loop is left with two CDUs of three.
func TestBlastPumps(t *testing.T) {
	g := sharedExample(t)
	imp := blast(t, g, "l1/loop/cdu-1/p1")
	assertNothingStops(t, imp)
	assert.Equal(t, map[string]string{"l1/loop/cdu-1": "1 of 2 pumps (N+1)"}, reasons(imp.Degraded))

	imp = blast(t, g, "l1/loop/cdu-1/p1", "l1/loop/cdu-1/p2")
	assertNothingStops(t, imp)
	assert.Equal(t, map[string]string{"l1/loop": "2 of 3 CDUs (2.4 MW for 1.872 MW of heat)"}, reasons(imp.Degraded))
}

// Both feeds of p1 together stop all of ma: no PSU of any rack has
// power, nor its ToR and management switch.
func TestBlastWhatIfBothFeeds(t *testing.T) {
	g := sharedExample(t)
	imp := blast(t, g, "p1/block/a", "p1/block/b")
	assert.Equal(t, []string{"p1/block/a", "p1/block/b"}, imp.Failed)
	assert.Len(t, imp.Nodes, 288)
	assert.Equal(t, 1152, imp.GPUs)
	assert.Equal(t, racksOf("ma", 1, 16), imp.Racks)
	assert.Equal(t, suffixed(racksOf("ma", 1, 16), "/scale-up"), imp.Domains)
	assert.Equal(t, []string{"ma"}, imp.Modules)
	require.Len(t, imp.Causes, 16)
	assert.Equal(t, inventory.Item{Key: "ma/r01/busbar", Kind: "busbar", Reason: "0 of 8 shelves (0 kW for a 130 kW rack)", Nodes: 18}, imp.Causes[0])
	assert.Equal(t, "power", imp.Nodes[0].Why)
	assert.Empty(t, imp.Degraded, "nothing of ma runs; mb and mc are on p2 and p3")
}

// Feed a of p1 and a shelf on feed b of ma/r01: that rack keeps three
// shelves, 3 × 33 kW = 99 kW < 130 kW, and stops (18 nodes, 72 GPUs,
// its domain); the other fifteen keep 132 kW.
func TestBlastWhatIfFeedAndShelf(t *testing.T) {
	g := sharedExample(t)
	imp := blast(t, g, "p1/block/a", "ma/r01/shelf-01")
	assert.Len(t, imp.Nodes, 18)
	assert.Equal(t, 72, imp.GPUs)
	assert.Equal(t, []string{"ma/r01"}, imp.Racks)
	assert.Equal(t, []string{"ma/r01/scale-up"}, imp.Domains)
	assert.Empty(t, imp.Modules)
	assert.Equal(t, []inventory.Item{{Key: "ma/r01/busbar", Kind: "busbar", Reason: "3 of 8 shelves (99 kW for a 130 kW rack)", Nodes: 18}}, imp.Causes)
	deg := reasons(imp.Degraded)
	assert.Len(t, deg, 1+15+15, "the block, and 15 racks and their busbars")
	assert.Equal(t, "4 of 8 shelves (132 kW for a 130 kW rack)", deg["ma/r02/busbar"])
	assert.NotContains(t, deg, "ma/r01", "a stopped rack is not degraded")
}

// A ToR switch: its rack's 18 nodes lose their data path and stop; the
// rack and its domain stop with them.
func TestBlastToR(t *testing.T) {
	g := sharedExample(t)
	imp := blast(t, g, "ma/r01/tor-01")
	assert.Len(t, imp.Nodes, 18)
	assert.Equal(t, 72, imp.GPUs)
	assert.Equal(t, []string{"ma/r01"}, imp.Racks)
	assert.Equal(t, []string{"ma/r01/scale-up"}, imp.Domains)
	assert.Equal(t, "data", imp.Nodes[0].Why)
	assert.Equal(t, []inventory.Item{{Key: "ma/r01/tor-01", Kind: "tor-switch", Reason: "failed", Nodes: 18}}, imp.Causes)
}

// A management switch: the 18 + 9 BMCs on it are unreachable; nothing
// stops.
func TestBlastManagementSwitch(t *testing.T) {
	g := sharedExample(t)
	imp := blast(t, g, "ma/r01/mgmt-01")
	assertNothingStops(t, imp)
	assert.Equal(t, map[string]string{"ma/r01/mgmt-01": "27 BMCs unreachable: their trays run unmanaged"}, reasons(imp.Degraded))

	imp = blast(t, g, "ma/r01/compute-03/bmc-1")
	assertNothingStops(t, imp)
	assert.Equal(t, map[string]string{"ma/r01/compute-03": "its BMC failed: it runs unmanaged"}, reasons(imp.Degraded))
}

// A scale-up switch tray degrades its domain (8 of 9); all nine stop
// it, and its 18 nodes with it.
func TestBlastScaleUpSwitch(t *testing.T) {
	g := sharedExample(t)
	imp := blast(t, g, "ma/r01/nvswitch-01")
	assertNothingStops(t, imp)
	assert.Equal(t, map[string]string{"ma/r01/scale-up": "8 of 9 switch trays"}, reasons(imp.Degraded))

	var all []string
	for i := 1; i <= 9; i++ {
		all = append(all, fmt.Sprintf("ma/r01/nvswitch-%02d", i))
	}
	imp = blast(t, g, all...)
	assert.Len(t, imp.Nodes, 18)
	assert.Equal(t, []string{"ma/r01"}, imp.Racks)
	assert.Equal(t, []string{"ma/r01/scale-up"}, imp.Domains)
	assert.Equal(t, []inventory.Item{{Key: "ma/r01/scale-up", Kind: "scale-up-domain", Reason: "0 of 9 switch trays", Nodes: 18}}, imp.Causes)
}

// A GPU stops its node (a drain takes the whole node): 4 GPUs; its
// domain runs on with 17 of 18 nodes.
func TestBlastPart(t *testing.T) {
	g := sharedExample(t)
	imp := blast(t, g, "ma/r01/compute-03/gpu-2")
	assert.Equal(t, []inventory.StoppedNode{{Key: "ma/r01/compute-03", Slurm: "gpu-a-r01-n03", GPUs: 4, Why: "failed", Cause: "ma/r01/compute-03/gpu-2"}}, imp.Nodes)
	assert.Equal(t, 4, imp.GPUs)
	assert.Empty(t, imp.Racks)
	assert.Equal(t, map[string]string{"ma/r01/scale-up": "17 of 18 nodes"}, reasons(imp.Degraded))
}

// A rack PDU, a UPS, the controls network and a shared dependency lose
// redundancy only.
func TestBlastRedundancyOnly(t *testing.T) {
	g := sharedExample(t)
	imp := blast(t, g, "ma/r01/a")
	assertNothingStops(t, imp)
	assert.Equal(t, map[string]string{"ma/r01": "1 of 2 PDUs (a lost)", "ma/r01/busbar": "4 of 8 shelves (132 kW for a 130 kW rack)"}, reasons(imp.Degraded))

	imp = blast(t, g, "p1/block/a/ups")
	assertNothingStops(t, imp)
	assert.Equal(t, map[string]string{"p1/block/a": "its UPS failed: no ride-through"}, reasons(imp.Degraded))

	imp = blast(t, g, "ctl/net")
	assertNothingStops(t, imp)
	assert.Equal(t, map[string]string{"ma": "its controls network ctl/net is lost", "mb": "its controls network ctl/net is lost",
		"mc": "its controls network ctl/net is lost"}, reasons(imp.Degraded))

	imp = blast(t, g, "shared/water-main")
	assertNothingStops(t, imp)
	assert.Equal(t, map[string]string{"l1": "its shared dependency water-main is lost", "l2": "its shared dependency water-main is lost",
		"l3": "its shared dependency water-main is lost"}, reasons(imp.Degraded))
}

// A failed module fails everything it holds; the power module p1 takes
// all of ma with it.
func TestBlastModules(t *testing.T) {
	g := sharedExample(t)
	imp := blast(t, g, "ma")
	assert.Len(t, imp.Nodes, 288)
	assert.Equal(t, "failed", imp.Nodes[0].Why)
	assert.Equal(t, []inventory.Item{{Key: "ma", Kind: "module", Reason: "failed", Nodes: 288}}, imp.Causes)
	assert.Equal(t, []string{"ma"}, imp.Modules)

	imp = blast(t, g, "p1")
	assert.Len(t, imp.Nodes, 288)
	assert.Equal(t, []string{"ma"}, imp.Modules)
	assert.Equal(t, "power", imp.Nodes[0].Why)
	require.Len(t, imp.Causes, 16)
	assert.Equal(t, "0 of 8 shelves (0 kW for a 130 kW rack)", imp.Causes[15].Reason)
}

// A blast is the same whatever the order of the failed elements, and
// the same again: nothing of one blast leaks into the next.
func TestBlastDeterministic(t *testing.T) {
	g := sharedExample(t)
	a := blast(t, g, "p1/block/a", "ma/r01/shelf-01", "l1/loop/cdu-2")
	b := blast(t, g, "l1/loop/cdu-2", "ma/r01/shelf-01", "p1/block/a")
	assert.Equal(t, a, b)
	blast(t, g, "l1/loop")
	assert.Equal(t, a, blast(t, g, "ma/r01/shelf-01", "p1/block/a", "l1/loop/cdu-2"))
	assert.Equal(t, inventory.Impact{Failed: []string{}, Nodes: []inventory.StoppedNode{}, Racks: []string{}, Domains: []string{},
		Modules: []string{}, Causes: []inventory.Item{}, Degraded: []inventory.Item{}}, inventory.Blast(g))
}

// Blasts may run at once on one graph: each has its own state.
func TestBlastConcurrent(t *testing.T) {
	g := sharedExample(t)
	keys := []string{"l1/loop", "p1/block/a", "ma/r01/tor-01", "l2/loop/cdu-1", "mb/r03/shelf-02"}
	want := map[string]inventory.Impact{}
	for _, k := range keys {
		want[k] = blast(t, g, k)
	}
	var wg sync.WaitGroup
	got := make([][]inventory.Impact, 4)
	for w := range got {
		wg.Go(func() {
			for range 5 {
				for _, k := range keys {
					id, _ := g.Lookup(k)
					got[w] = append(got[w], inventory.Blast(g, id))
				}
			}
		})
	}
	wg.Wait()
	for _, imps := range got {
		for i, imp := range imps {
			assert.Equal(t, want[keys[i%len(keys)]], imp)
		}
	}
}
