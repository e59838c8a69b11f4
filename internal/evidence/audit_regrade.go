package evidence

import (
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/seamdc/seam/internal/results"
)

// regrade streams samples.csv once and re-grades every completed case
// from the bytes its case_end names, then compares each verdict with
// the journal's, and with results.json's where that differs.
func (a *auditor) regrade() {
	rep := a.rep
	defer a.regradeCaptures() // after the cases: captures align on their timelines
	var active []*AuditCase
	for _, ac := range rep.CaseAudits {
		switch {
		case ac.Plan == nil:
		case ac.End.Timeline == nil:
			if len(ac.End.Result.Checks) > 0 {
				rep.Mismatches = append(rep.Mismatches, Mismatch{Case: ac.End.Result.ID, Recorded: string(ac.End.Result.Outcome), Regrade: "—",
					Detail: fmt.Sprintf("its case_end record %d has verdicts but no timeline to re-grade them with", ac.Record)})
			}
		default:
			from, to := ac.End.Samples[0], ac.End.Samples[1]
			if to < from || from < 0 {
				rep.Mismatches = append(rep.Mismatches, Mismatch{Case: ac.End.Result.ID, Recorded: string(ac.End.Result.Outcome), Regrade: "—",
					Detail: fmt.Sprintf("its sample range %d..%d is reversed", from, to)})
				continue
			}
			ac.grader = newCaseGrader(ac.Plan, *ac.End.Timeline, from, to)
			active = append(active, ac)
		}
	}
	if len(active) == 0 {
		return
	}
	if err := a.feed(active); err != nil {
		a.problem("re-grading from the raw samples: %v", err)
		return
	}
	// results.json holds each case's attempt that counts
	counts := map[*AuditCase]bool{}
	for _, ac := range rep.Counting() {
		counts[ac] = true
	}
	var byID map[string]*results.Case
	if rep.Results != nil {
		byID = map[string]*results.Case{}
		for i := range rep.Results.Cases {
			byID[rep.Results.Cases[i].ID] = &rep.Results.Cases[i]
		}
	}
	for _, ac := range active {
		ac.Verdicts = ac.grader.verdicts()
		rep.Regraded++
		rep.Checks += len(ac.Verdicts)
		ms := compareVerdicts(ac.End.Result, ac.Plan, ac.Verdicts)
		if rc := byID[ac.End.Result.ID]; rc != nil && counts[ac] && !sameCase(*rc, ac.End.Result) {
			for _, m := range compareVerdicts(*rc, ac.Plan, ac.Verdicts) {
				m.Detail = ResultsFile + ": " + m.Detail
				ms = append(ms, m)
			}
		}
		rep.Mismatches = append(rep.Mismatches, ms...)
	}
}

// feed reads the samples the active cases take, in file order, once.
func (a *auditor) feed(active []*AuditCase) error {
	sort.SliceStable(active, func(i, j int) bool { return active[i].grader.from < active[j].grader.from })
	// from the start, so that rows are found where they are even when
	// the file was edited and the cases' offsets no longer fall on them
	from, to := int64(0), int64(0)
	for _, ac := range active {
		to = max(to, ac.grader.to)
	}
	f, size, err := openRegular(a.dir, SamplesFile)
	if err != nil {
		return err
	}
	defer f.Close()
	if to > size {
		return fmt.Errorf("the cases' samples run to byte %d, but %s has %d", to, SamplesFile, size)
	}
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		return err
	}
	sc := newSampleScanner(f, SamplesFile, from, to)
	first := 0 // the first case whose range may still hold rows
	for {
		s, at, err := sc.next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		for first < len(active) && active[first].grader.to <= at {
			first++
		}
		for i := first; i < len(active) && active[i].grader.from <= at; i++ {
			ac := active[i]
			if !ac.grader.takes(s, at) {
				continue
			}
			ac.grader.add(s)
			if a.opt.Observe != nil {
				a.opt.Observe(ac, s)
			}
		}
	}
}
