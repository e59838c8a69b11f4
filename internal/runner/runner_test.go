package runner

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/evidence"
	"github.com/seamdc/seam/internal/grade"
	"github.com/seamdc/seam/internal/results"
)

func TestHealthyRunPasses(t *testing.T) { synctest.Test(t, testHealthyRunPasses) }

func testHealthyRunPasses(t *testing.T) {
	g := newRig(t)
	res, err := g.run(g.config())
	require.NoError(t, err)
	assert.Equal(t, results.Passed, res.Outcome, "%+v", res.Cases)
	assert.Equal(t, 0, ExitCode(res))
	assert.Equal(t, results.Counts{Pass: 3}, res.Counts)
	steady := res.Case("sat.p1-ma.steady.voltage")
	require.Len(t, steady.Checks, 1)
	assert.InDelta(t, 410, *steady.Checks[0].Measured, 0.01, "415 V less 5 V at 1000 kW")
	assert.Equal(t, "400 V", steady.Checks[0].Sources[0].Value)
	leak := res.Case("ist.l1-ma.failure.leak")
	assert.InDelta(t, 0.5, *leak.Checks[0].Measured, 0.11, "the leak alarm 0.5 s after the simulator wet the sensor")
	require.Len(t, leak.Operator, 2)
	assert.Equal(t, "simulator", leak.Operator[0].By)
	assert.Equal(t, []string{"inject leak l1/loop/cdu-2", "clear leak l1/loop/cdu-2"}, g.w.faultLog)

	// the bundle is finished and verifies; the verdicts re-grade the same
	rep, err := evidence.Verify(g.dir, nil)
	require.NoError(t, err)
	assert.True(t, rep.OK(), rep.All())
	assert.True(t, rep.Complete)
	assert.Equal(t, 4, rep.Checks, "every check re-graded from the raw samples")

	back, err := results.Read(g.dir + "/" + evidence.ResultsFile)
	require.NoError(t, err)
	assert.Equal(t, res.Counts, back.Counts)
	// the banks end disabled at 0 kW
	assert.Zero(t, g.w.bank.appliedNow())
	en := g.w.bank.wrote("enable")
	assert.Equal(t, "enable=0", en[len(en)-1])
}

func TestFailureIsProvedWithTheMeasuredValue(t *testing.T) {
	synctest.Test(t, testFailureIsProvedWithTheMeasuredValue)
}

func testFailureIsProvedWithTheMeasuredValue(t *testing.T) {
	g := newRig(t)
	g.w.droop = 0.02 // 395 V at 1000 kW
	res, err := g.run(g.config())
	require.NoError(t, err)
	assert.Equal(t, results.Failed, res.Outcome)
	assert.Equal(t, 2, ExitCode(res))
	steady := res.Case("sat.p1-ma.steady.voltage")
	assert.Equal(t, grade.Fail, steady.Outcome)
	k := steady.Checks[0]
	assert.InDelta(t, 395, *k.Measured, 0.01)
	assert.InDelta(t, 400, *k.Limit, 0)
	assert.InDelta(t, -5, *k.Margin, 0.01)
	assert.Contains(t, k.Detail, "below the minimum 400 V")
	// the transient depends on it
	tr := res.Case("sat.p1-ma.transient.step")
	assert.Equal(t, grade.Skipped, tr.Outcome)
	assert.Equal(t, "precondition 1 (steady passed): case sat.p1-ma.steady.voltage did not pass (FAIL)", tr.Reason)
	assert.Equal(t, grade.Pass, res.Case("ist.l1-ma.failure.leak").Outcome)
}

// The voltage falls below the interlock's 350 V while the load ramps
// up: the run aborts and the load bank gets setpoint 0 within one
// sample period of the crossing, and reads 0 kW right after.
func TestInterlockTripZeroesTheLoad(t *testing.T) { synctest.Test(t, testInterlockTrip) }

func testInterlockTrip(t *testing.T) {
	g := newRig(t)
	g.w.droop = 0.07 // below 350 V above 928.6 kW
	res, err := g.run(g.config())
	require.NoError(t, err)
	assert.Equal(t, results.Aborted, res.Outcome)
	assert.Equal(t, 3, ExitCode(res))
	a := res.Abort
	require.NotNil(t, a)
	assert.Equal(t, results.CauseInterlock, a.Cause)
	assert.Equal(t, "p1-ma-voltage", a.Interlock)
	assert.Equal(t, "p1/ma/voltage", a.Channel)
	assert.Less(t, *a.Value, 350.0)
	assert.Contains(t, a.Reason, "interlock p1-ma-voltage tripped: p1/ma/voltage read")
	assert.Equal(t, grade.Aborted, res.Case("sat.p1-ma.steady.voltage").Outcome)
	assert.Equal(t, grade.Skipped, res.Case("ist.l1-ma.failure.leak").Outcome)

	vs, ts := g.w.bank.setpoints()
	var crossed, zeroed time.Time
	for i, v := range vs {
		if crossed.IsZero() && v > 928.6 {
			crossed = ts[i]
		}
		if !crossed.IsZero() && v == 0 {
			zeroed = ts[i]
			assert.Equal(t, len(vs)-1, i, "no setpoint after the zero")
			break
		}
	}
	require.False(t, zeroed.IsZero())
	// the voltage meter is read every 0.5 s (half the 1 s the plan allows)
	assert.LessOrEqual(t, zeroed.Sub(crossed), 500*time.Millisecond, "zero written within one sample period of the crossing")
	require.NotNil(t, a.ZeroedIn)
	assert.LessOrEqual(t, *a.ZeroedIn, 0.2, "confirmed at 0 kW by read-back soon after the trip")
	assert.Zero(t, g.w.bank.appliedNow())

	// resumable: no manifest, the chain verifies, results are written
	rep, err := evidence.Verify(g.dir, nil)
	require.NoError(t, err)
	assert.True(t, rep.OK(), rep.Problems)
	assert.False(t, rep.Complete)
	assert.Len(t, g.records("abort"), 1)
	assert.Len(t, g.records("interlock"), 1)
}

// A safety channel that falls silent is a trip: a dead meter looks just
// like a quiet one.
func TestSilentSafetyChannelTrips(t *testing.T) { synctest.Test(t, testSilentTrips) }

func testSilentTrips(t *testing.T) {
	g := newRig(t)
	var silencedAt time.Time
	time.AfterFunc(30*time.Second, func() {
		g.w.mu.Lock()
		g.w.silent["pdu-p1"] = true
		silencedAt = time.Now()
		g.w.mu.Unlock()
	})
	res, err := g.run(g.config())
	require.NoError(t, err)
	g.w.mu.Lock()
	defer g.w.mu.Unlock()
	require.NotNil(t, res.Abort)
	a := res.Abort
	assert.Equal(t, results.CauseInterlock, a.Cause)
	assert.Contains(t, a.Reason, "p1/ma/voltage has had no good sample for")
	assert.Contains(t, a.Reason, "(limit 5 s): a silent safety channel is a trip")
	assert.True(t, a.At.After(silencedAt.Add(4500*time.Millisecond)), "the last good sample came at most one poll (0.5 s) before the silence")
	// the watch looks every 0.5 s: the trip comes at most that long
	// after the limit
	il := g.records("interlock")
	require.Len(t, il, 1)
	var rec struct {
		SilentS float64 `json:"silent_s"`
	}
	require.NoError(t, json.Unmarshal(il[0].Data, &rec))
	assert.Greater(t, rec.SilentS, 5.0)
	assert.LessOrEqual(t, rec.SilentS, 5.5)
	assert.Zero(t, g.w.bank.appliedNow())
}

// A device whose reads never come back is silence too: once neither a
// good nor a bad answer came for the limit, its timeout and a period.
func TestHungDeviceTrips(t *testing.T) { synctest.Test(t, testHungTrips) }

func testHungTrips(t *testing.T) {
	g := newRig(t)
	var hungAt time.Time
	time.AfterFunc(30*time.Second, func() {
		g.w.mu.Lock()
		g.w.hung["pdu-p1"] = true
		hungAt = time.Now()
		g.w.mu.Unlock()
	})
	res, err := g.run(g.config())
	require.NoError(t, err)
	g.w.mu.Lock()
	defer g.w.mu.Unlock()
	require.NotNil(t, res.Abort)
	a := res.Abort
	assert.Equal(t, results.CauseInterlock, a.Cause)
	assert.Contains(t, a.Reason, "p1/ma/voltage has had no answer from device pdu-p1 for")
	// 5 s of silence, plus the 1 s timeout and the 0.5 s period, and
	// the watch's 0.5 s
	assert.LessOrEqual(t, a.At.Sub(hungAt), 7*time.Second)
	assert.Greater(t, a.At.Sub(hungAt), 6*time.Second)
	assert.Zero(t, g.w.bank.appliedNow())
}

// A manual step in a non-interactive run on a real site stops the run
// with a clear message, and the load goes to zero.
func TestManualStepWithoutOperatorAborts(t *testing.T) { synctest.Test(t, testManualUnattended) }

func testManualUnattended(t *testing.T) {
	g := newRig(t)
	g.site.Faults, g.site.Kind = nil, Bound
	g.op = Unattended{Name: "ci", Accepted: true}
	res, err := g.run(g.config())
	require.NoError(t, err)
	require.NotNil(t, res.Abort)
	assert.Equal(t, results.CauseManualStep, res.Abort.Cause)
	assert.Equal(t, `case sat.p1-ma.steady.voltage precondition 1: "confirm: p1 and ma connected": a person must confirm this step, and the run is not interactive: run sat run on a terminal, or against the simulated site`, res.Abort.Reason)
	assert.Equal(t, "ci", res.Run.Operator)
	assert.Equal(t, 3, ExitCode(res))
}

// At a terminal the operator sees each manual step and confirms it; who
// and when is recorded. Anything but yes aborts.
func TestTerminalOperator(t *testing.T) { synctest.Test(t, testTerminalOperator) }

func testTerminalOperator(t *testing.T) {
	g := newRig(t)
	g.site.Faults, g.site.Kind = nil, Bound
	var out strings.Builder
	// the risk, the first case's stated precondition, the leak case's inject
	g.op = &Terminal{Name: "jo", In: strings.NewReader("yes\nyes\nno\n"), Out: &out, Clock: g.clk}
	res, err := g.run(g.config())
	require.NoError(t, err)
	assert.Contains(t, out.String(), "Type yes to energise")
	assert.Contains(t, out.String(), "── manual step: case ist.l1-ma.failure.leak, inject\n   do:     Wet the leak sensor\n   expect: leak alarm\n")
	assert.Equal(t, grade.Pass, res.Case("sat.p1-ma.steady.voltage").Outcome)
	pre := res.Case("sat.p1-ma.steady.voltage").Operator
	require.Len(t, pre, 1)
	assert.Equal(t, "jo", pre[0].By)
	assert.Equal(t, "confirm: p1 and ma connected", pre[0].Action)
	require.NotNil(t, res.Abort)
	assert.Equal(t, results.CauseManualStep, res.Abort.Cause)
	assert.Contains(t, res.Abort.Reason, `case ist.l1-ma.failure.leak inject: the operator did not confirm: answered "no"`)
	accept := g.records("accept_risk")
	require.Len(t, accept, 1)
	assert.Contains(t, string(accept[0].Data), `"how":"interactive yes at the terminal"`)
}

// Without risk acceptance nothing is energised: no setpoint, no enable.
func TestNoRiskAcceptanceNoEnergy(t *testing.T) { synctest.Test(t, testNoAcceptance) }

func testNoAcceptance(t *testing.T) {
	g := newRig(t)
	g.site.Faults, g.site.Kind = nil, Bound
	g.op = Unattended{Name: "ci"}
	res, err := g.run(g.config())
	require.ErrorIs(t, err, ErrPreflight)
	assert.ErrorContains(t, err, "energising needs explicit risk acceptance: pass --accept-risk=energize")
	assert.Equal(t, results.Errored, res.Outcome)
	assert.Empty(t, g.w.bank.wrote("setpoint"))
	assert.Empty(t, g.w.bank.wrote("enable"))
	assert.NotEmpty(t, g.w.bank.wrote("heartbeat"), "the heartbeat runs from the start")
}

func TestPreflightRefuses(t *testing.T) {
	tests := []struct {
		name string
		edit func(*rig)
		want string
	}{
		{"a device too slow for the plan", func(g *rig) { g.site.Devices["pdu-p1"].Profile().UpdatePeriod = 2 * time.Second },
			"case sat.p1-ma.transient.step needs p1/ma/voltage at least every 0.1 s, but device pdu-p1 (fake-meter) updates every 2s"},
		{"a bank in local control", func(g *rig) { g.w.bank.remote = false }, "load bank lb-ma is in local control (switch it to remote at its panel)"},
		{"a bank carrying load", func(g *rig) { g.w.bank.enable, g.w.bank.setpoint, g.w.bank.applied = true, 300, 300 },
			"load bank lb-ma carries 300.0 kW (it must be at 0 before the run energises anything)"},
		{"an interlock already tripped", func(g *rig) { g.w.leakAt = g.t0.Add(-time.Hour) },
			"interlock l1-ma-leak is already tripped: l1/ma/leak reads 1 , limits [-Inf, 0.5]"},
		{"a channel that does not answer", func(g *rig) { g.w.silent["cdu-l1"] = true },
			"channel l1/ma/leak is not readable and fresh: timed out after 1s"},
		{"a channel not bound", func(g *rig) { g.site.Binding.Channels = g.site.Binding.Channels[1:] }, "channel l1/ma/leak is not bound in fake"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newRig(t)
				tt.edit(g)
				_, err := g.run(g.config())
				require.ErrorIs(t, err, ErrPreflight)
				assert.ErrorContains(t, err, tt.want)
				assert.Empty(t, g.w.bank.wrote("enable"), "nothing energised")
			})
		})
	}
}

// An interrupted run resumes after its last completed case with the
// chain intact, and finishes.
func TestInterruptThenResume(t *testing.T) { synctest.Test(t, testResume) }

func testResume(t *testing.T) {
	g := newRig(t)
	time.AfterFunc(38*time.Second, func() { g.r.Interrupt() }) // in the transient case (32.8 s to 43.6 s)
	res, err := g.run(g.config())
	require.NoError(t, err)
	require.NotNil(t, res.Abort)
	assert.Equal(t, results.CauseInterrupt, res.Abort.Cause)
	assert.Equal(t, "sat.p1-ma.transient.step", res.Abort.Case)
	assert.Equal(t, grade.Pass, res.Case("sat.p1-ma.steady.voltage").Outcome)
	assert.Equal(t, grade.Aborted, res.Case("sat.p1-ma.transient.step").Outcome)
	assert.Zero(t, g.w.bank.appliedNow())

	cfg := g.config()
	cfg.Resume = true
	res2, err := g.run(cfg)
	require.NoError(t, err)
	assert.Equal(t, results.Passed, res2.Outcome, "%+v", res2.Cases)
	assert.Equal(t, 1, res2.Run.Resumes)
	assert.Equal(t, res.Run.Started, res2.Run.Started)
	ends := map[string]int{}
	for _, r := range g.records("case_end") {
		ends[r.Case]++
	}
	assert.Equal(t, map[string]int{"sat.p1-ma.steady.voltage": 1, "sat.p1-ma.transient.step": 1, "ist.l1-ma.failure.leak": 1}, ends)
	rep, err := evidence.Verify(g.dir, nil)
	require.NoError(t, err)
	assert.True(t, rep.OK(), rep.All())
	assert.True(t, rep.Complete)

	// a finished run does not resume, nor does another plan
	_, err = New(cfg)
	require.NoError(t, err)
	_, err = g.run(cfg)
	assert.ErrorContains(t, err, "the run finished")
}

// Kill writes setpoint 0 and enable off at once, without a read-back.
func TestKillZeroesAtOnce(t *testing.T) { synctest.Test(t, testKill) }

func testKill(t *testing.T) {
	g := newRig(t)
	var writes []string
	time.AfterFunc(20*time.Second, func() {
		before := len(g.w.bank.wrote(""))
		g.r.Kill()
		for _, w := range g.w.bank.wrote("")[before:] {
			if !strings.HasPrefix(w, "heartbeat=") {
				writes = append(writes, w)
			}
		}
		g.r.Interrupt()
	})
	_, err := g.run(g.config())
	require.NoError(t, err)
	assert.Equal(t, []string{"setpoint=0", "enable=0"}, writes)
	assert.Len(t, g.records("kill"), 1)
}

// A bank that does not follow its setpoint is a harness problem: the
// case is an ERROR, the bank is made safe again and the run goes on.
func TestBankNotFollowingIsAnError(t *testing.T) { synctest.Test(t, testBankNotFollowing) }

func testBankNotFollowing(t *testing.T) {
	g := newRig(t)
	g.w.bank.limit = 600 // a failed stage: it cannot apply more
	res, err := g.run(g.config())
	require.NoError(t, err)
	c := res.Case("sat.p1-ma.steady.voltage")
	assert.Equal(t, grade.Error, c.Outcome)
	assert.Contains(t, c.Reason, "step ramp-load (ramp): load bank lb-ma: the applied load did not follow the setpoint: set 1000.0 kW, reads 600.0 kW applied")
	assert.Equal(t, results.Errored, res.Outcome)
	assert.Equal(t, 1, ExitCode(res))
	assert.Len(t, g.records("prepare"), 2, "prepared at the start and again after the error")
}

// Three heartbeat writes in a row failing abort the run before the
// bank's watchdog drops the load on its own.
func TestLostHeartbeatAborts(t *testing.T) { synctest.Test(t, testLostHeartbeat) }

func testLostHeartbeat(t *testing.T) {
	g := newRig(t)
	time.AfterFunc(20*time.Second, func() {
		g.w.bank.mu.Lock()
		g.w.bank.failBeats = true
		g.w.bank.mu.Unlock()
	})
	res, err := g.run(g.config())
	require.NoError(t, err)
	require.NotNil(t, res.Abort)
	assert.Equal(t, results.CauseFatal, res.Abort.Cause)
	assert.Contains(t, res.Abort.Reason, "lost the heartbeat to load bank lb-ma (3 writes in a row failed")
	assert.Len(t, g.records("heartbeat"), 3)
}

// While an operator takes minutes over a prompt nothing else is
// written, but what was written is on disk within a second.
func TestJournalSyncedDuringLongPrompts(t *testing.T) { synctest.Test(t, testSyncedDuringPrompt) }

func testSyncedDuringPrompt(t *testing.T) {
	g := newRig(t)
	g.site.Faults, g.site.Kind = nil, Bound
	in, feed := io.Pipe()
	g.op = &Terminal{Name: "jo", In: in, Out: io.Discard, Clock: g.clk}
	go feed.Write([]byte("yes\n")) // the risk
	var onDisk string
	time.AfterFunc(2*time.Minute, func() {
		raw, err := os.ReadFile(filepath.Join(g.dir, evidence.JournalFile))
		require.NoError(t, err)
		onDisk = string(raw)
		g.r.Interrupt()
	})
	_, err := g.run(g.config())
	require.NoError(t, err)
	feed.Close()
	assert.Contains(t, onDisk, `"kind":"case_start","case":"sat.p1-ma.steady.voltage"`, "the record before the prompt is on disk")
}

// A run resumes only on the site it started on.
func TestResumeRefusesAnotherSite(t *testing.T) { synctest.Test(t, testResumeOtherSite) }

func testResumeOtherSite(t *testing.T) {
	g := newRig(t)
	time.AfterFunc(10*time.Second, func() { g.r.Interrupt() })
	_, err := g.run(g.config())
	require.NoError(t, err)
	cfg := g.config()
	cfg.Resume = true
	g.site.Defect = "p1-slow-recovery"
	_, err = g.run(cfg)
	assert.ErrorContains(t, err, `it started with defect "", this run has "p1-slow-recovery"`)
	g.site.Defect, g.site.Kind = "", Bound
	_, err = g.run(cfg)
	assert.ErrorContains(t, err, "it started on a simulated site, this is a binding one")
	assert.Empty(t, g.records("resume"), "the bundle was not touched")
}
