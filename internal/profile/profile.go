// Package profile is the device profile model: what one vendor model's
// points are (Modbus registers or SNMP OIDs), how their values are
// encoded, and what the device bears. The probe reads devices through
// it and the simulator serves devices from it, using the same codec in
// both directions so that client and server can never disagree.
//
// Profiles are CUE files (see fixtures/profiles and docs/devices.md),
// validated against an embedded schema (profile.cue):
//
//	profiles: "generic-cdu-int16": {
//		vendor: "generic", model: "CDU", protocol: "modbus"
//		update_period: "1 s"
//		limits: {max_registers: 125, max_gap: 8}
//		points: "secondary-supply-temp": {table: "input", address: 2,
//			type: "int16", scale: 0.1, unit: "degC"}
//	}
//
// Loading and iterating:
//
//	set, diags, err := profile.Load("fixtures/profiles")
//	// err: unreadable directory; diags: positioned problems (file:line:col)
//	p := set.Get("generic-cdu-int16")
//	for _, pt := range p.Points { // sorted by name
//		pt.Table, pt.Address, pt.Registers() // Modbus: where it lives
//		pt.OID                               // SNMP: where it lives
//		pt.Type, pt.Order                    // data type, word order
//		pt.Scale, pt.Offset, pt.Digits       // raw → value (Digits: a point holding 10^-n)
//		pt.Unit, pt.Dim                      // "degC", units.Temperature (or Alarm, or Raw)
//		pt.Writable()                        // access "write"
//	}
//	p.UpdatePeriod, p.StaleAfter, p.Limits // how often it updates, what it bears
//	p.Plan                                 // Modbus read requests, planned once at load
//
// Values pass through two levels. The raw level is the number on the
// wire: DecodeRegisters/EncodeRegisters (Modbus, per type and word
// order) and FromSNMP/ToSNMP (SNMP, per type). The value level is in
// canonical units (units.Canonical of the point's dimension): Value
// turns a raw number into a canonical value, Raw turns it back. Alarms
// have the value 1 (active) or 0. Point.Put and Point.Get do both levels
// at once on a register image, keeping the other bits of a register that
// several alarm points share.
package profile

import (
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/seamdc/seam/internal/diag"
	"github.com/seamdc/seam/internal/units"
)

// Protocol is how a profile's device is read.
type Protocol string

// Protocols.
const (
	Modbus Protocol = "modbus"
	SNMP   Protocol = "snmp"
)

// Table is a Modbus data table.
type Table string

// Modbus tables.
const (
	Holding  Table = "holding"
	Input    Table = "input"
	Coil     Table = "coil"
	Discrete Table = "discrete"
)

// IsBits reports whether the table holds single bits (coils, discrete inputs).
func (t Table) IsBits() bool { return t == Coil || t == Discrete }

// DataType is how a point's raw value is encoded.
type DataType string

// Data types. Modbus: Int16..Bool; SNMP: Integer..OctetString.
const (
	Int16       DataType = "int16"
	Uint16      DataType = "uint16"
	Int32       DataType = "int32"
	Uint32      DataType = "uint32"
	Float32     DataType = "float32"
	Bool        DataType = "bool"
	Integer     DataType = "Integer"
	Gauge32     DataType = "Gauge32"
	Counter32   DataType = "Counter32"
	Counter64   DataType = "Counter64"
	OctetString DataType = "OctetString"
)

// WordOrder is the byte order of a multi-byte value, A being the most
// significant byte: ABCD big-endian, CDAB word-swapped, BADC
// byte-swapped, DCBA little-endian.
type WordOrder string

// Word orders.
const (
	ABCD WordOrder = "ABCD"
	CDAB WordOrder = "CDAB"
	BADC WordOrder = "BADC"
	DCBA WordOrder = "DCBA"
)

// Access says whether a point may be written.
type Access string

// Accesses.
const (
	Read  Access = "read"
	Write Access = "write"
)

// Pseudo-dimensions of points that are not physical quantities.
const (
	// Alarm points read 1 when active and 0 when not; the same string as
	// contract.Alarm, the quantity of alarm channels.
	Alarm units.Dimension = "alarm"
	// Raw points are plain numbers: codes, states, counters.
	Raw units.Dimension = ""
)

// Set is the profiles loaded from one or more directories.
type Set struct {
	Profiles []*Profile // sorted by name
}

// Get returns the profile called name, or nil.
func (s *Set) Get(name string) *Profile {
	i, ok := slices.BinarySearchFunc(s.Profiles, name, func(p *Profile, n string) int { return strings.Compare(p.Name, n) })
	if !ok {
		return nil
	}
	return s.Profiles[i]
}

// Names lists the profiles' names, sorted.
func (s *Set) Names() []string {
	out := make([]string, len(s.Profiles))
	for i, p := range s.Profiles {
		out[i] = p.Name
	}
	return out
}

// Profile is one vendor model.
type Profile struct {
	Name, Vendor, Model, Note string
	Protocol                  Protocol
	// UpdatePeriod is how often the device refreshes its measurements.
	UpdatePeriod time.Duration
	// StaleAfter is how long a freshness marker (timestamp, heartbeat)
	// may stay unchanged before readings are stale: 3 × UpdatePeriod
	// unless the profile says otherwise.
	StaleAfter time.Duration
	// Freshness names a point that changes at every update, or "".
	Freshness string
	Limits    Limits
	// Watchdog is a load bank's heartbeat watchdog, or nil.
	Watchdog *Watchdog
	// MinSwitchingPeriod is a load bank's shortest square-wave period
	// (its contactors' limit), or 0 when the profile states none.
	MinSwitchingPeriod time.Duration
	Points             []*Point // sorted by name
	// Plan is the Modbus read requests covering every point, planned once
	// at load within Limits. Empty for SNMP.
	Plan []Request
	// Batches are the SNMP GETs covering every point, at most
	// Limits.MaxOIDs OIDs each. Empty for Modbus.
	Batches [][]*Point
	Dir     string   // the directory the profile was loaded from
	Pos     diag.Pos // relative to Dir
}

// Point returns the point called name, or nil.
func (p *Profile) Point(name string) *Point {
	i, ok := slices.BinarySearchFunc(p.Points, name, func(pt *Point, n string) int { return strings.Compare(pt.Name, n) })
	if !ok {
		return nil
	}
	return p.Points[i]
}

// PointNames lists the points' names, sorted.
func (p *Profile) PointNames() []string {
	out := make([]string, len(p.Points))
	for i, pt := range p.Points {
		out[i] = pt.Name
	}
	return out
}

// Watchdog is a load bank's heartbeat watchdog: with no change of its
// heartbeat for After it drops the load and latches fault code Fault.
type Watchdog struct {
	After time.Duration
	Fault int
}

// Limits is what a device bears.
type Limits struct {
	MaxRegisters   int           // registers per Modbus read (1..125)
	MaxBits        int           // coils or discrete inputs per Modbus read (1..2000)
	MaxGap         int           // unused registers (or bits) a request may span to merge neighbours
	MaxOIDs        int           // variable bindings per SNMP GET
	MaxRepetitions int           // SNMP GETBULK max-repetitions
	MinGap         time.Duration // minimum time between two requests
}

// DefaultLimits are the limits of a profile that states none.
var DefaultLimits = Limits{MaxRegisters: 125, MaxBits: 2000, MaxGap: 0, MaxOIDs: 10, MaxRepetitions: 10}

// Point is one readable or writable value of a device.
type Point struct {
	Name string
	// Modbus
	Table   Table
	Address uint16
	// SNMP: a numeric OID without leading dot
	OID string

	Type  DataType
	Order WordOrder // Modbus only; ABCD unless stated
	// value = raw ÷ 10^digits × Scale + Offset, in Unit
	Scale, Offset float64
	// Digits names the point holding this point's decimal digits, or "".
	Digits string
	// Timestamp names the point holding the device time (Unix seconds)
	// of this point's measurement, or "".
	Timestamp string
	Unit      string          // "" for alarms and raw points
	Dim       units.Dimension // the unit's dimension, Alarm or Raw
	AlarmSpec *AlarmSpec      // set for alarm points
	States    map[int64]string
	// Unavailable raw values mean the device has no measurement.
	Unavailable []int64
	// Plausible bounds the value in Unit; outside it a reading is an error.
	Plausible Range
	Access    Access
	Note      string
	Pos       diag.Pos

	// canonical = value in Unit × unitScale + unitOffset
	unitScale, unitOffset float64
}

// AlarmSpec says when an alarm point is active: bit Bit of the raw value
// is set (Bit ≥ 0), or the raw value is one of Active, or else the raw
// value is not 0.
type AlarmSpec struct {
	Bit    int // -1: no bit
	Active []int64
	Normal int64 // the raw value when not active
}

// Range is an interval of values; an unset side is open.
type Range struct {
	Min, Max       float64
	HasMin, HasMax bool
}

// Contains reports whether v lies in r.
func (r Range) Contains(v float64) bool {
	return (!r.HasMin || v >= r.Min) && (!r.HasMax || v <= r.Max)
}

// Writable reports whether the point may be written.
func (pt *Point) Writable() bool { return pt.Access == Write }

// Registers is how many 16-bit registers (or bits, for coils and
// discrete inputs) the point occupies; 0 for SNMP points.
func (pt *Point) Registers() int {
	switch pt.Type {
	case Int16, Uint16, Bool:
		return 1
	case Int32, Uint32, Float32:
		return 2
	}
	return 0
}

// End is the address after the point's last register.
func (pt *Point) End() int { return int(pt.Address) + pt.Registers() }

// CanonicalUnit is the unit of the point's values: units.Canonical of its
// dimension, or "" for alarms and raw points.
func (pt *Point) CanonicalUnit() string {
	if pt.Dim == Alarm || pt.Dim == Raw {
		return ""
	}
	return units.Canonical(pt.Dim)
}

// StateName returns the name of a raw state value, or "".
func (pt *Point) StateName(raw int64) string { return pt.States[raw] }

// Where describes where the point lives: "input register 20",
// "OID 1.3.6.1.2.1.33.1.4.1.0".
func (pt *Point) Where() string {
	if pt.OID != "" {
		return "OID " + pt.OID
	}
	kind := map[Table]string{Holding: "holding register", Input: "input register", Coil: "coil", Discrete: "discrete input"}[pt.Table]
	return kind + " " + itoa(int(pt.Address))
}

func sortPoints(pts []*Point) {
	sort.Slice(pts, func(i, j int) bool { return pts[i].Name < pts[j].Name })
}

func itoa(i int) string { return strconv.Itoa(i) }
