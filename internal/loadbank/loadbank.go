// Package loadbank drives a load bank through the points its profile
// declares for the load bank roles (internal/binding): enable, setpoint,
// heartbeat and fault-reset are written, applied, remote, fault and
// status are read. Nothing else is ever written, and the probe refuses
// any point the profile does not declare writable before a byte reaches
// the wire.
//
// Loads move only as setpoint sequences: a ramp is a sequence of
// setpoints at the bank's step resolution, written on a schedule of
// absolute times on the clock, so that a long ramp does not drift; a
// square wave's edges fall at start + n × period (and + duty) however
// long each write takes. Every change is confirmed by reading the
// applied load back. Zero works whatever state the bank is in: it writes
// setpoint 0 and confirms by read-back; ZeroNow writes setpoint 0 and
// enable off without waiting, for a second Ctrl-C. A heartbeat goroutine
// keeps the bank's watchdog fed while the runner lives, so a runner
// killed with SIGKILL drops the load through the bank's own watchdog.
package loadbank

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/seamdc/seam/internal/binding"
	"github.com/seamdc/seam/internal/clock"
	"github.com/seamdc/seam/internal/plan"
	"github.com/seamdc/seam/internal/probe"
	"github.com/seamdc/seam/internal/profile"
)

// Options tune a bank's control.
type Options struct {
	Clock clock.Clock  // clock.Real{} when nil
	Log   *slog.Logger // discards when nil
	// MinInterval is the shortest time between two setpoint writes of a
	// ramp; 0 means the larger of the profile's minimum gap and 10 ms.
	MinInterval time.Duration
	// ConfirmSlack is how much longer than the bank's own ramp a read-back
	// may take to show the new load; 0 means 2 s or three update periods,
	// whichever is longer.
	ConfirmSlack time.Duration
	// OnWrite, if set, is called after every setpoint write with the
	// value and the time the write was sent.
	OnWrite func(kw float64, at time.Time)
}

// Bank is one load bank under control. Its methods are safe for
// concurrent use; setpoint commands are serialised.
type Bank struct {
	ID    string
	spec  plan.LoadBank
	dev   probe.Device
	roles map[string]string
	opt   Options
	log   *slog.Logger

	// both are held across waits on the clock (a write waits for the
	// device's minimum gap), so they are clock.Mutexes
	cmd      *clock.Mutex // one setpoint program at a time
	mu       *clock.Mutex // held across every setpoint write
	setpoint float64      // last written
	halted   bool         // Zero or ZeroNow ran: programs may not write
	beat     uint16

	beats beatLog
}

// beatLog remembers the last heartbeats: when each was due and when it
// was written, so that a watchdog trip can say how late they were.
type beatLog struct {
	mu   sync.Mutex
	due  time.Time // the next beat's schedule; zero: none running
	last []beatAt  // the most recent, oldest first
}

type beatAt struct{ due, sent time.Time }

const beatsKept = 32

func (l *beatLog) add(due, sent, next time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.last = append(l.last, beatAt{due, sent})
	if len(l.last) > beatsKept {
		l.last = l.last[1:]
	}
	l.due = next
}

// HeartbeatLate is how late, at most, the heartbeats due since since
// were written, counting one still not written at now.
func (b *Bank) HeartbeatLate(since, now time.Time) time.Duration {
	l := &b.beats
	l.mu.Lock()
	defer l.mu.Unlock()
	late := time.Duration(0)
	for _, bt := range l.last {
		if !bt.due.Before(since) {
			late = max(late, bt.sent.Sub(bt.due))
		}
	}
	if !l.due.IsZero() && now.After(l.due) {
		late = max(late, now.Sub(l.due))
	}
	return late
}

// Watchdog is the bank's heartbeat watchdog as its profile declares it,
// or nil.
func (b *Bank) Watchdog() *profile.Watchdog { return b.dev.Profile().Watchdog }

// Tripped reports whether st is the bank's watchdog trip: the fault code
// its profile gives the watchdog.
func (b *Bank) Tripped(st Status) bool {
	w := b.Watchdog()
	return w != nil && st.Fault == w.Fault
}

// ErrHalted is returned by a program that tries to write after Zero.
var ErrHalted = errors.New("the load bank was zeroed: no further setpoints are written")

// ErrNotConfirmed is returned when the applied load did not reach the
// setpoint in time.
var ErrNotConfirmed = errors.New("the applied load did not follow the setpoint")

// New returns the bank bound as lb, opened as dev, as the plan declares
// it (rating, resolution, fastest ramp).
func New(spec plan.LoadBank, lb *binding.LoadBank, dev probe.Device, opt Options) (*Bank, error) {
	if opt.Clock == nil {
		opt.Clock = clock.Real{}
	}
	if opt.Log == nil {
		opt.Log = slog.New(slog.DiscardHandler)
	}
	p := dev.Profile()
	for _, role := range binding.Roles {
		name := lb.Roles[role]
		if name == "" {
			name = role
		}
		if p.Point(name) == nil {
			return nil, fmt.Errorf("load bank %s: device %s (profile %s) has no point %q for the %s role", spec.ID, dev.Name(), p.Name, name, role)
		}
	}
	if spec.RatingKW <= 0 {
		return nil, fmt.Errorf("load bank %s: rating %g kW: want a positive rating", spec.ID, spec.RatingKW)
	}
	if opt.MinInterval <= 0 {
		opt.MinInterval = max(p.Limits.MinGap, 10*time.Millisecond)
	}
	if opt.ConfirmSlack <= 0 {
		opt.ConfirmSlack = max(2*time.Second, 3*p.UpdatePeriod)
	}
	roles := map[string]string{}
	for _, role := range binding.Roles {
		roles[role] = lb.Roles[role]
		if roles[role] == "" {
			roles[role] = role
		}
	}
	return &Bank{ID: spec.ID, spec: spec, dev: dev, roles: roles, opt: opt, cmd: clock.NewMutex(opt.Clock), mu: clock.NewMutex(opt.Clock),
		log: opt.Log.With("load_bank", spec.ID, "device", dev.Name())}, nil
}

// Spec is the bank as the plan declares it.
func (b *Bank) Spec() plan.LoadBank { return b.spec }

// Device is the device the bank is driven through.
func (b *Bank) Device() probe.Device { return b.dev }

// Setpoint is the last setpoint written, kW.
func (b *Bank) Setpoint() float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.setpoint
}

// Status is what the bank reports.
type Status struct {
	At        time.Time
	AppliedKW float64
	Enabled   bool
	Remote    bool
	Fault     int    // 0: none
	FaultName string // the profile's name for the fault code
	Word      int    // the status word
}

func (s Status) String() string {
	mode := "local"
	if s.Remote {
		mode = "remote"
	}
	on := "disabled"
	if s.Enabled {
		on = "enabled"
	}
	f := "no fault"
	if s.Fault != 0 {
		f = fmt.Sprintf("fault %d (%s)", s.Fault, s.FaultName)
	}
	return fmt.Sprintf("%.1f kW applied, %s, %s, %s", s.AppliedKW, on, mode, f)
}

// Read reads the bank's status once. An unreadable role point is an
// error naming it.
func (b *Bank) Read(ctx context.Context) (Status, error) {
	rs, err := b.dev.Read(ctx)
	if ctx.Err() != nil {
		return Status{}, ctx.Err()
	}
	return b.StatusOf(rs, err)
}

// StatusOf is the status in one read of the bank's device (its readings
// and the read's error), as Read gives it.
func (b *Bank) StatusOf(rs []probe.Reading, err error) (Status, error) {
	byPoint := map[string]probe.Reading{}
	for _, r := range rs {
		byPoint[r.Point] = r
	}
	get := func(role string) (probe.Reading, error) {
		r, ok := byPoint[b.roles[role]]
		if !ok {
			return r, fmt.Errorf("load bank %s: no reading of %s (%s role): %v", b.ID, b.roles[role], role, err)
		}
		if r.Quality == probe.Bad {
			return r, fmt.Errorf("load bank %s: %s role: %w", b.ID, role, r.Err)
		}
		return r, nil
	}
	var st Status
	var errs []error
	for _, role := range []string{binding.RoleApplied, binding.RoleEnable, binding.RoleRemote, binding.RoleFault, binding.RoleStatus} {
		r, err := get(role)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		switch role {
		case binding.RoleApplied:
			st.AppliedKW, st.At = r.Value, r.Received
		case binding.RoleEnable:
			st.Enabled = r.Value != 0
		case binding.RoleRemote:
			st.Remote = r.Value != 0
		case binding.RoleFault:
			st.Fault, st.FaultName = int(r.Raw), r.State
		case binding.RoleStatus:
			st.Word = int(r.Raw)
		}
	}
	switch len(errs) {
	case 0:
		return st, nil
	case 1:
		return st, errs[0]
	}
	return st, fmt.Errorf("%w (and %d more of its roles)", errs[0], len(errs)-1)
}

// AtZero reports whether st shows no load applied, within the bank's
// read-back tolerance.
func (b *Bank) AtZero(st Status) bool { return st.AppliedKW <= b.tolerance(0) }

// Idle checks the bank is ready for a case: 0 kW applied, in remote
// control, no fault.
func (b *Bank) Idle(ctx context.Context) (Status, error) {
	st, err := b.Read(ctx)
	if err != nil {
		return st, err
	}
	var problems []string
	if st.AppliedKW > b.tolerance(0) {
		problems = append(problems, fmt.Sprintf("%.1f kW applied, not 0", st.AppliedKW))
	}
	if !st.Remote {
		problems = append(problems, "in local control (switch it to remote at its panel)")
	}
	if st.Fault != 0 {
		problems = append(problems, fmt.Sprintf("fault %d (%s)", st.Fault, st.FaultName))
	}
	if len(problems) > 0 {
		return st, fmt.Errorf("load bank %s is not idle: %s", b.ID, join(problems))
	}
	return st, nil
}

func join(xs []string) string {
	out := ""
	for i, x := range xs {
		if i > 0 {
			out += "; "
		}
		out += x
	}
	return out
}

// Prepare makes the bank ready to take load after the operator accepted
// the risk: heartbeat written, a latched fault reset once (a real bank
// refuses while the cause persists), setpoint 0, enabled. It fails
// unless the bank then reports remote control, no fault and 0 kW.
func (b *Bank) Prepare(ctx context.Context) (Status, error) {
	st, err := b.Read(ctx)
	if err != nil {
		return st, err
	}
	if !st.Remote {
		return st, fmt.Errorf("load bank %s is in local control: switch it to remote at its panel", b.ID)
	}
	if err := b.Beat(ctx); err != nil {
		return st, err
	}
	if st.Fault != 0 {
		b.log.Warn("resetting a latched fault", "fault", st.Fault, "fault_name", st.FaultName)
		if err := b.write(ctx, binding.RoleFaultReset, 1); err != nil {
			return st, err
		}
	}
	b.mu.Lock()
	b.halted = false
	err = b.writeLocked(ctx, 0)
	b.mu.Unlock()
	if err != nil {
		return st, err
	}
	if err := b.write(ctx, binding.RoleEnable, 1); err != nil {
		return st, err
	}
	if st, err = b.ready(ctx); err != nil {
		return st, err
	}
	if st.Fault != 0 {
		return st, fmt.Errorf("load bank %s still reports fault %d (%s) after a reset: clear its cause at the bank", b.ID, st.Fault, st.FaultName)
	}
	if !st.Enabled {
		return st, fmt.Errorf("load bank %s did not enable (%s)", b.ID, st)
	}
	return b.Idle(ctx)
}

// ready reads the bank until it reports enabled without a fault (a
// device shows a command at its next update), or the confirm slack has
// passed; it returns the last status.
func (b *Bank) ready(ctx context.Context) (Status, error) {
	deadline := b.opt.Clock.Now().Add(b.opt.ConfirmSlack)
	for {
		st, err := b.Read(ctx)
		if err != nil || (st.Enabled && st.Fault == 0) || !b.opt.Clock.Now().Before(deadline) {
			return st, err
		}
		if err := b.opt.Clock.Sleep(ctx, max(b.dev.Profile().UpdatePeriod, 10*time.Millisecond)); err != nil {
			return st, err
		}
	}
}

func (b *Bank) write(ctx context.Context, role string, v float64) error {
	if err := b.dev.Write(ctx, b.roles[role], v); err != nil {
		return fmt.Errorf("load bank %s: %s: %w", b.ID, role, err)
	}
	return nil
}

// quantise rounds kw to the bank's resolution and refuses what the bank
// cannot take.
func (b *Bank) quantise(kw float64) (float64, error) {
	if math.IsNaN(kw) || kw < 0 || kw > b.spec.RatingKW+1e-9 {
		return 0, fmt.Errorf("load bank %s: setpoint %g kW is outside 0..%g kW", b.ID, kw, b.spec.RatingKW)
	}
	if r := b.spec.ResolutionKW; r > 0 {
		kw = math.Round(kw/r) * r
	}
	return math.Min(kw, b.spec.RatingKW), nil
}

// writeSetpoint writes a program's setpoint, unless the bank was
// zeroed: the check and the write happen under one lock, so a program
// can never put load back after Zero.
func (b *Bank) writeSetpoint(ctx context.Context, kw float64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.halted {
		return fmt.Errorf("load bank %s: %w", b.ID, ErrHalted)
	}
	return b.writeLocked(ctx, kw)
}

func (b *Bank) writeLocked(ctx context.Context, kw float64) error {
	at := b.opt.Clock.Now()
	if err := b.write(ctx, binding.RoleSetpoint, kw); err != nil {
		return err
	}
	b.setpoint = kw
	if b.opt.OnWrite != nil {
		b.opt.OnWrite(kw, at)
	}
	return nil
}

// tolerance is how close a read-back must come to kw: half the bank's
// resolution, or 2 % of the load (a resistive bank's power follows the
// square of the voltage), whichever is larger, and at least 0.5 kW.
func (b *Bank) tolerance(kw float64) float64 {
	return math.Max(math.Max(b.spec.ResolutionKW/2, 0.02*kw), 0.5)
}

// Confirm reads the bank back until the applied load is within
// tolerance of kw, or until a full-scale move at the bank's fastest
// ramp plus the confirm slack has passed. It returns the last status.
func (b *Bank) Confirm(ctx context.Context, kw float64) (Status, error) {
	d := b.opt.ConfirmSlack
	if r := b.spec.MaxRateKWPerS; r > 0 {
		d += time.Duration(b.spec.RatingKW / r * float64(time.Second))
	}
	return b.confirmBy(ctx, kw, b.opt.Clock.Now().Add(d))
}

// confirmBy polls at the device's update period until deadline.
func (b *Bank) confirmBy(ctx context.Context, kw float64, deadline time.Time) (Status, error) {
	period := b.dev.Profile().UpdatePeriod
	if period <= 0 {
		period = 100 * time.Millisecond
	}
	var st Status
	var err error
	for {
		st, err = b.Read(ctx)
		if err == nil && math.Abs(st.AppliedKW-kw) <= b.tolerance(kw) {
			return st, nil
		}
		if ctx.Err() != nil {
			return st, ctx.Err()
		}
		now := b.opt.Clock.Now()
		if !now.Before(deadline) {
			if err != nil {
				return st, fmt.Errorf("load bank %s: cannot confirm %.1f kW: %w", b.ID, kw, err)
			}
			return st, fmt.Errorf("load bank %s: %w: set %.1f kW, reads %s", b.ID, ErrNotConfirmed, kw, st)
		}
		if serr := b.opt.Clock.Sleep(ctx, min(period, deadline.Sub(now))); serr != nil {
			return st, serr
		}
	}
}
