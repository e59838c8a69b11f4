package facilityd

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"flag"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/seamdc/seam/internal/alarm"
	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/drain"
	"github.com/seamdc/seam/internal/drain/kubeha"
	"github.com/seamdc/seam/internal/peer/kubetest"
	kube "github.com/seamdc/seam/internal/scheduler/kubernetes"
)

const threemodule = "../../../contracts/examples/threemodule"

// syncBuf is a buffer two goroutines write.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func kubeConfigFile(t *testing.T, e *kubetest.Env, identity string) *Config {
	t.Helper()
	abs, err := filepath.Abs(threemodule)
	require.NoError(t, err)
	body, err := json.Marshal(map[string]any{
		"contracts": abs, "state_dir": t.TempDir(), "listen": "127.0.0.1:0",
		"scheduler": map[string]any{"kind": "kubernetes", "kubernetes": map[string]any{"kubeconfig": e.Kubeconfig, "namespace": "default", "identity": identity,
			// short, for the test to run quickly; nothing asserts on them
			"lease_duration": "4s", "renew_deadline": "3s", "retry_period": "500ms"}},
	})
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), identity+".json")
	require.NoError(t, os.WriteFile(path, body, 0o600))
	cfg, err := LoadConfig(path)
	require.NoError(t, err)
	return cfg
}

func heldCount(t *testing.T, c k8s.Interface, names []string) int {
	t.Helper()
	list, err := c.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	held := 0
	for _, n := range list.Items {
		if want[n.Name] && slices.ContainsFunc(n.Spec.Taints, kube.Ours) {
			held++
		}
	}
	return held
}

// waitFor polls cond on the API server's state; the deadline only ends
// a test that would otherwise hang.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	end := time.Now().Add(3 * time.Minute)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("still not %s after 3 min", what)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestRunKubernetesReplicas runs facilityd run twice against a real
// API server with scheduler.kind kubernetes: the leader drains l2's 288
// nodes for a raised alarm, committing its state to the ConfigMap; the
// other follows. The leader is stopped without releasing its Lease; the
// follower takes over with the next epoch, finds the hold, and releases
// nothing.
func TestRunKubernetesReplicas(t *testing.T) {
	// klog's logger is global: set it before any client runs, as a lone
	// facilityd does (two replicas in one test process would race on it)
	klogOnce.Do(func() { klog.SetSlogLogger(slog.New(slog.DiscardHandler)) })
	e := kubetest.Start(t)
	c, _, err := contract.Load(threemodule)
	require.NoError(t, err)
	_, err = c.ReadInventory(nil)
	require.NoError(t, err)
	g, _ := c.Graph()
	ix := alarm.NewIndex(g)
	l2 := ix.Nodes(alarm.Domain{Kind: alarm.CoolingLoop, Value: "l2"})
	require.Len(t, l2, 288)
	for _, n := range l2 {
		_, err := e.Client.CoreV1().Nodes().Create(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	start := func(ctx context.Context, id string, raises []string) (*syncBuf, chan int) {
		var logs syncBuf
		done := make(chan int, 1)
		cfg := kubeConfigFile(t, e, id)
		go func() {
			done <- run(ctx, cfg, flag.NewFlagSet("run", flag.ContinueOnError), runFlags{raises: raises}, &logs, &logs, slog.New(slog.NewTextHandler(&logs, nil)))
		}()
		return &logs, done
	}
	ctx1, stop1 := context.WithCancel(context.Background())
	defer stop1()
	logs1, done1 := start(ctx1, "replica-1", []string{"cooling_redundancy_lost@cooling_loop=l2"})
	waitFor(t, "288 nodes held", func() bool { return heldCount(t, e.Client, l2) == 288 })
	// the state (a ConfigMap, saved in batches) follows the taints by a
	// moment: the hold's save comes after the drain it records
	owner := drain.FacilityOwner(alarm.CoolingRedundancyLost, alarm.Domain{Kind: alarm.CoolingLoop, Value: "l2"})
	waitFor(t, "the hold in the state", func() bool {
		st, epoch, err := kubeha.Load(context.Background(), e.Client, "default", "facilityd-state", ix.Site())
		return err == nil && epoch == 0 && st.Holds[owner] != nil
	})

	ctx2, stop2 := context.WithCancel(context.Background())
	defer stop2()
	logs2, done2 := start(ctx2, "replica-2", nil)
	stop1() // the leader goes; its Lease lapses
	require.Equal(t, 0, <-done1, logs1.String())
	waitFor(t, "replica-2 leading", func() bool {
		_, e2, err := kubeha.Load(context.Background(), e.Client, "default", "facilityd-state", ix.Site())
		return err == nil && e2 == 1
	})
	st, _, err := kubeha.Load(context.Background(), e.Client, "default", "facilityd-state", ix.Site())
	require.NoError(t, err)
	require.Len(t, st.Holds, 1, "the hold, once")
	require.Contains(t, st.Holds, owner, "the alarm and its hold carried over: nothing released")
	require.Equal(t, 288, heldCount(t, e.Client, l2), "nothing released")
	stop2()
	require.Equal(t, 0, <-done2, logs2.String())
	journals, err := kubeha.VerifyJournal(context.Background(), e.Client, "default")
	require.NoError(t, err)
	require.Contains(t, journals, int64(0))
	require.Contains(t, journals, int64(1))
}

// TestShippedConfigLoads: the Deployment's facilityd.json is a valid
// configuration choosing the Kubernetes backend in-cluster.
func TestShippedConfigLoads(t *testing.T) {
	b, err := os.ReadFile("../../../deploy/kubernetes/configmap.yaml")
	require.NoError(t, err)
	i := bytes.Index(b, []byte("facilityd.json: |\n"))
	require.Positive(t, i)
	var lines [][]byte
	for _, l := range bytes.Split(b[i+len("facilityd.json: |\n"):], []byte("\n")) {
		lines = append(lines, bytes.TrimPrefix(l, []byte("    ")))
	}
	cfg, err := ParseConfig("configmap.yaml", bytes.Join(lines, []byte("\n")))
	require.NoError(t, err)
	require.Equal(t, "kubernetes", cfg.Scheduler.Kind)
	require.NotNil(t, cfg.Scheduler.Kubernetes)
	require.Empty(t, cfg.Scheduler.Kubernetes.Kubeconfig, "in-cluster")
}

// TestKubeconfigFlagNeedsKubernetes: --kubeconfig on a configuration
// of another scheduler is a usage error naming the file and its kind.
func TestKubeconfigFlagNeedsKubernetes(t *testing.T) {
	var out, errb bytes.Buffer
	code := Main([]string{"run", "--config", "../../../deploy/facilityd.demo.json", "--kubeconfig", "kc"}, &out, &errb)
	require.Equal(t, 1, code, errb.String())
	require.Contains(t, errb.String(), `facilityd.demo.json has scheduler.kind "none", not kubernetes`)
}

// TestFollowerHandler: a follower is alive and scraped, but not ready,
// and takes no webhook or request.
func TestFollowerHandler(t *testing.T) {
	const reader = "reader-token-of-the-test"
	h := followerHandler("facilityd-1", &token{sum: sha256.Sum256([]byte(reader))}, slog.New(slog.DiscardHandler))
	for _, tc := range []struct {
		method, path, bearer string
		code                 int
		body                 string
	}{
		{"GET", "/healthz", "", 200, "facilityd-1 follows"},
		{"GET", "/metrics", reader, 200, "go_goroutines"},
		{"GET", "/metrics", "", 401, "metrics needs its bearer token"},
		{"GET", "/metrics", "not-the-reader-token", 401, "metrics needs its bearer token"},
		{"GET", "/readyz", "", 503, "follower"},
		{"POST", "/v1/alertmanager", "", 503, "the leader takes requests"},
		{"POST", "/v1/requests", "", 503, "follower"},
	} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(tc.method, tc.path, nil)
		if tc.bearer != "" {
			req.Header.Set("Authorization", "Bearer "+tc.bearer)
		}
		h.ServeHTTP(rec, req)
		require.Equal(t, tc.code, rec.Code, tc.path)
		require.Contains(t, rec.Body.String(), tc.body, tc.path)
	}
}
