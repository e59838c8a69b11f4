package inventory

import (
	"fmt"
	"strings"

	"github.com/seamdc/seam/internal/units"
)

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
