package plan

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Validate checks what the schema leaves to Go: the fields each step op
// and check kind needs (Fields), unique ids, and that every reference
// (a check's steps, a case's interlocks, a precondition's case, a step's
// load bank, a source path, a coverage entry's cases, a case's, gate's or
// map entry's commissioning level, a boundary record's) points at
// something the plan declares. Errors name the case, step or check.
func Validate(p *Plan) error {
	v := &validator{p: p, banks: map[string]bool{}, interlocks: map[string]*Interlock{}, cases: map[string]bool{}}
	for _, lb := range p.LoadBanks {
		if v.banks[lb.ID] {
			v.bad("load bank %s is declared twice", lb.ID)
		}
		v.banks[lb.ID] = true
	}
	for i := range p.Interlocks {
		il := &p.Interlocks[i]
		if v.interlocks[il.ID] != nil {
			v.bad("interlock %s is declared twice", il.ID)
		}
		v.interlocks[il.ID] = il
		v.sources("interlock "+il.ID, il.Sources)
		if il.Min != nil && il.Max != nil && *il.Min > *il.Max {
			v.bad("interlock %s: min %g is above max %g", il.ID, *il.Min, *il.Max)
		}
	}
	for _, c := range p.Cases {
		v.kase(c)
		v.cases[c.ID] = true
	}
	for _, cov := range p.Coverage {
		v.coverage(cov)
	}
	v.commissioning()
	v.boundaries()
	if n := len(v.errs); n > maxErrors {
		v.errs = append(v.errs[:maxErrors], fmt.Errorf("and %d more problems", n-maxErrors))
	}
	return errors.Join(v.errs...)
}

// maxErrors is how many problems Validate reports before it summarises.
const maxErrors = 20

type validator struct {
	p          *Plan
	errs       []error
	banks      map[string]bool
	interlocks map[string]*Interlock
	cases      map[string]bool // cases seen so far
}

func (v *validator) bad(format string, args ...any) {
	v.errs = append(v.errs, fmt.Errorf(format, args...))
}

func (v *validator) sources(who string, paths []string) {
	for _, s := range paths {
		if _, ok := v.p.Sources[s]; !ok {
			v.bad("%s: source %s is not in the plan's sources", who, s)
		}
	}
}

func (v *validator) kase(c Case) {
	if v.cases[c.ID] {
		v.bad("case %s is declared twice", c.ID)
	}
	if h := v.p.Header.Level; h != All && c.Level != h {
		v.bad("case %s: level %s in a %s plan", c.ID, c.Level, h)
	}
	if !strings.HasPrefix(c.ID, c.Level+"."+c.Boundary+"."+c.Kind+".") {
		v.bad("case %s: the id does not match level %s, boundary %s and kind %s", c.ID, c.Level, c.Boundary, c.Kind)
	}
	bad := func(format string, args ...any) { v.bad("case %s: "+format, append([]any{c.ID}, args...)...) }
	for _, pre := range c.Preconditions {
		switch {
		case pre.Kind == PreCasePassed && !v.cases[pre.Case]:
			bad("precondition names case %q, which does not run before it", pre.Case)
		case pre.Kind == PreLoadBankIdle && !v.banks[pre.LoadBank]:
			bad("precondition names load bank %q, which the plan does not declare", pre.LoadBank)
		}
	}
	steps := map[string]bool{}
	for _, s := range c.Steps {
		if steps[s.ID] {
			bad("step %s is declared twice", s.ID)
		}
		steps[s.ID] = true
		if msg := fieldProblem(s.Op, stepFields(s), "id", "op", "estimated_s", "note"); msg != "" {
			bad("step %s (%s): %s", s.ID, s.Op, msg)
		}
		if s.LoadBank != "" && !v.banks[s.LoadBank] {
			bad("step %s drives load bank %s, which the plan does not declare", s.ID, s.LoadBank)
		}
	}
	sampled := map[string]bool{}
	for _, s := range c.Sampling {
		if sampled[s.Channel] {
			bad("channel %s is sampled twice", s.Channel)
		}
		sampled[s.Channel] = true
	}
	checks := map[string]bool{}
	for _, k := range c.Checks {
		if checks[k.ID] {
			bad("check %s is declared twice", k.ID)
		}
		checks[k.ID] = true
		if msg := fieldProblem(k.Kind, checkFields(k), "id", "kind", "side", "channel", "sources"); msg != "" {
			bad("check %s (%s): %s", k.ID, k.Kind, msg)
		}
		for _, id := range append(slices.Clone(k.Steps), k.From) {
			if id != "" && !steps[id] {
				bad("check %s refers to step %s, which the case does not have", k.ID, id)
			}
		}
		if !sampled[k.Channel] {
			bad("check %s grades channel %s, which has no sampling requirement", k.ID, k.Channel)
		}
		if k.Min != nil && k.Max != nil && *k.Min > *k.Max {
			bad("check %s: min %g is above max %g", k.ID, *k.Min, *k.Max)
		}
		v.sources("case "+c.ID+" check "+k.ID, k.Sources)
	}
	for _, id := range c.Interlocks {
		if v.interlocks[id] == nil {
			bad("interlock %s is not declared", id)
		}
	}
}

func (v *validator) coverage(cov Coverage) {
	for _, id := range cov.Cases {
		if !v.cases[id] {
			v.bad("coverage of %s names case %s, which the plan does not hold", cov.Clause, id)
		}
	}
	proved := len(cov.Cases) > 0
	switch {
	case cov.Status == Full && (!proved || len(cov.Reasons) > 0):
		v.bad("coverage of %s: full needs cases and no reasons", cov.Clause)
	case cov.Status == Partial && (!proved || len(cov.Reasons) == 0):
		v.bad("coverage of %s: partial needs cases and reasons", cov.Clause)
	case (cov.Status == Untestable || cov.Status == NotAtLevel) && (proved || len(cov.Reasons) == 0):
		v.bad("coverage of %s: %s needs reasons and no cases", cov.Clause, cov.Status)
	}
}

// commissioning checks that the levels are declared once and that every
// case, gate, map entry and commissioned level names one of them. A
// plan without commissioning rules (an older plan) has nothing to check:
// its cases' levels come from the defaults when it is read.
func (v *validator) commissioning() {
	cx := v.p.Commissioning
	if cx == nil {
		return
	}
	ids := map[string]bool{}
	for _, l := range cx.Levels {
		if ids[l.ID] {
			v.bad("commissioning level %s is declared twice", l.ID)
		}
		ids[l.ID] = true
	}
	known := func(who, id string) {
		if !ids[id] {
			v.bad("%s names commissioning level %s, which the plan does not declare (levels: %s)", who, id, strings.Join(slices.Sorted(maps.Keys(ids)), ", "))
		}
	}
	for _, c := range v.p.Cases {
		if c.Commissioning != "" {
			known("case "+c.ID, c.Commissioning)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(cx.Gates)) {
		known("the gate of "+id, id)
	}
	for _, key := range slices.Sorted(maps.Keys(cx.Map)) {
		known("commissioning map entry "+key, cx.Map[key])
	}
	for _, id := range cx.Commissioned {
		known("commissioned", id)
	}
}

// boundaries checks the boundary records: each declared once, each
// party's signature listed once, and, in a plan that keeps them (older
// plans do not), one for the boundary of every case.
func (v *validator) boundaries() {
	seen := map[string]bool{}
	for _, b := range v.p.Boundaries {
		if seen[b.ID] {
			v.bad("boundary %s is recorded twice", b.ID)
		}
		seen[b.ID] = true
		parties := map[string]bool{}
		for _, s := range b.Signatures {
			if parties[s.Party] {
				v.bad("boundary %s: party %s's signature is recorded twice", b.ID, s.Party)
			}
			parties[s.Party] = true
		}
	}
	if len(v.p.Boundaries) == 0 {
		return
	}
	for _, c := range v.p.Cases {
		if !seen[c.Boundary] {
			v.bad("case %s: boundary %s has no record in the plan's boundaries", c.ID, c.Boundary)
			seen[c.Boundary] = true // once per boundary
		}
	}
}

// fieldProblem compares the fields present with those Fields lists for
// op (alternatives written "a|b"); always are allowed everywhere.
// Operator steps may also name the event and target they act on.
func fieldProblem(op string, present map[string]bool, always ...string) string {
	want, ok := Fields[op]
	if !ok {
		return "unknown"
	}
	allowed := map[string]bool{}
	for _, a := range always {
		allowed[a] = true
	}
	if op == OpOperator {
		allowed["event"], allowed["target"] = true, true
	}
	var missing, extra []string
	for _, w := range want {
		if opt, ok := strings.CutPrefix(w, "?"); ok {
			allowed[opt] = true
			continue
		}
		any := false
		for _, alt := range strings.Split(w, "|") {
			allowed[alt] = true
			any = any || present[alt]
		}
		if !any {
			missing = append(missing, strings.ReplaceAll(w, "|", " or "))
		}
	}
	for f, ok := range present {
		if ok && !allowed[f] {
			extra = append(extra, f)
		}
	}
	slices.Sort(extra)
	var msg []string
	if len(missing) > 0 {
		msg = append(msg, "needs "+strings.Join(missing, ", "))
	}
	if len(extra) > 0 {
		msg = append(msg, "does not use "+strings.Join(extra, ", "))
	}
	return strings.Join(msg, "; ")
}

func stepFields(s Step) map[string]bool {
	return map[string]bool{"action": s.Action != "", "channel": s.Channel != "", "cycles": s.Cycles != 0,
		"duration_s": s.DurationS != 0, "duty_pct": s.DutyPct != 0, "event": s.Event != "", "expect": s.Expect != "",
		"from_kw": s.FromKW != nil, "high_kw": s.HighKW != nil, "kw": s.KW != nil, "load_bank": s.LoadBank != "",
		"low_kw": s.LowKW != nil, "period_s": s.PeriodS != 0, "rate_kw_per_s": s.RateKWPerS != 0,
		"target": s.Target != "", "timeout_s": s.TimeoutS != 0, "driver": s.Driver != "",
		"stall_at_s": s.StallAtS != 0, "stall_s": s.StallS != 0, "voltage_pu": s.VoltagePU != nil}
}

func checkFields(k Check) map[string]bool {
	return map[string]bool{"for_s": k.ForS != 0, "from": k.From != "", "max": k.Max != nil,
		"max_deviation": k.MaxDeviation != nil, "min": k.Min != nil, "reference": k.Reference != nil,
		"steps": len(k.Steps) > 0, "unit": k.Unit != "", "within_s": k.WithinS != 0,
		"band_high_hz": k.BandHighHz != 0, "band_low_hz": k.BandLowHz != 0, "direction": k.Direction != "",
		"reference_s": k.ReferenceS != 0, "segment_s": k.SegmentS != 0, "share_pct": k.SharePct != 0,
		"window_s": k.WindowS != 0}
}
