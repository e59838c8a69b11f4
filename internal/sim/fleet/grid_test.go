package fleet

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/gridload"
)

// the example's grid load (contracts/examples/threemodule/grid.cue)
var exLoad = gridload.Load{Period: 1, ComputeShare: 0.7, Compute: 1200, Communication: 300, Idle: 150, CheckpointStall: 20}

func withGrid(t *testing.T, g *Grid) *Fleet {
	t.Helper()
	example(t)
	return New(exGraph, Options{Grid: g})
}

func rackNodes(f *Fleet, key string) []*Node {
	var out []*Node
	for _, n := range f.Nodes() {
		if n.Tray.Rack().Key == key {
			out = append(out, n)
		}
	}
	return out
}

const gdt = 0.01

// run steps the fleet from sample `from` to `to` (times i·dt, as
// gridload's scenarios sample) and calls each after every step.
func run(f *Fleet, from, to int, each func(i int)) {
	for i := from + 1; i <= to; i++ {
		f.Step(gdt, float64(i)*gdt)
		if each != nil {
			each(i)
		}
	}
}

// A rack on the grid job draws what gridload predicts for a group of
// one such rack, sample for sample: the pattern's period and compute
// share overriding the load's, compute held to the provisioned limit,
// communication raised to the filler, a stall at the floor, the stop
// ramped down after the hysteresis. Each GPU's change per step stays
// within the ramp rates, and the rest of the rack draws what it drew idle.
func TestGridJobDrawsWhatGridloadPredicts(t *testing.T) {
	s := &gridload.Smoothing{Floor: 0.5, RampUp: 3000, RampDown: 2000, Hysteresis: 0.05}
	ans := gridload.Group{PowerLimit: 1100, Filler: 400, Smoothing: s}
	f := withGrid(t, &Grid{Load: exLoad, Answers: map[string]gridload.Group{"ma/r01": ans}})
	nodes := rackNodes(f, "ma/r01")
	require.Len(t, nodes, 18)
	require.NoError(t, f.SetState(Idle, nodes...))
	const k, stop, end = 50, 450, 550 // samples: the job starts, stops; the run ends
	run(f, 0, k, nil)
	r := f.Rack("ma/r01")
	base := r.LoadW - r.GPUW // idle, before the job
	p := Pattern{PeriodS: 0.5, ComputeShare: 0.6, StallAtS: 2.005, StallS: 0.5}
	trained, err := f.Train(p, f.Nodes()...)
	require.NoError(t, err)
	assert.Len(t, trained, 18, "only the nodes that are not off train")

	l := exLoad
	l.Period, l.ComputeShare, l.CheckpointStall = p.PeriodS, p.ComputeShare, p.StallS
	want := ans
	want.Racks, want.GPUsPerRack = 1, 72
	sc := gridload.Scenario{Rate: 1 / gdt, Seconds: float64(end+1) * gdt, Start: float64(k) * gdt, Stop: float64(stop+1) * gdt, StallAt: float64(k)*gdt + p.StallAtS}
	expect, _ := want.Power(l, sc)

	g := nodes[3].gpus[2]
	var gpus []*gpu
	for _, n := range nodes {
		gpus = append(gpus, n.gpus...)
	}
	last := make([]float64, len(gpus))
	for i, g := range gpus {
		last[i] = g.powerW
	}
	stallLow := math.Inf(1)
	run(f, k, end, func(i int) {
		if i == stop {
			assert.Len(t, f.StopTraining(), 18)
		}
		if i >= k+100 { // the first ramp up from the fleet's idle is done
			require.InDelta(t, expect[i], r.GPUW, 1e-6, "sample %d (%.2f s into the job)", i, float64(i-k)*gdt)
		}
		for j, g := range gpus {
			d := g.powerW - last[j]
			require.LessOrEqual(t, d, s.RampUp*gdt+1e-9, "sample %d: %s rises faster than its ramp", i, g.key)
			require.GreaterOrEqual(t, d, -s.RampDown*gdt-1e-9, "sample %d: %s falls faster than its ramp", i, g.key)
			last[j] = g.powerW
		}
		require.InDelta(t, base, r.LoadW-r.GPUW, 1e-6, "sample %d: the rack's draw besides its GPUs stays as it was idle", i)
		if tj := float64(i-k) * gdt; tj > p.StallAtS+0.2 && tj < p.StallAtS+p.StallS {
			stallLow = math.Min(stallLow, g.powerW)
		}
	})
	assert.InDelta(t, s.Floor*ans.PowerLimit, stallLow, 1e-9, "the floor holds through the stall")
	assert.InDelta(t, exLoad.Idle, g.powerW, 1e-9, "after the stop, the GPU ramps down to the load's idle")
	assert.Equal(t, Idle, nodes[0].State())
	assert.Equal(t, r.LoadW, r.DCW, "no storage: the PSUs deliver the trays' draw")
}

// Storage in a rack takes the job's square wave off what its PSUs
// deliver: past its horizon the PDUs see a fraction of the trays' swing
// at the same mean.
func TestGridStorageFlattensTheRack(t *testing.T) {
	st := &gridload.Storage{Power: 72 * 1000, Energy: 72 * 1000 * 10 / 0.6, SoCMin: 0.2, SoCMax: 0.8, Horizon: 2}
	f := withGrid(t, &Grid{Load: exLoad, Answers: map[string]gridload.Group{"mb/r01": {Storage: st}}})
	nodes := rackNodes(f, "mb/r01")
	require.NoError(t, f.SetState(Idle, nodes...))
	_, err := f.Train(Pattern{}, nodes...)
	require.NoError(t, err)
	r := f.Rack("mb/r01")
	var draw, dc []float64
	pdus := 0.0
	run(f, 0, 600, func(i int) {
		if i > 300 {
			draw, dc = append(draw, r.LoadW), append(dc, r.DCW)
			pdus = 0
			for _, p := range r.pdus {
				pdus += p.ACW
			}
		}
	})
	lo, hi := minMax(draw)
	slo, shi := minMax(dc)
	assert.Greater(t, hi-lo, 72*800.0, "the trays swing with the job")
	assert.Less(t, shi-slo, (hi-lo)/5, "the PSUs deliver a fifth of the swing at most")
	assert.InDelta(t, gridload.Mean(draw), gridload.Mean(dc), 0.02*gridload.Mean(draw), "storage moves energy, it makes none")
	assert.InDelta(t, (r.DCW/PSUEff + r.auxW), pdus, 1e-6, "the PDUs carry what the PSUs deliver")
	assert.Greater(t, r.SoC(), 0.2)
	assert.Less(t, r.SoC(), 0.8)
}

func minMax(s []float64) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, v := range s {
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	return lo, hi
}

// Each module lags the job's start by its own share of the jitter,
// fixed by its key: the same in every build of the fleet, so that
// simulated runs repeat; every node of a module is in phase.
func TestGridJitterIsDeterministic(t *testing.T) {
	g := &Grid{Load: exLoad, Jitter: 0.05}
	a, b := withGrid(t, g), withGrid(t, g)
	seen := map[float64]bool{}
	for i, m := range a.Modules() {
		assert.Equal(t, m.Offset(), b.Modules()[i].Offset(), m.Key)
		assert.GreaterOrEqual(t, m.Offset(), 0.0)
		assert.Less(t, m.Offset(), 0.05)
		seen[m.Offset()] = true
	}
	assert.Len(t, seen, 3, "the modules are out of phase")

	require.NoError(t, a.SetState(Idle, a.Nodes()...))
	_, err := a.Train(Pattern{}, a.Nodes()...)
	require.NoError(t, err)
	// lags put either side of the compute phase's end, 0.7 s in
	for i, m := range a.Modules() {
		m.offset = []float64{0, 0.025, 0.045}[i]
	}
	// 0.71 s in: ma (no lag) is communicating, the others still compute
	run(a, 0, 71, nil)
	ma, mb := a.Modules()[0], a.Modules()[1]
	at := func(m *Module) []float64 {
		var out []float64
		for _, r := range m.racks {
			for _, t := range r.trays {
				if t.Node != nil {
					out = append(out, t.Node.DrawW())
				}
			}
		}
		return out
	}
	dma, dmb := at(ma), at(mb)
	lo, hi := minMax(dma)
	assert.Equal(t, lo, hi, "a module's nodes are in phase")
	assert.InDelta(t, 6400*IdleShare*OtherShare+4*exLoad.Communication, dma[0], 1e-9)
	assert.InDelta(t, 6400*IdleShare*OtherShare+4*exLoad.Compute, dmb[0], 1e-9)
}

// Without a grid load the job runs between each module's square wave's
// low and high at the pattern's period and compute share; nodes that
// are off do not join it, and StopTraining sets the job's nodes idle.
func TestTrainWithoutGridLoad(t *testing.T) {
	f := example(t)
	n, off := node(t, f, "gpu-a-r01-n01"), node(t, f, "gpu-a-r01-n02")
	require.NoError(t, f.SetState(Idle, n))
	got, err := f.Train(Pattern{PeriodS: 1, ComputeShare: 0.5}, n, off)
	require.NoError(t, err)
	assert.Equal(t, []*Node{n}, got)
	per := 6400 * (1 - OtherShare) / 4
	run(f, 0, 20, nil)
	assert.InDelta(t, 6400*IdleShare*OtherShare+4*per, n.DrawW(), 1e-9, "high in the compute phase")
	run(f, 20, 70, nil)
	assert.InDelta(t, 6400*IdleShare*OtherShare+4*DefaultWave.Low*per, n.DrawW(), 1e-9, "low in communication")
	assert.Zero(t, off.DrawW())
	f.StopTraining()
	run(f, 70, 71, nil)
	assert.InDelta(t, 6400*IdleShare*OtherShare+4*IdleShare*per, n.DrawW(), 1e-9)

	_, err = f.Train(Pattern{ComputeShare: 1.5})
	assert.ErrorContains(t, err, "compute_share 1.5 must be a share of the period")
}
