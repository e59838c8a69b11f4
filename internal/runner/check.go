package runner

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/seamdc/seam/internal/compile"
	"github.com/seamdc/seam/internal/diag"
	"github.com/seamdc/seam/internal/plan"
	"github.com/seamdc/seam/internal/version"
)

// StaleError says why a plan may not run.
type StaleError struct{ Reasons []string }

func (e *StaleError) Error() string {
	return "the plan does not match what it claims to be:\n  " + strings.Join(e.Reasons, "\n  ")
}

// CheckPlan refuses a plan that this sat did not compile or that its
// contracts no longer compile to: the compiler's version must be this
// tool's, and compiling the contracts in dir again with the plan's own
// options must give the same input digests and the same bytes. It
// returns the contracts' digest.
func CheckPlan(p *plan.Plan, raw []byte, dir string) (string, error) {
	var reasons []string
	if p.Header.Tool.Version != version.Version {
		reasons = append(reasons, fmt.Sprintf("it was compiled by %s %s, and this is sat %s: recompile it with contractc %s",
			p.Header.Tool.Name, p.Header.Tool.Version, version.Version, version.Version))
	}
	h := p.Header
	again, diags, err := compile.Dir(dir, compile.Options{Level: h.Level, Module: h.Module,
		MaxHold: time.Duration(h.Options.MaxHoldS * float64(time.Second))})
	if err != nil {
		return "", fmt.Errorf("checking the plan against %s: %w", dir, err)
	}
	if again == nil {
		return "", fmt.Errorf("checking the plan against %s: the contracts have %d error(s) (run contractc vet %s)", dir, diags.Count(diag.Error), dir)
	}
	if diffs := inputDiffs(h.Inputs, again.Header.Inputs, dir); len(diffs) > 0 {
		reasons = append(reasons, diffs...)
		reasons = append(reasons, fmt.Sprintf("recompile it: contractc compile %s --level %s%s -o PLAN", dir, h.Level, maxHoldFlag(h.Options.MaxHoldS)))
	}
	if len(reasons) == 0 {
		if b, err := plan.Encode(again); err == nil && !bytes.Equal(b, raw) {
			reasons = append(reasons, fmt.Sprintf("its inputs match %s, but its content does not: the plan was edited after contractc wrote it (it says %q)", dir, plan.Generated))
		}
	}
	if len(reasons) > 0 {
		return "", &StaleError{Reasons: reasons}
	}
	return again.Header.Inputs.Contracts, nil
}

// inputDiffs names every input digest that differs.
func inputDiffs(was, now plan.Inputs, dir string) []string {
	var out []string
	if was.SchemaVersion != now.SchemaVersion || was.Schema != now.Schema {
		out = append(out, fmt.Sprintf("it was compiled against contract schema %s (%s); this sat has %s (%s)",
			was.SchemaVersion, short(was.Schema), now.SchemaVersion, short(now.Schema)))
	}
	if was.Contracts != now.Contracts {
		out = append(out, fmt.Sprintf("it was compiled from contracts %s, but %s now digests to %s", short(was.Contracts), dir, short(now.Contracts)))
	}
	ids := map[string]bool{}
	for id := range was.Boundaries {
		ids[id] = true
	}
	for id := range now.Boundaries {
		ids[id] = true
	}
	var names []string
	for id := range ids {
		names = append(names, id)
	}
	sort.Strings(names)
	for _, id := range names {
		a, inPlan := was.Boundaries[id]
		b, inNow := now.Boundaries[id]
		switch {
		case !inNow:
			out = append(out, "boundary "+id+" is in the plan but no longer in the contracts")
		case !inPlan:
			out = append(out, "boundary "+id+" is in the contracts but not in the plan")
		case a != b:
			out = append(out, fmt.Sprintf("boundary %s changed since the plan was compiled (%s, now %s)", id, short(a), short(b)))
		}
	}
	return out
}

func maxHoldFlag(s float64) string {
	if s == 0 {
		return ""
	}
	return fmt.Sprintf(" --max-hold %gs", s)
}

func short(d string) string {
	if len(d) > 19 {
		return d[:19] + "…"
	}
	return d
}
