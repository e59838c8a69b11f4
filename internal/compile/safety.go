package compile

import (
	"fmt"
	"math"
	"strings"

	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/plan"
	"github.com/seamdc/seam/internal/units"
)

// interlocks derives the abort limits of a case. Every safety channel of
// the boundaries the case energises is interlocked: at FAT the case's
// boundary, at SAT and IST every boundary of the loaded consumer (its
// load bank loads them all). A channel's limits are its required steady
// band (the guarantee when nobody requires one), widened by the
// transient deviation the contract allows on it and, during its own
// failure, by the degraded band, plus a margin of 10 % of the band's
// width. The limits always contain what the case's own checks accept on
// the channel, so an interlock never aborts a run its checks would pass.
// An alarm safety channel trips when raised. A failure case suppresses
// the channels it is meant to trip, and says so.
func (k *compiler) interlocks(level string, b *contract.Boundary, fail *contract.Failure, checks []plan.Check) ([]plan.Interlock, []plan.Suppressed) {
	scope := []*contract.Boundary{b}
	if level != plan.FAT {
		scope = nil
		for _, o := range k.c.Boundaries {
			// a grid case loads every IT module: their joints' safety
			// channels guard it
			if o.Consumer.To == b.Consumer.To || (b.Medium == plan.Grid && k.isIT(o.Consumer.To)) {
				scope = append(scope, o)
			}
		}
	}
	out, off := []plan.Interlock{}, []plan.Suppressed(nil)

	for _, bb := range scope {
		for _, ch := range bb.Channels {
			if !ch.Safety {
				continue
			}
			if why := suppressed(ch, fail); why != "" {
				off = append(off, plan.Suppressed{Channel: ch.Name, Reason: why})
				continue
			}
			var f *contract.Failure
			if bb == b {
				f = fail
			}
			out = append(out, k.interlock(bb, ch, f, checks))
		}
	}
	sortBy(out, func(x plan.Interlock) string { return x.Channel })
	sortBy(off, func(x plan.Suppressed) string { return x.Channel })
	return out, off
}

// suppressed says why a failure case must not interlock a channel: the
// event takes out what it measures, or the case raises it on purpose.
func suppressed(ch *contract.Channel, f *contract.Failure) string {
	if f == nil {
		return ""
	}
	for _, bh := range []contract.Behaviour{f.Guarantee, f.Require} {
		if bh.Alarm.To == ch.Name {
			return fmt.Sprintf("the case raises this alarm on purpose (%s of %s)", f.Event, f.Target.To)
		}
	}
	t := f.Target.To
	if killsTarget[f.Event] && t != "" && (ch.At.To == t || strings.HasPrefix(ch.At.To, t+"/")) {
		return fmt.Sprintf("the case takes out %s (%s), which this channel measures", t, f.Event)
	}
	return ""
}

// interlock derives one safety channel's abort limits.
func (k *compiler) interlock(b *contract.Boundary, ch *contract.Channel, fail *contract.Failure, checks []plan.Check) plan.Interlock {
	il := plan.Interlock{Channel: ch.Name, Unit: k.unitOf(b, ch.Name), MaxPeriodS: interlockPeriodS, MaxSilenceS: maxSilenceS}
	safety := k.val("boundaries."+quote(b.ID)+".channels."+quote(ch.Name)+".safety", ch.Pos, "true")
	if ch.Quantity == contract.Alarm {
		il.Max = plan.F(0.5)
		il.Reason = "the alarm is raised"
		il.Sources = []string{safety}
		return il
	}
	// the limits follow the widest band on each side; only the values
	// of the bands that set a limit are its sources
	lo, hi := math.Inf(1), math.Inf(-1)
	var loSrc, hiSrc []string
	var loWhat, hiWhat string
	widen := func(bd band, what string) {
		if bd.lo < lo {
			lo, loSrc, loWhat = bd.lo, bd.sources, what
		}
		if bd.hi > hi {
			hi, hiSrc, hiWhat = bd.hi, bd.sources, what
		}
	}
	for _, s := range b.Steady {
		if s.Channel.To != ch.Name {
			continue
		}
		for _, side := range []string{plan.Require, plan.Guarantee} {
			if bd, ok := k.readBand(sideBand(s, side), s.Path()+"."+side, s.Pos); ok {
				widen(bd, "the "+side+"d band of "+s.Name)
				break
			}
		}
	}
	for _, t := range b.Transient {
		if t.Channel.To != ch.Name {
			continue
		}
		if bd, ok := k.deviationBand(b, t); ok {
			widen(bd, "the deviation "+t.Name+" allows")
		}
	}
	if fail != nil && fail.Channel.To == ch.Name {
		for _, side := range []string{plan.Require, plan.Guarantee} {
			bh := fail.Require
			if side == plan.Guarantee {
				bh = fail.Guarantee
			}
			if bd, ok := k.readBand(bh.Degraded, fail.Path()+"."+side+".degraded", bh.Pos); ok {
				widen(bd, "the degraded band of "+fail.Name)
				break
			}
		}
	}
	if !(lo > hi) {
		for _, c := range checks {
			if c.Channel != ch.Name {
				continue
			}
			// only the sides a check bounds: no_interruption says
			// nothing about how high a voltage may go
			if bd, ok := accepted(c); ok {
				bd.lo, bd.hi = finiteOr(bd.lo, lo), finiteOr(bd.hi, hi)
				if bd.lo < lo || bd.hi > hi {
					widen(bd, "what check "+c.ID+" accepts")
				}
			}
		}
	}
	if lo > hi || (math.IsInf(lo, -1) && math.IsInf(hi, 1)) {
		il.Reason = "no band is stated: trips only when the channel falls silent"
		il.Sources = []string{safety}
		return il
	}
	m := margin(lo, hi)
	if !math.IsInf(lo, -1) {
		il.Min = plan.F(round(lo - m))
	}
	if !math.IsInf(hi, 1) {
		il.Max = plan.F(round(hi + m))
	}
	widened := "widened by 10 % of its width"
	if math.IsInf(lo, -1) || math.IsInf(hi, 1) {
		widened = "widened by 5 % of its limit"
	}
	what := loWhat
	if hiWhat != loWhat && !math.IsInf(hi, 1) {
		if math.IsInf(lo, -1) {
			what = hiWhat
		} else {
			what = loWhat + " below, " + hiWhat + " above"
		}
	}
	il.Reason = what + ", " + widened
	il.Sources = dedupe(append(append([]string{safety}, loSrc...), hiSrc...))
	return il
}

// deviationBand is nominal ± the largest deviation a transient allows on
// its channel (the consumer's, else the supplier's).
func (k *compiler) deviationBand(b *contract.Boundary, t *contract.Transient) (band, bool) {
	for _, side := range []string{plan.Require, plan.Guarantee} {
		r := t.Require
		if side == plan.Guarantee {
			r = t.Guarantee
		}
		if !r.MaxDeviation.Set {
			continue
		}
		settle := r.SettleInto.To
		if settle == "" {
			settle = t.Guarantee.SettleInto.To
		}
		n, nsrc, ok := k.nominal(b, t.Channel.To, settle, side)
		if !ok {
			continue
		}
		dev := r.MaxDeviation.Canon
		if r.MaxDeviation.Dim == units.Ratio {
			dev = math.Abs(n) * dev / 100
		}
		return band{lo: n - dev, hi: n + dev,
			sources: []string{nsrc, k.src(t.Path()+"."+side+".max_deviation", r.MaxDeviation, r.Pos)}}, true
	}
	return band{}, false
}

// margin is interlockMargin of a band's width, or of its one finite
// bound's magnitude for a one-sided band.
func margin(lo, hi float64) float64 {
	switch {
	case !math.IsInf(lo, -1) && !math.IsInf(hi, 1):
		return interlockMargin * (hi - lo)
	case !math.IsInf(lo, -1):
		return interlockMargin / 2 * math.Abs(lo)
	default:
		return interlockMargin / 2 * math.Abs(hi)
	}
}

func quote(l string) string {
	if strings.ContainsAny(l, "-/. ") {
		return `"` + l + `"`
	}
	return l
}

// accepted is the range of values a check passes, where it has one
// (plan.Check.Accepted), with the check's sources.
func accepted(c plan.Check) (band, bool) {
	lo, hi, ok := c.Accepted()
	return band{lo: lo, hi: hi, sources: c.Sources}, ok
}

func dedupe(xs []string) []string {
	seen := map[string]bool{}
	out := xs[:0]
	for _, x := range xs {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

func finiteOr(v, alt float64) float64 {
	if math.IsInf(v, 0) {
		return alt
	}
	return v
}

// lockTable shares identical interlocks between cases: the first of a
// channel's variants is named after the channel, later ones get -2, -3.
type lockTable struct {
	list    []plan.Interlock
	byKey   map[string]string
	perChan map[string]int
}

func newLockTable() *lockTable {
	return &lockTable{list: []plan.Interlock{}, byKey: map[string]string{}, perChan: map[string]int{}}
}

func (t *lockTable) id(il plan.Interlock) string {
	key := fmt.Sprintf("%s|%s|%v|%v|%g|%g|%s|%v", il.Channel, il.Unit, fptr(il.Min), fptr(il.Max), il.MaxPeriodS, il.MaxSilenceS, il.Reason, il.Sources)
	if id, ok := t.byKey[key]; ok {
		return id
	}
	t.perChan[il.Channel]++
	il.ID = slug(il.Channel)
	if n := t.perChan[il.Channel]; n > 1 {
		il.ID += fmt.Sprintf("-%d", n)
	}
	t.byKey[key] = il.ID
	t.list = append(t.list, il)
	return il.ID
}

func fptr(f *float64) string {
	if f == nil {
		return "-"
	}
	return fmt.Sprint(*f)
}

// usedSources keeps the recorded contract values that the plan's checks
// and interlocks name.
func (k *compiler) usedSources(p *plan.Plan) map[string]plan.Source {
	out := map[string]plan.Source{}
	keep := func(paths []string) {
		for _, s := range paths {
			out[s] = k.vals[s]
		}
	}
	for _, c := range p.Cases {
		for _, ch := range c.Checks {
			keep(ch.Sources)
		}
	}
	for _, il := range p.Interlocks {
		keep(il.Sources)
	}
	return out
}
