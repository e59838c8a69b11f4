package contract

import (
	"fmt"
	"sort"
	"time"

	"github.com/seamdc/seam/internal/diag"
)

// RuleTranche: tranches and tie-ins that cannot be read.
const RuleTranche = "EXPAND001"

// tieInModuleKind is the module kind that provides each tie-in kind.
var tieInModuleKind = map[string]string{"breaker": "power", "header_stub": "cooling", "fibre": "controls"}

// checkExpansion checks the tranches and tie-ins: readable dates, known
// modules and tranches, and the rating each tie-in kind needs.
func checkExpansion(c *Contracts, diags *diag.List) {
	if c.Ops == nil {
		return
	}
	modules := map[string]*Module{}
	for _, m := range c.Site.Modules {
		modules[m.ID] = m
	}
	tranches := map[string]bool{}
	for _, t := range c.Ops.Tranches {
		tranches[t.ID] = true
		path := "site.tranches." + quoteLabel(t.ID)
		if _, err := time.Parse(time.DateOnly, t.Date); err != nil {
			diags.Add(diag.Diagnostic{Rule: RuleTranche, Severity: diag.Error, Pos: t.DatePos, Path: path + ".date",
				Message: fmt.Sprintf("%s.date: %q is not a date", path, t.Date), Hint: `write the day the tranche is available as YYYY-MM-DD: "2027-03-01"`})
		}
		for _, e := range t.Energises {
			if m := modules[e.To]; m == nil || m.Kind != "it" {
				diags.Add(diag.Diagnostic{Rule: RuleTranche, Severity: diag.Error, Pos: e.Pos, Path: path + ".energises",
					Message: fmt.Sprintf("%s.energises: %q is not an IT module of the site", path, e.To),
					Hint:    "name the IT modules this tranche energises, in order: " + itModules(c)})
			}
		}
	}
	for _, ti := range c.Ops.TieIns {
		path := "site.tie_ins." + quoteLabel(ti.ID)
		want := tieInModuleKind[ti.Kind]
		if m := modules[ti.Module.To]; m == nil || m.Kind != want {
			diags.Add(diag.Diagnostic{Rule: RuleTranche, Severity: diag.Error, Pos: ti.Module.Pos, Path: path + ".module",
				Message: fmt.Sprintf("%s.module: a %s tie-in is provided by a %s module, and %q is not one", path, ti.Kind, want, ti.Module.To),
				Hint:    fmt.Sprintf("name the %s module whose spare capacity it is", want)})
		}
		if ti.Tranche.To != "" && !tranches[ti.Tranche.To] {
			diags.Add(diag.Diagnostic{Rule: RuleTranche, Severity: diag.Error, Pos: ti.Tranche.Pos, Path: path + ".tranche",
				Message: fmt.Sprintf("%s.tranche: the site declares no tranche %q", path, ti.Tranche.To),
				Hint:    "name one of site.tranches, or drop tranche if the tie-in is usable from the first"})
		}
		missing := ""
		switch {
		case ti.Kind == "breaker" && (ti.Positions == 0 || !ti.Breaker.Set):
			missing = `positions and breaker: {positions: 2, breaker: "250 A"}`
		case ti.Kind == "header_stub" && !ti.Flow.Set:
			missing = `the flow it delivers: flow: "900 L/min"`
		case ti.Kind == "fibre" && ti.Pairs == 0:
			missing = "the spare pairs: pairs: 48"
		}
		if missing != "" {
			diags.Add(diag.Diagnostic{Rule: RuleTranche, Severity: diag.Error, Pos: ti.Pos, Path: path,
				Message: fmt.Sprintf("%s: a %s tie-in without its rating cannot be planned on", path, ti.Kind), Hint: "give " + missing})
		}
	}
}

func itModules(c *Contracts) string {
	var ids []string
	for _, m := range c.Site.Modules {
		if m.Kind == "it" {
			ids = append(ids, m.ID)
		}
	}
	return fmt.Sprint(ids)
}

// TrancheStep is one tranche of a plan.
type TrancheStep struct {
	Tranche    *Tranche
	Cumulative float64  // kW available from its date
	Energised  []string // modules energised on it
	Load       float64  // kW drawn once they are
}

// ModulePlan is when one IT module can be energised.
type ModulePlan struct {
	Module string
	IT     float64 // kW, its racks' design power
	Draw   float64 // kW from the utility: IT × design PUE
	// Tranche is the first tranche that covers it, nil none.
	Tranche *Tranche
}

// TranchePlan is the site's power arriving in tranches and when each IT
// module can be energised.
type TranchePlan struct {
	Steps   []TrancheStep
	Modules []ModulePlan
	// PUE is the factor from IT load to utility draw (design PUE, or 1
	// when the site declares no meters).
	PUE PUE
}

// PlanTranches energises the IT modules in one order on the tranches:
// those the tranches' energises lists name, tranche by tranche, then the
// rest in site order. Each is energised on the first tranche whose
// cumulative capacity covers its draw and that of every module before it;
// none overtakes another, and a module a tranche lists is not energised
// before that tranche.
func PlanTranches(c *Contracts) TranchePlan { return PlanTranchesPUE(c, DesignPUE(c), nil) }

// PlanTranchesPUE is PlanTranches with a given PUE (a what-if plans its
// new module at the site's design PUE as it was) and, by module, a
// tranche it may not be energised before (the tranche of a tie-in it
// uses).
func PlanTranchesPUE(c *Contracts, pue PUE, notBefore map[string]string) TranchePlan {
	p := TranchePlan{PUE: pue}
	factor := 1.0
	if p.PUE.OK {
		factor = p.PUE.Value
	}
	ts := append([]*Tranche(nil), c.Ops.Tranches...)
	sort.SliceStable(ts, func(i, j int) bool { return ts[i].Date < ts[j].Date })
	rank := map[string]int{} // tranche id → its place
	for i, t := range ts {
		rank[t.ID] = i
	}
	idx := map[string]int{}
	for _, m := range c.Site.Modules {
		if m.Kind != "it" {
			continue
		}
		it := 0.0
		for _, r := range m.Racks {
			it += r.DesignPower.Canon
		}
		idx[m.ID] = len(p.Modules)
		p.Modules = append(p.Modules, ModulePlan{Module: m.ID, IT: it, Draw: it * factor})
	}
	earliest := map[string]int{}
	var order []string
	for i, t := range ts {
		for _, e := range t.Energises {
			if _, ok := idx[e.To]; ok && !containsStr(order, e.To) {
				order = append(order, e.To)
				earliest[e.To] = i
			}
		}
	}
	for _, m := range p.Modules {
		if !containsStr(order, m.Module) {
			order = append(order, m.Module)
		}
	}
	for m, t := range notBefore {
		if r, ok := rank[t]; ok && r > earliest[m] {
			earliest[m] = r
		}
	}
	cum, load := 0.0, 0.0
	for i, t := range ts {
		cum += t.Capacity.Canon
		step := TrancheStep{Tranche: t, Cumulative: cum}
		for len(order) > 0 {
			m := &p.Modules[idx[order[0]]]
			if earliest[m.Module] > i || load+m.Draw > cum*(1+1e-9) {
				break
			}
			load += m.Draw
			m.Tranche = t
			step.Energised = append(step.Energised, m.Module)
			order = order[1:]
		}
		step.Load = load
		p.Steps = append(p.Steps, step)
	}
	return p
}
