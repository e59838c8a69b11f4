package diff

import (
	"slices"
	"strings"

	"cuelang.org/go/cue"

	"github.com/seamdc/seam/internal/canon"
	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/diag"
	"github.com/seamdc/seam/internal/units"
)

func modulePath(id string) string { return "site.modules." + quoteLabel(id) }

func (d *differ) modules() {
	for _, nm := range d.new.C.Site.Modules {
		if d.old.C.Site.Module(nm.ID) == nil {
			d.cover(modulePath(nm.ID))
			d.add(RuleModuleAdded, Info, "", loc{path: modulePath(nm.ID), new: nm.Pos}, nil, "new %s module from %s", nm.Kind, nm.Vendor)
		}
	}
	for _, om := range d.old.C.Site.Modules {
		if d.new.C.Site.Module(om.ID) != nil {
			continue
		}
		d.cover(modulePath(om.ID))
		var joints []string
		for _, b := range d.old.C.Boundaries {
			if b.Supplier.To == om.ID || b.Consumer.To == om.ID {
				joints = append(joints, b.ID)
			}
		}
		what := "it was party to no boundary"
		if len(joints) > 0 {
			what = "it was party to " + strings.Join(joints, ", ")
		}
		d.add(RuleModuleRemoved, Warn, "", loc{path: modulePath(om.ID), old: om.Pos, new: d.new.C.Site.Pos}, nil,
			"%s module from %s removed; %s", om.Kind, om.Vendor, what)
	}
}

// defaults are the inventory fields that have a documented default.
var defaults = map[string]string{
	"liquid_fraction": `"100 %"`,
	"power_factor":    "1",
	"coolant":         `"water"`,
}

// rest classifies every remaining difference of the evaluated values, so
// that no change of meaning goes unreported: site inventory, mostly.
func (d *differ) rest() {
	d.walk("", d.old.C.Loaded.Value, d.new.C.Loaded.Value)
}

func (d *differ) walk(p string, o, n cue.Value) {
	if p != "" && d.isCovered(p) {
		return
	}
	if o.Exists() && n.Exists() && o.IncompleteKind() == cue.StructKind && n.IncompleteKind() == cue.StructKind {
		ol, nl := fieldLabels(o), fieldLabels(n)
		for _, l := range unionSorted(ol, nl) {
			sel := cue.MakePath(cue.Str(l))
			d.walk(join(p, l), o.LookupPath(sel), n.LookupPath(sel))
		}
		return
	}
	oj, nj := leafJSON(o), leafJSON(n)
	if oj == nj {
		return
	}
	d.leaf(p, o, n, oj, nj)
}

func (d *differ) leaf(p string, o, n cue.Value, oj, nj string) {
	l := loc{path: p, old: d.old.C.Loaded.UserPos(o), new: d.new.C.Loaded.UserPos(n)}
	label := splitPath(p)[len(splitPath(p))-1]
	def, hasDefault := defaults[label]
	switch {
	case label == "description":
		d.add(RuleTextChanged, Info, "", l, nil, "description changed")
	case sameQuantity(o, n):
		d.add(RuleUnitChanged, Info, "", l, nil, "%s rewritten as %s: the same value", oj, nj)
	case hasDefault && (oj == "" || nj == ""):
		d.add(RuleDefaultChanged, Warn, "", l, nil, "%s → %s (the default is %s)", orDefault(oj), orDefault(nj), def)
	case oj == "":
		d.add(RuleChanged, Warn, "", l, nil, "added: %s", nj)
	case nj == "":
		d.add(RuleChanged, Warn, "", l, nil, "removed (was %s)", oj)
	default:
		d.add(RuleChanged, Warn, "", l, nil, "%s → %s", oj, nj)
	}
}

func orDefault(j string) string {
	if j == "" {
		return "(default)"
	}
	return j
}

// sameQuantity reports two quantities equal after conversion.
func sameQuantity(o, n cue.Value) bool {
	os, err1 := o.String()
	ns, err2 := n.String()
	if err1 != nil || err2 != nil {
		return false
	}
	a, err1 := units.Parse(os)
	b, err2 := units.Parse(ns)
	return err1 == nil && err2 == nil && a.Dim == b.Dim && approxEqual(a.Canon, b.Canon)
}

// leafJSON is the canonical JSON of v, or "" when v does not exist.
func leafJSON(v cue.Value) string {
	if !v.Exists() {
		return ""
	}
	b, err := canon.JSON(v)
	if err != nil {
		return "(incomplete)"
	}
	return string(b)
}

func fieldLabels(v cue.Value) []string {
	it, err := v.Fields()
	if err != nil {
		return nil
	}
	var out []string
	for it.Next() {
		out = append(out, it.Selector().Unquoted())
	}
	return out
}

func unionSorted(a, b []string) []string {
	out := slices.Concat(a, b)
	slices.Sort(out)
	return slices.Compact(out)
}

func join(p, label string) string {
	if p == "" {
		return quoteLabel(label)
	}
	return p + "." + quoteLabel(label)
}

// checks runs vet's model checks on both sides and reports what the new
// side adds: a joint gap, a broken budget, a dangling reference.
func (d *differ) checks() {
	oldChecks := contract.Check(d.old.C)
	oldFound := map[string]bool{}
	for _, f := range oldChecks {
		oldFound[f.Rule+" "+f.Path] = true
	}
	newFound := map[string]bool{}
	for _, f := range contract.Check(d.new.C) {
		key := f.Rule + " " + f.Path
		newFound[key] = true
		if oldFound[key] {
			continue
		}
		d.newFinding(f)
	}
	for _, f := range oldChecks {
		if isJoint(f.Rule) && !newFound[f.Rule+" "+f.Path] {
			d.add(RuleGapClosed, Info, "", loc{path: f.Path, boundary: d.boundaryAt(f.Path), old: f.Pos}, nil,
				"gap closed (%s): %s", f.Rule, strings.TrimPrefix(f.Message, f.Path+": "))
		}
	}
}

func isJoint(rule string) bool { return strings.HasPrefix(rule, "JOINT") }

func (d *differ) newFinding(f diag.Diagnostic) {
	b := d.boundaryAt(f.Path)
	l := loc{path: f.Path, boundary: b, new: f.Pos}
	msg := strings.TrimPrefix(f.Message, f.Path+": ")
	if isJoint(f.Rule) && b != nil {
		side, breaks := d.gapBreaks(f.Path, b)
		d.addRaw(RuleGapOpened, Err, side, l, breaks, "the new side opens a gap (%s): %s", f.Rule, msg)
		return
	}
	sev := Err
	if f.Severity < diag.Error {
		sev = Warn
	}
	var breaks []Party
	if b != nil {
		breaks = d.both(b)
	} else if m := d.moduleAt(f.Path); m != nil {
		breaks = []Party{{Role: "module", Module: m.ID, Vendor: m.Vendor}}
	}
	d.add(RuleCheckFailed, sev, "", l, breaks, "new %s %s: %s", f.Severity, f.Rule, msg)
}

// gapBreaks names whose change opened a new gap and whom it breaks: the
// consumer when only the supplier's statements changed in the clause,
// the supplier when only the consumer's did, else both.
func (d *differ) gapBreaks(path string, b *contract.Boundary) (string, []Party) {
	sides := d.changed[clausePrefix(path)]
	if len(sides) == 1 {
		return sides[0], []Party{d.party(map[string]string{"supplier": "consumer", "consumer": "supplier"}[sides[0]], b)}
	}
	return "", d.both(b)
}

// boundaryAt returns the new side's boundary a path lies in, or nil.
func (d *differ) boundaryAt(path string) *contract.Boundary {
	parts := splitPath(path)
	if len(parts) < 2 || parts[0] != "boundaries" {
		return nil
	}
	id := strings.Trim(parts[1], `"`)
	for _, s := range []Side{d.new, d.old} {
		for _, b := range s.C.Boundaries {
			if b.ID == id {
				return b
			}
		}
	}
	return nil
}

// moduleAt returns the new side's module a site path lies in, or nil.
func (d *differ) moduleAt(path string) *contract.Module {
	parts := splitPath(path)
	if len(parts) < 3 || parts[0] != "site" || parts[1] != "modules" {
		return nil
	}
	return d.new.C.Site.Module(strings.Trim(parts[2], `"`))
}
