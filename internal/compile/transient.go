package compile

import (
	"fmt"
	"math"

	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/plan"
	"github.com/seamdc/seam/internal/units"
)

// swing is an excitation resolved to load bank setpoints.
type swing struct {
	kind            string // step or square
	low, high, rate float64
	period, duty    float64
	cycles          int
	note            string // how it follows from the contract
}

// transient builds the case for a transient clause: settle at the low
// load, run the excitation on the load bank, and grade each side's
// maximum deviation and recovery after every edge.
func (k *compiler) transient(level string, b *contract.Boundary, t *contract.Transient) {
	cl := &t.Clause
	if !k.hasChannel(level, b, cl, t.Channel) {
		return
	}
	lb := k.bankAt(b.Consumer.To)
	if lb == nil {
		k.untestable(cl, level, RuleNoLoad, t.Excitation.Pos,
			fmt.Sprintf("declare a load bank at %s under site.loadbanks", b.Consumer.To),
			"no load bank at %s to produce the excitation", b.Consumer.To)
		return
	}
	sw, ok := k.swing(level, b, t, lb)
	if !ok {
		return
	}
	cb := k.newCase(level, b, cl, lb)
	win := k.recoveryWindow(level, t)
	edges, graded := cb.transientProgram(sw, win)
	for _, side := range sides(level) {
		r := t.Guarantee
		if side == plan.Require {
			r = t.Require
		}
		if r.Set {
			cb.response(t, side, r, sw, edges, graded)
		}
	}
	if len(cb.c.Checks) == 0 {
		k.untestable(cl, level, RuleNothing, t.Pos, "state max_deviation and/or recovery in the response",
			"no side states a maximum deviation or a recovery time to grade at this level")
		return
	}
	if t.Excitation.Channel.To != "" {
		half := sw.period * math.Min(sw.duty, 100-sw.duty) / 100
		if sw.kind != "square" {
			half = win
		}
		cb.samp.need(t.Excitation.Channel.To, half/samplesPerWindow, "records the applied excitation: at least 10 samples per level")
	}
	cb.reactive(t.Channel.To)
	cb.c.Title = title(fmt.Sprintf("%s %s %s", upper(level), b.ID, t.Name), sw.describe(lb.ID),
		"response on "+t.Channel.To)
	cb.c.deps = append(cb.c.deps, k.steadyDeps(level, b, t.Channel.To)...)
	cb.done(nil)
}

func (sw swing) describe(lb string) string {
	if sw.kind == "square" {
		return fmt.Sprintf("square wave %s–%s on %s, period %s, duty %s, edges at %s, %d cycles",
			kwText(sw.low), kwText(sw.high), lb, secText(sw.period), units.Format(sw.duty, "%"), rateText(sw.rate), sw.cycles)
	}
	return fmt.Sprintf("load step %s–%s on %s at %s", kwText(sw.low), kwText(sw.high), lb, rateText(sw.rate))
}

// recoveryWindow is how long to hold after an edge so that the slowest
// recovery graded at this level can be seen, plus a margin.
func (k *compiler) recoveryWindow(level string, t *contract.Transient) float64 {
	longest := 0.0
	for _, side := range sides(level) {
		r := t.Guarantee
		if side == plan.Require {
			r = t.Require
		}
		if r.Recovery.Set {
			longest = math.Max(longest, r.Recovery.Canon)
		}
	}
	if longest == 0 {
		return timingOf(t.Boundary.Medium).settle
	}
	return longest + math.Max(longest*0.5, 1)
}

// swing resolves the excitation: the consumer's at SAT; at FAT the
// supplier's withstand step and rate where stated, in the consumer's
// shape. It reports excitations the load bank cannot produce.
func (k *compiler) swing(level string, b *contract.Boundary, t *contract.Transient, lb *contract.LoadBank) (swing, bool) {
	e, cl := t.Excitation, &t.Clause
	low, lok := k.loadKW(b, e.Low)
	high, hok := k.loadKW(b, e.High)
	if !lok || !hok || high <= low {
		k.untestable(cl, level, RuleNoLoad, e.Pos, "write low and high as power, or give the consumer racks with a design power",
			"the excitation's low and high loads cannot be resolved to kW")
		return swing{}, false
	}
	p := newProgram(lb)
	sw := swing{kind: e.Kind, low: p.setpoint(low, false), high: p.setpointUncapped(high), rate: e.Rate.Canon,
		note: fmt.Sprintf("%s's excitation: %s to %s at %s", b.Consumer.To, e.Low.Raw, e.High.Raw, e.Rate.Raw)}
	if level == plan.FAT && t.Withstand.Set {
		if step, ok := k.loadKW(b, t.Withstand.Step); ok {
			sw.high = p.setpointUncapped(sw.low + step)
		}
		if t.Withstand.Rate.Set {
			sw.rate = t.Withstand.Rate.Canon
		}
		sw.note = fmt.Sprintf("%s's withstand: steps of %s at %s, from %s's low load %s", b.Supplier.To,
			t.Withstand.Step.Raw, t.Withstand.Rate.Raw, b.Consumer.To, e.Low.Raw)
	}
	rating := lb.Rating.Canon
	if sw.high > rating {
		size := sw.high - sw.low
		if size > rating {
			k.untestable(cl, level, RuleNoLoad, e.High.Pos,
				fmt.Sprintf("connect a load bank of at least %s at %s under site.loadbanks", kwText(size), b.Consumer.To),
				"the swing of %s is larger than any load bank at %s (the largest, %s, is rated %s)", kwText(size), b.Consumer.To, lb.ID, kwText(rating))
			return swing{}, false
		}
		sw.low, sw.high = p.setpoint(rating-size, false), rating
		sw.note += fmt.Sprintf("; low load lowered to %s so the swing fits %s's rating", kwText(sw.low), lb.ID)
	}
	if m := lb.MaxRate.Canon; m > 0 && sw.rate > m {
		k.note(cl, level, "edges of %s are faster than %s's fastest ramp %s: run at %s, so the edge-rate stress of the real load is not reproduced",
			rateText(sw.rate), lb.ID, rateText(m), rateText(m))
		sw.rate = m
	}
	if sw.kind != "square" {
		return sw, true
	}
	return k.squareWave(level, cl, e, lb, sw)
}

// setpointUncapped rounds the high side of a swing up to the bank's
// resolution without clamping it to the rating.
func (p *program) setpointUncapped(kw float64) float64 {
	if r := p.lb.Resolution.Canon; r > 0 {
		return round(math.Ceil(kw/r-1e-9) * r)
	}
	return round(kw)
}

func (k *compiler) squareWave(level string, cl *contract.Clause, e contract.Excitation, lb *contract.LoadBank, sw swing) (swing, bool) {
	sw.period, sw.duty, sw.cycles = e.Period.Canon, 50, e.Repetitions
	if e.Duty.Set {
		sw.duty = e.Duty.Canon
	}
	if sw.cycles == 0 {
		sw.cycles = defaultCycles
	}
	edge := (sw.high - sw.low) / sw.rate
	if sw.period <= 0 || 2*edge > sw.period*math.Min(sw.duty, 100-sw.duty)/100 {
		k.untestable(cl, level, RuleNoLoad, e.Period.Pos, "use a faster load bank, or a longer period",
			"at %s, %s needs %s per edge, which leaves no time at high or low in a period of %s",
			rateText(sw.rate), lb.ID, secText(edge), secText(sw.period))
		return swing{}, false
	}
	if run := float64(sw.cycles) * sw.period; k.maxHold > 0 && run > k.maxHold {
		n := max(1, int(k.maxHold/sw.period))
		if n < sw.cycles {
			k.note(cl, level, "the square wave is shortened from %d to %d cycles by --max-hold", sw.cycles, n)
			sw.cycles = n
		}
	}
	return sw, true
}

// transientProgram settles at the low load, runs the excitation and
// holds for the recovery window; it returns the steps holding edges and
// the steps a deviation is graded over.
func (cb *caseBuilder) transientProgram(sw swing, window float64) (edges, graded []string) {
	p, t := cb.prog, timingOf(cb.b.Medium)
	settle, _ := cb.k.hold(t.settle)
	design := cb.k.designKW(cb.b)
	p.set("start", 0)
	p.climb(sw.low, design, settle)
	defer p.unload(design)
	if sw.kind == "square" {
		p.add(plan.Step{ID: "excite", Op: plan.OpSquareWave, LoadBank: cb.lb.ID, LowKW: plan.F(sw.low), HighKW: plan.F(sw.high),
			PeriodS: round(sw.period), DutyPct: round(sw.duty), RateKWPerS: round(sw.rate), Cycles: sw.cycles,
			Note: sw.note, EstimatedS: float64(sw.cycles) * sw.period})
		p.kw = sw.low
		p.hold("after", window, "let the last edge recover")
		return []string{"excite"}, []string{"excite", "after"}
	}
	p.ramp("step-up", sw.high, sw.rate, sw.note)
	p.hold("hold-high", window, "let the rising edge recover")
	p.ramp("step-down", sw.low, sw.rate, "")
	p.hold("hold-low", window, "let the falling edge recover")
	steps := []string{"step-up", "hold-high", "step-down", "hold-low"}
	return steps, steps
}

// response adds one side's deviation and recovery checks.
func (cb *caseBuilder) response(t *contract.Transient, side string, r contract.Response, sw swing, edges, graded []string) {
	k, b, ch := cb.k, cb.b, t.Channel.To
	path := t.Path() + "." + side
	unit := k.unitOf(b, ch)
	settle := r.SettleInto.To
	if side == plan.Require && settle == "" {
		settle = t.Guarantee.SettleInto.To
	}
	if r.MaxDeviation.Set {
		dev := r.MaxDeviation.Canon
		ref, refSrc, ok := k.nominal(b, ch, settle, side)
		sources := []string{k.src(path+".max_deviation", r.MaxDeviation, r.Pos)}
		if !ok {
			cb.partial("the %s maximum deviation is not graded: no steady clause on %s states a nominal to measure it from", side, ch)
		} else {
			if r.MaxDeviation.Dim == units.Ratio {
				dev = math.Abs(ref) * r.MaxDeviation.Canon / 100
			}
			cb.check(plan.Check{ID: checkID(side, plan.MaxDeviation, ""), Kind: plan.MaxDeviation, Side: side, Channel: ch,
				Unit: unit, Reference: plan.F(round(ref)), MaxDeviation: plan.F(round(dev)), Steps: graded,
				Sources: append(sources, refSrc)})
			period := 1.0
			if r.Recovery.Set {
				period = r.Recovery.Canon / samplesPerWindow
			} else if sw.kind == "square" {
				period = sw.period * math.Min(sw.duty, 100-sw.duty) / 100 / samplesPerWindow
			}
			cb.samp.need(ch, period, "catch the peak deviation")
		}
	}
	if r.Recovery.Set {
		bd, ok := k.steadyBand(b, ch, settle, side)
		if !ok {
			cb.partial("the %s recovery time is not graded: no steady clause on %s states the band to recover into", side, ch)
		} else {
			cb.check(plan.Check{ID: checkID(side, plan.RecoveryTime, ""), Kind: plan.RecoveryTime, Side: side, Channel: ch,
				Unit: unit, Min: bd.min(), Max: bd.max(), WithinS: round(r.Recovery.Canon), Steps: edges,
				Sources: append([]string{k.src(path+".recovery", r.Recovery, r.Pos)}, bd.sources...)})
			cb.samp.within(ch, r.Recovery.Canon, side+" recovery")
		}
	}
	if len(r.Mask) > 0 {
		cb.partial("the %s %s mask is not graded: its shortest segment (%s) needs waveform capture; the plan grades the maximum deviation and recovery",
			side, r.MaskName, secText(r.Mask[0].Duration.Canon))
	}
}
