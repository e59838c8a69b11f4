package inventory

import (
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Blast is the blast radius of elements failing together: what stops
// and what runs on with less redundancy, over power, cooling and the
// networks at once. The site is taken to run as designed before the
// failure (contractc vet checks that it does): Blast evaluates only what
// the failure reaches, in steady state (a UPS's minutes of ride-through
// are over). The rules apply in this order (power, then cooling, then
// the networks; none feeds back into an earlier one):
//
// Failure. A failed element fails everything it contains. A failed part
// of a tray stops the tray, except a PSU (the power rules take it) and
// a BMC (the tray runs unmanaged): a node runs whole or not at all, as
// a drain takes it.
//
// Power flows along powers from the blocks: an element is powered while
// any of its sources is (a feed by its block, a rack PDU by its feed, a
// PSU by its PDU, a dual-corded switch by either PDU). A busbar carries
// its trays only while its powered PSUs' ratings add up to at least the
// rack's design power (its trays' design draw when the rack states
// none), as Check's busbar rules count: below that it is overloaded and
// every tray on it stops.
//
// Cooling flows along cools: a CDU runs while its loop does and it keeps
// the pumps its pump redundancy needs (N+1: all but one; 2N: half; N:
// all; at least one). A loop that lost a CDU cools its liquid trays
// while its running CDUs' capacity is at least the heat of its racks
// that still run a liquid tray after the power rules (design power ×
// liquid fraction, as the budget counts it); below that, or with the
// loop itself failed, every liquid tray on it stops. A failed manifold
// stops its rack's liquid trays.
//
// Networks: a node whose every ToR switch is out has no data path and
// stops; a scale-up domain that is failed, or has every switch tray out,
// stops its nodes (their GPUs cannot run without the fabric); with some
// switch trays out it is degraded. A management switch out leaves the
// BMCs on it unreachable: their trays run unmanaged (degraded).
//
// Reported, sorted by key: the nodes stopped, each with what it lost
// and the element it stops with (Causes says why that element is lost),
// their GPUs; a rack, a scale-up domain or a module when all its nodes
// stop. What runs on with less is degraded, with the reason: a block
// with a feed out, a rack with a PDU out, a busbar with PSUs or shelves
// out (still carrying), a loop with a CDU out (still cooling), a CDU
// with a pump out, a feed whose UPS failed, a scale-up domain with
// switch trays or nodes out, a ToR out whose nodes run on other ToRs, a
// management switch out, a tray whose BMC failed, a module whose
// controls network or shared dependency failed. What stops is not also
// degraded.
func Blast(g *Graph, failed ...ID) Impact {
	b := &blaster{g: g, ix: g.index(), s: getScratch(g.Len()), roots: map[ID]bool{},
		pending: map[ID]bool{}, busbars: map[ID]bool{}, loops: map[ID]loopLoad{}, degraded: map[ID][]string{}}
	defer b.s.release()
	b.fail(failed)
	b.power()
	b.cooling()
	b.network()
	return b.report()
}

// Impact is what a failure stops and what it degrades, sorted by key.
type Impact struct {
	Failed   []string      `json:"failed"`
	Nodes    []StoppedNode `json:"stopped_nodes"`
	GPUs     int           `json:"stopped_gpus"`
	Racks    []string      `json:"stopped_racks"`
	Domains  []string      `json:"stopped_scale_up_domains"`
	Modules  []string      `json:"stopped_modules"`
	Causes   []Item        `json:"causes"`   // why the nodes stop: the element each stops with
	Degraded []Item        `json:"degraded"` // what runs on with less redundancy, capacity or reach
}

// Stops reports whether the failure stops any node.
func (i Impact) Stops() bool { return len(i.Nodes) > 0 }

// StoppedNode is a node a failure stops.
type StoppedNode struct {
	Key   string `json:"key"`
	Slurm string `json:"slurm,omitempty"`
	GPUs  int    `json:"gpus"`
	// Why is what it lost: failed (it, a part of it, or what holds it),
	// power, cooling, data (its ToR switches), scale-up (its domain's
	// switch trays).
	Why string `json:"why"`
	// Cause is the element whose loss stops it (a busbar, a loop, a ToR
	// switch, a scale-up domain, a failed element); Impact.Causes says
	// why that element is lost.
	Cause string `json:"cause"`
}

// Item is an element and what happens to it, in words.
type Item struct {
	Key    string `json:"key"`
	Kind   string `json:"kind"`
	Reason string `json:"reason"`
	Nodes  int    `json:"nodes,omitempty"` // causes: the nodes it stops
}

// why an element is out; running is zero.
type why uint8

const (
	running why = iota
	failedWhy
	noPower
	noCooling
	noData
	noScaleUp
)

var whyNames = [...]string{"running", "failed", "power", "cooling", "data", "scale-up"}

// scratch is a blast's state of every element, reused across blasts:
// only the entries a blast touched are reset after it.
type scratch struct {
	why     []why
	cause   []ID
	touched []ID
}

var scratchPool sync.Pool

func getScratch(n int) *scratch {
	s, _ := scratchPool.Get().(*scratch)
	if s == nil || len(s.why) < n {
		s = &scratch{why: make([]why, n), cause: make([]ID, n)}
	}
	return s
}

func (s *scratch) release() {
	for _, id := range s.touched {
		s.why[id] = running
	}
	s.touched = s.touched[:0]
	scratchPool.Put(s)
}

type blaster struct {
	g       *Graph
	ix      *siteIndex
	s       *scratch
	roots   map[ID]bool // the failed elements
	queue   []ID        // out, their dependents not yet rechecked
	outs    [kinds][]ID // every element out, by kind
	pending map[ID]bool // busbars that lost a PSU, to recheck
	busbars map[ID]bool // every busbar that lost a PSU
	loops   map[ID]loopLoad
	// degraded reasons, by element
	degraded map[ID][]string
}

// loopLoad is a loop's capacity against its heat after a failure.
type loopLoad struct {
	cdus, live  int
	capW, heatW int64
	carries     bool
}

func (b *blaster) out(id ID) bool { return b.s.why[id] != running }

// set takes id out for w; cause is the element it stops with.
func (b *blaster) set(id ID, w why, cause ID) {
	b.s.why[id], b.s.cause[id] = w, cause
	b.s.touched = append(b.s.touched, id)
	b.queue = append(b.queue, id)
	k := b.g.els[id].Kind
	b.outs[k] = append(b.outs[k], id)
}

// fail fails each element and everything it contains; a failed part
// that is neither a PSU nor a BMC fails its tray.
func (b *blaster) fail(failed []ID) {
	g := b.g
	failed = slices.Clone(failed)
	slices.SortFunc(failed, g.byKeyOrder)
	for _, id := range failed {
		b.roots[id] = true
	}
	for _, root := range failed {
		top := root
		if k := g.els[root].Kind; isPart(k) && k != KindPSU && k != KindBMC {
			if t := g.parent[root]; t != None && g.els[t].Kind.IsTray() {
				top = t
			}
		}
		for stack := []ID{top}; len(stack) > 0; {
			id := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if b.s.why[id] == failedWhy {
				continue
			}
			b.set(id, failedWhy, root)
			stack = append(stack, g.Children(id)...)
		}
	}
}

func isPart(k Kind) bool { return k == KindPSU || (k >= KindGPU && k <= KindMemory) }

// network stops nodes that lose every ToR switch or their scale-up
// fabric, and degrades what loses some.
func (b *blaster) network() {
	g := b.g
	for _, d := range b.outs[KindScaleUpDomain] { // failed: the fabric is lost
		for _, n := range inOf(g, Connects, d, KindCompute) {
			if !b.out(n) {
				b.set(n, noScaleUp, b.s.cause[d])
			}
		}
	}
	for _, tor := range b.outs[KindTorSwitch] {
		others := 0
		for _, n := range g.In(Connects, tor) {
			if g.els[n].Kind != KindCompute || b.out(n) {
				continue
			}
			if b.anyRunning(outOf(g, Connects, n, KindTorSwitch)) {
				others++
				continue
			}
			b.set(n, noData, tor)
		}
		if others > 0 {
			b.degrade(tor, fmt.Sprintf("%d nodes run on their other data switches", others))
		}
	}
	domains := map[ID]bool{}
	for _, sw := range b.outs[KindScaleUpSwitch] {
		for _, d := range outOf(g, Connects, sw, KindScaleUpDomain) {
			domains[d] = true
		}
	}
	for _, d := range sortedIDs(g, domains) {
		if b.out(d) {
			continue
		}
		switches := inOf(g, Connects, d, KindScaleUpSwitch)
		if b.anyRunning(switches) {
			continue
		}
		b.set(d, noScaleUp, d)
		for _, n := range inOf(g, Connects, d, KindCompute) {
			if !b.out(n) {
				b.set(n, noScaleUp, d)
			}
		}
	}
}

func (b *blaster) anyRunning(ids []ID) bool {
	for _, id := range ids {
		if !b.out(id) {
			return true
		}
	}
	return false
}

func (b *blaster) degrade(id ID, reason string) { b.degraded[id] = append(b.degraded[id], reason) }

// report gathers what stopped and what runs degraded.
func (b *blaster) report() Impact {
	g := b.g
	imp := Impact{Failed: []string{}, Nodes: []StoppedNode{}, Racks: []string{}, Domains: []string{}, Modules: []string{},
		Causes: []Item{}, Degraded: []Item{}}
	for _, id := range sortedIDs(g, b.roots) {
		imp.Failed = append(imp.Failed, g.els[id].Key)
	}
	causes := map[ID]int{}
	racks, domains := map[ID]bool{}, map[ID]bool{}
	nodes := slices.Clone(b.outs[KindCompute])
	slices.SortFunc(nodes, g.byKeyOrder)
	for _, n := range nodes {
		e := &g.els[n]
		sn := StoppedNode{Key: e.Key, GPUs: NodeGPUs(g, n), Why: whyNames[b.s.why[n]], Cause: g.els[b.s.cause[n]].Key}
		if e.Names != nil {
			sn.Slurm = e.Names.Slurm
		}
		imp.Nodes = append(imp.Nodes, sn)
		imp.GPUs += sn.GPUs
		causes[b.s.cause[n]]++
		if r := g.Ancestor(n, KindRack); r != None {
			racks[r] = true
		}
		for _, d := range outOf(g, Connects, n, KindScaleUpDomain) {
			domains[d] = true
		}
	}
	for _, c := range sortedIDs(g, causes) {
		imp.Causes = append(imp.Causes, Item{Key: g.els[c].Key, Kind: g.els[c].Kind.String(), Reason: b.reason(c), Nodes: causes[c]})
	}
	modules := map[ID]bool{}
	for _, r := range sortedIDs(g, racks) {
		if b.allStopped(b.nodesOf(r)) {
			imp.Racks = append(imp.Racks, g.els[r].Key)
			if m := g.Ancestor(r, KindModule); m != None {
				modules[m] = true
			}
		}
	}
	for _, m := range sortedIDs(g, modules) {
		if b.moduleStopped(m) {
			imp.Modules = append(imp.Modules, g.els[m].Key)
		}
	}
	b.domains(&imp, domains)
	b.degradedPower()
	b.degradedManagement()
	b.degradedModules()
	for _, id := range sortedIDs(g, b.degraded) {
		e := &g.els[id]
		imp.Degraded = append(imp.Degraded, Item{Key: e.Key, Kind: e.Kind.String(), Reason: strings.Join(b.degraded[id], "; ")})
	}
	return imp
}

// reason says why a cause is lost.
func (b *blaster) reason(c ID) string {
	g := b.g
	e := &g.els[c]
	switch {
	case b.s.why[c] == failedWhy && b.roots[c]:
		return "failed"
	case b.s.why[c] == failedWhy:
		return "failed with " + g.els[b.s.cause[c]].Key
	case e.Kind == KindBusbar:
		return b.busbar(c).text(g, c)
	case e.Kind == KindLoop:
		return b.loops[c].text()
	case e.Kind == KindScaleUpDomain:
		return fmt.Sprintf("0 of %d switch trays", len(inOf(g, Connects, c, KindScaleUpSwitch)))
	case b.s.why[c] == noPower && b.s.cause[c] != c:
		cause := b.s.cause[c]
		return fmt.Sprintf("no power: %s %s", g.els[cause].Key, b.reason(cause))
	case b.s.why[c] == noPower:
		srcs := g.In(Powers, c)
		return fmt.Sprintf("no power: 0 of %d %s", len(srcs), plural(g.els[srcs[0]].Kind))
	}
	return "lost (" + whyNames[b.s.why[c]] + ")"
}

// plural names elements of a kind: PDUs, feeds.
func plural(k Kind) string {
	if s := k.String(); len(s) <= 3 {
		return strings.ToUpper(s) + "s"
	}
	return k.String() + "s"
}

// nodesOf lists a rack's nodes.
func (b *blaster) nodesOf(rack ID) []ID {
	var out []ID
	for _, t := range b.g.Children(rack) {
		if b.g.els[t].Kind == KindCompute {
			out = append(out, t)
		}
	}
	return out
}

// allStopped reports whether nodes is not empty and every node in it is
// out.
func (b *blaster) allStopped(nodes []ID) bool { return len(nodes) > 0 && b.allOut(nodes) }

// moduleStopped reports whether every node of a module is out.
func (b *blaster) moduleStopped(m ID) bool {
	any := false
	for _, r := range b.g.Children(m) {
		if b.g.els[r].Kind != KindRack {
			continue
		}
		nodes := b.nodesOf(r)
		if len(nodes) > 0 && !b.allOut(nodes) {
			return false
		}
		any = any || len(nodes) > 0
	}
	return any
}

// domains reports the scale-up domains stopped (every node out) and
// those degraded (some nodes or switch trays out).
func (b *blaster) domains(imp *Impact, touched map[ID]bool) {
	g := b.g
	for _, d := range b.outs[KindScaleUpDomain] {
		touched[d] = true
	}
	for _, sw := range b.outs[KindScaleUpSwitch] {
		for _, d := range outOf(g, Connects, sw, KindScaleUpDomain) {
			touched[d] = true
		}
	}
	for _, d := range sortedIDs(g, touched) {
		nodes := inOf(g, Connects, d, KindCompute)
		if b.allStopped(nodes) {
			imp.Domains = append(imp.Domains, g.els[d].Key)
			continue
		}
		if b.out(d) && b.s.why[d] == failedWhy {
			continue // failed with what holds it; its nodes are not all out
		}
		live := 0
		for _, n := range nodes {
			if !b.out(n) {
				live++
			}
		}
		if live < len(nodes) {
			b.degrade(d, fmt.Sprintf("%d of %d nodes", live, len(nodes)))
		}
		switches := inOf(g, Connects, d, KindScaleUpSwitch)
		if n := b.running(switches); n < len(switches) {
			b.degrade(d, fmt.Sprintf("%d of %d switch trays", n, len(switches)))
		}
	}
}

func (b *blaster) running(ids []ID) int {
	n := 0
	for _, id := range ids {
		if !b.out(id) {
			n++
		}
	}
	return n
}
