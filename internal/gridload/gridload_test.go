package gridload

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

var load = Load{Period: 1, ComputeShare: 0.7, Compute: 1200, Communication: 300, Idle: 150}

func minMax(s []float64) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, v := range s {
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	return lo, hi
}

func TestGroupPower(t *testing.T) {
	sc := Scenario{Rate: 50, Seconds: 60}
	base := Group{Racks: 2, GPUsPerRack: 72, Base: 40000}
	limit := base
	limit.PowerLimit = 960
	filler := base
	filler.Filler = 900
	floor := base
	floor.Smoothing = &Smoothing{Floor: 0.9}
	slow := base
	slow.Smoothing = &Smoothing{RampDown: 100, RampUp: 100}
	hold := base
	hold.Smoothing = &Smoothing{Hysteresis: 0.5}
	stored := base
	stored.Storage = &Storage{Power: 70000, Energy: 70000 * 60 / 0.6, SoCMin: 0.2, SoCMax: 0.8, Horizon: 10}
	for _, tt := range []struct {
		name   string
		g      Group
		lo, hi float64 // W, the site's, after the first 20 s
	}{
		{"square wave", base, 2 * (40000 + 72*300), 2 * (40000 + 72*1200)},
		{"provisioned below TDP", limit, 2 * (40000 + 72*300), 2 * (40000 + 72*960)},
		{"filler in communication", filler, 2 * (40000 + 72*900), 2 * (40000 + 72*1200)},
		{"floor", floor, 2 * (40000 + 72*1080), 2 * (40000 + 72*1200)},
		// 100 W/s down for 0.3 s, up for 0.7 s: settles where the two meet
		{"ramp rates", slow, 2 * (40000 + 72*1170), 2 * (40000 + 72*1200)},
		// the hysteresis outlasts the communication phase: no dip at all
		{"hysteresis", hold, 2 * (40000 + 72*1200), 2 * (40000 + 72*1200)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			grid, _ := tt.g.Power(load, sc)
			lo, hi := minMax(grid[20*50:])
			assert.InDelta(t, tt.lo, lo, 1, "lowest")
			assert.InDelta(t, tt.hi, hi, 1, "highest")
		})
	}
	t.Run("storage flattens toward the average", func(t *testing.T) {
		grid, racks := stored.Power(load, sc)
		lo, hi := minMax(grid[20*50:])
		rlo, rhi := minMax(racks[20*50:])
		assert.Less(t, hi-lo, (rhi-rlo)/20, "the grid sees a twentieth of the racks' swing at most")
		assert.InDelta(t, Mean(racks[20*50:]), Mean(grid[20*50:]), 1000, "storage moves energy, it makes none")
	})
}

// A job's start and stop move the draw between idle and the training
// pattern; a checkpoint's stall drops every GPU to idle.
func TestScenarioPhases(t *testing.T) {
	sc := Scenario{Rate: 10, Seconds: 100, Start: 10, Stop: 80, StallAt: 40}
	l := load
	l.CheckpointStall = 5
	g := Group{Racks: 1, GPUsPerRack: 1}
	p, _ := g.Power(l, sc)
	at := func(s float64) float64 { return p[int(s*10)] }
	assert.Equal(t, 150.0, at(5), "idle before the start")
	assert.Equal(t, 1200.0, at(10.2), "compute right after it")
	assert.Equal(t, 300.0, at(10.8), "communication")
	assert.Equal(t, 150.0, at(42), "the stall")
	assert.Equal(t, 150.0, at(90), "idle after the stop")
	// a floor holds through the stall but not after the stop
	g.Smoothing = &Smoothing{Floor: 0.5}
	p, _ = g.Power(l, sc)
	assert.Equal(t, 600.0, at(42))
	assert.Equal(t, 150.0, at(90))
}

// storageRef is storage as a batch over the whole series (the model
// before it ran online): prefix sums of the draw, each sample's average
// over the horizon as seen Response late.
func storageRef(s *Storage, draw []float64, racks, rate float64) []float64 {
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
		from := max(0, j+1-win)
		avg := (prefix[j+1] - prefix[from]) / float64(j+1-from)
		want := math.Max(-power, math.Min(power, draw[j]-avg))
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

// The online stepper the simulator runs gives the batch model's series
// bit for bit, through its start, its delay and a state of charge that
// runs out.
func TestStorageStepperMatchesBatch(t *testing.T) {
	g := Group{Racks: 3, GPUsPerRack: 72, Base: 40000}
	_, racks := g.Power(load, Scenario{Rate: 50, Seconds: 90, Start: 5, Stop: 70, StallAt: 30})
	for _, s := range []Storage{
		{Power: 70000, Energy: 70000 * 60 / 0.6, SoCMin: 0.2, SoCMax: 0.8, Horizon: 10, Response: 0.1},
		{Power: 20000, Energy: 20000, SoCMin: 0.1, SoCMax: 0.9, Horizon: 30}, // runs empty and full
	} {
		want := storageRef(&s, racks, 3, 50)
		got := s.apply(racks, 3, 50)
		assert.Equal(t, want, got)
		st := s.Stepper(3, 50)
		for _, v := range racks[:100] {
			st.Step(v)
		}
		assert.Greater(t, st.SoC(), s.SoCMin-1e-9)
		assert.Less(t, st.SoC(), s.SoCMax+1e-9)
	}
}
