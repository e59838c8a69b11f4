package inventory

import (
	"fmt"
	"slices"
	"strings"

	"github.com/seamdc/seam/internal/diag"
	"github.com/seamdc/seam/internal/units"
)

// Check checks the joined graph: power paths, busbars with a PSU, a
// shelf or a feed lost, cooling of liquid trays, management cabling,
// identities, slots, scale-up domains, counts and names.
func Check(g *Graph) diag.List {
	c := &checker{g: g}
	c.designs()
	c.racks()
	c.power()
	c.busbars()
	c.cooling()
	c.bmcs()
	c.identities()
	c.names()
	c.domains()
	return c.diags
}

type checker struct {
	g     *Graph
	diags diag.List
}

// label names an element for a person: its key, and a node's Slurm name.
func (c *checker) label(id ID) string {
	e := c.g.El(id)
	if e.Names != nil && e.Names.Slurm != "" && e.Names.Slurm != strings.ReplaceAll(e.Key, "/", "-") {
		return fmt.Sprintf("%s %s (%s)", e.Kind, e.Key, e.Names.Slurm)
	}
	return e.Kind.String() + " " + e.Key
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
				c.diags.Errorf(RuleSlot, t.Pos, t.Path, "%s: tray %d at U%d (%d U high) does not fit a %d U rack", t.Path, i+1, s, h, d.HeightU).Hint =
					"fix its slot, or the rack's height_u"
			}
			for u := s; u < s+h; u++ {
				if prev, ok := taken[u]; ok {
					c.diags.Errorf(RuleSlot, t.Pos, t.Path, "%s: tray %d and %s tray %d both take U%d", t.Path, i+1, prev.t.Name, prev.n, u).Hint =
						"two things cannot share a U slot: fix one of the slots"
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
				c.diags.Errorf(RuleDesignRef, r.Design.Pos, r.Path+".design", "%s.design: module %s has no rack design %q (it has: %s)",
					r.Path, m.ID, r.Design.To, strings.Join(names, ", ")).Hint = "declare it under the module's rack_designs, or fix the name"
				continue
			}
			if n := d.Count(Compute); r.Nodes > 0 && n != r.Nodes {
				c.diags.Errorf(RuleCounts, r.Pos, r.Path, "%s: %d nodes, but its design %s has %d compute trays", r.Path, r.Nodes, d.Name, n).Hint =
					"the counts and the design must agree: fix nodes, or the design"
			}
			if n := d.Parts(GPU); r.GPUs > 0 && n != r.GPUs {
				c.diags.Errorf(RuleCounts, r.Pos, r.Path, "%s: %d GPUs, but its design %s holds %d", r.Path, r.GPUs, d.Name, n).Hint =
					"the counts and the design must agree: fix gpus, or the design"
			}
			pdus := map[string]bool{}
			for _, p := range r.PDUs {
				pdus[strings.TrimPrefix(p.ID, r.ID+"/")] = true
			}
			for _, t := range d.Trays {
				for _, f := range t.Feeds {
					if !pdus[f.To] {
						c.diags.Errorf(RuleShelfFeeds, r.Pos, r.Path, "%s: its design's %s is fed by PDU %q, which the rack does not have (its PDUs: %s)",
							r.Path, t.Name, f.To, strings.Join(sortedKeys(pdus), ", ")).Hint = "name the rack's PDUs in the design's feeds, or add the PDU"
						break
					}
				}
			}
		}
	}
}

// power reports every tray that no power path reaches from a feed.
func (c *checker) power() {
	g := c.g
	powered := make([]bool, g.Len())
	var queue []ID
	for _, f := range g.OfKind(KindFeed) {
		powered[f] = true
		queue = append(queue, f)
	}
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		for _, next := range g.Out(Powers, id) {
			if !powered[next] {
				powered[next] = true
				queue = append(queue, next)
			}
		}
	}
	for i := range g.Len() {
		id := ID(i)
		if e := g.El(id); e.Kind.IsTray() && e.Kind != KindPowerShelf && !powered[id] {
			c.diags.Errorf(RuleNoPower, e.Pos, e.Key, "%s has no power path to a feed: %s", c.label(id), c.whyUnpowered(id)).Hint =
				"give the rack PDUs on the site's feeds, and its power shelves PDUs it has"
		}
	}
}

// whyUnpowered says where a tray's power path stops.
func (c *checker) whyUnpowered(id ID) string {
	g := c.g
	in := g.In(Powers, id)
	if len(in) == 0 {
		return "nothing feeds it"
	}
	for _, src := range in {
		if g.El(src).Kind == KindBusbar {
			n := 0
			for _, psu := range g.In(Powers, src) {
				if len(g.In(Powers, psu)) > 0 {
					n++
				}
			}
			if n == 0 {
				return "its busbar's PSUs are on no PDU"
			}
		}
		if g.El(src).Kind == KindPDU && len(g.In(Powers, src)) == 0 {
			return "its PDU " + g.El(src).Key + " is on no feed of the site"
		}
	}
	return "its sources are on no feed of the site"
}

// busbars checks each rack's DC busbar with one PSU, one shelf and one
// feed lost against the rack's design power.
func (c *checker) busbars() {
	g := c.g
	for _, bus := range g.OfKind(KindBusbar) {
		rack := g.Ancestor(bus, KindRack)
		r := c.rack(rack)
		load := g.El(bus).PowerW
		if r != nil && r.DesignPower.Set {
			load = Watts(r.DesignPower)
		}
		var total, biggestPSU int64
		byShelf, byFeed := map[ID]int64{}, map[ID]int64{}
		for _, psu := range g.In(Powers, bus) {
			w := g.El(psu).PowerW
			total += w
			biggestPSU = max(biggestPSU, w)
			byShelf[g.Parent(psu)] += w
			for _, pdu := range g.In(Powers, psu) {
				for _, feed := range g.In(Powers, pdu) {
					byFeed[feed] += w
				}
			}
		}
		path := g.El(rack).Key
		pos := g.El(rack).Pos
		if r != nil {
			path, pos = r.Path, r.Pos
		}
		what := "design power"
		if r == nil || !r.DesignPower.Set {
			what = "design draw"
		}
		if left := total - biggestPSU; left < load {
			c.diags.Errorf(RuleBusbarPSU, pos, path, "%s: with one PSU lost its shelves give %s, below its %s of %s", path, kw(left), what, kw(load)).Hint =
				"add PSUs or shelves, or lower the rack's design power"
		}
		var biggestShelf int64
		for _, w := range byShelf {
			biggestShelf = max(biggestShelf, w)
		}
		if left := total - biggestShelf; left < load {
			c.diags.Errorf(RuleBusbarShelf, pos, path, "%s: with one power shelf lost its shelves give %s, below its %s of %s", path, kw(left), what, kw(load)).Hint =
				"add a shelf, or lower the rack's design power"
		}
		for _, feed := range sortedIDs(g, byFeed) {
			if left := total - byFeed[feed]; left < load {
				c.diags.Errorf(RuleBusbarFeed, pos, path, "%s: with feed %s lost the shelves on its other feeds give %s, below its %s of %s",
					path, g.El(feed).Key, kw(left), what, kw(load)).Hint = "spread the shelves over the feeds so that each side alone carries the rack, or lower its design power"
			}
		}
	}
}

func (c *checker) rack(id ID) *Rack {
	if id == None {
		return nil
	}
	key := c.g.El(id).Key
	m, _, _ := strings.Cut(key, "/")
	if mod := c.g.Site.Module(m); mod != nil {
		return mod.Rack(strings.TrimPrefix(key, m+"/"))
	}
	return nil
}

func kw(w int64) string { return units.Format(float64(w)/1000, "kW") }

func sortedIDs[V any](g *Graph, m map[ID]V) []ID {
	out := make([]ID, 0, len(m))
	for id := range m {
		out = append(out, id)
	}
	slices.SortFunc(out, func(a, b ID) int { return strings.Compare(g.El(a).Key, g.El(b).Key) })
	return out
}

// cooling reports liquid-cooled trays that no loop cools.
func (c *checker) cooling() {
	g := c.g
	for i := range g.Len() {
		id := ID(i)
		e := g.El(id)
		if !e.Liquid {
			continue
		}
		cooled := false
		for _, m := range g.In(Cools, id) {
			if len(g.In(Cools, m)) > 0 {
				cooled = true
			}
		}
		if !cooled {
			c.diags.Errorf(RuleNotCooled, e.Pos, e.Key, "%s is liquid-cooled but on no loop: its rack %s has no cooled_by, or names no loop of the site",
				c.label(id), g.El(g.Ancestor(id, KindRack)).Key).Hint = `set the rack's cooled_by to a loop ("l1/loop")`
		}
	}
}

// bmcs checks that every BMC is cabled to a management switch and to no
// data switch.
func (c *checker) bmcs() {
	g := c.g
	for _, id := range g.OfKind(KindBMC) {
		e := g.El(id)
		mgmt := false
		for _, sw := range g.Out(Connects, id) {
			switch g.El(sw).Kind {
			case KindManagementSwitch:
				mgmt = true
			case KindTorSwitch:
				c.diags.Errorf(RuleBMCOnData, e.Pos, e.Key, "%s is cabled to the data network (%s): BMCs belong on the out-of-band management network",
					c.label(g.Parent(id)), g.El(sw).Key).Hint = "cable it to a management switch"
			}
		}
		if !mgmt {
			c.diags.Errorf(RuleBMCOffMgmt, e.Pos, e.Key, "the BMC of %s is not on the management network: no management switch port", c.label(g.Parent(id))).Hint =
				`give its bmc a port of the rack's management switch: "bmc": {"switch": SLOT, "port": N}`
		}
	}
}

// identities reports a serial or asset tag on two things.
func (c *checker) identities() {
	g := c.g
	serials, tags := map[string]ID{}, map[string]ID{}
	for i := range g.Len() {
		id := ID(i)
		e := g.El(id)
		if e.Identity == nil {
			continue
		}
		if s := e.Identity.Serial; s != "" {
			if prev, ok := serials[s]; ok {
				c.diags.Errorf(RuleSerial, e.Pos, e.Key, "serial %s is on %s and on %s (at %s)", s, c.label(id), c.label(prev), g.El(prev).Pos).Hint =
					"a serial names one part: one of the records is wrong"
			} else {
				serials[s] = id
			}
		}
		if t := e.Identity.AssetTag; t != "" {
			if prev, ok := tags[t]; ok {
				c.diags.Errorf(RuleAssetTag, e.Pos, e.Key, "asset tag %s is on %s and on %s (at %s)", t, c.label(id), c.label(prev), g.El(prev).Pos).Hint =
					"an asset tag names one thing: one of the records is wrong"
			} else {
				tags[t] = id
			}
		}
	}
}

// names reports two nodes with one Slurm or one Kubernetes name.
func (c *checker) names() {
	g := c.g
	slurm, kube := map[string]ID{}, map[string]ID{}
	for _, id := range g.OfKind(KindCompute) {
		n := g.El(id).Names
		if n == nil {
			continue
		}
		for _, x := range []struct {
			rule, what, name string
			seen             map[string]ID
		}{{RuleSlurmName, "Slurm", n.Slurm, slurm}, {RuleKubeName, "Kubernetes", n.Kubernetes, kube}} {
			if x.name == "" {
				continue
			}
			if prev, ok := x.seen[x.name]; ok {
				c.diags.Errorf(x.rule, g.El(id).Pos, g.El(id).Key, "%s and %s have one %s name, %s (the first at %s)", g.El(prev).Key, g.El(id).Key,
					x.what, x.name, g.El(prev).Pos).Hint = "every node needs its own name: the scheduler joins on it"
				continue
			}
			x.seen[x.name] = id
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
	// as built: a name per contract domain, and no name across modules
	byName := map[string][]ID{}
	for i := range g.Len() {
		if e := g.El(ID(i)); e.Domain != "" {
			byName[e.Domain] = append(byName[e.Domain], ID(i))
		}
	}
	named := map[ID]string{} // contract domain → the as-built name first seen
	for _, name := range sortedKeys(byName) {
		trays := byName[name]
		modules, domains := map[ID]bool{}, map[ID]bool{}
		for _, t := range trays {
			modules[g.Ancestor(t, KindModule)] = true
			for _, d := range g.Out(Connects, t) {
				if g.El(d).Kind == KindScaleUpDomain {
					domains[d] = true
				}
			}
		}
		first := g.El(trays[0])
		if len(modules) > 1 {
			var ms []string
			for _, m := range sortedIDs(g, modules) {
				ms = append(ms, g.El(m).Key)
			}
			c.diags.Errorf(RuleDomainModules, first.Pos, first.Key, "scale-up domain %s spans modules %s: a scale-up fabric cannot leave a module", name, strings.Join(ms, " and ")).Hint =
				"the as-built cabling is wrong, or the record's domain name is"
			continue
		}
		if len(domains) > 1 {
			var ds []string
			for _, d := range sortedIDs(g, domains) {
				ds = append(ds, g.El(d).Key)
			}
			c.diags.Errorf(RuleDomainDeclared, first.Pos, first.Key, "scale-up domain %s joins racks the contract keeps apart (%s): declare it under the module's scale_up_domains",
				name, strings.Join(ds, ", ")).Hint = `scale_up_domains: {"d01": {racks: ["r01", "r02"]}} for a domain of two racks`
			continue
		}
		for d := range domains {
			if prev, ok := named[d]; ok && prev != name {
				c.diags.Errorf(RuleDomainDeclared, first.Pos, first.Key, "scale-up domain %s of the contract is %s and %s in the as-built: it is one domain", g.El(d).Key, prev, name).Hint =
					"use one name for the trays of one domain"
				continue
			}
			named[d] = name
		}
	}
}
