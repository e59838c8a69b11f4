package clock

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var epoch = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

// run runs f as the first participant of l and waits for it.
func run(l *Lockstep, f func()) {
	done := make(chan struct{})
	l.Go(func() { defer close(done); f() })
	<-done
}

// recorder is a world that remembers where it was advanced to, and
// checks that no participant runs meanwhile.
type recorder struct {
	mu      sync.Mutex
	at      []time.Duration
	running *atomic.Int32
	bad     bool
}

func (r *recorder) AdvanceTo(t time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.running != nil && r.running.Load() != 0 {
		r.bad = true
	}
	r.at = append(r.at, t.Sub(epoch))
}

// trace is what participants did, in order, at which site time.
type trace struct {
	mu    sync.Mutex
	lines []string
}

func (t *trace) add(l *Lockstep, format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lines = append(t.lines, fmt.Sprintf("%6.3f ", l.Now().Sub(epoch).Seconds())+fmt.Sprintf(format, args...))
}

// scenario is a small run: three pollers at different periods, a
// heartbeat, a program that waits on a condition the pollers raise, and
// a cancellation. jitter makes every turn take a random amount of wall
// time, as a busy machine does.
func scenario(t *testing.T, jitter bool) []string {
	world := &recorder{running: &atomic.Int32{}}
	l := NewLockstep(epoch, world, 0, nil)
	defer l.Close()
	tr := &trace{}
	busy := func() {
		world.running.Add(1)
		defer world.running.Add(-1)
		if jitter {
			time.Sleep(time.Duration(rand.IntN(100)) * time.Microsecond)
			runtime.Gosched()
		}
	}
	var mu sync.Mutex
	samples := 0
	cond := NewCond(l, &mu)
	run(l, func() {
		ctx, cancel := context.WithCancel(context.Background())
		g := NewGroup(l)
		for i, period := range []time.Duration{100 * time.Millisecond, 250 * time.Millisecond, 70 * time.Millisecond} {
			g.Go(func() {
				for n := 0; ; n++ {
					if l.Sleep(ctx, period) != nil {
						tr.add(l, "poller %d stopped", i)
						return
					}
					busy()
					mu.Lock()
					samples++
					if samples%7 == 0 {
						cond.Broadcast()
					}
					mu.Unlock()
					tr.add(l, "poller %d read %d", i, n)
				}
			})
		}
		g.Go(func() {
			for l.Sleep(ctx, time.Second) == nil {
				busy()
				tr.add(l, "heartbeat")
			}
		})
		mu.Lock()
		for k := 0; k < 20; k++ {
			woke, err := cond.Wait(ctx, 2*time.Second)
			require.NoError(t, err)
			tr.add(l, "program woke=%v samples=%d", woke, samples)
		}
		mu.Unlock()
		busy()
		cancel()
		g.Wait()
		tr.add(l, "all stopped")
	})
	world.mu.Lock()
	defer world.mu.Unlock()
	assert.False(t, world.bad, "the world was advanced while a participant ran")
	for i := 1; i < len(world.at); i++ {
		require.Greater(t, world.at[i], world.at[i-1], "time only moves forward")
	}
	return tr.lines
}

// The same participants do the same things at the same site times and
// in the same order, whether each turn takes no time or a random while,
// and with other goroutines burning CPU.
func TestLockstepIsDeterministic(t *testing.T) {
	want := scenario(t, false)
	require.Greater(t, len(want), 40)
	stop := make(chan struct{})
	var burners sync.WaitGroup
	for range 2 * runtime.NumCPU() {
		burners.Add(1)
		go func() {
			defer burners.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				for i := 0; i < 1e4; i++ {
					_ = i * i
				}
				runtime.Gosched()
			}
		}()
	}
	defer func() { close(stop); burners.Wait() }()
	for range 2 {
		assert.Equal(t, want, scenario(t, true))
	}
}

// Time does not move while a participant works, however long that takes
// in wall time: a request in flight holds the clock.
func TestLockstepWaitsForTheParticipantRunning(t *testing.T) {
	l := NewLockstep(epoch, nil, 0, nil)
	defer l.Close()
	var sleeperWoke time.Time
	run(l, func() {
		g := NewGroup(l)
		g.Go(func() {
			_ = l.Sleep(context.Background(), time.Millisecond)
			sleeperWoke = l.Now()
		})
		start := l.Now()
		time.Sleep(20 * time.Millisecond) // a slow reply, in wall time
		assert.Equal(t, start, l.Now(), "no site time passed")
		_ = l.Sleep(context.Background(), 0)
		assert.Equal(t, start, l.Now(), "Sleep(0) lets the others due now run, and no more")
		g.Wait()
		assert.Equal(t, start.Add(time.Millisecond), sleeperWoke)
	})
}

// A participant cancelled by another wakes at the instant of the
// cancellation, before time moves on; one cancelled from outside wakes
// too.
func TestLockstepCancellation(t *testing.T) {
	l := NewLockstep(epoch, nil, 0, nil)
	defer l.Close()
	run(l, func() {
		ctx, cancel := context.WithCancel(context.Background())
		g := NewGroup(l)
		var woke time.Time
		var err error
		g.Go(func() {
			err = l.Sleep(ctx, time.Hour)
			woke = l.Now()
		})
		require.NoError(t, l.Sleep(context.Background(), 3*time.Second))
		cancel()
		g.Wait()
		assert.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, epoch.Add(3*time.Second), woke)
	})
	outside, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	var mu sync.Mutex
	c := NewCond(l, &mu)
	l.Go(func() {
		mu.Lock()
		defer mu.Unlock()
		_, err := c.Wait(outside, 0)
		done <- err
	})
	time.Sleep(time.Millisecond)
	cancel()
	assert.ErrorIs(t, <-done, context.Canceled)
	assert.Equal(t, epoch.Add(3*time.Second), l.Now(), "an outside cancellation does not move time")
}

// A Cond wait times out in site time; a broadcast wakes it at once.
func TestLockstepCond(t *testing.T) {
	l := NewLockstep(epoch, nil, 0, nil)
	defer l.Close()
	var mu sync.Mutex
	c := NewCond(l, &mu)
	run(l, func() {
		mu.Lock()
		woke, err := c.Wait(context.Background(), 1500*time.Millisecond)
		mu.Unlock()
		require.NoError(t, err)
		assert.False(t, woke)
		assert.Equal(t, epoch.Add(1500*time.Millisecond), l.Now())

		Go(l, func() {
			_ = l.Sleep(context.Background(), 200*time.Millisecond)
			mu.Lock()
			c.Broadcast()
			mu.Unlock()
		})
		mu.Lock()
		woke, err = c.Wait(context.Background(), time.Minute)
		mu.Unlock()
		require.NoError(t, err)
		assert.True(t, woke)
		assert.Equal(t, epoch.Add(1700*time.Millisecond), l.Now())
	})
}

// With a limit the clock goes no faster than it: 2 s of site time at
// 20× take at least 100 ms of wall time. (A busy machine can only make
// it slower.)
func TestLockstepLimit(t *testing.T) {
	l := NewLockstep(epoch, nil, 20, nil)
	defer l.Close()
	start := time.Now()
	run(l, func() {
		for range 20 {
			_ = l.Sleep(context.Background(), 100*time.Millisecond)
		}
	})
	assert.GreaterOrEqual(t, time.Since(start), 95*time.Millisecond)
	assert.Equal(t, epoch.Add(2*time.Second), l.Now())
}

// A goroutine that is not a participant cannot wait on the clock: it
// would let time move while it runs.
func TestLockstepRefusesOutsiders(t *testing.T) {
	l := NewLockstep(epoch, nil, 0, nil)
	defer l.Close()
	assert.PanicsWithValue(t, fmt.Sprintf("clock.Lockstep: goroutine %d waits on the clock without holding the turn (goroutine 0 holds it): start it with clock.Go", goid()),
		func() { _ = l.Sleep(context.Background(), time.Second) })
	// After is for outsiders
	ch := l.After(time.Second)
	assert.Equal(t, epoch.Add(time.Second), <-ch)
}

func BenchmarkLockstepTurn(b *testing.B) {
	l := NewLockstep(epoch, nil, 0, nil)
	defer l.Close()
	run(l, func() {
		for b.Loop() {
			_ = l.Sleep(context.Background(), time.Millisecond)
		}
	})
}
