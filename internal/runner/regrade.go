package runner

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/seamdc/seam/internal/evidence"
	"github.com/seamdc/seam/internal/grade"
	"github.com/seamdc/seam/internal/plan"
	"github.com/seamdc/seam/internal/results"
)

// Regraded is what re-grading a bundle found.
type Regraded struct {
	Cases, Checks int
	// Mismatches are verdicts that differ from the recorded ones, or
	// records that cannot be re-graded.
	Mismatches []string
}

// Regrade grades every completed case of a bundle again from the raw
// samples, with the plan and timelines the bundle holds, and compares
// each verdict with the one the journal recorded: the measured value,
// limit, margin, outcome and deciding sample must all be the same.
func Regrade(dir string) (Regraded, error) {
	var out Regraded
	raw, err := os.ReadFile(filepath.Join(dir, PlanFile))
	if err != nil {
		return out, fmt.Errorf("re-grading needs the plan that ran: %w", err)
	}
	p, err := plan.Decode(raw)
	if err != nil {
		return out, fmt.Errorf("%s: %w", filepath.Join(dir, PlanFile), err)
	}
	ends, err := caseEnds(dir)
	if err != nil {
		return out, err
	}
	cases := map[string]plan.Case{}
	for _, c := range p.Cases {
		cases[c.ID] = c
	}
	samples := filepath.Join(dir, evidence.SamplesFile)
	for _, ce := range ends {
		c, ok := cases[ce.Result.ID]
		if !ok {
			out.Mismatches = append(out.Mismatches, fmt.Sprintf("case %s: not in the plan", ce.Result.ID))
			continue
		}
		if ce.Timeline == nil {
			continue // never sampled: skipped or stopped before its program
		}
		out.Cases++
		got, err := gradeFile(samples, c, *ce.Timeline, ce.Samples[0], ce.Samples[1])
		if err != nil {
			out.Mismatches = append(out.Mismatches, fmt.Sprintf("case %s: %v", c.ID, err))
			continue
		}
		out.Checks += len(got)
		out.Mismatches = append(out.Mismatches, compare(c.ID, ce.Result.Checks, got)...)
	}
	return out, nil
}

// caseEnds reads the case_end records of a journal.
func caseEnds(dir string) ([]caseEnd, error) {
	f, err := os.Open(filepath.Join(dir, evidence.JournalFile))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []caseEnd
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for line := 1; sc.Scan(); line++ {
		var r evidence.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil || r.Kind != "case_end" {
			continue // a torn line is the chain check's to report
		}
		var ce caseEnd
		if err := json.NewDecoder(bytes.NewReader(r.Data)).Decode(&ce); err != nil {
			return nil, fmt.Errorf("%s line %d: case_end of %s: %w", evidence.JournalFile, line, r.Case, err)
		}
		out = append(out, ce)
	}
	return out, sc.Err()
}

// compare lists the differences between recorded and re-graded verdicts.
func compare(caseID string, rec []results.Check, got []grade.Verdict) []string {
	var out []string
	byID := map[string]grade.Verdict{}
	for _, v := range got {
		byID[v.Check] = v
	}
	if len(rec) != len(got) {
		out = append(out, fmt.Sprintf("case %s: %d checks recorded, %d in the plan", caseID, len(rec), len(got)))
	}
	for _, r := range rec {
		g, ok := byID[r.Check]
		if !ok {
			out = append(out, fmt.Sprintf("case %s check %s: recorded, but the plan has no such check", caseID, r.Check))
			continue
		}
		if d := differ(r.Verdict, g); d != "" {
			out = append(out, fmt.Sprintf("case %s check %s: recorded %s, re-graded %s: %s", caseID, r.Check, r.Outcome, g.Outcome, d))
		}
	}
	return out
}

func differ(a, b grade.Verdict) string {
	switch {
	case a.Outcome != b.Outcome:
		return "the outcome differs (" + b.Detail + ")"
	case !same(a.Measured, b.Measured):
		return "the measured value differs"
	case !same(a.Limit, b.Limit):
		return "the limit differs"
	case !same(a.Margin, b.Margin):
		return "the margin differs"
	case (a.At == nil) != (b.At == nil) || a.At != nil && !a.At.Equal(*b.At):
		return "the deciding sample differs"
	case a.Samples != b.Samples:
		return fmt.Sprintf("%d samples graded, recorded %d", b.Samples, a.Samples)
	}
	return ""
}

func same(a, b *float64) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b || math.Abs(*a-*b) <= 1e-9*math.Max(math.Abs(*a), math.Abs(*b))
}
