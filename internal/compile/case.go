package compile

import (
	"fmt"
	"strings"

	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/plan"
	"github.com/seamdc/seam/internal/units"
)

// caseBuilder assembles one case.
type caseBuilder struct {
	k     *compiler
	c     *built
	b     *contract.Boundary
	cl    *contract.Clause
	level string
	lb    *contract.LoadBank // nil when the case applies no load
	prog  *program
	samp  sampler
}

func (k *compiler) newCase(level string, b *contract.Boundary, cl *contract.Clause, lb *contract.LoadBank) *caseBuilder {
	module := b.Consumer.To
	if level == plan.FAT {
		module = b.Supplier.To
	}
	c := &built{Case: plan.Case{ID: caseID(level, b.ID, cl.Kind, cl.Name), Level: level, Kind: cl.Kind,
		Module: module, Boundary: b.ID, Sides: sides(level),
		Clause:        plan.ClauseRef{Path: cl.Path(), Pos: posText(cl.Pos), BoundaryDigest: k.dg.boundaries[b.ID]},
		Preconditions: []plan.Precondition{}, Checks: []plan.Check{}, Interlocks: []string{}}}
	cb := &caseBuilder{k: k, c: c, b: b, cl: cl, level: level, lb: lb, prog: newProgram(lb), samp: sampler{}}
	c.Preconditions = append(c.Preconditions, plan.Precondition{Kind: plan.PreState, Text: cb.setup()})
	if lb != nil {
		k.banks[lb.ID] = lb
		c.Preconditions = append(c.Preconditions, plan.Precondition{Kind: plan.PreLoadBankIdle, LoadBank: lb.ID,
			Text: lb.ID + " at 0 kW, in remote control, heartbeat running"})
	}
	return cb
}

// setup states how the equipment is arranged for the case.
func (cb *caseBuilder) setup() string {
	sup, con := cb.b.Supplier.To, cb.b.Consumer.To
	var s string
	if cb.level == plan.FAT {
		s = fmt.Sprintf("%s on its own at the factory, instrumented on the channels of %s", sup, cb.b.ID)
		if cb.lb != nil {
			s += fmt.Sprintf("; load bank %s connected in place of %s", cb.lb.ID, con)
		}
		return s
	}
	s = fmt.Sprintf("%s and %s connected and energised", sup, con)
	if cb.lb != nil {
		s += fmt.Sprintf("; load bank %s connected at %s, carrying the load of %s", cb.lb.ID, con, con)
	}
	return s
}

func (cb *caseBuilder) check(c plan.Check) { cb.c.Checks = append(cb.c.Checks, c) }

// partial records a limit of the case in the coverage table.
func (cb *caseBuilder) partial(format string, args ...any) {
	cb.k.note(cb.cl, cb.level, format, args...)
}

// reactive notes that a resistive load bank leaves out the reactive
// share of the real load on an electrical voltage channel.
func (cb *caseBuilder) reactive(channel string) {
	if cb.lb == nil || cb.b.Medium != "electrical" || cb.k.dimOf(cb.b, channel) != units.Voltage {
		return
	}
	if cb.lb.Kind != "" && cb.lb.Kind != "resistive" {
		return
	}
	pf := cb.k.powerFactor(cb.b)
	if pf >= 1 {
		return
	}
	cb.partial("load bank %s is resistive (power factor 1) but the load it stands in for runs at power factor %g: "+
		"the reactive current, which drives much of the voltage drop across the source, is not exercised", cb.lb.ID, pf)
}

// powerFactor is the lowest power factor of the supplier's blocks that
// power the consumer (1 when none is stated).
func (k *compiler) powerFactor(b *contract.Boundary) float64 {
	pf := 1.0
	m := k.c.Site.Module(b.Supplier.To)
	if m == nil {
		return pf
	}
	for _, bl := range m.Blocks {
		if bl.PowerFactor > 0 && bl.PowerFactor < pf {
			pf = bl.PowerFactor
		}
	}
	return pf
}

// done finishes the case: steps, sampling, interlocks, estimate.
func (cb *caseBuilder) done(fail *contract.Failure) {
	c := cb.c
	c.Steps = cb.prog.steps
	c.locks, c.Suppressed = cb.k.interlocks(cb.level, cb.b, fail, c.Checks)
	c.Sampling = cb.samp.list()
	for _, s := range c.Steps {
		for _, kw := range []*float64{s.KW, s.HighKW} {
			if kw != nil && *kw > c.loadKW {
				c.loadKW = *kw
			}
		}
	}
	cb.k.add(c)
}

func title(parts ...string) string {
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, ", ")
}

// upper is a level as people write it.
func upper(level string) string { return strings.ToUpper(level) }
