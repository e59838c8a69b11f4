// Package bmc is a simulated BMC: the Redfish service of one tray,
// power shelf or CDU, built on internal/redfish (its documents are
// Export's of the equipment as it physically is, trimmed to what the
// BMC manages), with live readings (Sensors, a node's
// Controls/PowerLimit, PSU metrics, a CDU's coolant) and the behaviour
// of a real BMC: basic authentication or sessions (401 on a wrong
// password), a limit of concurrent sessions, a limit of requests in
// flight (503 with Retry-After when busy), a PATCH of the power limit
// and a Reset action that reach the simulated node. Its AccountService
// (after DMTF's public-rackmount1 mockup) holds local accounts (account
// 1 is Config.User, an Administrator; up to Config.MaxAccounts): an
// Administrator changes passwords, roles, enables and unlocks accounts
// with a PATCH, creates them with a POST and deletes them; a new
// password must meet Config.Policy (refused 400 with the rule); a
// password change ends the account's other sessions; failed logins
// lock an account out for a while (Config.Lockout*, in the source's
// time); accounts survive a Reboot. Faults make it misbehave as broken
// BMCs do (401 to everyone, 404, garbage, a redirect loop, no answer, a
// Contains loop, busy, a refused power limit or password, a reset under
// a write), for the tests of whoever walks it.
//
// Its UpdateService (update.go) takes firmware by SimpleUpdate (the BMC
// fetches the image over HTTP or HTTPS) or a multipart push, each
// followed as a Task of its TaskService (tasks.go) that progresses on
// the source's clock; the BMC's own firmware, and updates applied on
// reset, install when the BMC or the system resets, and a BMC's reboot
// takes time during which it answers nothing. Faults fail an update
// half-way, stall it, leave the version unchanged, refuse the image,
// make a reset take minutes, or make the BMC forget its tasks across
// its reboot.
package bmc

import (
	"crypto/sha256"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/seamdc/seam/internal/inventory"
	"github.com/seamdc/seam/internal/redfish"
)

// Source is what a BMC serves: its equipment as it physically is, and
// the live side.
type Source interface {
	// Version changes whenever what Graph would give changes.
	Version() uint64
	// Graph is the equipment as the BMC knows it.
	Graph() (*inventory.Graph, error)
	// Live is the readings now.
	Live() Live
	// SetPowerLimit applies a PATCH of the PowerLimit control: a set
	// point in W (nil: unchanged) and a control mode ("": unchanged).
	SetPowerLimit(setPoint *float64, mode string) error
	// Reset applies ComputerSystem.Reset.
	Reset(resetType string) error
	// Now is the BMC's clock (the simulation's time).
	Now() time.Time
}

// Live is a BMC's readings.
type Live struct {
	PowerState string  // the system's: "On", "Off"; "" for equipment without one
	PowerW     float64 // the tray's draw now
	Limit      *Limit  // a node's power limit; nil: no PowerLimit control
	Sensors    []Sensor
	PSUs       map[int]PSUReading // by bay
	Coolant    *Coolant           // a CDU's secondary side
}

// Limit is a node's power limit control.
type Limit struct {
	SetPoint, Min, Max float64 // W
	Mode               string  // Automatic, Override, Manual, Disabled
}

// Sensor is one reading.
type Sensor struct {
	ID, Name        string
	ReadingType     string // Power, Temperature, …
	Units           string // W, Cel, L/min, kPa
	PhysicalContext string
	Reading         float64
}

// PSUReading is a PSU's input and output.
type PSUReading struct {
	InputW, OutputW, InputV float64
}

// Coolant is a CDU's secondary loop.
type Coolant struct {
	SupplyC, ReturnC, FlowLPM, HeatW float64
}

// Config is a BMC's identity and limits.
type Config struct {
	Name           string // for messages and its UUID
	User, Password string
	// MaxSessions is how many sessions it holds at once (default 8); a
	// new one beyond them is refused with 503 SessionLimitExceeded.
	MaxSessions int
	// MaxInFlight is how many requests it answers at once (default 4);
	// beyond them it answers 503 with Retry-After.
	MaxInFlight int
	// SessionTimeout ends a session unused for this long, in the
	// source's time (default 30 min).
	SessionTimeout time.Duration
	// Legacy serves a node's power limit only as the deprecated
	// Power resource's PowerControl[0].PowerLimit.LimitInWatts, as older
	// BMCs do: no Controls.
	Legacy bool
	// LimitUnits are the PowerLimit control's SetPointUnits: "W" (the
	// default), "%" (of AllowableMax in W), "kW", or anything else (its
	// numbers then in W, for the tests of clients that must refuse it).
	LimitUnits string
	// MaxAccounts is how many accounts it holds (default 4); a POST
	// beyond them is refused with 400 CreateLimitReachedForResource.
	MaxAccounts int
	// Policy is what a new password must be (defaults: 12 to 32
	// characters of 3 of the 4 classes); Password need not meet it.
	Policy PasswordPolicy
	// LockoutThreshold failed logins (default 5) of an account, each
	// within LockoutResetAfter (default 60 s) of the last, lock it out
	// for LockoutDuration (default 300 s), in the source's time.
	LockoutThreshold                   int
	LockoutDuration, LockoutResetAfter time.Duration
	// UpdateDuration is how long a firmware update's task runs, in the
	// source's time (default 60 s).
	UpdateDuration time.Duration
	// ResetDuration is how long a reset takes, the BMC's own reboot
	// (it answers nothing meanwhile) or the system's (default 30 s);
	// SlowResetDuration is how long under FaultSlowReset (default 10
	// min).
	ResetDuration, SlowResetDuration time.Duration
	// MaxImageSize is the largest firmware image it takes (default 64
	// MiB).
	MaxImageSize int64
	// ImageClient fetches a SimpleUpdate's image; by default a client
	// that trusts ImageRootCAs (nil: the system's roots) and gives up
	// after a minute.
	ImageClient  *http.Client
	ImageRootCAs *x509.CertPool
	Log          *slog.Logger
}

// BMC is one simulated BMC, an http.Handler.
type BMC struct {
	cfg Config
	src Source

	mu       sync.Mutex
	tree     *static
	version  uint64
	built    bool
	sessions map[string]*session // by id
	nextID   int
	inFlight int
	fault    string
	stats    Stats
	release  chan struct{} // closed when a hanging fault clears
	busyFor  int           // the next requests answered 503 (SetBusyFor)
	busyWait int           // their Retry-After, seconds
	reboots  int
	legacy   bool       // Config.Legacy, or SetLimitStyle's
	units    string     // Config.LimitUnits, or SetLimitStyle's
	accounts []*account // by id; kept across a Reboot
	fw       firmware   // updates, tasks, resets (update.go, tasks.go)
}

// Stats count what a BMC has answered.
type Stats struct {
	Requests     int `json:"requests"`
	Busy         int `json:"busy"`         // 503 because of requests in flight or sessions
	Unauthorized int `json:"unauthorized"` // 401
	MaxInFlight  int `json:"max_in_flight"`
	Sessions     int `json:"sessions"`      // open now
	SessionsMade int `json:"sessions_made"` // in all
	// Writes are the requests that would change the BMC (PATCH, and
	// POST or DELETE other than a login or logout), whether it took
	// them or not: a dry run's stay at zero.
	Writes int `json:"writes"`
	// FailedLogins are the logins (basic or session) of an existing
	// account, enabled and not locked out, with a wrong password (those
	// that count towards a lockout); Lockouts the lockouts they caused
	// so far.
	FailedLogins int `json:"failed_logins"`
	Lockouts     int `json:"lockouts"`
}

// New is a BMC serving src.
func New(cfg Config, src Source) *BMC {
	if cfg.MaxSessions <= 0 {
		cfg.MaxSessions = 8
	}
	if cfg.MaxInFlight <= 0 {
		cfg.MaxInFlight = 4
	}
	if cfg.SessionTimeout <= 0 {
		cfg.SessionTimeout = 30 * time.Minute
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	cfg.accountDefaults()
	cfg.updateDefaults()
	admin := &account{id: "1", user: cfg.User, password: cfg.Password, role: RoleAdministrator, enabled: true}
	return &BMC{cfg: cfg, src: src, sessions: map[string]*session{}, release: make(chan struct{}), legacy: cfg.Legacy, units: cfg.LimitUnits,
		accounts: []*account{admin}, fw: newFirmware()}
}

// Name is the BMC's name.
func (b *BMC) Name() string { return b.cfg.Name }

// Stats are the BMC's counts so far.
func (b *BMC) Stats() Stats {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.stats
	s.Sessions = len(b.sessions)
	return s
}

// static is the BMC's tree for its source's current version, built
// when the version changes (a defect moved or swapped something).
func (b *BMC) static() (*static, error) {
	v := b.src.Version()
	b.mu.Lock()
	if b.built && b.version == v {
		t := b.tree
		b.mu.Unlock()
		return t, nil
	}
	b.mu.Unlock()
	g, err := b.src.Graph()
	if err != nil {
		return nil, err
	}
	t, err := build(g, b.cfg.Name)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	b.tree, b.version, b.built = t, v, true
	b.mu.Unlock()
	return t, nil
}

// sessionsURI is where sessions are made.
const sessionsURI = redfish.Root + "/SessionService/Sessions"

func uuidFor(name string) string {
	s := sha256.Sum256([]byte(name))
	s[6] = s[6]&0x0f | 0x80
	s[8] = s[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", s[0:4], s[4:6], s[6:8], s[8:10], s[10:16])
}

// ServeHTTP answers one request.
func (b *BMC) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if b.tick() {
		b.mu.Lock()
		b.stats.Requests++
		b.mu.Unlock()
		hangUp(w) // rebooting: no answer
		return
	}
	b.mu.Lock()
	b.stats.Requests++
	if b.busyFor > 0 {
		b.busyFor--
		b.stats.Busy++
		wait := b.busyWait
		b.mu.Unlock()
		busy(w, wait)
		return
	}
	if b.inFlight >= b.cfg.MaxInFlight {
		b.stats.Busy++
		b.mu.Unlock()
		busy(w, 1)
		return
	}
	b.inFlight++
	b.stats.MaxInFlight = max(b.stats.MaxInFlight, b.inFlight)
	fault, release := b.fault, b.release
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		b.inFlight--
		b.mu.Unlock()
	}()
	w.Header().Set("OData-Version", "4.0")
	if b.faulty(w, r, fault, release) {
		return
	}
	uri := redfish.Clean(r.URL.Path)
	var who caller
	if !public(r.Method, uri) {
		var ok bool
		if who, ok = b.authorized(w, r); !ok {
			return
		}
	}
	b.route(w, r, uri, who)
}

// public are the resources anyone may read: the protocol versions and
// the service root (as the Redfish specification has it), and making a
// session.
func public(method, uri string) bool {
	switch {
	case method == http.MethodGet || method == http.MethodHead:
		return uri == "/redfish" || uri == redfish.Root || uri == redfish.Root+"/odata"
	case method == http.MethodPost:
		return uri == sessionsURI
	}
	return false
}
