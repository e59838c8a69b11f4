package inventory

import (
	"fmt"
	"slices"
	"strings"
)

// Groupings of nodes: what drains and topology ask for.
const (
	ByDomain     = "domain"     // the failure domain of the node's IT module
	ByBlock      = "block"      // each power block on the node's power path
	ByFeed       = "feed"       // each feed on the node's power path
	ByLoop       = "loop"       // each cooling loop on the node's cooling path
	ByRack       = "rack"       // the node's rack
	ByScaleUp    = "scale-up"   // the node's scale-up domain
	ByGeneration = "generation" // the hardware generation of its IT module
)

// Groupings lists the groupings NodesBy knows.
var Groupings = []string{ByDomain, ByBlock, ByFeed, ByLoop, ByRack, ByScaleUp, ByGeneration}

// NoGroup is the group of nodes that have none of what they are grouped
// by: no loop (air-cooled), no scale-up domain, no generation.
const NoGroup = "none"

// Group is the nodes that share one failure domain, block, feed, loop,
// rack, scale-up domain or generation.
type Group struct {
	Key   string // the domain's name, the element's key, or NoGroup
	Nodes []ID   // sorted by key
}

// NodesBy groups every node (compute tray) by what by names, groups
// sorted by key. A node is in one group per element on its paths, so
// by block, feed or loop a node on two feeds is in both groups; by
// domain, rack, scale-up domain and generation it is in one.
func NodesBy(g *Graph, by string) ([]Group, error) {
	var keys func(ID) []string
	ix := g.index()
	switch by {
	case ByDomain:
		keys = func(n ID) []string { return []string{or(ix.moduleOf(g, n).FailureDomain, NoGroup)} }
	case ByGeneration:
		keys = func(n ID) []string { return []string{or(ix.moduleOf(g, n).Generation, NoGroup)} }
	case ByBlock, ByFeed:
		kind := KindFeed
		if by == ByBlock {
			kind = KindBlock
		}
		keys = func(n ID) []string { return g.keys(upstream(g, Powers, n, kind)) }
	case ByLoop:
		keys = func(n ID) []string { return g.keys(upstream(g, Cools, n, KindLoop)) }
	case ByRack:
		keys = func(n ID) []string { return g.keys([]ID{g.Ancestor(n, KindRack)}) }
	case ByScaleUp:
		keys = func(n ID) []string { return g.keys(outOf(g, Connects, n, KindScaleUpDomain)) }
	default:
		return nil, fmt.Errorf("nodes by %q: want one of %s", by, strings.Join(Groupings, ", "))
	}
	groups := map[string][]ID{}
	for _, n := range g.OfKind(KindCompute) {
		for _, k := range keys(n) {
			groups[k] = append(groups[k], n)
		}
	}
	out := make([]Group, 0, len(groups))
	for _, k := range sortedKeys(groups) {
		nodes := groups[k]
		slices.SortFunc(nodes, g.byKeyOrder)
		out = append(out, Group{Key: k, Nodes: nodes})
	}
	return out, nil
}

func or(s, dflt string) string {
	if s == "" {
		return dflt
	}
	return s
}

// keys are the elements' keys, or NoGroup for none.
func (g *Graph) keys(ids []ID) []string {
	var out []string
	for _, id := range ids {
		if id != None {
			out = append(out, g.els[id].Key)
		}
	}
	if len(out) == 0 {
		return []string{NoGroup}
	}
	return out
}

func (g *Graph) byKeyOrder(a, b ID) int { return strings.Compare(g.els[a].Key, g.els[b].Key) }

// upstream lists the elements of kind that r leads from to id, through
// any number of steps, sorted by key.
func upstream(g *Graph, r Relation, id ID, kind Kind) []ID {
	seen := map[ID]bool{id: true}
	var out []ID
	for queue := []ID{id}; len(queue) > 0; queue = queue[1:] {
		for _, src := range g.In(r, queue[0]) {
			if seen[src] {
				continue
			}
			seen[src] = true
			if g.els[src].Kind == kind {
				out = append(out, src)
			}
			queue = append(queue, src)
		}
	}
	slices.SortFunc(out, g.byKeyOrder)
	return out
}

// outOf lists the elements of kind that r leads to from id.
func outOf(g *Graph, r Relation, id ID, kind Kind) []ID {
	var out []ID
	for _, to := range g.Out(r, id) {
		if g.els[to].Kind == kind {
			out = append(out, to)
		}
	}
	return out
}

// inOf lists the elements of kind that r leads from to id.
func inOf(g *Graph, r Relation, id ID, kind Kind) []ID {
	var out []ID
	for _, from := range g.In(r, id) {
		if g.els[from].Kind == kind {
			out = append(out, from)
		}
	}
	return out
}

// siteIndex finds the contract's records of the graph's elements.
type siteIndex struct {
	modules map[ID]*Module
	racks   map[ID]*Rack
	pdus    map[ID]*PDU
	blocks  map[ID]*Block
	feeds   map[ID]*Feed
	loops   map[ID]*Loop
	cdus    map[ID]*CDU
}

// moduleOf is the contract's module that holds id (an empty one when
// there is none).
func (ix *siteIndex) moduleOf(g *Graph, id ID) *Module {
	if m := ix.modules[g.Ancestor(id, KindModule)]; m != nil {
		return m
	}
	return &Module{}
}

// index is the graph's site index, built on first use.
func (g *Graph) index() *siteIndex {
	g.indexOnce.Do(func() {
		ix := &siteIndex{modules: map[ID]*Module{}, racks: map[ID]*Rack{}, pdus: map[ID]*PDU{}, blocks: map[ID]*Block{}, feeds: map[ID]*Feed{},
			loops: map[ID]*Loop{}, cdus: map[ID]*CDU{}}
		put := func(key string, f func(ID)) {
			if id, ok := g.Lookup(key); ok {
				f(id)
			}
		}
		if g.Site != nil {
			for _, m := range g.Site.Modules {
				put(m.ID, func(id ID) { ix.modules[id] = m })
				for _, r := range m.Racks {
					put(r.ID, func(id ID) { ix.racks[id] = r })
					for _, p := range r.PDUs {
						put(p.ID, func(id ID) { ix.pdus[id] = p })
					}
				}
				for _, b := range m.Blocks {
					put(b.ID, func(id ID) { ix.blocks[id] = b })
					for _, f := range b.Feeds {
						put(f.ID, func(id ID) { ix.feeds[id] = f })
					}
				}
				for _, l := range m.Loops {
					put(l.ID, func(id ID) { ix.loops[id] = l })
					for _, c := range l.CDUs {
						put(c.ID, func(id ID) { ix.cdus[id] = c })
					}
				}
			}
		}
		g.ix = ix
	})
	return g.ix
}
