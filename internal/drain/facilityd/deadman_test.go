package facilityd_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/seamdc/seam/internal/alarm"
	"github.com/seamdc/seam/internal/clock"
	"github.com/seamdc/seam/internal/drain"
	"github.com/seamdc/seam/internal/drain/facilityd"
	"github.com/seamdc/seam/internal/scheduler"
)

// memSched is a scheduler in memory: every node idle until drained.
type memSched struct {
	mu      sync.Mutex
	reasons map[string]string // drained nodes and their reasons
}

func (m *memSched) Status(_ context.Context, names []string) (scheduler.Status, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := scheduler.Status{Nodes: map[string]scheduler.NodeStatus{}}
	for _, n := range names {
		r, drained := m.reasons[n]
		st.Nodes[n] = scheduler.NodeStatus{Name: n, State: map[bool]string{true: "drained", false: "idle"}[drained], Drained: drained, Reason: r}
	}
	return st, nil
}

func (m *memSched) Drain(_ context.Context, names []string, reason string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, n := range names {
		m.reasons[n] = reason
	}
	return nil
}

func (m *memSched) Undrain(_ context.Context, names []string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, n := range names {
		delete(m.reasons, n)
	}
	return nil
}

func (m *memSched) Jobs(context.Context, []string) ([]scheduler.Job, error) { return nil, nil }
func (m *memSched) Signal(context.Context, string, string, bool) error      { return nil }
func (m *memSched) Commands(op scheduler.Op) []string                       { return (&scheduler.Slurm{}).Commands(op) }

func (m *memSched) drained() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.reasons)
}

// The dead man's switch, as the daemon wires it: Alertmanager's
// Watchdog not heard within alarm_path.watchdog raises alarm_path_dead
// for the site, and every release is refused until a firing Watchdog
// arrives again; a resolved Watchdog is no beat. The detection latency
// is the watchdog timeout plus one check period (1 s), on facilityd's
// clock.
func TestDeadMansSwitch(t *testing.T) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	signer, err := ssh.NewSignerFromKey(priv)
	require.NoError(t, err)
	allowed := filepath.Join(t.TempDir(), "allowed_signers")
	require.NoError(t, os.WriteFile(allowed, []byte(`alice namespaces="seam-facilityd" `+string(ssh.MarshalAuthorizedKey(signer.PublicKey()))), 0o644))

	t0 := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	clk := clock.NewFake(t0)
	cfg, err := facilityd.LoadConfig(demoConfig(t, `, "alarm_path": {"required": true, "watchdog": "10s"}, "clear_for": "1m",
		"approvals": {"allowed_signers": "`+allowed+`"}`))
	require.NoError(t, err)
	sched := &memSched{reasons: map[string]string{}}
	d, err := facilityd.New(cfg, facilityd.Options{Clock: clk, Scheduler: sched})
	require.NoError(t, err)
	defer d.Close()

	site := alarm.Domain{Kind: alarm.Site, Value: "threemodule"}
	l2 := alarm.Domain{Kind: alarm.CoolingLoop, Value: "l2"}
	watchdog := func(status string) {
		_, err := d.Webhook.Take(&alarm.WebhookMessage{Version: "4", Status: status, Alerts: []alarm.WebhookAlert{
			{Status: status, Labels: map[string]string{"alertname": alarm.WatchdogAlert}, StartsAt: t0, Fingerprint: "00000000000000aa"}}})
		require.NoError(t, err)
	}
	pathDead := func() bool { a, ok := d.Stream.Get(alarm.AlarmPathDead, site); return ok && a.Active }
	release := func() error {
		r := drain.NewRequest("threemodule", drain.ActRelease, "alice", clk.Now())
		r.Owner, r.Why = drain.FacilityOwner(alarm.CoolingRedundancyLost, l2), "pump replaced"
		s, err := drain.Sign(r, signer)
		require.NoError(t, err)
		a, err := d.Verifier.Verify(s, clk.Now())
		require.NoError(t, err)
		_, err = d.Ctl.Take(context.Background(), a)
		return err
	}

	// never heard: not alive, and silent once the timeout passes
	assert.Equal(t, "dead", d.Ctl.Snapshot().AlarmPath)
	clk.Advance(11 * time.Second)
	d.Beats.Check(clk.Now())
	require.True(t, pathDead(), "a Watchdog never heard is a dead alarm path")
	watchdog("firing")
	assert.False(t, pathDead(), "heard: the path lives")
	assert.Equal(t, "alive", d.Ctl.Snapshot().AlarmPath)

	// l2 loses redundancy, is drained, and clears
	obs := func(active bool) {
		d.Observe(alarm.Observation{Type: alarm.CoolingRedundancyLost, Domain: l2, Active: active, Kind: alarm.FromDevice, Source: "cdu-l2/redundancy-lost", At: clk.Now()})
	}
	obs(true)
	require.Equal(t, 288, sched.drained())
	obs(false)

	// the Watchdog stops: within its timeout nothing is raised, one
	// check after it alarm_path_dead is, and the release is refused
	for range 10 {
		clk.Advance(time.Second)
		d.Beats.Check(clk.Now())
	}
	assert.False(t, pathDead(), "within the timeout")
	clk.Advance(time.Second)
	d.Beats.Check(clk.Now())
	require.True(t, pathDead(), "one check past the timeout")
	clk.Advance(time.Minute) // l2 clear for longer than clear_for
	err = release()
	var re *drain.RefusedError
	require.ErrorAs(t, err, &re)
	assert.Contains(t, err.Error(), "the alarm path is dead")
	assert.Equal(t, 288, sched.drained())

	// a resolved Watchdog is the path dying, not a beat
	watchdog("resolved")
	assert.True(t, pathDead())
	// heard again: the release goes ahead
	watchdog("firing")
	assert.False(t, pathDead())
	require.NoError(t, release())
	assert.Equal(t, 0, sched.drained())
}
