package contract

import (
	"math"

	"github.com/seamdc/seam/internal/diag"
	"github.com/seamdc/seam/internal/units"
)

// Clause rule ids.
const (
	RuleBand       = "CLAUSE001"
	RuleOneSided   = "CLAUSE002"
	RuleIncomplete = "CLAUSE003"
	RuleExcitation = "CLAUSE004"
	RuleMaskOrder  = "CLAUSE005"
)

// checkClauses reports clauses that cannot be read or checked.
func checkClauses(c *Contracts, b *Boundary, diags *diag.List) {
	path := "boundaries." + quoteLabel(b.ID)
	// every joint states its steady values and its failure behaviour;
	// power and coolant also the load swings of synchronous training (a
	// controls link has none); a grid boundary's clauses are its grid
	// section (GRID007)
	if b.Medium != "grid" {
		incomplete(b, path, diags)
	}
	for _, s := range b.Steady {
		checkBand(s.Guarantee, s.Path()+".guarantee", diags)
		checkBand(s.Require, s.Path()+".require", diags)
		oneSided(&s.Clause, s.Guarantee.Set, s.Require.Set, diags)
	}
	for _, t := range b.Transient {
		checkExcitation(c, b, t, diags)
		checkMask(t.Guarantee, t.Path()+".guarantee.mask", diags)
		checkMask(t.Require, t.Path()+".require.mask", diags)
		oneSided(&t.Clause, t.Guarantee.Set || t.Withstand.Set, t.Require.Set, diags)
	}
	for _, f := range b.Failure {
		checkBand(f.Guarantee.Degraded, f.Path()+".guarantee.degraded", diags)
		checkBand(f.Require.Degraded, f.Path()+".require.degraded", diags)
		oneSided(&f.Clause, f.Guarantee.Set, f.Require.Set, diags)
	}
}

func incomplete(b *Boundary, path string, diags *diag.List) {
	if len(b.Steady) == 0 {
		diags.Errorf(RuleIncomplete, b.Pos, path, "%s has no steady clause: nothing states the steady-state values at this joint", path).Hint =
			"state at least one steady clause: the band each side guarantees or requires"
	}
	if len(b.Failure) == 0 {
		diags.Errorf(RuleIncomplete, b.Pos, path, "%s has no failure clause: nothing states what happens when a unit fails", path).Hint =
			"state what the supplier does when one of its units fails (a feed, a pump, a controller)"
	}
	if len(b.Transient) == 0 && b.Medium != "controls" {
		diags.Errorf(RuleIncomplete, b.Pos, path, "%s has no transient clause: nobody owns the load swings of synchronous training", path).Hint =
			"state the consumer's excitation (training square wave) and the supplier's response"
	}
}

func oneSided(c *Clause, supplier, consumer bool, diags *diag.List) {
	switch {
	case supplier && !consumer:
		diags.Warnf(RuleOneSided, c.Pos, c.Path(), "%s: the supplier states a guarantee but the consumer states no requirement, so the joint cannot be checked", c.Path()).Hint = "add a `require` for the consumer's side"
	case consumer && !supplier:
		diags.Warnf(RuleOneSided, c.Pos, c.Path(), "%s: the consumer states a requirement but the supplier guarantees nothing", c.Path()).Hint = "add a `guarantee` (and for transients a `withstand`) for the supplier's side"
	}
}

func checkBand(b Band, path string, diags *diag.List) {
	if !b.Set {
		return
	}
	switch {
	case b.Nominal.Set && !b.Tolerance.Set:
		diags.Errorf(RuleBand, b.Nominal.Pos, path, "%s: nominal %s has no tolerance", path, b.Nominal.Raw).Hint = "add `tolerance`, such as \"5 %\", or state min and max instead"
		return
	case b.Tolerance.Set && !b.Nominal.Set:
		diags.Errorf(RuleBand, b.Tolerance.Pos, path, "%s: tolerance %s has no nominal to apply to", path, b.Tolerance.Raw).Hint = "add `nominal`"
		return
	case b.Tolerance.Set && b.Tolerance.Canon < 0:
		diags.Errorf(RuleBand, b.Tolerance.Pos, path, "%s: tolerance %s is negative", path, b.Tolerance.Raw).Hint = "a tolerance is ± its value: write it positive"
		return
	case !b.Nominal.Set && !b.Min.Set && !b.Max.Set:
		diags.Errorf(RuleBand, b.Pos, path, "%s: the band states no bound", path).Hint = "state nominal and tolerance, or min and/or max"
		return
	}
	if lo, hi, ok := b.Interval(); ok && lo > hi {
		pos := b.Min.Pos
		if !pos.IsValid() {
			pos = b.Pos
		}
		u := units.Canonical(firstSet(b.Min, b.Max, b.Nominal).Dim)
		diags.Errorf(RuleBand, pos, path, "%s: the band is empty: its lower bound %s is above its upper bound %s", path, units.Format(lo, u), units.Format(hi, u)).Hint = "swap min and max, or widen the band"
	}
}

func checkExcitation(c *Contracts, b *Boundary, t *Transient, diags *diag.List) {
	e := t.Excitation
	path := t.Path() + ".excitation"
	low, lok := loadKW(c, b, e.Low)
	high, hok := loadKW(c, b, e.High)
	if lok && hok && low >= high {
		diags.Errorf(RuleExcitation, e.High.Pos, path, "%s: high %s is not above low %s", path, e.High.Raw, e.Low.Raw).Hint = "an excitation steps from low up to high"
	}
	if design := designLoad(c, b); hok && design > 0 && units.Exceeds(high, design) {
		diags.Errorf(RuleExcitation, e.High.Pos, path, "%s: high %s is %s, above %s's design load of %s", path, e.High.Raw, showPower(high), b.Consumer.To, showPower(design)).Hint = "the consumer cannot produce more than its racks' design power: lower high, or raise the racks' design_power"
	}
	if e.Rate.Set && e.Rate.Canon <= 0 {
		diags.Errorf(RuleExcitation, e.Rate.Pos, path, "%s: edge rate %s must be positive", path, e.Rate.Raw).Hint = "write the rate at which load rises, such as \"20 MW/s\""
	}
	if e.Kind == "square" {
		if !e.Period.Set {
			diags.Errorf(RuleExcitation, e.Pos, path, "%s: a square wave needs a period", path).Hint = "add `period`, such as \"4 s\""
		}
		badDuty := e.Duty.Set && (e.Duty.Canon <= 0 || e.Duty.Canon >= 100)
		if badDuty {
			diags.Errorf(RuleExcitation, e.Duty.Pos, path, "%s: duty %s must lie between 0 %% and 100 %%", path, e.Duty.Raw).Hint = "duty is the share of each period spent at high, such as \"50 %\""
		}
		if e.Period.Set && e.Rate.Set && lok && hok && high > low && !badDuty {
			edge := (high - low) / e.Rate.Canon
			duty := 0.5
			if e.Duty.Set {
				duty = e.Duty.Canon / 100
			}
			if 2*edge > e.Period.Canon*math.Min(duty, 1-duty) {
				diags.Errorf(RuleExcitation, e.Period.Pos, path, "%s: edges of %s leave no time at high or low in a period of %s", path, fmtSecs(edge), e.Period.Raw).Hint = "lengthen the period or raise the edge rate"
			}
		}
	}
}

// loadKW resolves a load written as power or as % of the consumer's
// design load (design heat to liquid on a liquid boundary).
func loadKW(c *Contracts, b *Boundary, q Q) (float64, bool) {
	if !q.Set {
		return 0, false
	}
	if q.Dim == units.Power {
		return q.Canon, true
	}
	base := designLoad(c, b)
	if base == 0 {
		return 0, false
	}
	return base * q.Canon / 100, true
}

// designLoad is the consumer's design power in kW: what % loads refer to.
func designLoad(c *Contracts, b *Boundary) float64 {
	m := c.Site.Module(b.Consumer.To)
	if m == nil {
		return 0
	}
	if b.Medium == "liquid" {
		return m.DesignHeat()
	}
	return m.DesignPower()
}

func firstSet(qs ...Q) Q {
	for _, q := range qs {
		if q.Set {
			return q
		}
	}
	return Q{}
}

func fmtSecs(s float64) string {
	if s < 1 {
		return units.Format(s*1000, "ms")
	}
	return units.Format(s, "s")
}

// checkMask refuses a custom mask whose points are not in increasing
// duration: a point's limits hold for excursions up to its duration,
// after the point before it, so out of order they change meaning.
func checkMask(r Response, path string, diags *diag.List) {
	if r.MaskName != "custom" {
		return
	}
	for i := 1; i < len(r.Mask); i++ {
		prev, p := r.Mask[i-1].Duration, r.Mask[i].Duration
		if prev.Set && p.Set && !units.Exceeds(p.Canon, prev.Canon) {
			diags.Errorf(RuleMaskOrder, p.Pos, path, "%s: point %d lasts %s, not longer than point %d (%s): a mask's points go in increasing duration",
				path, i+1, p.Raw, i, prev.Raw).Hint = "order the points by duration, shortest first: each holds for excursions up to its duration"
		}
	}
}
