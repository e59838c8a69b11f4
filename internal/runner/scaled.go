package runner

import (
	"context"
	"time"
)

// Scaled is the clock of a simulated site that runs faster than wall
// time: site time is origin + scale × the wall time since it was made.
// The simulator steps its physics at the same scale from the same
// moment (sim.Site.Run with clock.Real), so waits, ramps and samples in
// site time line up with the simulated devices.
type Scaled struct {
	origin time.Time
	wall0  time.Time // carries the monotonic reading
	scale  float64
}

// NewScaled starts a clock at origin running scale times wall time.
func NewScaled(origin time.Time, scale float64) *Scaled {
	return &Scaled{origin: origin, wall0: time.Now(), scale: scale}
}

// Scale is site seconds per wall second.
func (s *Scaled) Scale() float64 { return s.scale }

// Now is the site time.
func (s *Scaled) Now() time.Time {
	return s.origin.Add(time.Duration(float64(time.Since(s.wall0)) * s.scale))
}

func (s *Scaled) wall(d time.Duration) time.Duration { return time.Duration(float64(d) / s.scale) }

// After delivers the site time once d of site time has passed.
func (s *Scaled) After(d time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	time.AfterFunc(s.wall(d), func() { ch <- s.Now() })
	return ch
}

// Sleep waits d of site time, or until ctx is done.
func (s *Scaled) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(s.wall(d))
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
