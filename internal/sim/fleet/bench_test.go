package fleet

import (
	"testing"

	"github.com/seamdc/seam/internal/gridload"
	"github.com/seamdc/seam/internal/inventory"
	"github.com/seamdc/seam/internal/sitegen"
)

// BenchmarkFleetStep steps a generated site's fleet of four modules'
// nodes (1,152, every one training on the contract's square wave) at the
// simulator's 100 Hz, and reports the CPU one simulated second takes and
// what share of a core that is at 1× time.
func BenchmarkFleetStep(b *testing.B) {
	site, h, err := sitegen.Inventory(4)
	if err != nil {
		b.Fatal(err)
	}
	g, _ := inventory.Build(site, h)
	f := New(g, Options{})
	if err := f.SetState(Training, f.Nodes()...); err != nil {
		b.Fatal(err)
	}
	t := 0.0
	b.ResetTimer()
	for b.Loop() {
		for range 100 {
			t += 0.01
			f.Step(0.01, t)
		}
	}
	per := float64(b.Elapsed().Microseconds()) / float64(b.N)
	b.ReportMetric(per, "µs/sim-second")
	b.ReportMetric(per/1e4, "%core-at-1x")
	b.ReportMetric(float64(len(f.Nodes())), "nodes")
}

// BenchmarkFleetStepGridJob steps the example's fleet (864 nodes, 48
// racks) and two copies of it (1,728 nodes) at the simulator's 100 Hz,
// every node on the grid job: the example's grid load (1 s, 70 %
// compute) with its jitter, each GPU through the example's NVML
// smoothing (floor 80 %, 6 W/s) and, in the stored variant, each rack
// through storage with a 180 s horizon. It reports the CPU of one step
// and the share of a core one simulated second per wall second takes.
func BenchmarkFleetStepGridJob(b *testing.B) {
	smooth := &gridload.Smoothing{Floor: 0.8, RampUp: 6, RampDown: 6}
	store := &gridload.Storage{Power: 72 * 1000, Energy: 72 * 1000 * 180 / 0.6, SoCMin: 0.2, SoCMax: 0.8, Horizon: 180}
	for _, v := range []struct {
		name    string
		copies  int
		storage *gridload.Storage
	}{{"nodes=864", 1, nil}, {"nodes=1728", 2, nil}, {"nodes=1728/storage", 2, store}} {
		b.Run(v.name, func(b *testing.B) {
			example(b)
			var fleets []*Fleet
			nodes := 0
			for range v.copies {
				g := &Grid{Load: exLoad, Jitter: 0.05, Answers: map[string]gridload.Group{}}
				for _, r := range exGraph.OfKind(inventory.KindRack) {
					g.Answers[exGraph.El(r).Key] = gridload.Group{Smoothing: smooth, Storage: v.storage}
				}
				f := New(exGraph, Options{Grid: g})
				if err := f.SetState(Idle, f.Nodes()...); err != nil {
					b.Fatal(err)
				}
				if _, err := f.Train(Pattern{}, f.Nodes()...); err != nil {
					b.Fatal(err)
				}
				fleets = append(fleets, f)
				nodes += len(f.Nodes())
			}
			t := 0.0
			b.ResetTimer()
			for b.Loop() {
				t += 0.01
				for _, f := range fleets {
					f.Step(0.01, t)
				}
			}
			per := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			b.ReportMetric(per, "ns/step")
			b.ReportMetric(per*100/1e9*100, "%core-at-1x")
			b.ReportMetric(float64(nodes), "nodes")
		})
	}
}
