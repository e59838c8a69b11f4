package facilityd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/seamdc/seam/internal/cli"
	"github.com/seamdc/seam/internal/drain"
	"github.com/seamdc/seam/internal/drain/kubeha"
	kube "github.com/seamdc/seam/internal/scheduler/kubernetes"
	"github.com/seamdc/seam/internal/version"
)

// KubernetesConfig is scheduler.kubernetes: how facilityd reaches the
// API server, and its high availability.
type KubernetesConfig struct {
	// Kubeconfig is a kubeconfig file; "" uses the pod's service
	// account (in-cluster).
	Kubeconfig string `json:"kubeconfig,omitempty"`
	// Cordon also sets spec.unschedulable on held nodes that are not
	// cordoned (released only if facilityd set it).
	Cordon bool `json:"cordon,omitempty"`
	// Namespace of the Lease, the state and the journal (default: the
	// pod's, from $POD_NAMESPACE or the service account; else default).
	Namespace string `json:"namespace,omitempty"`
	// Identity of this replica (default $POD_NAME, else the host name).
	Identity string `json:"identity,omitempty"`
	// Lease is the Lease's name (default facilityd), with client-go's
	// recommended timings by default: 15 s, 10 s, 2 s.
	Lease         string   `json:"lease,omitempty"`
	LeaseDuration Duration `json:"lease_duration,omitempty"`
	RenewDeadline Duration `json:"renew_deadline,omitempty"`
	RetryPeriod   Duration `json:"retry_period,omitempty"`
	// QPS and Burst bound client-go's requests (default 100 and 600:
	// holding a module of 288 nodes takes a List and 288 patches, within
	// one burst; client-go's own 5 and 10 would take a minute).
	QPS   float32 `json:"qps,omitempty"`
	Burst int     `json:"burst,omitempty"`
}

// restConfig is the client configuration: the kubeconfig, or in-cluster.
func (k *KubernetesConfig) restConfig(c *Config) (*rest.Config, error) {
	path := ""
	if k.Kubeconfig != "" {
		path = c.Path(k.Kubeconfig)
	}
	return kube.RestConfig(path, "scheduler.kubernetes.kubeconfig")
}

func (k *KubernetesConfig) namespace() string {
	if k.Namespace != "" {
		return k.Namespace
	}
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	if b, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace"); err == nil && len(strings.TrimSpace(string(b))) > 0 {
		return strings.TrimSpace(string(b))
	}
	return "default"
}

func (k *KubernetesConfig) identity() string {
	if k.Identity != "" {
		return k.Identity
	}
	if p := os.Getenv("POD_NAME"); p != "" {
		return p
	}
	h, _ := os.Hostname()
	return h
}

// kubeDrainer is the Kubernetes backend of a configuration.
func kubeDrainer(c *Config, log *slog.Logger) (*kube.Drainer, k8s.Interface, error) {
	k := c.Scheduler.Kubernetes
	rc, err := k.restConfig(c)
	if err != nil {
		return nil, nil, err
	}
	qps, burst := float32(100), 600
	if k.QPS > 0 {
		qps = k.QPS
	}
	if k.Burst > 0 {
		burst = k.Burst
	}
	cs, err := kube.NewClient(rc, "facilityd/"+version.Version, qps, burst)
	if err != nil {
		return nil, nil, fmt.Errorf("scheduler.kubernetes: %w", err)
	}
	return &kube.Drainer{Client: cs, Cordon: k.Cordon, Timeout: c.Scheduler.Timeout.D(30 * time.Second), Log: log.With("scheduler", "kubernetes")}, cs, nil
}

// runKubernetes runs facilityd as one replica of several: it serves
// /healthz at once and campaigns on the Lease; while it leads it claims
// the state (a ConfigMap), opens its journal (ConfigMaps of its epoch),
// and runs the daemon with them. A follower answers /readyz 503, so a
// Service sends Alertmanager's webhook to the leader. Leadership lost
// or a write fenced ends the process (exit 1): the Deployment restarts
// it as a follower.
func runKubernetes(ctx context.Context, cfg *Config, kd *kube.Drainer, cs k8s.Interface, raise []string, stdout io.Writer, log *slog.Logger) error {
	k := cfg.Scheduler.Kubernetes
	ns, id := k.namespace(), k.identity()
	el := &kubeha.Elector{Client: cs, Namespace: ns, Name: k.Lease, Identity: id, LeaseDuration: k.LeaseDuration.D(0), RenewDeadline: k.RenewDeadline.D(0),
		RetryPeriod: k.RetryPeriod.D(0), Log: log.With("part", "election")}
	kd.Fence = el
	var handler atomic.Pointer[http.Handler]
	reader, err := readToken("auth.reader_token_file", cfg.Path(cfg.Auth.ReaderTokenFile))
	if err != nil {
		return err
	}
	follower := followerHandler(id, reader, log)
	handler.Store(&follower)
	srv, ln, err := Listen(cfg, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*handler.Load()).ServeHTTP(w, r) }))
	if err != nil {
		return err
	}
	go func() { _ = srv.Serve(ln) }()
	defer func() {
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shut)
	}()
	log.Info("serving, campaigning for the lease", "address", ln.Addr().String(), "identity", id, "namespace", ns, "version", version.Version)
	var mu sync.Mutex
	var leadErr error
	led := false
	err = el.Run(ctx, func(lctx context.Context, epoch int64) {
		mu.Lock()
		led = true
		mu.Unlock()
		lerr := lead(lctx, cfg, kd, cs, ns, id, epoch, raise, stdout, log, func(h http.Handler) { handler.Store(&h) })
		handler.Store(&follower)
		mu.Lock()
		leadErr = lerr
		mu.Unlock()
	})
	mu.Lock()
	defer mu.Unlock()
	switch {
	case ctx.Err() != nil:
		return nil
	case leadErr != nil:
		return leadErr
	case led:
		return errors.New("leadership lost: exiting, to restart as a follower")
	}
	return err
}

func lead(ctx context.Context, cfg *Config, kd *kube.Drainer, cs k8s.Interface, ns, id string, epoch int64, raise []string, stdout io.Writer, log *slog.Logger,
	serve func(http.Handler)) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	store := &kubeha.Store{Client: cs, Namespace: ns, Leader: id, Epoch: epoch}
	d, err := New(cfg, Options{Out: stdout, Log: log, Scheduler: kd, Shared: &Shared{Store: store, Journal: &kubeha.Journal{Client: cs, Namespace: ns, Leader: id, Epoch: epoch},
		Fenced: func(err error) { cancel(err) }, Claim: func(site string) (*drain.State, error) { return store.Claim(ctx, site) },
		Epoch: epoch, Leader: id}})
	if err != nil {
		return err
	}
	defer d.Close()
	obs, err := d.parseRaises(raise)
	if err != nil {
		return err
	}
	serve(d.Handler())
	go func() {
		for !d.Ready() && ctx.Err() == nil {
			time.Sleep(10 * time.Millisecond)
		}
		for _, o := range obs {
			d.Observe(o)
		}
	}()
	if err := d.Run(ctx); err != nil {
		return err
	}
	if cause := context.Cause(ctx); errors.Is(cause, drain.ErrFenced) {
		return fmt.Errorf("epoch %d: %w", epoch, cause)
	}
	return nil
}

// followerHandler serves a follower: /healthz 200, /metrics its
// process's metrics (so Prometheus' up stays 1 and SeamFacilitydDown
// pages only for a replica that is down), 503 for the rest (/readyz
// too: the Service routes to the leader).
func followerHandler(id string, reader *token, log *slog.Logger) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintf(w, "ok: %s follows\n", id) })
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mux.Handle("GET /metrics", guard("metrics", reader, log, func() {}, promhttp.HandlerFor(reg, promhttp.HandlerOpts{})))
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, id+" is a follower: the leader takes requests (a Service routes to the ready replica)", http.StatusServiceUnavailable)
	})
	return mux
}

var klogOnce sync.Once

// runKubernetesArgs is runRun's Kubernetes branch: a dry run gets the
// backend (it reads the nodes, writes nothing); a run becomes a replica.
func runKubernetesArgs(ctx context.Context, cfg *Config, fs *flag.FlagSet, dryRun bool, raises []string, stdout, stderr io.Writer, log *slog.Logger) (kd *kube.Drainer, code int, done bool) {
	klogOnce.Do(func() { klog.SetSlogLogger(log.With("part", "client-go")) }) // client-go's logs through slog, set before any client runs
	kd, cs, err := kubeDrainer(cfg, log)
	if err != nil {
		return nil, program.Fail(stderr, "run", fs, err), true
	}
	if dryRun {
		return kd, 0, false
	}
	if err := runKubernetes(ctx, cfg, kd, cs, raises, stdout, log); err != nil {
		return nil, program.Fail(stderr, "run", fs, err), true
	}
	log.Info("stopped")
	return nil, cli.ExitOK, true
}
