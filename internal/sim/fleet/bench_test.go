package fleet

import (
	"testing"

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
