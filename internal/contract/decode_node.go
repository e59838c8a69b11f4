package contract

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"cuelang.org/go/cue"

	"github.com/seamdc/seam/internal/cueload"
	"github.com/seamdc/seam/internal/diag"
	"github.com/seamdc/seam/internal/units"
)

// Unit rule ids.
const (
	RuleNoUnit    = "UNIT001"
	RuleBadUnit   = "UNIT002"
	RuleDimension = "UNIT003"
	RuleRange     = "UNIT004"
)

// decoder reads cue values into the model, reporting unit problems.
type decoder struct {
	r     *cueload.Result
	diags diag.List
	// channel and channelDim name the clause channel whose quantity
	// decides the dimension of the values being decoded, if any.
	channel    string
	channelDim units.Dimension
}

// node is a value and its contract path.
type node struct {
	d    *decoder
	v    cue.Value
	path string
	name string // the label it was found under
}

func (n node) at(label string) node {
	return node{d: n.d, v: n.v.LookupPath(cue.MakePath(cue.Str(label))), path: n.path + "." + quoteLabel(label), name: label}
}

func quoteLabel(l string) string {
	if strings.ContainsAny(l, "-/. ") {
		return `"` + l + `"`
	}
	return l
}

func (n node) exists() bool { return n.v.Exists() }

// pos is where the user wrote n, looked up only if a diagnostic needs it.
func (n node) pos() diag.Pos { return diag.Lazy(locator{n.d.r, n.v}) }

type locator struct {
	r *cueload.Result
	v cue.Value
}

// Locate finds the user's position of v. For a struct, that is its first
// field the user wrote directly: walking a large struct's conjuncts for
// its own position costs more than evaluating it.
func (l locator) Locate() diag.Pos {
	if l.v.IncompleteKind() == cue.StructKind {
		if it, err := l.v.Fields(); err == nil {
			for it.Next() {
				if p := l.r.Pos(it.Value().Pos()); p.IsValid() {
					return p
				}
			}
		}
	}
	return l.r.UserPos(l.v)
}

// str returns a concrete string field, or "".
func (n node) str(label string) string {
	s, _ := n.at(label).v.String()
	return s
}

func (n node) ref(label string) Ref {
	c := n.at(label)
	s, _ := c.v.String()
	return Ref{To: s, Pos: c.pos()}
}

func (n node) refs(label string) []Ref {
	var out []Ref
	it, err := n.at(label).v.List()
	if err != nil {
		return nil
	}
	for it.Next() {
		s, _ := it.Value().String()
		out = append(out, Ref{To: s, Pos: n.d.r.UserPos(it.Value())})
	}
	return out
}

// ints reads a list of integers.
func (n node) ints(label string) []int {
	it, err := n.at(label).v.List()
	if err != nil {
		return nil
	}
	var out []int
	for it.Next() {
		i, _ := it.Value().Int64()
		out = append(out, int(i))
	}
	return out
}

func (n node) boolp(label string) *bool {
	c := n.at(label)
	if !c.exists() {
		return nil
	}
	b, err := c.v.Bool()
	if err != nil {
		return nil
	}
	return &b
}

func (n node) int(label string) int {
	i, _ := n.at(label).v.Int64()
	return int(i)
}

func (n node) float(label string) float64 {
	f, _ := n.at(label).v.Float64()
	return f
}

// entries returns the fields of a struct field, sorted by label.
func (n node) entries(label string) []node {
	c := n.at(label)
	if !c.exists() {
		return nil
	}
	return c.fields()
}

func (n node) fields() []node {
	it, err := n.v.Fields()
	if err != nil {
		return nil
	}
	var out []node
	for it.Next() {
		l := it.Selector().Unquoted()
		out = append(out, node{d: n.d, v: it.Value(), path: n.path + "." + quoteLabel(l), name: l})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// q reads a quantity and checks that its dimension is one of dims.
func (n node) q(label string, dims ...units.Dimension) Q {
	c := n.at(label)
	if !c.exists() {
		return Q{}
	}
	pos := c.pos()
	if c.v.IncompleteKind() == cue.NumberKind || c.v.IncompleteKind() == cue.IntKind || c.v.IncompleteKind() == cue.FloatKind {
		num, _ := c.v.MarshalJSON()
		c.d.diags.Add(diag.Diagnostic{Rule: RuleNoUnit, Severity: diag.Error, Pos: pos, Path: c.path,
			Message: fmt.Sprintf("%s: %s has no unit", c.path, num), Hint: withUnitHint(string(num), dims)})
		return Q{}
	}
	raw, err := c.v.String()
	if err != nil {
		return Q{}
	}
	qty, err := units.Parse(raw)
	if err != nil {
		d := diag.Diagnostic{Rule: RuleBadUnit, Severity: diag.Error, Pos: pos, Path: c.path,
			Message: fmt.Sprintf("%s: %v", c.path, err), Hint: unitHint(dims)}
		var missing *units.MissingUnitError
		if errors.As(err, &missing) {
			d.Rule, d.Message = RuleNoUnit, fmt.Sprintf("%s: %q has no unit", c.path, raw)
			d.Hint = withUnitHint(strings.TrimSpace(raw), dims)
		}
		c.d.diags.Add(d)
		return Q{}
	}
	for _, d := range dims {
		if qty.Dim == d {
			return Q{Quantity: qty, Set: true, Raw: raw, Pos: pos}
		}
	}
	d := diag.Diagnostic{Rule: RuleDimension, Severity: diag.Error, Pos: pos, Path: c.path,
		Message: fmt.Sprintf("%s: %q is a %s, but %s is expected here", c.path, raw, dimName(qty.Dim), dimList(dims)),
		Hint:    unitHint(dims)}
	switch {
	case qty.Dim == units.Ratio && slices.Contains(dims, units.TempDiff):
		d.Hint = fmt.Sprintf("a temperature tolerance is a temperature difference, such as \"1.5 K\": a percentage of a temperature changes with its scale (%% of 30 degC is not %% of 303 K)")
	case strings.Contains(c.path, ".mask["):
		d.Hint = "a mask's limits are percentages of the nominal, such as \"110 %\", whatever the channel measures"
	case c.d.channel != "":
		d.Message += fmt.Sprintf(", because the clause's channel %s measures %s", c.d.channel, dimName(c.d.channelDim))
		if measurable(qty.Dim) {
			d.Hint = "if the channel is wrong, point the clause at a channel that measures " + dimName(qty.Dim) + "; otherwise " + d.Hint
		}
	}
	c.d.diags.Add(d)
	return Q{}
}

// measurable reports whether a channel can measure quantities of d:
// ratios, times and temperature differences are not what channels
// measure, so a value in them is not a sign of the wrong channel.
func measurable(d units.Dimension) bool {
	return d != units.Ratio && d != units.Time && d != units.TempDiff
}

// withUnitHint suggests the number with a unit. Where a percentage is
// allowed (a derating, a tolerance, a load) it is suggested first, so a
// percentage that lost its "%" stays one ("5" → "5 %", not "5 V"); a
// fraction (0.85) is suggested as a percentage (85 %).
func withUnitHint(num string, dims []units.Dimension) string {
	d := dims[0]
	if !slices.Contains(dims, units.Ratio) {
		return fmt.Sprintf("write it as a string with its unit, such as \"%s %s\"", num, units.Canonical(d))
	}
	pct := num + " %"
	if f, err := strconv.ParseFloat(num, 64); err == nil && f > 0 && f <= 1 {
		pct = units.Format(f*100, "%")
	}
	if d == units.Ratio {
		return fmt.Sprintf("write it as a percentage, such as \"%s\"", pct)
	}
	return fmt.Sprintf("write it as a percentage, such as \"%s\", or with its unit, such as \"%s %s\"", pct, num, units.Canonical(d))
}

func dimName(d units.Dimension) string { return strings.ReplaceAll(string(d), "_", " ") }

func dimList(dims []units.Dimension) string {
	var names []string
	for _, d := range dims {
		names = append(names, "a "+dimName(d))
	}
	return strings.Join(names, " or ")
}

func unitHint(dims []units.Dimension) string {
	var parts []string
	for _, d := range dims {
		parts = append(parts, fmt.Sprintf("%s: %s", dimName(d), strings.Join(units.UnitsOf(d), ", ")))
	}
	return "use a unit of " + strings.Join(parts, "; ")
}

// items returns the elements of a list field, each with its path.
func (n node) items(label string) []node {
	c := n.at(label)
	it, err := c.v.List()
	if err != nil {
		return nil
	}
	var out []node
	for i := 0; it.Next(); i++ {
		out = append(out, node{d: n.d, v: it.Value(), path: c.path + "[" + itoa(i) + "]"})
	}
	return out
}
