// Package binding is the site binding: it maps each logical channel of a
// site (such as "p1/ma/feed-a/voltage") and each load bank to a device
// (protocol, address, unit id, credentials by reference) and to a point of
// that device's profile. Plans name channels, never addresses; the
// binding is what ties a plan to the equipment on one site.
//
// A binding is a directory of CUE (package of any name) checked against
// an embedded schema (binding.cue):
//
//	profiles:  ["../../profiles"]                     // profile directories
//	contracts: "../../../contracts/examples/threemodule" // optional: check coverage
//	devices: {
//		"pdu-p1-a": {protocol: "snmp-v3", address: "127.0.0.1:16101", profile: "raritan-px",
//			user: "seam", auth: {protocol: "SHA", passphrase: "env:SEAM_SNMP_AUTH"},
//			priv: {protocol: "AES", passphrase: "env:SEAM_SNMP_PRIV"}}
//		"cdu-l1": {protocol: "modbus-tcp", address: "127.0.0.1:5021", unit: 1, profile: "generic-cdu-int16"}
//		"lb-ma":  {protocol: "modbus-tcp", address: "127.0.0.1:5031", profile: "generic-loadbank"}
//	}
//	channels: {
//		"p1/ma/feed-a/voltage": {device: "pdu-p1-a", point: "inlet-voltage"}
//		"l1/ma/supply-temp":    {device: "cdu-l1", point: "secondary-supply-temp"}
//	}
//	loadbanks: "lb-ma": {device: "lb-ma"} // roles default to points of the same name
//
// Load reads and checks it: every device names a known profile of its
// protocol, every channel a known device and point, every load bank a
// device whose profile has the load bank roles, credentials are
// references (env:NAME or file:PATH), never inline. When `contracts` is
// set (or Check is called with Requirements), every channel and load
// bank of the site must be bound, to a point of the channel's dimension.
// Problems are positioned diagnostics.
package binding

import (
	"slices"
	"strings"
	"time"

	"github.com/seamdc/seam/internal/diag"
	"github.com/seamdc/seam/internal/profile"
	"github.com/seamdc/seam/internal/units"
)

// Protocol is how a device is reached.
type Protocol string

// Protocols.
const (
	ModbusTCP Protocol = "modbus-tcp"
	ModbusRTU Protocol = "modbus-rtu"
	SNMPv2c   Protocol = "snmp-v2c"
	SNMPv3    Protocol = "snmp-v3"
)

// Family is the profile protocol the device speaks.
func (p Protocol) Family() profile.Protocol {
	if strings.HasPrefix(string(p), "snmp") {
		return profile.SNMP
	}
	return profile.Modbus
}

// Binding is a loaded site binding.
type Binding struct {
	Dir         string   // absolute
	ProfileDirs []string // absolute
	Contracts   string   // absolute, or ""
	Profiles    *profile.Set
	Devices     []*Device   // sorted by name
	Channels    []*Channel  // sorted by name
	LoadBanks   []*LoadBank // sorted by name
	// Simulator is the simulator in another process that serves the
	// devices (sat sim), or nil for a real site.
	Simulator *Simulator
	// Ambient are the channels that measure the test's ambient
	// conditions, each one of Channels.
	Ambient []string

	channelsPos, loadbanksPos diag.Pos
}

// Simulator is a simulated site served by another process.
type Simulator struct {
	Control   string  // the control interface's URL
	TimeScale float64 // sim seconds per wall second
	// Stepped: site time moves only when a client advances it through
	// the control interface (sat sim --stepped)
	Stepped bool
	Pos     diag.Pos
}

// Device is one device on site.
type Device struct {
	Name     string
	Protocol Protocol
	Address  string // host:port, or the serial device for RTU
	Unit     uint8  // Modbus unit id
	Serial   Serial // RTU only
	Timeout  time.Duration
	Retries  int
	// Community is the SNMP v2c community (a reference).
	Community Secret
	// V3 holds the SNMP v3 user; nil for other protocols.
	V3          *V3
	ProfileName string
	Profile     *profile.Profile // nil when the profile is unknown
	Note        string
	// Instrument is the instrument behind the device, if declared.
	Instrument *Instrument
	Pos        diag.Pos
}

// Instrument is a device's maker, serial and calibration, as the report
// shows them. Dates are "YYYY-MM-DD".
type Instrument struct {
	Make, Model, Serial string
	Calibrated, Due     string
	Certificate         string
}

// Overdue reports whether the calibration was due before day (a date
// "YYYY-MM-DD"); an instrument without a due date is never overdue.
func (i *Instrument) Overdue(day string) bool { return i != nil && i.Due != "" && i.Due < day }

// Serial is a Modbus RTU line.
type Serial struct {
	Baud, DataBits, StopBits int
	Parity                   string // none, even, odd
}

// V3 is an SNMP v3 user: authNoPriv when PrivProtocol is "", else authPriv.
type V3 struct {
	User, Context string
	AuthProtocol  string // SHA, MD5, SHA224, SHA256, SHA384, SHA512
	AuthPass      Secret
	PrivProtocol  string // AES, DES, AES192, AES256, or ""
	PrivPass      Secret
}

// Channel binds a logical channel to a device's point.
type Channel struct {
	Name       string
	DeviceName string
	PointName  string
	Optional   bool
	Device     *Device        // nil when unknown
	Point      *profile.Point // nil when unknown
	Pos        diag.Pos
}

// LoadBank binds a site load bank to a device.
type LoadBank struct {
	Name       string
	DeviceName string
	Device     *Device // nil when unknown
	// Roles maps each load bank role to the point that plays it.
	Roles map[string]string
	Pos   diag.Pos
}

// Load bank roles, and which of them are written.
const (
	RoleEnable     = "enable"
	RoleSetpoint   = "setpoint"
	RoleApplied    = "applied"
	RoleStatus     = "status"
	RoleFault      = "fault"
	RoleRemote     = "remote"
	RoleHeartbeat  = "heartbeat"
	RoleFaultReset = "fault-reset"
)

// Roles lists the load bank roles in a stable order.
var Roles = []string{RoleEnable, RoleSetpoint, RoleApplied, RoleStatus, RoleFault, RoleRemote, RoleHeartbeat, RoleFaultReset}

// roleSpec is what a role's point must be.
var roleSpec = map[string]struct {
	write bool
	dim   units.Dimension
}{
	RoleEnable: {true, profile.Raw}, RoleSetpoint: {true, units.Power}, RoleApplied: {false, units.Power},
	RoleStatus: {false, profile.Raw}, RoleFault: {false, profile.Raw}, RoleRemote: {false, profile.Raw},
	RoleHeartbeat: {true, profile.Raw}, RoleFaultReset: {true, profile.Raw},
}

// Point returns the point playing role, or nil.
func (lb *LoadBank) Point(role string) *profile.Point {
	if lb.Device == nil || lb.Device.Profile == nil {
		return nil
	}
	return lb.Device.Profile.Point(lb.Roles[role])
}

// Device returns the device called name, or nil.
func (b *Binding) Device(name string) *Device {
	i, ok := slices.BinarySearchFunc(b.Devices, name, func(d *Device, n string) int { return strings.Compare(d.Name, n) })
	if !ok {
		return nil
	}
	return b.Devices[i]
}

// Channel returns the binding of the channel called name, or nil.
func (b *Binding) Channel(name string) *Channel {
	i, ok := slices.BinarySearchFunc(b.Channels, name, func(c *Channel, n string) int { return strings.Compare(c.Name, n) })
	if !ok {
		return nil
	}
	return b.Channels[i]
}

// LoadBank returns the binding of the load bank called name, or nil.
func (b *Binding) LoadBank(name string) *LoadBank {
	i, ok := slices.BinarySearchFunc(b.LoadBanks, name, func(l *LoadBank, n string) int { return strings.Compare(l.Name, n) })
	if !ok {
		return nil
	}
	return b.LoadBanks[i]
}

// DeviceNames lists the devices' names, sorted.
func (b *Binding) DeviceNames() []string {
	out := make([]string, len(b.Devices))
	for i, d := range b.Devices {
		out[i] = d.Name
	}
	return out
}
