package runner

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/seamdc/seam/internal/evidence"
	"github.com/seamdc/seam/internal/results"
	"github.com/seamdc/seam/internal/version"
)

// retryStart is the data of a retry_start record, the first of a retry
// amendment after its amend record.
type retryStart struct {
	Case       string `json:"case"`
	Attempt    int    `json:"attempt"`
	PlanDigest string `json:"plan_digest"`
	Tool       string `json:"tool"`
	Site       string `json:"site"`
	Binding    string `json:"binding,omitempty"`
	// Defect is the simulator's defect during the retry: a retry runs
	// the case again once the fault is cleared, so it may differ from
	// the run's.
	Defect    string  `json:"defect,omitempty"`
	TimeScale float64 `json:"time_scale"`
	Operator  string  `json:"operator"`
}

// openRetry opens the finished bundle in Dir for a signed amendment
// that runs one case again. The bundle must verify, have run this plan
// on this site, and its results (with earlier retries) are the
// session's: the case runs only if its preconditions hold there.
func (r *Runner) openRetry(digest string) error {
	cfg := r.cfg
	r.log = cfg.Log // run.log is the run's: the manifest holds its digest
	id := cfg.Cases[0]
	am := evidence.Amendment{Purpose: evidence.PurposeRetry, Role: evidence.RoleRun, By: cfg.Operator.Who(), Case: id}
	a, err := evidence.Amend(cfg.Dir, cfg.Signer, am, r.clk)
	if err != nil {
		return fmt.Errorf("retry %s: %w", id, err)
	}
	rep := a.Report()
	if err := r.retryFits(rep, digest); err != nil {
		return errors.Join(fmt.Errorf("cannot retry %s in %s: %w", id, cfg.Dir, err), a.Abandon())
	}
	r.amender, r.b = a, a.Bundle()
	r.res.Run = rep.Results.Run
	for _, c := range rep.Results.Cases {
		if i, ok := r.index[c.ID]; ok {
			r.res.Cases[i] = c
			r.outcomes[c.ID] = c.Outcome
		}
	}
	for _, ac := range rep.CaseAudits {
		r.attempts[ac.End.Result.ID] = max(r.attempts[ac.End.Result.ID], ac.Attempt)
	}
	r.append("retry_start", id, retryStart{Case: id, Attempt: r.attempts[id] + 1, PlanDigest: digest, Tool: "sat " + version.Version,
		Site: cfg.Site.Kind, Binding: cfg.Site.BindingDigest, Defect: cfg.Site.Defect, TimeScale: cfg.Site.TimeScale, Operator: cfg.Operator.Who()})
	r.log.Info("retry started", "case", id, "attempt", r.attempts[id]+1, "bundle", cfg.Dir, "amendment", a.Segment)
	return nil
}

// retryFits checks the finished bundle ran this plan on this site: the
// same kind of site and binding; the simulator's defect may be cleared
// (or another), since a retry is the case run again after a repair.
func (r *Runner) retryFits(rep *evidence.Report, digest string) error {
	if rep.Results == nil {
		return errors.New("it has no results.json")
	}
	if d := rep.Results.Plan.Digest; d != digest {
		return fmt.Errorf("it ran plan %s, not this plan (%s): retry with the plan it ran (its copy is %s in the bundle)", d, digest, PlanFile)
	}
	var first runStart
	if err := json.Unmarshal(rep.RunStart(), &first); err != nil {
		return fmt.Errorf("its run_start record: %w", err)
	}
	first.Defect = r.cfg.Site.Defect
	return r.sameSite(first)
}

// finishRetry signs the retry's amendment: the attempt is evidence
// whatever its outcome (an abort during it too, with load zeroed).
func (r *Runner) finishRetry() (*results.Results, error) {
	r.append("retry_end", r.cfg.Cases[0], map[string]any{"outcome": r.outcomes[r.cfg.Cases[0]], "run_outcome": r.res.Outcome})
	r.prog.done(r.res)
	if err := r.amender.Close(); err != nil {
		return r.res, fmt.Errorf("the retry's amendment was not signed, so the bundle is as it was: %w", err)
	}
	r.log.Info("retry signed", "case", r.cfg.Cases[0], "amendment", r.amender.Segment, "outcome", r.res.Outcome)
	return r.res, nil
}
