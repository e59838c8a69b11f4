package diff

import (
	"math"

	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/units"
)

func (d *differ) clause(l loc, ob, nb *contract.Boundary, oc, nc clause) {
	x := scope{d: d, ob: ob, nb: nb, path: l.path, old: l.old, new: l.new}
	x.subject("channel", oc.c.Channel.To, nc.c.Channel.To, oc.c.Channel.Pos, nc.c.Channel.Pos)
	switch {
	case nc.s != nil:
		dim := channelDim(nb, nc.s.Channel.To)
		x.band("supplier", "guarantee", oc.s.Guarantee, nc.s.Guarantee, dim)
		x.band("consumer", "require", oc.s.Require, nc.s.Require, dim)
	case nc.t != nil:
		x.excitation(oc.t.Excitation, nc.t.Excitation)
		x.withstand(oc.t.Withstand, nc.t.Withstand)
		x.response("supplier", "guarantee", oc.t, nc.t, oc.t.Guarantee, nc.t.Guarantee)
		x.response("consumer", "require", oc.t, nc.t, oc.t.Require, nc.t.Require)
	case nc.f != nil:
		x.failure(oc.f, nc.f)
	}
}

func channelDim(b *contract.Boundary, name string) units.Dimension {
	for _, c := range b.Channels {
		if c.Name == name {
			return c.Quantity
		}
	}
	return ""
}

// loads reads a load (power, or % of the consumer's design load) as kW
// on each side, so that a change of the consumer's racks shows up as a
// change of the excitation it produces.
func (x scope) loads() (value, value) {
	return func(q contract.Q) (float64, bool) { return loadKW(x.d.old.C, x.ob, q) },
		func(q contract.Q) (float64, bool) { return loadKW(x.d.new.C, x.nb, q) }
}

// loadKW resolves a load as contract.Check does: power as written, % of
// the consumer's design power (design heat on a liquid boundary).
func loadKW(c *contract.Contracts, b *contract.Boundary, q contract.Q) (float64, bool) {
	if !q.Set {
		return 0, false
	}
	if q.Dim == units.Power {
		return q.Canon, true
	}
	m := c.Site.Module(b.Consumer.To)
	if m == nil {
		return 0, false
	}
	base := m.DesignPower()
	if b.Medium == "liquid" {
		base = m.DesignHeat()
	}
	return base * q.Canon / 100, base != 0
}

// load compares a load (a withstood step, a failure's load) in kW,
// showing the kW beside a % so that a change of the consumer's design
// power is visible.
func (x scope) load(side, sub string, o, n contract.Q) {
	ov, nv := x.loads()
	if !o.Set || !n.Set {
		x.limit(side, sub, o, n, true, swing, ov, nv)
		return
	}
	a, aok := ov(o)
	b, bok := nv(n)
	if !aok || !bok {
		x.limit(side, sub, o, n, true, swing, ov, nv)
		return
	}
	show := func(q contract.Q, kw float64) string {
		if q.Dim == units.Power {
			return q.Raw
		}
		return q.Raw + " (" + showKW(kw) + ")"
	}
	x.compare(side, x.loc(sub, o.Pos, n.Pos), a, b, show(o, a), show(n, b), true, swing)
}

// excitation compares what the consumer produces: a larger, faster or
// more frequent swing is a stronger demand on the supplier.
func (x scope) excitation(o, n contract.Excitation) {
	const side = "consumer"
	x.subject("excitation.channel", o.Channel.To, n.Channel.To, o.Channel.Pos, n.Channel.Pos)
	if o.Kind != n.Kind && o.Kind != "" && n.Kind != "" {
		e := weaker
		if n.Kind == "square" {
			e = stronger
		}
		x.d.judged(swing.rule(e), side, e, x.loc("excitation.kind", o.Pos, n.Pos), "%s → %s: %s", o.Kind, n.Kind, describeRule(swing.rule(e), side, e))
	}
	ov, nv := x.loads()
	oLow, ook1 := ov(o.Low)
	oHigh, ook2 := ov(o.High)
	nLow, nok1 := nv(n.Low)
	nHigh, nok2 := nv(n.High)
	if ook1 && ook2 && nok1 && nok2 {
		span := func(e contract.Excitation) string { return e.Low.Raw + " to " + e.High.Raw }
		x.compare(side, x.loc("excitation.high", o.High.Pos, n.High.Pos), oHigh-oLow, nHigh-nLow,
			"a step of "+showKW(oHigh-oLow)+" ("+span(o)+")", "a step of "+showKW(nHigh-nLow)+" ("+span(n)+")", true, swing)
		x.compare(side, x.loc("excitation.high", o.High.Pos, n.High.Pos), oHigh, nHigh,
			"a peak of "+showKW(oHigh), "a peak of "+showKW(nHigh), true, swing)
	}
	x.limit(side, "excitation.rate", o.Rate, n.Rate, true, swing, canonical, canonical)
	x.limit(side, "excitation.period", o.Period, n.Period, false, swing, canonical, canonical)
	x.duty(o, n)
	x.repetitions(o, n)
}

// defaultDuty is the duty of a square wave that states none.
const defaultDuty = 50.0

func (x scope) duty(o, n contract.Excitation) {
	const side = "consumer"
	if o.Duty.Set == n.Duty.Set {
		x.limit(side, "excitation.duty", o.Duty, n.Duty, true, swing, canonical, canonical)
		return
	}
	eff := func(q contract.Q) (float64, string) {
		if q.Set {
			return q.Canon, q.Raw
		}
		return defaultDuty, "(default 50 %)"
	}
	a, aRaw := eff(o.Duty)
	b, bRaw := eff(n.Duty)
	l := x.loc("excitation.duty", o.Duty.Pos, n.Duty.Pos)
	if approxEqual(a, b) {
		x.d.add(RuleUnitChanged, Info, side, l, nil, "%s written as %s: the same duty", aRaw, bRaw)
		return
	}
	e := weaker
	if b > a {
		e = stronger
	}
	x.d.judged(RuleDefaultChanged, side, e, l, "duty %s → %s: %s", aRaw, bRaw, describe(side, e))
}

func (x scope) repetitions(o, n contract.Excitation) {
	if o.Repetitions == n.Repetitions {
		return
	}
	const side = "consumer"
	l := x.loc("excitation.repetitions", o.Pos, n.Pos)
	if o.Repetitions == 0 || n.Repetitions == 0 {
		e := weaker
		if n.Repetitions != 0 {
			e = stronger
		}
		x.d.judged(RuleRequiredness, side, e, l, "repetitions %s → %s: %s", reps(o.Repetitions), reps(n.Repetitions), describe(side, e))
		return
	}
	x.compare(side, l, float64(o.Repetitions), float64(n.Repetitions), reps(o.Repetitions), reps(n.Repetitions), true, swing)
}

func reps(n int) string {
	if n == 0 {
		return "(not stated)"
	}
	return units.Format(float64(n), "repetitions")
}

// withstand compares what the supplier rides through: more is stronger.
func (x scope) withstand(o, n contract.Withstand) {
	const side = "supplier"
	if !o.Set && !n.Set || x.whole(side, "withstand", o.Set, n.Set, o.Pos, n.Pos) {
		return
	}
	x.load(side, "withstand.step", o.Step, n.Step)
	x.limit(side, "withstand.rate", o.Rate, n.Rate, true, swing, canonical, canonical)
	x.limit(side, "withstand.min_period", o.MinPeriod, n.MinPeriod, false, swing, canonical, canonical)
}

// response compares a transient envelope: a smaller deviation, a faster
// recovery and a narrower mask are stronger.
func (x scope) response(side, sub string, ot, nt *contract.Transient, o, n contract.Response) {
	if !o.Set && !n.Set || x.whole(side, sub, o.Set, n.Set, o.Pos, n.Pos) {
		return
	}
	onom, nnom := nominal(x.ob, ot), nominal(x.nb, nt)
	absolute := func(nom float64) value {
		return func(q contract.Q) (float64, bool) {
			if q.Dim != units.Ratio {
				return q.Canon, true
			}
			return math.Abs(nom) * q.Canon / 100, nom != 0
		}
	}
	ov, nv := value(canonical), value(canonical)
	if o.MaxDeviation.Dim != n.MaxDeviation.Dim {
		ov, nv = absolute(onom), absolute(nnom)
	}
	x.limit(side, sub+".max_deviation", o.MaxDeviation, n.MaxDeviation, false, bounds, ov, nv)
	x.limit(side, sub+".recovery", o.Recovery, n.Recovery, false, bounds, canonical, canonical)
	x.ref(side, sub+".settle_into", o.SettleInto, n.SettleInto, false)
	x.mask(side, sub+".mask", o, n)
}

// nominal is the steady nominal that % deviations of t refer to, found
// as the joint check finds it.
func nominal(b *contract.Boundary, t *contract.Transient) float64 {
	bandNominal := func(s *contract.Steady) float64 {
		for _, bd := range []contract.Band{s.Guarantee, s.Require} {
			if bd.Nominal.Set {
				return bd.Nominal.Canon
			}
		}
		return 0
	}
	for _, name := range []string{t.Guarantee.SettleInto.To, t.Require.SettleInto.To} {
		for _, s := range b.Steady {
			if name != "" && s.Name == name && bandNominal(s) != 0 {
				return bandNominal(s)
			}
		}
	}
	for _, s := range b.Steady {
		if s.Channel.To == t.Channel.To && bandNominal(s) != 0 {
			return bandNominal(s)
		}
	}
	return 0
}

// mask compares two time/deviation masks at every breakpoint of both.
func (x scope) mask(side, sub string, o, n contract.Response) {
	l := x.loc(sub, o.Pos, n.Pos)
	switch {
	case len(o.Mask) == 0 && len(n.Mask) == 0:
		return
	case len(o.Mask) == 0 || len(n.Mask) == 0:
		e := weaker
		if len(n.Mask) > 0 {
			e = stronger
		}
		x.d.judged(RuleRequiredness, side, e, l, "mask %s → %s: %s", orNone(o.MaskName), orNone(n.MaskName), describe(side, e))
		return
	}
	narrower, wider := false, false
	for _, dur := range maskTimes(o.Mask, n.Mask) {
		om, nm := contract.MaskAt(o.Mask, dur), contract.MaskAt(n.Mask, dur)
		olo, ohi := maskLimits(om)
		nlo, nhi := maskLimits(nm)
		narrower = narrower || nlo > olo || nhi < ohi
		wider = wider || nlo < olo || nhi > ohi
	}
	e := shifted
	switch {
	case !narrower && !wider:
		if o.MaskName != n.MaskName {
			x.d.add(RuleUnitChanged, Info, side, l, nil, "mask %s written as %s: the same limits", o.MaskName, n.MaskName)
		}
		return
	case !wider:
		e = stronger
	case !narrower:
		e = weaker
	}
	rule := map[effect]string{stronger: RuleTightened, weaker: RuleLoosened, shifted: RuleShifted}[e]
	x.d.judged(rule, side, e, l, "mask %s → %s: %s", o.MaskName, n.MaskName, describe(side, e))
}

func maskLimits(p contract.MaskPoint) (float64, float64) {
	lo, hi := math.Inf(-1), math.Inf(1)
	if p.Min.Set {
		lo = p.Min.Canon
	}
	if p.Max.Set {
		hi = p.Max.Canon
	}
	return lo, hi
}

// maskTimes are the durations at which either mask may change: each
// breakpoint and just after it.
func maskTimes(masks ...[]contract.MaskPoint) []float64 {
	out := []float64{0}
	for _, m := range masks {
		for _, p := range m {
			if p.Duration.Set {
				out = append(out, p.Duration.Canon, p.Duration.Canon*(1+1e-6)+1e-9)
			}
		}
	}
	return out
}

// failure compares the failure event and each side's behaviour.
func (x scope) failure(o, n *contract.Failure) {
	x.subject("event", o.Event, n.Event, o.Pos, n.Pos)
	x.subject("target", o.Target.To, n.Target.To, o.Target.Pos, n.Target.Pos)
	x.load("consumer", "load", o.Load, n.Load)
	x.behaviour("supplier", "guarantee", o.Guarantee, n.Guarantee, channelDim(x.nb, n.Channel.To))
	x.behaviour("consumer", "require", o.Require, n.Require, channelDim(x.nb, n.Channel.To))
}

func (x scope) behaviour(side, sub string, o, n contract.Behaviour, dim units.Dimension) {
	if !o.Set && !n.Set || x.whole(side, sub, o.Set, n.Set, o.Pos, n.Pos) {
		return
	}
	x.flag(side, sub+".no_interruption", o.NoInterruption, n.NoInterruption, o.Pos, n.Pos)
	x.limit(side, sub+".ride_through", o.RideThrough, n.RideThrough, true, bounds, canonical, canonical)
	x.band(side, sub+".degraded", o.Degraded, n.Degraded, dim)
	x.limit(side, sub+".degraded_for", o.DegradedFor, n.DegradedFor, false, bounds, canonical, canonical)
	x.ref(side, sub+".alarm", o.Alarm, n.Alarm, true)
	x.limit(side, sub+".alarm_within", o.AlarmWithin, n.AlarmWithin, false, bounds, canonical, canonical)
	x.limit(side, sub+".recovery", o.Recovery, n.Recovery, false, bounds, canonical, canonical)
}

func showKW(kw float64) string {
	if math.Abs(kw) >= 1000 {
		return units.Format(kw/1000, "MW")
	}
	return units.Format(kw, "kW")
}
