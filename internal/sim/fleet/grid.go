package fleet

import (
	"fmt"
	"hash/fnv"
	"math"

	"github.com/seamdc/seam/internal/gridload"
)

// Grid is the contract's grid boundary as the fleet sees it: the
// training job's load per GPU, the jitter between modules, and each
// rack's answers (docs/grid.md).
type Grid struct {
	// Load is one GPU's training pattern: period, compute share, its
	// compute, communication and idle draw (W), the checkpoint's stall.
	Load gridload.Load
	// Jitter (s): each module's job lags its start by a share of it
	// fixed by the module's key, so that runs are reproducible.
	Jitter float64
	// Answers are the racks' answers, by rack key: the provisioned GPU
	// power limit, the filler, NVML smoothing and storage (a Group's
	// other fields are not used). A rack without one draws the load as
	// it is.
	Answers map[string]gridload.Group
}

// Pattern is a training job's pattern as a plan's train step states it:
// zero fields take the grid load's (or, without one, the module's
// square wave's) period and compute share; a stall of StallS seconds
// starts StallAtS after the job starts (StallS 0: the load's checkpoint
// stall; StallAtS 0: none).
type Pattern struct {
	PeriodS      float64 `json:"period_s,omitempty"`
	ComputeShare float64 `json:"compute_share,omitempty"` // of the period, 0..1
	StallAtS     float64 `json:"stall_at_s,omitempty"`
	StallS       float64 `json:"stall_s,omitempty"`
}

// check reports a pattern no job can run.
func (p Pattern) check() error {
	switch {
	case p.PeriodS < 0 || math.IsNaN(p.PeriodS) || math.IsInf(p.PeriodS, 0):
		return fmt.Errorf("training pattern: period_s %v must be a time above 0 s (0: the contract's)", p.PeriodS)
	case p.ComputeShare < 0 || p.ComputeShare > 1 || math.IsNaN(p.ComputeShare):
		return fmt.Errorf("training pattern: compute_share %v must be a share of the period, 0..1 (0: the contract's)", p.ComputeShare)
	case p.StallAtS < 0 || p.StallS < 0 || math.IsNaN(p.StallAtS) || math.IsNaN(p.StallS):
		return fmt.Errorf("training pattern: stall_at_s %v and stall_s %v must not be negative", p.StallAtS, p.StallS)
	}
	return nil
}

// job is the grid job's timing: when its stall falls.
type job struct {
	pattern        Pattern
	stallAt, stall float64
}

// phase is what the job asks of a GPU tj seconds after its module's
// start; before it, the GPU waits at idle with the job running.
func (j *job) phase(l *gridload.Load, tj float64) gridload.Phase {
	if tj < 0 || (j.stallAt > 0 && tj >= j.stallAt && tj < j.stallAt+j.stall) {
		return gridload.PhaseStall
	}
	return l.At(tj)
}

// jitterOf is a module's lag, 0 ≤ lag < jitter, fixed by its key.
func jitterOf(key string, jitter float64) float64 {
	h := fnv.New32a()
	h.Write([]byte(key))
	return jitter * float64(h.Sum32()) / (1 << 32)
}

// Offset is the module's lag behind a job's start, s (the grid load's
// jitter).
func (m *Module) Offset() float64 { return m.offset }

// Train starts the grid job on nodes now, in phase (each module lagging
// by its jitter): each GPU draws the grid load's compute and
// communication power (idle in a stall), held to its rack's provisioned
// power limit and raised to its filler, through its rack's NVML
// smoothing; each rack's storage acts on its draw from now on. Without
// a grid load a module trains between its square wave's low and high
// at the pattern's period and compute share. Nodes that are off or
// whose tray is missing are skipped; the others are returned.
func (f *Fleet) Train(p Pattern, nodes ...*Node) ([]*Node, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	j := &job{pattern: p, stallAt: p.StallAtS, stall: p.StallS}
	for _, m := range f.modules {
		m.load = f.loadOf(m, p)
	}
	if j.stall == 0 && j.stallAt > 0 {
		if g := f.opt.Grid; g != nil {
			j.stall = g.Load.CheckpointStall
		}
	}
	f.job = j
	var out []*Node
	for _, n := range nodes {
		if n.state == Off || n.Tray.Removed {
			continue
		}
		if !n.onJob {
			for _, g := range n.gpus {
				g.smoothY, g.below = g.powerW, 0
			}
		}
		f.set(n, Training, f.t)
		n.onJob = true
		out = append(out, n)
	}
	return out, nil
}

// StopTraining sets every training node idle; a node of the grid job
// keeps its rack's smoothing, which ramps it down as declared.
func (f *Fleet) StopTraining() []*Node {
	var out []*Node
	for _, t := range f.allTrays() {
		if n := t.Node; n != nil && n.state == Training {
			onJob := n.onJob
			f.set(n, Idle, f.t)
			n.onJob = onJob
			out = append(out, n)
		}
	}
	return out
}

// Job is the grid job's pattern as Train was given it, and whether one
// has started.
func (f *Fleet) Job() (Pattern, bool) {
	if f.job == nil {
		return Pattern{}, false
	}
	return f.job.pattern, true
}

// loadOf is a module's load under pattern p.
func (f *Fleet) loadOf(m *Module, p Pattern) gridload.Load {
	var l gridload.Load
	if g := f.opt.Grid; g != nil {
		l = g.Load
	} else {
		// the square wave's low and high, per GPU
		var design float64
		gpus := 1
		for _, r := range m.racks {
			for _, t := range r.trays {
				if t.Node != nil && design == 0 {
					design, gpus = t.DesignW, max(1, len(t.Node.gpus))
				}
			}
		}
		per := design * (1 - OtherShare) / float64(gpus)
		w := m.wave
		l = gridload.Load{Period: w.Period, ComputeShare: w.Duty, Compute: w.High * per, Communication: w.Low * per, Idle: IdleShare * per}
		if l.Period <= 0 {
			l.Period, l.ComputeShare = 1, 1
		}
	}
	if p.PeriodS > 0 {
		l.Period = p.PeriodS
	}
	if p.ComputeShare > 0 {
		l.ComputeShare = p.ComputeShare
	}
	return l
}

// stepJob moves a grid-job node's GPUs by dt toward what the job asks
// of them at now, through its rack's smoothing; it sets the node's
// demand and utilisation and returns the GPUs' draw before heat and the
// cap act (the same for every GPU).
func (n *Node) stepJob(dt, now float64, m *Module, r *Rack, j *job) {
	l := &m.load
	a := r.answer
	ph := gridload.PhaseIdle
	n.util = 0
	if n.state == Training {
		ph = j.phase(l, now-n.t0-m.offset)
		n.util = 1
	}
	target := a.Target(*l, ph)
	n.demandW = n.jobOtherW() + target*float64(len(n.gpus))
	for _, g := range n.gpus {
		if a.Smoothing != nil {
			g.smoothY, g.below = a.Smoothing.Step(g.smoothY, target, g.below, ph.Running(), a.Limit(*l), dt)
		} else {
			g.smoothY, g.below = target, 0
		}
	}
}

// jobOtherW is what a grid job's node draws besides its GPUs: what it
// drew idle, constant, so that the job moves only its GPUs' draw (a
// rack's other draw is constant in vet's model).
func (n *Node) jobOtherW() float64 { return n.Tray.DesignW * IdleShare * OtherShare }

// stepStorage runs a rack's storage on its trays' draw: what its PSUs
// then deliver is the draw less what the storage supplies.
func (r *Rack) stepStorage(dt float64) {
	r.StorageW = 0
	s := r.answer.Storage
	if s == nil {
		return
	}
	rate := math.Round(1 / dt)
	if r.storage == nil || r.storageRate != rate {
		r.storage, r.storageRate = s.Stepper(1, rate), rate
	}
	r.StorageW = r.storage.Step(r.LoadW)
}

// SoC is the rack's storage's state of charge, 0..1 (0: it has none or
// no job has started it).
func (r *Rack) SoC() float64 {
	if r.storage == nil {
		return 0
	}
	return r.storage.SoC()
}
