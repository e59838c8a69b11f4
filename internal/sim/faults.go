package sim

import (
	"fmt"
	"sort"
	"strings"

	"github.com/seamdc/seam/internal/sim/physics"
	"github.com/seamdc/seam/internal/sim/simconfig"
)

// Fault kinds. The first six act on the site's physics, named as the
// contract's failure events; the others act on one simulated device.
const (
	PumpTrip         = "pump_trip"         // target a pump: l1/loop/cdu-1/p1
	FeedLoss         = "feed_loss"         // target a feed: p1/block/a
	UPSOnBattery     = "ups_on_battery"    // target a feed: its UPS loses its input
	BreakerOpen      = "breaker_open"      // target a feed: its breaker opens
	ControllerSilent = "controller_silent" // target a network (ctl/net) or one link (ctl/net/ma)
	Leak             = "leak"              // target a CDU: l1/loop/cdu-2
	DeviceReboot     = "device_reboot"     // target a device: it stops answering, then restarts
	ModbusException  = "modbus_exception"  // target a Modbus device: every request gets exception Code
	ModbusTimeout    = "modbus_timeout"    // target a Modbus device: requests get no reply
	SNMPGarbled      = "snmp_garbled"      // target an SNMP device: replies are malformed
	Stale            = "stale"             // target a device: its values stop updating
)

// BMC faults target a simulated BMC by name (bmc-a-r01-n03): it answers
// every request with 401, its chassis with 404, garbage, a redirect to
// itself, nothing, 503 with Retry-After, or a Contains loop; or it
// refuses every new password, or takes one and resets before answering.
const (
	BMCUnauthorized = "bmc_unauthorized"
	BMCNotFound     = "bmc_not_found"
	BMCGarbage      = "bmc_garbage"
	BMCRedirectLoop = "bmc_redirect_loop"
	BMCTimeout      = "bmc_timeout"
	BMCBusy         = "bmc_busy"
	BMCContainsLoop = "bmc_contains_loop"
	// BMCPasswordRefused refuses every password change with a policy
	// message; BMCResetOnPassword takes a password change, then resets
	// without answering.
	BMCPasswordRefused = "bmc_password_refused"
	BMCResetOnPassword = "bmc_reset_on_password"
	// The firmware updates' faults (docs/simulator.md): an update that
	// fails half-way, a reset that takes minutes, a version unchanged
	// after a completed update, a task that never ends, an image
	// refused, tasks forgotten across the BMC's own reboot.
	BMCUpdateFails      = "bmc_update_fails"
	BMCSlowReset        = "bmc_slow_reset"
	BMCVersionUnchanged = "bmc_version_unchanged"
	BMCStuckTask        = "bmc_stuck_task"
	BMCImageRefused     = "bmc_image_refused"
	BMCForgetsTasks     = "bmc_forgets_tasks"
)

// FaultKinds lists every fault kind.
var FaultKinds = []string{PumpTrip, FeedLoss, UPSOnBattery, BreakerOpen, ControllerSilent, Leak,
	DeviceReboot, ModbusException, ModbusTimeout, SNMPGarbled, Stale,
	BMCUnauthorized, BMCNotFound, BMCGarbage, BMCRedirectLoop, BMCTimeout, BMCBusy, BMCContainsLoop, BMCPasswordRefused, BMCResetOnPassword,
	BMCUpdateFails, BMCSlowReset, BMCVersionUnchanged, BMCStuckTask, BMCImageRefused, BMCForgetsTasks}

// targetKind is the element kind each physical fault needs.
var targetKind = map[string][]string{
	PumpTrip: {"pump"}, FeedLoss: {"feed"}, UPSOnBattery: {"feed"}, BreakerOpen: {"feed"},
	ControllerSilent: {"network", "link"}, Leak: {"cdu"},
}

// Fault is a fault to inject.
type Fault struct {
	Kind   string  `json:"kind"`
	Target string  `json:"target"`
	Code   int     `json:"code,omitempty"`        // modbus_exception: the exception code (default 6, busy)
	For    float64 `json:"for_seconds,omitempty"` // clear after this long; 0: until cleared
}

func (f Fault) String() string { return f.Kind + " on " + f.Target }

// ActiveFault is a fault in force.
type ActiveFault struct {
	Fault
	Since float64 `json:"since_seconds"` // sim time
}

type activeFault = ActiveFault

// DeviceFaulter injects and clears faults in the simulated devices.
type DeviceFaulter interface {
	DeviceFault(kind, device string, code int, on bool) error
}

// SetBMCFaulter connects the simulated BMCs' fault injection.
func (s *Site) SetBMCFaulter(b BMCFaulter) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bmcFault = b
}

// SetDeviceFaulter connects the device servers' fault injection.
func (s *Site) SetDeviceFaulter(d DeviceFaulter) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.devFault = d
}

// Inject puts a fault in force at once.
func (s *Site) Inject(f Fault) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inject(f)
}

// Clear ends a fault in force.
func (s *Site) Clear(kind, target string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.clear(kind, target)
}

// Faults lists the faults in force, in the order they were injected.
func (s *Site) Faults() []ActiveFault {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]ActiveFault, len(s.faults))
	for i, f := range s.faults {
		out[i] = *f
	}
	return out
}

// RebootTime is how long a device_reboot keeps a device off the network
// when the fault gives no duration.
const RebootTime = 10.0 // s

func (s *Site) inject(f Fault) error {
	if f.Kind == DeviceReboot && f.For == 0 {
		f.For = RebootTime
	}
	if err := s.apply(f, true); err != nil {
		return err
	}
	s.dropFault(f.Kind, f.Target)
	s.faults = append(s.faults, &activeFault{Fault: f, Since: s.t})
	s.log.Info("fault injected", "kind", f.Kind, "target", f.Target, "sim_seconds", s.t)
	if f.For > 0 {
		s.schedule(pendingEvent{at: s.t + f.For, fault: f, clear: true})
	}
	return nil
}

func (s *Site) clear(kind, target string) error {
	if !s.dropFault(kind, target) {
		return fmt.Errorf("no %s fault on %s in force", kind, target)
	}
	s.log.Info("fault cleared", "kind", kind, "target", target, "sim_seconds", s.t)
	return s.apply(Fault{Kind: kind, Target: target}, false)
}

func (s *Site) dropFault(kind, target string) bool {
	for i, a := range s.faults {
		if a.Kind == kind && a.Target == target {
			s.faults = append(s.faults[:i], s.faults[i+1:]...)
			return true
		}
	}
	return false
}

// check says whether f names a known kind and a target it can act on.
func (s *Site) check(f Fault) error {
	kinds, physical := targetKind[f.Kind]
	if !physical {
		if !known(f.Kind) {
			return fmt.Errorf("unknown fault %q (faults: %s)", f.Kind, strings.Join(FaultKinds, ", "))
		}
		if _, ok := bmcFaultKinds[f.Kind]; ok {
			if s.bmcFault == nil || s.fleet == nil {
				return fmt.Errorf("%s: the site serves no BMCs", f)
			}
			return nil
		}
		if s.devFault == nil {
			return fmt.Errorf("%s: the site serves no devices", f)
		}
		return nil
	}
	e := s.elements[f.Target]
	if e == nil {
		return fmt.Errorf("%s: no %s %q in the site%s", f, strings.Join(kinds, " or "), f.Target, s.suggest(f.Target, kinds))
	}
	for _, k := range kinds {
		if e.Kind() == k {
			return nil
		}
	}
	return fmt.Errorf("%s: %s is a %s, want a %s", f, f.Target, e.Kind(), strings.Join(kinds, " or "))
}

func known(kind string) bool {
	for _, k := range FaultKinds {
		if k == kind {
			return true
		}
	}
	return false
}

func (s *Site) suggest(target string, kinds []string) string {
	var ids []string
	for id, e := range s.elements {
		for _, k := range kinds {
			if e.Kind() == k {
				ids = append(ids, id)
			}
		}
	}
	sort.Strings(ids)
	if len(ids) > 6 {
		ids = append(ids[:6], "…")
	}
	return " (for example " + strings.Join(ids, ", ") + ")"
}

func (s *Site) apply(f Fault, on bool) error {
	if err := s.check(f); err != nil {
		return err
	}
	if _, ok := bmcFaultKinds[f.Kind]; ok {
		// the BMC takes its own lock; the site's is held, and a BMC's
		// handlers take the site's only after the BMC's is released
		return s.bmcFault.BMCFault(f.Kind, f.Target, on)
	}
	switch f.Kind {
	case PumpTrip:
		s.elements[f.Target].(pumpElem).p.Tripped = on
	case FeedLoss:
		s.feed(f.Target).OutputLost = on
	case UPSOnBattery:
		s.feed(f.Target).SourceLost = on
	case BreakerOpen:
		if on {
			s.feed(f.Target).Breaker.Open()
		} else {
			s.feed(f.Target).Breaker.Close()
		}
	case ControllerSilent:
		for _, l := range s.links {
			if l.id == f.Target || l.network == f.Target {
				l.silent = on
				l.nextBeat = s.t
			}
		}
	case Leak:
		s.elements[f.Target].(cduElem).cdu.Leak = on
	default:
		code := f.Code
		if f.Kind == ModbusException && code == 0 {
			code = 6
		}
		return s.devFault.DeviceFault(f.Kind, f.Target, code, on)
	}
	return nil
}

func (s *Site) feed(id string) *physics.Feed { return s.elements[id].(feedElem).f }

// pendingEvent is a scripted injection or clearing at a sim time.
type pendingEvent struct {
	at    float64
	fault Fault
	clear bool
}

func (s *Site) schedule(e pendingEvent) {
	i := sort.Search(len(s.pending), func(i int) bool { return s.pending[i].at > e.at })
	s.pending = append(s.pending, pendingEvent{})
	copy(s.pending[i+1:], s.pending[i:])
	s.pending[i] = e
}

func (s *Site) runEvents() {
	for len(s.pending) > 0 && s.pending[0].at <= s.t+1e-9 {
		e := s.pending[0]
		s.pending = s.pending[1:]
		var err error
		if e.clear {
			err = s.clear(e.fault.Kind, e.fault.Target)
		} else {
			err = s.inject(e.fault)
		}
		if err != nil {
			s.log.Warn("scripted fault", "error", err.Error())
		}
	}
}

// Play schedules a fault script of the sim config, its times counted
// from now. Every event is checked before any is scheduled.
func (s *Site) Play(name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	events, ok := s.cfg.Scripts[name]
	if !ok {
		var names []string
		for n := range s.cfg.Scripts {
			names = append(names, n)
		}
		sort.Strings(names)
		return fmt.Errorf("no script %q in %s (scripts: %s)", name, s.cfg.Dir, strings.Join(names, ", "))
	}
	var out []pendingEvent
	for _, ev := range events {
		pe, err := s.event(ev)
		if err != nil {
			return fmt.Errorf("%s: script %s: %w", ev.Pos, name, err)
		}
		out = append(out, pe)
	}
	for _, pe := range out {
		s.schedule(pe)
	}
	s.log.Info("script scheduled", "script", name, "events", len(out))
	return nil
}

func (s *Site) event(ev simconfig.Event) (pendingEvent, error) {
	f := Fault{Kind: ev.Fault, Target: ev.Target, Code: ev.Code, For: ev.For}
	pe := pendingEvent{at: s.t + ev.At, fault: f}
	if ev.Clear != "" {
		pe.fault.Kind, pe.clear = ev.Clear, true
	}
	return pe, s.check(pe.fault)
}
