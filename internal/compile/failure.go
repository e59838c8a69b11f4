package compile

import (
	"fmt"
	"math"
	"strings"

	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/plan"
	"github.com/seamdc/seam/internal/units"
)

// fault says how an event is injected and undone. Automatic faults are
// ones a device can perform on command (a CDU stops a pump); the others
// need a person (open a breaker under load, wet a leak sensor). Both
// carry the words an operator follows, so a runner without a device for
// the fault can prompt instead.
type fault struct {
	automatic            bool
	action, expect, undo string
}

var faults = map[string]fault{
	"feed_loss":         {false, "Open the upstream breaker of feed %s", "feed %s de-energised; the load stays up on the other feed", "Close the upstream breaker of feed %s"},
	"breaker_open":      {false, "Open breaker %s", "breaker %s open", "Close breaker %s"},
	"ups_on_battery":    {false, "Open the mains input breaker of the UPS on %s", "the UPS on %s runs on battery; its output stays up", "Close the mains input breaker of the UPS on %s"},
	"pump_trip":         {true, "Stop pump %s", "pump %s stopped; the standby pump takes over", "Restart pump %s"},
	"cdu_trip":          {true, "Trip CDU %s", "CDU %s stopped; the other CDUs carry the load", "Restart CDU %s"},
	"controller_silent": {false, "Disconnect controller %s from the controls network", "controller %s silent", "Reconnect controller %s"},
	"leak":              {false, "Wet the leak sensor at %s with the test fixture", "leak alarm raised at %s", "Dry and reset the leak sensor at %s"},
}

// killsTarget lists events after which the target's own measurements are
// expected to fail; their safety interlocks are suppressed for the case.
var killsTarget = map[string]bool{"feed_loss": true, "breaker_open": true, "controller_silent": true, "cdu_trip": true, "pump_trip": true}

// failure builds the case for a failure clause: raise the load stepwise
// to the clause's load, inject the event, await the alarm, observe the
// behaviour, restore and unload.
func (k *compiler) failure(level string, b *contract.Boundary, f *contract.Failure) {
	cl := &f.Clause
	if !k.hasChannel(level, b, cl, f.Channel) {
		return
	}
	behaviours := k.behaviours(level, f)
	for _, bh := range behaviours {
		if bh.b.AlarmWithin.Set && bh.b.Alarm.To == "" {
			k.untestable(cl, level, RuleNoChannel, bh.b.AlarmWithin.Pos, "name the alarm channel beside alarm_within",
				"no channel measures it: the %s alarm_within %s names no alarm channel", bh.side, bh.b.AlarmWithin.Raw)
			return
		}
	}
	load, lb, defaulted, ok := k.failureLoad(level, b, f)
	if !ok {
		return
	}
	cb := k.newCase(level, b, cl, lb)
	obs := k.observeWindow(behaviours)
	baseNote := "steady before the event"
	if defaulted {
		baseNote = fmt.Sprintf("the clause states no load: IST holds %s at its design load", b.Consumer.To)
	}
	inject := cb.failureProgram(f, load, obs, behaviours, baseNote)
	for _, bh := range behaviours {
		cb.behaviour(f, bh, inject, obs)
	}
	if len(cb.c.Checks) == 0 {
		k.untestable(cl, level, RuleNothing, f.Pos, "state the required behaviour: no_interruption, degraded band, alarm, recovery",
			"no side states a behaviour to grade at this level")
		return
	}
	cb.reactive(f.Channel.To)
	at := "with no load"
	if lb != nil {
		at = "at " + kwText(load) + " on " + lb.ID
	}
	cb.c.Title = title(fmt.Sprintf("%s %s %s", upper(level), b.ID, f.Name),
		fmt.Sprintf("%s of %s %s", strings.ReplaceAll(f.Event, "_", " "), f.Target.To, at), "behaviour on "+f.Channel.To)
	cb.c.deps = append(cb.c.deps, k.steadyDeps(level, b, f.Channel.To)...)
	if level == plan.IST {
		cb.c.Preconditions = append(cb.c.Preconditions, plan.Precondition{Kind: plan.PreState,
			Text: fmt.Sprintf("the SAT of %s passed; every redundant unit in service and no alarm active on %s", b.ID, b.ID)})
	}
	cb.done(f)
}

// sided is one side's behaviour.
type sided struct {
	side string
	b    contract.Behaviour
}

func (k *compiler) behaviours(level string, f *contract.Failure) []sided {
	var out []sided
	for _, side := range sides(level) {
		bh := f.Guarantee
		if side == plan.Require {
			bh = f.Require
		}
		if bh.Set {
			out = append(out, sided{side, bh})
		}
	}
	return out
}

// failureLoad is the load held when the event happens: the clause's
// load; at IST, the consumer's design load when the clause states none
// (every failure is tested under load); at FAT, none.
func (k *compiler) failureLoad(level string, b *contract.Boundary, f *contract.Failure) (load float64, lb *contract.LoadBank, defaulted, ok bool) {
	cl := &f.Clause
	load, ok = k.loadKW(b, f.Load)
	if f.Load.Set && !ok {
		k.untestable(cl, level, RuleNoLoad, f.Load.Pos, "write the load as power, or give the consumer racks with a design power",
			"the failure load %s cannot be resolved to kW", f.Load.Raw)
		return 0, nil, false, false
	}
	if !f.Load.Set {
		if level != plan.IST || k.designKW(b) == 0 {
			return 0, nil, false, true
		}
		load, defaulted = k.designKW(b), true
	}
	if load == 0 {
		return 0, nil, false, true
	}
	lb = k.bankAt(b.Consumer.To)
	if lb == nil {
		k.untestable(cl, level, RuleNoLoad, firstValid(f.Load.Pos, f.Pos), fmt.Sprintf("declare a load bank at %s under site.loadbanks", b.Consumer.To),
			"no load bank at %s to hold %s during the event", b.Consumer.To, kwText(load))
		return 0, nil, false, false
	}
	load = newProgram(lb).setpointUncapped(load)
	if load > lb.Rating.Canon+1e-9 {
		what := ""
		if defaulted {
			what = fmt.Sprintf(" (%s's design load: the clause states none, and IST tests under load)", b.Consumer.To)
		}
		k.untestable(cl, level, RuleNoLoad, firstValid(f.Load.Pos, f.Pos),
			fmt.Sprintf("connect a load bank of at least %s at %s under site.loadbanks", kwText(load), b.Consumer.To),
			"the load of %s%s is larger than any load bank at %s (the largest, %s, is rated %s)", kwText(load), what, b.Consumer.To, lb.ID, kwText(lb.Rating.Canon))
		return 0, nil, false, false
	}
	return load, lb, defaulted, true
}

// observeWindow is how long to watch after the event: the longest time
// a side states (ride-through capped by --max-hold), plus a margin.
func (k *compiler) observeWindow(bs []sided) float64 {
	longest := 0.0
	for _, bh := range bs {
		for _, q := range []contract.Q{bh.b.DegradedFor, bh.b.Recovery, bh.b.AlarmWithin} {
			if q.Set {
				longest = math.Max(longest, q.Canon)
			}
		}
		if bh.b.RideThrough.Set {
			rt, _ := k.hold(bh.b.RideThrough.Canon)
			longest = math.Max(longest, rt)
		}
	}
	if longest == 0 {
		d, _ := k.hold(baselineS)
		return d
	}
	return round(longest + math.Max(10, longest*0.1))
}

// failureProgram climbs to the load, injects the event, awaits the
// alarms, observes, restores and unloads. It returns the inject step.
func (cb *caseBuilder) failureProgram(f *contract.Failure, load, obs float64, bs []sided, baseNote string) string {
	p, t := cb.prog, timingOf(cb.b.Medium)
	settle, _ := cb.k.hold(t.settle)
	design := cb.k.designKW(cb.b)
	if cb.lb != nil {
		p.set("start", 0)
		p.climb(load, design, settle)
		defer p.unload(design)
	}
	base, _ := cb.k.hold(baselineS)
	p.hold("baseline", base, baseNote)
	fl := faults[f.Event]
	target := f.Target.To
	step := plan.Step{ID: "inject", Event: f.Event, Target: target, Action: fmt.Sprintf(fl.action, target),
		Expect: fmt.Sprintf(fl.expect, target), EstimatedS: operatorS}
	step.Op = plan.OpOperator
	if fl.automatic {
		step.Op, step.EstimatedS = plan.OpInjectFault, automaticS
	}
	p.add(step)
	for _, alarm := range alarms(bs) {
		within := 0.0
		for _, bh := range bs {
			if bh.b.Alarm.To == alarm && bh.b.AlarmWithin.Set {
				within = math.Max(within, bh.b.AlarmWithin.Canon)
			}
		}
		if within == 0 {
			within = obs
		}
		p.add(plan.Step{ID: "await-" + slug(alarm), Op: plan.OpAwaitAlarm, Channel: alarm, TimeoutS: round(2 * within),
			Note: "a timeout does not abort: the alarm check fails", EstimatedS: within})
	}
	p.hold("observe", obs, "behaviour during the event")
	undo := plan.Step{ID: "restore", Op: plan.OpOperator, Event: f.Event, Target: target, Action: fmt.Sprintf(fl.undo, target),
		Expect: "normal operation: every unit back in service", EstimatedS: operatorS}
	if fl.automatic {
		undo.Op, undo.EstimatedS = plan.OpRestore, automaticS
	}
	p.add(undo)
	rec, _ := cb.k.hold(t.recover)
	p.hold("recover", rec, "back to normal before unloading")
	return "inject"
}

// alarms lists the distinct alarm channels the sides name, in order.
func alarms(bs []sided) []string {
	var out []string
	for _, bh := range bs {
		if a := bh.b.Alarm.To; a != "" && !contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// slug makes a channel name usable inside a step id.
func slug(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	return strings.Trim(b.String(), "-")
}

// behaviour adds one side's checks for a failure.
func (cb *caseBuilder) behaviour(f *contract.Failure, bh sided, inject string, obs float64) {
	k, b, ch, side := cb.k, cb.b, f.Channel.To, bh.side
	path, bv := f.Path()+"."+side, bh.b
	unit := k.unitOf(b, ch)
	s := func(field string, q contract.Q) string { return k.src(path+"."+field, q, bv.Pos) }
	if bv.Alarm.To != "" {
		within, sources := obs, []string{k.val(path+".alarm", firstValid(bv.Alarm.Pos, bv.Pos), bv.Alarm.To)}
		if bv.AlarmWithin.Set {
			within = bv.AlarmWithin.Canon
			sources = append(sources, s("alarm_within", bv.AlarmWithin))
		}
		cb.check(plan.Check{ID: checkID(side, plan.AlarmWithin, ""), Kind: plan.AlarmWithin, Side: side, Channel: bv.Alarm.To,
			WithinS: round(within), From: inject, Sources: sources})
		cb.samp.within(bv.Alarm.To, within, side+" alarm delay")
	}
	if (bv.NoInterruption != nil && *bv.NoInterruption) || bv.RideThrough.Set {
		cb.noInterruption(f, bh, inject, obs)
	}
	if bv.Degraded.Set {
		if bd, ok := k.readBand(bv.Degraded, path+".degraded", bv.Pos); ok {
			forS, sources := obs, bd.sources
			if bv.DegradedFor.Set {
				sources = append(sources, s("degraded_for", bv.DegradedFor))
			}
			cb.check(plan.Check{ID: checkID(side, plan.InBand, "degraded"), Kind: plan.InBand, Side: side, Channel: ch,
				Unit: unit, Min: bd.min(), Max: bd.max(), From: inject, ForS: round(forS), Sources: sources})
			cb.samp.need(ch, forS/samplesPerWindow, fmt.Sprintf("at least %d samples while degraded", samplesPerWindow))
		}
	}
	for _, r := range []struct {
		field string
		q     contract.Q
	}{{"degraded_for", bv.DegradedFor}, {"recovery", bv.Recovery}} {
		if !r.q.Set {
			continue
		}
		bd, ok := k.steadyBand(b, ch, "", side)
		if !ok {
			cb.partial("the %s %s is not graded: no steady clause on %s states the band to settle into", side, r.field, ch)
			continue
		}
		cb.check(plan.Check{ID: checkID(side, plan.SettlesWithin, strings.ReplaceAll(r.field, "_", "-")), Kind: plan.SettlesWithin,
			Side: side, Channel: ch, Unit: unit, Min: bd.min(), Max: bd.max(), WithinS: round(r.q.Canon), From: inject,
			ForS: round(math.Max(obs, r.q.Canon+1)), Sources: append([]string{s(r.field, r.q)}, bd.sources...)})
		cb.samp.within(ch, r.q.Canon, side+" "+strings.ReplaceAll(r.field, "_", " "))
	}
}

// noInterruption grades that the channel never drops to an
// interruption: below 90 % of nominal for a voltage (the ITIC curve's
// steady lower limit), below the steady band otherwise.
func (cb *caseBuilder) noInterruption(f *contract.Failure, bh sided, inject string, obs float64) {
	k, b, ch, side := cb.k, cb.b, f.Channel.To, bh.side
	path, bv := f.Path()+"."+side, bh.b
	var sources []string
	if bv.NoInterruption != nil && *bv.NoInterruption {
		sources = append(sources, k.val(path+".no_interruption", bv.Pos, "true"))
	}
	forS := obs
	if bv.RideThrough.Set {
		rt, capped := k.hold(bv.RideThrough.Canon)
		if capped {
			cb.partial("the %s ride-through of %s is observed for only %s (--max-hold)", side, bv.RideThrough.Raw, secText(rt))
		}
		forS = rt
		sources = append(sources, k.src(path+".ride_through", bv.RideThrough, bv.Pos))
	}
	var floor float64
	if k.dimOf(b, ch) == units.Voltage {
		n, nsrc, ok := k.nominal(b, ch, "", side)
		if !ok {
			cb.partial("%s no_interruption is not graded: no steady clause on %s states a nominal voltage", side, ch)
			return
		}
		floor = 0.9 * n
		sources = append(sources, nsrc)
	} else {
		bd, ok := k.steadyBand(b, ch, "", side)
		if !ok || bd.min() == nil {
			cb.partial("%s no_interruption is not graded: no steady clause on %s states a lower limit", side, ch)
			return
		}
		floor = bd.lo
		sources = append(sources, bd.sources...)
	}
	cb.check(plan.Check{ID: checkID(side, plan.NoInterruption, ""), Kind: plan.NoInterruption, Side: side, Channel: ch,
		Unit: k.unitOf(b, ch), Min: plan.F(round(floor)), From: inject, ForS: round(forS), Sources: sources})
	cb.samp.need(ch, math.Min(rmsPeriodS, forS/samplesPerWindow), "RMS values per IEC 61000-4-30 (10/12 cycles)")
	cb.partial("no_interruption is graded on RMS samples of at least %s: a shorter interruption (the ITIC curve allows 20 ms at zero) needs waveform capture",
		secText(rmsPeriodS))
}

// steadyDeps names the steady cases of the same level (SAT for IST) on a
// channel: they should pass before a transient or failure case runs.
func (k *compiler) steadyDeps(level string, b *contract.Boundary, channel string) []dep {
	dl := level
	if level == plan.IST {
		dl = plan.SAT
	}
	var out []dep
	for _, s := range b.Steady {
		if s.Channel.To != channel {
			continue
		}
		if dl == plan.FAT && !s.Guarantee.Set {
			continue
		}
		out = append(out, dep{dl, b.ID, plan.Steady, s.Name})
	}
	return out
}
