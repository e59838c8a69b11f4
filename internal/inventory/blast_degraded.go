package inventory

import (
	"fmt"
	"slices"
	"strings"
)

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
