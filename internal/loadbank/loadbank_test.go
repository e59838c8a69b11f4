package loadbank

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/binding"
	"github.com/seamdc/seam/internal/clock"
	"github.com/seamdc/seam/internal/probe"
)

var ctx = context.Background()

func prepared(t *testing.T) (*clock.Fake, *fakeBank, *Bank) {
	clk := clock.NewFake(t0)
	dev := newFakeBank(t, clk)
	b := newBank(t, dev, clk)
	_, err := b.Prepare(ctx)
	require.NoError(t, err)
	return clk, dev, b
}

// A ramp is a sequence of setpoints at the bank's resolution, one per
// resolution/rate, on a schedule of absolute times.
func TestRampIsASetpointSequence(t *testing.T) {
	clk, dev, b := prepared(t)
	start := clk.Now()
	var e Edge
	require.NoError(t, drive(clk, time.Millisecond, func() (err error) { e, err = b.Ramp(ctx, 100, 50); return }))
	sps := dev.setpoints()[1:] // after Prepare's 0
	require.Len(t, sps, 20)
	for k, w := range sps {
		assert.Equal(t, float64(5*(k+1)), w.value, "write %d", k)
		assert.Equal(t, start.Add(time.Duration(k)*100*time.Millisecond), w.at, "write %d", k)
	}
	assert.Equal(t, start, e.Written)
	assert.Equal(t, 20, e.Writes)
	assert.Equal(t, 100.0, e.ToKW)
	assert.InDelta(t, 100, e.AppliedKW, 0.5)
	assert.False(t, e.Applied.IsZero())
}

// A ramp faster than the shortest write interval moves several
// resolution steps per write; the last write is the target.
func TestFastRampKeepsMinInterval(t *testing.T) {
	clk, dev, b := prepared(t)
	require.NoError(t, drive(clk, time.Millisecond, func() error { _, err := b.Set(ctx, 620); return err }))
	start := clk.Now()
	require.NoError(t, drive(clk, time.Millisecond, func() error { _, err := b.Ramp(ctx, 2080, 20000); return err }))
	sps := dev.setpoints()[2:]
	var values []float64
	for k, w := range sps {
		values = append(values, w.value)
		assert.Equal(t, start.Add(time.Duration(k)*10*time.Millisecond), w.at)
	}
	assert.Equal(t, []float64{820, 1020, 1220, 1420, 1620, 1820, 2020, 2080}, values)
}

// Square-wave edges fall on start + n × half period even when every
// write and read takes time: no drift over many cycles.
func TestSquareWaveEdgesDoNotDrift(t *testing.T) {
	clk, dev, b := prepared(t)
	require.NoError(t, drive(clk, time.Millisecond, func() error { _, err := b.Set(ctx, 620); return err }))
	dev.writeLatency, dev.readLatency = 3*time.Millisecond, 2*time.Millisecond
	start := clk.Now()
	var seen []Edge
	var edges []Edge
	err := drive(clk, time.Millisecond, func() (err error) {
		edges, err = b.Square(ctx, Square{LowKW: 620, HighKW: 2080, PeriodS: 4, DutyPct: 50, RateKWPerS: 0, Cycles: 25},
			func(e Edge) { seen = append(seen, e) })
		return err
	})
	require.NoError(t, err)
	require.Len(t, edges, 50)
	assert.Equal(t, edges, seen)
	for n, e := range edges {
		assert.Equal(t, start.Add(time.Duration(n)*2*time.Second), e.Scheduled, "edge %d", n)
		assert.Zero(t, e.Late(), "edge %d written late", n)
		assert.False(t, e.Applied.IsZero(), "edge %d confirmed", n)
		want := 2080.0
		if n%2 == 1 {
			want = 620
		}
		assert.Equal(t, want, e.ToKW)
		assert.InDelta(t, want, e.AppliedKW, 0.5)
	}
	// the wave lasts exactly its cycles
	assert.Equal(t, start.Add(100*time.Second), clk.Now().Truncate(time.Millisecond).Add(0))
}

// An edge the bank does not follow (it is slower than the half period)
// is reported after the wave.
func TestSquareWaveEdgeNotFollowed(t *testing.T) {
	clk, dev, b := prepared(t)
	dev.maxRate = 100 // kW/s: 1460 kW takes 14.6 s, the half period is 2 s
	err := drive(clk, time.Millisecond, func() error {
		_, err := b.Square(ctx, Square{LowKW: 0, HighKW: 1460, PeriodS: 4, DutyPct: 50, Cycles: 2}, nil)
		return err
	})
	require.ErrorIs(t, err, ErrNotConfirmed)
	assert.ErrorContains(t, err, "on 2 of 4 square-wave edges before the next was due", "the rising edges")
}

func TestSquareWaveRefusesBadShapes(t *testing.T) {
	_, _, b := prepared(t)
	_, err := b.Square(ctx, Square{LowKW: 0, HighKW: 100, PeriodS: 4, DutyPct: 100, Cycles: 1}, nil)
	assert.ErrorContains(t, err, "duty between 0 and 100")
	_, err = b.Square(ctx, Square{LowKW: 0, HighKW: 3000, PeriodS: 4, DutyPct: 50, Cycles: 1}, nil)
	assert.ErrorContains(t, err, "setpoint 3000 kW is outside 0..2500 kW")
}

func TestSetpointsQuantised(t *testing.T) {
	clk, dev, b := prepared(t)
	require.NoError(t, drive(clk, time.Millisecond, func() error { _, err := b.Set(ctx, 463); return err }))
	assert.Equal(t, 465.0, dev.setpoints()[1].value)
	_, err := b.Set(ctx, -1)
	assert.ErrorContains(t, err, "load bank lb-ma: setpoint -1 kW is outside 0..2500 kW")
}

// Zero during a ramp: no setpoint above 0 is written after it, the bank
// reads 0 and is disabled.
func TestZeroStopsARamp(t *testing.T) {
	clk, dev, b := prepared(t)
	rampErr := make(chan error, 1)
	go func() { _, err := b.Ramp(ctx, 2000, 100); rampErr <- err }()
	for len(dev.setpoints()) < 10 {
		if clk.Waiters() > 0 {
			clk.Advance(10 * time.Millisecond)
		}
	}
	var st Status
	require.NoError(t, drive(clk, time.Millisecond, func() (err error) { st, err = b.Zero(ctx); return }))
	zeroAt := len(dev.setpoints()) - 1
	for clk.Waiters() > 0 {
		clk.Advance(time.Second)
	}
	err := <-rampErr
	require.ErrorIs(t, err, ErrHalted)
	sps := dev.setpoints()
	assert.Equal(t, 0.0, sps[zeroAt].value)
	assert.Len(t, sps, zeroAt+1, "nothing written after the zero")
	assert.Zero(t, st.AppliedKW)
	en := dev.writesTo("enable")
	assert.Equal(t, 0.0, en[len(en)-1].value)
}

// A faulted bank still takes setpoint 0, and Zero confirms it.
func TestZeroWhenFaulted(t *testing.T) {
	clk, dev, b := prepared(t)
	require.NoError(t, drive(clk, time.Millisecond, func() error { _, err := b.Set(ctx, 1000); return err }))
	dev.mu.Lock()
	dev.fault = 1 // over-temperature: the bank drops its load itself
	dev.mu.Unlock()
	var st Status
	require.NoError(t, drive(clk, time.Millisecond, func() (err error) { st, err = b.Zero(ctx); return }))
	assert.Zero(t, st.AppliedKW)
	assert.Equal(t, 1, st.Fault)
	assert.Equal(t, "H0 over-temperature", st.FaultName)
}

// A bank that does not drop its load fails Zero loudly.
func TestZeroNotConfirmed(t *testing.T) {
	clk, dev, b := prepared(t)
	require.NoError(t, drive(clk, time.Millisecond, func() error { _, err := b.Set(ctx, 1000); return err }))
	dev.mu.Lock()
	dev.remote = false // switched to local: remote writes are refused
	dev.mu.Unlock()
	err := drive(clk, 10*time.Millisecond, func() error { _, err := b.Zero(ctx); return err })
	require.ErrorIs(t, err, ErrNotConfirmed)
	assert.ErrorContains(t, err, "set 0.0 kW, reads 1000.0 kW applied, enabled, local, no fault")
}

func TestZeroNowDoesNotWait(t *testing.T) {
	clk, dev, b := prepared(t)
	require.NoError(t, drive(clk, time.Millisecond, func() error { _, err := b.Set(ctx, 1000); return err }))
	before := clk.Now()
	reads := dev.reads
	require.NoError(t, b.ZeroNow(ctx))
	assert.Equal(t, before, clk.Now())
	assert.Equal(t, reads, dev.reads, "no read-back")
	assert.Equal(t, 0.0, dev.setpoints()[len(dev.setpoints())-1].value)
	_, err := b.Set(ctx, 10)
	assert.ErrorIs(t, err, ErrHalted)
}

// The heartbeat keeps the watchdog fed; when it stops, the bank drops
// its load by itself.
func TestHeartbeatAndWatchdog(t *testing.T) {
	clk, dev, b := prepared(t)
	dev.watchdog = 3 * time.Second
	require.NoError(t, drive(clk, time.Millisecond, func() error { _, err := b.Set(ctx, 800); return err }))
	hctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); b.Heartbeat(hctx, time.Second, nil) }()
	start := clk.Now()
	for clk.Now().Sub(start) < 10*time.Second {
		if clk.Waiters() > 0 {
			clk.Advance(100 * time.Millisecond)
		}
	}
	assert.Equal(t, 800.0, dev.appliedNow(), "fed for 10 s")
	stop()
	wg.Wait()
	beats := dev.writesTo("heartbeat")
	require.GreaterOrEqual(t, len(beats), 10)
	for i := 1; i < len(beats); i++ {
		assert.NotEqual(t, beats[i-1].value, beats[i].value, "each beat changes the value")
	}
	last := beats[len(beats)-1]
	assert.Equal(t, start.Add(10*time.Second), last.at.Truncate(100*time.Millisecond).Add(0), "one a second, on schedule")
	clk.Advance(3500 * time.Millisecond)
	assert.Zero(t, dev.appliedNow(), "the watchdog dropped the load")
	st, err := b.Read(ctx)
	require.NoError(t, err)
	assert.Equal(t, "H2 communication", st.FaultName)
}

func TestHeartbeatReportsFailures(t *testing.T) {
	clk := clock.NewFake(t0)
	dev := newFakeBank(t, clk)
	b := newBank(t, dev, clk)
	dev.remote = false
	var mu sync.Mutex
	var fails []int
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(fails) }
	hctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		b.Heartbeat(hctx, time.Second, func(err error, n int) { mu.Lock(); fails = append(fails, n); mu.Unlock() })
		close(done)
	}()
	for count() < 3 {
		if clk.Waiters() > 0 {
			clk.Advance(time.Second)
		}
	}
	stop()
	<-done
	assert.Equal(t, []int{1, 2, 3}, fails[:3])
}

func TestPrepare(t *testing.T) {
	clk := clock.NewFake(t0)
	dev := newFakeBank(t, clk)
	b := newBank(t, dev, clk)
	dev.fault = 3 // left latched by a runner that died
	st, err := b.Prepare(ctx)
	require.NoError(t, err)
	assert.True(t, st.Enabled)
	assert.Zero(t, st.Fault)
	assert.Len(t, dev.writesTo("fault-reset"), 1)

	dev.remote = false
	_, err = b.Prepare(ctx)
	assert.EqualError(t, err, "load bank lb-ma is in local control: switch it to remote at its panel")
}

func TestIdle(t *testing.T) {
	clk, dev, b := prepared(t)
	_, err := b.Idle(ctx)
	require.NoError(t, err)
	require.NoError(t, drive(clk, time.Millisecond, func() error { _, err := b.Set(ctx, 100); return err }))
	dev.mu.Lock()
	dev.remote = false
	dev.mu.Unlock()
	_, err = b.Idle(ctx)
	assert.EqualError(t, err, "load bank lb-ma is not idle: 100.0 kW applied, not 0; in local control (switch it to remote at its panel)")
}

func TestNewChecksRoles(t *testing.T) {
	clk := clock.NewFake(t0)
	dev := newFakeBank(t, clk)
	_, err := New(spec, &binding.LoadBank{Name: "lb-ma", Roles: map[string]string{binding.RoleApplied: "power"}}, dev, Options{})
	assert.EqualError(t, err, `load bank lb-ma: device lb-dev (profile generic-loadbank) has no point "power" for the applied role`)
}

func TestWriteErrorNamesTheBank(t *testing.T) {
	clk, dev, b := prepared(t)
	dev.mu.Lock()
	dev.remote = false
	dev.mu.Unlock()
	_, err := b.Set(ctx, 100)
	require.Error(t, err)
	assert.ErrorContains(t, err, "load bank lb-ma: setpoint: fake: setpoint: the bank is in local control")
	assert.False(t, errors.Is(err, probe.ErrNotWritable))
	_ = clk
}
