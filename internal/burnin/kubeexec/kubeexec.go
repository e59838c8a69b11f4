// Package kubeexec runs the burn-in's jobs on Kubernetes: the nodes
// under burn-in carry a NoSchedule taint the burn-in owns (so no new
// user pod is scheduled there; running pods are never evicted), and
// every job is a set of pods pinned to its nodes (spec.nodeName, one
// pod per node in rank order) that tolerate that taint. The taint is
// written with the node patch of internal/scheduler/kubernetes (a merge
// patch carrying the resourceVersion just read; someone else's taints
// are kept), and Release removes only the burn-in's own taint.
package kubeexec

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	k8s "k8s.io/client-go/kubernetes"

	"github.com/seamdc/seam/internal/burnin"
	"github.com/seamdc/seam/internal/scheduler/kubernetes"
	"github.com/seamdc/seam/internal/topology/hostlist"
)

// The names the burn-in writes on nodes and pods. They are outside
// facilityd's domain (hold.seam.io): facilityd neither counts nor
// removes them, and the burn-in never touches facilityd's.
const (
	// TaintKey is the burn-in's NoSchedule taint; its value is the
	// reservation's name.
	TaintKey = "burnin.seam.io/reservation"
	// AnnReason says on the node why the taint is there and who set it.
	AnnReason = "burnin.seam.io/reason"
	// LabelJob and LabelReservation are on every pod of a job.
	LabelJob         = "burnin.seam.io/job"
	LabelReservation = "burnin.seam.io/reservation"
	// Container is the name of the tool's container in each pod.
	Container = "tool"
)

// Kube runs the burn-in's jobs as pods on the nodes under burn-in.
type Kube struct {
	Client    k8s.Interface
	Namespace string
	// Image is the container image holding the GPU tools
	// (dcgmi, nvidia-smi, all_reduce_perf).
	Image string
	// Reservation is the taint's value (Reserve sets it).
	Reservation string
	// Env is added to every container's environment.
	Env []corev1.EnvVar
	// Limits are every container's resource limits (nvidia.com/gpu: 4
	// on a real cluster: the device plugin gives the pod the GPUs).
	Limits corev1.ResourceList
	// Timeout bounds each API call that is not a wait (default 30 s).
	Timeout time.Duration
	Log     *slog.Logger

	runID   string
	seq     atomic.Int64
	once    sync.Once
	tainted []string
}

var (
	_ burnin.Executor = (*Kube)(nil)
	_ burnin.Checker  = (*Kube)(nil)
)

// Describe names the scheduler, the namespace and the reservation.
func (k *Kube) Describe() string {
	s := "Kubernetes (namespace " + k.Namespace
	if k.Reservation != "" {
		s += ", reservation " + k.Reservation
	}
	return s + ")"
}

func (k *Kube) log() *slog.Logger {
	if k.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return k.Log
}

func (k *Kube) callCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	t := k.Timeout
	if t <= 0 {
		t = 30 * time.Second
	}
	return context.WithTimeout(ctx, t)
}

// outsider is the burn-in's fence for the drainer's patch: it is not a
// facilityd replica, writes no epoch, and so is never refused for one.
type outsider struct{}

func (outsider) Token() (string, int64, error) { return "sat-burnin", math.MaxInt64, nil }

func (k *Kube) drainer() *kubernetes.Drainer {
	return &kubernetes.Drainer{Client: k.Client, Fence: outsider{}, Timeout: k.Timeout, Log: k.log(), Component: "sat-burnin"}
}

// Taint is the burn-in's taint for a reservation; Toleration tolerates
// exactly it.
func Taint(reservation string) corev1.Taint {
	return corev1.Taint{Key: TaintKey, Value: reservation, Effect: corev1.TaintEffectNoSchedule}
}

// Toleration is what the burn-in's pods carry.
func Toleration(reservation string) corev1.Toleration {
	return corev1.Toleration{Key: TaintKey, Operator: corev1.TolerationOpEqual, Value: reservation, Effect: corev1.TaintEffectNoSchedule}
}

// Reserve taints each node with the burn-in's NoSchedule taint (value
// name) and the reason annotation, keeping every other taint. A node
// already under another reservation is refused, named; when Reserve
// fails, the taints it placed are removed again.
func (k *Kube) Reserve(ctx context.Context, name, user string, nodes []string) error {
	if errs := validation.IsValidLabelValue(name); len(errs) > 0 || name == "" {
		return fmt.Errorf("kubernetes: reservation name %q cannot be a taint's value: %s (use letters, digits, '-', '_', '.', at most 63)", name, strings.Join(errs, "; "))
	}
	reason := fmt.Sprintf("sat burnin run by %s, reservation %s, since %s: no new pod is scheduled here until the burn-in ends",
		user, name, time.Now().UTC().Format(time.RFC3339))
	nodes, err := k.known(ctx, nodes)
	if err != nil {
		return err
	}
	taint := Taint(name)
	var mu sync.Mutex
	taken := map[string]string{}
	err = k.drainer().PatchNodes(ctx, "burn-in taint", nodes, func(n *corev1.Node) (map[string]any, bool) {
		var keep []corev1.Taint
		for _, t := range n.Spec.Taints {
			if t.Key == TaintKey && t.Effect == corev1.TaintEffectNoSchedule {
				if t.Value != name {
					mu.Lock()
					taken[n.Name] = t.Value
					mu.Unlock()
					return nil, false
				}
				continue
			}
			keep = append(keep, t)
		}
		mu.Lock()
		delete(taken, n.Name)
		mu.Unlock()
		keep = append(keep, taint)
		return map[string]any{"metadata": map[string]any{"annotations": map[string]any{AnnReason: reason}}, "spec": map[string]any{"taints": keep}},
			!slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return same(t, taint) })
	})
	k.Reservation = name
	k.tainted = nil
	for _, n := range nodes {
		if _, ok := taken[n]; !ok {
			k.tainted = append(k.tainted, n)
		}
	}
	if len(taken) > 0 {
		var bad []string
		for _, n := range nodes {
			if v, ok := taken[n]; ok {
				bad = append(bad, fmt.Sprintf("node %s is under burn-in reservation %s", n, v))
			}
		}
		err = fmt.Errorf("kubernetes: %s: end that burn-in first (or remove its taint %s)", strings.Join(bad, "; "), TaintKey)
	}
	if err != nil {
		// a burn-in that does not start leaves no taint behind
		if rerr := k.Release(context.WithoutCancel(ctx)); rerr != nil {
			err = errors.Join(err, fmt.Errorf("and removing the taints placed: %w", rerr))
		}
	}
	return err
}

// known is the nodes the cluster has: a missing one is not tainted
// (Unavailable names it; the ladder holds it without trying).
func (k *Kube) known(ctx context.Context, nodes []string) ([]string, error) {
	cctx, cancel := k.callCtx(ctx)
	defer cancel()
	list, err := k.Client.CoreV1().Nodes().List(cctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("kubernetes: listing nodes: %w", err)
	}
	have := map[string]bool{}
	for _, n := range list.Items {
		have[n.Name] = true
	}
	var out []string
	for _, n := range nodes {
		if have[n] {
			out = append(out, n)
			continue
		}
		k.log().Warn("no such node in the cluster: not tainted", "node", n)
	}
	return out, nil
}

// Release removes the burn-in's taint (this reservation's only) and
// its reason from the nodes it reserved; every other taint stays.
func (k *Kube) Release(ctx context.Context) error {
	if k.Reservation == "" || len(k.tainted) == 0 {
		return nil
	}
	taint := Taint(k.Reservation)
	err := k.drainer().PatchNodes(ctx, "burn-in release", k.tainted, func(n *corev1.Node) (map[string]any, bool) {
		keep := []corev1.Taint{}
		for _, t := range n.Spec.Taints {
			if !same(t, taint) {
				keep = append(keep, t)
			}
		}
		if len(keep) == len(n.Spec.Taints) {
			return nil, false // not ours (any more): its reason is not ours either
		}
		return map[string]any{"metadata": map[string]any{"annotations": map[string]any{AnnReason: nil}}, "spec": map[string]any{"taints": keep}}, true
	})
	if err != nil {
		return err
	}
	k.tainted = nil
	return nil
}

// Unavailable lists the nodes and names those that cannot run a job:
// missing, cordoned (spec.unschedulable: someone else's; the burn-in
// never cordons), or not Ready.
func (k *Kube) Unavailable(ctx context.Context, nodes []string) (map[string]string, error) {
	ctx, cancel := k.callCtx(ctx)
	defer cancel()
	list, err := k.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("kubernetes: listing nodes: %w", err)
	}
	byName := map[string]*corev1.Node{}
	for i := range list.Items {
		byName[list.Items[i].Name] = &list.Items[i]
	}
	bad := map[string]string{}
	for _, name := range nodes {
		n := byName[name]
		if n == nil {
			bad[name] = "Kubernetes has no such node (kubectl get nodes does not list it): join it to the cluster or leave it out with --nodes"
			continue
		}
		if n.Spec.Unschedulable {
			bad[name] = "Kubernetes reports it cordoned (spec.unschedulable) by someone else: uncordon it, or leave it out, to burn it in"
			continue
		}
		if why := notReady(n); why != "" {
			bad[name] = "Kubernetes reports it " + why + ": it cannot run a pod"
		}
	}
	return bad, nil
}

func same(a, b corev1.Taint) bool {
	return a.Key == b.Key && a.Value == b.Value && a.Effect == b.Effect
}

func notReady(n *corev1.Node) string {
	for _, c := range n.Status.Conditions {
		if c.Type != corev1.NodeReady {
			continue
		}
		if c.Status == corev1.ConditionTrue {
			return ""
		}
		why := fmt.Sprintf("NotReady (Ready=%s", c.Status)
		if c.Reason != "" {
			why += ", " + c.Reason
		}
		if c.Message != "" {
			why += ": " + c.Message
		}
		return why + ")"
	}
	return "NotReady (no Ready condition: no kubelet has registered it)"
}

func (k *Kube) jobName(step string) string {
	k.once.Do(func() {
		b := make([]byte, 3)
		_, _ = rand.Read(b)
		k.runID = hex.EncodeToString(b)
	})
	return fmt.Sprintf("%s-%s-%d", k.runID, strings.ToLower(step), k.seq.Add(1))
}

// Pods are the job's pods, one per node in rank order: pinned to the
// node, tolerating the burn-in's taint, never restarted, the job's
// nodes in the environment the way the tools' wrappers read Slurm's
// (SLURMD_NODENAME, SLURM_PROCID, SLURM_JOB_NODELIST, SLURM_NNODES).
func (k *Kube) Pods(j burnin.Job, job string, deadline time.Duration) []*corev1.Pod {
	list := hostlist.Compress(j.Nodes)
	var active *int64
	if deadline > 0 {
		s := int64(math.Ceil(deadline.Seconds()))
		active = &s
	}
	no := false
	pods := make([]*corev1.Pod, len(j.Nodes))
	for rank, node := range j.Nodes {
		env := []corev1.EnvVar{
			{Name: "SLURMD_NODENAME", Value: node},
			{Name: "SLURM_PROCID", Value: strconv.Itoa(rank)},
			{Name: "SLURM_JOB_NODELIST", Value: list},
			{Name: "SLURM_NNODES", Value: strconv.Itoa(len(j.Nodes))},
		}
		pods[rank] = &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Name:      fmt.Sprintf("seam-burnin-%s-%d", job, rank),
				Namespace: k.Namespace,
				Labels:    map[string]string{LabelJob: job, LabelReservation: k.Reservation, "app.kubernetes.io/managed-by": "sat-burnin"},
			},
			Spec: corev1.PodSpec{
				NodeName:                     node,
				RestartPolicy:                corev1.RestartPolicyNever,
				Tolerations:                  []corev1.Toleration{Toleration(k.Reservation)},
				ActiveDeadlineSeconds:        active,
				AutomountServiceAccountToken: &no,
				Containers: []corev1.Container{{
					Name: Container, Image: k.Image, Command: j.Command,
					Env:                      append(env, k.Env...),
					Resources:                corev1.ResourceRequirements{Limits: k.Limits},
					TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
				}},
			},
		}
	}
	return pods
}

// Run creates the job's pods, waits for every one to end (a watch,
// bounded by ctx), reads rank 0's log through the API server and its
// exit code (another rank's non-zero one when rank 0's is 0), and
// deletes the pods.
func (k *Kube) Run(ctx context.Context, j burnin.Job) burnin.Output {
	if len(j.Nodes) == 0 || len(j.Command) == 0 {
		return burnin.Output{Err: fmt.Errorf("kubernetes: a job needs nodes and a command")}
	}
	if k.Reservation == "" {
		return burnin.Output{Err: fmt.Errorf("kubernetes: no reservation: Reserve the nodes first (the pods tolerate its taint)")}
	}
	job := k.jobName(j.Step)
	var deadline time.Duration
	if dl, ok := ctx.Deadline(); ok {
		deadline = time.Until(dl)
	}
	pods := k.Pods(j, job, deadline)
	defer k.deletePods(context.WithoutCancel(ctx), pods)
	for _, p := range pods {
		cctx, cancel := k.callCtx(ctx)
		_, err := k.Client.CoreV1().Pods(k.Namespace).Create(cctx, p, metav1.CreateOptions{FieldManager: "sat-burnin"})
		cancel()
		if err != nil {
			return burnin.Output{Err: fmt.Errorf("kubernetes: creating pod %s/%s for %s on node %s: %w", k.Namespace, p.Name, j.Command[0], p.Spec.NodeName, err)}
		}
	}
	final, err := k.wait(ctx, job, len(pods))
	if err != nil {
		return burnin.Output{Err: fmt.Errorf("%s on %s: %s: %w", j.Command[0], hostlist.Compress(j.Nodes), k.pending(context.WithoutCancel(ctx), job, pods), err)}
	}
	return k.output(ctx, j, pods, final)
}

// output reads rank 0's log and the exit codes of the ended pods.
func (k *Kube) output(ctx context.Context, j burnin.Job, pods []*corev1.Pod, final map[string]*corev1.Pod) burnin.Output {
	var o burnin.Output
	var msg string
	for rank, p := range pods {
		got := final[p.Name]
		term := terminated(got)
		if term == nil {
			o.Err = fmt.Errorf("%s on %s: pod %s on node %s ended %s before its container ran: %s %s", j.Command[0], hostlist.Compress(j.Nodes),
				p.Name, p.Spec.NodeName, got.Status.Phase, got.Status.Reason, got.Status.Message)
			return o
		}
		code := int(term.ExitCode)
		if rank == 0 || (o.Exit == 0 && code != 0) {
			o.Exit = code
			msg = strings.TrimSpace(term.Message)
		}
	}
	cctx, cancel := k.callCtx(ctx)
	defer cancel()
	logs, err := k.Client.CoreV1().Pods(k.Namespace).GetLogs(pods[0].Name, &corev1.PodLogOptions{Container: Container}).DoRaw(cctx)
	if err != nil {
		o.Err = fmt.Errorf("%s on %s: reading pod %s's log (node %s's kubelet, through the API server): %w", j.Command[0], hostlist.Compress(j.Nodes),
			pods[0].Name, pods[0].Spec.NodeName, err)
		return o
	}
	o.Stdout = logs
	if o.Exit != 0 && msg != "" {
		o.Err = fmt.Errorf("%s on %s: exit %d: %s", j.Command[0], hostlist.Compress(j.Nodes), o.Exit, lastLine(msg))
	}
	return o
}

func terminated(p *corev1.Pod) *corev1.ContainerStateTerminated {
	if p == nil {
		return nil
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == Container && cs.State.Terminated != nil {
			return cs.State.Terminated
		}
	}
	return nil
}

func ended(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// pending names the job's pods that had not ended, with their node and
// phase, as the API server has them now.
func (k *Kube) pending(ctx context.Context, job string, pods []*corev1.Pod) string {
	cctx, cancel := k.callCtx(ctx)
	defer cancel()
	list, err := k.Client.CoreV1().Pods(k.Namespace).List(cctx, metav1.ListOptions{LabelSelector: LabelJob + "=" + job})
	if err != nil {
		return "the pods' state could not be read: " + err.Error()
	}
	now := map[string]*corev1.Pod{}
	for i := range list.Items {
		now[list.Items[i].Name] = &list.Items[i]
	}
	var out []string
	for _, p := range pods {
		q := now[p.Name]
		switch {
		case q == nil:
			out = append(out, fmt.Sprintf("pod %s on node %s is gone", p.Name, p.Spec.NodeName))
		case ended(q):
		case q.Status.Phase == corev1.PodRunning:
			out = append(out, fmt.Sprintf("pod %s on node %s was still running", p.Name, p.Spec.NodeName))
		default:
			phase := string(q.Status.Phase)
			if phase == "" {
				phase = "no status"
			}
			out = append(out, fmt.Sprintf("pod %s on node %s never started (%s: the node's kubelet did not run it)", p.Name, p.Spec.NodeName, phase))
		}
	}
	if len(out) == 0 {
		return "every pod had ended"
	}
	return strings.Join(out, "; ")
}

// deletePods deletes the job's pods: an ended pod goes at once, one
// still pending or running is stopped by its kubelet (the API server
// keeps it until the kubelet confirms).
func (k *Kube) deletePods(ctx context.Context, pods []*corev1.Pod) {
	for _, p := range pods {
		cctx, cancel := k.callCtx(ctx)
		err := k.Client.CoreV1().Pods(k.Namespace).Delete(cctx, p.Name, metav1.DeleteOptions{})
		cancel()
		if err != nil && !apierrors.IsNotFound(err) {
			k.log().Warn("deleting a burn-in pod", "pod", k.Namespace+"/"+p.Name, "node", p.Spec.NodeName, "err", err)
		}
	}
}

func lastLine(s string) string {
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}
