package inventory

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/seamdc/seam/internal/units"
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

// power takes out what loses every source, and the trays of busbars
// left below their rack's design power.
func (b *blaster) power() {
	g := b.g
	for qi := 0; ; {
		for ; qi < len(b.queue); qi++ {
			for _, y := range g.Out(Powers, b.queue[qi]) {
				switch {
				case b.out(y):
				case g.els[y].Kind == KindBusbar:
					b.pending[y], b.busbars[y] = true, true
				case b.allOut(g.In(Powers, y)):
					srcs := g.In(Powers, y)
					cause := y // a loss of several sources is its own
					if len(srcs) == 1 {
						cause = b.s.cause[srcs[0]]
					}
					b.set(y, noPower, cause)
				}
			}
		}
		if len(b.pending) == 0 {
			return
		}
		for _, bus := range sortedIDs(g, b.pending) {
			delete(b.pending, bus)
			if l := b.busbar(bus); !b.out(bus) && l.capW < l.loadW {
				b.set(bus, noPower, bus)
			}
		}
	}
}

func (b *blaster) allOut(ids []ID) bool {
	for _, id := range ids {
		if !b.out(id) {
			return false
		}
	}
	return true
}

// busbarState is a busbar's powered PSUs and shelves against its load.
type busbarState struct {
	psus, livePSUs, shelves, liveShelves, lostShelves int
	inLostShelves                                     int // PSUs of the shelves lost
	capW, loadW                                       int64
}

func (b *blaster) busbar(bus ID) busbarState {
	g := b.g
	l := busbarState{loadW: busbarLoad(g, bus)}
	shelf, live, all := None, 0, 0
	flush := func() {
		if shelf != None {
			l.shelves++
			if live > 0 {
				l.liveShelves++
			} else if all > 0 {
				l.lostShelves++
				l.inLostShelves += all
			}
		}
	}
	for _, psu := range g.In(Powers, bus) { // in id order: a shelf's PSUs together
		if p := g.parent[psu]; p != shelf {
			flush()
			shelf, live, all = p, 0, 0
		}
		l.psus++
		all++
		if !b.out(psu) {
			l.livePSUs++
			live++
			l.capW += g.els[psu].PowerW
		}
	}
	flush()
	return l
}

// text says what is left: whole shelves lost are counted as shelves,
// PSUs lost in shelves still running as PSUs: "4 of 8 shelves (132 kW
// for a 130 kW rack)", "47 of 48 PSUs (258.5 kW for a 130 kW rack)".
func (l busbarState) text(g *Graph, bus ID) string {
	var left []string
	if l.lostShelves > 0 {
		left = append(left, fmt.Sprintf("%d of %d shelves", l.liveShelves, l.shelves))
	}
	if l.lostShelves == 0 || l.psus-l.livePSUs > l.inLostShelves {
		left = append(left, fmt.Sprintf("%d of %d PSUs", l.livePSUs, l.psus))
	}
	load := "a " + power(l.loadW) + " rack"
	if rack := g.Ancestor(bus, KindRack); rack == None || g.els[rack].PowerW == 0 {
		load = power(l.loadW) + " of design draw"
	}
	return fmt.Sprintf("%s (%s for %s)", strings.Join(left, ", "), power(l.capW), load)
}

// power is watts for people: kW below a megawatt, MW from one.
func power(w int64) string {
	if w >= 1_000_000 {
		return units.Format(float64(w)/1e6, "MW")
	}
	return units.Format(float64(w)/1e3, "kW")
}

// cooling takes out CDUs short of pumps, the liquid trays of failed
// manifolds, and every liquid tray of a loop failed or short of
// capacity.
func (b *blaster) cooling() {
	g := b.g
	cdus := map[ID]bool{}
	for _, p := range b.outs[KindPump] {
		if cdu := g.parent[p]; cdu != None && !b.out(cdu) {
			cdus[cdu] = true
		}
	}
	for _, cdu := range sortedIDs(g, cdus) {
		if need, live, all := b.pumps(cdu); live < need {
			b.set(cdu, noCooling, cdu)
		} else if live < all {
			b.degrade(cdu, fmt.Sprintf("%d of %d pumps (%s)", live, all, or(b.ix.cdus[cdu].redundancy(), "N")))
		}
	}
	for _, m := range b.outs[KindManifold] {
		for _, t := range g.Out(Cools, m) {
			if !b.out(t) {
				b.set(t, noCooling, b.s.cause[m])
			}
		}
	}
	loops := map[ID]bool{}
	for _, l := range b.outs[KindLoop] {
		loops[l] = true
	}
	for _, c := range b.outs[KindCDU] {
		for _, l := range g.In(Cools, c) {
			if g.els[l].Kind == KindLoop {
				loops[l] = true
			}
		}
	}
	for _, l := range sortedIDs(g, loops) {
		b.loop(l)
	}
}

func (c *CDU) redundancy() string {
	if c == nil {
		return ""
	}
	return c.PumpRedundancy
}

// pumps is how many pumps a CDU needs, has running, and has.
func (b *blaster) pumps(cdu ID) (need, live, all int) {
	for _, p := range b.g.Children(cdu) {
		if b.g.els[p].Kind == KindPump {
			all++
			if !b.out(p) {
				live++
			}
		}
	}
	need = all
	switch b.ix.cdus[cdu].redundancy() {
	case "N+1":
		need = all - 1
	case "2N":
		need = (all + 1) / 2
	}
	return max(need, 1), live, all
}

// loop checks a loop that lost a CDU or failed, against the heat of its
// racks still running.
func (b *blaster) loop(l ID) {
	g := b.g
	ll := loopLoad{}
	racks := map[ID]bool{}
	var direct []ID // trays the loop cools with no CDU between (racks known by counts)
	for _, c := range g.Out(Cools, l) {
		if g.els[c].Kind != KindCDU {
			direct = append(direct, c)
			racks[g.Ancestor(c, KindRack)] = true
			continue
		}
		ll.cdus++
		if !b.out(c) {
			ll.live++
			ll.capW += g.els[c].PowerW
		}
		for _, m := range g.Out(Cools, c) {
			racks[g.Ancestor(m, KindRack)] = true
		}
	}
	for r := range racks {
		if r != None && b.runsLiquid(r) {
			ll.heatW += rackHeat(g, b.ix, r)
		}
	}
	ll.carries = !b.out(l) && ll.capW >= ll.heatW
	b.loops[l] = ll
	if ll.carries {
		if ll.live < ll.cdus {
			b.degrade(l, ll.text())
		}
		return
	}
	cause := l
	if b.out(l) {
		cause = b.s.cause[l]
	} else {
		b.set(l, noCooling, l)
	}
	stop := func(t ID) {
		if !b.out(t) {
			b.set(t, noCooling, cause)
		}
	}
	for _, c := range g.Out(Cools, l) {
		for _, m := range g.Out(Cools, c) {
			for _, t := range g.Out(Cools, m) {
				stop(t)
			}
		}
	}
	for _, t := range direct {
		stop(t)
	}
}

func (ll loopLoad) text() string {
	return fmt.Sprintf("%d of %d CDUs (%s for %s of heat)", ll.live, ll.cdus, power(ll.capW), power(ll.heatW))
}

// runsLiquid reports whether a rack still runs a tray that a loop cools
// (through its manifold, or directly when the rack is known by its
// counts only).
func (b *blaster) runsLiquid(rack ID) bool {
	for _, t := range b.g.Children(rack) {
		if len(b.g.In(Cools, t)) > 0 && !b.out(t) {
			return true
		}
	}
	return false
}

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

// degradedPower reports blocks with a feed out, feeds with their UPS
// out, racks with a PDU out and busbars with PSUs out, still running.
func (b *blaster) degradedPower() {
	g := b.g
	blocks := map[ID]bool{}
	for _, f := range b.outs[KindFeed] {
		for _, bl := range g.In(Powers, f) {
			blocks[bl] = true
		}
	}
	for bl := range blocks {
		feeds := outOf(g, Powers, bl, KindFeed)
		if n := b.running(feeds); !b.out(bl) && n > 0 {
			b.degrade(bl, fmt.Sprintf("%d of %d feeds", n, len(feeds)))
		}
	}
	for _, u := range b.outs[KindUPS] {
		if f := g.parent[u]; f != None && !b.out(f) {
			b.degrade(f, "its UPS failed: no ride-through")
		}
	}
	racks := map[ID][]string{}
	for _, p := range b.outs[KindPDU] {
		if r := g.Ancestor(p, KindRack); r != None && !b.out(r) {
			racks[r] = append(racks[r], strings.TrimPrefix(g.els[p].Key, g.els[r].Key+"/"))
		}
	}
	for r, lost := range racks {
		pdus := 0
		for _, c := range g.Children(r) {
			if g.els[c].Kind == KindPDU {
				pdus++
			}
		}
		if nodes := b.nodesOf(r); pdus > len(lost) && !b.allStopped(nodes) {
			slices.Sort(lost)
			b.degrade(r, fmt.Sprintf("%d of %d PDUs (%s lost)", pdus-len(lost), pdus, strings.Join(lost, ", ")))
		}
	}
	for bus := range b.busbars {
		if !b.out(bus) {
			b.degrade(bus, b.busbar(bus).text(g, bus))
		}
	}
}

// degradedManagement reports management switches out whose BMCs manage
// running trays, and running trays whose BMC failed.
func (b *blaster) degradedManagement() {
	g := b.g
	for _, sw := range b.outs[KindManagementSwitch] {
		n := 0
		for _, bmc := range inOf(g, Connects, sw, KindBMC) {
			if t := g.parent[bmc]; t != None && !b.out(t) {
				n++
			}
		}
		if n > 0 {
			b.degrade(sw, fmt.Sprintf("%d BMCs unreachable: their trays run unmanaged", n))
		}
	}
	for _, bmc := range b.outs[KindBMC] {
		if t := g.parent[bmc]; t != None && !b.out(t) && b.roots[bmc] {
			b.degrade(t, "its BMC failed: it runs unmanaged")
		}
	}
}

// degradedModules reports running modules whose controls network or
// shared dependency failed.
func (b *blaster) degradedModules() {
	g := b.g
	site := g.Site
	if site == nil {
		return
	}
	lostNet, lostShared := map[string]bool{}, map[string]bool{}
	for _, n := range b.outs[KindNetwork] {
		lostNet[g.els[n].Key] = true
	}
	for _, s := range b.outs[KindShared] {
		lostShared[strings.TrimPrefix(g.els[s].Key, "shared/")] = true
	}
	if len(lostNet) == 0 && len(lostShared) == 0 {
		return
	}
	served := map[string][]string{}
	for _, m := range site.Modules {
		for _, n := range m.Networks {
			if lostNet[n.ID] {
				for _, s := range n.Serves {
					served[s.To] = append(served[s.To], "its controls network "+n.ID+" is lost")
				}
			}
		}
		for _, d := range m.DependsOn {
			if lostShared[d.To] {
				served[m.ID] = append(served[m.ID], "its shared dependency "+d.To+" is lost")
			}
		}
	}
	for key, reasons := range served {
		if id, ok := g.Lookup(key); ok && !b.out(id) {
			for _, r := range reasons {
				b.degrade(id, r)
			}
		}
	}
}
