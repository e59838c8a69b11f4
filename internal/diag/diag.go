// Package diag holds positioned diagnostics and renders them as text,
// JSON, GitHub annotations or SARIF. Contracts, device profiles and site
// bindings all report through it.
package diag

import (
	"cmp"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// Severity orders diagnostics: errors fail vet, warnings only with --strict.
type Severity int

// Severities, from the least to the most severe.
const (
	Info Severity = iota
	Warning
	Error
)

func (s Severity) String() string {
	return [...]string{"info", "warning", "error"}[s]
}

// MarshalText writes the severity's name.
func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Pos is a position in a source file; File is relative to the checked
// directory. A Pos may be lazy: finding where a value was written can cost
// more than checking it, so a loader hands out lazy positions that are
// resolved only when a diagnostic is reported.
type Pos struct {
	File string `json:"file"`
	Line int    `json:"line"`
	Col  int    `json:"column"`
	lazy *lazyPos
}

// Locator finds a position on demand.
type Locator interface{ Locate() Pos }

type lazyPos struct {
	once sync.Once
	loc  Locator
	pos  Pos
}

// Lazy returns a position that asks loc where it is when first needed.
func Lazy(loc Locator) Pos { return Pos{lazy: &lazyPos{loc: loc}} }

// Resolved returns p with a lazy position looked up.
func (p Pos) Resolved() Pos {
	if p.lazy == nil {
		return p
	}
	p.lazy.once.Do(func() { p.lazy.pos = p.lazy.loc.Locate() })
	return p.lazy.pos
}

// IsValid reports whether p names a file.
func (p Pos) IsValid() bool { return p.Resolved().File != "" }

func (p Pos) String() string {
	p = p.Resolved()
	switch {
	case p.File == "":
		return "-"
	case p.Line == 0:
		return p.File
	}
	return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col)
}

// MarshalJSON writes the resolved position.
func (p Pos) MarshalJSON() ([]byte, error) {
	p = p.Resolved()
	return json.Marshal(struct {
		File string `json:"file"`
		Line int    `json:"line"`
		Col  int    `json:"column"`
	}{p.File, p.Line, p.Col})
}

// Related is a second position that explains a diagnostic, such as the
// other side of a joint.
type Related struct {
	Pos     Pos    `json:"pos"`
	Message string `json:"message"`
}

// Diagnostic is one finding.
type Diagnostic struct {
	Rule     string    `json:"rule"`
	Severity Severity  `json:"severity"`
	Pos      Pos       `json:"pos"`
	Path     string    `json:"path,omitempty"` // the contract path, e.g. boundaries.p1-ma.steady.voltage
	Message  string    `json:"message"`
	Hint     string    `json:"hint,omitempty"` // what to change
	Related  []Related `json:"related,omitempty"`
}

// List collects diagnostics.
type List []Diagnostic

// Add appends a diagnostic.
func (l *List) Add(d Diagnostic) { *l = append(*l, d) }

// Errorf adds an error.
func (l *List) Errorf(rule string, pos Pos, path, format string, args ...any) *Diagnostic {
	l.Add(Diagnostic{Rule: rule, Severity: Error, Pos: pos, Path: path, Message: fmt.Sprintf(format, args...)})
	return &(*l)[len(*l)-1]
}

// Warnf adds a warning.
func (l *List) Warnf(rule string, pos Pos, path, format string, args ...any) *Diagnostic {
	l.Add(Diagnostic{Rule: rule, Severity: Warning, Pos: pos, Path: path, Message: fmt.Sprintf(format, args...)})
	return &(*l)[len(*l)-1]
}

// Count returns how many diagnostics are at least sev.
func (l List) Count(sev Severity) int {
	n := 0
	for _, d := range l {
		if d.Severity >= sev {
			n++
		}
	}
	return n
}

// Sorted returns the diagnostics with positions resolved, ordered by
// file, line, column and rule, without exact duplicates.
func (l List) Sorted() List {
	out := slices.Clone(l)
	for i := range out {
		out[i].Pos = out[i].Pos.Resolved()
		rel := slices.Clone(out[i].Related)
		for j := range rel {
			rel[j].Pos = rel[j].Pos.Resolved()
		}
		out[i].Related = rel
	}
	slices.SortStableFunc(out, func(a, b Diagnostic) int {
		return cmp.Or(cmp.Compare(a.Pos.File, b.Pos.File), cmp.Compare(a.Pos.Line, b.Pos.Line),
			cmp.Compare(a.Pos.Col, b.Pos.Col), cmp.Compare(a.Rule, b.Rule), cmp.Compare(a.Message, b.Message))
	})
	return slices.CompactFunc(out, func(a, b Diagnostic) bool {
		return a.Pos == b.Pos && a.Rule == b.Rule && a.Message == b.Message
	})
}

// Fold merges diagnostics that differ only in their contract path, such
// as one error in a template instantiated for sixteen racks: the user
// fixes one line, so vet reports it once and lists the other paths.
// The list must be sorted.
func (l List) Fold() List {
	var out List
	extra := map[int][]string{}
	for _, d := range l {
		if n := len(out); n > 0 {
			prev := out[n-1]
			if prev.Path != "" && d.Path != "" && prev.Rule == d.Rule && prev.Pos == d.Pos && prev.Hint == d.Hint &&
				strings.ReplaceAll(prev.Message, prev.Path, "") == strings.ReplaceAll(d.Message, d.Path, "") {
				extra[n-1] = append(extra[n-1], d.Path)
				continue
			}
		}
		out = append(out, d)
	}
	for i, paths := range extra {
		shown := paths
		if len(shown) > 3 {
			shown = shown[:3]
		}
		more := ""
		if len(paths) > len(shown) {
			more = fmt.Sprintf(" and %d more", len(paths)-len(shown))
		}
		out[i].Message += fmt.Sprintf(" (also at %s%s)", strings.Join(shown, ", "), more)
	}
	return out
}

// Rebase makes file positions relative to another directory: positions
// are relative to the checked directory, and a command run from a
// repository root reports them from there, so that editors and pull
// request annotations find the files. "." names the directory itself.
func (l List) Rebase(dir string) List {
	out := slices.Clone(l)
	join := func(p Pos) Pos {
		p = p.Resolved()
		if p.File == "" || filepath.IsAbs(p.File) {
			return p
		}
		p.File = filepath.ToSlash(filepath.Join(dir, p.File))
		return p
	}
	for i := range out {
		out[i].Pos = join(out[i].Pos)
		rel := slices.Clone(out[i].Related)
		for j := range rel {
			rel[j].Pos = join(rel[j].Pos)
		}
		out[i].Related = rel
	}
	return out
}
