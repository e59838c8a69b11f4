// Package gridload models what the grid sees of a site running one
// synchronous training job: each GPU's draw through the iteration's
// compute and communication phases, checkpoint stalls and the job's start
// and stop, through the site's declared answers (a provisioned power
// limit, filler work, NVML power smoothing, rack storage), summed over
// every rack in phase, which is the worst case. Pure: contractc vet
// grades its waveforms against the grid boundary's clauses, and the
// simulator can drive a fleet with them.
package gridload

import "math"

// Load is the training pattern of one GPU.
type Load struct {
	Period       float64 // s, one iteration
	ComputeShare float64 // of the period, 0..1
	// one GPU's draw, W: in the compute phase, the communication phase,
	// and idle (no job, and a checkpoint's stall)
	Compute, Communication, Idle float64
	// a checkpoint stalls every GPU for CheckpointStall seconds
	CheckpointStall float64
}

// Smoothing is NVML's power smoothing as modelled: the GPU never draws
// less than Floor × its power limit while a job runs, rises at most
// RampUp and falls at most RampDown W/s, and starts to fall only after
// its target has stayed below its draw for Hysteresis seconds. NVML's
// secondary floor and activation window settings are not modelled.
type Smoothing struct {
	Floor            float64 // share of the power limit, 0..1
	RampUp, RampDown float64 // W/s; 0 is unlimited
	Hysteresis       float64 // s
}

// Storage is energy storage in a rack or its power shelves: it supplies
// the rack's draw above its average over Horizon and takes in what lies
// below, acting Response seconds late, within Power and its state of
// charge window.
type Storage struct {
	Power          float64 // W
	Energy         float64 // J
	SoCMin, SoCMax float64 // 0..1
	Response       float64 // s
	Horizon        float64 // s; the window of the average it flattens toward
}

// Group is a set of identical racks.
type Group struct {
	Racks       int
	GPUsPerRack int
	Base        float64 // W per rack besides its GPUs, constant
	PowerLimit  float64 // W per GPU: its compute draw is held to it; the floor's 100 %
	Filler      float64 // W per GPU kept in the communication phase (0: none)
	Smoothing   *Smoothing
	Storage     *Storage
}

// phase is what the job asks of a GPU at one instant.
type phase int

const (
	idle phase = iota
	compute
	communicate
	stall
)

// Scenario is a job's timeline: idle, then the job from Start to Stop
// (with one checkpoint stall at StallAt when StallAt > 0), then idle.
type Scenario struct {
	Rate        float64 // samples per second
	Seconds     float64
	Start, Stop float64 // s; Stop <= Start means the job runs throughout
	StallAt     float64 // s
}

func (sc Scenario) samples() int { return int(math.Round(sc.Seconds * sc.Rate)) }

func (sc Scenario) phaseAt(l Load, t float64) phase {
	running := sc.Stop <= sc.Start || (t >= sc.Start && t < sc.Stop)
	if !running {
		return idle
	}
	if sc.StallAt > 0 && t >= sc.StallAt && t < sc.StallAt+l.CheckpointStall {
		return stall
	}
	tj := t - sc.Start
	if sc.Stop <= sc.Start {
		tj = t
	}
	// the share of the current iteration gone (math.Mod is slower)
	if x := tj / l.Period; x-math.Floor(x) < l.ComputeShare {
		return compute
	}
	return communicate
}

// Power is the group's draw at every sample of the scenario, W, and the
// draw its racks would have without storage.
func (g Group) Power(l Load, sc Scenario) (grid, racks []float64) {
	n := sc.samples()
	dt := 1 / sc.Rate
	racks = make([]float64, n)
	scale, per := float64(g.Racks), float64(g.GPUsPerRack)
	var y, below float64
	for i := range n {
		p := sc.phaseAt(l, float64(i)*dt)
		target := g.target(l, p)
		if g.Smoothing == nil || i == 0 {
			y = target
		} else {
			y, below = g.Smoothing.step(y, target, below, p != idle, g.limit(l), dt)
		}
		racks[i] = scale * (g.Base + per*y)
	}
	if g.Storage == nil {
		return racks, racks
	}
	return g.Storage.apply(racks, scale, sc.Rate), racks
}

func (g Group) limit(l Load) float64 {
	if g.PowerLimit > 0 {
		return g.PowerLimit
	}
	return l.Compute
}

func (g Group) target(l Load, p phase) float64 {
	switch p {
	case compute:
		return math.Min(l.Compute, g.limit(l))
	case communicate:
		return math.Max(l.Communication, g.Filler)
	default:
		return l.Idle
	}
}

// step moves a GPU's draw y one sample toward target.
func (s *Smoothing) step(y, target, below float64, running bool, limit, dt float64) (float64, float64) {
	if running {
		target = math.Max(target, s.Floor*limit)
	}
	switch {
	case target > y:
		below = 0
		if s.RampUp > 0 {
			return math.Min(target, y+s.RampUp*dt), below
		}
		return target, below
	case target < y:
		below += dt
		if below <= s.Hysteresis {
			return y, below
		}
		if s.RampDown > 0 {
			return math.Max(target, y-s.RampDown*dt), below
		}
		return target, below
	}
	return y, 0
}

// apply runs the storage of `racks` racks (its ratings times racks)
// against their summed draw and returns what the grid supplies.
func (s *Storage) apply(draw []float64, racks, rate float64) []float64 {
	n := len(draw)
	out := make([]float64, n)
	dt := 1 / rate
	power, energy := s.Power*racks, s.Energy*racks
	lo, hi := s.SoCMin*energy, s.SoCMax*energy
	e := (lo + hi) / 2
	win := max(1, int(math.Round(s.Horizon*rate)))
	delay := int(math.Round(s.Response * rate))
	prefix := make([]float64, n+1)
	for i, v := range draw {
		prefix[i+1] = prefix[i] + v
	}
	for i := range n {
		out[i] = draw[i]
		j := i - delay
		if j < 0 {
			continue
		}
		// what it saw `delay` samples ago: that draw above its average
		from := max(0, j+1-win)
		avg := (prefix[j+1] - prefix[from]) / float64(j+1-from)
		want := math.Max(-power, math.Min(power, draw[j]-avg))
		// discharge (want > 0) down to lo, charge up to hi
		if want > 0 {
			want = math.Min(want, (e-lo)/dt)
		} else {
			want = math.Max(want, -(hi-e)/dt)
		}
		e -= want * dt
		out[i] = draw[i] - want
	}
	return out
}

// Sum adds series sample by sample, into the first.
func Sum(series ...[]float64) []float64 {
	if len(series) == 0 {
		return nil
	}
	out := series[0]
	for _, s := range series[1:] {
		for i, v := range s {
			out[i] += v
		}
	}
	return out
}

// Mean is a series' average.
func Mean(s []float64) float64 {
	var t float64
	for _, v := range s {
		t += v
	}
	return t / float64(max(1, len(s)))
}
