package sim

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/seamdc/seam/internal/clock"
)

// maxCatchUp bounds how much sim time one tick may step: a process that
// was stopped (a debugger, a suspended laptop) resumes from where it
// stood instead of racing through the gap.
const maxCatchUp = time.Second

// Run steps the site on clk until ctx is done, keeping sim time at scale
// times the clock's time (scale 1: real time; 10: ten times faster).
// It wakes once per physics step of the clock's time and runs every
// step that is due.
func (s *Site) Run(ctx context.Context, clk clock.Clock, scale float64) error {
	if scale <= 0 {
		return fmt.Errorf("time scale %v: want a positive number", scale)
	}
	if !s.running.CompareAndSwap(false, true) {
		return errors.New("the site already runs on a clock")
	}
	defer s.running.Store(false)
	tick := s.StepSize()
	start, base := clk.Now(), s.Time()
	for {
		select {
		case <-ctx.Done():
			return nil
		default:
		}
		if clk.Sleep(ctx, tick) != nil {
			return nil
		}
		due := base + time.Duration(float64(clk.Now().Sub(start))*scale)
		if behind := due - s.Time(); behind > maxCatchUp {
			s.log.Warn("simulation fell behind; skipping ahead", "behind_seconds", behind.Seconds())
			start, base = clk.Now(), s.Time()+maxCatchUp
			due = base
		}
		s.stepUntil(due)
	}
}

func (s *Site) stepUntil(due time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.t+s.dt/2 <= due.Seconds() {
		s.step()
		if s.observe != nil {
			s.observe(s.epoch.Add(s.simTime()))
		}
	}
}

// AdvanceTo steps the simulation to wall time t (the epoch plus sim
// time), to the nearest physics step: the site is the world of a
// clock.Lockstep, which moves it only when no goroutine of the run is
// running.
func (s *Site) AdvanceTo(t time.Time) {
	s.stepUntil(t.Sub(s.epoch))
}

// Running says whether Run keeps the site at a clock's pace: if not,
// site time moves only when someone advances it (the control
// interface's POST /v1/advance, a test, a lockstep clock).
func (s *Site) Running() bool { return s.running.Load() }

// Observe calls f, with the site's lock held, after every physics step
// that AdvanceTo or Run takes, with the time the site then stands at
// (nil: none). Tests use it to follow the physics step by step.
func (s *Site) Observe(f func(now time.Time)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.observe = f
}

// Steps is how many physics steps have run.
func (s *Site) Steps() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.steps
}
