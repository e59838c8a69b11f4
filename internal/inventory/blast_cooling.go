package inventory

import "fmt"

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
// counts only). The manifold itself is cooled but draws nothing: a rack
// whose trays all stopped puts no heat into the loop.
func (b *blaster) runsLiquid(rack ID) bool {
	for _, t := range b.g.Children(rack) {
		if b.g.els[t].Kind.IsTray() && !b.out(t) && len(b.g.In(Cools, t)) > 0 {
			return true
		}
	}
	return false
}
