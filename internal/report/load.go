package report

import (
	"fmt"
	"log/slog"
	"math"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/seamdc/seam/internal/evidence"
	"github.com/seamdc/seam/internal/grade"
	"github.com/seamdc/seam/internal/plan"
	"github.com/seamdc/seam/internal/results"
)

// Options tune Load.
type Options struct {
	// Trusted are the keys allowed to sign the manifest; nil accepts any
	// valid signature or none (see evidence.Verify).
	Trusted []ssh.PublicKey
	// Plots decimates each case's samples for its plot; comparisons do
	// not need them.
	Plots bool
	// Buckets is the number of intervals a plot keeps the first, lowest,
	// highest and last sample of (0: 400).
	Buckets int
	Log     *slog.Logger
}

// Load reads the evidence bundle in dir, verifies it, re-grades every
// check of every case from the raw samples with internal/grade, and
// returns the report's view of it. The re-graded verdicts are what the
// report shows; where one differs from the recorded verdict, Mismatches
// says so, and where the bundle does not verify, Integrity says why.
// An error means the bundle cannot be read at all.
func Load(dir string, opt Options) (*Run, error) {
	log := opt.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	in, err := readBundle(dir, opt.Trusted)
	if err != nil {
		return nil, err
	}
	run := newRun(dir, in)
	cases := newCaseStates(in, opt)
	t := time.Now()
	n, err := feedSamples(dir, cases)
	if err != nil {
		return nil, err
	}
	log.Info("samples re-graded", "bundle", dir, "samples", n, "duration_seconds", time.Since(t).Seconds())
	for _, cs := range cases {
		c, mismatches := cs.finish()
		run.Cases = append(run.Cases, c)
		run.Mismatches = append(run.Mismatches, mismatches...)
	}
	run.Outcome = outcome(in.results, run.Cases)
	return run, nil
}

// outcome is the run's outcome from the re-graded cases, as
// results.Summarize decides it; an aborted run stays aborted.
func outcome(r *results.Results, cases []Case) string {
	if r.Abort != nil || r.Outcome == results.Aborted {
		return results.Aborted
	}
	var n Counts
	for _, c := range cases {
		n.Add(c.Verdict)
	}
	switch {
	case n.Fail > 0:
		return results.Failed
	case n.Error > 0 || n.Skipped > 0 || n.Aborted > 0:
		return results.Errored
	}
	return results.Passed
}

func newRun(dir string, in *bundle) *Run {
	r := in.results
	run := &Run{
		Dir:             dir,
		Site:            r.Plan.Site,
		Level:           r.Plan.Level,
		Module:          r.Plan.Module,
		ToolVersion:     r.Tool.Version,
		PlanDigest:      r.Plan.Digest,
		ContractsDigest: r.Plan.Contracts,
		BindingDigest:   r.Run.Binding,
		Outcome:         r.Outcome,
		Started:         r.Run.Started,
		Signed:          in.verify.Signed,
		Complete:        in.verify.Complete,
		ManifestDigest:  in.manifestDigest,
		Unverified:      in.verify.Unverified,
		SignedBy:        in.verify.SignedBy,
		Integrity:       in.verify.Problems,
	}
	if r.Run.Ended != nil {
		run.Finished = *r.Run.Ended
	}
	if r.Run.Site == "simulated" {
		run.Sim = simText(r.Run)
	}
	for _, c := range r.Cases {
		for _, k := range c.Operator {
			run.Witnesses = append(run.Witnesses, Witness{Case: c.ID, Step: k.Step, Action: k.Action, By: k.By, At: k.At, Note: k.Expect})
		}
	}
	return run
}

func simText(r results.Run) string {
	parts := []string{"healthy site"}
	if r.Defect != "" {
		parts[0] = "defect " + r.Defect
	}
	if r.Shortened != "" {
		parts = append(parts, r.Shortened)
	}
	return strings.Join(parts, "; ")
}

// caseState re-grades one case while the samples stream past.
type caseState struct {
	rec      results.Case
	pc       *plan.Case // nil when the plan has no such case
	tl       *grade.Timeline
	from, to int64 // the bytes of samples.csv the case wrote (0, 0: unknown)
	graders  []*grade.Grader
	plot     *plotState
	problems []string // why the case cannot be re-graded
}

func newCaseStates(in *bundle, opt Options) []*caseState {
	var out []*caseState
	for _, rc := range in.results.Cases {
		sp := in.spans[rc.ID]
		cs := &caseState{rec: rc, pc: in.planCase(rc.ID), tl: sp.tl, from: sp.from, to: sp.to}
		switch {
		case cs.pc == nil:
			cs.problems = append(cs.problems, "the plan in the bundle has no case "+rc.ID)
		case cs.tl == nil && len(rc.Checks) > 0:
			cs.problems = append(cs.problems, "the journal has no timeline for case "+rc.ID)
		case cs.tl != nil:
			for _, k := range cs.pc.Checks {
				cs.graders = append(cs.graders, grade.New(k, *cs.tl, in.gradeOptions))
			}
			if opt.Plots {
				cs.plot = newPlotState(cs.pc, *cs.tl, opt.Buckets)
			}
		}
		out = append(out, cs)
	}
	return out
}

// takes reports whether the sample at byte offset at of samples.csv is
// one of the case's, as internal/runner grades it: in the byte range its
// case_end names (when it names one), and taken between the timeline's
// start and end.
func (cs *caseState) takes(s evidence.Sample, at int64) bool {
	if cs.to > cs.from && (at < cs.from || at >= cs.to) {
		return false
	}
	return cs.tl != nil && !s.Time.Before(cs.tl.Start) && !s.Time.After(cs.tl.End)
}

// add offers a sample of one of the case's channels.
func (cs *caseState) add(s evidence.Sample) {
	gs := grade.Sample{Time: s.Time, Value: s.Value, Good: s.Quality == "good"}
	for i, k := range cs.pc.Checks {
		if k.Channel == s.Channel {
			cs.graders[i].Add(gs)
		}
	}
	if cs.plot != nil {
		cs.plot.add(s)
	}
}

// finish grades the case and builds its view; it returns the checks
// whose re-graded verdict differs from the recorded one.
func (cs *caseState) finish() (Case, []Mismatch) {
	rc := cs.rec
	c := Case{ID: rc.ID, Title: rc.Title, Level: rc.Level, Kind: rc.Kind, Module: rc.Module, Boundary: rc.Boundary,
		ClausePath: rc.Clause.Path, ClausePos: rc.Clause.Pos, Verdict: string(rc.Outcome), Reason: rc.Reason}
	if rc.Started != nil {
		c.Start = *rc.Started
	}
	if rc.Ended != nil {
		c.End = *rc.Ended
	}
	var mismatches []Mismatch
	for _, p := range cs.problems {
		mismatches = append(mismatches, Mismatch{Case: rc.ID, Recorded: string(rc.Outcome), Regrade: "—", Detail: p})
	}
	if len(cs.graders) == 0 {
		for _, k := range rc.Checks {
			c.Checks = append(c.Checks, checkView(k, k.Verdict))
		}
		return c, mismatches
	}
	verdicts := make([]grade.Verdict, len(cs.graders))
	for i, g := range cs.graders {
		verdicts[i] = g.Verdict()
	}
	mismatches = append(mismatches, compareVerdicts(rc, cs.pc, verdicts)...)
	v, m := caseVerdict(rc, verdicts)
	c.Verdict = v
	if m != nil {
		mismatches = append(mismatches, *m)
	}
	for i, k := range cs.pc.Checks {
		c.Checks = append(c.Checks, checkView(recordedCheck(rc, k), verdicts[i]))
	}
	if cs.plot != nil {
		c.Plot = cs.plot.data(cs.pc, verdicts)
	}
	return c, mismatches
}

// caseVerdict is the case's outcome from its re-graded checks: FAIL if
// any failed, else ERROR if any could not decide, else PASS. A recorded
// PASS or FAIL must be exactly that; a recorded ERROR (the harness may
// have failed while the checks passed), ABORTED or SKIPPED stands unless
// a check proves a failure.
func caseVerdict(rc results.Case, verdicts []grade.Verdict) (string, *Mismatch) {
	derived := grade.Pass
	for _, v := range verdicts {
		switch {
		case v.Outcome == grade.Fail:
			derived = grade.Fail
		case v.Outcome == grade.Error && derived == grade.Pass:
			derived = grade.Error
		}
	}
	rec := rc.Outcome
	switch {
	case rec == derived:
		return string(rec), nil
	case (rec == grade.Pass || rec == grade.Fail) || derived == grade.Fail:
		return string(derived), &Mismatch{Case: rc.ID, Recorded: string(rec), Regrade: string(derived),
			Detail: fmt.Sprintf("the case is recorded %s, its re-graded checks make it %s", rec, derived)}
	}
	return string(rec), nil
}

// recordedCheck is the recorded check with k's id, or one made from the
// plan's check when the results lack it.
func recordedCheck(rc results.Case, k plan.Check) results.Check {
	for _, r := range rc.Checks {
		if r.Check == k.ID {
			return r
		}
	}
	return results.Check{Verdict: grade.Verdict{Check: k.ID, Kind: k.Kind}, Side: k.Side, Channel: k.Channel}
}

func checkView(rec results.Check, v grade.Verdict) Check {
	k := Check{ID: v.Check, Kind: v.Kind, Side: rec.Side, Channel: rec.Channel, Unit: v.Unit,
		Verdict: string(v.Outcome), Detail: v.Detail}
	if v.Measured != nil && v.Margin != nil {
		k.Measured, k.Margin, k.HasValue = *v.Measured, *v.Margin, true
	}
	if v.Limit != nil {
		k.Limit, k.HasLimit = *v.Limit, true
	}
	for _, s := range rec.Sources {
		k.Sources = append(k.Sources, fmt.Sprintf("%s = %s (%s)", s.Path, s.Value, s.Pos))
	}
	return k
}

// compareVerdicts lists where the re-graded verdicts differ from the
// recorded ones: outcome, measured value, limit, margin or the deciding
// sample's time. A recorded check the plan does not have, or the other
// way round, is a mismatch too.
func compareVerdicts(rc results.Case, pc *plan.Case, got []grade.Verdict) []Mismatch {
	var out []Mismatch
	recorded := map[string]results.Check{}
	for _, r := range rc.Checks {
		recorded[r.Check] = r
	}
	for i, k := range pc.Checks {
		r, ok := recorded[k.ID]
		if !ok {
			out = append(out, Mismatch{Case: rc.ID, Check: k.ID, Recorded: "—", Regrade: string(got[i].Outcome), Detail: "results.json has no verdict for this check"})
			continue
		}
		delete(recorded, k.ID)
		if d := verdictDiff(r.Verdict, got[i]); d != "" {
			out = append(out, Mismatch{Case: rc.ID, Check: k.ID, Recorded: string(r.Outcome), Regrade: string(got[i].Outcome), Detail: d})
		}
	}
	for _, r := range rc.Checks {
		if _, extra := recorded[r.Check]; extra {
			out = append(out, Mismatch{Case: rc.ID, Check: r.Check, Recorded: string(r.Outcome), Regrade: "—", Detail: "the plan has no such check"})
		}
	}
	return out
}

func verdictDiff(rec, got grade.Verdict) string {
	var diffs []string
	if rec.Outcome != got.Outcome {
		diffs = append(diffs, fmt.Sprintf("outcome %s, re-graded %s (%s)", rec.Outcome, got.Outcome, got.Detail))
	}
	for _, f := range []struct {
		name     string
		rec, got *float64
	}{{"measured", rec.Measured, got.Measured}, {"limit", rec.Limit, got.Limit}, {"margin", rec.Margin, got.Margin}} {
		if !sameNumber(f.rec, f.got) {
			diffs = append(diffs, fmt.Sprintf("%s %s, re-graded %s", f.name, numText(f.rec, rec.Unit), numText(f.got, got.Unit)))
		}
	}
	if (rec.At == nil) != (got.At == nil) || (rec.At != nil && !rec.At.Equal(*got.At)) {
		diffs = append(diffs, "the deciding sample differs")
	}
	return strings.Join(diffs, "; ")
}

// sameNumber compares two optional numbers; JSON carries float64 exactly,
// so anything beyond rounding noise is a real difference.
func sameNumber(a, b *float64) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b || math.Abs(*a-*b) <= 1e-9*math.Max(math.Abs(*a), math.Abs(*b))
}

func numText(v *float64, unit string) string {
	if v == nil {
		return "none"
	}
	return fmtNum(*v, unit)
}
