package reporttest

import (
	"fmt"
	"slices"

	"github.com/seamdc/seam/internal/plan"
)

// LongPlan turns base (any valid plan) into a plan for load tests: cases
// of caseS seconds each, back to back, for total seconds. Every case
// samples all channels ("bench/ch-000" …) every periodS and grades
// graded of them in band [90, 110] on both sides; the rest are drawn
// as excitation. It reuses base's header, load banks and a source.
func LongPlan(base *plan.Plan, channels, graded int, totalS, caseS, periodS float64) (*plan.Plan, error) {
	if len(base.Sources) == 0 || len(base.LoadBanks) == 0 {
		return nil, fmt.Errorf("the base plan needs a source and a load bank")
	}
	var src string
	for k := range base.Sources {
		src = k
		break
	}
	p := &plan.Plan{Header: base.Header, LoadBanks: base.LoadBanks, Sources: base.Sources,
		Interlocks: []plan.Interlock{}, Coverage: []plan.Coverage{}}
	p.Header.Level, p.Header.Module = plan.SAT, ""
	n := int(totalS / caseS)
	for i := range n {
		c := plan.Case{ID: fmt.Sprintf("sat.bench.steady.part-%03d", i), Level: plan.SAT, Kind: plan.Steady, Module: "bench",
			Boundary: "bench", Title: fmt.Sprintf("load test part %d", i), EstimatedS: caseS,
			Clause:        plan.ClauseRef{Path: fmt.Sprintf(`boundaries.bench.steady."part-%03d"`, i), Pos: "bench.cue:1:1", BoundaryDigest: base.Header.Inputs.Contracts},
			Sides:         []string{plan.Guarantee, plan.Require},
			Interlocks:    []string{},
			Preconditions: []plan.Precondition{},
			Steps:         []plan.Step{{ID: "hold", Op: plan.OpHold, DurationS: caseS, EstimatedS: caseS}},
		}
		for j := range channels {
			c.Sampling = append(c.Sampling, plan.Sampling{Channel: fmt.Sprintf("bench/ch-%03d", j), MaxPeriodS: periodS, Reason: "load test"})
		}
		for j := range graded {
			ch := fmt.Sprintf("bench/ch-%03d", (i+j)%channels)
			for _, side := range []string{plan.Guarantee, plan.Require} {
				c.Checks = append(c.Checks, plan.Check{ID: fmt.Sprintf("%s-in-band-%d", side, j), Kind: plan.InBand, Side: side,
					Channel: ch, Unit: "V", Min: plan.F(90), Max: plan.F(110), Steps: []string{"hold"}, Sources: []string{src}})
			}
		}
		slices.SortFunc(c.Checks, func(a, b plan.Check) int { return compareStrings(a.ID, b.ID) })
		p.Cases = append(p.Cases, c)
	}
	p.Header.EstimatedS = float64(n) * caseS
	return p, nil
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
