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

// Phase is what the job asks of a GPU at one instant.
type Phase int

// The phases: no job; a running job's compute and communication phases;
// a checkpoint's stall (the job runs, every GPU idles).
const (
	PhaseIdle Phase = iota
	PhaseCompute
	PhaseCommunicate
	PhaseStall
)

// Running reports whether a job runs in the phase (a stall included):
// smoothing's floor holds then.
func (p Phase) Running() bool { return p != PhaseIdle }

// At is the phase of a running job tj seconds after it started (stalls
// aside): compute for ComputeShare of each period, then communication.
func (l Load) At(tj float64) Phase {
	// the share of the current iteration gone (math.Mod is slower)
	if x := tj / l.Period; x-math.Floor(x) < l.ComputeShare {
		return PhaseCompute
	}
	return PhaseCommunicate
}

// Scenario is a job's timeline: idle, then the job from Start to Stop
// (with one checkpoint stall at StallAt when StallAt > 0), then idle.
type Scenario struct {
	Rate        float64 // samples per second
	Seconds     float64
	Start, Stop float64 // s; Stop <= Start means the job runs throughout
	StallAt     float64 // s
}

func (sc Scenario) samples() int { return int(math.Round(sc.Seconds * sc.Rate)) }

func (sc Scenario) phaseAt(l Load, t float64) Phase {
	running := sc.Stop <= sc.Start || (t >= sc.Start && t < sc.Stop)
	if !running {
		return PhaseIdle
	}
	if sc.StallAt > 0 && t >= sc.StallAt && t < sc.StallAt+l.CheckpointStall {
		return PhaseStall
	}
	tj := t - sc.Start
	if sc.Stop <= sc.Start {
		tj = t
	}
	return l.At(tj)
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
		target := g.Target(l, p)
		if g.Smoothing == nil || i == 0 {
			y = target
		} else {
			y, below = g.Smoothing.Step(y, target, below, p.Running(), g.Limit(l), dt)
		}
		racks[i] = scale * (g.Base + per*y)
	}
	if g.Storage == nil {
		return racks, racks
	}
	return g.Storage.apply(racks, scale, sc.Rate), racks
}

// Limit is a GPU's power limit in the group: the provisioned one, else
// the load's compute draw.
func (g Group) Limit(l Load) float64 {
	if g.PowerLimit > 0 {
		return g.PowerLimit
	}
	return l.Compute
}

// Target is what a GPU of the group is asked to draw in phase p, W:
// the compute draw held to the power limit, the communication draw
// raised to the filler, idle otherwise; before smoothing.
func (g Group) Target(l Load, p Phase) float64 {
	switch p {
	case PhaseCompute:
		return math.Min(l.Compute, g.Limit(l))
	case PhaseCommunicate:
		return math.Max(l.Communication, g.Filler)
	default:
		return l.Idle
	}
}

// Step moves a GPU's draw y (W) dt seconds toward target: raised to
// the floor of limit while a job runs, at most the ramp rates, falling
// only once the target has stayed below y for the hysteresis (below
// carries the time it has, from step to step; start it at 0). It
// returns the new draw and below.
func (s *Smoothing) Step(y, target, below float64, running bool, limit, dt float64) (float64, float64) {
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
	out := make([]float64, len(draw))
	st := s.Stepper(racks, rate)
	for i, v := range draw {
		out[i] = v - st.Step(v)
	}
	return out
}

// StorageStepper is storage run online, one sample at a time at a fixed
// rate: what the simulator steps with its physics and vet's batch model
// runs over a whole series.
type StorageStepper struct {
	dt                       float64
	power, energy, lo, hi, e float64
	win, delay               int
	n                        int       // samples seen
	prefix                   []float64 // running sums: prefix[k%len] is the sum of the first k draws
	draws                    []float64 // the last delay+1 draws, by sample % len
}

// Stepper starts the storage of `racks` racks (its ratings times racks)
// half full, for draws sampled at rate per second.
func (s *Storage) Stepper(racks, rate float64) *StorageStepper {
	power, energy := s.Power*racks, s.Energy*racks
	st := &StorageStepper{dt: 1 / rate, power: power, energy: energy, lo: s.SoCMin * energy, hi: s.SoCMax * energy}
	st.e = (st.lo + st.hi) / 2
	st.win = max(1, int(math.Round(s.Horizon*rate)))
	st.delay = int(math.Round(s.Response * rate))
	st.prefix = make([]float64, st.win+st.delay+1)
	st.draws = make([]float64, st.delay+1)
	return st
}

// Step takes the next sample's draw (W) and returns what the storage
// supplies (W; negative: what it takes in): the draw it saw Response
// ago above its average over Horizon up to then, within its power and
// state of charge. The grid supplies draw − Step(draw).
func (st *StorageStepper) Step(draw float64) float64 {
	i := st.n
	st.n++
	np := len(st.prefix)
	st.prefix[(i+1)%np] = st.prefix[i%np] + draw
	st.draws[i%len(st.draws)] = draw
	j := i - st.delay
	if j < 0 {
		return 0
	}
	// what it saw `delay` samples ago: that draw above its average
	from := max(0, j+1-st.win)
	avg := (st.prefix[(j+1)%np] - st.prefix[from%np]) / float64(j+1-from)
	want := math.Max(-st.power, math.Min(st.power, st.draws[j%len(st.draws)]-avg))
	// discharge (want > 0) down to lo, charge up to hi
	if want > 0 {
		want = math.Min(want, (st.e-st.lo)/st.dt)
	} else {
		want = math.Max(want, -(st.hi-st.e)/st.dt)
	}
	st.e -= want * st.dt
	return want
}

// SoC is the storage's state of charge, 0..1 of its energy.
func (st *StorageStepper) SoC() float64 {
	if st.energy <= 0 {
		return 0
	}
	return st.e / st.energy
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
