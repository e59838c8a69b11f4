// Package kubelettest is a fake kubelet for tests of the burn-in on
// Kubernetes against a real kube-apiserver (internal/peer/kubetest),
// where no real kubelet can run: it registers its nodes (Ready, an
// InternalIP of 127.0.0.1, its HTTPS port as the kubelet endpoint),
// watches the pods bound to them, runs each pod's command in process
// (GPUTools: internal/gputools against the simulated fleet), writes the
// pods' status through the API server (Running, then Succeeded or
// Failed with the container's exit code and, on failure, its
// termination message) and serves the containers' logs over HTTPS at
// /containerLogs/NS/POD/CONTAINER, where the API server's pods/log
// reaches it.
//
// What it does not prove: scheduling (no scheduler runs; it runs any
// pod bound to its nodes, as a real kubelet runs a pod given a
// nodeName whatever its NoSchedule taints), image pulls, containers,
// GPUs and the device plugin, resource admission, the real kubelet's
// status timing and log format (timestamps, stream interleaving), or
// the API server's client certificate to the kubelet (it accepts any
// caller).
package kubelettest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/seamdc/seam/internal/gputools"
	"github.com/seamdc/seam/internal/topology/hostlist"
)

// Result is what a container did: its log (stdout then stderr), its
// exit code and, when it failed, its termination message.
type Result struct {
	Log     []byte
	Exit    int
	Message string
}

// RunFunc runs a pod's (first) container.
type RunFunc func(ctx context.Context, pod *corev1.Pod) Result

// Config is the kubelet's.
type Config struct {
	Client k8s.Interface
	// Nodes are registered Ready and their pods run.
	Nodes []string
	// Hang are registered Ready but their pods never start (a kubelet
	// that does not answer).
	Hang []string
	Run  RunFunc
}

// Kubelet is a running fake kubelet.
type Kubelet struct {
	cfg     Config
	srv     *httptest.Server
	ctx     context.Context
	mu      sync.Mutex
	logs    map[string][]byte
	started map[string]bool
	ran     []*corev1.Pod
	wg      sync.WaitGroup
}

// Start registers the nodes, starts the log server and the pod watch,
// and stops them when the test ends.
func Start(tb testing.TB, cfg Config) *Kubelet {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	k := &Kubelet{cfg: cfg, ctx: ctx, logs: map[string][]byte{}, started: map[string]bool{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /containerLogs/{ns}/{pod}/{container}", k.serveLog)
	k.srv = httptest.NewUnstartedServer(mux)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		cancel()
		tb.Fatalf("kubelet: listening: %v", err)
	}
	k.srv.Listener = l
	k.srv.StartTLS()
	stop := make(chan struct{})
	tb.Cleanup(func() {
		cancel()
		close(stop)
		k.wg.Wait()
		k.srv.Close()
	})
	port := l.Addr().(*net.TCPAddr).Port
	for _, n := range append(slices.Clone(cfg.Nodes), cfg.Hang...) {
		if err := k.register(ctx, n, port); err != nil {
			tb.Fatalf("kubelet: registering node %s: %v", n, err)
		}
	}
	f := informers.NewSharedInformerFactory(cfg.Client, 0)
	inf := f.Core().V1().Pods().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { k.handle(o) },
		UpdateFunc: func(_, o any) { k.handle(o) },
	}); err != nil {
		tb.Fatalf("kubelet: watching pods: %v", err)
	}
	f.Start(stop)
	if !cache.WaitForCacheSync(stop, inf.HasSynced) {
		tb.Fatal("kubelet: the pod watch did not sync")
	}
	return k
}

// register writes the node's status as a kubelet would: Ready, its
// address and its kubelet port.
func (k *Kubelet) register(ctx context.Context, name string, port int) error {
	nodes := k.cfg.Client.CoreV1().Nodes()
	for attempt := 0; ; attempt++ {
		n, err := nodes.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		now := metav1.Now()
		n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}}
		n.Status.DaemonEndpoints.KubeletEndpoint.Port = int32(port)
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			Message: "kubelet is posting ready status (kubelettest)", LastHeartbeatTime: now, LastTransitionTime: now}}
		_, err = nodes.UpdateStatus(ctx, n, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) && attempt < 5 {
			continue
		}
		return err
	}
}

// Ran is every pod it ran, as it was when it started.
func (k *Kubelet) Ran() []*corev1.Pod {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Clone(k.ran)
}

func (k *Kubelet) handle(o any) {
	p, ok := o.(*corev1.Pod)
	if !ok || !slices.Contains(k.cfg.Nodes, p.Spec.NodeName) {
		return
	}
	key := p.Namespace + "/" + p.Name + "/" + string(p.UID)
	if p.DeletionTimestamp != nil {
		// the kubelet confirms a deletion once the pod has stopped
		k.wg.Go(func() {
			zero := int64(0)
			_ = k.cfg.Client.CoreV1().Pods(p.Namespace).Delete(k.ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero,
				Preconditions: &metav1.Preconditions{UID: &p.UID}})
		})
		return
	}
	if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return
	}
	k.mu.Lock()
	if k.started[key] {
		k.mu.Unlock()
		return
	}
	k.started[key] = true
	k.ran = append(k.ran, p.DeepCopy())
	k.mu.Unlock()
	k.wg.Go(func() { k.runPod(p.DeepCopy()) })
}

func (k *Kubelet) runPod(p *corev1.Pod) {
	if len(p.Spec.Containers) == 0 {
		return
	}
	c := p.Spec.Containers[0]
	start := metav1.Now()
	if err := k.setStatus(p, func(s *corev1.PodStatus) {
		s.Phase, s.StartTime, s.HostIP, s.PodIP = corev1.PodRunning, &start, "127.0.0.1", "127.0.0.1"
		s.ContainerStatuses = []corev1.ContainerStatus{{Name: c.Name, Image: c.Image, Ready: true, Started: ptr(true),
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: start}}}}
	}); err != nil {
		return
	}
	r := k.cfg.Run(k.ctx, p)
	k.mu.Lock()
	k.logs[p.Namespace+"/"+p.Name+"/"+c.Name] = r.Log
	k.mu.Unlock()
	phase, reason := corev1.PodSucceeded, "Completed"
	if r.Exit != 0 {
		phase, reason = corev1.PodFailed, "Error"
	}
	_ = k.setStatus(p, func(s *corev1.PodStatus) {
		s.Phase = phase
		s.ContainerStatuses = []corev1.ContainerStatus{{Name: c.Name, Image: c.Image, Started: ptr(false),
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: int32(r.Exit), Reason: reason,
				Message: r.Message, StartedAt: start, FinishedAt: metav1.Now()}}}}
	})
}

func ptr[T any](v T) *T { return &v }

// setStatus writes the pod's status, read again on a conflict.
func (k *Kubelet) setStatus(p *corev1.Pod, edit func(*corev1.PodStatus)) error {
	pods := k.cfg.Client.CoreV1().Pods(p.Namespace)
	for attempt := 0; ; attempt++ {
		cur, err := pods.Get(k.ctx, p.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if cur.UID != p.UID {
			return fmt.Errorf("pod %s/%s was replaced", p.Namespace, p.Name)
		}
		edit(&cur.Status)
		_, err = pods.UpdateStatus(k.ctx, cur, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) && attempt < 10 {
			continue
		}
		return err
	}
}

func (k *Kubelet) serveLog(w http.ResponseWriter, r *http.Request) {
	k.mu.Lock()
	b, ok := k.logs[r.PathValue("ns")+"/"+r.PathValue("pod")+"/"+r.PathValue("container")]
	k.mu.Unlock()
	if !ok {
		http.Error(w, "container not found", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	_, _ = w.Write(b)
}

// GPUTools runs a pod's command as the simulated GPU tool it names, on
// the pod's node, with its rank and job nodes from the environment the
// burn-in's pods carry (SLURM_PROCID, SLURM_JOB_NODELIST), the nodes'
// state from nodes (the simulated fleet).
func GPUTools(nodes func(names ...string) ([]*gputools.Node, error)) RunFunc {
	return func(_ context.Context, p *corev1.Pod) Result {
		c := p.Spec.Containers[0]
		if len(c.Command) == 0 {
			return Result{Exit: 128, Message: "no command"}
		}
		env := gputools.Env{Node: p.Spec.NodeName, Nodes: nodes}
		for _, e := range c.Env {
			switch e.Name {
			case "SLURM_PROCID":
				env.Rank, _ = strconv.Atoi(e.Value)
			case "SLURM_JOB_NODELIST":
				if ns, err := hostlist.Expand(e.Value); err == nil && len(ns) > 1 {
					env.JobNodes = ns
				}
			}
		}
		var out, errb bytes.Buffer
		code := gputools.Run(c.Command[0], c.Command[1:], env, &out, &errb)
		r := Result{Log: append(out.Bytes(), errb.Bytes()...), Exit: code}
		if code != 0 {
			r.Message = strings.TrimSpace(errb.String())
		}
		return r
	}
}
