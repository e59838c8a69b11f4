package facilityd_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/alarm"
	"github.com/seamdc/seam/internal/clock"
	"github.com/seamdc/seam/internal/drain"
	"github.com/seamdc/seam/internal/drain/facilityd"
	"github.com/seamdc/seam/internal/peer"
	"github.com/seamdc/seam/internal/peer/slurmtest"
	"github.com/seamdc/seam/internal/scheduler"
)

// logBuffer is a log the daemon's goroutines write while the test reads.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *logBuffer) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.b.String(), s)
}

// running is a daemon run on a fake clock, served over HTTP.
type running struct {
	d   *facilityd.Daemon
	clk *clock.Fake
	srv *httptest.Server
}

func start(t *testing.T, cfgBody string, opt facilityd.Options) *running {
	t.Helper()
	p := filepath.Join(t.TempDir(), "facilityd.json")
	require.NoError(t, os.WriteFile(p, []byte(cfgBody), 0o644))
	cfg, err := facilityd.LoadConfig(p)
	require.NoError(t, err)
	clk := clock.NewFake(time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC))
	opt.Clock = clk
	d, err := facilityd.New(cfg, opt)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = d.Run(ctx); close(done) }()
	srv := httptest.NewServer(d.Handler())
	t.Cleanup(func() {
		srv.Close()
		cancel()
		<-done
		d.Close()
	})
	require.Eventually(t, d.Ready, 10*time.Second, 5*time.Millisecond)
	return &running{d: d, clk: clk, srv: srv}
}

// unreachable reads scheduler_unreachable from /metrics and /v1/status.
func (r *running) unreachable(t *testing.T) (metric string, status facilityd.StatusDoc) {
	t.Helper()
	resp, err := http.Get(r.srv.URL + "/metrics")
	require.NoError(t, err)
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "seam_facilityd_scheduler_unreachable ") {
			metric = strings.TrimPrefix(l, "seam_facilityd_scheduler_unreachable ")
		}
	}
	resp, err = http.Get(r.srv.URL + "/v1/status")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&status))
	return metric, status
}

func siteConfig(t *testing.T, scheduler string) string {
	root := peer.Root(t)
	return `{"contracts": "` + filepath.Join(root, "contracts/examples/threemodule") + `", "state_dir": "` + filepath.Join(t.TempDir(), "state") + `",
	"listen": "127.0.0.1:0", "reconcile": "10s", "scheduler": ` + scheduler + `}`
}

// facilityd with scheduler slurm and no slurmctld to answer (Debian's
// scontrol, a slurm.conf naming a closed loopback port) starts anyway,
// and says so: scheduler_unreachable is 1 on /metrics and in
// /v1/status, with what was tried and what to do, logged once.
func TestSchedulerUnreachableAtStart(t *testing.T) {
	peer.Need(t, "scontrol")
	conf := slurmtest.Unreachable(t)
	var logs logBuffer
	r := start(t, siteConfig(t, `{"kind": "slurm", "slurm_conf": "`+conf+`"}`), facilityd.Options{Log: slog.New(slog.NewTextHandler(&logs, nil))})
	metric, st := r.unreachable(t)
	assert.Equal(t, "1", metric)
	assert.True(t, st.SchedulerUnreachable)
	assert.Contains(t, st.SchedulerError, "no slurmctld reachable with SLURM_CONF="+conf+" (scontrol ping: Slurmctld(primary) at ")
	assert.Contains(t, st.SchedulerError, "check scheduler.slurm_conf in facilityd's configuration, and that slurmctld runs")
	assert.Equal(t, 1, logs.count("the scheduler is unreachable"), logs.String())
}

// flaky is a scheduler in memory whose controller goes away and comes
// back: while it is away every call fails, as Slurm's commands do.
type flaky struct {
	memSched
	down  atomic.Bool
	pings atomic.Int32
}

var errAway = errors.New("slurmctld is away")

func (f *flaky) Reachable(context.Context) error {
	f.pings.Add(1)
	if f.down.Load() {
		return errAway
	}
	return nil
}

func (f *flaky) Status(ctx context.Context, names []string) (scheduler.Status, error) {
	if f.down.Load() {
		return scheduler.Status{}, errAway
	}
	return f.memSched.Status(ctx, names)
}

func (f *flaky) Drain(ctx context.Context, names []string, reason string) error {
	if f.down.Load() {
		return errAway
	}
	return f.memSched.Drain(ctx, names, reason)
}

// While the scheduler is away facilityd retries it every reconcile
// period on its clock, logs the change once, not each retry, and keeps
// the hold of an alarm raised meanwhile in its ledger; when the
// scheduler answers, scheduler_unreachable goes to 0 and the drain that
// could not be sent is sent.
func TestSchedulerUnreachableRetries(t *testing.T) {
	sched := &flaky{memSched: memSched{reasons: map[string]string{}}}
	sched.down.Store(true)
	var logs logBuffer
	r := start(t, siteConfig(t, `{"kind": "slurm"}`), facilityd.Options{Scheduler: sched, Log: slog.New(slog.NewTextHandler(&logs, nil))})
	metric, st := r.unreachable(t)
	require.Equal(t, "1", metric)
	require.True(t, st.SchedulerUnreachable)
	assert.Equal(t, "slurmctld is away", st.SchedulerError)

	// the reconcile turns come on facilityd's clock: advance it until
	// the next check
	turn := func() {
		t.Helper()
		n := sched.pings.Load()
		require.Eventually(t, func() bool { r.clk.Advance(time.Second); return sched.pings.Load() > n }, 10*time.Second, time.Millisecond)
	}
	l2 := alarm.Domain{Kind: alarm.CoolingLoop, Value: "l2"}
	r.d.Observe(alarm.Observation{Type: alarm.CoolingRedundancyLost, Domain: l2, Active: true, Kind: alarm.FromDevice, Source: "cdu-l2/redundancy-lost", At: r.clk.Now()})
	owner := drain.FacilityOwner(alarm.CoolingRedundancyLost, l2)
	turn()
	turn()
	assert.Zero(t, sched.drained(), "nothing reaches a scheduler that is away")
	snap := r.d.Ctl.Snapshot()
	require.Len(t, snap.Holds, 1)
	assert.Equal(t, owner, snap.Holds[0].Owner, "the hold waits in the ledger")
	metric, _ = r.unreachable(t)
	assert.Equal(t, "1", metric)
	assert.Equal(t, 1, logs.count("the scheduler is unreachable"), "logged once, not each retry:\n%s", logs.String())

	sched.down.Store(false)
	turn()
	require.Eventually(t, func() bool { return sched.drained() == 288 }, 10*time.Second, 5*time.Millisecond, "the drain is sent when the scheduler answers")
	metric, st = r.unreachable(t)
	assert.Equal(t, "0", metric)
	assert.False(t, st.SchedulerUnreachable)
	assert.Empty(t, st.SchedulerError)
	assert.Equal(t, 1, logs.count("the scheduler answers again"))
	turn()
	assert.Equal(t, 1, logs.count("the scheduler is unreachable"))
	assert.Equal(t, 1, logs.count("the scheduler answers again"))
}
