// Package device serves simulated devices on loopback: Modbus TCP
// servers and SNMP v2c/v3 agents whose registers and OIDs are exactly
// those of a device profile (internal/profile), encoded with the
// profile's own codec so that the probe and the simulator can never
// disagree. Each device holds an image of its points that its owner
// refreshes at the profile's update period; between refreshes it serves
// the same values, as a real device does. Faults make a device stop
// updating, stop answering, answer with exceptions, or garble its
// replies.
package device

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seamdc/seam/internal/profile"
)

// Source gives the values a device serves, in canonical units. Refresh
// calls it; the caller holds whatever lock Source needs.
type Source interface {
	Signal(name string) (float64, bool)
}

// Filler is a Source that can write all its values into a map at once;
// a device then reads its signals from the map instead of asking for
// each. Fill reports whether it did.
type Filler interface {
	Fill(m map[string]float64) bool
}

// CommandFunc applies a remote write of a point mapped to signal; it is
// called from a server goroutine and must take its own locks.
type CommandFunc func(signal string, value float64) error

// Pseudo-signals every device serves from itself.
const (
	SigUpdates = "device/updates" // refreshes since boot, modulo 65536
	SigTime    = "device/time"    // Unix seconds of the last refresh
	SigUptime  = "device/uptime"  // seconds since boot
)

// Mapping says what one profile point serves.
type Mapping struct {
	Point   *profile.Point
	Signal  string  // a signal of the Source, or a pseudo-signal
	Const   float64 // a constant (canonical units), when IsConst
	IsConst bool
	Factor  float64 // a defect: the value is multiplied by Factor on the wire; 0 means 1
}

// SNMP is an agent's security: v2c with a community, or v3 authPriv.
type SNMP struct {
	Version   string // "v2c" or "v3"
	Community string
	User      string
	AuthProto string // SHA, MD5, SHA256
	AuthPass  string
	PrivProto string // AES, DES
	PrivPass  string
}

// Spec describes a device.
type Spec struct {
	Name     string
	Element  string
	Profile  *profile.Profile
	Mappings []Mapping
	SNMP     SNMP
	Unit     uint8 // Modbus unit id; 0 means 1
}

// Device is a simulated device.
type Device struct {
	spec     Spec
	src      Source
	cmd      CommandFunc
	log      *slog.Logger
	digits   map[string]int // point name → the decimal digits its Digits point holds
	isDigits map[string]bool
	ordered  []Mapping // digits points first

	// writes counts the write requests received (Modbus; the SNMP
	// agents take no SET), taken or refused: a dry run's stay at zero.
	writes atomic.Uint64

	mu      sync.Mutex
	regs    map[profile.Table][]uint16
	oids    map[string]any // OID → Go value of the point's SNMP type
	updates uint64
	booted  time.Time
	last    time.Time
	faults  faults
	server  server
	addr    string
	vals    map[string]float64 // reused by Refresh
	encoded []float64          // the value last encoded per ordered mapping; NaN: none
}

// server is what a protocol server does for its device.
type server interface {
	start(addr string) (string, error) // returns the address it listens on
	stop()
}

// faults are the device faults in force.
type faults struct {
	stale     bool
	down      bool
	exception int // Modbus exception code, 0: none
	timeout   bool
	garbled   bool
	release   chan struct{} // closed when a timeout fault clears
}

// New checks a spec and builds its device; Start serves it.
func New(spec Spec, src Source, cmd CommandFunc, log *slog.Logger) (*Device, error) {
	if spec.Profile == nil {
		return nil, fmt.Errorf("device %s: no profile", spec.Name)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if spec.Unit == 0 {
		spec.Unit = 1
	}
	d := &Device{spec: spec, src: src, cmd: cmd, log: log.With("device", spec.Name), digits: map[string]int{},
		regs: map[profile.Table][]uint16{}, oids: map[string]any{}}
	if err := d.checkMappings(); err != nil {
		return nil, err
	}
	d.order()
	d.fillDefaults()
	switch spec.Profile.Protocol {
	case profile.Modbus:
		d.server = &modbusServer{d: d}
	case profile.SNMP:
		if spec.SNMP.Version != "v2c" && spec.SNMP.Version != "v3" {
			return nil, fmt.Errorf("device %s: SNMP version %q: want v2c or v3", spec.Name, spec.SNMP.Version)
		}
		d.server = &snmpAgent{d: d}
	default:
		return nil, fmt.Errorf("device %s: profile %s: protocol %q", spec.Name, spec.Profile.Name, spec.Profile.Protocol)
	}
	return d, nil
}

// checkMappings refuses two mapped points that would fight over one SNMP
// OID or one register (bit alarms may share a register).
func (d *Device) checkMappings() error {
	seen := map[string]string{}
	for _, m := range d.spec.Mappings {
		pt := m.Point
		if pt == nil {
			return fmt.Errorf("device %s: a mapping without a point", d.spec.Name)
		}
		if pt.AlarmSpec != nil && pt.AlarmSpec.Bit >= 0 && pt.OID == "" {
			continue
		}
		where := pt.Where()
		if other, ok := seen[where]; ok {
			return fmt.Errorf("device %s: points %s and %s both serve %s: map only one of them", d.spec.Name, other, pt.Name, where)
		}
		seen[where] = pt.Name
	}
	return nil
}

// order puts points that hold decimal digits first, so that the points
// scaled by them encode with this refresh's digits.
func (d *Device) order() {
	isDigits := map[string]bool{}
	for _, pt := range d.spec.Profile.Points {
		if pt.Digits != "" {
			isDigits[pt.Digits] = true
		}
	}
	d.isDigits = isDigits
	d.ordered = append([]Mapping(nil), d.spec.Mappings...)
	sort.SliceStable(d.ordered, func(i, j int) bool {
		return isDigits[d.ordered[i].Point.Name] && !isDigits[d.ordered[j].Point.Name]
	})
}

// fillDefaults sizes the register tables and gives every point of the
// profile its default, so that unmapped points read as a plausible zero.
func (d *Device) fillDefaults() {
	for _, pt := range d.spec.Profile.Points {
		if pt.Table != "" {
			if n := pt.End(); len(d.regs[pt.Table]) < n {
				grown := make([]uint16, n)
				copy(grown, d.regs[pt.Table])
				d.regs[pt.Table] = grown
			}
		}
	}
	for _, pt := range d.spec.Profile.Points {
		if err := d.put(pt, pt.Default()); err != nil {
			d.log.Debug("default", "point", pt.Name, "error", err.Error())
		}
	}
}

// Writes counts the write requests the device has received.
func (d *Device) Writes() uint64 { return d.writes.Load() }

// Name is the device's name.
func (d *Device) Name() string { return d.spec.Name }

// ID is the device's name (sim.Device).
func (d *Device) ID() string { return d.spec.Name }

// Element is the site element the device serves.
func (d *Device) Element() string { return d.spec.Element }

// Profile is the device's profile.
func (d *Device) Profile() *profile.Profile { return d.spec.Profile }

// Spec is the device's spec.
func (d *Device) Spec() Spec { return d.spec }

// Period is the profile's update period.
func (d *Device) Period() time.Duration { return d.spec.Profile.UpdatePeriod }

// Addr is the address the device listens on, host:port.
func (d *Device) Addr() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.addr
}

// Start serves the device on a free loopback port.
func (d *Device) Start() error {
	addr, err := d.server.start("")
	if err != nil {
		return fmt.Errorf("device %s: %w", d.spec.Name, err)
	}
	d.mu.Lock()
	d.addr, d.booted = addr, d.last
	d.mu.Unlock()
	d.log.Debug("serving", "address", addr, "profile", d.spec.Profile.Name)
	return nil
}

// Stop stops serving.
func (d *Device) Stop() {
	d.mu.Lock()
	d.releaseLocked()
	d.mu.Unlock()
	d.server.stop()
}

// Refresh reads the device's values from its source and encodes them,
// unless the device is stale or down.
func (d *Device) Refresh(now time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.booted.IsZero() {
		d.booted = now
	}
	d.last = now
	if d.faults.stale || d.faults.down {
		return
	}
	d.updates++
	filled := false
	if f, ok := d.src.(Filler); ok {
		if d.vals == nil {
			d.vals = map[string]float64{}
		}
		filled = f.Fill(d.vals)
	}
	if len(d.encoded) != len(d.ordered) {
		d.forget()
	}
	for i, m := range d.ordered {
		v, ok := d.value(m, now, filled)
		if !ok || v == d.encoded[i] {
			continue // most values do not change between updates: skip the encoding
		}
		if err := d.put(m.Point, v); err != nil {
			d.log.Debug("encode", "point", m.Point.Name, "value", v, "error", err.Error())
			continue
		}
		if d.isDigits[m.Point.Name] {
			d.forget() // the points scaled by these digits must be encoded again
		}
		d.encoded[i] = v
	}
}

// forget drops the record of encoded values, so that the next refresh
// encodes every point.
func (d *Device) forget() {
	d.encoded = make([]float64, len(d.ordered))
	for i := range d.encoded {
		d.encoded[i] = math.NaN()
	}
}

func (d *Device) value(m Mapping, now time.Time, filled bool) (float64, bool) {
	var v float64
	switch {
	case m.IsConst:
		v = m.Const
	case m.Signal == SigUpdates:
		v = float64(d.updates % 65536)
	case m.Signal == SigTime:
		v = float64(now.Unix())
	case m.Signal == SigUptime:
		v = now.Sub(d.booted).Seconds()
	default:
		var ok bool
		if filled {
			v, ok = d.vals[m.Signal]
		} else {
			v, ok = d.src.Signal(m.Signal)
		}
		if !ok {
			return 0, false
		}
	}
	if m.Factor != 0 {
		v *= m.Factor
	}
	return v, true
}

// put encodes a canonical value into the image; it clamps values that
// the data type cannot hold, as a device's firmware saturates.
func (d *Device) put(pt *profile.Point, v float64) error {
	digits := 0
	if pt.Digits != "" {
		digits = d.digits[pt.Digits]
	}
	raw, err := pt.Raw(v, digits)
	if err != nil {
		v = saturate(pt, v, digits)
		if raw, err = pt.Raw(v, digits); err != nil {
			return err
		}
	}
	if pt.Dim == profile.Raw {
		d.digits[pt.Name] = int(raw)
	}
	if pt.OID != "" {
		val, err := pt.ToSNMP(raw)
		if err != nil {
			return err
		}
		d.oids[pt.OID] = val
		return nil
	}
	return pt.Put(d.regs[pt.Table][pt.Address:pt.End()], v, digits)
}

// saturate clamps a canonical value into what the point's type holds.
func saturate(pt *profile.Point, v float64, digits int) float64 {
	lo, hi := typeBounds(pt)
	p10 := math.Pow10(digits)
	raw := (pt.InUnit(v) - pt.Offset) / pt.Scale * p10
	raw = max(lo, min(hi, raw))
	return pt.FromUnit(raw/p10*pt.Scale + pt.Offset)
}

func typeBounds(pt *profile.Point) (float64, float64) {
	switch pt.Type {
	case profile.Int16:
		return -32768, 32767
	case profile.Uint16:
		return 0, 65535
	case profile.Int32, profile.Integer:
		return -2147483648, 2147483647
	case profile.Uint32, profile.Gauge32, profile.Counter32:
		return 0, 4294967295
	}
	return -1e300, 1e300
}

// Errors of SetFault.
var ErrUnsupportedFault = errors.New("fault not supported by this device's protocol")

// Fault kinds a device takes (the names are the simulator's).
const (
	FaultReboot    = "device_reboot"
	FaultException = "modbus_exception"
	FaultTimeout   = "modbus_timeout"
	FaultGarbled   = "snmp_garbled"
	FaultStale     = "stale"
)

// SetFault puts a fault in force (on) or ends it. A reboot takes the
// device off the network; ending it brings the device back on the same
// address with its counters reset.
func (d *Device) SetFault(kind string, code int, on bool) error {
	modbus := d.spec.Profile.Protocol == profile.Modbus
	switch kind {
	case FaultStale:
		d.mu.Lock()
		d.faults.stale = on
		d.mu.Unlock()
	case FaultException, FaultTimeout:
		if !modbus {
			return fmt.Errorf("device %s (%s): %s: %w", d.spec.Name, d.spec.Profile.Protocol, kind, ErrUnsupportedFault)
		}
		d.setModbusFault(kind, code, on)
	case FaultGarbled:
		if modbus {
			return fmt.Errorf("device %s (%s): %s: %w", d.spec.Name, d.spec.Profile.Protocol, kind, ErrUnsupportedFault)
		}
		d.mu.Lock()
		d.faults.garbled = on
		d.mu.Unlock()
	case FaultReboot:
		return d.reboot(on)
	default:
		return fmt.Errorf("device %s: unknown fault %q", d.spec.Name, kind)
	}
	d.log.Info("device fault", "kind", kind, "on", on)
	return nil
}

func (d *Device) setModbusFault(kind string, code int, on bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if kind == FaultException {
		d.faults.exception = 0
		if on {
			d.faults.exception = code
		}
		return
	}
	if on && !d.faults.timeout {
		d.faults.timeout, d.faults.release = true, make(chan struct{})
	} else if !on {
		d.releaseLocked()
	}
}

func (d *Device) releaseLocked() {
	if d.faults.timeout {
		d.faults.timeout = false
		close(d.faults.release)
	}
}

func (d *Device) reboot(down bool) error {
	d.mu.Lock()
	was, addr := d.faults.down, d.addr
	d.faults.down = down
	d.mu.Unlock()
	switch {
	case down && !was:
		d.server.stop()
		d.log.Info("device down for reboot")
	case !down && was:
		if _, err := d.server.start(addr); err != nil {
			return fmt.Errorf("device %s: restart on %s: %w", d.spec.Name, addr, err)
		}
		d.mu.Lock()
		d.updates, d.booted = 0, d.last
		d.mu.Unlock()
		d.log.Info("device back after reboot", "address", addr)
	}
	return nil
}

// SetFactors makes the device encode points wrongly: value × factor on
// the wire (a defect). Every point must be one the device serves.
func (d *Device) SetFactors(factors map[string]float64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, name := range slices.Sorted(maps.Keys(factors)) {
		f := factors[name]
		found := false
		for i := range d.ordered {
			if d.ordered[i].Point.Name == name {
				d.ordered[i].Factor, found = f, true
			}
		}
		if !found {
			return fmt.Errorf("device %s serves no point %q", d.spec.Name, name)
		}
	}
	d.forget()
	return nil
}

// Read decodes a point from the device's image, as a client reading it
// over the wire would (decimal digits included).
func (d *Device) Read(name string) (float64, error) {
	pt := d.spec.Profile.Point(name)
	if pt == nil {
		return 0, fmt.Errorf("device %s: profile %s has no point %q", d.spec.Name, d.spec.Profile.Name, name)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	digits := 0
	if pt.Digits != "" {
		raw, err := d.rawLocked(d.spec.Profile.Point(pt.Digits))
		if err != nil {
			return 0, err
		}
		digits = int(raw)
	}
	if pt.OID == "" {
		return pt.Get(d.regs[pt.Table][pt.Address:pt.End()], digits)
	}
	raw, err := d.rawLocked(pt)
	if err != nil {
		return 0, err
	}
	return pt.Value(raw, digits)
}

func (d *Device) rawLocked(pt *profile.Point) (float64, error) {
	if pt.OID != "" {
		v, ok := d.oids[pt.OID]
		if !ok {
			return 0, fmt.Errorf("device %s: no value for %s", d.spec.Name, pt.Name)
		}
		return pt.FromSNMP(v)
	}
	return pt.DecodeRegisters(d.regs[pt.Table][pt.Address:pt.End()])
}
