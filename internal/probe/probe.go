// Package probe reads and writes devices through their profiles: PDUs
// and UPSes over SNMP (github.com/gosnmp/gosnmp), CDUs and load banks
// over Modbus (github.com/simonvetter/modbus).
//
// A Device is opened from a binding.Device, whose profile says what to
// read. Read returns one Reading per point of the profile: the value in
// canonical units, the device's own timestamp if it has one, the receive
// time, the latency of the request that carried it, a Quality (good,
// stale, error) and the error. A failure never panics and never hides:
// every error names the device, its address and unit, the point, and
// what happened ("timed out after 1s", "exception 02 illegal data
// address").
//
// Modbus: the requests are planned once per profile (profile.Plan) by
// merging neighbouring registers within the device's limits; a lock per
// device serialises requests and keeps the device's minimum gap; any
// error closes the connection and the next request opens a new one (the
// library does not reconnect, and reading before a successful open
// panics in it). A read that fails on a connection that had worked is
// retried once on a fresh connection, so a device restart costs no
// reading.
//
// SNMP: one gosnmp client per device, used by one goroutine at a time
// (gosnmp is not goroutine-safe); GETs batched within the profile's
// max_oids; v2c, and v3 authNoPriv or authPriv. Walk checks for the
// silent early stops of gosnmp's walks.
//
// Staleness comes from the device's update period: a point's device
// timestamp (Raritan) or the profile's freshness counter (a heartbeat)
// that has not changed for StaleAfter makes readings stale.
//
// Writes: only points declared writable in the profile may be written;
// any other write is refused before anything reaches the wire, as is a
// value outside the point's plausible range.
//
// Every wait (minimum gaps, poll schedules, staleness) uses a
// clock.Clock, so tests drive time exactly.
package probe

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/seamdc/seam/internal/binding"
	"github.com/seamdc/seam/internal/clock"
	"github.com/seamdc/seam/internal/profile"
)

// Quality says how far a reading can be trusted.
type Quality int

// Qualities.
const (
	Good  Quality = iota
	Stale         // read, but the device has not refreshed it
	Bad           // not read: see Err
)

func (q Quality) String() string { return [...]string{"good", "stale", "error"}[q] }

// MarshalText writes the quality's name.
func (q Quality) MarshalText() ([]byte, error) { return []byte(q.String()), nil }

// Reading is one point read once.
type Reading struct {
	Device string
	Point  string
	// Value is in canonical units (Unit); alarms read 1 or 0.
	Value float64
	Unit  string
	// Raw is the number on the wire, before scale and digits; HasRaw
	// says whether one was read (a reading can be bad with its raw
	// number known: implausible, or its digits unreadable).
	Raw    float64
	HasRaw bool
	// State names the raw value, for points with states.
	State string
	// Alarm is set for alarm points: Value is 1 when the alarm is active.
	Alarm bool
	// DeviceTime is the device's own time of the measurement, or zero.
	DeviceTime time.Time
	Received   time.Time
	Latency    time.Duration
	Quality    Quality
	Err        error
}

// Options are what every device needs from its caller.
type Options struct {
	Clock  clock.Clock  // clock.Real{} when nil
	Logger *slog.Logger // discards when nil
	// LookupEnv resolves env: credentials; os.LookupEnv when nil.
	LookupEnv func(string) (string, bool)
}

func (o Options) withDefaults() Options {
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.LookupEnv == nil {
		o.LookupEnv = os.LookupEnv
	}
	return o
}

// Device is an opened device.
type Device interface {
	Name() string
	Profile() *profile.Profile
	// Read reads every point of the profile once. Failures are readings
	// of quality Bad; the error is the first of them, for logging, or
	// ctx's error.
	Read(ctx context.Context) ([]Reading, error)
	// Write sets a writable point to a value in canonical units.
	Write(ctx context.Context, point string, value float64) error
	// Requests counts the requests sent since the device was opened.
	Requests() int64
	Close() error
}

// ErrNotWritable is returned, before anything is sent, for a write to a
// point that the profile does not declare writable.
var ErrNotWritable = errors.New("the profile does not declare the point writable")

// Open returns a device for dev, whose Profile must be set (a loaded
// binding has set it). Nothing is sent until the first Read or Write.
func Open(dev *binding.Device, opts Options) (Device, error) {
	if dev.Profile == nil {
		return nil, fmt.Errorf("device %s: no profile (binding not checked?)", dev.Name)
	}
	opts = opts.withDefaults()
	switch dev.Protocol {
	case binding.ModbusTCP, binding.ModbusRTU:
		return newModbus(dev, opts), nil
	case binding.SNMPv2c, binding.SNMPv3:
		return newSNMP(dev, opts)
	}
	return nil, fmt.Errorf("device %s: unknown protocol %q", dev.Name, dev.Protocol)
}

// checkWrite refuses a write that must not reach the wire.
func checkWrite(dev *binding.Device, point string, value float64) (*profile.Point, error) {
	pt := dev.Profile.Point(point)
	if pt == nil {
		return nil, &Error{Device: dev, Op: "write", Point: point, Err: fmt.Errorf("profile %s has no point %q", dev.ProfileName, point)}
	}
	if !pt.Writable() {
		return nil, &Error{Device: dev, Op: "write", Point: point, Where: pt.Where(), Err: ErrNotWritable}
	}
	if err := pt.CheckValue(value); err != nil {
		return nil, &Error{Device: dev, Op: "write", Point: point, Where: pt.Where(), Err: fmt.Errorf("refused: %w", err)}
	}
	return pt, nil
}
