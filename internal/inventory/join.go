package inventory

import (
	"fmt"
	"slices"
	"strings"
)

// join matches every handover record to the contract rack it describes.
func (b *builder) join(handovers []*Handover) {
	racks := map[*Rack]*RackRecord{}
	nodes := map[string]*NodeRecord{}
	for _, h := range handovers {
		for _, rec := range h.Racks {
			r := b.resolve(h, rec.Module, rec.Name, rec.Position, rec)
			if r == nil {
				continue
			}
			if prev, ok := racks[r]; ok {
				b.diags.Errorf(RuleSlot, rec.Pos, "", "%s: rack %s is %s, which %s at %s already describes", h.File, rec.Name, r.ID, prev.Name, prev.Pos).Hint =
					"one record per rack: merge them, or fix the position"
				continue
			}
			racks[r] = rec
		}
		for _, rec := range h.Nodes {
			if prev, ok := nodes[rec.Node]; ok {
				what := "twice"
				if prev.Rack != rec.Rack || prev.Module != rec.Module {
					what = fmt.Sprintf("in two racks (%s/%s and %s/%s)", prev.Module, prev.Rack, rec.Module, rec.Rack)
				}
				b.diags.Errorf(RuleSlurmName, rec.Pos, "", "%s: node %s is listed %s (first at %s)", h.File, rec.Node, what, prev.Pos).Hint =
					"a node is in one rack, once: remove or rename one record"
				continue
			}
			nodes[rec.Node] = rec
			r := b.resolve(h, rec.Module, rec.Rack, "", nil)
			if r == nil {
				continue
			}
			b.checkNodeRecord(h, rec, r)
			b.names[r] = append(b.names[r], rec)
		}
	}
	b.asBuilt = racks
	for _, recs := range b.names {
		slices.SortFunc(recs, func(a, c *NodeRecord) int { return strings.Compare(a.Node, c.Node) })
	}
}

// resolve finds the contract rack a handover rack names: by position,
// by a name that is a rack id, or by the rack id the name ends with
// after a dash.
func (b *builder) resolve(h *Handover, module, name, position string, rec *RackRecord) *Rack {
	pos := h.pos(0)
	if rec != nil {
		pos = rec.Pos
	}
	m := b.g.Site.Module(module)
	if m == nil || m.Kind != "it" {
		var its []string
		for _, mod := range b.g.Site.Modules {
			if mod.Kind == "it" {
				its = append(its, mod.ID)
			}
		}
		b.diags.Errorf(RuleUnknownRef, pos, "", "%s: rack %s is in module %q, which is not an IT module of site %s (IT modules: %s)",
			h.File, name, module, b.g.Site.Name, strings.Join(its, ", ")).Hint = "fix the record's module"
		return nil
	}
	id := position
	if id == "" {
		id = name
		if m.Rack(id) == nil {
			if i := strings.LastIndex(name, "-"); i >= 0 {
				id = name[i+1:]
			}
		}
	}
	r := m.Rack(id)
	if r == nil {
		how := "its name"
		if position != "" {
			how = "its position"
		}
		b.diags.Errorf(RuleUnknownRef, pos, "", "%s: rack %s (%s %q) is not a rack of module %s (%s)", h.File, name, how, id, m.ID, rackRange(m)).Hint =
			`give the contract's rack id as "position", or name the rack <anything>-<rack id>`
		return nil
	}
	return r
}

func rackRange(m *Module) string {
	if len(m.Racks) == 0 {
		return "it has no racks"
	}
	first, last := m.Racks[0].ID, m.Racks[len(m.Racks)-1].ID
	if len(m.Racks) == 1 {
		return "its rack: " + strings.TrimPrefix(first, m.ID+"/")
	}
	return fmt.Sprintf("its racks: %s … %s", strings.TrimPrefix(first, m.ID+"/"), strings.TrimPrefix(last, m.ID+"/"))
}

// checkNodeRecord checks the power block and cooling loop a brief record
// names against the rack's feeds and loop.
func (b *builder) checkNodeRecord(h *Handover, rec *NodeRecord, r *Rack) {
	site := b.g.Site
	blocks := map[string]bool{}
	for _, p := range r.PDUs {
		if m, _, ok := strings.Cut(p.Feed.To, "/"); ok {
			blocks[m] = true
		}
	}
	loop, _, _ := strings.Cut(r.CooledBy.To, "/")
	check := func(field, got, kind string, want map[string]bool) {
		if got == "" || want[got] {
			return
		}
		wants := strings.Join(sortedKeys(want), ", ")
		if m := site.Module(got); m == nil || m.Kind != kind {
			b.diags.Errorf(RuleUnknownRef, rec.Pos, "", "%s: node %s: %s %q is not a %s module of site %s (rack %s is on %s)", h.File, rec.Node, field, got, kind, site.Name, r.ID, wants).Hint =
				"fix the record's " + field
			return
		}
		b.diags.Errorf(RuleWrongFeedLoop, rec.Pos, "", "%s: node %s: %s %s, but the contract's rack %s is on %s", h.File, rec.Node, field, got, r.ID, wants).Hint =
			"the as-built and the contract disagree: fix the record, or the rack's " + map[string]string{"power": "PDUs", "cooling": "cooled_by"}[kind]
	}
	check("power_block", rec.PowerBlock, "power", blocks)
	if loop != "" {
		check("cooling_loop", rec.CoolingLoop, "cooling", map[string]bool{loop: true})
	}
}
