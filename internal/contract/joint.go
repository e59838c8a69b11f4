package contract

import (
	"fmt"
	"math"
	"strings"

	"github.com/seamdc/seam/internal/diag"
	"github.com/seamdc/seam/internal/units"
)

// Joint rule ids.
const (
	RuleSteadyGap       = "JOINT001"
	RuleStepGap         = "JOINT002"
	RuleRateGap         = "JOINT003"
	RulePeriodGap       = "JOINT004"
	RuleDeviationGap    = "JOINT005"
	RuleRecoveryGap     = "JOINT006"
	RuleMaskGap         = "JOINT007"
	RuleInterruptionGap = "JOINT008"
	RuleDegradedGap     = "JOINT009"
	RuleAlarmGap        = "JOINT010"
	RuleSettleGap       = "JOINT011"
)

// checkJoint compares, clause by clause, what the supplier guarantees
// with what the consumer requires. Intervals are computed here in
// canonical units; CUE subsumption is not the judge (see cue.md).
func checkJoint(c *Contracts, b *Boundary, diags *diag.List) {
	j := joint{c: c, b: b, diags: diags}
	for _, s := range b.Steady {
		j.steady(s)
	}
	for _, t := range b.Transient {
		j.transient(t)
	}
	for _, f := range b.Failure {
		j.failure(f)
	}
}

type joint struct {
	c     *Contracts
	b     *Boundary
	diags *diag.List
}

// gap reports a contract gap at the first position, with the other side
// as related information.
func (j joint) gap(rule string, cl *Clause, at, other diag.Pos, otherWhat, hint, format string, args ...any) {
	d := j.diags.Errorf(rule, firstValid(at, cl.Pos), cl.Path(), "%s: contract gap between %s and %s: %s",
		cl.Path(), j.b.Supplier.To, j.b.Consumer.To, fmt.Sprintf(format, args...))
	d.Hint = hint
	if other.IsValid() {
		d.Related = []diag.Related{{Pos: other, Message: otherWhat}}
	}
}

func firstValid(ps ...diag.Pos) diag.Pos {
	for _, p := range ps {
		if p.IsValid() {
			return p
		}
	}
	return diag.Pos{}
}

func (j joint) channelDim(name string) units.Dimension {
	for _, ch := range j.b.Channels {
		if ch.Name == name {
			return ch.Quantity
		}
	}
	return ""
}

func (j joint) steady(s *Steady) {
	if !s.Guarantee.Set || !s.Require.Set {
		return
	}
	gl, gh, gok := s.Guarantee.Interval()
	rl, rh, rok := s.Require.Interval()
	if !gok || !rok || gl > gh || rl > rh {
		return
	}
	if gl >= rl && gh <= rh {
		return
	}
	dim := j.channelDim(s.Channel.To)
	j.gap(RuleSteadyGap, &s.Clause, s.Guarantee.Pos, s.Require.Pos, j.b.Consumer.To+"'s required band",
		"narrow the supplier's guarantee or widen the consumer's requirement until the guarantee lies inside",
		"%s guarantees %s but %s requires %s", j.b.Supplier.To, showRange(gl, gh, dim), j.b.Consumer.To, showRange(rl, rh, dim))
}

func (j joint) transient(t *Transient) {
	e, w := t.Excitation, t.Withstand
	if w.Set {
		low, lok := loadKW(j.c, j.b, e.Low)
		high, hok := loadKW(j.c, j.b, e.High)
		if step, sok := loadKW(j.c, j.b, w.Step); lok && hok && sok && units.Exceeds(high-low, step) {
			j.gap(RuleStepGap, &t.Clause, e.High.Pos, w.Step.Pos, j.b.Supplier.To+" withstands steps of "+w.Step.Raw,
				"reduce the consumer's step (power smoothing, a higher idle floor) or raise what the supplier withstands",
				"%s steps its load by %s (%s to %s) but %s withstands steps of %s", j.b.Consumer.To,
				showPower(high-low), e.Low.Raw, e.High.Raw, j.b.Supplier.To, showPower(step))
		}
		if e.Rate.Set && w.Rate.Set && units.Exceeds(e.Rate.Canon, w.Rate.Canon) {
			j.gap(RuleRateGap, &t.Clause, e.Rate.Pos, w.Rate.Pos, j.b.Supplier.To+" withstands "+w.Rate.Raw,
				"slow the consumer's edges (ramp limiting) or raise the supplier's rated ramp",
				"%s ramps at %s but %s withstands %s", j.b.Consumer.To, e.Rate.Raw, j.b.Supplier.To, w.Rate.Raw)
		}
		if e.Kind == "square" && e.Period.Set && w.MinPeriod.Set && units.Exceeds(w.MinPeriod.Canon, e.Period.Canon) {
			j.gap(RulePeriodGap, &t.Clause, e.Period.Pos, w.MinPeriod.Pos, j.b.Supplier.To+" needs periods of at least "+w.MinPeriod.Raw,
				"lengthen the consumer's period or have the supplier qualify shorter periods",
				"%s repeats its load swing every %s but %s needs at least %s", j.b.Consumer.To, e.Period.Raw, j.b.Supplier.To, w.MinPeriod.Raw)
		}
	}
	j.settles(t)
	if !t.Guarantee.Set || !t.Require.Set {
		return
	}
	g, r := t.Guarantee, t.Require
	nominal := j.nominal(t)
	if gd, rd, ok := deviations(g.MaxDeviation, r.MaxDeviation, nominal); ok && units.Exceeds(gd, rd) {
		j.gap(RuleDeviationGap, &t.Clause, g.MaxDeviation.Pos, r.MaxDeviation.Pos, j.b.Consumer.To+" tolerates "+r.MaxDeviation.Raw,
			"tighten the supplier's response or relax the consumer's tolerance",
			"%s may deviate by %s but %s tolerates %s", j.b.Supplier.To, g.MaxDeviation.Raw, j.b.Consumer.To, r.MaxDeviation.Raw)
	}
	if g.Recovery.Set && r.Recovery.Set && units.Exceeds(g.Recovery.Canon, r.Recovery.Canon) {
		j.gap(RuleRecoveryGap, &t.Clause, g.Recovery.Pos, r.Recovery.Pos, j.b.Consumer.To+" requires recovery within "+r.Recovery.Raw,
			"speed up the supplier's regulator or relax the consumer's recovery time",
			"%s recovers within %s but %s requires %s", j.b.Supplier.To, g.Recovery.Raw, j.b.Consumer.To, r.Recovery.Raw)
	} else if r.Recovery.Set && !g.Recovery.Set {
		j.gap(RuleRecoveryGap, &t.Clause, g.Pos, r.Recovery.Pos, j.b.Consumer.To+" requires recovery within "+r.Recovery.Raw,
			"state the supplier's recovery time", "%s requires recovery within %s but %s states none", j.b.Consumer.To, r.Recovery.Raw, j.b.Supplier.To)
	}
	j.mask(t, nominal)
}

// nominal is the steady nominal that % deviations refer to: the clause
// named by settle_into, else any steady clause on the same channel.
func (j joint) nominal(t *Transient) float64 {
	for _, name := range []string{t.Guarantee.SettleInto.To, t.Require.SettleInto.To} {
		for _, s := range j.b.Steady {
			if s.Name == name && name != "" {
				if n := bandNominal(s); n != 0 {
					return n
				}
			}
		}
	}
	for _, s := range j.b.Steady {
		if s.Channel.To == t.Channel.To {
			if n := bandNominal(s); n != 0 {
				return n
			}
		}
	}
	return 0
}

func bandNominal(s *Steady) float64 {
	for _, b := range []Band{s.Guarantee, s.Require} {
		if b.Nominal.Set {
			return b.Nominal.Canon
		}
	}
	return 0
}

// deviations returns both deviations in the same terms: % when both are
// %, else absolute via the nominal.
func deviations(g, r Q, nominal float64) (float64, float64, bool) {
	if !g.Set || !r.Set {
		return 0, 0, false
	}
	if g.Dim == r.Dim {
		return g.Canon, r.Canon, true
	}
	if nominal == 0 {
		return 0, 0, false
	}
	abs := func(q Q) float64 {
		if q.Dim == units.Ratio {
			return math.Abs(nominal) * q.Canon / 100
		}
		return q.Canon
	}
	return abs(g), abs(r), true
}

// mask checks that the supplier's guaranteed excursion (max deviation
// lasting the recovery time) stays inside the consumer's mask.
func (j joint) mask(t *Transient, nominal float64) {
	r, g := t.Require, t.Guarantee
	if len(r.Mask) == 0 || !g.MaxDeviation.Set || !g.Recovery.Set {
		return
	}
	dev := g.MaxDeviation.Canon
	if g.MaxDeviation.Dim != units.Ratio {
		if nominal == 0 {
			return
		}
		dev = g.MaxDeviation.Canon / math.Abs(nominal) * 100
	}
	p := MaskAt(r.Mask, g.Recovery.Canon)
	low, high := 100-dev, 100+dev
	if (p.Min.Set && low < p.Min.Canon) || (p.Max.Set && high > p.Max.Canon) {
		j.gap(RuleMaskGap, &t.Clause, g.MaxDeviation.Pos, r.Pos, "the "+r.MaskName+" mask",
			"tighten the supplier's deviation or recovery until the excursion fits the mask",
			"an excursion of ±%s lasting %s leaves the %s mask, which allows %s–%s for that long",
			units.Format(dev, "%"), g.Recovery.Raw, r.MaskName, units.Format(p.Min.Canon, "%"), units.Format(p.Max.Canon, "%"))
	}
}

func (j joint) failure(f *Failure) {
	g, r := f.Guarantee, f.Require
	if !g.Set || !r.Set {
		return
	}
	other := func(q Q) diag.Pos { return firstValid(q.Pos, r.Pos) }
	if r.NoInterruption != nil && *r.NoInterruption && (g.NoInterruption == nil || !*g.NoInterruption) {
		j.gap(RuleInterruptionGap, &f.Clause, g.Pos, r.Pos, j.b.Consumer.To+" requires no interruption",
			"the supplier must guarantee no_interruption (UPS, static transfer) or the consumer must accept one",
			"on %s of %s, %s requires no interruption but %s does not guarantee it", f.Event, f.Target.To, j.b.Consumer.To, j.b.Supplier.To)
	}
	if r.RideThrough.Set && (!g.RideThrough.Set || units.Exceeds(r.RideThrough.Canon, g.RideThrough.Canon)) {
		gr, rr := sameUnit(g.RideThrough, r.RideThrough)
		j.gap(RuleInterruptionGap, &f.Clause, firstValid(g.RideThrough.Pos, g.Pos), other(r.RideThrough), j.b.Consumer.To+" requires "+r.RideThrough.Raw,
			"size the UPS for the required ride-through or shorten the requirement",
			"%s rides through %s for %s but %s requires %s", j.b.Supplier.To, f.Event, gr, j.b.Consumer.To, rr)
	}
	j.degraded(f)
	switch {
	case r.Alarm.To != "" && g.Alarm.To == "":
		within := ""
		if r.AlarmWithin.Set {
			within = " within " + r.AlarmWithin.Raw
		}
		j.gap(RuleAlarmGap, &f.Clause, g.Pos, r.Alarm.Pos, j.b.Consumer.To+" expects alarm "+r.Alarm.To,
			"state the alarm the supplier raises, and within how long",
			"%s expects alarm %s%s on %s but %s states no alarm", j.b.Consumer.To, r.Alarm.To, within, f.Event, j.b.Supplier.To)
	case r.Alarm.To != "" && g.Alarm.To != r.Alarm.To:
		j.gap(RuleAlarmGap, &f.Clause, firstValid(g.Alarm.Pos, g.Pos), r.Alarm.Pos, j.b.Consumer.To+" expects alarm "+r.Alarm.To,
			"raise the alarm the consumer watches, or agree on one alarm channel",
			"%s expects alarm %s on %s but %s raises %s", j.b.Consumer.To, r.Alarm.To, f.Event, j.b.Supplier.To, g.Alarm.To)
	case r.AlarmWithin.Set && (!g.AlarmWithin.Set || units.Exceeds(g.AlarmWithin.Canon, r.AlarmWithin.Canon)):
		gw, rw := sameUnit(g.AlarmWithin, r.AlarmWithin)
		j.gap(RuleAlarmGap, &f.Clause, firstValid(g.AlarmWithin.Pos, g.Pos), other(r.AlarmWithin), j.b.Consumer.To+" requires the alarm within "+r.AlarmWithin.Raw,
			"shorten the supplier's alarm delay or relax the requirement",
			"%s alarms within %s but %s requires %s", j.b.Supplier.To, gw, j.b.Consumer.To, rw)
	}
	if r.Recovery.Set && (!g.Recovery.Set || units.Exceeds(g.Recovery.Canon, r.Recovery.Canon)) {
		gr, rr := sameUnit(g.Recovery, r.Recovery)
		j.gap(RuleAlarmGap, &f.Clause, firstValid(g.Recovery.Pos, g.Pos), other(r.Recovery), j.b.Consumer.To+" requires recovery within "+r.Recovery.Raw,
			"speed up the supplier's recovery or relax the requirement",
			"%s recovers from %s within %s but %s requires %s", j.b.Supplier.To, f.Event, gr, j.b.Consumer.To, rr)
	}
}

func (j joint) degraded(f *Failure) {
	g, r := f.Guarantee, f.Require
	dim := j.channelDim(f.Channel.To)
	if r.Degraded.Set {
		rl, rh, rok := r.Degraded.Interval()
		gl, gh, gok := g.Degraded.Interval()
		switch {
		case !g.Degraded.Set:
			j.gap(RuleDegradedGap, &f.Clause, g.Pos, r.Degraded.Pos, j.b.Consumer.To+" accepts "+showRange(rl, rh, dim),
				"state the degraded band the supplier guarantees during the event",
				"%s accepts %s during %s but %s guarantees no degraded band", j.b.Consumer.To, showRange(rl, rh, dim), f.Event, j.b.Supplier.To)
		case rok && gok && (gl < rl || gh > rh):
			j.gap(RuleDegradedGap, &f.Clause, g.Degraded.Pos, r.Degraded.Pos, j.b.Consumer.To+" accepts "+showRange(rl, rh, dim),
				"narrow the supplier's degraded band or widen what the consumer accepts",
				"during %s %s guarantees %s but %s accepts %s", f.Event, j.b.Supplier.To, showRange(gl, gh, dim), j.b.Consumer.To, showRange(rl, rh, dim))
		}
	}
	if r.DegradedFor.Set && g.DegradedFor.Set && units.Exceeds(g.DegradedFor.Canon, r.DegradedFor.Canon) {
		j.gap(RuleDegradedGap, &f.Clause, g.DegradedFor.Pos, r.DegradedFor.Pos, j.b.Consumer.To+" accepts "+r.DegradedFor.Raw,
			"shorten the supplier's degraded period or relax the requirement",
			"%s stays degraded for up to %s but %s accepts %s", j.b.Supplier.To, g.DegradedFor.Raw, j.b.Consumer.To, r.DegradedFor.Raw)
	}
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

// showPower writes a power to 0.1 kW, in MW from 1 MW up, else in kW:
// fine enough that no digit a comparison decided on is rounded away
// (2.0805 MW stays 2.0805 MW).
func showPower(kw float64) string {
	kw = math.Round(kw*10) / 10
	if math.Abs(kw) >= 1000 {
		return units.Format(kw/1000, "MW")
	}
	return units.Format(kw, "kW")
}

// settles checks that a square wave holds each level at least as long
// as the supplier needs to recover: an edge every 0.75 s against a 1 s
// recovery never settles, whatever the period's minimum allows.
func (j joint) settles(t *Transient) {
	e, g := t.Excitation, t.Guarantee
	if e.Kind != "square" || !e.Period.Set || !g.Recovery.Set {
		return
	}
	duty := 0.5
	if e.Duty.Set {
		duty = e.Duty.Canon / 100
	}
	if duty <= 0 || duty >= 1 {
		return // CLAUSE004 reports the duty
	}
	hold := e.Period.Canon * math.Min(duty, 1-duty)
	if units.Exceeds(g.Recovery.Canon, hold) {
		j.gap(RuleSettleGap, &t.Clause, e.Period.Pos, g.Recovery.Pos, j.b.Supplier.To+" recovers within "+g.Recovery.Raw,
			fmt.Sprintf("lengthen the period to at least %s, or have the supplier recover faster", fmtSecs(g.Recovery.Canon/math.Min(duty, 1-duty))),
			"%s steps its load every %s (period %s, duty %s) but %s recovers only within %s: the response never settles",
			j.b.Consumer.To, fmtSecs(hold), e.Period.Raw, fmt.Sprintf("%g %%", duty*100), j.b.Supplier.To, g.Recovery.Raw)
	}
}

// sameUnit writes two quantities of one dimension for one sentence: as
// written when their units agree, else both in the second's unit (the
// requirement's), so that "0.1 min" never meets "5 s" in one message.
// A quantity not set reads "(none)".
func sameUnit(a, b Q) (string, string) {
	switch {
	case !a.Set:
		return "(none)", b.Raw
	case !b.Set || a.Unit == b.Unit:
		return a.Raw, b.Raw
	}
	v, err := units.In(a.Canon, b.Unit)
	if err != nil {
		return a.Raw, b.Raw
	}
	return units.Format(v, b.Unit) + " (" + a.Raw + ")", b.Raw
}
