package alarm

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/seamdc/seam/internal/inventory"
)

// Index resolves domains against the inventory and lists their nodes:
// a loop is every node cooled through its CDUs, a CDU the nodes it
// cools, a block or a feed every node on its power path, a module or a
// rack every node it holds (a power or cooling module: every node its
// blocks or loops serve), the site every node.
//
// A domain's canonical value is its shortest unambiguous name: a
// cooling module's id for its one loop (cooling_loop=l2 for the loop
// l2/loop), the block's value and the feed's id for a feed (feed=p1/a
// for p1/block/a); the element's key is accepted too
// (cooling_loop=l2/loop).
type Index struct {
	g     *inventory.Graph
	site  string
	byDom map[Domain]inventory.ID // canonical domains
	alias map[Domain]Domain       // other spellings → canonical
	ofKey map[inventory.ID]Domain // element → its domain
	fleet int
	big   int // nodes of the largest IT module

	mu    sync.Mutex
	nodes map[Domain][]string
}

// domainKinds maps the inventory's kinds to domain kinds.
var domainKinds = map[inventory.Kind]Kind{
	inventory.KindLoop: CoolingLoop, inventory.KindCDU: CDU, inventory.KindBlock: PowerBlock, inventory.KindFeed: Feed,
	inventory.KindModule: Module, inventory.KindRack: Rack, inventory.KindSite: Site,
}

// NewIndex indexes the domains of g.
func NewIndex(g *inventory.Graph) *Index {
	ix := &Index{g: g, byDom: map[Domain]inventory.ID{}, alias: map[Domain]Domain{}, ofKey: map[inventory.ID]Domain{}, nodes: map[Domain][]string{}}
	// children of each kind under each parent, to know when a short
	// name is unambiguous
	count := map[inventory.ID]map[inventory.Kind]int{}
	for ik := range domainKinds {
		for _, id := range g.OfKind(ik) {
			p := g.Parent(id)
			if count[p] == nil {
				count[p] = map[inventory.Kind]int{}
			}
			count[p][ik]++
		}
	}
	for _, ik := range []inventory.Kind{inventory.KindSite, inventory.KindModule, inventory.KindRack, inventory.KindBlock, inventory.KindLoop, inventory.KindFeed, inventory.KindCDU} {
		for _, id := range g.OfKind(ik) {
			ix.add(id, ik, count)
		}
	}
	for _, m := range g.OfKind(inventory.KindModule) {
		ix.big = max(ix.big, len(ix.Nodes(ix.ofKey[m])))
	}
	if sites := g.OfKind(inventory.KindSite); len(sites) > 0 {
		ix.site = g.El(sites[0]).Key
		ix.fleet = len(ix.Nodes(Domain{Site, ix.site}))
	}
	return ix
}

func (ix *Index) add(id inventory.ID, ik inventory.Kind, count map[inventory.ID]map[inventory.Kind]int) {
	key := ix.g.El(id).Key
	kind := domainKinds[ik]
	value := key
	switch ik {
	case inventory.KindLoop, inventory.KindBlock:
		// the module's id when the module has only this one
		p := ix.g.Parent(id)
		if count[p][ik] == 1 {
			value = ix.g.El(p).Key
		}
	case inventory.KindFeed, inventory.KindCDU:
		// the parent's canonical value and the last segment
		parent := ix.ofKey[ix.g.Parent(id)]
		value = parent.Value + "/" + key[strings.LastIndexByte(key, '/')+1:]
	}
	d := Domain{kind, value}
	ix.byDom[d] = id
	ix.ofKey[id] = d
	if value != key {
		ix.alias[Domain{kind, key}] = d
	}
}

// Site is the site's name.
func (ix *Index) Site() string { return ix.site }

// FleetSize is how many nodes the site has.
func (ix *Index) FleetSize() int { return ix.fleet }

// LargestModule is the node count of the largest module: the storm
// guard's default.
func (ix *Index) LargestModule() int { return ix.big }

// Resolve parses s (kind=value, or an inventory key such as l2/loop)
// and returns the canonical domain, or an error naming what is known.
func (ix *Index) Resolve(s string) (Domain, error) {
	if !strings.Contains(s, "=") {
		if id, ok := ix.g.Lookup(strings.TrimSpace(s)); ok {
			if d, ok := ix.ofKey[id]; ok {
				return d, nil
			}
			return Domain{}, fmt.Errorf("domain %q: the element is a %s, not a domain (%s)", s, ix.g.El(id).Kind, kindList())
		}
	}
	d, err := ParseDomain(s)
	if err != nil {
		return Domain{}, err
	}
	return ix.Canonical(d)
}

// Canonical returns d's canonical spelling, or an error when the
// inventory has no such domain.
func (ix *Index) Canonical(d Domain) (Domain, error) {
	if _, ok := ix.byDom[d]; ok {
		return d, nil
	}
	if c, ok := ix.alias[d]; ok {
		return c, nil
	}
	return Domain{}, fmt.Errorf("unknown domain %s: the inventory has no such %s (for example %s)", d, d.Kind, strings.Join(ix.examples(d.Kind, 3), ", "))
}

func (ix *Index) examples(k Kind, n int) []string {
	var out []string
	for d := range ix.byDom {
		if d.Kind == k {
			out = append(out, d.String())
		}
	}
	slices.Sort(out)
	if len(out) > n {
		out = out[:n]
	}
	if len(out) == 0 {
		return []string{"none"}
	}
	return out
}

// OfElement returns the domain of the element with key (l2/loop →
// cooling_loop=l2), or of the nearest element above it that is one.
func (ix *Index) OfElement(key string) (Domain, bool) {
	id, ok := ix.g.Lookup(key)
	if !ok {
		return Domain{}, false
	}
	for ; id != inventory.None; id = ix.g.Parent(id) {
		if d, ok := ix.ofKey[id]; ok {
			return d, true
		}
	}
	return Domain{}, false
}

// Domains lists every canonical domain, sorted.
func (ix *Index) Domains() []Domain {
	out := make([]Domain, 0, len(ix.byDom))
	for d := range ix.byDom {
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b Domain) int { return strings.Compare(a.String(), b.String()) })
	return out
}

// Nodes lists the Slurm names of d's nodes, sorted; nil for an unknown
// domain. The slice is shared: do not change it.
func (ix *Index) Nodes(d Domain) []string {
	if c, ok := ix.alias[d]; ok {
		d = c
	}
	id, ok := ix.byDom[d]
	if !ok {
		return nil
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if n, ok := ix.nodes[d]; ok {
		return n
	}
	n := ix.reach(id)
	ix.nodes[d] = n
	return n
}

// reach walks contains, powers and cools out of id and collects the
// compute trays' Slurm names.
func (ix *Index) reach(id inventory.ID) []string {
	seen := map[inventory.ID]bool{id: true}
	var names []string
	for queue := []inventory.ID{id}; len(queue) > 0; queue = queue[1:] {
		cur := queue[0]
		if e := ix.g.El(cur); e.Kind == inventory.KindCompute {
			if e.Names != nil && e.Names.Slurm != "" {
				names = append(names, e.Names.Slurm)
			}
			continue // a node's parts hold no nodes
		}
		for _, r := range []inventory.Relation{inventory.Contains, inventory.Powers, inventory.Cools} {
			for _, next := range ix.g.Out(r, cur) {
				if !seen[next] {
					seen[next] = true
					queue = append(queue, next)
				}
			}
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}
