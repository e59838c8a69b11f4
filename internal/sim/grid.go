package sim

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/sim/physics"
)

// The grid at the point of interconnection (POI): the utility's side of
// the site. Its voltage is 1 pu but during a dip (GridDip); its
// frequency is the nominal of the site's blocks. Every feed's UPS sees
// it as its input (physics.Feed.Sag): its rectifier draws at most the
// dip's share of the load, and a UPS with transfer settings (the
// contract's ups.transfer) takes its load off the grid as they say.
//
// The POI meter (element "poi", kind "meter") reads the site's power at
// the POI: what every feed draws from the grid through its UPS, with a
// simple loss model: a UPS passes its input at UPSEfficiency, and the
// site's transformers theirs at TransformerEfficiency. The cooling
// plant's own draw is not modelled.

// Loss model of the POI meter.
const (
	UPSEfficiency         = 0.97 // double conversion
	TransformerEfficiency = 0.99
)

// POIElement is the id of the POI meter's element.
const POIElement = "poi"

type grid struct {
	utilities []string // the utility modules' ids, sorted
	channel   string   // the grid boundary's channel of the POI's power ("": none)
	pu        float64  // voltage now, per unit
	hz        float64  // frequency, Hz
	// the dip in force ends at sim time until (a dip is in force while
	// pu != 1)
	until float64
	kw    float64 // the POI's power in the last step
	// energy is the POI's energy since start, kWh
	energy float64
}

// buildGrid sets up the grid and the POI meter, and gives each UPS its
// contract's transfer settings.
func (s *Site) buildGrid(c *contract.Contracts) error {
	s.grid = grid{pu: 1, hz: 50}
	if len(s.blocks) > 0 {
		s.grid.hz = s.blocks[0].phys.Frequency.Nominal
	}
	for _, m := range c.Site.Modules {
		if m.Kind == "utility" {
			s.grid.utilities = append(s.grid.utilities, m.ID)
		}
	}
	for _, b := range c.GridBoundaries() {
		if b.Grid != nil && b.Grid.Channel.To != "" && s.grid.channel == "" {
			s.grid.channel = b.Grid.Channel.To
		}
	}
	sort.Strings(s.grid.utilities)
	if c.Grid != nil {
		for _, t := range c.Grid.Transfers {
			e, ok := s.elements[t.Feed.ID].(feedElem)
			if !ok {
				return fmt.Errorf("%s: ups.transfer of feed %s: no such feed in the site's blocks", t.Pos, t.Feed.ID)
			}
			if e.f.UPS == nil {
				return fmt.Errorf("%s: ups.transfer of feed %s: the feed has no UPS", t.Pos, t.Feed.ID)
			}
			e.f.UPS.Transfer = &physics.Transfer{PU: t.Voltage.Canon / 100, After: t.After.Canon, BackAfter: t.BackAfter.Canon,
				HzMin: t.FrequencyMin.Canon, HzMax: t.FrequencyMax.Canon}
		}
	}
	// a defect's transfer settings replace the contract's, block by block
	for _, b := range s.blocks {
		p := s.cfg.Power(b.phys.ID, s.defect)
		if p.UPSTransferPU <= 0 {
			continue
		}
		for _, f := range b.phys.Feeds {
			if f.UPS != nil {
				f.UPS.Transfer = &physics.Transfer{PU: p.UPSTransferPU, After: p.UPSTransferAfter, BackAfter: p.UPSBackAfter}
			}
		}
	}
	s.elements[POIElement] = meterElem{s}
	return nil
}

// GridDip dips the grid's voltage at the POI to pu for seconds of sim
// time, then returns it to 1 pu; target is the utility module whose
// grid dips. A new dip replaces one in force.
func (s *Site) GridDip(target string, pu, seconds float64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gridDip(target, pu, seconds)
}

func (s *Site) gridDip(target string, pu, seconds float64) error {
	found := false
	for _, u := range s.grid.utilities {
		found = found || u == target
	}
	switch {
	case len(s.grid.utilities) == 0:
		return fmt.Errorf("grid dip on %q: the site has no utility module (kind \"utility\") whose grid could dip", target)
	case !found:
		return fmt.Errorf("%w: grid dip on %q: not a utility module of the site (utilities: %s)", errNotFound, target, strings.Join(s.grid.utilities, ", "))
	case math.IsNaN(pu) || pu < 0 || pu > 1:
		return fmt.Errorf("grid dip on %s: voltage %g pu: want 0 to 1 pu", target, pu)
	case math.IsNaN(seconds) || seconds <= 0 || seconds > maxAdvance.Seconds():
		return fmt.Errorf("grid dip on %s: duration %g s: want more than 0 and at most %g s", target, seconds, maxAdvance.Seconds())
	}
	s.grid.pu, s.grid.until = pu, s.t+seconds
	s.log.Info("grid dip", "utility", target, "pu", pu, "seconds", seconds, "sim_seconds", s.t)
	return nil
}

// stepGrid ends a dip whose time is up and gives every feed the grid's
// voltage and frequency; it runs before the blocks step.
func (s *Site) stepGrid() {
	if s.grid.pu != 1 && s.t > s.grid.until+1e-9 {
		s.grid.pu = 1
		s.log.Info("grid dip over", "sim_seconds", s.t)
	}
	for _, b := range s.blocks {
		for _, f := range b.phys.Feeds {
			f.Sag, f.InputHz = 1-s.grid.pu, s.grid.hz
		}
	}
}

// meterPOI sums what the blocks drew from the grid in the last step.
func (s *Site) meterPOI(dt float64) {
	kw := 0.0
	for _, b := range s.blocks {
		for _, f := range b.phys.Feeds {
			if f.UPS != nil {
				kw += f.GridKW() / UPSEfficiency
			} else {
				kw += f.GridKW()
			}
		}
	}
	s.grid.kw = kw / TransformerEfficiency
	s.grid.energy += s.grid.kw * dt / 3600
}

// GridStatus is the grid's state at the POI (GET /v1/grid).
type GridStatus struct {
	Utilities []string `json:"utilities"`
	VoltagePU float64  `json:"voltage_pu"`
	Hz        float64  `json:"frequency_hz"`
	// DipLeftS is how long the dip in force lasts yet, s (0: none)
	DipLeftS float64 `json:"dip_left_seconds"`
	PowerKW  float64 `json:"power_kw"` // the POI meter's power
	// OnBattery are the feeds whose UPS carries its load from the
	// battery, sorted
	OnBattery []string `json:"on_battery"`
}

// GridStatus reports the grid's state at the POI.
func (s *Site) GridStatus() GridStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := &s.grid
	st := GridStatus{Utilities: append([]string{}, g.utilities...), VoltagePU: g.pu, Hz: g.hz, PowerKW: g.kw, OnBattery: []string{}}
	if g.pu != 1 {
		st.DipLeftS = math.Max(0, g.until-s.t)
	}
	for _, b := range s.blocks {
		for _, f := range b.phys.Feeds {
			if f.OnBattery() {
				st.OnBattery = append(st.OnBattery, f.ID)
			}
		}
	}
	sort.Strings(st.OnBattery)
	return st
}

// GridPU is the grid's voltage at the POI now, per unit.
func (s *Site) GridPU() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.grid.pu
}

// POIPower is the site's power at the POI in the last step, kW.
func (s *Site) POIPower() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.grid.kw
}

// meterElem is the POI meter: the site's power, the grid's voltage (in
// %, canonical for per unit) and frequency, the energy since start.
type meterElem struct{ s *Site }

func (meterElem) Kind() string                      { return "meter" }
func (e meterElem) Signal(n string) (float64, bool) { return lookup(e, n) }
func (e meterElem) Signals() []string               { return signalsOf(e) }

func (e meterElem) Fill(m map[string]float64) {
	g := &e.s.grid
	m["power"], m["voltage"], m["frequency"], m["energy"] = g.kw, g.pu*100, g.hz, g.energy
	m["dip"] = b2f(g.pu != 1)
}
