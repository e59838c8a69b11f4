package inventory

import (
	"fmt"
	"slices"
	"strings"

	"github.com/seamdc/seam/internal/diag"
)

// Check checks the joined graph: power paths, busbars with a PSU, a
// shelf or a feed lost, cooling of liquid trays, management cabling,
// identities, slots, scale-up domains, counts and names.
func Check(g *Graph) diag.List {
	c := &checker{g: g}
	// the BMC checks (addresses, host names) only read the graph: they
	// run beside the others, so that they add little to vet's time
	done := c.beside(func(bc *checker) {
		bc.bmcAddresses()
		bc.bmcNames()
	})
	// so do the search for serials and asset tags on two things, the
	// check's largest; they are reported in their place
	dups := c.identityDupes()
	c.designs()
	c.racks()
	c.power()
	c.busbars()
	c.cooling()
	c.bmcs()
	c.identities(dups())
	c.names()
	c.designPower()
	c.domains()
	return append(c.diags, done()...)
}

// beside runs f on a checker of its own, in a goroutine; done waits for
// it and returns its diagnostics.
func (c *checker) beside(f func(*checker)) (done func() diag.List) {
	bc := &checker{g: c.g}
	ch := make(chan struct{})
	go func() {
		defer close(ch)
		f(bc)
	}()
	return func() diag.List {
		<-ch
		return bc.diags
	}
}

type checker struct {
	g     *Graph
	diags diag.List
}

// label names an element for a person: what it is, its key, and a
// node's Slurm name.
func (c *checker) label(id ID) string {
	e := c.g.El(id)
	if e.Names != nil && e.Names.Slurm != "" && e.Names.Slurm != strings.ReplaceAll(e.Key, "/", "-") {
		return fmt.Sprintf("%s %s (%s)", kindLabel(e.Kind), e.Key, e.Names.Slurm)
	}
	return kindLabel(e.Kind) + " " + e.Key
}

// kindLabel is what a person calls an element of kind k.
func kindLabel(k Kind) string {
	switch k {
	case KindCompute:
		return "compute tray"
	case KindScaleUpSwitch:
		return "scale-up switch tray"
	case KindPowerShelf:
		return "power shelf"
	case KindTorSwitch:
		return "ToR switch"
	case KindManagementSwitch:
		return "management switch"
	case KindGPU, KindCPU, KindNIC, KindDPU, KindBMC, KindPSU, KindPDU, KindUPS, KindCDU:
		return strings.ToUpper(k.String())
	}
	return k.String()
}

// designs checks every rack design once: slots inside the rack and not
// shared, one feed per power shelf.
func (c *checker) designs() {
	for _, m := range c.g.Site.Modules {
		for _, d := range m.RackDesigns {
			c.slots(d)
			for _, t := range d.Trays {
				if t.Kind == PowerShelf && len(t.Feeds) != t.Count() {
					c.diags.Errorf(RuleShelfFeeds, t.Pos, t.Path, "%s: %d power shelves, %d feeds: name the rack PDU that feeds each shelf",
						t.Path, t.Count(), len(t.Feeds)).Hint = `feeds: ["a", "a", …, "b", "b"], one entry per slot`
				}
			}
		}
	}
}

func (c *checker) slots(d *RackDesign) {
	type use struct {
		t *TrayDesign
		n int
	}
	taken := map[int]use{}
	for _, t := range d.Trays {
		h := max(t.HeightU, 1)
		for i, s := range t.Slots {
			if d.HeightU > 0 && s+h-1 > d.HeightU {
				c.diags.Errorf(RuleSlot, t.Pos, t.Path, "%s: its tray %d at U%d (%d U high) does not fit a %d U rack", t.Path, i+1, s, h, d.HeightU).Hint =
					"fix its slot, or the rack's height_u"
			}
			clash := false
			for u := s; u < s+h; u++ {
				if prev, ok := taken[u]; ok {
					if !clash {
						at := prev.t.Slots[prev.n-1]
						c.diags.Errorf(RuleSlot, t.Pos, t.Path, "%s: its tray %d at U%d and %s tray %d at U%d both take U%d", t.Path, i+1, s, prev.t.Name, prev.n, at, u).Hint =
							"two trays cannot share a U slot: fix the slots of one of them (a slot is a tray's lowest U; height_u says how many it takes)"
					}
					clash = true
					continue
				}
				taken[u] = use{t, i + 1}
			}
		}
	}
}

// racks checks each rack against its design: the design exists, the
// counts agree, the shelves' PDUs are the rack's.
func (c *checker) racks() {
	for _, m := range c.g.Site.Modules {
		for _, r := range m.Racks {
			if r.Design.To == "" {
				continue
			}
			d := r.DesignOf
			if d == nil {
				var names []string
				for _, rd := range m.RackDesigns {
					names = append(names, rd.Name)
				}
				has := strings.Join(names, ", ")
				if has == "" {
					has = "none"
				}
				c.diags.Errorf(RuleDesignRef, r.Design.Pos, r.Path+".design", "%s.design: module %s has no rack design %q (its rack designs: %s)",
					r.Path, m.ID, r.Design.To, has).Hint = didYouMeanOr(r.Design.To, names, "declare it under the module's rack_designs, or fix the name")
				continue
			}
			var says, has, fix []string
			if n := d.Count(Compute); r.Nodes > 0 && n != r.Nodes {
				says, has, fix = append(says, fmt.Sprintf("%d nodes", r.Nodes)), append(has, fmt.Sprintf("%d compute trays", n)), append(fix, "nodes")
			}
			if n := d.Parts(GPU); r.GPUs > 0 && n != r.GPUs {
				says, has, fix = append(says, fmt.Sprintf("%d GPUs", r.GPUs)), append(has, fmt.Sprintf("%d GPUs", n)), append(fix, "gpus")
			}
			if len(says) > 0 {
				c.diags.Errorf(RuleCounts, firstValid(r.Design.Pos, r.Pos), r.Path, "%s: the rack says %s, but its design %s has %s", r.Path, strings.Join(says, " and "), d.Name, strings.Join(has, " and ")).Hint =
					"the counts and the design must agree: fix " + strings.Join(fix, " and ") + ", or the design"
			}
			pdus := map[string]bool{}
			for _, p := range r.PDUs {
				pdus[strings.TrimPrefix(p.ID, r.ID+"/")] = true
			}
			if len(pdus) == 0 {
				continue // INV002 reports a rack without PDUs
			}
			for _, t := range d.Trays {
				for i, f := range t.Feeds {
					if !pdus[f.To] {
						slot := ""
						if i < len(t.Slots) {
							slot = fmt.Sprintf(" at U%d", t.Slots[i])
						}
						d := c.diags.Errorf(RuleShelfFeeds, f.Pos, r.Path, "%s: its design's %s tray %d%s is fed by PDU %q, which the rack does not have (its PDUs: %s)",
							r.Path, t.Name, i+1, slot, f.To, strings.Join(sortedKeys(pdus), ", "))
						d.Hint = didYouMeanOr(f.To, sortedKeys(pdus), "name the rack's PDUs in the design's feeds, or give the rack the PDU")
						d.Related = []diag.Related{{Pos: firstValid(r.Design.Pos, r.Pos), Message: "rack " + r.ID + ", which names design " + r.Design.To}}
						break
					}
				}
			}
		}
	}
}

func sortedIDs[V any](g *Graph, m map[ID]V) []ID {
	out := make([]ID, 0, len(m))
	for id := range m {
		out = append(out, id)
	}
	slices.SortFunc(out, func(a, b ID) int { return strings.Compare(g.El(a).Key, g.El(b).Key) })
	return out
}

// cooling reports, per rack, liquid-cooled trays that no loop cools. A
// cooled_by naming an unknown loop is REF003's.
func (c *checker) cooling() {
	g := c.g
	for _, m := range g.Site.Modules {
		for _, r := range m.Racks {
			rid, ok := g.Lookup(r.ID)
			if !ok {
				continue
			}
			var warm []ID
			for _, t := range g.Children(rid) {
				e := g.El(t)
				if !e.Liquid {
					continue
				}
				cooled := false
				for _, mf := range g.In(Cools, t) {
					if len(g.In(Cools, mf)) > 0 {
						cooled = true
					}
				}
				if !cooled {
					warm = append(warm, t)
				}
			}
			if len(warm) == 0 {
				continue
			}
			pos, why, hint := r.Pos, "the rack has no cooled_by", `set the rack's cooled_by to the loop that feeds its manifold: cooled_by: "l1/loop"`
			if r.CooledBy.To != "" {
				loop, ok := g.Lookup(r.CooledBy.To)
				if !ok || g.El(loop).Kind != KindLoop {
					continue // REF003 reports the unknown loop
				}
				pos, why, hint = g.El(loop).Pos, "its loop "+r.CooledBy.To+" has no CDUs", "give the loop its CDUs"
			}
			what := c.trays(warm, "is", "are")
			c.diags.Errorf(RuleNotCooled, pos, r.Path, "%s: %s liquid-cooled but on no cooling loop: %s", r.Path, what, why).Hint = hint
		}
	}
}

// bmcs checks that every BMC is cabled to a management switch and to no
// data switch. A rack whose design has no management switch is reported
// once, at the design.
func (c *checker) bmcs() {
	g := c.g
	for _, m := range g.Site.Modules {
		for _, r := range m.Racks {
			rid, ok := g.Lookup(r.ID)
			if !ok {
				continue
			}
			var bmcs []ID
			var mgmts []string
			for _, t := range g.Children(rid) {
				if g.El(t).Kind == KindManagementSwitch {
					mgmts = append(mgmts, fmt.Sprintf("%s at U%d", g.El(t).Key[len(r.ID)+1:], g.El(t).Slot))
				}
				bmcs = append(bmcs, g.Out(ManagedBy, t)...)
			}
			if len(bmcs) == 0 {
				continue
			}
			if len(mgmts) == 0 {
				pos, name := r.Pos, "its trays"
				if d := r.DesignOf; d != nil {
					pos, name = d.Pos, "its design "+d.Name
				}
				c.diags.Errorf(RuleBMCOffMgmt, pos, r.Path, "%s: %s %s no management switch: the %d BMCs of its trays are on no management network",
					r.Path, name, map[bool]string{true: "has", false: "have"}[r.DesignOf != nil], len(bmcs)).Hint =
					`add a management switch to the rack design: mgmt: {kind: "management-switch", slots: [46]}`
				continue
			}
			for _, id := range bmcs {
				c.bmc(id, mgmts)
			}
		}
	}
}

func (c *checker) bmc(id ID, mgmts []string) {
	g := c.g
	e := g.El(id)
	mgmt, data := false, false
	for _, sw := range g.Out(Connects, id) {
		switch g.El(sw).Kind {
		case KindManagementSwitch:
			mgmt = true
		case KindTorSwitch:
			data = true
			c.diags.Errorf(RuleBMCOnData, e.Pos, e.Key, "the BMC of %s is cabled to the data network (ToR switch %s at U%d): BMCs belong on the out-of-band management network",
				c.label(g.Parent(id)), g.El(sw).Key, g.El(sw).Slot).Hint = fmt.Sprintf(`cable it to the rack's management switch (%s): "bmc": {"switch": <its U>, "port": N}`, strings.Join(mgmts, ", "))
		}
	}
	if !mgmt && !data {
		c.diags.Errorf(RuleBMCOffMgmt, e.Pos, e.Key, "the BMC of %s is on no management network: its record cables it to no management switch (the rack's: %s)",
			c.label(g.Parent(id)), strings.Join(mgmts, ", ")).Hint = `give the tray's bmc the management switch's U and its port: "bmc": {"switch": 46, "port": N}`
	}
}

// dataCabling reports a node whose data NICs are cabled to a management
// switch (INV008's mirror): blast radius would take the management
// switch for its data path.
func (c *checker) dataCabling(id ID) {
	g := c.g
	for _, sw := range g.Out(Connects, id) {
		if g.El(sw).Kind != KindManagementSwitch {
			continue
		}
		var tors []string
		rack := g.Parent(id)
		for _, t := range g.Children(rack) {
			if g.El(t).Kind == KindTorSwitch {
				tors = append(tors, fmt.Sprintf("%s at U%d", g.El(t).Key[len(g.El(rack).Key)+1:], g.El(t).Slot))
			}
		}
		hint := `cable them to one of the rack's ToR switches: "data": {"switch": <its U>, "port": N}`
		if len(tors) > 0 {
			hint = fmt.Sprintf(`cable them to one of the rack's ToR switches (%s): "data": {"switch": <its U>, "port": N}`, strings.Join(tors, ", "))
		}
		e := g.El(id)
		c.diags.Errorf(RuleDataOnMgmt, e.Pos, e.Key, "the data NICs of %s are cabled to the management network (management switch %s at U%d): a node's data belongs on the ToR switches, and blast radius would take the management switch for its data path",
			c.label(id), g.El(sw).Key, g.El(sw).Slot).Hint = hint
	}
}

// designPower reports a rack whose design power is below the design draw
// of its trays (spares draw none): the power rules would size its
// busbar, its feeds and its block for less than it draws.
func (c *checker) designPower() {
	g := c.g
	for _, m := range g.Site.Modules {
		for _, r := range m.Racks {
			if r.DesignOf == nil || !r.DesignPower.Set {
				continue
			}
			rid, ok := g.Lookup(r.ID)
			if !ok {
				continue
			}
			var draw int64
			for _, t := range g.Children(rid) {
				if e := g.El(t); e.Kind.IsTray() && e.Kind != KindPowerShelf {
					draw += e.PowerW
				}
			}
			want := Watts(r.DesignPower)
			if draw <= want {
				continue
			}
			var groups []string
			for _, t := range r.DesignOf.Trays {
				if t.Kind != PowerShelf && t.Power.Set {
					groups = append(groups, fmt.Sprintf("%d %s × %s", t.Count(), t.Name, t.Power.Raw))
				}
			}
			pos := firstValid(r.DesignPower.Pos, r.Pos)
			d := c.diags.Errorf(RuleDesignPower, pos, r.Path, "%s: its design power of %s is below the design draw of its trays, %s (%s): the busbar, feed and block checks would size for less than it draws",
				r.Path, kw(want), kw(draw), strings.Join(groups, ", "))
			d.Hint = "raise the rack's design_power to at least its trays' draw, or fix the design's tray power"
			d.Related = []diag.Related{{Pos: r.DesignOf.Pos, Message: "its design " + r.DesignOf.Name}}
		}
	}
}

// domains checks declared scale-up domains (racks of their own module,
// each in one domain) and the as-built's domain names (one per domain,
// within a module).
func (c *checker) domains() {
	g := c.g
	for _, m := range g.Site.Modules {
		in := map[string]string{}
		for _, d := range m.ScaleUp {
			for _, r := range d.Racks {
				switch {
				case strings.Contains(r.To, "/"):
					c.diags.Errorf(RuleDomainModules, r.Pos, d.Path, "%s: rack %s is in another module: a scale-up domain cannot span modules", d.Path, r.To).Hint =
						"a scale-up fabric stays inside one module: declare the domain in one module's racks only"
				case m.Rack(r.To) == nil:
					c.diags.Errorf(RuleDomainDeclared, r.Pos, d.Path, "%s: module %s has no rack %q (%s)", d.Path, m.ID, r.To, rackRange(m)).Hint = "fix the rack id"
				case in[r.To] != "":
					c.diags.Errorf(RuleDomainDeclared, r.Pos, d.Path, "%s: rack %s is in domain %s already", d.Path, r.To, in[r.To]).Hint = "a rack is in one scale-up domain"
				default:
					in[r.To] = d.ID
				}
			}
		}
	}
	// as built: a name per contract domain, and no name across modules.
	// A finding is at the first tray that breaks the rule: the first of
	// the second module, domain or name.
	byName := map[string][]ID{}
	for i := range g.Len() {
		if e := g.El(ID(i)); e.Domain != "" {
			byName[e.Domain] = append(byName[e.Domain], ID(i))
		}
	}
	// a contract domain's names as built: the first, and the others
	// (rare: only then is a map per domain made)
	named, more := map[ID]string{}, map[ID][]string{}
	count := func(d ID, name string, trays []ID) int {
		n := 0
		for _, t := range trays {
			if slices.Contains(g.Out(Connects, t), d) {
				n++
			}
		}
		return n
	}
	for _, name := range sortedKeys(byName) {
		trays := byName[name]
		var modules, domains []ID
		firstIn := map[ID]ID{} // module or domain → its first tray of this name
		for _, t := range trays {
			if m := g.Ancestor(t, KindModule); firstIn[m] == 0 && !slices.Contains(modules, m) {
				modules = append(modules, m)
				firstIn[m] = t
			}
			for _, d := range g.Out(Connects, t) {
				if g.El(d).Kind == KindScaleUpDomain && !slices.Contains(domains, d) {
					domains = append(domains, d)
					firstIn[d] = t
				}
			}
		}
		if len(modules) > 1 {
			at := g.El(firstIn[modules[1]])
			c.diags.Errorf(RuleDomainModules, at.Pos, at.Key, "%s names scale-up domain %s, which is in module %s too (%s): a scale-up fabric cannot leave a module",
				c.label(firstIn[modules[1]]), name, g.El(modules[0]).Key, g.El(trays[0]).Key).Hint =
				"the record's scale_up_domain is wrong, or the cabling is: fix the one that is"
			continue
		}
		if len(domains) > 1 {
			// the domain most of the name's trays are in is its home: the
			// trays elsewhere are out of place
			n := map[ID]int{}
			for _, d := range domains {
				n[d] = count(d, name, trays)
			}
			slices.SortStableFunc(domains, func(a, b ID) int { return n[b] - n[a] })
			for _, d := range domains[1:] {
				at := g.El(firstIn[d])
				c.diags.Errorf(RuleDomainDeclared, at.Pos, at.Key, "%s names scale-up domain %s, as %s does: it joins %s and %s, which the contract keeps apart",
					c.label(firstIn[d]), name, g.El(firstIn[domains[0]]).Key, c.domainLabel(d), c.domainLabel(domains[0])).Hint =
					`fix the record's scale_up_domain, or declare the domain in the IT module: scale_up_domains: {"d01": {racks: ["r01", "r02"]}}`
			}
			continue
		}
		for _, d := range domains {
			if _, ok := named[d]; ok {
				more[d] = append(more[d], name)
				continue
			}
			named[d] = name
		}
	}
	// a domain its trays give two names: the name most of them give is
	// its name, and each tray that gives another is out of place
	for _, d := range sortedIDs(g, more) {
		byN := map[string][]ID{named[d]: byName[named[d]]}
		for _, name := range more[d] {
			byN[name] = byName[name]
		}
		names := sortedKeys(byN)
		slices.SortStableFunc(names, func(a, b string) int { return len(byN[b]) - len(byN[a]) })
		for _, name := range names[1:] {
			at := byN[name][0]
			c.diags.Errorf(RuleDomainDeclared, g.El(at).Pos, g.El(at).Key, "%s names scale-up domain %s, but %d other trays of %s name it %s: it is one domain",
				c.label(at), name, len(byN[names[0]]), c.domainLabel(d), names[0]).Hint = "use one name for the trays of one domain: fix this record's scale_up_domain"
		}
	}
}

// domainLabel names a scale-up domain of the graph for a person: a
// rack's own ("the domain of rack ma/r01") or a declared one.
func (c *checker) domainLabel(id ID) string {
	e := c.g.El(id)
	if p := c.g.Parent(id); p != None && c.g.El(p).Kind == KindRack {
		return "the domain of rack " + c.g.El(p).Key
	}
	return "declared domain " + e.Key
}

func firstValid(ps ...diag.Pos) diag.Pos {
	for _, p := range ps {
		if p.IsValid() {
			return p
		}
	}
	return diag.Pos{}
}
