package burnin

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// observations10k are 10,000 nodes' single-node and pair measures (4
// per node, plus two pair values) and 556 racks' values, with a spread
// like the simulator's and 1 % of nodes slow.
func observations10k() []Observation {
	rng := rand.New(rand.NewPCG(1, 2))
	var obs []Observation
	for i := range 10000 {
		name := fmt.Sprintf("gpu-%05d", i)
		bw := 820 + rng.NormFloat64()*2
		if i%100 == 7 {
			bw *= 0.6
		}
		obs = append(obs,
			Observation{Node: name, Scope: ScopeSingle, Ranks: 4, SKU: "NVIDIA GB300", Measure: MeasureBusBW, Value: bw},
			Observation{Node: name, Scope: ScopeSingle, Ranks: 4, SKU: "NVIDIA GB300", Measure: MeasureTemp, Value: 69 + rng.Float64()},
			Observation{Node: name, Scope: ScopeSingle, Ranks: 4, SKU: "NVIDIA GB300", Measure: MeasurePower, Value: 5600 + rng.NormFloat64()*10},
			Observation{Node: name, Scope: ScopeSingle, Ranks: 4, SKU: "NVIDIA GB300", Measure: MeasureClock, Value: 1},
			Observation{Node: name, Scope: ScopePair, Ranks: 8, SKU: "NVIDIA GB300", Measure: MeasureBusBW, Value: bw + 5},
			Observation{Node: name, Scope: ScopePair, Ranks: 8, SKU: "NVIDIA GB300", Measure: MeasureBusBW, Value: 826 + rng.NormFloat64()},
		)
	}
	for i := range 556 {
		obs = append(obs, Observation{Node: fmt.Sprintf("rack-%03d", i), Scope: ScopeRack, Ranks: 72, SKU: "NVIDIA GB300", Measure: MeasureBusBW, Value: 830 + rng.NormFloat64()})
	}
	return obs
}

// The figure: the analysis of 10,000 nodes' results, goal under
// 1 s (make bench).
func BenchmarkAnalyze10000Nodes(b *testing.B) {
	obs := observations10k()
	floors := DefaultFloors()
	b.ReportAllocs()
	var flags int
	for b.Loop() {
		flags = len(Analyze(obs, floors).Flags)
	}
	b.ReportMetric(float64(flags), "flags")
}

func TestAnalyzeFlagsTheSlowHundred(t *testing.T) {
	an := Analyze(observations10k(), DefaultFloors())
	slow := map[string]bool{}
	for _, f := range an.Flags {
		if f.Scope == ScopeSingle && f.Measure == MeasureBusBW {
			slow[f.Node] = true
		}
	}
	if len(slow) != 100 {
		t.Fatalf("%d nodes flagged slow, want the 100 made slow", len(slow))
	}
	for n := range slow {
		var i int
		fmt.Sscanf(n, "gpu-%05d", &i)
		if i%100 != 7 {
			t.Errorf("%s flagged, not one made slow", n)
		}
	}
}
