package report

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/seamdc/seam/internal/evidence"
	"github.com/seamdc/seam/internal/grade"
	"github.com/seamdc/seam/internal/plan"
	"github.com/seamdc/seam/internal/results"
)

// PlanFile is the copy of the plan that a bundle carries.
const PlanFile = evidence.PlanFile

// Options tune Load.
type Options struct {
	// Trusted are the keys allowed to sign; nil accepts any valid
	// signature or none (see evidence.AuditOptions).
	Trusted []ssh.PublicKey
	// Plots decimates each case's samples for its plot; comparisons do
	// not need them.
	Plots bool
	// Buckets is the number of intervals a plot keeps the first, lowest,
	// highest and last sample of (0: 400).
	Buckets int
	Log     *slog.Logger
}

// Load reads the evidence bundle in dir with evidence.Audit, the one
// reader and re-grader that sat verify uses too, and returns the
// report's view of it: the re-graded verdicts, what does not verify
// (Integrity) and which recorded verdicts the raw samples do not
// reproduce (Mismatches). The plots are decimated from the same pass
// over the samples. An error means there is nothing to report on: no
// bundle, or no plan to grade with.
func Load(dir string, opt Options) (*Run, error) {
	log := opt.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	plots := map[*evidence.AuditCase]*plotState{}
	grids := map[*evidence.AuditCase]*gridState{}
	observe := func(ac *evidence.AuditCase, s evidence.Sample) {
		if opt.Plots {
			p, ok := plots[ac]
			if !ok {
				p = newPlotState(ac.Plan, *ac.End.Timeline, opt.Buckets)
				plots[ac] = p
			}
			if p != nil {
				p.add(s)
			}
		}
		if ac.Plan != nil && ac.Plan.Kind == plan.Grid {
			g, ok := grids[ac]
			if !ok {
				g = newGridState(ac.Plan, *ac.End.Timeline, opt.Buckets)
				grids[ac] = g
			}
			if g != nil {
				g.add(s)
			}
		}
	}
	// the grid section reads its cases' samples whatever is asked: the
	// interconnection summary states the sampling they achieved
	audit := evidence.AuditOptions{Trusted: opt.Trusted, Observe: observe}
	t := time.Now()
	rep, err := evidence.Audit(dir, audit)
	if err != nil {
		return nil, err
	}
	log.Info("bundle audited", "bundle", dir, "records", rep.Records, "checks", rep.Checks, "duration_seconds", time.Since(t).Seconds())
	if rep.Plan == nil {
		return nil, fmt.Errorf("evidence bundle %s: the plan that ran (%s) is needed to re-grade, and it cannot be read: %s", dir, PlanFile, strings.Join(rep.Problems, "; "))
	}
	res := rep.Results
	if res == nil {
		res = fromJournal(rep)
	}
	run := newRun(dir, rep, res)
	run.Commissioning, run.Boundaries = rep.Plan.CommissioningRules(), rep.Plan.Boundaries
	planned := map[string]*plan.Case{}
	for i := range rep.Plan.Cases {
		planned[rep.Plan.Cases[i].ID] = &rep.Plan.Cases[i]
	}
	audited := rep.Counting()
	for _, rc := range res.Cases {
		ac := audited[rc.ID]
		c := caseView(rc, rep.Plan, ac)
		pc := planned[rc.ID]
		if pc == nil {
			pc = &plan.Case{Level: rc.Level, Kind: rc.Kind}
		}
		c.Cx = cxTag(run.Commissioning, run.Commissioning.LevelOf(pc))
		if slices.Contains(rep.FailedByCapture, rc.ID) {
			c.Verdict = string(grade.Fail) // its capture's mask, graded by the audit: rc.Reason says which
		}
		if ac != nil && plots[ac] != nil && ac.Verdicts != nil {
			c.Plot = plots[ac].data(ac.Plan, ac.Verdicts)
		}
		attempts(&c, rep, ac)
		run.Cases = append(run.Cases, c)
	}
	for _, m := range rep.Mismatches {
		run.Mismatches = append(run.Mismatches, Mismatch{Case: m.Case, Check: m.Check, Recorded: m.Recorded, Regrade: m.Regrade, Detail: m.Detail})
	}
	run.Outcome = outcome(res, run.Cases)
	run.Captures = captureViews(rep)
	run.Coverage = coverageRows(rep.Plan, run.Captures)
	run.Grid = gridCases(rep, grids, opt.Plots)
	return run, nil
}

// attempts fills in a case's attempts: the one shown (ac) and those
// before it, each with its re-graded verdict.
func attempts(c *Case, rep *evidence.Report, ac *evidence.AuditCase) {
	if ac == nil {
		return
	}
	by := map[int]string{}
	for _, s := range rep.Segments {
		by[s.N] = s.By
	}
	c.Attempt = ac.Attempt
	if ac.Segment > 0 {
		c.Retry = by[ac.Segment]
	}
	for _, e := range rep.CaseAudits {
		if e.End.Result.ID != c.ID {
			continue
		}
		c.Attempts++
		if e == ac {
			continue
		}
		rc := e.End.Result
		a := Attempt{N: e.Attempt, Verdict: string(rc.Outcome), Reason: rc.Reason, Where: "the run"}
		if e.Verdicts != nil {
			v, _ := evidence.CaseVerdict(rc, e.Verdicts)
			a.Verdict = string(v)
		}
		if e.Segment > 0 {
			a.Where = fmt.Sprintf("retry amendment %d by %s", e.Segment, by[e.Segment])
		}
		if rc.Started != nil {
			a.Start = *rc.Started
		}
		if rc.Ended != nil {
			a.End = *rc.Ended
		}
		c.Earlier = append(c.Earlier, a)
	}
}

// fromJournal stands in for a results.json that cannot be read: the
// plan's cases, with the results the journal completed.
func fromJournal(rep *evidence.Report) *results.Results {
	p := rep.Plan
	res := &results.Results{Plan: results.PlanRef{Site: p.Header.Site, Level: p.Header.Level, Module: p.Header.Module,
		Contracts: p.Header.Inputs.Contracts}, Outcome: results.Errored}
	done := map[string]results.Case{}
	for _, ac := range rep.CaseAudits {
		done[ac.End.Result.ID] = ac.End.Result
	}
	for _, c := range p.Cases {
		rc, ok := done[c.ID]
		if !ok {
			rc = results.Case{ID: c.ID, Title: c.Title, Level: c.Level, Kind: c.Kind, Module: c.Module, Boundary: c.Boundary,
				Clause: results.Clause{Path: c.Clause.Path, Pos: c.Clause.Pos}, Outcome: grade.Skipped, Reason: "no result: " + evidence.ResultsFile + " cannot be read"}
		}
		res.Cases = append(res.Cases, rc)
	}
	return res
}

// outcome is the run's outcome from the re-graded cases, as
// results.Summarize decides it; an aborted run stays aborted.
func outcome(r *results.Results, cases []Case) string {
	if r.Abort != nil && r.Abort.Cause == results.CauseHandover {
		return Unfinished
	}
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

func newRun(dir string, rep *evidence.Report, r *results.Results) *Run {
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
		Operator:        r.Run.Operator,
		Started:         r.Run.Started,
		Signed:          rep.Signed,
		Complete:        rep.Complete,
		ManifestDigest:  rep.ManifestDigest,
		Unverified:      rep.Unverified,
		SignedBy:        rep.SignedBy,
		Trust:           rep.Describe(),
		Integrity:       rep.Problems,
	}
	if r.Run.Ended != nil {
		run.Finished = *r.Run.Ended
	}
	if r.Run.Site == "simulated" {
		run.Sim = simText(r.Run)
	}
	run.Instruments = r.Run.Instruments
	if r.Abort != nil && r.Abort.Cause == results.CauseHandover {
		run.Handover = r.Abort.Reason
	}
	for _, c := range r.Cases {
		for _, k := range c.Operator {
			run.Witnesses = append(run.Witnesses, Witness{Case: c.ID, Step: k.Step, Action: k.Action, By: k.By, At: k.At, Note: k.Expect})
		}
	}
	for _, s := range rep.Segments {
		so := SignOff{Purpose: s.Purpose, Role: s.Role, By: s.By, Note: s.Note, Adds: s.AddsText()}
		if s.Seal != nil {
			so.Key, so.At = s.Seal.Key, s.Seal.At
		}
		run.SignOffs = append(run.SignOffs, so)
		for _, f := range s.Adds {
			if strings.HasPrefix(f, evidence.AttachDir+"/") {
				run.Attachments = append(run.Attachments, attachment(dir, f, s))
			}
		}
	}
	return run
}

// maxInline is the largest photo the report embeds: a bigger one is
// named, and opened from the bundle.
const maxInline = 8 << 20

// attachment reads an attached file for the report: a photo under
// maxInline is embedded as a data: URL (the page stays one file).
func attachment(dir, name string, s evidence.Segment) Attachment {
	a := Attachment{Name: name, By: s.By, Note: s.Note}
	raw, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
	if err != nil {
		a.Note = strings.TrimSpace(a.Note + " (cannot be read: " + err.Error() + ")")
		return a
	}
	sum := sha256.Sum256(raw)
	a.Size, a.Digest = int64(len(raw)), "sha256:"+hex.EncodeToString(sum[:])
	mime := map[string]string{".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".png": "image/png", ".gif": "image/gif", ".webp": "image/webp"}[strings.ToLower(path.Ext(name))]
	if mime != "" && len(raw) <= maxInline && http.DetectContentType(raw) == mime {
		a.Image = template.URL("data:" + mime + ";base64," + base64.StdEncoding.EncodeToString(raw))
	}
	return a
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

// caseView is the report's view of a case: the re-graded verdicts when
// the audit re-graded it, else the recorded ones.
func caseView(rc results.Case, p *plan.Plan, ac *evidence.AuditCase) Case {
	c := Case{ID: rc.ID, Title: rc.Title, Level: rc.Level, Kind: rc.Kind, Module: rc.Module, Boundary: rc.Boundary,
		ClausePath: rc.Clause.Path, ClausePos: rc.Clause.Pos, Verdict: string(rc.Outcome), Reason: rc.Reason, Ambient: rc.Ambient}
	if rc.Started != nil {
		c.Start = *rc.Started
	}
	if rc.Ended != nil {
		c.End = *rc.Ended
	}
	if ac == nil || ac.Verdicts == nil || ac.Plan == nil {
		for _, k := range rc.Checks {
			c.Checks = append(c.Checks, checkView(k, k.Verdict))
		}
		return c
	}
	v, _ := evidence.CaseVerdict(rc, ac.Verdicts)
	c.Verdict = string(v)
	for i, k := range ac.Plan.Checks {
		c.Checks = append(c.Checks, checkView(recordedCheck(rc, k), ac.Verdicts[i]))
	}
	c.Reason = unsaid(c.Reason, c.Checks)
	return c
}

// unsaid drops the lines of a case's reason that only repeat a check's
// detail ("check: detail"), which the check's own row shows.
func unsaid(reason string, checks []Check) string {
	if reason == "" {
		return ""
	}
	said := map[string]bool{}
	for _, k := range checks {
		said[k.ID+": "+k.Detail] = true
	}
	var keep []string
	for line := range strings.SplitSeq(reason, "\n") {
		if !said[strings.TrimSpace(line)] {
			keep = append(keep, line)
		}
	}
	return strings.Join(keep, "\n")
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
