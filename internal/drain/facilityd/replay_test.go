package facilityd_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/drain/facilityd"
	"github.com/seamdc/seam/internal/scheduler"
)

// fakeSlurm is a scheduler whose drains block until release is closed
// (nil: they do not), and which records the nodes it drained.
type fakeSlurm struct {
	release chan struct{}
	mu      sync.Mutex
	drained map[string]bool
	calls   int
}

func (f *fakeSlurm) Status(_ context.Context, names []string) (scheduler.Status, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st := scheduler.Status{Nodes: map[string]scheduler.NodeStatus{}}
	for _, n := range names {
		ns := scheduler.NodeStatus{Name: n, State: "idle"}
		if f.drained[n] {
			ns.State, ns.Drained = "drained", true
		}
		st.Nodes[n] = ns
	}
	return st, nil
}

func (f *fakeSlurm) Drain(ctx context.Context, names []string, _ string) error {
	f.mu.Lock()
	f.calls++
	f.mu.Unlock()
	if f.release != nil {
		select {
		case <-f.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.drained == nil {
		f.drained = map[string]bool{}
	}
	for _, n := range names {
		f.drained[n] = true
	}
	return nil
}

func (f *fakeSlurm) Undrain(context.Context, []string) error                 { return nil }
func (f *fakeSlurm) Jobs(context.Context, []string) ([]scheduler.Job, error) { return nil, nil }
func (f *fakeSlurm) Signal(context.Context, string, string, bool) error      { return nil }
func (f *fakeSlurm) Commands(op scheduler.Op) []string                       { return (&scheduler.Slurm{}).Commands(op) }
func (f *fakeSlurm) count() (calls, drained int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls, len(f.drained)
}

// The webhook answers once the alarm is durable, with the drain still
// running behind it (here it never ends); facilityd killed right then
// and started again on the state it left drains the alarm's nodes.
func TestWebhookAnswersThenDrainsAndReplays(t *testing.T) {
	cfgFile := demoConfig(t, "")
	cfg, err := facilityd.LoadConfig(cfgFile)
	require.NoError(t, err)
	stuck := &fakeSlurm{release: make(chan struct{})}
	d1, err := facilityd.New(cfg, facilityd.Options{Scheduler: stuck, Out: io.Discard})
	require.NoError(t, err)
	srv := httptest.NewServer(d1.Handler())
	defer srv.Close()
	ctx1, cancel1 := context.WithCancel(context.Background())
	done1 := make(chan struct{})
	go func() { _ = d1.Run(ctx1); close(done1) }()
	require.Eventually(t, d1.Ready, 10*time.Second, 5*time.Millisecond)

	client := &http.Client{Timeout: 20 * time.Second}
	resp, err := client.Post(srv.URL+"/v1/alertmanager", "application/json", strings.NewReader(
		`{"version":"4","alerts":[{"status":"firing","labels":{"alertname":"SeamCoolingRedundancyLost","domain":"cooling_loop=l2"},"fingerprint":"l2"}]}`))
	require.NoError(t, err, "answered while the drain it caused cannot finish")
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	// the state as a kill would leave it, the moment after the answer
	state, err := os.ReadFile(filepath.Join(cfg.Path(cfg.StateDir), "state.json"))
	require.NoError(t, err)
	assert.Contains(t, string(state), `"cooling_redundancy_lost"`, "the alarm is durable before the answer")
	require.Eventually(t, func() bool { c, _ := stuck.count(); return c > 0 }, 10*time.Second, 5*time.Millisecond, "the drain runs behind the answer")
	cancel1()
	<-done1
	d1.Close()
	_, drained := stuck.count()
	require.Zero(t, drained, "killed before its drain finished")

	// started again on that state: the alarm's nodes drain
	cfgFile2 := demoConfig(t, "")
	cfg2, err := facilityd.LoadConfig(cfgFile2)
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(cfg2.Path(cfg2.StateDir), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(cfg2.Path(cfg2.StateDir), "state.json"), state, 0o600))
	replayed := &fakeSlurm{}
	d2, err := facilityd.New(cfg2, facilityd.Options{Scheduler: replayed, Out: io.Discard})
	require.NoError(t, err)
	defer d2.Close()
	ctx2, cancel2 := context.WithCancel(context.Background())
	done2 := make(chan struct{})
	go func() { _ = d2.Run(ctx2); close(done2) }()
	defer func() { cancel2(); <-done2 }()
	require.Eventually(t, func() bool { _, n := replayed.count(); return n == 288 }, 20*time.Second, 10*time.Millisecond,
		"mb's 288 nodes drained after the restart")
}
