package diff

import (
	"math"
	"strings"

	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/diag"
	"github.com/seamdc/seam/internal/units"
)

// scope compares the terms of one clause.
type scope struct {
	d        *differ
	ob, nb   *contract.Boundary
	path     string   // the clause's path
	old, new diag.Pos // the clause's positions, for terms that are not written
}

func (x scope) loc(sub string, o, n diag.Pos) loc {
	return loc{path: x.path + "." + sub, boundary: x.nb, old: firstValid(o, x.old), new: firstValid(n, x.new)}
}

// pair is the rule ids for a stronger and a weaker change of a term.
type pair [2]string

var (
	bounds = pair{RuleTightened, RuleLoosened}
	swing  = pair{RuleExcitationRaised, RuleExcitationLowered}
)

func (p pair) rule(e effect) string {
	if e == stronger {
		return p[0]
	}
	return p[1]
}

// describe says what a change does, from the stating side's view.
func describe(side string, e effect) string {
	return describeRule("", side, e)
}

// describeRule words excitation changes as swings, others as statements.
func describeRule(rule, side string, e effect) string {
	if rule == RuleExcitationRaised || rule == RuleExcitationLowered {
		switch {
		case side == "supplier" && e == stronger:
			return "the supplier withstands more, safe"
		case side == "supplier":
			return "the supplier withstands less"
		case e == stronger:
			return "the consumer produces a larger swing"
		}
		return "the consumer produces a smaller swing, safe"
	}
	switch {
	case side == "supplier" && e == stronger:
		return "a stronger guarantee, safe"
	case side == "supplier" && e == weaker:
		return "a weaker guarantee"
	case side == "supplier":
		return "a different guarantee"
	case e == stronger:
		return "a stricter requirement"
	case e == weaker:
		return "a looser requirement, safe"
	}
	return "a different requirement"
}

func approxEqual(a, b float64) bool {
	if math.IsInf(a, 0) || math.IsInf(b, 0) {
		return a == b
	}
	return math.Abs(a-b) <= 1e-9*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}

// whole handles a statement (a guarantee, a requirement, a withstand)
// that exists on one side only; it returns false when both or neither
// have it.
func (x scope) whole(side, sub string, oSet, nSet bool, oPos, nPos diag.Pos) bool {
	if oSet == nSet {
		return false
	}
	if nSet {
		x.d.judged(RuleRequiredness, side, stronger, x.loc(sub, oPos, nPos), "newly stated: %s", describe(side, stronger))
	} else {
		x.d.judged(RuleRequiredness, side, weaker, x.loc(sub, oPos, nPos), "no longer stated: %s", describe(side, weaker))
	}
	return true
}

// band compares two bands of the same statement.
func (x scope) band(side, sub string, o, n contract.Band, dim units.Dimension) {
	if !o.Set && !n.Set || x.whole(side, sub, o.Set, n.Set, o.Pos, n.Pos) {
		return
	}
	ol, oh, ook := o.Interval()
	nl, nh, nok := n.Interval()
	l := x.loc(sub, o.Pos, n.Pos)
	if !ook || !nok {
		x.d.add(RuleChanged, Warn, side, l, x.d.both(x.nb), "the band cannot be read on both sides (tolerance without nominal), so the change cannot be judged")
		return
	}
	changed := bandFieldsChanged(o, n)
	if approxEqual(ol, nl) && approxEqual(oh, nh) {
		if len(changed) > 0 {
			x.d.add(RuleUnitChanged, Info, side, l, nil, "%s rewritten as %s: the same band, %s", showBand(o), showBand(n), showRange(nl, nh, dim))
		}
		return
	}
	e := shifted
	switch {
	case nl >= ol-eps(ol) && nh <= oh+eps(oh):
		e = stronger
	case nl <= ol+eps(ol) && nh >= oh-eps(oh):
		e = weaker
	}
	rule := map[effect]string{stronger: RuleTightened, weaker: RuleLoosened, shifted: RuleShifted}[e]
	if len(changed) == 1 && changed[0] == "tolerance" {
		rule, l = RuleToleranceChanged, x.loc(sub+".tolerance", o.Tolerance.Pos, n.Tolerance.Pos)
	} else if len(changed) == 1 && changed[0] == "nominal" {
		rule, l = RuleNominalMoved, x.loc(sub+".nominal", o.Nominal.Pos, n.Nominal.Pos)
	} else if len(changed) == 1 {
		q := map[string][2]contract.Q{"min": {o.Min, n.Min}, "max": {o.Max, n.Max}}[changed[0]]
		l = x.loc(sub+"."+changed[0], q[0].Pos, q[1].Pos)
	}
	x.d.judged(rule, side, e, l, "%s → %s: %s, was %s; %s", showBand(o), showBand(n), showRange(nl, nh, dim), showRange(ol, oh, dim), describe(side, e))
}

func eps(v float64) float64 {
	if math.IsInf(v, 0) {
		return 0
	}
	return 1e-9 * math.Max(1, math.Abs(v))
}

func bandFieldsChanged(o, n contract.Band) []string {
	var out []string
	for _, f := range []struct {
		name string
		o, n contract.Q
	}{{"nominal", o.Nominal, n.Nominal}, {"tolerance", o.Tolerance, n.Tolerance}, {"min", o.Min, n.Min}, {"max", o.Max, n.Max}} {
		if f.o.Set != f.n.Set || f.o.Raw != f.n.Raw {
			out = append(out, f.name)
		}
	}
	return out
}

// showBand renders a band as written: "415 V ± 3 %", "min 20 degC, max 35 degC".
func showBand(b contract.Band) string {
	var parts []string
	if b.Nominal.Set {
		s := b.Nominal.Raw
		if b.Tolerance.Set {
			s += " ± " + b.Tolerance.Raw
		}
		parts = append(parts, s)
	} else if b.Tolerance.Set {
		parts = append(parts, "± "+b.Tolerance.Raw)
	}
	if b.Min.Set {
		parts = append(parts, "min "+b.Min.Raw)
	}
	if b.Max.Set {
		parts = append(parts, "max "+b.Max.Raw)
	}
	return strings.Join(parts, ", ")
}

// showRange renders [lo, hi] in the canonical unit of dim.
func showRange(lo, hi float64, dim units.Dimension) string {
	u := units.Canonical(dim)
	switch {
	case math.IsInf(lo, -1) && math.IsInf(hi, 1):
		return "any value"
	case math.IsInf(lo, -1):
		return "at most " + units.Format(hi, u)
	case math.IsInf(hi, 1):
		return "at least " + units.Format(lo, u)
	}
	return strings.TrimSuffix(units.Format(lo, u), " "+u) + "–" + units.Format(hi, u)
}

// value reads a quantity for comparison; ok is false when it cannot be
// compared (a % that has nothing to be a % of).
type value func(q contract.Q) (float64, bool)

func canonical(q contract.Q) (float64, bool) { return q.Canon, true }

// limit compares a single-valued term. bigger says whether a larger value
// is the stronger statement (a longer ride-through) or not (a shorter
// recovery).
func (x scope) limit(side, sub string, o, n contract.Q, bigger bool, rules pair, ov, nv value) {
	if !o.Set && !n.Set {
		return
	}
	l := x.loc(sub, o.Pos, n.Pos)
	if o.Set != n.Set {
		if n.Set {
			x.d.judged(RuleRequiredness, side, stronger, l, "now states %s: %s", n.Raw, describe(side, stronger))
		} else {
			x.d.judged(RuleRequiredness, side, weaker, l, "no longer states a limit (was %s): %s", o.Raw, describe(side, weaker))
		}
		return
	}
	a, aok := ov(o)
	b, bok := nv(n)
	if !aok || !bok {
		x.d.add(RuleChanged, Warn, side, l, x.d.both(x.nb), "%s → %s cannot be compared: a %% needs a nominal to refer to", o.Raw, n.Raw)
		return
	}
	x.compare(side, l, a, b, o.Raw, n.Raw, bigger, rules)
}

// compare judges a → b once both are in the same terms.
func (x scope) compare(side string, l loc, a, b float64, oRaw, nRaw string, bigger bool, rules pair) {
	if approxEqual(a, b) {
		if oRaw != nRaw {
			x.d.add(RuleUnitChanged, Info, side, l, nil, "%s rewritten as %s: the same value", oRaw, nRaw)
		}
		return
	}
	e := weaker
	if (b > a) == bigger {
		e = stronger
	}
	x.d.judged(rules.rule(e), side, e, l, "%s → %s: %s", oRaw, nRaw, describeRule(rules.rule(e), side, e))
}

// flag compares booleans such as no_interruption; true is the stronger.
func (x scope) flag(side, sub string, o, n *bool, oPos, nPos diag.Pos) {
	ov, nv := o != nil && *o, n != nil && *n
	l := x.loc(sub, oPos, nPos)
	if ov == nv {
		if (o == nil) != (n == nil) {
			x.d.add(RuleUnitChanged, Info, side, l, nil, "written out as %v: the same meaning", nv)
		}
		return
	}
	e := weaker
	if nv {
		e = stronger
	}
	x.d.judged(RuleRequiredness, side, e, l, "%v → %v: %s", ov, nv, describe(side, e))
}

// ref compares a reference such as an alarm channel. With requiredness,
// naming one where there was none is a stronger statement.
func (x scope) ref(side, sub string, o, n contract.Ref, requiredness bool) {
	if o.To == n.To {
		return
	}
	l := x.loc(sub, o.Pos, n.Pos)
	switch {
	case requiredness && o.To == "":
		x.d.judged(RuleRequiredness, side, stronger, l, "now names %s: %s", n.To, describe(side, stronger))
	case requiredness && n.To == "":
		x.d.judged(RuleRequiredness, side, weaker, l, "no longer names %s: %s", o.To, describe(side, weaker))
	default:
		x.d.judged(RuleReferenceChanged, side, shifted, l, "%s → %s: %s", orNone(o.To), orNone(n.To), describe(side, shifted))
	}
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// subject reports a clause that now speaks of something else.
func (x scope) subject(sub, o, n string, oPos, nPos diag.Pos) {
	if o != n {
		x.d.add(RuleSubjectChanged, Warn, "", x.loc(sub, oPos, nPos), x.d.both(x.nb),
			"%s → %s: the clause now concerns something else; both parties must re-read it", orNone(o), orNone(n))
	}
}
