package runner

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/seamdc/seam/internal/clock"
	"github.com/seamdc/seam/internal/results"
)

// zeroTimeout bounds how long zeroing may take, in wall time: a bank's
// own ramp plus its read-back come well within it.
const zeroTimeout = 30 * time.Second

// Abort stops the run: the case in progress is cancelled, every load
// bank gets setpoint 0 at once and is confirmed at 0 kW by read-back, and
// the run ends with outcome aborted. Only the first call counts; detail
// may add to the abort record.
func (r *Runner) Abort(cause, reason string, detail func(*results.Abort)) {
	r.mu.Lock()
	if r.abortInfo != nil {
		r.mu.Unlock()
		return
	}
	a := &results.Abort{At: r.clk.Now().UTC(), Case: r.current, Cause: cause, Reason: reason}
	if detail != nil {
		detail(a)
	}
	r.abortInfo = a
	stop := r.caseStop
	r.mu.Unlock()
	// the zeroing joins r.aborting before the run can see the abort, so
	// that a run ending at once still waits for it; it starts once the
	// case is stopped
	begin := make(chan struct{})
	r.aborting.Go(func() {
		<-begin
		took, problems := r.zeroAll(reason)
		r.mu.Lock()
		if took >= 0 {
			s := took.Seconds()
			a.ZeroedIn = &s
		}
		for _, p := range problems {
			a.Reason += "; " + p
		}
		rec := *a
		r.mu.Unlock()
		r.append("abort", a.Case, rec)
		if err := r.b.Sync(); err != nil {
			r.log.Error("evidence: sync after abort", "err", err)
		}
	})
	close(r.aborted)
	if stop != nil {
		stop()
	}
	r.log.Error("aborting the run", "cause", cause, "reason", reason, "case", a.Case)
	r.prog.line("ABORT (" + cause + "): " + reason)
	close(begin)
}

// Interrupt is the first Ctrl-C: abort, zeroing the load gracefully.
func (r *Runner) Interrupt() {
	r.Abort(results.CauseInterrupt, "interrupted by the operator", nil)
}

// Kill is the second Ctrl-C: setpoint 0 and enable off to every bank at
// once, without waiting for any read-back, and the evidence flushed as
// far as it can be. The caller exits right after.
func (r *Runner) Kill() {
	g := clock.NewGroup(r.clk)
	for _, id := range r.cfg.Site.bankIDs() {
		b := r.cfg.Site.Banks[id]
		g.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			if err := b.ZeroNow(ctx); err != nil {
				r.log.Error("kill: zero not written", "load_bank", id, "err", err)
			}
		})
	}
	waitAtMost(g, time.Second)
	r.log.Error("killed by a second interrupt: setpoint 0 written to every load bank, not confirmed")
	if r.b != nil {
		r.append("kill", "", map[string]string{"reason": "second interrupt: setpoint 0 and enable off written to every load bank without confirmation"})
		_ = r.b.Sync()
	}
}

// zeroAll zeroes every bank in parallel and confirms each by read-back.
// It returns how long after the abort (if any) the last bank read 0 kW
// (-1 when some did not), and a sentence per bank that did not.
func (r *Runner) zeroAll(why string) (time.Duration, []string) {
	r.mu.Lock()
	var since time.Time
	if r.abortInfo != nil {
		since = r.abortInfo.At
	}
	r.mu.Unlock()
	r.stopFleet(why)
	var mu sync.Mutex
	g := clock.NewGroup(r.clk)
	var problems []string
	took := time.Duration(0)
	for _, id := range r.cfg.Site.bankIDs() {
		b := r.cfg.Site.Banks[id]
		g.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), zeroTimeout)
			defer cancel()
			start := r.clk.Now()
			st, err := b.Zero(ctx)
			data := map[string]any{"load_bank": id, "why": why, "status": st.String(), "confirmed_at": st.At}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				data["error"] = err.Error()
				problems = append(problems, fmt.Sprintf("LOAD BANK %s DID NOT CONFIRM 0 kW (%v): check it at once", id, err))
				r.log.Error("load bank not confirmed at 0 kW", "load_bank", id, "err", err)
				took = -1
			} else if took >= 0 {
				from := start
				if !since.IsZero() {
					from = since
				}
				took = max(took, st.At.Sub(from))
			}
			r.append("zero", "", data)
		})
	}
	g.Wait()
	return took, problems
}

// waitAtMost waits for g, or d of wall time: Kill is called from outside
// the run, which may be stuck on a device that does not answer.
func waitAtMost(g *clock.Group, d time.Duration) {
	done := make(chan struct{})
	go func() { g.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
	}
}
