package contract

import (
	"fmt"
	"sort"
	"strings"

	"github.com/seamdc/seam/internal/diag"
)

// Uniformity and spares rule ids (docs/operations.md).
const (
	RuleFirmware   = "UNIFORM001"
	RulePartNumber = "UNIFORM002"
	RuleSpares     = "SPARES001"
	RuleSpareFits  = "SPARES002"
)

var opsRules = map[string]string{
	RuleFirmware:       "controller or power-shelf firmware that differs across modules of one kind",
	RulePartNumber:     "pumps, power shelves, fans or optics whose part numbers differ across modules of one kind: spares that do not fit",
	RuleSpares:         "fewer spares on hand than the site's rule asks for what is installed (at least N per K)",
	RuleSpareFits:      "a spare part number that nothing installed uses",
	RuleFloor:          "a rack heavier per area, liquid included, than the floor under it is rated for",
	RuleFloorData:      "a floor rating is declared but a rack's weight or footprint is not: its loading cannot be checked",
	RuleTranche:        "a power tranche or tie-in that cannot be read: a bad date, an unknown module or tranche, a tie-in without its rating",
	RuleMeter:          "a facility meter that design PUE cannot use: no design draw, or no IT load to divide by",
	RuleControlsFabric: "the controls network carrying facility alarms, or a module controller, is on a switch of the data or scale-up fabric",
	RuleControlsSwitch: "controllers of modules in separate failure domains all cabled to one switch: a hidden shared dependency from the cabling, not from depends_on",
}

// part is one installed part, or a group of identical ones, for the
// uniformity and spares rules.
type part struct {
	module, moduleKind string
	kind, number       string
	firmware           map[string]string
	count              int
	rack, equipment    string // where: a rack's tray or site equipment
	slot               int
	pos                diag.Pos
}

// where says where the part is: "rack a-r01 U2", "equipment p1-plc".
func (p part) where() string {
	if p.equipment != "" {
		return "equipment " + p.equipment
	}
	return fmt.Sprintf("rack %s U%d", p.rack, p.slot)
}

// parts lists what is installed that the uniformity and spares rules
// read: the handover inventory's trays and the site's equipment.
func parts(c *Contracts) []part {
	kindOf := map[string]string{}
	for _, m := range c.Site.Modules {
		kindOf[m.ID] = m.Kind
	}
	// only what a rule reads: the kinds whose part numbers or firmware
	// must agree, and the part numbers the spares list names
	listed := map[string]bool{}
	if c.Ops != nil {
		for _, sp := range c.Ops.Spares {
			listed[sp.PartNumber] = true
		}
	}
	var out []part
	for _, h := range c.Handovers {
		for _, r := range h.Racks {
			for _, t := range r.Trays {
				if (t.PartNumber == "" && len(t.Firmware) == 0) || !(uniformKinds[t.Kind] || firmwareKinds[t.Kind] || listed[t.PartNumber]) {
					continue
				}
				out = append(out, part{module: r.Module, moduleKind: kindOf[r.Module], kind: t.Kind, number: t.PartNumber,
					firmware: t.Firmware, count: 1, rack: r.Name, slot: t.Slot, pos: t.Pos})
			}
		}
	}
	if c.Ops == nil {
		return out
	}
	for _, e := range c.Ops.Equipment {
		p := part{module: e.Module, moduleKind: kindOf[e.Module], kind: e.Kind, number: e.PartNumber, count: e.Count,
			equipment: e.ID, pos: e.Pos}
		if e.Firmware != "" {
			p.firmware = map[string]string{"": e.Firmware}
		}
		out = append(out, p)
	}
	return out
}

// uniformKinds are the parts whose part numbers must agree across
// modules (the design brief: common spares for pumps, power shelves,
// fans and optics); firmwareKinds those whose firmware must.
var (
	uniformKinds  = map[string]bool{"pump": true, "power-shelf": true, "fan": true, "optic": true}
	firmwareKinds = map[string]bool{"controller": true, "power-shelf": true}
)

// severity is the uniformity rules' severity: warnings unless the site
// makes them errors.
func (c *Contracts) uniformitySeverity() diag.Severity {
	if c.Ops != nil && c.Ops.Uniformity == "error" {
		return diag.Error
	}
	return diag.Warning
}

// variant is one value seen in a group, where and in which modules.
type variant struct {
	value   string
	modules []string
	n       int
	first   part
}

// variants groups the parts ps[idx] by a value, most common first.
func variants(ps []part, idx []int, value func(*part) string) []*variant {
	by := map[string]*variant{}
	var out []*variant
	for _, i := range idx {
		p := &ps[i]
		v := value(p)
		x := by[v]
		if x == nil {
			x = &variant{value: v, first: *p}
			by[v] = x
			out = append(out, x)
		}
		if len(x.modules) == 0 || x.modules[len(x.modules)-1] != p.module {
			if !containsStr(x.modules, p.module) {
				x.modules = append(x.modules, p.module)
			}
		}
		x.n += p.count
	}
	for _, x := range out {
		sort.Strings(x.modules)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].n != out[j].n {
			return out[i].n > out[j].n
		}
		return out[i].value < out[j].value
	})
	return out
}

func containsStr(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// describe renders variants: `"A" in ma, mb (32); "B" in mc (rack c-r03 U2)`.
func describe(vs []*variant) string {
	var parts []string
	for _, v := range vs {
		where := strings.Join(v.modules, ", ")
		if v.n == 1 {
			where += " (" + v.first.where() + ")"
		} else {
			where += fmt.Sprintf(" (%d)", v.n)
		}
		val := v.value
		if val == "" {
			val = "none recorded"
		} else {
			val = fmt.Sprintf("%q", val)
		}
		parts = append(parts, val+" in "+where)
	}
	return strings.Join(parts, "; ")
}

// checkUniformity reports part numbers and firmware that differ across
// the modules of one kind.
func checkUniformity(c *Contracts, ps []part, diags *diag.List) {
	sev := c.uniformitySeverity()
	// a group: part numbers of one part kind across one module kind
	// (comp ""), or one firmware component of one part number
	type key struct {
		firmware                       bool
		moduleKind, kind, number, comp string
	}
	groups := map[key][]int{} // indices into ps
	var keys []key
	add := func(k key, i int) {
		g, ok := groups[k]
		if !ok {
			keys = append(keys, k)
		}
		groups[k] = append(g, i)
	}
	for i := range ps {
		p := &ps[i]
		if uniformKinds[p.kind] && p.number != "" {
			add(key{moduleKind: p.moduleKind, kind: p.kind}, i)
		}
		if firmwareKinds[p.kind] {
			for comp := range p.firmware {
				add(key{firmware: true, moduleKind: p.moduleKind, kind: p.kind, number: p.number, comp: comp}, i)
			}
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		return fmt.Sprint(!a.firmware, a.moduleKind, a.kind, a.number, a.comp) < fmt.Sprint(!b.firmware, b.moduleKind, b.kind, b.number, b.comp)
	})
	for _, k := range keys {
		g := groups[k]
		if !k.firmware {
			vs := variants(ps, g, func(p *part) string { return p.number })
			if len(vs) < 2 {
				continue
			}
			odd := vs[len(vs)-1].first
			diags.Add(diag.Diagnostic{Rule: RulePartNumber, Severity: sev, Pos: odd.pos,
				Message: fmt.Sprintf("%s part numbers differ across %s modules: %s", k.kind, k.moduleKind, describe(vs)),
				Hint: fmt.Sprintf("a spare of one does not fit the other: install one %s part number in every %s module, "+
					"or hold spares of each (site.spares)", k.kind, k.moduleKind),
				Related: []diag.Related{{Pos: vs[0].first.pos, Message: fmt.Sprintf("the most common, %q, at %s", vs[0].value, vs[0].first.where())}}})
			continue
		}
		vs := variants(ps, g, func(p *part) string { return p.firmware[k.comp] })
		if len(vs) < 2 {
			continue
		}
		what := "firmware"
		if k.comp != "" {
			what = fmt.Sprintf("%s firmware", k.comp)
		}
		odd := vs[len(vs)-1].first
		diags.Add(diag.Diagnostic{Rule: RuleFirmware, Severity: sev, Pos: odd.pos,
			Message: fmt.Sprintf("%s %s %s differs across %s modules: %s", k.kind, k.number, what, k.moduleKind, describe(vs)),
			Hint: fmt.Sprintf("bring every %s module's %s to one release (the fleet's %q) so that a swapped part behaves like its neighbours, "+
				"and record it in the handover inventory", k.moduleKind, k.kind, vs[0].value),
			Related: []diag.Related{{Pos: vs[0].first.pos, Message: fmt.Sprintf("the most common, %q, at %s", vs[0].value, vs[0].first.where())}}})
	}
}

// checkSpares checks the spares list against what is installed: at least
// N spares per K installed of each pump, power shelf, fan and optic part
// number, and of every part the list names.
func checkSpares(c *Contracts, ps []part, diags *diag.List) {
	if c.Ops == nil || (c.Ops.SpareRule == nil && len(c.Ops.Spares) == 0) {
		return
	}
	sev := c.uniformitySeverity()
	installed := map[string]int{}
	kind := map[string]string{}
	first := map[string]part{}
	var numbers []string
	for _, p := range ps {
		if p.number == "" {
			continue
		}
		if _, ok := installed[p.number]; !ok {
			numbers = append(numbers, p.number)
			first[p.number] = p
		}
		installed[p.number] += p.count
		kind[p.number] = p.kind
	}
	listed := map[string]*Spare{}
	for _, s := range c.Ops.Spares {
		listed[s.PartNumber] = s
		if installed[s.PartNumber] == 0 {
			diags.Add(diag.Diagnostic{Rule: RuleSpareFits, Severity: sev, Pos: s.Pos, Path: "site.spares." + quoteLabel(s.PartNumber),
				Message: fmt.Sprintf("site.spares: %d of %q on hand, but nothing installed has that part number", s.OnHand, s.PartNumber),
				Hint:    "check the part number against the handover inventory and site.equipment, or drop the spare from the list"})
		}
	}
	sort.Strings(numbers)
	for _, pn := range numbers {
		s := listed[pn]
		rule := c.Ops.SpareRule
		if s != nil && s.Rule != nil {
			rule = s.Rule
		}
		if rule == nil || (s == nil && !uniformKinds[kind[pn]]) {
			continue
		}
		need := rule.Need(installed[pn])
		have, pos := 0, rule.Pos
		if s != nil {
			have, pos = s.OnHand, s.Pos
		}
		if have >= need {
			continue
		}
		d := diag.Diagnostic{Rule: RuleSpares, Severity: sev, Pos: pos, Path: "site.spares." + quoteLabel(pn),
			Message: fmt.Sprintf("site.spares: %d of %s %q on hand for %d installed; the rule of %d per %d asks for %d",
				have, kind[pn], pn, installed[pn], rule.Min, rule.Per, need),
			Hint:    fmt.Sprintf("order %d more and record them in site.spares.%q.on_hand", need-have, pn),
			Related: []diag.Related{{Pos: first[pn].pos, Message: "installed, e.g. at " + first[pn].where()}}}
		if s == nil {
			d.Message = fmt.Sprintf("site.spares lists no %s %q: %d installed, and the rule of %d per %d asks for %d on hand",
				kind[pn], pn, installed[pn], rule.Min, rule.Per, need)
			d.Hint = fmt.Sprintf("hold %d and add %q: {on_hand: %d} to site.spares", need, pn, need)
		}
		diags.Add(d)
	}
}
