package compile

import (
	"fmt"

	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/plan"
)

// steady builds the case for a steady clause: hold at each step level
// from no load to the design load and grade every measuring hold
// against each side's band.
func (k *compiler) steady(level string, b *contract.Boundary, s *contract.Steady) {
	cl := &s.Clause
	if !k.hasChannel(level, b, cl, s.Channel) {
		return
	}
	var bands []band
	for _, side := range sides(level) {
		if bd, ok := k.readBand(sideBand(s, side), s.Path()+"."+side, s.Pos); ok {
			bd.side = side
			bands = append(bands, bd)
		}
	}
	if len(bands) == 0 {
		k.untestable(cl, level, RuleNothing, s.Pos, "state a band: nominal and tolerance, or min and/or max",
			"no side states a band to grade at this level")
		return
	}
	t := timingOf(b.Medium)
	var lb *contract.LoadBank
	if b.Medium != "controls" {
		lb = k.bankAt(b.Consumer.To)
	}
	cb := k.newCase(level, b, cl, lb)
	measure, capped := k.hold(t.measure)
	if capped {
		cb.partial("each measuring hold is capped at %s by --max-hold (the contract's value is graded over %s instead of %s)",
			secText(measure), secText(measure), secText(t.measure))
	}
	holds := cb.steadyProgram(measure)
	for _, bd := range bands {
		cb.check(plan.Check{ID: checkID(bd.side, plan.InBand, ""), Kind: plan.InBand, Side: bd.side, Channel: s.Channel.To,
			Unit: k.unitOf(b, s.Channel.To), Min: bd.min(), Max: bd.max(), Steps: holds, Sources: bd.sources})
	}
	cb.samp.need(s.Channel.To, measure/samplesPerWindow,
		fmt.Sprintf("at least %d samples in each %s measuring hold", samplesPerWindow, secText(measure)))
	cb.reactive(s.Channel.To)
	what := "at the present load"
	if lb != nil {
		what = fmt.Sprintf("from no load to %s in steps, on %s", kwText(cb.prog.peak()), lb.ID)
	}
	cb.c.Title = title(fmt.Sprintf("%s %s %s", upper(level), b.ID, s.Name),
		fmt.Sprintf("%s in band %s", s.Channel.To, what))
	cb.done(nil)
}

// steadyProgram holds at each step level of the design load (or once,
// when there is no load bank) and returns the measuring holds.
func (cb *caseBuilder) steadyProgram(measure float64) []string {
	p := cb.prog
	if cb.lb == nil {
		if cb.b.Medium != "controls" {
			cb.partial("no load bank at %s: the values are proved only at the load present during the test", cb.b.Consumer.To)
		}
		p.hold("hold", measure, "measure")
		return []string{"hold"}
	}
	t := timingOf(cb.b.Medium)
	settle, _ := cb.k.hold(t.settle)
	design := cb.k.designKW(cb.b)
	if design <= 0 {
		design = cb.lb.Rating.Canon
		cb.partial("%s has no design load: steps are %% of %s's rating", cb.b.Consumer.To, cb.lb.ID)
	} else if design > cb.lb.Rating.Canon {
		cb.partial("the design load %s is above %s's rating %s: measured up to the rating only",
			kwText(design), cb.lb.ID, kwText(cb.lb.Rating.Canon))
	}
	rate := p.gentleRate(design)
	var holds []string
	p.set("start", 0)
	for _, f := range stepLevels {
		kw := p.setpoint(design*f/100, true)
		if f > 0 {
			if kw <= p.kw {
				continue
			}
			p.ramp(fmt.Sprintf("ramp-%g", f), kw, rate, fmt.Sprintf("%g %% of the design load", f))
			p.hold(fmt.Sprintf("settle-%g", f), settle, "")
		}
		id := fmt.Sprintf("hold-%g", f)
		p.hold(id, measure, "measure")
		holds = append(holds, id)
	}
	p.unload(design)
	return holds
}

// peak is the highest setpoint the program reaches.
func (p *program) peak() float64 {
	m := 0.0
	for _, s := range p.steps {
		for _, kw := range []*float64{s.KW, s.HighKW} {
			if kw != nil && *kw > m {
				m = *kw
			}
		}
	}
	return m
}

// hasChannel reports a clause whose channel the boundary does not
// declare as untestable.
func (k *compiler) hasChannel(level string, b *contract.Boundary, cl *contract.Clause, ref contract.Ref) bool {
	if ref.To != "" && k.chans[b][ref.To] != nil {
		return true
	}
	what := fmt.Sprintf("%q is not a channel of %s", ref.To, b.ID)
	if ref.To == "" {
		what = "the clause names no channel"
	}
	k.untestable(cl, level, RuleNoChannel, firstValid(ref.Pos, cl.Pos),
		"declare the measurement point under the boundary's channels and name it in the clause",
		"no channel measures it: %s", what)
	return false
}
