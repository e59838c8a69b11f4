// Package sim is the simulated site: the physics of the site's power
// blocks and cooling loops (internal/sim/physics), its load banks and
// controls links, stepped at a fixed rate on a clock that tests drive;
// faults injected by script or at run time; defects that make a module
// break its contract; and the Modbus and SNMP devices
// (internal/sim/device) that serve it all over loopback, per the
// device profiles, so that the probe and the runner use it unchanged.
package sim

import (
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/inventory"
	"github.com/seamdc/seam/internal/sim/fleet"
	"github.com/seamdc/seam/internal/sim/physics"
	"github.com/seamdc/seam/internal/sim/simconfig"
)

// Site is a running simulation. Its methods are safe for concurrent use.
type Site struct {
	mu     sync.Mutex
	name   string
	log    *slog.Logger
	cfg    *simconfig.Config
	defect *simconfig.Defect
	dt     float64
	t      float64 // sim seconds since start
	steps  int64
	// simNanos is t in nanoseconds, for readers that must not wait for
	// the site's lock (the BMCs' session clocks)
	simNanos atomic.Int64
	epoch    time.Time
	// running is set while Run keeps the site at its clock's pace; the
	// control interface's advance refuses to step such a site
	running atomic.Bool

	modules  []*itModule
	blocks   []*powerBlock
	loops    []*coolLoop
	pdus     []*rackPDU
	links    []*link
	banks    []*LoadBank
	elements map[string]Element

	faults     []*activeFault
	pending    []pendingEvent // scripted events, by time
	devices    []Device       // refreshed in Step at their update period
	devEntries []*deviceEntry
	devFault   DeviceFaulter
	observe    func(now time.Time)
	captures   *captureRecorder // the simulated analyser (capture.go); nil: none
	grid       grid             // the grid at the POI and its meter (grid.go)

	// the nodes after handover (nil: the inventory has none); their
	// rack PDUs and modules in the physics, by the fleet's index
	fleet     *fleet.Fleet
	fleetPDUs []*rackPDU
	fleetMods []*itModule
	bmcFault  BMCFaulter
}

// Options tune a new site.
type Options struct {
	Defect string       // a defect of the sim config, or ""
	Epoch  time.Time    // wall time of sim time 0; device timestamps count from it
	Log    *slog.Logger // nil: discard
	// Graph is the site's inventory graph the fleet is generated from
	// (nil: built from the contracts and the handovers they have read).
	Graph *inventory.Graph
}

// itModule is an IT module: its load banks draw power from its block and
// put their heat into its loop.
type itModule struct {
	id         string
	racks      int
	designHeat float64
	block      *powerBlock
	loop       *coolLoop
	banks      []*LoadBank
	demand     float64 // kW asked of the block in the last step
	served     float64 // kW the block delivered
	netLink    *link
	// what the fleet's nodes ask of the block (kW, in demand) and the
	// heat they put into the loop (kW)
	fleet, fleetLiquid float64
}

type powerBlock struct {
	phys      *physics.Block
	modules   []*itModule
	states    map[*physics.Feed]*feedState
	feedNames [][]string
}

// feedState is what a feed's UPS remembers: since when it has been on
// battery, and how often its input went bad.
type feedState struct {
	onBattery    bool
	batterySince float64
	lineBads     int
}

func (b *powerBlock) state(f *physics.Feed) *feedState {
	if b.states == nil {
		b.states = map[*physics.Feed]*feedState{}
	}
	st := b.states[f]
	if st == nil {
		st = &feedState{}
		b.states[f] = st
	}
	return st
}

type coolLoop struct {
	phys    *physics.Loop
	params  simconfig.Cooling
	modules []*itModule
}

type rackPDU struct {
	id     string
	module *itModule
	block  *powerBlock
	feed   *physics.Feed
	energy float64 // kWh
	// fleet is what the rack's trays draw through this PDU (kW)
	fleet float64
}

// link is the controls heartbeat between a controls network and one IT
// module's controller.
type link struct {
	id, network, module string
	period, silentAfter float64
	silent              bool
	lastBeat, nextBeat  float64
	beats               int
}

// NewSite builds a site from loaded contracts and a sim config.
func NewSite(c *contract.Contracts, cfg *simconfig.Config, opt Options) (*Site, error) {
	s := &Site{log: opt.Log, cfg: cfg, dt: 1 / cfg.Rate, epoch: opt.Epoch, elements: map[string]Element{}, name: c.Site.Name}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.epoch.IsZero() {
		s.epoch = time.Unix(0, 0).UTC()
	}
	if opt.Defect != "" {
		df, ok := cfg.Defects[opt.Defect]
		if !ok {
			return nil, fmt.Errorf("no defect %q in %s (defects: %v)", opt.Defect, cfg.Dir, cfg.DefectNames())
		}
		s.defect = df
	}
	if err := s.build(c); err != nil {
		return nil, err
	}
	s.buildFleet(c, opt.Graph)
	if cfg.Captures != nil {
		s.captures = newCaptureRecorder(cfg.Captures, s)
	}
	return s, nil
}

// Step advances the simulation by n physics steps.
func (s *Site) Step(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.step()
	}
}

// Advance steps the simulation forward by d of sim time.
func (s *Site) Advance(d time.Duration) { s.Step(int(d.Seconds()/s.dt + 0.5)) }

func (s *Site) step() {
	dt := s.dt
	s.t += dt
	s.steps++
	s.simNanos.Store(int64(s.t * float64(time.Second)))
	s.runEvents()
	s.stepGrid()
	for _, l := range s.links {
		l.step(s.t)
	}
	for _, m := range s.modules {
		v := m.block.volts()
		m.demand = 0
		for _, lb := range m.banks {
			lb.step(dt, s.t, v)
			m.demand += lb.applied
		}
	}
	if s.fleet != nil {
		s.stepFleet(dt)
	}
	for _, b := range s.blocks {
		b.step(dt, s.t)
	}
	s.meterPOI(dt)
	if s.captures != nil {
		s.captures.step(s.t)
	}
	for _, p := range s.pdus {
		p.energy += p.power() * dt / 3600
	}
	for _, l := range s.loops {
		heat := 0.0
		for _, m := range l.modules {
			heat += m.heat()
		}
		l.phys.Step(dt, heat)
	}
	s.refreshDevices()
}

func (b *powerBlock) step(dt, now float64) {
	demand := 0.0
	for _, m := range b.modules {
		demand += m.demand
	}
	served := b.phys.Step(dt, demand)
	for _, f := range b.phys.Feeds {
		st := b.state(f)
		if f.OnBattery() && !st.onBattery {
			st.batterySince = now
			st.lineBads++
		}
		st.onBattery = f.OnBattery()
	}
	for _, m := range b.modules {
		m.served = 0
		if demand > 0 {
			m.served = m.demand * served / demand
		}
	}
}

// volts is the voltage a module's loads see: the first live feed's.
func (b *powerBlock) volts() float64 {
	for _, f := range b.phys.Feeds {
		if f.Live() {
			return f.Volts()
		}
	}
	return 0
}

func (l *link) step(now float64) {
	if l.silent || now+1e-9 < l.nextBeat {
		return
	}
	l.lastBeat, l.beats = now, l.beats+1
	l.nextBeat = now + l.period
}

func (l *link) age(now float64) float64 { return now - l.lastBeat }

// Time is the sim time since start.
func (s *Site) Time() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.simTime()
}

func (s *Site) simTime() time.Duration { return time.Duration(s.t * float64(time.Second)) }

// Now is the wall time the simulation stands at: the epoch plus sim time.
func (s *Site) Now() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.epoch.Add(s.simTime())
}

// StepSize is the physics step.
func (s *Site) StepSize() time.Duration { return time.Duration(s.dt * float64(time.Second)) }

// Config is the sim config the site was built from.
func (s *Site) Config() *simconfig.Config { return s.cfg }

// Name is the site's name.
func (s *Site) Name() string { return s.name }

// Defect is the defect the site runs with, or nil.
func (s *Site) Defect() *simconfig.Defect { return s.defect }

// LoadBank returns the load bank id, or nil.
func (s *Site) LoadBank(id string) *LoadBank {
	for _, lb := range s.banks {
		if lb.ID == id {
			return lb
		}
	}
	return nil
}

// Element returns the element id, or nil.
func (s *Site) Element(id string) Element { return s.elements[id] }

// ElementIDs lists the elements, sorted.
func (s *Site) ElementIDs() []string {
	var out []string
	for id := range s.elements {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

// Signal reads one signal of an element under the site's lock.
func (s *Site) Signal(element, name string) (float64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.elements[element]
	if e == nil {
		return 0, fmt.Errorf("no element %q", element)
	}
	v, ok := e.Signal(name)
	if !ok {
		return 0, fmt.Errorf("element %s has no signal %q (signals: %v)", element, name, e.Signals())
	}
	return v, nil
}

// Command applies a command to a load bank under the site's lock, as
// its Modbus server does for a remote write.
func (s *Site) Command(bank, name string, v float64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	lb := s.LoadBank(bank)
	if lb == nil {
		return fmt.Errorf("no load bank %q", bank)
	}
	return lb.Command(name, v)
}
