package runner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/seamdc/seam/internal/results"
)

// pauseState is a pause asked for (sat run: p at the terminal) and, once
// the case has stopped and its load is zero, held until Unpause.
type pauseState struct {
	by      string
	at      time.Time
	holding bool
	resume  chan struct{} // closed by Unpause
	resumer string
	zeroed  []string // the banks the pause zeroed, prepared again on resume
}

// holdPoll is how often a held run looks whether it was resumed.
const holdPoll = 250 * time.Millisecond

// Pause asks the run to hold: the case running stops at once, its load
// banks go to 0 kW (confirmed by read-back), heartbeats go on, and the
// run waits; Unpause runs the case again from its first step (the
// stopped attempt is in the journal, not graded). by names who asked.
func (r *Runner) Pause(by string) error {
	switch {
	case !r.energised.Load():
		return errors.New("nothing is energised yet: there is nothing to pause")
	case r.isAborted():
		return errors.New("the run is stopping")
	}
	r.mu.Lock()
	if r.paused != nil {
		r.mu.Unlock()
		return errors.New("the run is already paused: type r to resume")
	}
	r.paused = &pauseState{by: by, at: r.clk.Now(), resume: make(chan struct{})}
	stop, current := r.caseStop, r.current
	r.mu.Unlock()
	if stop != nil {
		stop()
	}
	r.log.Warn("pause asked", "by", by, "case", current)
	r.observe(EventPause, by)
	r.prog.line(fmt.Sprintf("PAUSE asked by %s: the case stops and its load goes to 0 kW", by))
	return nil
}

// Unpause ends a hold: the case that was stopped runs again from its
// start.
func (r *Runner) Unpause(by string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.paused
	switch {
	case p == nil:
		return errors.New("the run is not paused: type p to pause")
	case !p.holding:
		return errors.New("the run is still bringing its load to 0 kW: wait for PAUSED")
	case p.resumer != "":
		return nil
	}
	p.resumer = by
	close(p.resume)
	return nil
}

func (r *Runner) pauseAsked() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.paused != nil
}

// stopForPause ends a case a pause stopped (or holds before caseID
// starts): the banks to 0 kW, confirmed, and a pause record.
func (r *Runner) stopForPause(caseID string, banks []string) {
	var zeroed []string
	for _, id := range banks {
		b := r.cfg.Site.Banks[id]
		if b == nil {
			continue
		}
		zctx, cancel := context.WithTimeout(context.Background(), zeroTimeout)
		st, err := b.Zero(zctx)
		cancel()
		r.append("zero", caseID, map[string]any{"load_bank": id, "why": "paused", "status": st.String(), "error": errText(err)})
		if err != nil {
			r.Abort(results.CauseFatal, fmt.Sprintf("load bank %s did not confirm 0 kW when the run paused at case %s: %v", id, caseID, err), nil)
			return
		}
		zeroed = append(zeroed, id)
	}
	r.mu.Lock()
	p := r.paused
	p.zeroed = zeroed
	r.mu.Unlock()
	r.append("pause", caseID, map[string]any{"by": p.by, "asked_at": p.at.UTC(), "zeroed": zeroed,
		"note": "the case stopped here, or did not start; it runs from its first step when the run resumes"})
	if err := r.b.Sync(); err != nil {
		r.Abort(results.CauseFatal, "cannot write the evidence: "+err.Error(), nil)
	}
}

// hold waits, load at zero, until Unpause (true) or an abort (false).
func (r *Runner) hold(ctx context.Context, c string) bool {
	r.mu.Lock()
	p := r.paused
	p.holding = true
	r.mu.Unlock()
	r.observe(EventPaused, p.by)
	r.prog.line(fmt.Sprintf("PAUSED by %s, load at 0 kW: type r and Enter to run case %s again from its start (Ctrl-C stops the run); restore anything its manual steps changed first", p.by, c))
	for {
		select {
		case <-p.resume:
			held := r.clk.Now().Sub(p.at)
			r.append("resume_pause", c, map[string]any{"by": p.resumer, "held_s": held.Seconds()})
			r.log.Info("pause ended", "by", p.resumer, "held", held)
			r.prog.line(fmt.Sprintf("resumed by %s after %s", p.resumer, clockText(held)))
			r.observe(EventResume, p.resumer)
			r.mu.Lock()
			r.paused = nil
			r.mu.Unlock()
			return r.prepareAgain(ctx, c, p.zeroed)
		case <-r.aborted:
			return false
		default:
		}
		if err := r.clk.Sleep(ctx, holdPoll); err != nil {
			return false
		}
	}
}

// prepareAgain makes the banks a pause zeroed ready for the case to run
// again; one that cannot be made ready aborts the run.
func (r *Runner) prepareAgain(ctx context.Context, caseID string, banks []string) bool {
	for _, id := range banks {
		st, err := r.cfg.Site.Banks[id].Prepare(ctx)
		r.append("prepare", caseID, map[string]any{"load_bank": id, "status": st.String(), "error": errText(err)})
		if err != nil {
			r.Abort(results.CauseFatal, fmt.Sprintf("load bank %s could not be made ready after the pause: %v", id, err), nil)
			return false
		}
	}
	return true
}
