package sim

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/binding"
	"github.com/seamdc/seam/internal/clock"
	"github.com/seamdc/seam/internal/diag"
)

func signal(t *testing.T, s *Sim, element, name string) float64 {
	t.Helper()
	v, err := s.Site.Signal(element, name)
	require.NoError(t, err)
	return v
}

func TestLoadBankSlewsAndQuantises(t *testing.T) {
	s := example(t, "")
	require.NoError(t, s.Site.Command("lb-ma", "heartbeat", 1))
	require.NoError(t, s.Site.Command("lb-ma", "enable", 1))
	require.NoError(t, s.Site.Command("lb-ma", "setpoint", 1002))
	s.Site.Step(1)
	assert.InDelta(t, 500, signal(t, s, "lb-ma", "applied"), 1e-9, "50 MW/s for 10 ms")
	s.Site.Step(2)
	assert.InDelta(t, 1000, signal(t, s, "lb-ma", "applied"), 1e-9, "1002 kW at a 5 kW resolution")
	assert.Equal(t, 2+4+8.0, signal(t, s, "lb-ma", "status"), "ready, fan running, load applied")
	// the load shows up on the block and, a step later, in the loop
	s.Site.Step(1)
	assert.InDelta(t, 1000, signal(t, s, "p1/block", "power"), 1e-9)
	assert.InDelta(t, 1000, signal(t, s, "l1/loop", "heat"), 1e-9)
}

func TestLoadBankWatchdogDropsTheLoad(t *testing.T) {
	s := example(t, "")
	lb := s.Site.LoadBank("lb-ma")
	require.NoError(t, s.Site.Command("lb-ma", "heartbeat", 1))
	require.NoError(t, s.Site.Command("lb-ma", "enable", 1))
	require.NoError(t, s.Site.Command("lb-ma", "setpoint", 2000))
	s.Site.Advance(2 * time.Second)
	require.NoError(t, s.Site.Command("lb-ma", "heartbeat", 1), "writing the same value is not a heartbeat")
	s.Site.Advance(time.Second)
	assert.Equal(t, 2000.0, lb.Applied(), "3 s after the last heartbeat: not yet")
	s.Site.Step(1)
	assert.Zero(t, lb.Applied(), "past the 3 s watchdog the load drops at once")
	assert.Equal(t, float64(FaultComms), signal(t, s, "lb-ma", "fault"))
	assert.Zero(t, signal(t, s, "lb-ma", "enable"))
	require.NoError(t, s.Site.Command("lb-ma", "enable", 1))
	assert.Zero(t, signal(t, s, "lb-ma", "enable"), "a latched fault keeps the bank off")
	require.NoError(t, s.Site.Command("lb-ma", "fault-reset", 1))
	require.NoError(t, s.Site.Command("lb-ma", "enable", 1))
	s.Site.Step(5)
	assert.Equal(t, 2000.0, lb.Applied())
}

func TestLoadBankRefusals(t *testing.T) {
	s := example(t, "")
	assert.ErrorIs(t, s.Site.Command("lb-ma", "setpoint", 2600), ErrOutOfRange, "above the 2.5 MW rating")
	assert.ErrorIs(t, s.Site.Command("lb-ma", "applied", 1), ErrReadOnly)
	on := true
	require.NoError(t, s.Site.SetLoadBank("lb-ma", LoadBankControl{Local: &on}))
	assert.ErrorIs(t, s.Site.Command("lb-ma", "setpoint", 100), ErrLocal)
	assert.Zero(t, signal(t, s, "lb-ma", "remote"))
	off := false
	require.NoError(t, s.Site.SetLoadBank("lb-ma", LoadBankControl{Local: &off, EmergencyStop: &on}))
	require.NoError(t, s.Site.Command("lb-ma", "heartbeat", 1))
	require.NoError(t, s.Site.Command("lb-ma", "enable", 1))
	require.NoError(t, s.Site.Command("lb-ma", "setpoint", 100))
	s.Site.Step(5)
	assert.Zero(t, signal(t, s, "lb-ma", "applied"), "an emergency stop holds the load at zero")
	assert.Equal(t, 1.0, signal(t, s, "lb-ma", "emergency-stop"))
}

func TestFaultTargetsAreChecked(t *testing.T) {
	s := example(t, "")
	err := s.Site.Inject(Fault{Kind: "pump_explodes", Target: "x"})
	assert.ErrorContains(t, err, `unknown fault "pump_explodes"`)
	assert.ErrorContains(t, err, "pump_trip")
	err = s.Site.Inject(Fault{Kind: PumpTrip, Target: "l1/loop/cdu-1"})
	assert.ErrorContains(t, err, "l1/loop/cdu-1 is a cdu, want a pump")
	err = s.Site.Inject(Fault{Kind: FeedLoss, Target: "p9/block/a"})
	assert.ErrorContains(t, err, `no feed "p9/block/a" in the site (for example p1/block/a`)
	assert.ErrorContains(t, s.Site.Clear(Leak, "l1/loop/cdu-2"), "no leak fault on l1/loop/cdu-2 in force")
	err = s.Site.Inject(Fault{Kind: Stale, Target: "no-such-device"})
	assert.ErrorContains(t, err, `no device "no-such-device"`)
}

func TestFaultForClearsItself(t *testing.T) {
	s := example(t, "")
	require.NoError(t, s.Site.Inject(Fault{Kind: BreakerOpen, Target: "p2/block/b", For: 2}))
	assert.Equal(t, []ActiveFault{{Fault: Fault{Kind: BreakerOpen, Target: "p2/block/b", For: 2}, Since: 0}}, s.Site.Faults())
	s.Site.Advance(time.Second)
	assert.Zero(t, signal(t, s, "p2/block", "feed-b-breaker"))
	s.Site.Advance(time.Second)
	assert.Empty(t, s.Site.Faults())
	assert.Equal(t, 1.0, signal(t, s, "p2/block", "feed-b-breaker"))
}

func TestScriptPlaysOnSimTime(t *testing.T) {
	s := example(t, "")
	require.NoError(t, s.Site.Play("cell-1-failures"))
	s.Site.Advance(9990 * time.Millisecond)
	assert.Empty(t, s.Site.Faults())
	s.Site.Step(1)
	require.Len(t, s.Site.Faults(), 1)
	assert.Equal(t, PumpTrip, s.Site.Faults()[0].Kind)
	assert.Equal(t, 2.0, signal(t, s, "l1/loop/cdu-1", "pump1-state"), "fault")
	s.Site.Advance(30 * time.Second)
	assert.Empty(t, s.Site.Faults(), "cleared after its 30 s")
	s.Site.Advance(145 * time.Second) // 185 s
	require.Len(t, s.Site.Faults(), 1)
	assert.Equal(t, ControllerSilent, s.Site.Faults()[0].Kind)
	assert.ErrorContains(t, s.Site.Play("nope"), `no script "nope"`)
}

func TestDeviceFaultsThroughTheSite(t *testing.T) {
	s := example(t, "")
	require.NoError(t, s.Site.Inject(Fault{Kind: Stale, Target: "pdu-p1"}))
	before, err := s.ReadChannel("p1/ma/feed-a/power")
	require.NoError(t, err)
	require.NoError(t, s.Site.Command("lb-ma", "heartbeat", 1))
	require.NoError(t, s.Site.Command("lb-ma", "enable", 1))
	require.NoError(t, s.Site.Command("lb-ma", "setpoint", 1000))
	s.Site.Advance(time.Second)
	after, _ := s.ReadChannel("p1/ma/feed-a/power")
	assert.Equal(t, before, after, "a stale device serves its old values")
	require.NoError(t, s.Site.Clear(Stale, "pdu-p1"))
	s.Site.Advance(200 * time.Millisecond)
	after, _ = s.ReadChannel("p1/ma/feed-a/power")
	assert.InDelta(t, 500, after, 0.1)
	assert.ErrorContains(t, s.Site.Inject(Fault{Kind: SNMPGarbled, Target: "pdu-p1"}), "not supported")

	require.NoError(t, s.Start())
	defer s.Close()
	require.NoError(t, s.Site.Inject(Fault{Kind: DeviceReboot, Target: "ups-p1-a"}))
	assert.Equal(t, RebootTime, s.Site.Faults()[0].For, "a reboot without a duration lasts RebootTime")
	s.Site.Advance(time.Duration(RebootTime * float64(time.Second)))
	assert.Empty(t, s.Site.Faults(), "and the device comes back")
}

func TestRunKeepsSimTimeOnTheClock(t *testing.T) {
	for _, scale := range []float64{1, 10} {
		s := example(t, "")
		clk := clock.NewFake(epoch)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- s.Site.Run(ctx, clk, scale) }()
		for i := 1; i <= 50; i++ {
			for clk.Waiters() == 0 {
				time.Sleep(time.Millisecond)
			}
			clk.Advance(10 * time.Millisecond)
			want := int64(float64(i) * scale)
			require.Eventually(t, func() bool { return s.Site.Steps() == want }, 10*time.Second, time.Millisecond, "scale %v tick %d", scale, i)
		}
		cancel()
		for clk.Waiters() > 0 {
			clk.Advance(10 * time.Millisecond)
		}
		require.NoError(t, <-done)
		assert.Equal(t, time.Duration(0.5*scale*float64(time.Second)), s.Site.Time().Round(time.Millisecond))
	}
	assert.Error(t, example(t, "").Site.Run(context.Background(), clock.NewFake(epoch), 0))
}

func TestRunSkipsAheadAfterAPause(t *testing.T) {
	s := example(t, "")
	clk := clock.NewFake(epoch)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- s.Site.Run(ctx, clk, 1) }()
	for clk.Waiters() == 0 {
		time.Sleep(time.Millisecond)
	}
	clk.Advance(time.Minute) // the process was suspended
	require.Eventually(t, func() bool { return s.Site.Steps() >= 100 }, 10*time.Second, time.Millisecond)
	cancel()
	for clk.Waiters() > 0 {
		clk.Advance(10 * time.Millisecond)
	}
	<-done
	assert.Equal(t, int64(100), s.Site.Steps(), "one second of catch-up, not a minute")
}

func TestControlInterface(t *testing.T) {
	s := example(t, "l1-silent-redundancy")
	cs, err := s.ServeControl("127.0.0.1:0")
	require.NoError(t, err)
	defer cs.Close()
	c := &Client{URL: cs.URL()}
	ctx := context.Background()

	st, err := c.Status(ctx)
	require.NoError(t, err)
	assert.Equal(t, exampleDevices, st.Devices)
	assert.Equal(t, 100.0, st.StepHz)
	require.NotNil(t, st.Defect)
	assert.Equal(t, `boundaries."l1-ma".failure."pump-trip"`, st.Defect.Violates)

	require.NoError(t, c.Inject(ctx, Fault{Kind: PumpTrip, Target: "l1/loop/cdu-1/p1"}))
	faults, err := c.Faults(ctx)
	require.NoError(t, err)
	assert.Len(t, faults, 1)
	err = c.Inject(ctx, Fault{Kind: PumpTrip, Target: "l1/loop"})
	assert.ErrorContains(t, err, "l1/loop is a loop, want a pump")
	assert.ErrorContains(t, err, "(400)")
	sig, err := c.Signals(ctx, "l1/loop/cdu-1")
	require.NoError(t, err)
	assert.Equal(t, 2.0, sig["pump1-state"])
	require.NoError(t, c.Clear(ctx, PumpTrip, "l1/loop/cdu-1/p1"))
	assert.ErrorContains(t, c.Clear(ctx, PumpTrip, "l1/loop/cdu-1/p1"), "(409)")
	require.NoError(t, c.Play(ctx, "device-trouble"))
	assert.ErrorContains(t, c.Play(ctx, "nope"), "(404)")
	yes := true
	require.NoError(t, c.LoadBank(ctx, "lb-mb", LoadBankControl{Local: &yes}))
	assert.Zero(t, signal(t, s, "lb-mb", "remote"))
	_, err = c.Signals(ctx, "nowhere")
	assert.ErrorContains(t, err, "(404)")
}

// A stepped site's time moves only by POST /v1/advance; a site that
// runs on a clock refuses it, since its time has a driver already.
func TestControlAdvance(t *testing.T) {
	s := example(t, "")
	cs, err := s.ServeControl("127.0.0.1:0")
	require.NoError(t, err)
	defer cs.Close()
	c := &Client{URL: cs.URL()}
	ctx := context.Background()
	st, err := c.Status(ctx)
	require.NoError(t, err)
	assert.True(t, st.Stepped)
	start := st.Time
	st, err = c.Advance(ctx, 1500*time.Millisecond)
	require.NoError(t, err)
	assert.Equal(t, 1500*time.Millisecond, st.Time.Sub(start))
	assert.Equal(t, int64(150), st.Steps)
	assert.Equal(t, s.Site.Now(), st.Time)
	for _, d := range []time.Duration{0, -time.Second, 2 * time.Hour} {
		_, err = c.Advance(ctx, d)
		assert.ErrorContains(t, err, "(400)", "advance by %s", d)
	}

	clk := clock.NewFake(time.Unix(0, 0))
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- s.Site.Run(runCtx, clk, 1) }()
	require.Eventually(t, s.Site.Running, 10*time.Second, time.Millisecond)
	_, err = c.Advance(ctx, time.Second)
	assert.ErrorContains(t, err, "(409)")
	assert.ErrorContains(t, err, "--stepped")
	st, err = c.Status(ctx)
	require.NoError(t, err)
	assert.False(t, st.Stepped)
	cancel()
	for clk.Waiters() > 0 {
		clk.Advance(10 * time.Millisecond)
	}
	require.NoError(t, <-done)
	assert.False(t, s.Site.Running())
}

// TestBindingLoadsBack writes the binding of the running devices, loads
// it with the binding loader and checks it against the contracts: every
// channel and load bank bound, every point of the right dimension.
func TestBindingLoadsBack(t *testing.T) {
	s := example(t, "")
	require.NoError(t, s.Start())
	defer s.Close()
	dir := t.TempDir()
	abs, err := filepath.Abs(exampleDir)
	require.NoError(t, err)
	b := s.Binding(ProfileDirs(profilesDir, s.cfg.Sim), abs, EnvRefs)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "binding.cue"), binding.Marshal(b, "binding"), 0o644))
	back, diags, err := binding.Load(dir)
	require.NoError(t, err)
	for _, d := range diags {
		if d.Severity == diag.Error {
			t.Errorf("%s %s %s", d.Pos, d.Rule, d.Message)
		}
	}
	require.NotNil(t, back)
	assert.Len(t, back.Devices, exampleDevices)
	assert.Len(t, back.Channels, exampleChannels())
	dev := back.Device("pdu-mb-r01-a")
	require.NotNil(t, dev)
	assert.Equal(t, binding.SNMPv3, dev.Protocol)
	assert.Equal(t, "env:SEAM_SNMP_AUTH", dev.V3.AuthPass.Ref)
	assert.Equal(t, s.Device("pdu-mb-r01-a").Addr(), dev.Address)
}
