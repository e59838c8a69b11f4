package sim

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/seamdc/seam/internal/binding"
	"github.com/seamdc/seam/internal/inventory"
	"github.com/seamdc/seam/internal/redfish/bmc"
	"github.com/seamdc/seam/internal/sim/fleet"
)

var errNoFleet = fmt.Errorf("%w: the site's inventory has no compute trays, so it has no fleet", errNotFound)

// BMCFaulter injects and clears faults in the simulated BMCs.
type BMCFaulter interface {
	BMCFault(kind, name string, on bool) error
}

// BMC fault kinds: a fault kind of the site, targeting a BMC by name
// (the power cap's write faults are defects, below).
var bmcFaultKinds = func() map[string]string {
	m := map[string]string{}
	for _, k := range bmc.Faults {
		if k != bmc.FaultReadOnly && k != bmc.FaultResetOnWrite {
			m["bmc_"+k] = k
		}
	}
	return m
}()

// The power cap's BMC defects, targeting a BMC by name (sat sim's
// fleet defects): a reset (at once: its sessions end and the node's cap
// returns to its default; clearing it does nothing), the legacy Power
// resource only, a PowerLimit control in %, a PATCH of the limit
// refused (403), a PATCH that resets the BMC (no answer, the cap not
// applied) — the last four while in force.
const (
	DefectBMCReset        = "bmc-reset"
	DefectBMCLegacy       = "bmc-legacy"
	DefectBMCPercent      = "bmc-percent"
	DefectBMCReadOnly     = "bmc-read-only"
	DefectBMCResetOnWrite = "bmc-reset-on-write"
)

// CapDefects lists the power cap's BMC defects.
var CapDefects = []string{DefectBMCReset, DefectBMCLegacy, DefectBMCPercent, DefectBMCReadOnly, DefectBMCResetOnWrite}

// capDefect puts a power cap defect in force or ends it; without the
// site's lock (a reset takes it to drop the node's cap).
func (s *Sim) capDefect(kind, name string, on bool) error {
	b := s.BMC(name)
	if b == nil {
		return fmt.Errorf("%w: %s: no BMC %q is served: name one by its name, such as bmc-a-r01-n01", errNotFound, kind, name)
	}
	switch kind {
	case DefectBMCReset:
		if on {
			return b.Reboot()
		}
	case DefectBMCLegacy:
		b.SetLimitStyle(on, b.LimitStyleUnits())
	case DefectBMCPercent:
		units := ""
		if on {
			units = "%"
		}
		b.SetLimitStyle(b.LimitStyleLegacy(), units)
	case DefectBMCReadOnly:
		return b.SetFault(bmc.FaultReadOnly, on)
	case DefectBMCResetOnWrite:
		return b.SetFault(bmc.FaultResetOnWrite, on)
	}
	return nil
}

// bmcs are the simulated BMCs a Sim serves, by what they manage.
type bmcs struct {
	mu      sync.Mutex
	servers map[string]*bmc.Server // by key
	started bool
}

// bmcSource serves one tray's or CDU's BMC from the site.
type bmcSource struct {
	s    *Site
	key  string
	kind inventory.Kind
	tray *fleet.Tray // nil for a CDU
}

// Version is the tray's, read without the site's lock: a BMC checks it
// on every request.
func (b bmcSource) Version() uint64 {
	if b.tray == nil {
		return 1
	}
	return b.tray.Version()
}

func (b bmcSource) Graph() (*inventory.Graph, error) {
	var g *inventory.Graph
	err := b.s.WithFleet(func(f *fleet.Fleet) error {
		if b.kind == inventory.KindCDU {
			var err error
			g, err = f.CDUGraph(b.key)
			return err
		}
		t := f.Tray(b.key)
		if t == nil {
			return fmt.Errorf("no tray %q in the fleet", b.key)
		}
		g = f.TrayGraph(t)
		return nil
	})
	return g, err
}

// Now is the site's time, without its lock.
func (b bmcSource) Now() time.Time { return b.s.epoch.Add(time.Duration(b.s.simNanos.Load())) }

// Live reads the BMC's readings under the site's lock.
func (b bmcSource) Live() bmc.Live {
	var l bmc.Live
	_ = b.s.WithFleet(func(f *fleet.Fleet) error {
		if b.kind == inventory.KindCDU {
			l = b.cdu()
			return nil
		}
		t := f.Tray(b.key)
		if t == nil {
			return nil
		}
		supply := 0.0
		if m := f.Module(t.Rack().Key[:strings.IndexByte(t.Rack().Key, '/')]); m != nil {
			supply = m.SupplyC
		}
		l.Sensors = append(l.Sensors, bmc.Sensor{ID: "InletCoolantTemp", Name: "Inlet Coolant Temperature", ReadingType: "Temperature",
			Units: "Cel", PhysicalContext: "LiquidInlet", Reading: supply})
		switch {
		case t.Node != nil:
			n := t.Node
			l.PowerState = "On"
			if n.State() == fleet.Off {
				l.PowerState = "Off"
			}
			l.PowerW = n.DrawW()
			lim := n.Limit()
			mode := "Automatic"
			if !lim.Enabled {
				mode = "Disabled"
			}
			l.Limit = &bmc.Limit{SetPoint: lim.SetPoint, Min: lim.Min, Max: lim.Max, Mode: mode}
			l.Sensors = append(l.Sensors, bmc.Sensor{ID: "TotalPower", Name: "Total Power", ReadingType: "Power", Units: "W", PhysicalContext: "Chassis", Reading: n.DrawW()})
			for _, g := range f.GPUView(n, b.s.nowLocked()).GPUs {
				l.Sensors = append(l.Sensors,
					bmc.Sensor{ID: fmt.Sprintf("GPU%dTemp", g.Index), Name: fmt.Sprintf("GPU %d Temperature", g.Index), ReadingType: "Temperature", Units: "Cel", PhysicalContext: "GPU", Reading: g.TempC},
					bmc.Sensor{ID: fmt.Sprintf("GPU%dPower", g.Index), Name: fmt.Sprintf("GPU %d Power", g.Index), ReadingType: "Power", Units: "W", PhysicalContext: "GPU", Reading: g.PowerW})
			}
		case len(t.PSUs) > 0:
			l.PSUs = map[int]bmc.PSUReading{}
			total := 0.0
			for _, p := range t.PSUs {
				if !p.Present {
					continue
				}
				r := bmc.PSUReading{OutputW: p.OutW, InputW: p.OutW / fleet.PSUEff}
				if pdu := p.PDU(); pdu != nil && pdu.Live {
					r.InputV = pdu.Volts
				}
				l.PSUs[p.Bay] = r
				total += r.InputW
			}
			l.PowerW = total
			l.Sensors = append(l.Sensors, bmc.Sensor{ID: "TotalPower", Name: "Total Input Power", ReadingType: "Power", Units: "W", PhysicalContext: "PowerSupply", Reading: total})
		}
		return nil
	})
	return l
}

// cdu reads a CDU's secondary side; with the site's lock held.
func (b bmcSource) cdu() bmc.Live {
	m := map[string]float64{}
	if e, ok := b.s.elements[b.key].(cduElem); ok {
		e.Fill(m)
	}
	return bmc.Live{Coolant: &bmc.Coolant{SupplyC: m["supply-temp"], ReturnC: m["return-temp"], FlowLPM: m["flow"], HeatW: m["heat"] * 1000}}
}

func (b bmcSource) node(f *fleet.Fleet) (*fleet.Node, error) {
	t := f.Tray(b.key)
	if t == nil || t.Node == nil {
		return nil, errors.New("not a node")
	}
	return t.Node, nil
}

// SetPowerLimit applies a PATCH of the node's PowerLimit.
func (b bmcSource) SetPowerLimit(sp *float64, mode string) error {
	return b.s.WithFleet(func(f *fleet.Fleet) error {
		n, err := b.node(f)
		if err != nil {
			return err
		}
		if sp != nil {
			if err := n.SetLimit(*sp); err != nil {
				return err
			}
		}
		if mode != "" {
			n.EnableLimit(mode != "Disabled")
		}
		return nil
	})
}

// Reset powers the node on (idle) or off.
func (b bmcSource) Reset(kind string) error {
	return b.s.WithFleet(func(f *fleet.Fleet) error {
		n, err := b.node(f)
		if err != nil {
			return err
		}
		switch kind {
		case "On", "ForceOn", "PowerCycle", "ForceRestart", "GracefulRestart":
			if n.State() == fleet.Off || kind != "On" {
				return f.SetState(fleet.Idle, n)
			}
			return nil
		case "ForceOff", "GracefulShutdown":
			return f.SetState(fleet.Off, n)
		}
		return fmt.Errorf("reset type %q is not one of On, ForceOn, ForceOff, GracefulShutdown, ForceRestart, GracefulRestart, PowerCycle", kind)
	})
}

// nowLocked is the site's wall time; with s.mu held.
func (s *Site) nowLocked() time.Time { return s.now() }

// BMCEndpoint is a simulated BMC where it listens.
type BMCEndpoint struct {
	Name     string `json:"name"`
	Key      string `json:"key"`  // what it manages
	Kind     string `json:"kind"` // compute, scale-up-switch, power-shelf, cdu
	Address  string `json:"address"`
	Declared string `json:"declared_address,omitempty"` // the address the inventory gives it
}

// startBMCs serves a BMC for every tray, power shelf and CDU of the
// fleet that answers, each on its own loopback port, and stops those
// that no longer do (a tray taken out by a defect).
func (s *Sim) syncBMCs() error {
	// the site's lock first, then the BMCs': a fault injected under the
	// site's lock takes the BMCs'
	var want []fleet.BMC
	if err := s.Site.WithFleet(func(f *fleet.Fleet) error { want = f.BMCs(); return nil }); err != nil {
		return nil
	}
	b := &s.bmcs
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.started {
		return nil
	}
	keep := map[string]bool{}
	var errs []error
	for _, w := range want {
		keep[w.Key] = true
		if b.servers[w.Key] != nil {
			continue
		}
		cfg := bmc.Config{Name: w.Name, User: s.cfg.Secrets.BMCUser, Password: s.cfg.Secrets.BMCPassword, Log: s.Site.log}
		srv, err := bmc.Serve(bmc.New(cfg, bmcSource{s: s.Site, key: w.Key, kind: w.Kind, tray: w.Tray}), "127.0.0.1:0")
		if err != nil {
			errs = append(errs, fmt.Errorf("BMC %s: %w", w.Name, err))
			continue
		}
		b.servers[w.Key] = srv
	}
	for key, srv := range b.servers {
		if !keep[key] {
			_ = srv.Close()
			delete(b.servers, key)
		}
	}
	return errors.Join(errs...)
}

func (s *Sim) startBMCs() error {
	s.bmcs.mu.Lock()
	if s.bmcs.servers == nil {
		s.bmcs.servers = map[string]*bmc.Server{}
	}
	s.bmcs.started = s.Site.HasFleet()
	s.bmcs.mu.Unlock()
	return s.syncBMCs()
}

func (s *Sim) stopBMCs() {
	b := &s.bmcs
	b.mu.Lock()
	defer b.mu.Unlock()
	var wg sync.WaitGroup
	for key, srv := range b.servers {
		wg.Go(func() { _ = srv.Close() })
		delete(b.servers, key)
	}
	wg.Wait()
	b.started = false
}

// BMCs lists the BMCs being served, by what they manage.
func (s *Sim) BMCs() []BMCEndpoint {
	var want []fleet.BMC
	_ = s.Site.WithFleet(func(f *fleet.Fleet) error { want = f.BMCs(); return nil })
	s.bmcs.mu.Lock()
	defer s.bmcs.mu.Unlock()
	var out []BMCEndpoint
	for _, w := range want {
		if srv := s.bmcs.servers[w.Key]; srv != nil {
			out = append(out, BMCEndpoint{Name: w.Name, Key: w.Key, Kind: w.Kind.String(), Address: srv.Addr(), Declared: w.Address})
		}
	}
	return out
}

// BMC returns the served BMC called name (or managing key), or nil.
func (s *Sim) BMC(name string) *bmc.BMC {
	s.bmcs.mu.Lock()
	defer s.bmcs.mu.Unlock()
	if srv := s.bmcs.servers[name]; srv != nil {
		return srv.BMC
	}
	for _, srv := range s.bmcs.servers {
		if srv.BMC.Name() == name {
			return srv.BMC
		}
	}
	return nil
}

// BMCFault injects or clears a BMC fault (BMCFaulter).
func (s *Sim) BMCFault(kind, name string, on bool) error {
	b := s.BMC(name)
	if b == nil {
		// with the site's lock held: only the BMCs' own lock here
		s.bmcs.mu.Lock()
		var names []string
		for _, srv := range s.bmcs.servers {
			names = append(names, srv.BMC.Name())
		}
		s.bmcs.mu.Unlock()
		slices.Sort(names)
		if len(names) > 4 {
			names = append(names[:4], "…")
		}
		return fmt.Errorf("%s: no BMC %q is served (BMCs: %s)", kind, name, strings.Join(names, ", "))
	}
	return b.SetFault(bmcFaultKinds[kind], on)
}

// AddFleetDefect puts a node or tray defect in force, and starts or
// stops the BMCs it adds or takes away.
func (s *Sim) AddFleetDefect(d fleet.Defect) error {
	if slices.Contains(CapDefects, d.Kind) {
		return s.capDefect(d.Kind, d.Target, true)
	}
	if err := s.Site.WithFleet(func(f *fleet.Fleet) error { return f.AddDefect(d) }); err != nil {
		return err
	}
	s.Site.log.Info("fleet defect", "kind", d.Kind, "target", d.Target)
	return s.syncBMCs()
}

// ClearFleetDefect ends one.
func (s *Sim) ClearFleetDefect(kind, target string) error {
	if slices.Contains(CapDefects, kind) {
		return s.capDefect(kind, target, false)
	}
	if err := s.Site.WithFleet(func(f *fleet.Fleet) error { return f.ClearDefect(kind, target) }); err != nil {
		return err
	}
	return s.syncBMCs()
}

// BMCBinding is the bmcs section of a binding of the served BMCs
// (binding.MarshalBMCs writes it, as bmcs.cue beside sat sim's
// binding.cue): plain HTTP on loopback, the accounts in the secrets
// file at secrets; nil when the site has no fleet.
func (s *Sim) BMCBinding(secrets string) *binding.BMCs {
	eps := s.BMCs()
	if len(eps) == 0 {
		return nil
	}
	b := &binding.BMCs{Secrets: secrets, Scheme: "http", Auth: "session", Timeout: 10 * time.Second, Parallel: 64, PerBMC: 1}
	for _, e := range eps {
		b.Endpoints = append(b.Endpoints, binding.BMCEndpoint{Name: e.Name, Address: e.Address})
	}
	return b
}

// Writes counts the write requests the site's devices (Modbus) and its
// BMCs (PATCH, POST, DELETE but logins) have received, taken or
// refused: what a dry run leaves at zero.
func (s *Sim) Writes() (devices, bmcs int) {
	for _, d := range s.devices {
		devices += int(d.Writes())
	}
	s.bmcs.mu.Lock()
	defer s.bmcs.mu.Unlock()
	for _, srv := range s.bmcs.servers {
		bmcs += srv.BMC.Stats().Writes
	}
	return devices, bmcs
}
