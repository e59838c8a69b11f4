package loadbank

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/seamdc/seam/internal/binding"
)

// Edge is one load change as it ran.
type Edge struct {
	Scheduled time.Time // when it was due
	Written   time.Time // when its first setpoint write was sent
	FromKW    float64
	ToKW      float64
	Writes    int
	// Applied is when a read-back first showed ToKW (zero when none
	// did), and AppliedKW what that read-back showed.
	Applied   time.Time
	AppliedKW float64
}

// Late is how long after its schedule the edge's first write was sent.
func (e Edge) Late() time.Duration { return e.Written.Sub(e.Scheduled) }

// Set jumps to kw (the bank moves at its own fastest rate) and confirms
// it by read-back.
func (b *Bank) Set(ctx context.Context, kw float64) (Edge, error) {
	return b.Ramp(ctx, kw, 0)
}

// Ramp moves from the present setpoint to kw at rate kW/s (0: at once)
// as a sequence of setpoints at the bank's resolution, and confirms the
// end by read-back.
func (b *Bank) Ramp(ctx context.Context, kw, rate float64) (Edge, error) {
	b.cmd.Lock()
	defer b.cmd.Unlock()
	to, err := b.quantise(kw)
	if err != nil {
		return Edge{}, err
	}
	e, err := b.sequence(ctx, to, rate, b.opt.Clock.Now())
	if err != nil {
		return e, err
	}
	st, err := b.Confirm(ctx, to)
	e.Applied, e.AppliedKW = st.At, st.AppliedKW
	if err != nil {
		e.Applied = time.Time{}
	}
	return e, err
}

// sequence writes the setpoints of a ramp to `to` starting at start: one
// write per interval of max(resolution/rate, MinInterval), each a whole
// number of resolution steps ahead, the k-th at start + k × interval.
func (b *Bank) sequence(ctx context.Context, to, rate float64, start time.Time) (Edge, error) {
	from := b.Setpoint()
	e := Edge{Scheduled: start, FromKW: from, ToKW: to}
	delta := to - from
	if delta == 0 {
		return e, nil
	}
	res := math.Max(b.spec.ResolutionKW, 1e-3)
	n, interval, step := 1, time.Duration(0), math.Abs(delta)
	if rate > 0 {
		dt := math.Max(res/rate, b.opt.MinInterval.Seconds())
		step = math.Ceil(rate*dt/res-1e-9) * res
		n = int(math.Ceil(math.Abs(delta)/step - 1e-9))
		interval = time.Duration(dt * float64(time.Second))
	}
	for k := 0; k < n; k++ {
		if err := b.sleepUntil(ctx, start.Add(time.Duration(k)*interval)); err != nil {
			return e, err
		}
		v := from + math.Copysign(math.Min(float64(k+1)*step, math.Abs(delta)), delta)
		if k == n-1 {
			v = to
		}
		if k == 0 {
			e.Written = b.opt.Clock.Now()
		}
		if err := b.writeSetpoint(ctx, v); err != nil {
			return e, err
		}
		e.Writes++
	}
	return e, nil
}

func (b *Bank) sleepUntil(ctx context.Context, t time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d := t.Sub(b.opt.Clock.Now()); d > 0 {
		return b.opt.Clock.Sleep(ctx, d)
	}
	return nil
}

// Square is a square wave: cycles of period PeriodS, high for DutyPct of
// each, edges at RateKWPerS (0: as fast as the bank goes).
type Square struct {
	LowKW, HighKW, PeriodS, DutyPct, RateKWPerS float64
	Cycles                                      int
}

// Square runs a square wave that starts at the present time from the
// low load (the bank is moved there first if it is not). Edges fall at
// start + n × period and start + (n + duty) × period exactly, however
// long each edge's writes take; each edge is confirmed by read-back
// before the next is due, and onEdge (if set) sees it. It returns once
// the last period has passed and the low load is confirmed. An edge the
// bank did not follow is an error, after the wave has run.
func (b *Bank) Square(ctx context.Context, sq Square, onEdge func(Edge)) ([]Edge, error) {
	b.cmd.Lock()
	defer b.cmd.Unlock()
	low, err := b.quantise(sq.LowKW)
	if err != nil {
		return nil, err
	}
	high, err := b.quantise(sq.HighKW)
	if err != nil {
		return nil, err
	}
	if sq.PeriodS <= 0 || sq.Cycles <= 0 || sq.DutyPct <= 0 || sq.DutyPct >= 100 {
		return nil, fmt.Errorf("load bank %s: square wave needs a period, cycles and a duty between 0 and 100 %%", b.ID)
	}
	if b.Setpoint() != low {
		if _, err := b.sequence(ctx, low, sq.RateKWPerS, b.opt.Clock.Now()); err != nil {
			return nil, err
		}
	}
	period := time.Duration(sq.PeriodS * float64(time.Second))
	highFor := time.Duration(sq.PeriodS * sq.DutyPct / 100 * float64(time.Second))
	start := b.opt.Clock.Now()
	var edges []Edge
	var missed int
	for c := 0; c < sq.Cycles; c++ {
		rise := start.Add(time.Duration(c) * period)
		for _, e := range []struct {
			at, next time.Time
			to       float64
		}{{rise, rise.Add(highFor), high}, {rise.Add(highFor), rise.Add(period), low}} {
			if err := b.sleepUntil(ctx, e.at); err != nil {
				return edges, err
			}
			edge, err := b.sequence(ctx, e.to, sq.RateKWPerS, e.at)
			if err != nil {
				return edges, err
			}
			st, cerr := b.confirmBy(ctx, e.to, e.next)
			if cerr == nil {
				edge.Applied, edge.AppliedKW = st.At, st.AppliedKW
			} else if ctx.Err() != nil {
				return edges, ctx.Err()
			} else {
				missed++
				edge.AppliedKW = st.AppliedKW
			}
			edges = append(edges, edge)
			if onEdge != nil {
				onEdge(edge)
			}
		}
	}
	if err := b.sleepUntil(ctx, start.Add(time.Duration(sq.Cycles)*period)); err != nil {
		return edges, err
	}
	if missed > 0 {
		return edges, fmt.Errorf("load bank %s: %w on %d of %d square-wave edges before the next was due", b.ID, ErrNotConfirmed, missed, len(edges))
	}
	return edges, nil
}

// Zero stops any program, writes setpoint 0 at once (the bank drops the
// load at its own fastest rate), confirms 0 kW by read-back, and turns
// the bank off. It works when the bank is faulted, and it is safe to
// call concurrently with a program: no program can write after it.
func (b *Bank) Zero(ctx context.Context) (Status, error) {
	var werr error
	b.mu.Lock()
	b.halted = true
	for try := 0; try < 3; try++ { // a write can fail once on a dropped connection
		if werr = b.writeLocked(ctx, 0); werr == nil || ctx.Err() != nil {
			break
		}
	}
	b.mu.Unlock()
	st, cerr := b.Confirm(ctx, 0)
	derr := b.write(ctx, binding.RoleEnable, 0)
	if cerr != nil {
		return st, errors.Join(werr, cerr)
	}
	if werr != nil {
		b.log.Warn("setpoint 0 was not written, but the bank reads 0 kW", "err", werr)
	}
	return st, derr
}

// ZeroNow writes setpoint 0 and enable off without waiting for any
// confirmation: the second Ctrl-C.
func (b *Bank) ZeroNow(ctx context.Context) error {
	b.mu.Lock()
	b.halted = true
	err := b.writeLocked(ctx, 0)
	b.mu.Unlock()
	return errors.Join(err, b.write(ctx, binding.RoleEnable, 0))
}

// Beat writes the next heartbeat value.
func (b *Bank) Beat(ctx context.Context) error {
	b.mu.Lock()
	b.beat++
	v := b.beat
	b.mu.Unlock()
	return b.write(ctx, binding.RoleHeartbeat, float64(v))
}

// Heartbeat writes a changing heartbeat every period until ctx is done,
// on a schedule of absolute times. onErr (if set) sees each failed
// write with the number of failures in a row.
func (b *Bank) Heartbeat(ctx context.Context, period time.Duration, onErr func(err error, inARow int)) {
	next := b.opt.Clock.Now()
	fails := 0
	for {
		if err := b.sleepUntil(ctx, next); err != nil {
			return
		}
		due, sent := next, b.opt.Clock.Now()
		err := b.Beat(ctx)
		next = next.Add(period)
		if now := b.opt.Clock.Now(); now.After(next) {
			next = now
		}
		switch {
		case err == nil:
			fails = 0
			b.beats.add(due, sent, next)
		case ctx.Err() != nil:
			return
		default:
			fails++
			if onErr != nil {
				onErr(err, fails)
			}
		}
	}
}
