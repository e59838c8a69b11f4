package inventory

import (
	"fmt"
	"strings"
)

// Path is how power and coolant reach an element: every parallel branch
// from it up to a source, a power block for power and a loop for
// coolant. The branches of a node on an NVL72-like rack are its busbar,
// each shelf's PSUs, that shelf's PDU, feed and block (power), and its
// manifold, each CDU and the loop (cooling).
type Path struct {
	Key     string   `json:"key"`
	Kind    string   `json:"kind"`
	Slurm   string   `json:"slurm,omitempty"`
	PowerW  int64    `json:"power_w,omitempty"`
	Power   []Branch `json:"power"`
	Cooling []Branch `json:"cooling"`
}

// Branch is one way from the element to a source, nearest hop first.
type Branch []Hop

// Hop is one element of a branch, or the parallel PSUs of one shelf on
// one PDU (Key the shelf's, Kind "psu", Count how many).
type Hop struct {
	Key   string `json:"key"`
	Kind  string `json:"kind"`
	Count int    `json:"count,omitempty"`
	// PowerW is a rating or capacity (a group's in all), a tray's
	// design draw, or what a busbar must carry (its rack's design power)
	PowerW int64  `json:"power_w,omitempty"`
	Note   string `json:"note,omitempty"`
}

// PathOf is the power and cooling path of id.
func PathOf(g *Graph, id ID) Path {
	e := &g.els[id]
	p := Path{Key: e.Key, Kind: e.Kind.String(), PowerW: e.PowerW, Power: []Branch{}, Cooling: []Branch{}}
	if e.Names != nil {
		p.Slurm = e.Names.Slurm
	}
	pw := pathWalk{g: g, ix: g.index(), rel: Powers}
	pw.walk(id, nil, &p.Power)
	cw := pathWalk{g: g, ix: g.index(), rel: Cools}
	cw.walk(id, nil, &p.Cooling)
	return p
}

type pathWalk struct {
	g   *Graph
	ix  *siteIndex
	rel Relation
}

// walk follows every source of id up, appending a branch for each way
// to an element with no source.
func (w pathWalk) walk(id ID, above Branch, out *[]Branch) {
	g := w.g
	srcs := g.In(w.rel, id)
	if len(srcs) == 0 {
		if len(above) > 0 {
			*out = append(*out, above)
		}
		return
	}
	for _, group := range w.groups(srcs) {
		hop, next := w.hop(group), group[0]
		if len(above) > 32 { // no path is this long; a cycle would be
			return
		}
		branch := append(append(Branch{}, above...), hop)
		w.walk(next, branch, out)
	}
}

// groups puts sources side by side: the PSUs of one shelf that hang on
// the same PDU are one group; every other source is its own.
func (w pathWalk) groups(srcs []ID) [][]ID {
	g := w.g
	var out [][]ID
	at := map[string]int{}
	for _, s := range srcs {
		if g.els[s].Kind != KindPSU {
			out = append(out, []ID{s})
			continue
		}
		key := fmt.Sprint(g.parent[s], g.In(w.rel, s))
		if i, ok := at[key]; ok {
			out[i] = append(out[i], s)
			continue
		}
		at[key] = len(out)
		out = append(out, []ID{s})
	}
	return out
}

func (w pathWalk) hop(group []ID) Hop {
	g := w.g
	e := &g.els[group[0]]
	if e.Kind == KindPSU {
		h := Hop{Key: g.els[g.parent[group[0]]].Key, Kind: e.Kind.String(), Count: len(group)}
		for _, id := range group {
			h.PowerW += g.els[id].PowerW
		}
		h.Note = fmt.Sprintf("%d × %s", len(group), power(e.PowerW))
		return h
	}
	h := Hop{Key: e.Key, Kind: e.Kind.String(), PowerW: e.PowerW, Note: w.note(group[0])}
	if e.Kind == KindBusbar {
		h.PowerW = busbarLoad(g, group[0])
	}
	return h
}

// busbarLoad is what a busbar must carry, in W: its rack's design
// power, or its trays' design draw when the rack states none (as
// Check's busbar rules and Blast count it).
func busbarLoad(g *Graph, bus ID) int64 {
	if r := g.Ancestor(bus, KindRack); r != None && g.els[r].PowerW > 0 {
		return g.els[r].PowerW
	}
	return g.els[bus].PowerW
}

// note says what matters of a hop: a busbar's load and PSUs, a PDU's or
// feed's breaker, a UPS, a block's rating, a CDU's capacity and pumps, a
// loop's redundancy and heat.
func (w pathWalk) note(id ID) string {
	g, ix := w.g, w.ix
	e := &g.els[id]
	var parts []string
	switch e.Kind {
	case KindBusbar:
		var psus int
		var capW int64
		for _, p := range g.In(Powers, id) {
			psus++
			capW += g.els[p].PowerW
		}
		parts = append(parts, fmt.Sprintf("%d PSUs of %s in all; its trays draw %s", psus, power(capW), power(e.PowerW)))
	case KindPDU:
		if p := ix.pdus[id]; p != nil && p.Breaker.Set {
			parts = append(parts, "breaker "+p.Breaker.Raw)
		}
	case KindFeed:
		if f := ix.feeds[id]; f != nil {
			if f.Breaker.Set {
				parts = append(parts, "breaker "+f.Breaker.Raw)
			}
			if u := f.UPS; u != nil {
				parts = append(parts, fmt.Sprintf("UPS %s for %s", u.Rating.Raw, u.RideThrough.Raw))
			}
		}
	case KindBlock:
		if b := ix.blocks[id]; b != nil {
			parts = append(parts, b.Redundancy)
		}
	case KindCDU:
		if c := ix.cdus[id]; c != nil {
			parts = append(parts, fmt.Sprintf("%d pumps, %s", len(c.Pumps), or(c.PumpRedundancy, "N")))
		}
	case KindLoop:
		if l := ix.loops[id]; l != nil {
			parts = append(parts, l.Redundancy)
		}
		parts = append(parts, power(loopHeat(g, ix, id))+" of heat")
	}
	return strings.Join(nonEmpty(parts), ", ")
}

func nonEmpty(ss []string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// loopHeat is the design heat of the racks a loop cools, in W.
func loopHeat(g *Graph, ix *siteIndex, loop ID) int64 {
	racks := map[ID]bool{}
	for _, c := range g.Out(Cools, loop) {
		if g.els[c].Kind != KindCDU {
			racks[g.Ancestor(c, KindRack)] = true
			continue
		}
		for _, m := range g.Out(Cools, c) {
			racks[g.Ancestor(m, KindRack)] = true
		}
	}
	var w int64
	for r := range racks {
		if r != None {
			w += rackHeat(g, ix, r)
		}
	}
	return w
}

// rackHeat is a rack's design heat to liquid in W: its design power ×
// its liquid fraction, as the budget counts it.
func rackHeat(g *Graph, ix *siteIndex, rack ID) int64 {
	share := 1.0
	if r := ix.racks[rack]; r != nil {
		share = r.LiquidShare()
	}
	return int64(float64(g.els[rack].PowerW)*share + 0.5)
}

// NodeGPUs is how many GPUs a node holds: its GPU parts, or, in a rack
// known by its counts only, the rack's GPUs shared by its nodes.
func NodeGPUs(g *Graph, n ID) int {
	k := 0
	for _, p := range g.Children(n) {
		if g.els[p].Kind == KindGPU {
			k++
		}
	}
	rack := g.Ancestor(n, KindRack)
	if r := g.index().racks[rack]; k == 0 && r != nil && r.DesignOf == nil && r.GPUs > 0 {
		nodes := 0
		for _, t := range g.Children(rack) {
			if g.els[t].Kind == KindCompute {
				nodes++
			}
		}
		k = r.GPUs / max(nodes, 1)
	}
	return k
}
