package capping

import (
	"fmt"
	"testing"
)

// BenchmarkCompute10k is caps for 10,000 nodes (556 racks of 18, one
// scale-up domain a rack) under one block with two feeds, both N-1
// cases: the goal is under a second.
func BenchmarkCompute10k(b *testing.B) {
	s := &Site{Name: "bench", RackW: map[string]float64{}}
	share := map[string]float64{}
	lost := map[string]float64{}
	for i := 0; len(s.Nodes) < 10000; i++ {
		rack := fmt.Sprintf("m%02d/r%03d", i/20, i%20)
		n := min(18, 10000-len(s.Nodes))
		s.Nodes = append(s.Nodes, nodes(rack, rack+"/scale-up", n, 6400)...)
		s.RackW[rack] = 130e3
		share[rack], lost[rack] = 0.5, 1
	}
	total := 0.0
	for _, w := range s.RackW {
		total += w
	}
	limits := []Limit{
		{What: "block b", LimitW: total * 0.9, Share: share},
		{What: "feed b/a", LimitW: total * 0.85, Share: share},
		{What: "feed b/a", Lost: "feed b/b", LimitW: total * 0.85, Share: lost},
	}
	b.ReportAllocs()
	for b.Loop() {
		p, err := Compute(s, "b", limits, DefaultModel)
		if err != nil || len(p.Caps) != 10000 {
			b.Fatalf("caps: %v, %d", err, len(p.Caps))
		}
	}
}
