package runner

import (
	"fmt"
	"slices"
	"strings"

	"github.com/seamdc/seam/internal/plan"
	"github.com/seamdc/seam/internal/results"
)

// checkSelection refuses case ids the plan does not have, and a
// selection that makes no sense: it names the plan's cases near the
// one given.
func checkSelection(cfg Config) error {
	p := cfg.Plan
	known := func(flag, id string) error {
		if slices.ContainsFunc(p.Cases, func(c plan.Case) bool { return c.ID == id }) {
			return nil
		}
		return fmt.Errorf("%s %s: the plan has no such case (contractc show PLAN lists them)%s", flag, id, near(p, id))
	}
	if len(p.Cases) == 0 {
		return nil
	}
	for _, id := range cfg.Cases {
		if err := known("--case", id); err != nil {
			return err
		}
	}
	for _, f := range []struct{ flag, id string }{{"--from", cfg.From}, {"--until", cfg.Until}} {
		if f.id != "" {
			if err := known(f.flag, f.id); err != nil {
				return err
			}
		}
	}
	switch {
	case len(cfg.Cases) > 0 && cfg.From != "":
		return fmt.Errorf("give --case or --from, not both")
	case cfg.Retry && len(cfg.Cases) != 1:
		return fmt.Errorf("a retry runs one case again: give it with --case ID")
	case cfg.Retry && (cfg.From != "" || cfg.Until != ""):
		return fmt.Errorf("a retry runs one case: --from and --until do not apply")
	case cfg.From != "" && cfg.Until != "" && index(p, cfg.Until) < index(p, cfg.From):
		return fmt.Errorf("--until %s comes before --from %s in the plan", cfg.Until, cfg.From)
	}
	return nil
}

// near names the plan's cases whose ids contain what was given, or
// its first cases.
func near(p *plan.Plan, id string) string {
	var ids []string
	for _, c := range p.Cases {
		if strings.Contains(c.ID, id) || strings.Contains(id, c.ID) {
			ids = append(ids, c.ID)
		}
	}
	what := "did you mean"
	if len(ids) == 0 {
		what = "its cases start"
		for _, c := range p.Cases {
			ids = append(ids, c.ID)
		}
	}
	if len(ids) > 3 {
		ids = append(ids[:3], "…")
	}
	return "; " + what + " " + strings.Join(ids, ", ")
}

func index(p *plan.Plan, id string) int {
	return slices.IndexFunc(p.Cases, func(c plan.Case) bool { return c.ID == id })
}

// selected says whether this session runs case i: the cases --case
// names (again, when they completed: a new attempt), or those from
// --from on, or every case, that have not completed.
func (r *Runner) selected(i int, c plan.Case) bool {
	if len(r.cfg.Cases) > 0 {
		return slices.Contains(r.cfg.Cases, c.ID)
	}
	if _, done := r.outcomes[c.ID]; done {
		return false
	}
	return r.cfg.From == "" || i >= index(r.cfg.Plan, r.cfg.From)
}

// notRun lists the plan's cases that have no outcome yet.
func (r *Runner) notRun() []string {
	var ids []string
	for _, c := range r.cfg.Plan.Cases {
		if _, done := r.outcomes[c.ID]; !done {
			ids = append(ids, c.ID)
		}
	}
	return ids
}

// handover ends a session that leaves cases not run without an abort:
// the load is zeroed as at any end, and the bundle is left to resume.
func (r *Runner) handover() {
	left := r.notRun()
	if len(left) == 0 || r.isAborted() {
		return
	}
	why := "the session ran the cases it was given"
	if r.cfg.Until != "" && r.outcomes[r.cfg.Until] != "" {
		why = "the shift ended after case " + r.cfg.Until + " (--until)"
	}
	reason := fmt.Sprintf("%s; %d case(s) not run yet, from %s: the next shift resumes the bundle", why, len(left), left[0])
	r.mu.Lock()
	r.abortInfo = &results.Abort{At: r.clk.Now().UTC(), Cause: results.CauseHandover, Reason: reason}
	r.mu.Unlock()
	r.append("handover", "", map[string]any{"reason": reason, "not_run": len(left), "operator": r.cfg.Operator.Who()})
	r.log.Info("session ended for a hand-over", "not_run", len(left), "next", left[0])
}

// caseResult is a case's result before it runs.
func caseResult(c plan.Case) results.Case {
	return results.Case{ID: c.ID, Title: c.Title, Level: c.Level, Kind: c.Kind,
		Boundary: c.Boundary, Module: c.Module, Checks: []results.Check{},
		Clause: results.Clause{Path: c.Clause.Path, Pos: c.Clause.Pos, BoundaryDigest: c.Clause.BoundaryDigest}}
}

// notRunReason is what a case without a result says at the end.
func notRunReason(a *results.Abort) string {
	if a != nil && a.Cause == results.CauseHandover {
		return "not run yet: " + strings.SplitN(a.Reason, ";", 2)[0]
	}
	return "not run: the run was aborted"
}
