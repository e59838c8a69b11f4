package runner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/seamdc/seam/internal/grade"
	"github.com/seamdc/seam/internal/loadbank"
	"github.com/seamdc/seam/internal/plan"
	"github.com/seamdc/seam/internal/results"
)

// stepRecord is the data of a step record.
type stepRecord struct {
	Step   string       `json:"step"`
	Op     string       `json:"op"`
	Start  time.Time    `json:"start"`
	End    time.Time    `json:"end"`
	Edges  []edgeRecord `json:"edges,omitempty"`
	Detail string       `json:"detail,omitempty"`
	Error  string       `json:"error,omitempty"`
}

// edgeRecord is one load change as it ran.
type edgeRecord struct {
	LoadBank  string     `json:"load_bank"`
	FromKW    float64    `json:"from_kw"`
	ToKW      float64    `json:"to_kw"`
	Scheduled time.Time  `json:"scheduled"`
	Written   time.Time  `json:"written"`
	Writes    int        `json:"writes"`
	Applied   *time.Time `json:"applied,omitempty"`
	AppliedKW float64    `json:"applied_kw"`
}

// caseRun is what a case's steps share.
type caseRun struct {
	c        plan.Case
	res      *results.Case
	smp      *sampler
	injected map[[2]string]bool // event, target in force because of this case
	training bool               // a train step started a job no stop ended yet
}

// runSteps runs a case's program; each step's span goes into tl.
func (r *Runner) runSteps(ctx context.Context, cr *caseRun, tl *grade.Timeline) error {
	for i, s := range cr.c.Steps {
		r.prog.step(i, s)
		r.observeStep(i, s)
		rec := stepRecord{Step: s.ID, Op: s.Op, Start: r.clk.Now()}
		err := r.step(ctx, cr, s, &rec)
		rec.End = r.clk.Now()
		if err != nil {
			rec.Error = err.Error()
		}
		span := grade.Span{Step: s.ID, Op: s.Op, Start: rec.Start, End: rec.End}
		for _, e := range rec.Edges {
			if e.Writes > 0 {
				span.Edges = append(span.Edges, e.Written)
			}
		}
		tl.Steps = append(tl.Steps, span)
		r.append("step", cr.c.ID, rec)
		if err != nil {
			return fmt.Errorf("step %s (%s): %w", s.ID, s.Op, err)
		}
	}
	return nil
}

// step runs one step.
func (r *Runner) step(ctx context.Context, cr *caseRun, s plan.Step, rec *stepRecord) error {
	bank := r.cfg.Site.Banks[s.LoadBank]
	if s.LoadBank != "" && bank == nil {
		return fmt.Errorf("load bank %s is not on the site", s.LoadBank)
	}
	switch s.Op {
	case plan.OpSetLoad:
		e, err := bank.Set(ctx, *s.KW)
		rec.Edges = append(rec.Edges, edge(s.LoadBank, e))
		return err
	case plan.OpRamp:
		if s.FromKW != nil && *s.FromKW != bank.Setpoint() {
			rec.Detail = fmt.Sprintf("the plan ramps from %g kW; the bank was at %g kW", *s.FromKW, bank.Setpoint())
		}
		e, err := bank.Ramp(ctx, *s.KW, s.RateKWPerS)
		rec.Edges = append(rec.Edges, edge(s.LoadBank, e))
		return err
	case plan.OpSquareWave:
		edges, err := bank.Square(ctx, loadbank.Square{LowKW: *s.LowKW, HighKW: *s.HighKW, PeriodS: s.PeriodS,
			DutyPct: s.DutyPct, RateKWPerS: s.RateKWPerS, Cycles: s.Cycles}, nil)
		for _, e := range edges {
			rec.Edges = append(rec.Edges, edge(s.LoadBank, e))
		}
		return err
	case plan.OpHold:
		return r.clk.Sleep(ctx, seconds(s.DurationS))
	case plan.OpAwaitAlarm:
		raised, at, err := cr.smp.awaitRaised(ctx, s.Channel, seconds(s.TimeoutS))
		switch {
		case err != nil:
		case raised:
			rec.Detail = fmt.Sprintf("%s raised at %s", s.Channel, at.UTC().Format(time.RFC3339Nano))
		default:
			rec.Detail = fmt.Sprintf("%s not raised within %g s: the alarm check grades it", s.Channel, s.TimeoutS)
		}
		return err
	case plan.OpInjectFault, plan.OpRestore, plan.OpOperator:
		return r.manual(ctx, cr, s, rec)
	case plan.OpTrain:
		return r.train(ctx, cr, s, rec)
	case plan.OpStopTraining:
		return r.stopTraining(ctx, cr, s, rec)
	case plan.OpGridDip:
		return r.gridDip(ctx, cr, s, rec)
	}
	return fmt.Errorf("unknown step op %q", s.Op)
}

func edge(bank string, e loadbank.Edge) edgeRecord {
	er := edgeRecord{LoadBank: bank, FromKW: e.FromKW, ToKW: e.ToKW, Scheduled: e.Scheduled, Written: e.Written,
		Writes: e.Writes, AppliedKW: e.AppliedKW}
	if !e.Applied.IsZero() {
		a := e.Applied
		er.Applied = &a
	}
	return er
}

// manual runs a fault or operator step: the simulator performs what
// names an event; a person does everything else, and confirms.
func (r *Runner) manual(ctx context.Context, cr *caseRun, s plan.Step, rec *stepRecord) error {
	key := [2]string{s.Event, s.Target}
	if f := r.cfg.Site.Faults; f != nil && s.Event != "" {
		clear := s.Op == plan.OpRestore || (s.Op == plan.OpOperator && cr.injected[key])
		var err error
		if clear {
			err = f.Clear(ctx, s.Event, s.Target)
			delete(cr.injected, key)
			rec.Detail = fmt.Sprintf("the simulator cleared %s on %s", s.Event, s.Target)
		} else {
			err = f.Inject(ctx, s.Event, s.Target)
			cr.injected[key] = err == nil
			rec.Detail = fmt.Sprintf("the simulator injected %s on %s", s.Event, s.Target)
		}
		if err != nil {
			return err
		}
		if s.Op == plan.OpOperator {
			now := r.clk.Now()
			r.confirmed(cr, Prompt{Case: cr.c.ID, Step: s.ID, Action: s.Action, Expect: s.Expect},
				Answer{By: "simulator", Prompted: rec.Start, At: now, Text: "performed by the simulator"})
		}
		return nil
	}
	p := Prompt{Case: cr.c.ID, Step: s.ID, Action: s.Action, Expect: s.Expect}
	if p.Action == "" {
		p.Action = fmt.Sprintf("%s %s on %s", s.Op, s.Event, s.Target)
	}
	a, err := r.cfg.Operator.Confirm(ctx, p)
	if err != nil {
		return r.unconfirmed(ctx, err)
	}
	r.confirmed(cr, p, a)
	rec.Detail = "confirmed by " + a.By
	return nil
}

// confirmed records an operator's confirmation.
func (r *Runner) confirmed(cr *caseRun, p Prompt, a Answer) {
	c := results.Confirmation{Step: p.Step, Action: p.Action, Expect: p.Expect, By: a.By,
		Prompted: a.Prompted.UTC(), At: a.At.UTC(), Answer: a.Text}
	cr.res.Operator = append(cr.res.Operator, c)
	r.append("operator", cr.c.ID, c)
}

// unconfirmed aborts the run on a step nobody confirmed: the site is in
// a state the plan cannot know.
func (r *Runner) unconfirmed(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if errors.Is(err, ErrNoOperator) || errors.Is(err, ErrRefused) {
		r.Abort(results.CauseManualStep, err.Error(), nil)
		return err
	}
	return err
}
