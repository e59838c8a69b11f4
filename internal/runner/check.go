package runner

import (
	"fmt"
	"strings"

	"github.com/seamdc/seam/contracts/schema"
	"github.com/seamdc/seam/internal/plan"
	"github.com/seamdc/seam/internal/version"
)

// StaleError says why a plan may not run.
type StaleError struct{ Reasons []string }

func (e *StaleError) Error() string {
	return "the plan does not match what it claims to be:\n  " + strings.Join(e.Reasons, "\n  ")
}

// CheckPlan refuses a plan that this sat did not compile, that was
// edited, or whose contracts changed since, without compiling anything:
// the compiler's version must be this tool's, the plan's content must
// match its header.digest, the contract schema must be this sat's, and
// every contract file in dir must hash as the plan's inputs say (each
// changed, added or removed file is named). It returns the contracts'
// digest the plan records.
func CheckPlan(p *plan.Plan, dir string) (string, error) {
	var reasons []string
	h := p.Header
	if h.Tool.Version != version.Version {
		reasons = append(reasons, fmt.Sprintf("it was compiled by %s %s, and this is sat %s: recompile it with contractc %s",
			h.Tool.Name, h.Tool.Version, version.Version, version.Version))
	}
	if err := plan.CheckDigest(p); err != nil {
		reasons = append(reasons, err.Error())
	}
	if h.Inputs.SchemaVersion != schema.Version || h.Inputs.Schema != schema.Digest() {
		reasons = append(reasons, fmt.Sprintf("it was compiled against contract schema %s (%s); this sat has %s (%s)",
			h.Inputs.SchemaVersion, short(h.Inputs.Schema), schema.Version, short(schema.Digest())))
	}
	now, err := plan.FileDigests(dir)
	if err != nil {
		return "", fmt.Errorf("checking the plan against %s: %w", dir, err)
	}
	if diffs := plan.FileChanges(h.Inputs.Files, now); len(diffs) > 0 {
		reasons = append(reasons, fmt.Sprintf("its contracts in %s changed since it was compiled from them (%s):", dir, short(h.Inputs.Contracts)))
		reasons = append(reasons, diffs...)
		reasons = append(reasons, fmt.Sprintf("recompile it: contractc compile %s --level %s%s%s -o PLAN", dir, h.Level, moduleFlag(h.Module), maxHoldFlag(h.Options.MaxHoldS)))
	}
	if len(reasons) > 0 {
		return "", &StaleError{Reasons: reasons}
	}
	return h.Inputs.Contracts, nil
}

func moduleFlag(m string) string {
	if m == "" {
		return ""
	}
	return " --module " + m
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
