package runner

import (
	"context"
	"sync"
	"time"

	"github.com/seamdc/seam/internal/clock"
)

// SiteTime is a simulated site's own time.
type SiteTime interface{ Now() time.Time }

// SimClock is the clock of a run against a simulator in the same
// process: site time is the simulation's time. Between physics steps it
// moves on smoothly at scale × wall time, but it never strays more than
// lead from the simulation: when the simulator cannot keep up (a busy
// machine, a pause), the run's clock waits for it, so every duration the
// run measures is a duration of the simulated physics; when it runs
// ahead (it steps in whole physics steps), the clock catches up.
//
// The other way round, Gate says how far the simulation may run: no
// further than lead past the earliest time a goroutine of the run sleeps
// until. A goroutine the machine is too busy to wake (a heartbeat, a
// poll) thereby holds the simulation back, instead of finding that the
// physics went on without it: a load bank's watchdog does not trip on a
// heartbeat that was due but not yet scheduled. Drive the simulator with
// Pace (sim.Site.Run(ctx, clk.Pace(), 1)); driven by this clock it would
// wait for itself.
type SimClock struct {
	site  SiteTime
	scale float64
	lead  time.Duration

	mu       sync.Mutex
	origin   time.Time // site time at wall0
	wall0    time.Time
	last     time.Time
	held     int64 // times the clock was held back to the simulation
	sleepers map[uint64]time.Time
	next     uint64
}

// NewSimClock starts a clock at the site's present time running scale
// times wall time, at most lead ahead of the site.
func NewSimClock(site SiteTime, scale float64, lead time.Duration) *SimClock {
	now := site.Now()
	return &SimClock{site: site, scale: scale, lead: lead, origin: now, wall0: time.Now(), last: now, sleepers: map[uint64]time.Time{}}
}

// Now is the site time.
func (c *SimClock) Now() time.Time {
	s := c.site.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	w := c.origin.Add(time.Duration(float64(time.Since(c.wall0)) * c.scale))
	if limit := s.Add(c.lead); w.After(limit) {
		c.origin, c.wall0, w = limit, time.Now(), limit
		c.held++
	}
	if floor := s.Add(-c.lead); w.Before(floor) {
		c.origin, c.wall0, w = floor, time.Now(), floor // the simulation ran ahead: catch up
	}
	if w.Before(c.last) {
		w = c.last
	}
	c.last = w
	return w
}

// Held counts how often the clock waited for the simulation.
func (c *SimClock) Held() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.held
}

// Gate is the latest site time the simulation may reach now: lead past
// the earliest deadline a goroutine of the run sleeps until, or the far
// future when none sleeps.
func (c *SimClock) Gate() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	var earliest time.Time
	for _, t := range c.sleepers {
		if earliest.IsZero() || t.Before(earliest) {
			earliest = t
		}
	}
	if earliest.IsZero() {
		return time.Unix(1<<62, 0)
	}
	return earliest.Add(c.lead)
}

func (c *SimClock) register(t time.Time) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.next++
	c.sleepers[c.next] = t
	return c.next
}

func (c *SimClock) unregister(id uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.sleepers, id)
}

// Sleep waits until the site time is d later, or ctx is done.
func (c *SimClock) Sleep(ctx context.Context, d time.Duration) error {
	target := c.Now().Add(d)
	defer c.unregister(c.register(target))
	t := time.NewTimer(0)
	defer t.Stop()
	<-t.C
	for {
		left := target.Sub(c.Now())
		if left <= 0 {
			return ctx.Err()
		}
		t.Reset(max(time.Duration(float64(left)/c.scale), 50*time.Microsecond))
		select {
		case <-t.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// After delivers the site time once d of site time has passed.
func (c *SimClock) After(d time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	go func() {
		_ = c.Sleep(context.Background(), d)
		ch <- c.Now()
	}()
	return ch
}

// Pace returns the clock a simulator's run loop steps by: each reading
// is the simulation's own time plus the site time that passed since the
// loop last read it (scale × wall time, at most half a second), but
// never past Gate. A loop that falls behind (a busy machine) goes on
// from where it is instead of skipping, and the simulation never runs
// ahead of a goroutine of the run that is due. Only one loop may read it.
func (c *SimClock) Pace() clock.Clock {
	return &pace{c: c}
}

// maxPace is the most site time one reading of Pace grants.
const maxPace = 500 * time.Millisecond

type pace struct {
	c    *SimClock
	mu   sync.Mutex
	last time.Time // wall time of the last reading; zero before the first
}

// Now grants the simulation the site time since the last reading.
func (p *pace) Now() time.Time {
	s := p.c.site.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	if p.last.IsZero() {
		p.last = now
		return s
	}
	// at most half a second at once: a simulator's loop skips ahead
	// (drops time) when it is more than a second behind its clock
	step := min(time.Duration(float64(now.Sub(p.last))*p.c.scale), maxPace)
	p.last = now
	if room := p.c.Gate().Sub(s); step > room {
		step = max(room, 0)
	}
	return s.Add(step)
}

// After fires once d of site time would have passed at the time scale.
func (p *pace) After(d time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	time.AfterFunc(time.Duration(float64(d)/p.c.scale), func() { ch <- time.Time{} })
	return ch
}

// Sleep waits d of site time at the time scale.
func (p *pace) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(time.Duration(float64(d) / p.c.scale))
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
