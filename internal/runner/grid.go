package runner

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/seamdc/seam/internal/clock"
	"github.com/seamdc/seam/internal/loadbank"
	"github.com/seamdc/seam/internal/plan"
)

// Grid drives what the grid sees on a simulated site: the fleet's
// training pattern and the grid's voltage at the point of
// interconnection. nil on a real site, where an operator starts the
// training job or the test bench's grid simulator.
type Grid interface {
	// Train makes every node of the fleet train in phase with p; a node
	// already training with p goes on without a restart.
	Train(ctx context.Context, p TrainPattern) error
	// StopTraining puts every training node back to idle.
	StopTraining(ctx context.Context) error
	// Dip holds the grid's voltage at pu of nominal for d, then returns it.
	Dip(ctx context.Context, target string, pu float64, d time.Duration) error
}

// TrainPattern is a train step's pattern.
type TrainPattern struct {
	PeriodS      float64 `json:"period_s"`
	ComputeShare float64 `json:"compute_share"` // 0..1
	StallAtS     float64 `json:"stall_at_s,omitempty"`
	StallS       float64 `json:"stall_s,omitempty"`
}

// pattern is a train step's pattern.
func pattern(s plan.Step) TrainPattern {
	return TrainPattern{PeriodS: s.PeriodS, ComputeShare: s.DutyPct / 100, StallAtS: s.StallAtS, StallS: s.StallS}
}

// train runs a train step: the fleet through the site's Grid (or an
// operator), or every load bank the case names switched in phase.
func (r *Runner) train(ctx context.Context, cr *caseRun, s plan.Step, rec *stepRecord) error {
	if s.Driver == plan.DriverLoadBanks {
		return r.trainBanks(ctx, cr, s, rec)
	}
	p := pattern(s)
	if g := r.cfg.Site.Grid; g != nil {
		if err := g.Train(ctx, p); err != nil {
			return fmt.Errorf("the simulator's fleet: %w", err)
		}
		cr.training = true
		rec.Detail = fmt.Sprintf("the simulator's fleet trains at %g s, %g %% computing", s.PeriodS, s.DutyPct)
		if s.StallS > 0 {
			rec.Detail += fmt.Sprintf(", a %g s stall at +%g s", s.StallS, s.StallAtS)
		}
	} else if !cr.training {
		if err := r.confirmStep(ctx, cr, s, rec); err != nil {
			return err
		}
		cr.training = true
	}
	return r.clk.Sleep(ctx, seconds(s.DurationS))
}

// stopTraining ends the training a train step started.
func (r *Runner) stopTraining(ctx context.Context, cr *caseRun, s plan.Step, rec *stepRecord) error {
	for _, id := range caseBanks(cr.c) {
		if b := r.cfg.Site.Banks[id]; b != nil && b.Setpoint() != 0 {
			e, err := b.Set(ctx, 0)
			rec.Edges = append(rec.Edges, edge(id, e))
			if err != nil {
				return err
			}
		}
	}
	if g := r.cfg.Site.Grid; g != nil {
		if err := g.StopTraining(ctx); err != nil {
			return fmt.Errorf("the simulator's fleet: %w", err)
		}
		rec.Detail = "the simulator's fleet idle"
		cr.training = false
		return nil
	}
	if !cr.training {
		rec.Detail = "no training job of this case runs"
		return nil
	}
	s.Action, s.Expect = "stop the training job on every node", "every node idle, no job running"
	if err := r.confirmStep(ctx, cr, s, rec); err != nil {
		return err
	}
	cr.training = false
	return nil
}

// trainBanks switches every load bank of the case in phase for the
// step's duration, in whole periods, ending at low_kw.
func (r *Runner) trainBanks(ctx context.Context, cr *caseRun, s plan.Step, rec *stepRecord) error {
	ids := caseBanks(cr.c)
	if len(ids) == 0 {
		return errors.New("the step drives the load banks, but the case names none")
	}
	cycles := max(1, int(math.Round(s.DurationS/s.PeriodS)))
	var mu sync.Mutex
	var errs []error
	g := clock.NewGroup(r.clk)
	for _, id := range ids {
		b := r.cfg.Site.Banks[id]
		if b == nil {
			return fmt.Errorf("load bank %s is not on the site", id)
		}
		rate := b.Spec().MaxRateKWPerS
		if rate <= 0 {
			rate = b.Spec().RatingKW
		}
		g.Go(func() {
			edges, err := b.Square(ctx, loadbank.Square{LowKW: *s.LowKW, HighKW: *s.HighKW, PeriodS: s.PeriodS,
				DutyPct: s.DutyPct, RateKWPerS: rate, Cycles: cycles}, nil)
			mu.Lock()
			defer mu.Unlock()
			for _, e := range edges {
				rec.Edges = append(rec.Edges, edge(id, e))
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("load bank %s: %w", id, err))
			}
		})
	}
	g.Wait()
	rec.Detail = fmt.Sprintf("%d load banks switched %d periods of %g s in phase", len(ids), cycles, s.PeriodS)
	return errors.Join(errs...)
}

// gridDip dips the grid through the simulator, or asks the operator to
// with the test bench's grid simulator. The step ends when the dip
// does: the checks after it count from the voltage's return.
func (r *Runner) gridDip(ctx context.Context, cr *caseRun, s plan.Step, rec *stepRecord) error {
	if g := r.cfg.Site.Grid; g != nil {
		if err := g.Dip(ctx, s.Target, *s.VoltagePU, seconds(s.DurationS)); err != nil {
			return fmt.Errorf("the simulator's grid: %w", err)
		}
		rec.Detail = fmt.Sprintf("the simulator's grid dipped to %g pu for %g s", *s.VoltagePU, s.DurationS)
		return r.clk.Sleep(ctx, seconds(s.DurationS))
	}
	return r.confirmStep(ctx, cr, s, rec)
}

// confirmStep has the operator perform a step and confirms it.
func (r *Runner) confirmStep(ctx context.Context, cr *caseRun, s plan.Step, rec *stepRecord) error {
	p := Prompt{Case: cr.c.ID, Step: s.ID, Action: s.Action, Expect: s.Expect}
	if p.Action == "" {
		p.Action = fmt.Sprintf("%s (%s)", s.Op, s.Note)
	}
	a, err := r.cfg.Operator.Confirm(ctx, p)
	if err != nil {
		return r.unconfirmed(ctx, err)
	}
	r.confirmed(cr, p, a)
	rec.Detail = "confirmed by " + a.By
	return nil
}

// endTraining stops a training job a case left running (it ended, failed
// or was aborted before its stop step).
func (r *Runner) endTraining(cr *caseRun) {
	if !cr.training {
		return
	}
	cr.training = false
	g := r.cfg.Site.Grid
	if g == nil {
		r.log.Warn("the case ended with its training job running: stop it", "case", cr.c.ID)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := g.StopTraining(ctx); err != nil {
		r.log.Warn("could not stop the simulator's training job the case left", "case", cr.c.ID, "err", err)
	}
	r.append("stop_training", cr.c.ID, map[string]string{"why": "the case ended with its training job running"})
}

// stopFleet ends any training job on an abort or at the session's end,
// when the plan trains the fleet at all.
func (r *Runner) stopFleet(why string) {
	g := r.cfg.Site.Grid
	if g == nil || !r.cfg.Plan.Trains() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := g.StopTraining(ctx)
	r.append("stop_training", "", map[string]string{"why": why, "error": errText(err)})
	if err != nil {
		r.log.Error("could not stop the simulator's training job", "err", err)
	}
}
