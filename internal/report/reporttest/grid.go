package reporttest

import (
	"math"
	"time"

	"github.com/seamdc/seam/internal/plan"
)

// Grid defects.
const (
	// GridOscillation is a site without smoothing: the training pattern
	// swings its power by six times the healthy site's, enough to put
	// the line above its limit (and the ramp and swing over theirs).
	GridOscillation = "grid-oscillation"
	// UPSTransfer is a site whose UPSs transfer to battery in a dip and
	// stay there for their retransfer delay (5 s): the meter's power
	// falls by the modules' load and stays down.
	UPSTransfer = "ups-transfer"
)

// gridLevel is the site power model of a point-of-interconnection
// channel: idle power and the swing of the training pattern.
type gridLevel struct{ idle, swing float64 }

// gridLevels derives each POI channel's model from the plan's grid
// limits: the healthy site swings by half of the tightest of its swing,
// ramp and line limits (a square wave of swing A has a fundamental line
// of at most 2A/π), so every check passes with margin.
func gridLevels(p *plan.Plan, opt Options) map[string]gridLevel {
	out := map[string]gridLevel{}
	for _, c := range p.Cases {
		for _, k := range c.Checks {
			var lim float64
			switch k.Kind {
			case plan.GridRamp, plan.GridSwing:
				lim = *k.Max
			case plan.GridLine:
				lim = *k.Max * math.Pi / 2
			case plan.GridBandRMS:
				lim = *k.Max * math.Pi / math.Sqrt2
			case plan.RestoresWithin:
			default:
				continue
			}
			g, ok := out[k.Channel]
			if !ok {
				g = gridLevel{idle: 10000, swing: math.Inf(1)}
			}
			if lim > 0 {
				g.swing = min(g.swing, 0.5*lim)
			}
			out[k.Channel] = g
		}
	}
	for ch, g := range out {
		if math.IsInf(g.swing, 1) {
			g.swing = 0.2 * g.idle
		}
		if opt.Defect == GridOscillation {
			g.swing *= 6
		}
		out[ch] = g
	}
	return out
}

// sitePower is the POI meter's power at t: idle, plus the training
// pattern's square wave (high for the duty of each period, from its
// start) while a train step runs; a dip takes 40 % off while it lasts,
// recovered with a 0.2 s time constant, or (UPSTransfer) held off for
// the 5 s retransfer delay after it.
func (m *model) sitePower(g gridLevel, t time.Time, ev *events) float64 {
	v := g.idle
	for _, tr := range ev.trains {
		if t.Before(tr.from) || !t.Before(tr.to) {
			continue
		}
		ph := math.Mod(t.Sub(tr.from).Seconds(), tr.period)
		if ph < tr.period*tr.duty-1e-9 {
			v += g.swing
		}
	}
	for _, d := range ev.dips {
		switch {
		case t.Before(d.a):
		case t.Before(d.b):
			v -= 0.4 * g.idle
		case m.opt.Defect == UPSTransfer && t.Before(d.b.Add(5*time.Second)):
			v -= 0.4 * g.idle
		default:
			back := d.b
			if m.opt.Defect == UPSTransfer {
				back = d.b.Add(5 * time.Second)
			}
			v -= 0.4 * g.idle * expDecay(t.Sub(back).Seconds(), 0.2)
		}
	}
	return math.Round(v*10) / 10
}
