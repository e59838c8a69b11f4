package firmware

import (
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/discover"
	"github.com/seamdc/seam/internal/hold"
	"github.com/seamdc/seam/internal/inventory"
	"github.com/seamdc/seam/internal/sitegen"
)

// The figure: a plan for 10,000 nodes in under 1 s. The site is
// sitegen's: 35 cells of the worked example, 560 racks, 10,080 nodes,
// 19,600 trays; the baseline the example's (every compute and switch
// tray differs), the policy a canary rack then one rack per module,
// whole scale-up domains. plan-s is what sat firmware plan does once
// the contracts are read: the site indexed, the baseline vetted against
// it, the discovery compared, the stages built (a blast radius per
// rack to find the nodes each stops); whatif-s the same with every
// stage's blast radius, json-s writing that plan's JSON.
func BenchmarkFirmwarePlan(b *testing.B) {
	site, h, err := sitegen.Inventory(35)
	require.NoError(b, err)
	g, _ := inventory.Build(site, h)
	set := exampleSet(b, Policy{CanaryRacks: 1, MaxRacksPerModule: 1, WholeScaleUpDomains: true, SignedBy: []string{"GPUWorks"}})
	s := NewSite(g)
	var drift []discover.Finding
	held := map[string][]hold.Owner{}
	for i, t := range s.Trays {
		switch {
		case t.Kind == inventory.KindCompute && i%97 == 0:
			drift = append(drift, discover.Finding{Kind: discover.FirmwareDrift, Element: t.Key, Field: "bios", Found: "1.5.0"})
		case t.Kind == inventory.KindCompute && i%89 == 0:
			held[t.Key] = []hold.Owner{"rma:CASE-1"}
		}
	}
	d := discoveryOf(b, s, drift...)
	var planning, whatIf, writing time.Duration
	b.ReportAllocs()
	for b.Loop() {
		start := time.Now()
		s := NewSite(g)
		if diags := Vet(set, s); len(diags) > 0 {
			b.Fatal(diags)
		}
		p, err := NewPlan(set, s, d, Options{Held: held})
		if err != nil {
			b.Fatal(err)
		}
		planning += time.Since(start)
		if p.Summary.Nodes != 10080-len(held) {
			b.Fatalf("%d nodes updated, want every node but the %d held", p.Summary.Nodes, len(held))
		}
		start = time.Now()
		p, err = NewPlan(set, s, d, Options{Held: held, WhatIf: true})
		if err != nil {
			b.Fatal(err)
		}
		whatIf += time.Since(start)
		start = time.Now()
		if err := p.WriteJSON(io.Discard); err != nil {
			b.Fatal(err)
		}
		writing += time.Since(start)
	}
	n := float64(b.N)
	b.ReportMetric(planning.Seconds()/n, "plan-s")
	b.ReportMetric(whatIf.Seconds()/n, "whatif-s")
	b.ReportMetric(writing.Seconds()/n, "json-s")
	b.ReportMetric(float64(len(s.Trays)), "trays")
}
