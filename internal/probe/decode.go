package probe

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seamdc/seam/internal/binding"
	"github.com/seamdc/seam/internal/profile"
)

// base is what Modbus and SNMP devices share.
type base struct {
	dev      *binding.Device
	opts     Options
	fresh    *freshness
	requests atomic.Int64
	lastSent time.Time // guarded by the device's lock

	// worked out once from the profile: per point (in profile order) its
	// canonical unit and the index of its digits and timestamp points
	// (-1: none); the index of the freshness point
	units          []string
	digits, stamps []int
	freshIdx       int
	index          map[string]int

	scratch []raw // one read's wire values, reused; guarded by the device's lock
}

// raws returns the read's wire values, one per point, all zero: a
// buffer kept across reads, since readings copies out of it. Called
// with the device's lock held.
func (b *base) raws() []raw {
	if b.scratch == nil {
		b.scratch = make([]raw, len(b.dev.Profile.Points))
	}
	clear(b.scratch)
	return b.scratch
}

func (b *base) init(dev *binding.Device, opts Options) {
	p := dev.Profile
	b.dev, b.opts, b.fresh = dev, opts, newFreshness(p)
	b.index = make(map[string]int, len(p.Points))
	for i, pt := range p.Points {
		b.index[pt.Name] = i
	}
	at := func(name string) int {
		if i, ok := b.index[name]; ok && name != "" {
			return i
		}
		return -1
	}
	for _, pt := range p.Points {
		b.units = append(b.units, pt.CanonicalUnit())
		b.digits = append(b.digits, at(pt.Digits))
		b.stamps = append(b.stamps, at(pt.Timestamp))
	}
	b.freshIdx = at(p.Freshness)
}

// indices returns the profile indices of points.
func (b *base) indices(points []*profile.Point) []int {
	out := make([]int, len(points))
	for i, pt := range points {
		out[i] = b.index[pt.Name]
	}
	return out
}

// gap waits until the device's minimum gap since the last request has
// passed. Called with the device's lock held; it lets go of the lock
// while it waits, so that no lock is held across a wait on the clock
// (the turns of a clock.Lockstep would deadlock on it), and checks
// again once it has the lock back: another request may have gone first.
func (b *base) gap(ctx context.Context, held sync.Locker) error {
	min := b.dev.Profile.Limits.MinGap
	for min > 0 && !b.lastSent.IsZero() {
		wait := b.lastSent.Add(min).Sub(b.opts.Clock.Now())
		if wait <= 0 {
			break
		}
		held.Unlock()
		err := b.opts.Clock.Sleep(ctx, wait)
		held.Lock()
		if err != nil {
			return err
		}
	}
	return ctx.Err()
}

func (b *base) Name() string              { return b.dev.Name }
func (b *base) Profile() *profile.Profile { return b.dev.Profile }
func (b *base) Requests() int64           { return b.requests.Load() }

// raw is one point's wire value, or the error of the request that
// should have carried it.
type raw struct {
	value    float64
	err      error
	latency  time.Duration
	received time.Time
}

// readings turns raw values (indexed like the profile's points) into
// readings in the profile's point order: decimal digits, scale, units,
// unavailable values, plausibility, states and staleness.
func (b *base) readings(raws []raw) []Reading {
	p := b.dev.Profile
	rs := make([]Reading, len(p.Points))
	for i, pt := range p.Points {
		rw, r := &raws[i], &rs[i]
		r.Device, r.Point, r.Unit, r.Raw, r.Alarm = b.dev.Name, pt.Name, b.units[i], rw.value, pt.Dim == profile.Alarm
		r.Received, r.Latency, r.Err, r.HasRaw = rw.received, rw.latency, rw.err, rw.err == nil
		if rw.err != nil {
			r.Quality = Bad
			continue
		}
		if err := b.value(r, i, raws); err != nil {
			r.Quality, r.Err = Bad, &Error{Device: b.dev, Op: "read", Point: pt.Name, Where: pt.Where(), Err: err}
		}
	}
	b.fresh.apply(p, rs, b.stamps, b.freshIdx, b.opts.Clock.Now())
	return rs
}

func (b *base) value(r *Reading, i int, raws []raw) error {
	pt := b.dev.Profile.Points[i]
	digits := 0
	if j := b.digits[i]; j >= 0 {
		d := raws[j]
		if d.err != nil {
			where := ""
			if dp := b.dev.Profile.Point(pt.Digits); dp != nil {
				where = " at " + dp.Where()
			}
			return fmt.Errorf("its decimal digits (point %s%s) could not be read: %w", pt.Digits, where, d.err)
		}
		if d.value < 0 || d.value > 9 {
			return fmt.Errorf("its decimal digits (%s) read %g, outside 0..9", pt.Digits, d.value)
		}
		digits = int(d.value)
	}
	v, err := pt.Value(r.Raw, digits)
	if err != nil {
		if errors.Is(err, profile.ErrUnavailable) {
			return fmt.Errorf("raw value %g: %w", r.Raw, profile.ErrUnavailable)
		}
		return err
	}
	if err := pt.Implausible(r.Raw, digits); err != nil {
		return err
	}
	r.Value = v
	r.State = pt.StateName(int64(r.Raw))
	return nil
}

// firstErr returns the first error among readings.
func firstErr(rs []Reading) error {
	for _, r := range rs {
		if r.Quality == Bad {
			return r.Err
		}
	}
	return nil
}
