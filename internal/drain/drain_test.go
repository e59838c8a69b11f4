package drain_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hiddeco/sshsig"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/alarm"
	"github.com/seamdc/seam/internal/drain"
	"github.com/seamdc/seam/internal/scheduler"
)

// A severe alarm drains exactly its domain's nodes, in one call, with
// the design brief's reason; running jobs that opted in get
// checkpoint_now, the others nothing.
func TestDrainsExactlyTheDomain(t *testing.T) {
	e := newEnv(t, nil)
	e.sched.SetJobs([]scheduler.Job{
		{ID: "101", Nodes: []string{"gpu-b-r01-n01"}, Comment: "seam:checkpoint_now"},
		{ID: "102", Nodes: []string{"gpu-b-r01-n02"}, Comment: "nightly run"},
		{ID: "103", Nodes: []string{"gpu-b-r02-n01", "gpu-b-r02-n02"}, Comment: "x, seam:checkpoint_now=full"},
	})
	e.raise(alarm.CoolingRedundancyLost, "cooling_loop=l2")
	require.Equal(t, []string{"drain 288 facility:cooling_redundancy_lost:l2"}, e.sched.Calls())
	assert.Equal(t, mbNodes, e.sched.Drains()[0])
	assert.Equal(t, []string{"101 USR1 full=false", "103 USR1 full=true"}, e.sched.Signals())
	assert.Equal(t, 288, e.sched.DrainedCount())
	assert.Empty(t, e.sched.Node("gpu-a-r01-n01").Reason, "ma is not on l2")
	// a notify-only alarm drains nothing
	e.raise(alarm.HighSupplyTemp, "cooling_loop=l1")
	e.raise(alarm.FeedLost, "power_block=p1")
	assert.Len(t, e.sched.Calls(), 1)
	assert.Contains(t, e.journal.Kinds(), drain.RecSignal)
}

// A cleared alarm releases nothing by itself.
func TestClearReleasesNothing(t *testing.T) {
	e := newEnv(t, nil)
	e.raise(alarm.CoolingRedundancyLost, "cooling_loop=l2")
	e.clear(alarm.CoolingRedundancyLost, "cooling_loop=l2")
	e.clk.Advance(time.Hour)
	e.ctl.Reconcile(context.Background())
	assert.Equal(t, 288, e.sched.DrainedCount())
	assert.Len(t, e.ctl.Snapshot().Holds, 1)
	assert.NotContains(t, strings.Join(e.sched.Calls(), " "), "undrain")
}

// A release needs a signature by a key the allowed-signers file lists
// for the person named, in facilityd's namespace, fresh and used once;
// it is recorded with who approved it.
func TestReleaseNeedsAnAuthenticatedPerson(t *testing.T) {
	e := newEnv(t, nil)
	e.raise(alarm.CoolingRedundancyLost, "cooling_loop=l2")
	e.clear(alarm.CoolingRedundancyLost, "cooling_loop=l2")
	e.clk.Advance(2 * time.Minute)

	// bob's key is not listed
	_, err := e.release("bob", l2Owner)
	require.ErrorContains(t, err, "is not listed for bob")
	// alice's request signed by bob's key
	r := drain.NewRequest("threemodule", drain.ActRelease, "alice", e.clk.Now())
	r.Owner, r.Why = l2Owner, "x"
	s, err := drain.Sign(r, e.keys["bob"])
	require.NoError(t, err)
	_, err = e.verifier.Verify(s, e.clk.Now())
	require.ErrorContains(t, err, "is not listed for alice")
	// tampered after signing
	s, err = drain.Sign(r, e.keys["alice"])
	require.NoError(t, err)
	s.Request = []byte(strings.Replace(string(s.Request), `"why":"x"`, `"why":"y"`, 1))
	_, err = e.verifier.Verify(s, e.clk.Now())
	require.ErrorContains(t, err, "does not match the request")
	// too old
	old := drain.NewRequest("threemodule", drain.ActRelease, "alice", e.clk.Now().Add(-time.Hour))
	old.Owner, old.Why = l2Owner, "x"
	s, _ = drain.Sign(old, e.keys["alice"])
	_, err = e.verifier.Verify(s, e.clk.Now())
	require.ErrorContains(t, err, "requests are taken within 10m0s")
	// alice's key, signing for another purpose (a contract)
	msg, err := json.Marshal(r)
	require.NoError(t, err)
	other, err := sshsig.Sign(bytes.NewReader(msg), e.keys["alice"], sshsig.HashSHA512, "seam-contract")
	require.NoError(t, err)
	_, err = e.verifier.Verify(drain.Signed{Request: msg, Signature: string(sshsig.Armor(other))}, e.clk.Now())
	require.ErrorContains(t, err, `namespace "seam-contract", not "seam-facilityd"`)
	// free text is no approval
	fresh, _ := drain.Sign(r, e.keys["alice"])
	_, err = e.verifier.Verify(drain.Signed{Request: fresh.Request, Signature: "approved, alice"}, e.clk.Now())
	require.ErrorContains(t, err, "not an SSH signature")
	assert.Equal(t, 288, e.sched.DrainedCount())

	res, err := e.release("alice", l2Owner)
	require.NoError(t, err)
	assert.Len(t, res.Returned, 288)
	assert.Equal(t, 0, e.sched.DrainedCount())
	var rel, req map[string]any
	for _, rec := range e.journal.Records {
		switch rec.Kind {
		case drain.RecRelease:
			rel = rec.Data.(map[string]any)
		case drain.RecRequest:
			req = rec.Data.(map[string]any)
		}
	}
	require.NotNil(t, rel)
	assert.Equal(t, "alice", rel["by"])
	assert.Equal(t, "alice", req["by"])
	assert.Contains(t, req["key"], "SHA256:", "the approving key is journaled with the request")

	// replay: the same signed request again
	e.raise(alarm.CoolingRedundancyLost, "cooling_loop=l2")
	e.clear(alarm.CoolingRedundancyLost, "cooling_loop=l2")
	e.clk.Advance(2 * time.Minute)
	r = drain.NewRequest("threemodule", drain.ActRelease, "alice", e.clk.Now())
	r.Owner, r.Why = l2Owner, "again"
	s, _ = drain.Sign(r, e.keys["alice"])
	a, err := e.verifier.Verify(s, e.clk.Now())
	require.NoError(t, err)
	_, err = e.ctl.Take(context.Background(), a)
	require.NoError(t, err)
	e.raise(alarm.CoolingRedundancyLost, "cooling_loop=l2")
	e.clear(alarm.CoolingRedundancyLost, "cooling_loop=l2")
	e.clk.Advance(2 * time.Minute)
	_, err = e.ctl.Take(context.Background(), a)
	refused(t, err, "was taken already")
	assert.Equal(t, 288, e.sched.DrainedCount())
}

// Nodes return only when the domain's alarms are clear — clear for
// ClearFor, and not unknown (a silent device) — and only when every
// hold on them is released.
func TestReleaseOnlyWhenClearAndUnheld(t *testing.T) {
	e := newEnv(t, nil)
	e.raise(alarm.CoolingRedundancyLost, "cooling_loop=l2")
	_, err := e.release("alice", l2Owner)
	refused(t, err, "cooling_redundancy_lost is active for cooling_loop=l2")
	e.clear(alarm.CoolingRedundancyLost, "cooling_loop=l2")
	e.clk.Advance(30 * time.Second)
	_, err = e.release("alice", l2Owner)
	refused(t, err, "cleared only 30s ago: it must be clear for 1m0s")
	e.clk.Advance(time.Minute)
	e.observe(alarm.Observation{Type: alarm.DeviceSilent, Domain: dom("cooling_loop=l2"), Active: true, Kind: alarm.FromDevice, Source: "cdu-l2", At: e.clk.Now(), Detail: "cdu-l2 gave no good reading"})
	_, err = e.release("alice", l2Owner)
	refused(t, err, "a device of cooling_loop=l2 is silent, so its alarms are unknown")
	e.observe(alarm.Observation{Type: alarm.DeviceSilent, Domain: dom("cooling_loop=l2"), Active: false, Kind: alarm.FromDevice, Source: "cdu-l2", At: e.clk.Now()})

	// a maintenance hold on one rack of mb: those nodes stay out
	h := drain.NewRequest("threemodule", drain.ActHold, "alice", e.clk.Now())
	h.Owner, h.Domain, h.Why = "maintenance:CHG-1", "rack=mb/r03", "busbar inspection"
	_, err = e.request("alice", h)
	require.NoError(t, err)
	assert.Equal(t, "facility:cooling_redundancy_lost:l2 maintenance:CHG-1", e.sched.Node("gpu-b-r03-n01").Reason, "the reason says which holds are active")
	res, err := e.release("alice", l2Owner)
	require.NoError(t, err)
	assert.Len(t, res.Returned, 270)
	assert.Len(t, res.Kept, 18)
	assert.Equal(t, []drain.Owner{"maintenance:CHG-1"}, res.Kept["gpu-b-r03-n05"])
	assert.Equal(t, 18, e.sched.DrainedCount())
	assert.Equal(t, "maintenance:CHG-1", e.sched.Node("gpu-b-r03-n01").Reason, "the reason follows the holds left")
	_, err = e.release("alice", "maintenance:CHG-1")
	require.NoError(t, err)
	assert.Equal(t, 0, e.sched.DrainedCount())
}

// A flapping alarm is held down: raised Raises times within Within, its
// hold stays until it has been clear for HoldDown, and the drain is
// never cycled.
func TestFlappingAlarmIsHeldDown(t *testing.T) {
	e := newEnv(t, nil)
	for range 4 {
		e.raise(alarm.CoolingRedundancyLost, "cooling_loop=l2")
		e.clk.Advance(20 * time.Second)
		e.clear(alarm.CoolingRedundancyLost, "cooling_loop=l2")
		e.clk.Advance(40 * time.Second)
	}
	assert.Len(t, e.sched.Calls(), 1, "one drain, however often it flaps")
	e.clk.Advance(2 * time.Minute) // clear for 2m40s: more than ClearFor
	_, err := e.release("alice", l2Owner)
	refused(t, err, "is flapping (raised 4 times within 10m0s): it is held down until it has been clear for 15m0s")
	e.clk.Advance(15 * time.Minute)
	_, err = e.release("alice", l2Owner)
	require.NoError(t, err)
}

// The storm guard: no more than one module's worth of nodes drained per
// window without approval; the refusal is itself an alarm; an approved
// drain goes ahead.
func TestStormGuard(t *testing.T) {
	e := newEnv(t, nil)
	e.raise(alarm.CoolingRedundancyLost, "cooling_loop=l2")
	e.raise(alarm.LeakDetected, "cooling_loop=l2") // the same nodes: no more of the fleet
	assert.Equal(t, 288, e.sched.DrainedCount())
	e.raise(alarm.UPSOnBattery, "power_block=p1") // module ma: 576 in the window
	assert.Equal(t, 288, e.sched.DrainedCount(), "the storm guard refuses ma")
	ref, ok := e.stream.Get(alarm.DrainRefused, dom("power_block=p1"))
	require.True(t, ok)
	assert.True(t, ref.Active, "the refusal is an alarm")
	assert.True(t, strings.HasSuffix(ref.Detail, ": approve it with facilityd approve --action drain --owner facility:ups_on_battery:power_block=p1 --by NAME --key ~/.ssh/id_ed25519 --why WHY"),
		"the alarm ends with the whole command that approves the drain: %s", ref.Detail)
	snap := e.ctl.Snapshot()
	require.Len(t, snap.Refused, 1)
	assert.Contains(t, snap.Refused[0].Why, "would make 576 drained within 10m0s, above the storm guard's 288 nodes")
	e.ctl.Reconcile(context.Background())
	assert.Equal(t, 288, e.sched.DrainedCount(), "a refused drain waits for approval, even past a reconcile")

	owner := drain.FacilityOwner(alarm.UPSOnBattery, dom("power_block=p1"))
	r := drain.NewRequest("threemodule", drain.ActDrain, "alice", e.clk.Now())
	r.Owner, r.Why = owner, "p1 really is on battery"
	_, err := e.request("alice", r)
	require.NoError(t, err)
	assert.Equal(t, 576, e.sched.DrainedCount())
	ref, _ = e.stream.Get(alarm.DrainRefused, dom("power_block=p1"))
	assert.False(t, ref.Active)

	// a share of the fleet caps it lower
	f := newEnv(t, func(c *drain.Config) { c.Storm.MaxFraction = 0.1 })
	f.raise(alarm.CoolingRedundancyLost, "cooling_loop=l2")
	assert.Equal(t, 0, f.sched.DrainedCount())
	assert.Contains(t, f.ctl.Snapshot().Refused[0].Why, "10 % of the fleet's 864 nodes (86)")
	f.raise(alarm.CoolingRedundancyLost, "cooling_loop=l2")
	assert.Equal(t, 0, f.sched.DrainedCount())
}

// Planned maintenance and running plans suppress drains for their
// domain: a suppression request, or an Alertmanager silence; an
// Alertmanager that cannot be read suppresses nothing; when the
// suppression ends, the next reconcile drains.
func TestSuppression(t *testing.T) {
	e := newEnv(t, nil)
	s := drain.NewRequest("threemodule", drain.ActSuppress, "alice", e.clk.Now())
	s.Domain, s.Until, s.Why = "module=mb", e.clk.Now().Add(time.Hour), "IST of mb running"
	_, err := e.request("alice", s)
	require.NoError(t, err)
	e.raise(alarm.CoolingRedundancyLost, "cooling_loop=l2")
	assert.Equal(t, 0, e.sched.DrainedCount(), "l2's nodes are all mb's: suppressed")
	assert.Contains(t, e.ctl.Snapshot().Suppressed[l2Owner], "IST of mb running")
	e.raise(alarm.LeakDetected, "cooling_loop=l3")
	assert.Equal(t, 288, e.sched.DrainedCount(), "mc is not suppressed")
	e.clk.Advance(time.Hour)
	e.ctl.Reconcile(context.Background())
	assert.Equal(t, 576, e.sched.DrainedCount(), "suppression over: drained")

	f := newEnv(t, nil)
	f.sil.match = &alarm.Silence{ID: "s1", By: "bob", Comment: "SAT of l2", EndsAt: t0.Add(time.Hour)}
	f.raise(alarm.CoolingRedundancyLost, "cooling_loop=l2")
	assert.Equal(t, 0, f.sched.DrainedCount())
	assert.Contains(t, f.ctl.Snapshot().Suppressed[l2Owner], "Alertmanager silence s1 by bob")
	f.sil.match, f.sil.err = nil, errors.New("connection refused")
	f.ctl.Reconcile(context.Background())
	assert.Equal(t, 288, f.sched.DrainedCount(), "a dead Alertmanager holds no drain back")
}

// facilityd never overwrites, or returns, a drain it did not make.
func TestOperatorDrainStays(t *testing.T) {
	e := newEnv(t, nil)
	e.sched.Operator("gpu-b-r02-n01", true, "alice: bad DIMM")
	e.raise(alarm.CoolingRedundancyLost, "cooling_loop=l2")
	require.Len(t, e.sched.Drains(), 1)
	assert.Len(t, e.sched.Drains()[0], 287, "the operator's drain is not overwritten")
	assert.Equal(t, "alice: bad DIMM", e.sched.Node("gpu-b-r02-n01").Reason)
	e.clear(alarm.CoolingRedundancyLost, "cooling_loop=l2")
	e.clk.Advance(2 * time.Minute)
	res, err := e.release("alice", l2Owner)
	require.NoError(t, err)
	assert.Len(t, res.Returned, 287)
	assert.Equal(t, []string{"gpu-b-r02-n01"}, res.Left)
	assert.True(t, e.sched.Node("gpu-b-r02-n01").Drained, "the operator's drain stays")
	assert.Equal(t, "alice: bad DIMM", e.sched.Node("gpu-b-r02-n01").Reason)
}

// An operator who takes a node facilityd drained — undrains it, or
// drains it with their own reason — has the last word: facilityd does
// not drain it again for the holds it had, and does not return it.
func TestOperatorOverrideRespected(t *testing.T) {
	e := newEnv(t, nil)
	e.raise(alarm.CoolingRedundancyLost, "cooling_loop=l2")
	e.sched.Operator("gpu-b-r01-n01", false, "")             // undrained by hand
	e.sched.Operator("gpu-b-r01-n02", true, "bob: RMA 4711") // re-drained with another reason
	e.ctl.Reconcile(context.Background())
	e.clk.Advance(time.Hour)
	e.ctl.Reconcile(context.Background())
	assert.False(t, e.sched.Node("gpu-b-r01-n01").Drained, "a manual undrain is respected (draino #17)")
	snap := e.ctl.Snapshot()
	assert.Equal(t, "undrained by an operator", snap.Nodes["gpu-b-r01-n01"].Override)
	assert.Contains(t, snap.Nodes["gpu-b-r01-n02"].Override, `drained by alice with reason "bob: RMA 4711"`)
	assert.Contains(t, e.journal.Kinds(), drain.RecOverride)

	// a new hold is new information: the undrained node is drained again
	e.raise(alarm.LeakDetected, "cooling_loop=l2")
	assert.True(t, e.sched.Node("gpu-b-r01-n01").Drained)
	assert.Equal(t, "facility:cooling_redundancy_lost:l2 facility:leak_detected:l2", e.sched.Node("gpu-b-r01-n01").Reason)
	assert.Equal(t, "bob: RMA 4711", e.sched.Node("gpu-b-r01-n02").Reason, "never overwritten")

	for _, o := range []drain.Owner{l2Owner, drain.FacilityOwner(alarm.LeakDetected, dom("cooling_loop=l2"))} {
		t, d, _ := drain.FacilityOf(o)
		e.clear(t, d.String())
	}
	e.clk.Advance(2 * time.Minute)
	_, err := e.release("alice", l2Owner)
	require.NoError(t, err)
	res, err := e.release("alice", drain.FacilityOwner(alarm.LeakDetected, dom("cooling_loop=l2")))
	require.NoError(t, err)
	assert.Contains(t, res.Left, "gpu-b-r01-n02")
	assert.True(t, e.sched.Node("gpu-b-r01-n02").Drained, "the operator's drain is not returned")
	assert.Equal(t, 1, e.sched.DrainedCount())
}

// The same alarm from two sources, repeated, reconciled and restarted
// over, places one hold, drains once and signals each opted-in job
// once; a second alarm on the same nodes adds its hold and its reason
// but signals no job again.
func TestIdempotent(t *testing.T) {
	e := newEnv(t, nil)
	e.sched.SetJobs([]scheduler.Job{{ID: "101", Nodes: []string{"gpu-b-r01-n01"}, Comment: "seam:checkpoint_now"}})
	e.raise(alarm.CoolingRedundancyLost, "cooling_loop=l2")
	e.alarm(alarm.CoolingRedundancyLost, "cooling_loop=l2", true, "trap/10.0.0.9")
	e.raise(alarm.CoolingRedundancyLost, "cooling_loop=l2")
	for range 3 {
		e.ctl.Reconcile(context.Background())
	}
	e.stream = alarm.NewStream()
	e.start(nil)
	e.ctl.Start(context.Background(), nil)
	e.ctl.Reconcile(context.Background())
	assert.Equal(t, []string{"drain 288 facility:cooling_redundancy_lost:l2"}, e.sched.Calls())
	assert.Equal(t, []string{"101 USR1 full=false"}, e.sched.Signals())
	count := func(kind string) int {
		n := 0
		for _, k := range e.journal.Kinds() {
			if k == kind {
				n++
			}
		}
		return n
	}
	assert.Equal(t, 1, count(drain.RecHold), "one hold, however often the alarm comes")
	assert.Equal(t, 1, count(drain.RecDrain))
	e.raise(alarm.LeakDetected, "cooling_loop=l2")
	assert.Equal(t, 2, count(drain.RecHold))
	assert.Equal(t, []string{"101 USR1 full=false"}, e.sched.Signals(), "a job is asked to checkpoint once")
}

// State survives a restart: holds, who drained what, the alarms; a
// drain the scheduler refused, or that a crash cut off, is retried
// after the restart, and what operators did meanwhile is seen.
func TestRestartReconciles(t *testing.T) {
	e := newEnv(t, nil)
	e.sched.Fail("drain", errors.New("scontrol update: timed out after 30s"))
	e.raise(alarm.CoolingRedundancyLost, "cooling_loop=l2")
	assert.Equal(t, 0, e.sched.DrainedCount())
	assert.Contains(t, e.journal.Kinds(), drain.RecError)
	// facilityd dies; meanwhile the scheduler recovers and an operator
	// drains a node of l2 by hand
	e.sched.Fail("drain", nil)
	e.sched.Operator("gpu-b-r05-n05", true, "carol: fan")
	e.stream = alarm.NewStream()
	e.start(nil)
	e.ctl.Start(context.Background(), map[string]any{"restart": true})
	assert.Equal(t, 288, e.sched.DrainedCount())
	assert.Equal(t, "carol: fan", e.sched.Node("gpu-b-r05-n05").Reason)
	a, ok := e.stream.Get(alarm.CoolingRedundancyLost, dom("cooling_loop=l2"))
	require.True(t, ok, "the alarm survives the restart")
	assert.True(t, a.Active)
	// the source says clear after the restart: the same source id clears it
	e.clear(alarm.CoolingRedundancyLost, "cooling_loop=l2")
	a, _ = e.stream.Get(alarm.CoolingRedundancyLost, dom("cooling_loop=l2"))
	assert.False(t, a.Active)
	e.clk.Advance(2 * time.Minute)
	res, err := e.release("alice", l2Owner)
	require.NoError(t, err)
	assert.Equal(t, []string{"gpu-b-r05-n05"}, res.Left)

	// a state file that does not read is an error, not a fresh start
	require.NoError(t, os.WriteFile(e.store.Path, []byte("{"), 0o600))
	_, err = e.store.Load("threemodule")
	require.ErrorContains(t, err, "move it aside to start afresh")
}

// A scheduler that refuses or times out: the error is journalled and
// counted, the nodes are retried, and nothing else moves.
func TestSchedulerFailures(t *testing.T) {
	e := newEnv(t, nil)
	e.sched.Fail("status", context.DeadlineExceeded)
	e.raise(alarm.CoolingRedundancyLost, "cooling_loop=l2")
	assert.Equal(t, 0, e.sched.DrainedCount())
	e.sched.Fail("status", nil)
	e.ctl.Reconcile(context.Background())
	assert.Equal(t, 288, e.sched.DrainedCount())
	e.clear(alarm.CoolingRedundancyLost, "cooling_loop=l2")
	e.clk.Advance(2 * time.Minute)
	e.sched.Fail("undrain", errors.New("slurm_update error: Invalid node state specified"))
	res, err := e.release("alice", l2Owner)
	require.NoError(t, err, "the hold is released; the nodes are returned at the next reconcile")
	assert.Empty(t, res.Returned)
	e.sched.Fail("undrain", nil)
	e.ctl.Reconcile(context.Background())
	assert.Equal(t, 0, e.sched.DrainedCount())
	// names the scheduler does not know are reported, not drained
	e.sched.Forget("gpu-b-r16-n18")
	e.raise(alarm.LeakDetected, "cooling_loop=l2")
	assert.Equal(t, 287, e.sched.DrainedCount())
}

// While the alarm path is dead (no Watchdog from Alertmanager) every
// release is refused.
func TestAlarmPathDeadRefusesRelease(t *testing.T) {
	e := newEnv(t, nil)
	e.raise(alarm.CoolingRedundancyLost, "cooling_loop=l2")
	e.clear(alarm.CoolingRedundancyLost, "cooling_loop=l2")
	e.clk.Advance(2 * time.Minute)
	e.alive = false
	_, err := e.release("alice", l2Owner)
	refused(t, err, "the alarm path is dead")
	e.alive = true
	e.observe(alarm.Observation{Type: alarm.AlarmPathDead, Domain: dom("site=threemodule"), Active: true, Kind: alarm.FromHeartbeat, Source: "alertmanager-watchdog", At: e.clk.Now()})
	_, err = e.release("alice", l2Owner)
	refused(t, err, "alarm_path_dead is active")
	e.observe(alarm.Observation{Type: alarm.AlarmPathDead, Domain: dom("site=threemodule"), Active: false, Kind: alarm.FromHeartbeat, Source: "alertmanager-watchdog", At: e.clk.Now()})
	_, err = e.release("alice", l2Owner)
	require.NoError(t, err)
}

// A dry run prints exactly the commands it would run and runs none.
func TestDryRun(t *testing.T) {
	e := newEnv(t, func(c *drain.Config) { c.DryRun = true })
	e.sched.SetJobs([]scheduler.Job{{ID: "7", Nodes: []string{"gpu-b-r01-n01"}, Comment: "seam:checkpoint_now"}})
	e.raise(alarm.CoolingRedundancyLost, "cooling_loop=l2")
	assert.Empty(t, e.sched.Calls())
	assert.Empty(t, e.sched.Signals())
	out := e.out.String()
	assert.Contains(t, out, "would run: scontrol update nodename=gpu-b-r01-n[01-18],gpu-b-r02-n[01-18]")
	assert.Contains(t, out, " state=drain reason=facility:cooling_redundancy_lost:l2\n")
	assert.Contains(t, out, "would run: scancel --signal=USR1 --batch 7\n")
	_, err := os.Stat(e.store.Path)
	assert.True(t, os.IsNotExist(err), "a dry run writes no state")
	for _, k := range e.journal.Kinds() {
		assert.Contains(t, []string{drain.RecAlarm, drain.RecDryRun}, k)
	}
}

// An alarm for a domain with no nodes drains nothing and raises
// unmapped_alarm.
func TestUnmapped(t *testing.T) {
	e := newEnv(t, nil)
	e.raise(alarm.LeakDetected, "module=ctl")
	assert.Empty(t, e.sched.Calls())
	u, ok := e.stream.Get(alarm.UnmappedAlarm, dom("module=ctl"))
	require.True(t, ok)
	assert.True(t, u.Active)
}

// Every action is in a hash-chained journal that the evidence package
// verifies; an edited byte breaks it.
func TestJournalVerifies(t *testing.T) {
	dir := t.TempDir()
	j, at, err := drain.OpenJournal(dir, clockAt(t0))
	require.NoError(t, err)
	e := newEnv(t, nil)
	e.journal = nil
	e.ctl = drain.New(e.cfg, drain.Deps{Index: e.ix, Scheduler: e.sched, Stream: e.stream, Journal: j, Store: e.store, Clock: e.clk, Raise: e.observe})
	e.ctl.Start(context.Background(), map[string]any{"test": true})
	e.raise(alarm.CoolingRedundancyLost, "cooling_loop=l2")
	e.clear(alarm.CoolingRedundancyLost, "cooling_loop=l2")
	e.clk.Advance(2 * time.Minute)
	_, err = e.release("alice", l2Owner)
	require.NoError(t, err)
	require.NoError(t, j.Close())
	n, err := drain.VerifyJournals(dir)
	require.NoError(t, err)
	assert.Greater(t, n[at], 8)
	b, err := os.ReadFile(filepath.Join(at, "journal.jsonl"))
	require.NoError(t, err)
	for _, kind := range []string{drain.RecStart, drain.RecAlarm, drain.RecHold, drain.RecDrain, drain.RecRequest, drain.RecRelease, drain.RecUndrain} {
		assert.Contains(t, string(b), `"kind":"`+kind+`"`, "every action is journalled")
	}
	require.Contains(t, string(b), `"by":"alice"`)
	require.NoError(t, os.WriteFile(filepath.Join(at, "journal.jsonl"), []byte(strings.Replace(string(b), `"by":"alice"`, `"by":"mallo"`, 1)), 0o644))
	_, err = drain.VerifyJournals(dir)
	require.ErrorContains(t, err, "journal does not verify")
}
