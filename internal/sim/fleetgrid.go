package sim

import (
	"errors"
	"math"

	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/gridload"
	"github.com/seamdc/seam/internal/sim/fleet"
)

// fleetGrid is the contract's grid load and the racks' answers as the
// fleet drives them (docs/grid.md): the first grid boundary that
// declares a load; nil when none does, and the fleet's Train then runs
// the modules' square waves' levels.
func fleetGrid(c *contract.Contracts) *fleet.Grid {
	var g *contract.Grid
	for _, b := range c.GridBoundaries() {
		if b.Grid != nil && b.Grid.Load != nil && b.Grid.Load.Period.Canon > 0 {
			g = b.Grid
			break
		}
	}
	if g == nil {
		return nil
	}
	l := g.Load
	// as vet's model reads it (internal/contract/gridcheck.go newGridModel)
	out := &fleet.Grid{Load: gridload.Load{Period: l.Period.Canon, ComputeShare: l.ComputeShare.Canon / 100,
		Compute: l.Compute.Canon * 1000, Communication: l.Communication.Canon * 1000, Idle: l.Communication.Canon * 1000},
		Jitter: l.Jitter.Canon, Answers: map[string]gridload.Group{}}
	if l.Idle.Set {
		out.Load.Idle = l.Idle.Canon * 1000
	}
	out.Load.CheckpointStall = l.CheckpointStall.Canon
	horizon := storageHorizon(g)
	for _, m := range c.Site.Modules {
		for _, r := range m.Racks {
			if resp := c.Grid.Response(r); resp != nil {
				out.Answers[r.ID] = answer(resp, horizon)
			}
		}
	}
	return out
}

// storageHorizon is the window storage flattens toward, as vet models
// it: the longest of 60 s, 1 / band.low and three swing windows.
func storageHorizon(g *contract.Grid) float64 {
	h := 60.0
	if o := g.Oscillation; o != nil && o.Low.Canon > 0 {
		h = math.Max(h, 1/o.Low.Canon)
	}
	if g.Swing.Set {
		h = math.Max(h, 3*g.SwingWindow.Canon)
	}
	return h
}

// answer is a rack's grid response in gridload's units (W, J, shares).
func answer(resp *contract.GridResponse, horizon float64) gridload.Group {
	a := gridload.Group{PowerLimit: resp.GPULimit.Canon * 1000, Filler: resp.Filler.Canon * 1000}
	if s := resp.Smoothing; s != nil {
		a.Smoothing = &gridload.Smoothing{Floor: s.Floor.Canon / 100, RampUp: s.RampUp.Canon * 1000,
			RampDown: s.RampDown.Canon * 1000, Hysteresis: s.Hysteresis.Canon}
	}
	if s := resp.Storage; s != nil {
		a.Storage = &gridload.Storage{Power: s.Power.Canon * 1000, Energy: s.Energy.Canon * 3.6e6,
			SoCMin: qOr(s.SoCMin, 20) / 100, SoCMax: qOr(s.SoCMax, 80) / 100, Response: s.Response.Canon, Horizon: horizon}
	}
	return a
}

func qOr(q contract.Q, def float64) float64 {
	if q.Set {
		return q.Canon
	}
	return def
}

// Train starts the grid job now on every node that is not off and
// whose tray is in its rack, in phase (each IT module lagging by the
// grid load's jitter): each GPU draws the contract's grid load, the
// pattern's period, compute share and stall overriding, through its
// rack's answers (power limit, filler, NVML smoothing, storage), which
// the rack PDUs, feeds and meters then carry. An error when the site
// has no fleet or no node is on.
func (s *Site) Train(p fleet.Pattern) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fleet == nil {
		return errNoFleet
	}
	nodes, err := s.fleet.Train(p, s.fleet.Nodes()...)
	if err != nil {
		return err
	}
	if len(nodes) == 0 {
		return errors.New(`every node is off or missing, so none trains: set the nodes idle first (POST /v1/fleet/nodes {"all": true, "state": "idle"})`)
	}
	return nil
}

// StopTraining sets every training node idle; the grid job's nodes ramp
// down as their racks' smoothing declares. An error when the site has
// no fleet.
func (s *Site) StopTraining() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fleet == nil {
		return errNoFleet
	}
	s.fleet.StopTraining()
	return nil
}
