package runner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/seamdc/seam/internal/evidence"
	"github.com/seamdc/seam/internal/grade"
	"github.com/seamdc/seam/internal/plan"
	"github.com/seamdc/seam/internal/results"
)

// caseStart is the data of a case_start record.
type caseStart struct {
	Index      int     `json:"index"`
	Of         int     `json:"of"`
	Title      string  `json:"title"`
	Clause     string  `json:"clause"`
	EstimatedS float64 `json:"estimated_s"`
}

// runCase runs one case to a verdict; a case an abort interrupts gets no
// case_end and runs again on resume. It reports whether a pause stopped
// the case (its load zeroed): it runs again once the pause ends.
func (r *Runner) runCase(ctx context.Context, i int, c plan.Case) (paused bool) {
	cctx, stop := context.WithCancel(ctx)
	defer stop()
	r.mu.Lock()
	r.current, r.caseStop, r.tripped = c.ID, stop, ""
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.current, r.caseStop, r.tripped = "", nil, ""
		r.mu.Unlock()
	}()
	if r.isAborted() {
		return false
	}
	if r.pauseAsked() { // asked between cases: hold before this one
		r.stopForPause(c.ID, r.cfg.Site.bankIDs())
		return true
	}
	res := &r.res.Cases[r.index[c.ID]]
	*res = caseResult(c) // a case run again starts afresh
	start := r.clk.Now()
	res.Started = ptrTime(start.UTC())
	r.append("case_start", c.ID, caseStart{Index: i + 1, Of: len(r.cfg.Plan.Cases), Title: c.Title, Clause: c.Clause.Path, EstimatedS: c.EstimatedS})
	r.prog.caseStart(i, c)
	r.observeCase(i, c)
	r.log.Info("case started", "case", c.ID, "index", i+1, "of", len(r.cfg.Plan.Cases))
	res.Ambient = r.ambient(cctx)
	cr := &caseRun{c: c, res: res, injected: map[[2]string]bool{}}
	if outcome, reason := r.preconditions(cctx, cr); outcome != "" {
		switch {
		case r.isAborted():
			res.Outcome, res.Reason = grade.Aborted, reason
		case r.pauseAsked():
			r.stopForPause(c.ID, caseBanks(c))
			return true
		default:
			r.endCase(cr, outcome, reason, nil, [2]int64{})
		}
		return false
	}
	smp, err := r.newSampler(c)
	if err != nil {
		r.endCase(cr, grade.Error, err.Error(), nil, [2]int64{})
		return false
	}
	cr.smp = smp
	from := r.b.SamplesSize()
	tl := grade.Timeline{Start: r.clk.Now(), MaxGapS: gaps(c, r.cfg.GapSlack)}
	smp.start(cctx)
	stepErr := r.runSteps(cctx, cr, &tl)
	tl.End = r.clk.Now()
	smp.halt()
	r.cleanUp(cr)
	r.endTraining(cr)
	if r.isAborted() {
		res.Outcome, res.Reason, res.Ended = grade.Aborted, "the run was aborted during this case", ptrTime(r.clk.Now().UTC())
		r.log.Warn("case aborted", "case", c.ID)
		return false
	}
	if r.pauseAsked() && errors.Is(stepErr, context.Canceled) { // stopped by the pause, not ended
		r.stopForPause(c.ID, caseBanks(c))
		return true
	}
	trip := r.caseTrip()
	if trip != "" {
		stepErr = errors.New(trip)
	}
	if stepErr != nil {
		r.log.Error("case step failed", "case", c.ID, "err", stepErr)
		r.recoverBanks(ctx, cr)
	}
	if err := r.b.Sync(); err != nil {
		r.Abort(results.CauseFatal, "cannot write the evidence: "+err.Error(), nil)
		return false
	}
	to := r.b.SamplesSize()
	verdicts, err := evidence.GradeCase(r.cfg.Dir, &c, tl, from, to)
	if err != nil {
		r.endCase(cr, grade.Error, "grading: "+err.Error(), &tl, [2]int64{from, to})
		return false
	}
	outcome, reason := caseOutcome(verdicts, stepErr)
	if trip != "" { // the load dropped under the case: its checks say nothing of the site
		outcome, reason = grade.Error, trip+"; the case stopped there: its checks are recorded, not counted"
	}
	res.Checks = checkResults(r.cfg.Plan, c, verdicts)
	r.endCase(cr, outcome, reason, &tl, [2]int64{from, to})
	return false
}

// caseOutcome is FAIL when a check proved a violation, else ERROR when
// a step or a check could not be done, else PASS.
func caseOutcome(vs []grade.Verdict, stepErr error) (grade.Outcome, string) {
	var errs []string
	failed := 0
	for _, v := range vs {
		switch v.Outcome {
		case grade.Fail:
			failed++
		case grade.Error:
			errs = append(errs, v.Check+": "+v.Detail)
		}
	}
	if stepErr != nil {
		errs = append([]string{stepErr.Error()}, errs...)
	}
	switch {
	case failed > 0 && stepErr != nil:
		return grade.Fail, fmt.Sprintf("%d check(s) failed before the program stopped: %v", failed, stepErr)
	case failed > 0:
		return grade.Fail, ""
	case len(errs) > 0:
		return grade.Error, joinLines(errs)
	}
	return grade.Pass, ""
}

// endCase records a case's result.
func (r *Runner) endCase(cr *caseRun, outcome grade.Outcome, reason string, tl *grade.Timeline, samples [2]int64) {
	res := cr.res
	res.Outcome, res.Reason = outcome, reason
	if outcome == grade.Pass || outcome == grade.Fail || res.Started != nil {
		res.Ended = ptrTime(r.clk.Now().UTC())
	}
	r.outcomes[cr.c.ID] = outcome
	r.attempts[cr.c.ID]++
	r.append(evidence.KindCaseEnd, cr.c.ID, evidence.CaseEnd{Result: *res, Timeline: tl, Samples: samples, Attempt: r.attempts[cr.c.ID]})
	if err := r.b.Seal(); err != nil {
		r.Abort(results.CauseFatal, "cannot write the evidence: "+err.Error(), nil)
	}
	r.prog.caseEnd(cr.c, *res)
	r.observeCaseEnd(cr.c, *res)
	r.log.Info("case ended", "case", cr.c.ID, "outcome", outcome, "reason", reason)
}

// preconditions checks a case's preconditions. A case whose earlier case
// did not pass is SKIPPED; a load bank not idle is an ERROR (or an abort
// when it carries load); a stated state is confirmed by the operator.
func (r *Runner) preconditions(ctx context.Context, cr *caseRun) (grade.Outcome, string) {
	for n, pre := range cr.c.Preconditions {
		ok, outcome, detail := r.precondition(ctx, cr, n+1, pre)
		r.append("precondition", cr.c.ID, map[string]any{"n": n + 1, "kind": pre.Kind, "text": pre.Text, "ok": ok, "detail": detail})
		if !ok {
			return outcome, fmt.Sprintf("precondition %d (%s): %s", n+1, pre.Text, detail)
		}
	}
	return "", ""
}

func (r *Runner) precondition(ctx context.Context, cr *caseRun, n int, pre plan.Precondition) (bool, grade.Outcome, string) {
	switch pre.Kind {
	case plan.PreCasePassed:
		got, ran := r.outcomes[pre.Case]
		if !ran {
			return false, grade.Skipped, "case " + pre.Case + " did not run"
		}
		if got != grade.Pass {
			return false, grade.Skipped, fmt.Sprintf("case %s did not pass (%s)", pre.Case, got)
		}
		return true, "", "case " + pre.Case + " passed"
	case plan.PreLoadBankIdle:
		b := r.cfg.Site.Banks[pre.LoadBank]
		if b == nil {
			return false, grade.Error, "load bank " + pre.LoadBank + " is not on the site"
		}
		st, err := b.Idle(ctx)
		if err != nil && b.Tripped(st) {
			if rerr := r.resetTrip(ctx, cr, fmt.Sprintf("precondition %d", n), b, st); rerr != nil {
				if r.isAborted() {
					return false, grade.Aborted, rerr.Error()
				}
				return false, grade.Error, rerr.Error()
			}
			st, err = b.Idle(ctx)
		}
		if err != nil && st.AppliedKW > 0.5 {
			r.Abort(results.CauseFatal, fmt.Sprintf("load bank %s carries %.1f kW before case %s: %v", b.ID, st.AppliedKW, cr.c.ID, err), nil)
			return false, grade.Aborted, err.Error()
		}
		if err != nil {
			return false, grade.Error, err.Error()
		}
		return true, "", st.String()
	case plan.PreState:
		p := Prompt{Case: cr.c.ID, Step: fmt.Sprintf("precondition %d", n), Action: "confirm: " + pre.Text}
		a, err := r.cfg.Operator.Confirm(ctx, p)
		if err != nil {
			r.unconfirmed(ctx, err)
			return false, grade.Aborted, err.Error()
		}
		r.confirmed(cr, p, a)
		return true, "", "confirmed by " + a.By
	}
	return false, grade.Error, "unknown precondition kind " + pre.Kind
}

// cleanUp clears the faults a case left in force (it stopped before its
// restore step): on the simulator by its control interface; on a real
// site the log says which.
func (r *Runner) cleanUp(cr *caseRun) {
	keys := slices.SortedFunc(maps.Keys(cr.injected), func(a, b [2]string) int { return cmp.Compare(a[0]+" "+a[1], b[0]+" "+b[1]) })
	for _, key := range keys {
		if !cr.injected[key] {
			continue
		}
		if f := r.cfg.Site.Faults; f != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if err := f.Clear(ctx, key[0], key[1]); err != nil {
				r.log.Warn("could not clear a fault the case left", "event", key[0], "target", key[1], "err", err)
			}
			cancel()
		}
	}
}

// recoverBanks zeroes the banks of a case whose program failed and makes
// them ready again (a bank whose watchdog tripped only once the operator
// confirms); if that fails, the run cannot go on safely.
func (r *Runner) recoverBanks(ctx context.Context, cr *caseRun) {
	for _, id := range caseBanks(cr.c) {
		b := r.cfg.Site.Banks[id]
		if b == nil {
			continue
		}
		zctx, cancel := context.WithTimeout(context.Background(), zeroTimeout)
		st, err := b.Zero(zctx)
		cancel()
		r.append("zero", cr.c.ID, map[string]any{"load_bank": id, "why": "the case's program failed", "status": st.String(), "error": errText(err)})
		switch {
		case err == nil && b.Tripped(st):
			err = r.resetTrip(ctx, cr, "recovery", b, st)
		case err == nil:
			st, err = b.Prepare(ctx)
			r.append("prepare", cr.c.ID, map[string]any{"load_bank": id, "status": st.String(), "error": errText(err)})
		}
		if err != nil && !r.isAborted() {
			r.Abort(results.CauseFatal, fmt.Sprintf("load bank %s could not be made safe after case %s failed: %v", id, cr.c.ID, err), nil)
			return
		}
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func ptrTime(t time.Time) *time.Time { return &t }

// checkResults pairs each verdict with its check's side, channel and
// contract sources.
func checkResults(p *plan.Plan, c plan.Case, vs []grade.Verdict) []results.Check {
	out := make([]results.Check, 0, len(vs))
	for i, v := range vs {
		k := c.Checks[i]
		rc := results.Check{Verdict: v, Side: k.Side, Channel: k.Channel, Sources: []results.Source{}}
		for _, path := range k.Sources {
			src := p.Sources[path]
			rc.Sources = append(rc.Sources, results.Source{Path: path, Pos: src.Pos, Value: src.Value})
		}
		out = append(out, rc)
	}
	return out
}
