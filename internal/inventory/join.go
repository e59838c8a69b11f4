package inventory

import (
	"fmt"
	"slices"
	"strings"

	"github.com/seamdc/seam/internal/diag"
	"github.com/seamdc/seam/internal/topology/names"
)

// join matches every handover record to the contract rack it describes.
func (b *builder) join(handovers []*Handover) {
	racks := map[*Rack]*RackRecord{}
	nodes := map[string]*NodeRecord{}
	checked := map[string]bool{} // rack names whose switch name is checked
	for _, h := range handovers {
		if h == nil || !b.sameSite(h) {
			continue
		}
		for _, rec := range h.Racks {
			if rec == nil || rec.Module == "" || rec.Name == "" {
				continue // the reader reported it
			}
			r := b.resolve(rec.Module, rec.Name, rec.Position, rec.Pos, "rack "+rec.Name)
			if r == nil {
				continue
			}
			if prev, ok := racks[r]; ok {
				b.diags.Errorf(RuleSlot, rec.Pos, "", "rack %s is rack %s of the contract, which rack %s at %s describes already: two records for one rack position",
					rec.Name, r.ID, prev.Name, prev.Pos).Hint = "one record per rack: merge the two, or fix the position of one"
				continue
			}
			racks[r] = rec
			b.switchName(rec.Name, rec.Pos, checked)
		}
		for _, rec := range h.Nodes {
			if rec == nil || rec.Node == "" || rec.Module == "" || rec.Rack == "" {
				b.partial[h] = true // the reader reported it
				continue
			}
			if prev, ok := nodes[rec.Node]; ok {
				what := "twice"
				if prev.Rack != rec.Rack || prev.Module != rec.Module {
					what = fmt.Sprintf("in two racks (%s/%s, and %s/%s here)", prev.Module, prev.Rack, rec.Module, rec.Rack)
				}
				b.diags.Errorf(RuleSlurmName, rec.Pos, "", "node %s is listed %s: the first record is at %s", rec.Node, what, prev.Pos).Hint =
					"a node is in one rack, once: remove this record, or give it its own name"
				continue
			}
			nodes[rec.Node] = rec
			r := b.resolve(rec.Module, rec.Rack, "", rec.Pos, "node "+rec.Node)
			if r == nil {
				b.partial[h] = true
				continue
			}
			b.checkNodeRecord(rec, r)
			b.switchName(rec.Rack, rec.Pos, checked)
			b.names[r] = append(b.names[r], rec)
		}
	}
	b.asBuilt = racks
	for _, recs := range b.names {
		slices.SortFunc(recs, func(a, c *NodeRecord) int { return strings.Compare(a.Node, c.Node) })
	}
}

// switchName reports a handover rack name that Slurm cannot take as the
// name of the rack's leaf switch (contractc topology names leaves after
// racks and refuses it, in these words), once per name.
func (b *builder) switchName(name string, pos diag.Pos, checked map[string]bool) {
	if checked[name] {
		return
	}
	checked[name] = true
	if err := names.Switch(name); err != nil {
		b.diags.Errorf(RuleNodeName, pos, "", "rack %s: %v", name, err).Hint =
			"rename the rack in the handover: contractc topology makes it a leaf switch of topology.conf (letters, digits, '-', '_' and '.', at most 64 characters)"
	}
}

// sameSite reports whether a handover file is of the contract's site,
// reporting one of another site: its records are not joined.
func (b *builder) sameSite(h *Handover) bool {
	if h.Site == "" || h.Site == b.g.Site.Name {
		return true
	}
	pos := h.sitePos
	if !pos.IsValid() {
		pos = h.pos(0)
	}
	b.diags.Errorf(RuleUnknownRef, pos, "", "the file is the handover inventory of site %q, but the contract's site is %q: none of its racks is joined", h.Site, b.g.Site.Name).Hint =
		`fix the file's "site", or give vet the handover inventory of this site`
	return false
}

// resolve finds the contract rack a handover record names (what names
// the record for a message): by position, by a name that is a rack id,
// or by the rack id the name ends with after a dash.
func (b *builder) resolve(module, name, position string, pos diag.Pos, what string) *Rack {
	site := b.g.Site
	m := site.Module(module)
	if m == nil || m.Kind != "it" {
		var its []string
		for _, mod := range site.Modules {
			if mod.Kind == "it" {
				its = append(its, mod.ID)
			}
		}
		is := "not a module of site " + site.Name
		if m != nil {
			is = fmt.Sprintf("a %s module, not an IT module", m.Kind)
		}
		hint := didYouMean(module, its)
		if hint == "" {
			hint = "fix the record's module"
		}
		b.diags.Errorf(RuleUnknownRef, pos, "", "%s: module %q is %s (its IT modules: %s)", what, module, is, strings.Join(its, ", ")).Hint = hint
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
		how := "rack"
		switch {
		case position != "":
			how = "position"
		case id != name:
			how = fmt.Sprintf("rack %q, read as position", name)
		}
		b.diags.Errorf(RuleUnknownRef, pos, "", "%s: %s %q is not a rack of module %s (%s)", what, how, id, m.ID, rackRange(m)).Hint =
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
func (b *builder) checkNodeRecord(rec *NodeRecord, r *Rack) {
	site := b.g.Site
	blocks := map[string]bool{}
	var feeds []string
	for _, p := range r.PDUs {
		if m, _, ok := strings.Cut(p.Feed.To, "/"); ok {
			blocks[m] = true
			feeds = append(feeds, fmt.Sprintf("PDU %s on %s", strings.TrimPrefix(p.ID, r.ID+"/"), p.Feed.To))
		}
	}
	loop, _, _ := strings.Cut(r.CooledBy.To, "/")
	check := func(field, got, kind string, want map[string]bool, detail string) {
		if got == "" || want[got] {
			return
		}
		wants := strings.Join(sortedKeys(want), " and ")
		if len(want) == 0 {
			wants = "none"
		}
		if m := site.Module(got); m == nil || m.Kind != kind {
			var known []string
			for _, m := range site.Modules {
				if m.Kind == kind {
					known = append(known, m.ID)
				}
			}
			hint := didYouMean(got, known)
			if hint == "" {
				hint = "fix the record's " + field
			}
			b.diags.Errorf(RuleUnknownRef, rec.Pos, "", "node %s: %s %q is not a %s module of site %s (rack %s is on %s)", rec.Node, field, got, kind, site.Name, r.ID, wants).Hint = hint
			return
		}
		b.diags.Errorf(RuleWrongFeedLoop, rec.Pos, "", "node %s: %s %q, but the contract's rack %s is on %s (%s)", rec.Node, field, got, r.ID, wants, detail).Hint =
			"the as-built and the contract disagree: fix the record, or the rack's " + map[string]string{"power": "pdus", "cooling": "cooled_by"}[kind] + " in the contract"
	}
	check("power_block", rec.PowerBlock, "power", blocks, strings.Join(feeds, ", "))
	if loop != "" {
		check("cooling_loop", rec.CoolingLoop, "cooling", map[string]bool{loop: true}, "cooled_by "+r.CooledBy.To)
	}
}
