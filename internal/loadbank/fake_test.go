package loadbank

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/binding"
	"github.com/seamdc/seam/internal/clock"
	"github.com/seamdc/seam/internal/plan"
	"github.com/seamdc/seam/internal/probe"
	"github.com/seamdc/seam/internal/profile"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

var (
	profOnce sync.Once
	profs    *profile.Set
	profErr  error
)

func loadbankProfile(t testing.TB) *profile.Profile {
	t.Helper()
	profOnce.Do(func() { profs, profErr = profile.MustLoad("../../fixtures/profiles") })
	require.NoError(t, profErr)
	p := profs.Get("generic-loadbank")
	require.NotNil(t, p)
	return p
}

// fakeBank is a load bank behind probe.Device, on a fake clock: the
// applied load follows the setpoint at maxRate, the watchdog drops the
// load and latches fault 3 when the heartbeat stops changing (when
// watchdog is set). Reads and
// writes take the given latencies of fake time.
type fakeBank struct {
	p   *profile.Profile
	clk *clock.Fake

	mu                        sync.Mutex
	enable, remote            bool
	setpoint, applied, hb     float64
	fault                     int
	last, lastBeat            time.Time
	maxRate                   float64
	watchdog                  time.Duration
	readLatency, writeLatency time.Duration
	writes                    []written
	reads                     int
}

type written struct {
	point string
	value float64
	at    time.Time
}

func newFakeBank(t testing.TB, clk *clock.Fake) *fakeBank {
	return &fakeBank{p: loadbankProfile(t), clk: clk, remote: true, maxRate: 50000,
		last: clk.Now(), lastBeat: clk.Now()}
}

func (f *fakeBank) Name() string              { return "lb-dev" }
func (f *fakeBank) Profile() *profile.Profile { return f.p }
func (f *fakeBank) Requests() int64           { return int64(f.reads + len(f.writes)) }
func (f *fakeBank) Close() error              { return nil }

// step brings the model to now. Called with mu held.
func (f *fakeBank) step() {
	now := f.clk.Now()
	if f.enable && f.watchdog > 0 && now.Sub(f.lastBeat) > f.watchdog {
		f.fault, f.enable, f.applied = 3, false, 0
	}
	target := 0.0
	if f.enable && f.fault == 0 {
		target = f.setpoint
	}
	move := f.maxRate * now.Sub(f.last).Seconds()
	if math.Abs(target-f.applied) <= move || f.maxRate == 0 {
		f.applied = target
	} else {
		f.applied += math.Copysign(move, target-f.applied)
	}
	f.last = now
}

func (f *fakeBank) Read(ctx context.Context) ([]probe.Reading, error) {
	if f.readLatency > 0 {
		f.clk.Advance(f.readLatency)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.step()
	f.reads++
	now := f.clk.Now()
	vals := map[string]float64{"enable": b2f(f.enable), "setpoint": f.setpoint, "applied": f.applied, "remote": b2f(f.remote),
		"fault": float64(f.fault), "status": b2f(f.enable) * 4, "heartbeat": f.hb, "fault-reset": 0, "voltage": 415, "current": 0, "emergency-stop": 0}
	var out []probe.Reading
	for _, pt := range f.p.Points {
		v := vals[pt.Name]
		out = append(out, probe.Reading{Device: f.Name(), Point: pt.Name, Value: v, Raw: v, Unit: pt.CanonicalUnit(),
			State: pt.StateName(int64(v)), Received: now, Quality: probe.Good})
	}
	return out, nil
}

func (f *fakeBank) Write(ctx context.Context, point string, v float64) error {
	pt := f.p.Point(point)
	if pt == nil || !pt.Writable() {
		return fmt.Errorf("fake: %s: %w", point, probe.ErrNotWritable)
	}
	if f.writeLatency > 0 {
		f.clk.Advance(f.writeLatency)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.step()
	f.writes = append(f.writes, written{point, v, f.clk.Now()})
	if !f.remote {
		return fmt.Errorf("fake: %s: the bank is in local control", point)
	}
	switch point {
	case "enable":
		on := v != 0
		if on && !f.enable {
			f.lastBeat = f.clk.Now()
		}
		f.enable = on && f.fault == 0
	case "setpoint":
		f.setpoint = v
	case "heartbeat":
		if v != f.hb {
			f.hb, f.lastBeat = v, f.clk.Now()
		}
	case "fault-reset":
		if v != 0 {
			f.fault = 0
		}
	}
	return nil
}

// setpoints lists the setpoint writes.
func (f *fakeBank) setpoints() []written {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []written
	for _, w := range f.writes {
		if w.point == "setpoint" {
			out = append(out, w)
		}
	}
	return out
}

func (f *fakeBank) writesTo(point string) []written {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []written
	for _, w := range f.writes {
		if w.point == point {
			out = append(out, w)
		}
	}
	return out
}

func (f *fakeBank) appliedNow() float64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.step()
	return f.applied
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

var spec = plan.LoadBank{ID: "lb-ma", Kind: "resistive", RatingKW: 2500, ResolutionKW: 5, MaxRateKWPerS: 50000, Module: "ma"}

func newBank(t testing.TB, dev probe.Device, clk clock.Clock) *Bank {
	t.Helper()
	b, err := New(spec, &binding.LoadBank{Name: "lb-ma", DeviceName: dev.Name(), Roles: map[string]string{}}, dev, Options{Clock: clk})
	require.NoError(t, err)
	return b
}

// drive runs f while advancing the fake clock by step whenever a
// goroutine waits on it, and returns f's error.
func drive(clk *clock.Fake, step time.Duration, f func() error) error {
	done := make(chan error, 1)
	go func() { done <- f() }()
	for {
		select {
		case err := <-done:
			return err
		default:
		}
		if clk.Waiters() > 0 {
			clk.Advance(step)
		} else {
			runtime.Gosched()
		}
	}
}
