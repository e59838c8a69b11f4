package sim

import (
	"math"
	"time"

	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/inventory"
	"github.com/seamdc/seam/internal/sim/fleet"
	"github.com/seamdc/seam/internal/units"
)

// buildFleet generates the site's nodes from its inventory graph: the
// contract's design and the handover inventory the contracts have read.
// Every node starts off, so that the physics is the load banks' alone
// until someone gives the nodes work.
func (s *Site) buildFleet(c *contract.Contracts, g *inventory.Graph) {
	if g == nil {
		g, _ = inventory.Build(c.Site, c.Handovers...)
	}
	if len(g.OfKind(inventory.KindCompute)) == 0 {
		return
	}
	grid := fleetGrid(c)
	if grid != nil && s.defect != nil && s.defect.NoSmoothing {
		for id, a := range grid.Answers {
			a.Smoothing = nil
			grid.Answers[id] = a
		}
	}
	s.fleet = fleet.New(g, fleet.Options{Waves: trainingWaves(c), Grid: grid})
	for _, fp := range s.fleet.PDUs() {
		var match *rackPDU
		for _, p := range s.pdus {
			if p.id == fp.Key {
				match = p
			}
		}
		s.fleetPDUs = append(s.fleetPDUs, match)
	}
	for _, fm := range s.fleet.Modules() {
		var match *itModule
		for _, m := range s.modules {
			if m.id == fm.Key {
				match = m
			}
		}
		s.fleetMods = append(s.fleetMods, match)
	}
}

// trainingWaves are the IT modules' training excitations: the fastest
// square wave on a power channel of a boundary the module consumes (the
// iteration's, not a cooling clause's slow heat cycle), as shares of the
// module's design power.
func trainingWaves(c *contract.Contracts) map[string]fleet.Wave {
	out := map[string]fleet.Wave{}
	for _, b := range c.Boundaries {
		m := c.Site.Module(b.Consumer.To)
		if m == nil || m.Kind != "it" || m.DesignPower() <= 0 {
			continue
		}
		design := m.DesignPower()
		share := func(q contract.Q) float64 {
			if q.Dim == units.Power {
				return q.Canon / design
			}
			return q.Canon / 100
		}
		for _, t := range b.Transient {
			x := t.Excitation
			if x.Kind != "square" || !powerChannel(b, x.Channel.To) {
				continue
			}
			w := fleet.Wave{Low: share(x.Low), High: share(x.High), Period: x.Period.Canon, Duty: 0.5, Rate: x.Rate.Canon / design}
			if x.Duty.Set {
				w.Duty = x.Duty.Canon / 100
			}
			if cur, ok := out[m.ID]; !ok || w.Period < cur.Period {
				out[m.ID] = w
			}
		}
	}
	return out
}

func powerChannel(b *contract.Boundary, name string) bool {
	for _, ch := range b.Channels {
		if ch.Name == name {
			return ch.Quantity == units.Power
		}
	}
	return false
}

// stepFleet steps the nodes with the physics: each rack PDU's feed
// tells the fleet whether it is live, each loop its supply temperature;
// the fleet's draw is added to its modules' demand on their blocks.
func (s *Site) stepFleet(dt float64) {
	f := s.fleet
	for i, fp := range f.PDUs() {
		if p := s.fleetPDUs[i]; p != nil {
			fp.Live, fp.Volts = p.feed.Live(), p.feed.Volts()/math.Sqrt(3)
		}
	}
	for i, fm := range f.Modules() {
		if m := s.fleetMods[i]; m != nil && m.loop != nil {
			fm.SupplyC = m.loop.phys.Ts
		}
	}
	f.Step(dt, s.t)
	for i, fp := range f.PDUs() {
		if p := s.fleetPDUs[i]; p != nil {
			p.fleet = fp.ACW / 1000
		}
	}
	for i, fm := range f.Modules() {
		if m := s.fleetMods[i]; m != nil {
			m.fleet, m.fleetLiquid = fm.ACW/1000, fm.LiquidW/1000
			m.demand += m.fleet
		}
	}
}

// heat is what the module puts into its loop: what its block serves,
// but for the fleet's air-cooled share (its PSUs' losses, its switches).
func (m *itModule) heat() float64 {
	if m.fleet == 0 {
		return m.served
	}
	ratio := m.served / m.demand
	return m.served - (m.fleet-m.fleetLiquid)*ratio
}

// WithFleet calls f with the site's fleet (nil: the site has no nodes),
// under the site's lock: a fleet's state moves only with the physics.
func (s *Site) WithFleet(f func(*fleet.Fleet) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fleet == nil {
		return errNoFleet
	}
	return f(s.fleet)
}

// HasFleet reports whether the site has nodes.
func (s *Site) HasFleet() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fleet != nil
}

// now is the site's wall time; with s.mu held.
func (s *Site) now() time.Time { return s.epoch.Add(s.simTime()) }
