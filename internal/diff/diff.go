package diff

import (
	"cmp"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/diag"
)

// Side is one version of a contract directory.
type Side struct {
	C *contract.Contracts
	// Label prefixes file positions: the directory as given, or
	// "REV:path" for a version read from git.
	Label string
}

func (s Side) at(p diag.Pos) diag.Pos {
	p = p.Resolved()
	if p.IsValid() && s.Label != "" {
		p.File = path.Join(s.Label, p.File)
	}
	return p
}

// differ accumulates findings.
type differ struct {
	old, new Side
	findings []Finding
	covered  []string            // path prefixes already classified
	changed  map[string][]string // clause path → sides whose statements changed
}

// Compare classifies every change from old to new.
func Compare(old, new Side) Result {
	d := &differ{old: old, new: new, changed: map[string][]string{}}
	d.modules()
	d.boundaries()
	d.checks()
	d.rest()
	slices.SortStableFunc(d.findings, func(a, b Finding) int {
		return cmp.Or(cmp.Compare(a.Path, b.Path), cmp.Compare(a.Rule, b.Rule), cmp.Compare(a.Message, b.Message))
	})
	d.findings = fold(d.findings)
	if d.findings == nil {
		d.findings = []Finding{}
	}
	return Result{Old: old.Label, New: new.Label, Findings: d.findings}
}

// fold reports a change made on one line of a template once: findings
// of one rule, severity and side at the same old and new positions are
// the same edit seen through every instance. The first keeps its
// message and lists the others' paths; the parties it breaks are all of
// theirs.
func fold(fs []Finding) []Finding {
	var out []Finding
	first := map[string]int{}
	for _, f := range fs {
		if !f.Old.IsValid() && !f.New.IsValid() {
			out = append(out, f)
			continue
		}
		key := strings.Join([]string{f.Rule, f.Severity.String(), f.Side, f.Old.String(), f.New.String()}, "\x00")
		i, ok := first[key]
		if !ok || out[i].Path == f.Path || slices.Contains(out[i].Also, f.Path) {
			if !ok {
				first[key] = len(out)
			}
			out = append(out, f) // two findings about one path are two changes
			continue
		}
		out[i].Also = append(out[i].Also, f.Path)
		for _, p := range f.Breaks {
			if !slices.Contains(out[i].Breaks, p) {
				out[i].Breaks = append(out[i].Breaks, p)
			}
		}
	}
	for i := range out {
		if n := len(out[i].Also); n > 0 {
			shown := out[i].Also[:min(n, 3)]
			more := ""
			if n > len(shown) {
				more = fmt.Sprintf(" and %d more", n-len(shown))
			}
			out[i].Message += fmt.Sprintf(" (also at %s%s)", strings.Join(shown, ", "), more)
		}
	}
	return out
}

// loc is where a term sits on each side.
type loc struct {
	path     string
	boundary *contract.Boundary // the new side's, or the old one's if removed
	old, new diag.Pos
}

func (d *differ) add(rule string, sev Severity, side string, l loc, breaks []Party, format string, args ...any) {
	d.addRaw(rule, sev, side, l, breaks, format, args...)
	if side != "" {
		cp := clausePrefix(l.path)
		if !slices.Contains(d.changed[cp], side) {
			d.changed[cp] = append(d.changed[cp], side)
		}
	}
}

// addRaw adds a finding without recording whose statement changed.
func (d *differ) addRaw(rule string, sev Severity, side string, l loc, breaks []Party, format string, args ...any) {
	f := Finding{Rule: rule, Name: ruleName(rule), Severity: sev, Side: side, Path: l.path, Breaks: breaks,
		Message: l.path + ": " + fmt.Sprintf(format, args...), Old: d.old.at(l.old), New: d.new.at(l.new)}
	if f.Breaks == nil {
		f.Breaks = []Party{}
	}
	if l.boundary != nil {
		f.Boundary = l.boundary.ID
	}
	d.findings = append(d.findings, f)
}

// judged adds a finding whose severity follows the direction rule.
func (d *differ) judged(rule, side string, e effect, l loc, format string, args ...any) {
	sev, role := verdict(side, e)
	var breaks []Party
	if role != "" {
		breaks = []Party{d.party(role, l.boundary)}
	}
	d.add(rule, sev, side, l, breaks, format, args...)
}

// party names a side of boundary b by role, with its module's vendor.
func (d *differ) party(role string, b *contract.Boundary) Party {
	id := b.Supplier.To
	if role == "consumer" {
		id = b.Consumer.To
	}
	p := Party{Role: role, Module: id}
	for _, s := range []Side{d.new, d.old} {
		if m := s.C.Site.Module(id); m != nil {
			p.Vendor = m.Vendor
			break
		}
	}
	return p
}

func (d *differ) both(b *contract.Boundary) []Party {
	return []Party{d.party("supplier", b), d.party("consumer", b)}
}

func (d *differ) cover(prefix string) { d.covered = append(d.covered, prefix) }

func (d *differ) isCovered(p string) bool {
	for _, c := range d.covered {
		if p == c || strings.HasPrefix(p, c+".") {
			return true
		}
	}
	return false
}

// clausePrefix cuts a term path back to its clause:
// boundaries."p1-ma".steady."voltage-a".guarantee.tolerance → boundaries."p1-ma".steady."voltage-a".
func clausePrefix(p string) string {
	parts := splitPath(p)
	if len(parts) >= 4 && parts[0] == "boundaries" {
		return strings.Join(parts[:4], ".")
	}
	return p
}

// splitPath splits a contract path at dots outside quotes.
func splitPath(p string) []string {
	var out []string
	start, quoted := 0, false
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '"':
			quoted = !quoted
		case '.':
			if !quoted {
				out = append(out, p[start:i])
				start = i + 1
			}
		}
	}
	return append(out, p[start:])
}

// quoteLabel quotes a label as contract paths do.
func quoteLabel(l string) string {
	if strings.ContainsAny(l, "-/. ") {
		return `"` + l + `"`
	}
	return l
}

func firstValid(ps ...diag.Pos) diag.Pos {
	for _, p := range ps {
		if p.IsValid() {
			return p
		}
	}
	return diag.Pos{}
}
