package runner

import (
	"context"
	"sync"
	"time"
)

// SiteTime is a simulated site's own time.
type SiteTime interface{ Now() time.Time }

// SimClock is the clock of a run against a simulator in the same
// process: site time is the simulation's time. Between physics steps it
// moves on smoothly at scale × wall time, but it never runs more than
// Lead ahead of the simulation: when the simulator cannot keep up (a
// busy machine, a pause), the run's clock waits for it instead of
// drifting away, so every duration the run measures is a duration of
// the simulated physics. Drive the simulator with another clock (a
// Scaled one at scale 1, so that it steps in small slices of wall time):
// driven by this one, it would wait for itself.
type SimClock struct {
	site  SiteTime
	scale float64
	lead  time.Duration

	mu     sync.Mutex
	origin time.Time // site time at wall0
	wall0  time.Time
	last   time.Time
	held   int64 // times the clock was held back to the simulation
}

// NewSimClock starts a clock at the site's present time running scale
// times wall time, at most lead ahead of the site.
func NewSimClock(site SiteTime, scale float64, lead time.Duration) *SimClock {
	now := site.Now()
	return &SimClock{site: site, scale: scale, lead: lead, origin: now, wall0: time.Now(), last: now}
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

// Sleep waits until the site time is d later, or ctx is done.
func (c *SimClock) Sleep(ctx context.Context, d time.Duration) error {
	target := c.Now().Add(d)
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
