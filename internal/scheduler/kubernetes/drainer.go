package kubernetes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	k8s "k8s.io/client-go/kubernetes"

	"github.com/seamdc/seam/internal/scheduler"
	"github.com/seamdc/seam/internal/topology/hostlist"
)

// Fence says who may write, and with which epoch: the leader's identity
// and its Lease's transitions. An error: this replica is not (or no
// longer) the leader, and writes nothing.
type Fence interface {
	Token() (leader string, epoch int64, err error)
}

// parallel runs fn for each name on up to workers goroutines and returns
// the names it failed for, in their order, with the first one's error.
func parallel(names []string, workers int, fn func(name string) error) (bad []string, first error) {
	failed := make([]error, len(names))
	work := make(chan int)
	var wg sync.WaitGroup
	for range min(workers, len(names)) {
		wg.Go(func() {
			for i := range work {
				failed[i] = fn(names[i])
			}
		})
	}
	for i := range names {
		work <- i
	}
	close(work)
	wg.Wait()
	for i, err := range failed {
		if err != nil {
			bad = append(bad, names[i])
			if first == nil {
				first = err
			}
		}
	}
	return bad, first
}

// ErrStale is a write refused because a newer leader has written the
// node, or the node changed under it more often than it retried.
var ErrStale = errors.New("refused: the node was written by a newer leader")

// Drainer drains Kubernetes nodes by taints facilityd owns.
type Drainer struct {
	Client k8s.Interface
	// Cordon also sets spec.unschedulable on a held node that is not
	// cordoned (the site opts in); a release clears only the cordons
	// facilityd set.
	Cordon bool
	// Fence gives the leader's epoch (nil: one replica, epoch 0).
	Fence Fence
	// Timeout bounds each operation (default 30 s).
	Timeout time.Duration
	// Workers patch nodes in parallel (default 16).
	Workers int
	// Component names facilityd in Events (default facilityd).
	Component string
	Log       *slog.Logger
	// Patched, when set, is called after each node patched (tests:
	// kill the leader mid-drain).
	Patched func(node string)

	beforePatch func(node string) // tests: change the node between read and write
}

var _ scheduler.Drainer = (*Drainer)(nil)

func (d *Drainer) ctx(ctx context.Context) (context.Context, context.CancelFunc) {
	t := d.Timeout
	if t <= 0 {
		t = 30 * time.Second
	}
	return context.WithTimeout(ctx, t)
}

func (d *Drainer) log() *slog.Logger {
	if d.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return d.Log
}

func (d *Drainer) token() (string, int64, error) {
	if d.Fence == nil {
		return "facilityd", 0, nil
	}
	return d.Fence.Token()
}

// Status lists the nodes (one List) and reads facilityd's taints and
// reason from each: a node is drained while a taint of facilityd's is
// on it. A cordon alone is someone else's, shown in State, not Drained.
func (d *Drainer) Status(ctx context.Context, names []string) (scheduler.Status, error) {
	st := scheduler.Status{Nodes: map[string]scheduler.NodeStatus{}}
	if len(names) == 0 {
		return st, nil
	}
	ctx, cancel := d.ctx(ctx)
	defer cancel()
	list, err := d.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{ResourceVersion: ""})
	if err != nil {
		return st, fmt.Errorf("kubernetes: listing nodes: %w", err)
	}
	want := make(map[string]bool, len(names))
	for _, n := range names {
		want[n] = true
	}
	for i := range list.Items {
		n := &list.Items[i]
		if want[n.Name] {
			st.Nodes[n.Name] = nodeStatus(n)
		}
	}
	for _, n := range names {
		if _, ok := st.Nodes[n]; !ok {
			st.Unknown = append(st.Unknown, n)
		}
	}
	return st, nil
}

func nodeStatus(n *corev1.Node) scheduler.NodeStatus {
	var ours []corev1.Taint
	for _, t := range n.Spec.Taints {
		if Ours(t) {
			ours = append(ours, t)
		}
	}
	ns := scheduler.NodeStatus{Name: n.Name, Drained: len(ours) > 0}
	var words []string
	if ns.Drained {
		words = append(words, "held")
		ns.Reason = n.Annotations[AnnReason]
		if ns.Reason == "" {
			ns.Reason = taintReason(ours)
		}
		ns.ReasonBy = n.Annotations[AnnLeader]
	}
	if n.Spec.Unschedulable {
		words = append(words, "cordoned")
	}
	if len(words) == 0 {
		words = append(words, "schedulable")
	}
	ns.State = strings.Join(words, "+")
	return ns
}

// taintReason reads a reason back from taints that carry no annotation.
func taintReason(ts []corev1.Taint) string {
	var out []string
	for _, t := range ts {
		prefix, name, _ := strings.Cut(t.Key, "/")
		if prefix == TaintDomain {
			out = append(out, name+":"+t.Value)
			continue
		}
		out = append(out, "facility:"+name+":"+t.Value)
	}
	return strings.Join(out, " ")
}

// Drain places facilityd's taints for reason (replacing facilityd's
// previous ones, leaving everyone else's), the reason annotation and,
// if the site opts in, a cordon on a node not cordoned.
func (d *Drainer) Drain(ctx context.Context, names []string, reason string) error {
	if reason == "" || strings.ContainsAny(reason, "\n\r") {
		return fmt.Errorf("kubernetes: a drain needs a one-line reason, got %q", reason)
	}
	taints := Taints(reason)
	if len(taints) == 0 {
		return fmt.Errorf("kubernetes: reason %q names no owner (kind:name): no taint to place", reason)
	}
	return d.each(ctx, "drain", names, func(n *corev1.Node, leader string, epoch int64) (map[string]any, bool) {
		return d.drainPatch(n, taints, reason, leader, epoch)
	})
}

func (d *Drainer) drainPatch(n *corev1.Node, ours []corev1.Taint, reason, leader string, epoch int64) (map[string]any, bool) {
	taints := others(n.Spec.Taints)
	taints = append(taints, ours...)
	ann := map[string]any{AnnReason: reason, AnnLeader: leader, AnnEpoch: strconv.FormatInt(epoch, 10)}
	spec := map[string]any{"taints": taints}
	if d.Cordon && !n.Spec.Unschedulable {
		spec["unschedulable"] = true
		ann[AnnCordoned] = "true"
	}
	same := n.Annotations[AnnReason] == reason && slices.EqualFunc(ownTaints(n.Spec.Taints), ours, sameTaint) &&
		(!d.Cordon || n.Spec.Unschedulable) && n.Annotations[AnnEpoch] == strconv.FormatInt(epoch, 10)
	return map[string]any{"metadata": map[string]any{"annotations": ann}, "spec": spec}, !same
}

// Undrain removes facilityd's taints and reason, and the cordon only if
// facilityd set it: a cordon someone else made stays.
func (d *Drainer) Undrain(ctx context.Context, names []string) error {
	return d.each(ctx, "undrain", names, func(n *corev1.Node, leader string, epoch int64) (map[string]any, bool) {
		ann := map[string]any{AnnReason: nil, AnnLeader: leader, AnnEpoch: strconv.FormatInt(epoch, 10)}
		spec := map[string]any{"taints": others(n.Spec.Taints)}
		if n.Annotations[AnnCordoned] != "" {
			ann[AnnCordoned] = nil
			if n.Spec.Unschedulable {
				spec["unschedulable"] = false
			}
		}
		return map[string]any{"metadata": map[string]any{"annotations": ann}, "spec": spec}, true
	})
}

func others(ts []corev1.Taint) []corev1.Taint {
	out := []corev1.Taint{}
	for _, t := range ts {
		if !Ours(t) {
			out = append(out, t)
		}
	}
	return out
}

func ownTaints(ts []corev1.Taint) []corev1.Taint {
	var out []corev1.Taint
	for _, t := range ts {
		if Ours(t) {
			out = append(out, t)
		}
	}
	return out
}

func sameTaint(a, b corev1.Taint) bool {
	return a.Key == b.Key && a.Value == b.Value && a.Effect == b.Effect
}

// each patches every node in parallel: one List for the nodes'
// resourceVersions and epochs, then per node a merge patch carrying
// that resourceVersion (the API server refuses it if the node changed
// meanwhile: read it again and retry) and the writer's epoch. A node
// written by a newer epoch is refused with ErrStale. Errors name the
// nodes.
func (d *Drainer) each(ctx context.Context, op string, names []string, build func(*corev1.Node, string, int64) (map[string]any, bool)) error {
	if len(names) == 0 {
		return nil
	}
	ctx, cancel := d.ctx(ctx)
	defer cancel()
	workers := d.Workers
	if workers <= 0 {
		workers = 16
	}
	// one List reads every node's resourceVersion: a node is read again
	// by itself only when its patch is refused
	listed := map[string]*corev1.Node{}
	if list, err := d.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); err == nil {
		for i := range list.Items {
			listed[list.Items[i].Name] = &list.Items[i]
		}
	}
	bad, first := parallel(names, workers, func(n string) error {
		if err := d.patchNode(ctx, n, listed[n], build); err != nil {
			return err
		}
		if d.Patched != nil {
			d.Patched(n)
		}
		return nil
	})
	if len(bad) == 0 {
		return nil
	}
	return fmt.Errorf("kubernetes: %s of %d node(s) failed on %d: %s: %w", op, len(names), len(bad), hostlist.Compress(bad), first)
}

func (d *Drainer) patchNode(ctx context.Context, name string, n *corev1.Node, build func(*corev1.Node, string, int64) (map[string]any, bool)) error {
	nodes := d.Client.CoreV1().Nodes()
	for attempt := 0; ; attempt++ {
		leader, epoch, err := d.token()
		if err != nil {
			return fmt.Errorf("node %s: %w", name, err)
		}
		if n == nil {
			if n, err = nodes.Get(ctx, name, metav1.GetOptions{}); err != nil {
				return fmt.Errorf("node %s: %w", name, err)
			}
		}
		if e, err := strconv.ParseInt(n.Annotations[AnnEpoch], 10, 64); err == nil && e > epoch {
			return fmt.Errorf("node %s carries epoch %d (leader %s), this replica's is %d: %w", name, e, n.Annotations[AnnLeader], epoch, ErrStale)
		}
		patch, change := build(n, leader, epoch)
		if !change {
			return nil
		}
		if d.beforePatch != nil {
			d.beforePatch(name)
		}
		patch["metadata"].(map[string]any)["resourceVersion"] = n.ResourceVersion
		body, err := json.Marshal(patch)
		if err != nil {
			return err
		}
		_, err = nodes.Patch(ctx, name, types.MergePatchType, body, metav1.PatchOptions{FieldManager: "facilityd"})
		switch {
		case err == nil:
			return nil
		case apierrors.IsConflict(err) && attempt < 5:
			d.log().Debug("node changed under the patch: read again", "node", name, "attempt", attempt+1)
			n = nil
			continue
		default:
			return fmt.Errorf("node %s: %w", name, err)
		}
	}
}

// Jobs lists the running pods on the nodes (one List of every running
// pod), as jobs: ID namespace/name, the opt-in annotation as the
// comment, the priority class as the QOS.
func (d *Drainer) Jobs(ctx context.Context, names []string) ([]scheduler.Job, error) {
	if len(names) == 0 {
		return nil, nil
	}
	ctx, cancel := d.ctx(ctx)
	defer cancel()
	want := make(map[string]bool, len(names))
	for _, n := range names {
		want[n] = true
	}
	pods, err := d.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "status.phase=Running"})
	if err != nil {
		return nil, fmt.Errorf("kubernetes: listing running pods: %w", err)
	}
	var jobs []scheduler.Job
	for _, p := range pods.Items {
		if !want[p.Spec.NodeName] {
			continue
		}
		jobs = append(jobs, scheduler.Job{ID: p.Namespace + "/" + p.Name, Nodes: []string{p.Spec.NodeName}, Comment: p.Annotations[AnnOptIn],
			QOS: p.Spec.PriorityClassName})
	}
	slices.SortFunc(jobs, func(a, b scheduler.Job) int { return strings.Compare(a.ID, b.ID) })
	return jobs, nil
}

// Signal writes checkpoint_now on the pod (AnnCheckpointNow, with the
// signal's name: a pod has no batch shell, so full changes nothing) and
// sends a Normal Event about it.
func (d *Drainer) Signal(ctx context.Context, job, sig string, full bool) error {
	ns, name, ok := strings.Cut(job, "/")
	if !ok {
		return fmt.Errorf("kubernetes: job %q: want namespace/pod", job)
	}
	if _, _, err := d.token(); err != nil {
		return fmt.Errorf("pod %s: %w", job, err)
	}
	ctx, cancel := d.ctx(ctx)
	defer cancel()
	now := time.Now().UTC()
	val := now.Format(time.RFC3339) + " " + sig
	body, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{AnnCheckpointNow: val}}})
	p, err := d.Client.CoreV1().Pods(ns).Patch(ctx, name, types.MergePatchType, body, metav1.PatchOptions{FieldManager: "facilityd"})
	if err != nil {
		return fmt.Errorf("pod %s: %w", job, err)
	}
	comp := d.Component
	if comp == "" {
		comp = "facilityd"
	}
	ev := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{GenerateName: p.Name + ".", Namespace: ns},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: p.Name, UID: p.UID, APIVersion: "v1", ResourceVersion: p.ResourceVersion},
		Reason:         EventReason, Type: corev1.EventTypeNormal,
		Message:        fmt.Sprintf("checkpoint now (%s): the node is held by facilityd and takes no new work; this pod goes on running", sig),
		Source:         corev1.EventSource{Component: comp, Host: p.Spec.NodeName},
		FirstTimestamp: metav1.NewTime(now), LastTimestamp: metav1.NewTime(now), Count: 1,
		ReportingController: "seam.io/" + comp, ReportingInstance: comp,
	}
	if _, err := d.Client.CoreV1().Events(ns).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("pod %s: annotated, but the Event was refused: %w", job, err)
	}
	return nil
}

// Commands are the kubectl equivalents of an operation, for dry runs.
func (d *Drainer) Commands(op scheduler.Op) []string {
	nodes := strings.Join(op.Nodes, " ")
	switch op.Kind {
	case "drain":
		var ts []string
		for _, t := range Taints(op.Reason) {
			ts = append(ts, fmt.Sprintf("%s=%s:%s", t.Key, t.Value, t.Effect))
		}
		out := []string{"kubectl taint nodes --overwrite " + nodes + " " + strings.Join(ts, " "),
			"kubectl annotate nodes --overwrite " + nodes + " " + AnnReason + "='" + strings.ReplaceAll(op.Reason, "'", `'\''`) + "'"}
		if d.Cordon {
			out = append(out, "kubectl cordon "+nodes+" (only those not cordoned; marked "+AnnCordoned+")")
		}
		return out
	case "undrain":
		return []string{"kubectl taint nodes " + nodes + " <each " + TaintDomain + "/* and facility." + TaintDomain + "/* taint>:NoSchedule-", "kubectl annotate nodes " + nodes + " " + AnnReason + "-",
			"kubectl uncordon (only the nodes marked " + AnnCordoned + ")"}
	case "signal":
		ns, name, _ := strings.Cut(op.Job, "/")
		return []string{fmt.Sprintf("kubectl annotate pod -n %s %s --overwrite %s='<now> %s'", ns, name, AnnCheckpointNow, op.Signal),
			fmt.Sprintf("(and an Event %s on the pod)", EventReason)}
	}
	return nil
}
