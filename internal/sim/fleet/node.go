package fleet

import (
	"fmt"
	"math"
)

// Node is a compute tray as a running machine.
type Node struct {
	Tray       *Tray
	Name       string // Slurm's name (its host name)
	Kubernetes string
	Domain     string // its scale-up domain's key
	gpus       []*gpu
	state      State
	t0         float64 // when its workload started (sim seconds)
	capW       float64 // the power limit's set point, W
	capOff     bool    // the limit's control is disabled
	drawW      float64 // what it draws (W), after the cap
	demandW    float64 // what its workload asks for (W)
	util       float64 // 0..1
	capped     bool
	onJob      bool // on the grid job (training, or idle after it)
	// defects
	link     float64 // scale-up bandwidth share
	failures []failedTest
	dcgm     string
}

type failedTest struct {
	test    string
	gpu     int
	warning string
}

// gpu is one GPU's running state.
type gpu struct {
	key        string
	index      int
	model      string
	powerW     float64
	limitW     float64
	tempC      float64
	memTempC   float64
	clock      float64 // share of the maximum clock
	throttle   uint64
	hotK       float64 // defect: kelvin above a healthy GPU
	eccCorr    int
	eccUncorr  int
	remapped   int
	remapWait  bool
	warmedOnce bool
	request    float64 // W: what its workload asks of it, before heat and the cap
	// the grid job's NVML smoothing: the smoothed draw (W), and how long
	// the target has stayed below it (s)
	smoothY, below float64
}

// State is the node's workload.
func (n *Node) State() State { return n.state }

// DrawW is what the node draws, W.
func (n *Node) DrawW() float64 { return n.drawW }

// DemandW is what its workload asks for before the cap, W.
func (n *Node) DemandW() float64 { return n.demandW }

// Limit is the node's power limit: its set point, the allowable range,
// and whether it is enforced.
type Limit struct {
	SetPoint, Min, Max float64 // W
	Enabled            bool
}

// Limit is the node's power limit control.
func (n *Node) Limit() Limit {
	d := n.Tray.DesignW
	return Limit{SetPoint: n.capW, Min: math.Round(d * CapMinShare), Max: d, Enabled: !n.capOff}
}

// SetLimit sets the power limit in W (a Redfish PATCH of SetPoint); it
// must lie in the allowable range.
func (n *Node) SetLimit(w float64) error {
	l := n.Limit()
	if w < l.Min || w > l.Max || math.IsNaN(w) {
		return fmt.Errorf("node %s: a power limit of %.0f W is outside %.0f..%.0f W", n.Name, w, l.Min, l.Max)
	}
	n.capW = w
	return nil
}

// EnableLimit enforces or releases the power limit (ControlMode
// Disabled releases it).
func (n *Node) EnableLimit(on bool) { n.capOff = !on }

// set changes the workload; a training wave starts at now.
func (f *Fleet) set(n *Node, s State, now float64) {
	if (n.state == Off) != (s == Off) {
		if s == Off {
			f.on--
		} else {
			f.on++
		}
	}
	n.state, n.t0, n.onJob = s, now, false
	f.changed = true
}

// SetState sets nodes' workload at once: a training job's nodes step
// together, in phase.
func (f *Fleet) SetState(s State, nodes ...*Node) error {
	if !validState(s) {
		return fmt.Errorf("unknown node state %q (states: off, idle, training, burn-in)", s)
	}
	for _, n := range nodes {
		f.set(n, s, f.t)
	}
	return nil
}

func validState(s State) bool {
	for _, x := range States {
		if x == s {
			return true
		}
	}
	return false
}

// SetDCGM sets the DCGM version the node's dcgmi reports ("3.3.9",
// "4.2.3").
func (n *Node) SetDCGM(v string) { n.dcgm = v }

// demand is the share of the design draw a workload asks for at now.
func (n *Node) demand(w Wave, now float64) float64 {
	switch n.state {
	case Idle:
		return IdleShare
	case BurnIn:
		return 1
	case Training:
		return w.at(now - n.t0)
	}
	return 0
}

// at is the wave's value t seconds after the job started: it rises
// from Low at 0 and falls at Duty of the period, at Rate.
func (w Wave) at(t float64) float64 {
	if w.Period <= 0 {
		return w.High
	}
	phase := math.Mod(t, w.Period)
	span := w.High - w.Low
	ramp := func(dt float64) float64 {
		if w.Rate <= 0 {
			return span
		}
		return math.Min(dt*w.Rate, span)
	}
	if fall := w.Duty * w.Period; phase >= fall {
		return w.High - ramp(phase-fall)
	}
	return w.Low + ramp(phase)
}

// step moves the node by dt: its draw from its workload (the grid job's
// through its rack's smoothing, or its state's), the cap, its rack's
// power; its GPUs' power, temperature and clocks.
func (n *Node) step(dt float64, m *Module, r *Rack, j *job, now, coolantC float64, dark bool) {
	design := n.Tray.DesignW
	off := dark || n.Tray.Removed
	job := n.onJob && j != nil && !off && (n.state == Training || n.state == Idle)
	var gpuW, other float64
	if job {
		n.stepJob(dt, now, m, r, j)
		other = n.jobOtherW()
	} else {
		p := n.demand(m.wave, now)
		if off {
			p = 0
		}
		n.demandW = p * design
		n.util = 0
		if p > 0 {
			n.util = math.Max(0, (p-IdleShare)/(1-IdleShare))
		}
		gpuW = n.demandW * (1 - OtherShare) / float64(max(len(n.gpus), 1))
		other = n.demandW * OtherShare
	}
	total := other
	for _, g := range n.gpus {
		if job {
			gpuW = g.smoothY
		} else {
			g.smoothY, g.below = gpuW, 0
		}
		g.request = gpuW
		g.throttle = 0
		g.powerW = gpuW
		g.clock = 1
		if n.demandW > 0 && n.util == 0 {
			g.throttle |= 0x1 // idle
		}
		// heat: a GPU whose temperature would pass its slowdown point is
		// held there by its clocks
		if g.hotK > 0 && gpuW > 0 {
			if limit := (SlowdownC - coolantC - g.hotK) / ThermalR; gpuW > limit {
				g.powerW = math.Max(limit, 0)
				g.throttle |= 0x20 | 0x40
			}
		}
		total += g.powerW
	}
	n.capped = false
	if !n.capOff && total > n.capW && total > 0 {
		scale := (n.capW - other) / (total - other)
		total = other + (total-other)*scale
		for _, g := range n.gpus {
			g.powerW *= scale
			g.throttle |= 0x4
		}
		n.capped = true
	}
	n.drawW = total
	for _, g := range n.gpus {
		if g.request > 0 && g.powerW < g.request {
			g.clock = math.Pow(g.powerW/g.request, 1.0/3)
		}
		g.limitW = 1400
		if !n.capOff && n.capW < design {
			g.limitW = math.Round((n.capW - design*OtherShare) / float64(max(len(n.gpus), 1)))
		}
		if job && r.answer.PowerLimit > 0 {
			g.limitW = math.Min(g.limitW, r.answer.PowerLimit)
		}
		target := coolantC + ThermalR*g.powerW + g.hotK*b2f(g.powerW > 0)
		if !g.warmedOnce {
			g.tempC, g.memTempC, g.warmedOnce = coolantC, coolantC, true
		}
		a := math.Min(dt/ThermalTau, 1)
		g.tempC += (target - g.tempC) * a
		g.memTempC += (target + 2 - g.memTempC) * a
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
