package sim

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/sim/physics"
	"github.com/seamdc/seam/internal/units"
)

// build creates the physics from the site model.
func (s *Site) build(c *contract.Contracts) error {
	its := map[string]*itModule{}
	for _, m := range c.Site.Modules {
		if m.Kind == "it" {
			im := &itModule{id: m.ID, racks: len(m.Racks), designHeat: m.DesignHeat()}
			its[m.ID] = im
			s.modules = append(s.modules, im)
		}
	}
	for _, m := range c.Site.Modules {
		for _, b := range m.Blocks {
			if err := s.buildBlock(b, its); err != nil {
				return err
			}
		}
		for _, l := range m.Loops {
			if err := s.buildLoop(l, its); err != nil {
				return err
			}
		}
		for _, n := range m.Networks {
			s.buildNetwork(n, its)
		}
	}
	for _, im := range s.modules {
		if im.block == nil {
			return fmt.Errorf("IT module %s: no power block powers it", im.id)
		}
	}
	for _, m := range c.Site.Modules {
		for _, r := range m.Racks {
			for _, p := range r.PDUs {
				if err := s.buildPDU(p, its[m.ID]); err != nil {
					return err
				}
			}
		}
	}
	if err := s.buildGrid(c); err != nil {
		return err
	}
	lbp := s.cfg.LoadBank()
	for _, l := range c.Site.LoadBanks {
		im := its[l.Module.To]
		if im == nil {
			return fmt.Errorf("load bank %s: module %q is not an IT module of the site", l.ID, l.Module.To)
		}
		lb := &LoadBank{ID: l.ID, Module: im.id, Rating: l.Rating.Canon, Resolution: l.Resolution.Canon,
			MaxRate: l.MaxRate.Canon, Watchdog: lbp.Watchdog, remote: lbp.Remote}
		im.banks = append(im.banks, lb)
		s.banks = append(s.banks, lb)
		s.elements[lb.ID] = bankElem{lb}
	}
	return s.checkOverrides()
}

// checkOverrides fails on a sim config or defect that tunes an element
// the site does not have: a typo there would silently test nothing.
func (s *Site) checkOverrides() error {
	tuned := s.cfg.Elements()
	for _, id := range slices.Sorted(maps.Keys(tuned)) {
		if pos := tuned[id]; s.elements[id] == nil {
			return fmt.Errorf("%s: the sim config tunes %q, which is not a block or loop of the site", pos, id)
		}
	}
	return nil
}

func (s *Site) buildBlock(b *contract.Block, its map[string]*itModule) error {
	p := s.cfg.Power(b.ID, s.defect)
	pf := b.PowerFactor
	if pf == 0 {
		pf = 0.95
	}
	freq := b.Frequency.Canon
	if !b.Frequency.Set {
		freq = 50
	}
	pb := &powerBlock{phys: &physics.Block{ID: b.ID, Rating: b.Rating.Canon, PowerFactor: pf,
		Frequency: physics.Regulator{Nominal: freq, Impedance: p.FrequencyImpedance, Tau: p.FrequencyTau},
		FeedLost:  physics.Delay{On: p.FeedLostDelay, Off: p.AlarmClear},
		OnBattery: physics.Delay{On: p.OnBatteryDelay, Off: p.AlarmClear}}}
	for _, f := range b.Feeds {
		feed := &physics.Feed{ID: f.ID,
			Voltage: physics.Regulator{Nominal: b.Voltage.Canon, Impedance: p.Impedance, StaticDroop: p.StaticDroop, Tau: p.VoltageTau},
			Breaker: physics.Breaker{Rating: f.Breaker.Canon, Pickup: p.BreakerPickup, Tau: p.BreakerTau,
				Instantaneous: p.BreakerInstantaneous, Clearing: p.BreakerClearing}}
		if f.UPS != nil {
			feed.UPS = &physics.UPS{Rating: f.UPS.Rating.Canon, RideThrough: f.UPS.RideThrough.Canon, Recharge: p.UPSRecharge}
		}
		pb.phys.Feeds = append(pb.phys.Feeds, feed)
		s.elements[f.ID] = feedElem{s, pb, feed}
	}
	for _, r := range b.Powers {
		if im := its[r.To]; im != nil {
			im.block = pb
			pb.modules = append(pb.modules, im)
		}
	}
	pb.phys.Step(s.dt, 0) // settle at no load
	s.blocks = append(s.blocks, pb)
	s.elements[b.ID] = blockElem{s, pb}
	return nil
}

func (s *Site) buildLoop(l *contract.Loop, its map[string]*itModule) error {
	p := s.cfg.Cooling(l.ID, s.defect)
	setpoint := l.SupplyTemp.Canon
	capacity := 0.0
	for _, c := range l.CDUs {
		capacity += c.Capacity.Canon
	}
	approach := setpoint + l.DeltaT.Canon - p.FacilityWater
	if approach <= 0 {
		return fmt.Errorf("loop %s: facility water at %.1f degC cannot cool a %.1f degC return", l.ID, p.FacilityWater, setpoint+l.DeltaT.Canon)
	}
	flow := p.FlowSetpoint
	cl := &coolLoop{params: p}
	for _, r := range l.Cools {
		if im := its[r.To]; im != nil {
			im.loop = cl
			cl.modules = append(cl.modules, im)
		}
	}
	if flow == 0 {
		// 15 % above the flow that carries the design heat at the design ΔT
		heat := 0.0
		for _, im := range cl.modules {
			heat += im.designHeat
		}
		flow = 1.15 * units.FlowFor(heat, l.DeltaT.Canon, l.Cp())
	}
	if flow <= 0 {
		return fmt.Errorf("loop %s: no flow: set flow_setpoint in the sim config, or a delta_t and heat in the site", l.ID)
	}
	pl := &physics.Loop{ID: l.ID, Cp: l.Cp(), Density: 1, SupplyPipe: p.SupplyPipe, ReturnPipe: p.ReturnPipe,
		ITMass: p.ITVolume, HXMass: p.CDUVolume, PumpEfficiency: p.PumpEfficiency, FacilityWater: p.FacilityWater, UA: capacity / approach, Setpoint: setpoint,
		Valve:          physics.Valve{Stroke: p.ValveStroke, Authority: p.ValveAuthority},
		Control:        physics.PI{Kp: 1 / p.ProportionalBand, Ti: p.IntegralTime, Min: 0, Max: 1},
		HighTempMargin: p.HighTempMargin,
		RedundancyLost: physics.Delay{On: p.RedundancyDelay, Off: p.AlarmClear, Disabled: !p.RedundancyAlarm},
		Leak:           physics.Delay{On: p.LeakDelay, Off: p.AlarmClear},
		HighTemp:       physics.Delay{On: p.HighTempDelay, Off: p.AlarmClear}}
	pl.Pumps = physics.Pumps{Setpoint: flow, SystemK: p.DesignDP / (flow * flow),
		Control: physics.PI{Kp: 100 / p.FlowBand, Ti: p.FlowIntegral, Min: 0, Max: 1}}
	for _, c := range l.CDUs {
		cdu := &physics.CDU{ID: c.ID}
		for _, pp := range c.Pumps {
			pump := &physics.Pump{ID: pp.ID, Rated: pp.Flow.Canon, Accel: 1 / p.PumpRamp, Coast: p.PumpCoast}
			cdu.Pumps = append(cdu.Pumps, pump)
			pl.Pumps.Pumps = append(pl.Pumps.Pumps, pump)
			s.elements[pp.ID] = pumpElem{pump}
		}
		pl.CDUs = append(pl.CDUs, cdu)
		s.elements[c.ID] = cduElem{s, cl, cdu}
	}
	cl.phys = pl
	pl.Start(0)
	s.loops = append(s.loops, cl)
	s.elements[l.ID] = loopElem{s, cl}
	return nil
}

func (s *Site) buildNetwork(n *contract.Network, its map[string]*itModule) {
	p := s.cfg.Controls()
	for _, r := range n.Serves {
		im := its[r.To]
		if im == nil {
			continue
		}
		l := &link{id: n.ID + "/" + im.id, network: n.ID, module: im.id, period: p.HeartbeatPeriod, silentAfter: p.SilentAfter}
		im.netLink = l
		s.links = append(s.links, l)
		s.elements[l.id] = linkElem{s, l}
	}
	s.elements[n.ID] = networkElem{n.ID}
}

func (s *Site) buildPDU(p *contract.PDU, im *itModule) error {
	if im == nil {
		return fmt.Errorf("PDU %s: not in an IT module", p.ID)
	}
	for _, b := range s.blocks {
		for _, f := range b.phys.Feeds {
			if f.ID == p.Feed.To {
				pdu := &rackPDU{id: p.ID, module: im, block: b, feed: f}
				s.pdus = append(s.pdus, pdu)
				s.elements[p.ID] = pduElem{s, pdu}
				return nil
			}
		}
	}
	return fmt.Errorf("PDU %s: feed %q is not a feed of the site", p.ID, p.Feed.To)
}

// elementModule is the module an element id belongs to: its first
// segment ("p1/block/a" → "p1").
func elementModule(id string) string {
	m, _, _ := strings.Cut(id, "/")
	return m
}
