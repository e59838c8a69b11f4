package contract

import (
	"sort"
	"strings"

	"github.com/seamdc/seam/internal/diag"
)

// RuleShared flags a hidden shared dependency.
const RuleShared = "SHARED001"

// dependency is one thing modules depend on, and who depends on it.
type dependency struct {
	what    string // "shared dependency ctl-net", "power block p1/block"
	pos     diag.Pos
	path    string
	modules map[string]bool
}

// checkShared flags things that modules in different failure domains
// depend on, unless the thing has two or more diverse paths: shared
// dependencies named in depends_on, and, derived from the relations,
// power blocks, cooling loops and single-path networks. The module that
// holds a block, loop or network is not counted as depending on it.
func checkShared(c *Contracts, idx *index, diags *diag.List) {
	for _, dep := range dependencies(c, idx) {
		domains := map[string][]string{}
		for m := range dep.modules {
			if mod := c.Site.Module(m); mod != nil && mod.FailureDomain != "" {
				domains[mod.FailureDomain] = append(domains[mod.FailureDomain], m)
			}
		}
		if len(domains) < 2 {
			continue
		}
		var parts []string
		for _, d := range keys(domains) {
			sort.Strings(domains[d])
			parts = append(parts, d+" ("+strings.Join(domains[d], ", ")+")")
		}
		diags.Errorf(RuleShared, dep.pos, dep.path, "%s: hidden shared dependency: failure domains %s all depend on %s, a single point of failure",
			dep.path, strings.Join(parts, ", "), dep.what).Hint = "give each failure domain its own, declare two or more diverse paths, or put the modules in one failure domain"
	}
}

func dependencies(c *Contracts, idx *index) []*dependency {
	var deps []*dependency
	byShared := map[string]*dependency{}
	for _, s := range c.Site.Shared {
		if s.Paths >= 2 {
			continue
		}
		d := &dependency{what: "shared " + strings.ReplaceAll(s.Kind, "_", " ") + " " + s.ID, pos: s.PathsPos, path: "site.shared." + quoteLabel(s.ID), modules: map[string]bool{}}
		byShared[s.ID] = d
		deps = append(deps, d)
	}
	for _, m := range c.Site.Modules {
		for _, ref := range m.DependsOn {
			if d, ok := byShared[ref.To]; ok {
				d.modules[m.ID] = true
			}
		}
		for _, b := range m.Blocks {
			d := &dependency{what: "power block " + b.ID, pos: b.Pos, path: b.Path, modules: map[string]bool{}}
			for _, p := range b.Powers {
				d.modules[p.To] = true
			}
			deps = append(deps, d)
		}
		for _, l := range m.Loops {
			d := &dependency{what: "cooling loop " + l.ID, pos: l.Pos, path: l.Path, modules: map[string]bool{}}
			for _, p := range l.Cools {
				d.modules[p.To] = true
			}
			deps = append(deps, d)
		}
		for _, n := range m.Networks {
			if n.Paths >= 2 {
				continue
			}
			d := &dependency{what: "single-path network " + n.ID, pos: n.Pos, path: "site.modules." + quoteLabel(m.ID) + ".networks", modules: map[string]bool{}}
			for _, s := range n.Serves {
				d.modules[s.To] = true
			}
			deps = append(deps, d)
		}
	}
	// racks tie their module to the blocks and loops they use: the
	// dependencies named by them (the last word of what)
	named := map[string][]*dependency{}
	for _, d := range deps {
		id := d.what[strings.LastIndexByte(d.what, ' ')+1:]
		named[id] = append(named[id], d)
	}
	for _, m := range c.Site.Modules {
		for _, r := range m.Racks {
			if r.CooledBy.To != "" {
				for _, d := range named[r.CooledBy.To] {
					d.modules[m.ID] = true
				}
			}
			for _, p := range r.PDUs {
				if f, ok := idx.feeds[p.Feed.To]; ok {
					for _, d := range named[f.Block.ID] {
						d.modules[m.ID] = true
					}
				}
			}
		}
	}
	return deps
}
