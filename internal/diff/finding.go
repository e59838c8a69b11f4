// Package diff compares two versions of a contract directory and says,
// change by change, who it breaks. Every change gets a stable rule id
// (docs/diff-rules.md) and a direction-aware verdict: narrowing what a
// supplier guarantees is safe, widening it breaks the consumer; narrowing
// what a consumer requires breaks the supplier, and so does raising the
// excitation the consumer produces. The joint check runs on the new side
// too, so a change that opens a gap at a joint is an error even when each
// side alone looks fine.
package diff

import (
	"fmt"
	"strings"

	"github.com/seamdc/seam/internal/diag"
)

// Severity of a finding: ERR breaks a party, WARN cannot tell, INFO is safe.
type Severity int

// Severities, from the least to the most severe.
const (
	Info Severity = iota
	Warn
	Err
)

var sevNames = [...]string{"INFO", "WARN", "ERR"}

func (s Severity) String() string { return sevNames[s] }

// MarshalText writes ERR, WARN or INFO.
func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// ParseSeverity reads ERR, WARN or INFO (any case).
func ParseSeverity(s string) (Severity, error) {
	for i, n := range sevNames {
		if strings.EqualFold(s, n) {
			return Severity(i), nil
		}
	}
	return 0, fmt.Errorf("unknown severity %q (want ERR, WARN or INFO)", s)
}

// Party is a side of a joint: its role, module and the module's vendor.
type Party struct {
	Role   string `json:"role"` // supplier or consumer
	Module string `json:"module"`
	Vendor string `json:"vendor,omitempty"`
}

func (p Party) String() string {
	if p.Vendor == "" {
		return p.Role + " " + p.Module
	}
	return fmt.Sprintf("%s %s (%s)", p.Role, p.Module, p.Vendor)
}

// Finding is one classified change.
type Finding struct {
	Rule     string   `json:"rule"`
	Name     string   `json:"name"`
	Severity Severity `json:"severity"`
	// Side is whose statement changed: supplier (a guarantee, a
	// withstand), consumer (a requirement, an excitation), or "" for the
	// joint itself and the site.
	Side     string   `json:"side,omitempty"`
	Path     string   `json:"path"`
	Boundary string   `json:"boundary,omitempty"`
	Breaks   []Party  `json:"breaks"` // empty when the change is safe
	Message  string   `json:"message"`
	Old      diag.Pos `json:"old"`
	New      diag.Pos `json:"new"`
	// Also lists the paths of the same change elsewhere: one edited line
	// of a template (a comprehension over cells) changes every instance,
	// and is reported once.
	Also []string `json:"also,omitempty"`
}

// Result is the outcome of a comparison.
type Result struct {
	Old      string    `json:"old"` // the sides' labels
	New      string    `json:"new"`
	Findings []Finding `json:"findings"`
}

// Count returns how many findings are at least sev.
func (r Result) Count(sev Severity) int {
	n := 0
	for _, f := range r.Findings {
		if f.Severity >= sev {
			n++
		}
	}
	return n
}
