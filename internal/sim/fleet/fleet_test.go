package fleet

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/inventory"
)

var (
	exOnce  sync.Once
	exGraph *inventory.Graph
	exErr   error
)

func example(t testing.TB) *Fleet {
	t.Helper()
	exOnce.Do(func() {
		c, _, err := contract.Load("../../../contracts/examples/threemodule")
		if err != nil {
			exErr = err
			return
		}
		if _, err := c.ReadInventory(nil); err != nil {
			exErr = err
			return
		}
		exGraph, _ = c.Graph()
	})
	require.NoError(t, exErr)
	return New(exGraph, Options{})
}

func step(f *Fleet, from, d float64) float64 {
	const dt = 0.01
	t := from
	for ; t < from+d-dt/2; t += dt {
		f.Step(dt, t+dt)
	}
	return t
}

func node(t *testing.T, f *Fleet, name string) *Node {
	t.Helper()
	n, err := f.Node(name)
	require.NoError(t, err)
	return n
}

// The example's fleet: a node per compute tray, named as in the
// inventory, a BMC per compute and switch tray, power shelf and CDU;
// all off, drawing nothing.
func TestExampleFleet(t *testing.T) {
	f := example(t)
	assert.Len(t, f.Nodes(), 864)
	assert.Len(t, f.BMCs(), 48*(18+9+8)+9)
	n := node(t, f, "gpu-a-r01-n03")
	assert.Equal(t, "ma/r01/compute-03", n.Tray.Key)
	assert.Equal(t, "ma/r01/scale-up", n.Domain)
	assert.Equal(t, "10.1.1.7", n.Tray.Address)
	assert.Equal(t, "bmc-a-r01-n03", n.Tray.BMCName)
	assert.Same(t, n, node(t, f, "gpu-a-r01-n03.cluster.example"))
	assert.Same(t, n, node(t, f, "ma/r01/compute-03"))
	_, err := f.Node("gpu-z")
	assert.ErrorContains(t, err, `no node "gpu-z"`)
	assert.False(t, f.Active())
	step(f, 0, 1)
	for _, p := range f.PDUs() {
		assert.Zero(t, p.ACW, p.Key)
	}
}

// A rack at burn-in: its 18 nodes and 9 switch trays onto the busbar,
// shared by its 48 PSUs, four shelves on each PDU, through their
// efficiency, plus its switches' AC on both cords. A missing PSU on
// feed b moves its share to a.
func TestRackPower(t *testing.T) {
	f := example(t)
	r := f.Rack("ma/r01")
	var nodes []*Node
	for _, tr := range r.trays {
		if tr.Node != nil {
			nodes = append(nodes, tr.Node)
		}
	}
	require.Len(t, nodes, 18)
	require.NoError(t, f.SetState(BurnIn, nodes...))
	step(f, 0, 1)
	dc := 18*6400.0 + 9*1200.0
	assert.InDelta(t, dc, r.DCW, 0.01)
	pa, pb := r.pdus[0], r.pdus[1]
	assert.Equal(t, "ma/r01/a", pa.Key)
	assert.InDelta(t, dc/PSUEff/2+150, pa.ACW, 0.01)
	assert.InDelta(t, dc/PSUEff/2+150, pb.ACW, 0.01)
	assert.InDelta(t, pa.ACW+pb.ACW, f.Module("ma").ACW, 0.01)
	assert.InDelta(t, dc*r.liquid, f.Module("ma").LiquidW, 0.01, "liquid-cooled trays, the rack's liquid share")
	assert.Equal(t, 0.9, r.liquid)

	require.NoError(t, f.AddDefect(Defect{Kind: MissingPSU, Target: "ma/r01/shelf-01/psu-3"}))
	step(f, 1, 0.1)
	assert.InDelta(t, dc/PSUEff*24/47+150, pa.ACW, 0.01, "23 PSUs on b, 24 on a")
	pb.Live = false
	step(f, 1.1, 0.1)
	assert.InDelta(t, dc/PSUEff+300, pa.ACW, 0.01, "feed b lost: a carries the rack")
	assert.Zero(t, pb.ACW)
	pa.Live = false
	step(f, 1.2, 0.1)
	assert.Zero(t, r.DCW, "both feeds lost: the rack is dark")
	assert.False(t, f.GPUView(nodes[0], time.Time{}).Powered)
}

// Training steps a node between 30 % and 100 % of its design draw every
// 4 s, with 73 ms edges; nodes started together stay in phase.
func TestTrainingWave(t *testing.T) {
	f := example(t)
	a, b := node(t, f, "gpu-a-r01-n01"), node(t, f, "gpu-a-r02-n05")
	require.NoError(t, f.SetState(Training, a, b))
	now := step(f, 0, 1)
	assert.InDelta(t, 6400, a.DrawW(), 0.01)
	now = step(f, now, 2.05)
	assert.InDelta(t, 1920, a.DrawW(), 0.01, "low after the falling edge")
	assert.Equal(t, a.DrawW(), b.DrawW())
	now = step(f, now, 0.92)
	assert.InDelta(t, 1920, a.DrawW(), 0.01)
	step(f, now, 0.07)
	edge := a.DrawW()
	assert.Greater(t, edge, 1920.0)
	assert.Less(t, edge, 6400.0, "on the rising edge")
	assert.InDelta(t, 0.3+0.04*DefaultWave.Rate, DefaultWave.at(0.04), 1e-9)
}

// A power limit caps the draw, inside its allowable range; disabled, it
// does not.
func TestPowerLimit(t *testing.T) {
	f := example(t)
	n := node(t, f, "gpu-a-r01-n01")
	require.NoError(t, f.SetState(BurnIn, n))
	l := n.Limit()
	assert.Equal(t, Limit{SetPoint: 6400, Min: 2560, Max: 6400, Enabled: true}, l)
	require.NoError(t, n.SetLimit(4000))
	step(f, 0, 1)
	assert.InDelta(t, 4000, n.DrawW(), 0.01)
	assert.Equal(t, 6400.0, n.DemandW())
	v := f.GPUView(n, time.Time{})
	assert.NotZero(t, v.GPUs[0].Throttle&0x4, "SW power cap")
	assert.Less(t, v.GPUs[0].SMClock, v.GPUs[0].MaxSMClock)
	assert.ErrorContains(t, n.SetLimit(1000), "outside 2560..6400 W")
	n.EnableLimit(false)
	step(f, 1, 0.1)
	assert.InDelta(t, 6400, n.DrawW(), 0.01)
}

// A hot GPU throttles at its slowdown temperature; its neighbours run
// at the coolant's temperature plus their power's rise.
func TestHotGPU(t *testing.T) {
	f := example(t)
	n := node(t, f, "gpu-a-r01-n01")
	require.NoError(t, f.AddDefect(Defect{Kind: HotGPU, Target: n.Name, GPU: 2}))
	require.NoError(t, f.SetState(BurnIn, n))
	step(f, 0, 300)
	v := f.GPUView(n, time.Time{})
	assert.InDelta(t, SlowdownC, v.GPUs[2].TempC, 0.5)
	assert.Equal(t, uint64(0x60), v.GPUs[2].Throttle)
	assert.InDelta(t, 30+ThermalR*1400, v.GPUs[0].TempC, 0.5)
	assert.Less(t, n.DrawW(), 6400.0)
	require.Len(t, v.Failures, 1)
	assert.Equal(t, "Targeted Power", v.Failures[0].Test)
}

// Defects change what a tray's BMC reports, and only that tray's:
// a swapped GPU, two trays in each other's slots (one in another rack),
// firmware drift, a missing PSU, an extra tray; cleared, the tray is as
// declared again.
func TestDefectsInTrayGraphs(t *testing.T) {
	f := example(t)
	a, b, c := f.Tray("ma/r01/compute-03"), f.Tray("ma/r02/compute-05"), f.Tray("ma/r01/compute-04")
	va, vc := a.Version(), c.Version()
	require.NoError(t, f.AddDefect(Defect{Kind: SwappedPart, Target: "ma/r01/compute-03/gpu-2"}))
	assert.Greater(t, a.Version(), va)
	assert.Equal(t, vc, c.Version(), "another tray's BMC is unchanged")
	g := f.TrayGraph(a)
	id, ok := g.Lookup("ma/r01/compute-03/gpu-2")
	require.True(t, ok)
	assert.Equal(t, "SN-SWAP-"+g.El(id).Identity.Serial[8:], g.El(id).Identity.Serial)
	assert.NotEqual(t, "SN-GPU-0000010", g.El(id).Identity.Serial)

	require.NoError(t, f.AddDefect(Defect{Kind: WrongSlot, Target: a.Key, With: b.Key}))
	g = f.TrayGraph(a)
	id, _ = g.Lookup(a.Key)
	assert.Equal(t, 9, g.El(id).Slot)
	assert.Equal(t, "ma/r02", g.El(g.Parent(id)).Key)
	assert.Equal(t, "ma/r02", a.Rack().Key)
	require.Len(t, g.Out(inventory.ManagedBy, id), 1)

	require.NoError(t, f.AddDefect(Defect{Kind: FirmwareDrift, Target: c.Key}))
	assert.Equal(t, "1.4.3", c.Firmware["bios"])
	require.NoError(t, f.AddDefect(Defect{Kind: MissingPSU, Target: "ma/r01/shelf-02/psu-6"}))
	g = f.TrayGraph(f.Tray("ma/r01/shelf-02"))
	assert.Len(t, g.OfKind(inventory.KindPSU), 5)

	require.NoError(t, f.AddDefect(Defect{Kind: ExtraTray, Target: "ma/r03"}))
	assert.Len(t, f.BMCs(), 48*35+9+1)
	x := f.Tray("ma/r03/extra-u32")
	require.NotNil(t, x)
	assert.Equal(t, 32, x.Slot)
	xg := f.TrayGraph(x)
	assert.Len(t, xg.OfKind(inventory.KindGPU), 4)
	require.NoError(t, f.AddDefect(Defect{Kind: MissingTray, Target: "ma/r04/compute-01"}))
	assert.Len(t, f.BMCs(), 48*35+9)

	for _, d := range f.Defects() {
		require.NoError(t, f.ClearDefect(d.Kind, d.Target))
	}
	assert.Equal(t, "ma/r01", a.Rack().Key)
	assert.Equal(t, 7, a.Slot)
	assert.Equal(t, "1.4.2", c.Firmware["bios"])
	assert.Nil(t, f.Tray("ma/r03/extra-u32"))
	assert.Len(t, f.BMCs(), 48*35+9)
	assert.ErrorContains(t, f.ClearDefect(SlowLink, "gpu-a-r01-n01"), "no slow-link defect")
}

func TestDefectErrors(t *testing.T) {
	f := example(t)
	for _, c := range []struct {
		d    Defect
		want string
	}{
		{Defect{Kind: "melted", Target: "x"}, `unknown defect "melted"`},
		{Defect{Kind: HotGPU, Target: "gpu-a-r01-n01", GPU: 7}, "has GPUs 0 to 3, not 7"},
		{Defect{Kind: MissingPSU, Target: "ma/r01/shelf-01/psu-9"}, "no PSU"},
		{Defect{Kind: WrongSlot, Target: "ma/r01/compute-01", With: "ma/r01/shelf-01"}, "only trays of one kind"},
		{Defect{Kind: FailedDiag, Target: "gpu-a-r01-n01", Test: "Vibes"}, `no DCGM test "Vibes"`},
		{Defect{Kind: ExtraTray, Target: "ma/r01", Slot: 7}, "slot U7 of rack ma/r01 is taken"},
		{Defect{Kind: SlowLink, Target: "gpu-a-r01-n01", Value: 3}, "0 to 1"},
	} {
		assert.ErrorContains(t, f.AddDefect(c.d), c.want, c.d.String())
	}
	assert.Empty(t, f.Defects())
}
