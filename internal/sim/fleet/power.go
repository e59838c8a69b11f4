package fleet

import (
	"math"

	"github.com/seamdc/seam/internal/inventory"
)

// Step moves the fleet by dt seconds to sim time now: each node's draw
// and GPUs, each rack's draw onto its busbar, shared by its live PSUs,
// onto its rack PDUs (what the simulator's feeds then carry), and each
// module's heat into its loop. The simulator sets every PDU's Live and
// Volts and every module's SupplyC first. With every node off the
// fleet draws nothing and Step does almost nothing.
func (f *Fleet) Step(dt, now float64) {
	f.t = now
	if f.on == 0 && !f.changed {
		return
	}
	f.changed = false
	for _, m := range f.modules {
		m.ACW, m.LiquidW = 0, 0
		for _, r := range m.racks {
			f.stepRack(r, m, dt, now)
			for _, p := range r.pdus {
				m.ACW += p.ACW
			}
		}
	}
}

func (f *Fleet) stepRack(r *Rack, m *Module, dt, now float64) {
	live := 0
	for _, p := range r.pdus {
		p.psus, p.ACW = 0, 0
	}
	hasShelves := false
	for _, t := range r.trays {
		if t.Kind != inventory.KindPowerShelf {
			continue
		}
		hasShelves = true
		for _, psu := range t.PSUs {
			psu.OutW = 0
			if psu.Present && !t.Removed && psu.pdu != nil && psu.pdu.Live {
				psu.pdu.psus++
				live++
			}
		}
	}
	if !hasShelves { // a rack without shelves: its trays on its PDUs directly
		for _, p := range r.pdus {
			if p.Live {
				p.psus++
				live++
			}
		}
	}
	r.dark = live == 0
	dc, liquid, util, nodesOn, gpuW := 0.0, 0.0, 0.0, 0, 0.0
	for _, t := range r.trays {
		if n := t.Node; n != nil {
			n.step(dt, m, r, f.job, now, m.SupplyC, r.dark)
			dc += n.drawW
			for _, g := range n.gpus {
				gpuW += g.powerW
			}
			if t.Liquid {
				liquid += n.drawW
			}
			if n.drawW > 0 {
				if !n.onJob {
					// the grid job's nodes leave their rack's draw
					// besides their GPUs as it was idle, constant, as
					// vet models it
					util += n.util
				}
				nodesOn++
			}
		}
	}
	if nodesOn > 0 {
		util /= float64(nodesOn)
		for _, t := range r.trays {
			if t.Kind == inventory.KindScaleUpSwitch && !t.Removed {
				w := t.DesignW * (SwitchIdle + (1-SwitchIdle)*util)
				dc += w
				if t.Liquid {
					liquid += w
				}
			}
		}
	}
	r.LoadW, r.GPUW = dc, gpuW
	if f.job != nil {
		r.stepStorage(dt)
		dc = math.Max(0, dc-r.StorageW)
	}
	r.DCW = dc
	m.LiquidW += liquid * r.liquid
	if live == 0 || dc == 0 {
		return
	}
	per := dc / float64(live)
	for _, t := range r.trays {
		for _, psu := range t.PSUs {
			if psu.Present && !t.Removed && psu.pdu != nil && psu.pdu.Live {
				psu.OutW = per
			}
		}
	}
	livePDUs := 0
	for _, p := range r.pdus {
		if p.Live {
			livePDUs++
		}
	}
	for _, p := range r.pdus {
		if !p.Live {
			continue
		}
		p.ACW = dc / PSUEff * float64(p.psus) / float64(live)
		if nodesOn > 0 {
			p.ACW += r.auxW / float64(livePDUs)
		}
	}
}
