package runner

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/seamdc/seam/internal/clock"
)

// toySim steps like sim.Site.Run: every 10 ms of site time (at the
// clock's pace) it runs whole 10 ms physics steps up to the clock.
type toySim struct {
	mu    sync.Mutex
	epoch time.Time
	t     time.Duration
}

func (s *toySim) Now() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.epoch.Add(s.t)
}

func (s *toySim) run(ctx context.Context, clk clock.Clock) {
	start := clk.Now()
	base := s.Now().Sub(s.epoch)
	for {
		select {
		case <-ctx.Done():
			return
		case <-clk.After(10 * time.Millisecond):
		}
		due := base + clk.Now().Sub(start)
		s.mu.Lock()
		for s.t+5*time.Millisecond <= due {
			s.t += 10 * time.Millisecond
		}
		s.mu.Unlock()
	}
}

// The run's clock follows the simulation within the lead both ways, and
// the simulation goes no further than the lead past the earliest
// deadline of a goroutine that sleeps: one that is due but not yet
// awake holds it back.
func TestSimClockAndPace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &toySim{epoch: time.Now()}
		c := NewSimClock(s, 20, 50*time.Millisecond)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go s.run(ctx, c.Pace())

		start := c.Now()
		assert.NoError(t, c.Sleep(ctx, 3*time.Second))
		assert.GreaterOrEqual(t, c.Now().Sub(start), 3*time.Second)
		assert.InDelta(t, 3.0, s.Now().Sub(s.epoch).Seconds(), 0.06, "3 s of site time is 3 s of simulation")
		assert.InDelta(t, 0.15, time.Since(s.epoch).Seconds(), 0.01, "at 20 × wall time")

		// a goroutine due at +1 s that the machine does not wake
		due := c.Now().Add(time.Second)
		id := c.register(due)
		time.Sleep(time.Second) // 20 s of site time, were nothing held
		assert.LessOrEqual(t, s.Now(), due.Add(50*time.Millisecond), "the simulation waits for it")
		assert.GreaterOrEqual(t, s.Now(), due, "up to its deadline")
		assert.LessOrEqual(t, c.Now().Sub(s.Now()).Abs(), 50*time.Millisecond)
		c.unregister(id)
		time.Sleep(time.Second)
		assert.Greater(t, s.Now().Sub(due), 15*time.Second, "then it goes on")
		cancel()
	})
}
