package probe

import (
	"context"
	"errors"
	"fmt"
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
}

// gap waits until the device's minimum gap since the last request has
// passed. Called with the device's lock held.
func (b *base) gap(ctx context.Context) error {
	min := b.dev.Profile.Limits.MinGap
	if min <= 0 || b.lastSent.IsZero() {
		return ctx.Err()
	}
	if wait := b.lastSent.Add(min).Sub(b.opts.Clock.Now()); wait > 0 {
		return b.opts.Clock.Sleep(ctx, wait)
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

// readings turns raw values into readings in the profile's point order:
// decimal digits, scale, units, unavailable values, plausibility, states
// and staleness.
func (b *base) readings(raws map[string]raw) []Reading {
	p := b.dev.Profile
	rs := make([]Reading, len(p.Points))
	byName := make(map[string]int, len(p.Points))
	for i, pt := range p.Points {
		byName[pt.Name] = i
		rw := raws[pt.Name]
		rs[i] = Reading{Device: b.dev.Name, Point: pt.Name, Unit: pt.CanonicalUnit(), Raw: rw.value, Alarm: pt.Dim == profile.Alarm,
			Received: rw.received, Latency: rw.latency, Err: rw.err}
		if rw.err != nil {
			rs[i].Quality = Bad
			continue
		}
		if err := b.value(&rs[i], pt, raws); err != nil {
			rs[i].Quality, rs[i].Err = Bad, &Error{Device: b.dev, Op: "read", Point: pt.Name, Where: pt.Where(), Err: err}
		}
	}
	b.fresh.apply(p, rs, byName, b.opts.Clock.Now())
	return rs
}

func (b *base) value(r *Reading, pt *profile.Point, raws map[string]raw) error {
	digits := 0
	if pt.Digits != "" {
		d := raws[pt.Digits]
		if d.err != nil {
			return fmt.Errorf("its decimal digits (%s) could not be read", pt.Digits)
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
