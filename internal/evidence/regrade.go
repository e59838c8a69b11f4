package evidence

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/seamdc/seam/internal/grade"
	"github.com/seamdc/seam/internal/plan"
	"github.com/seamdc/seam/internal/results"
)

// CaseEnd is the data of a case_end record, as the runner writes it: the
// case's result and what grading it needs, so that a re-grade or a
// resumed run can rebuild it.
type CaseEnd struct {
	Result   results.Case    `json:"result"`
	Timeline *grade.Timeline `json:"timeline,omitempty"`
	// Samples is the byte range [from, to) of samples.csv the case wrote.
	Samples [2]int64 `json:"samples"`
	// Attempt counts the case's attempts from 1 (0 is read as 1).
	Attempt int `json:"attempt,omitempty"`
}

// caseGrader grades one case's checks from the samples it takes: those
// in its byte range of samples.csv, taken between its timeline's start
// and end, of a channel one of its checks grades. The runner grades a
// case with it at the case's end and every re-grade does the same, on
// the same bytes.
type caseGrader struct {
	tl        grade.Timeline
	from, to  int64
	graders   []*grade.Grader
	byChannel map[string][]*grade.Grader
}

func newCaseGrader(c *plan.Case, tl grade.Timeline, from, to int64) *caseGrader {
	g := &caseGrader{tl: tl, from: from, to: to, byChannel: map[string][]*grade.Grader{}}
	for _, k := range c.Checks {
		gr := grade.New(k, tl, grade.Options{})
		g.graders = append(g.graders, gr)
		g.byChannel[k.Channel] = append(g.byChannel[k.Channel], gr)
	}
	return g
}

// takes reports whether the sample at byte offset at is one of the case's.
func (g *caseGrader) takes(s Sample, at int64) bool {
	return at >= g.from && at < g.to && !s.Time.Before(g.tl.Start) && !s.Time.After(g.tl.End)
}

func (g *caseGrader) add(s Sample) {
	gs := grade.Sample{Time: s.Time, Value: s.Value, Good: s.Quality == Good}
	for _, gr := range g.byChannel[s.Channel] {
		gr.Add(gs)
	}
}

func (g *caseGrader) verdicts() []grade.Verdict {
	out := make([]grade.Verdict, len(g.graders))
	for i, gr := range g.graders {
		out[i] = gr.Verdict()
	}
	return out
}

// GradeCase grades every check of case c from the bytes from..to of the
// bundle's samples.csv, as the case ran (tl): what the runner records at
// a case's end, and exactly what Audit re-grades later.
func GradeCase(dir string, c *plan.Case, tl grade.Timeline, from, to int64) ([]grade.Verdict, error) {
	if to < from || from < 0 {
		return nil, fmt.Errorf("sample range %d..%d is reversed", from, to)
	}
	f, size, err := openRegular(dir, SamplesFile)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if to > size {
		return nil, fmt.Errorf("%s is %d bytes, the case's range ends at %d", SamplesFile, size, to)
	}
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		return nil, err
	}
	g := newCaseGrader(c, tl, from, to)
	sc := newSampleScanner(f, SamplesFile, from, to)
	for {
		s, at, err := sc.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if g.takes(s, at) {
			g.add(s)
		}
	}
	return g.verdicts(), nil
}

// Mismatch is a recorded verdict the raw samples do not reproduce, or a
// case that cannot be re-graded.
type Mismatch struct {
	Case, Check       string
	Recorded, Regrade string // verdicts ("—" for none)
	Detail            string
}

func (m Mismatch) String() string {
	what := "case " + m.Case
	if m.Check != "" {
		what += " check " + m.Check
	}
	if m.Regrade == "—" {
		return what + ": " + m.Detail
	}
	return fmt.Sprintf("%s: recorded %s, re-graded %s: %s", what, m.Recorded, m.Regrade, m.Detail)
}

// compareVerdicts lists where the re-graded verdicts differ from the
// recorded ones: outcome, measured value, limit, margin, the deciding
// sample, the samples counted. A recorded check the plan does not have,
// or the other way round, is a mismatch too; and so is a case outcome
// its re-graded checks contradict.
func compareVerdicts(rc results.Case, pc *plan.Case, got []grade.Verdict) []Mismatch {
	var out []Mismatch
	recorded := map[string]results.Check{}
	for _, r := range rc.Checks {
		recorded[r.Check] = r
	}
	for i, k := range pc.Checks {
		r, ok := recorded[k.ID]
		if !ok {
			out = append(out, Mismatch{Case: rc.ID, Check: k.ID, Recorded: "—", Regrade: string(got[i].Outcome), Detail: "results have no verdict for this check"})
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
	if _, m := CaseVerdict(rc, got); m != nil {
		out = append(out, *m)
	}
	return out
}

// CaseVerdict is a case's outcome from its re-graded checks: FAIL if
// any failed, else ERROR if any could not decide, else PASS. A recorded
// PASS or FAIL must be exactly that; a recorded ERROR (the harness may
// have failed while the checks passed), ABORTED or SKIPPED stands
// unless a check proves a failure.
func CaseVerdict(rc results.Case, verdicts []grade.Verdict) (grade.Outcome, *Mismatch) {
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
		return rec, nil
	case (rec == grade.Pass || rec == grade.Fail) || derived == grade.Fail:
		return derived, &Mismatch{Case: rc.ID, Recorded: string(rec), Regrade: string(derived),
			Detail: fmt.Sprintf("the case is recorded %s, its re-graded checks make it %s", rec, derived)}
	}
	return rec, nil
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
	if rec.Samples != got.Samples {
		diffs = append(diffs, fmt.Sprintf("%d samples recorded, %d re-graded", rec.Samples, got.Samples))
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
	s := fmt.Sprintf("%.6g", *v)
	if unit != "" {
		s += " " + unit
	}
	return s
}
