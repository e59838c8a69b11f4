package kubernetes_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/seamdc/seam/internal/peer/kubetest"
	"github.com/seamdc/seam/internal/scheduler"
	kube "github.com/seamdc/seam/internal/scheduler/kubernetes"
)

const reason = "facility:cooling_redundancy_lost:l2 maintenance:CHG-1"

type fence struct {
	id    string
	epoch int64
}

func (f fence) Token() (string, int64, error) { return f.id, f.epoch, nil }

func node(t *testing.T, e *kubetest.Env, name string) *corev1.Node {
	t.Helper()
	n, err := e.Client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	return n
}

func ownTaints(n *corev1.Node) (ours, others []string) {
	for _, t := range n.Spec.Taints {
		s := t.Key + "=" + t.Value + ":" + string(t.Effect)
		if kube.Ours(t) {
			ours = append(ours, s)
		} else {
			others = append(others, s)
		}
	}
	slices.Sort(ours)
	slices.Sort(others)
	return ours, others
}

// TestKubernetesBackend runs the backend against a real kube-apiserver:
// a hold is facilityd's NoSchedule taints and the reason annotation;
// someone else's cordon and taints (NoExecute too) are kept through the
// drain and the release; without the opt-in facilityd never cordons.
func TestKubernetesBackend(t *testing.T) {
	e := kubetest.Start(t)
	ctx := context.Background()
	e.CreateNodes(t, "n1", "n2", "n3")
	nodes := e.Client.CoreV1().Nodes()
	// an operator's cordon on n2, someone else's taints on n3
	n2 := node(t, e, "n2")
	n2.Spec.Unschedulable = true
	_, err := nodes.Update(ctx, n2, metav1.UpdateOptions{})
	require.NoError(t, err)
	n3 := node(t, e, "n3")
	n3.Spec.Taints = append(n3.Spec.Taints, corev1.Taint{Key: "example.com/gpu-firmware", Value: "rollout", Effect: corev1.TaintEffectNoSchedule},
		corev1.Taint{Key: "example.com/broken", Effect: corev1.TaintEffectNoExecute})
	_, err = nodes.Update(ctx, n3, metav1.UpdateOptions{})
	require.NoError(t, err)
	_, othersBefore := ownTaints(node(t, e, "n3"))

	d := &kube.Drainer{Client: e.Client}
	names := []string{"n1", "n2", "n3"}
	st, err := d.Status(ctx, append(slices.Clone(names), "ghost"))
	require.NoError(t, err)
	require.Equal(t, []string{"ghost"}, st.Unknown)
	require.False(t, st.Nodes["n1"].Drained)
	require.False(t, st.Nodes["n2"].Drained, "someone else's cordon is not facilityd's hold")
	require.Equal(t, "cordoned", st.Nodes["n2"].State)

	require.NoError(t, d.Drain(ctx, names, reason))
	want := []string{"facility.hold.seam.io/cooling_redundancy_lost=l2:NoSchedule", "hold.seam.io/maintenance=CHG-1:NoSchedule"}
	for _, n := range names {
		got := node(t, e, n)
		ours, others := ownTaints(got)
		require.Equal(t, want, ours, n)
		require.Equal(t, reason, got.Annotations[kube.AnnReason], n)
		require.Equal(t, n == "n2", got.Spec.Unschedulable, "%s: facilityd cordons nothing without the opt-in", n)
		if n == "n3" {
			require.Equal(t, othersBefore, others, "someone else's taints are kept")
		}
	}
	st, err = d.Status(ctx, names)
	require.NoError(t, err)
	for _, n := range names {
		require.True(t, st.Nodes[n].Drained, n)
		require.Equal(t, reason, st.Nodes[n].Reason, n)
	}
	// a new reason replaces facilityd's taints, and only them
	require.NoError(t, d.Drain(ctx, []string{"n3"}, "maintenance:CHG-1"))
	ours, others := ownTaints(node(t, e, "n3"))
	require.Equal(t, []string{"hold.seam.io/maintenance=CHG-1:NoSchedule"}, ours)
	require.Equal(t, othersBefore, others)

	require.NoError(t, d.Undrain(ctx, names))
	for _, n := range names {
		got := node(t, e, n)
		ours, others := ownTaints(got)
		require.Empty(t, ours, n)
		require.Empty(t, got.Annotations[kube.AnnReason], n)
		require.Equal(t, n == "n2", got.Spec.Unschedulable, "%s: the operator's cordon survives the release", n)
		if n == "n3" {
			require.Equal(t, othersBefore, others)
		}
		for _, tt := range got.Spec.Taints {
			if strings.Contains(tt.Key, kube.TaintDomain) {
				t.Errorf("%s: taint %v left", n, tt)
			}
		}
	}
	err = d.Drain(ctx, []string{"n1", "ghost"}, reason)
	require.ErrorContains(t, err, "ghost", "a node the API server does not know is named")
}

// TestCordonOptIn: with the site's opt-in facilityd cordons the nodes
// that are not cordoned, and a release uncordons only those.
func TestCordonOptIn(t *testing.T) {
	e := kubetest.Start(t)
	ctx := context.Background()
	e.CreateNodes(t, "a", "b")
	b := node(t, e, "b")
	b.Spec.Unschedulable = true
	_, err := e.Client.CoreV1().Nodes().Update(ctx, b, metav1.UpdateOptions{})
	require.NoError(t, err)

	d := &kube.Drainer{Client: e.Client, Cordon: true}
	require.NoError(t, d.Drain(ctx, []string{"a", "b"}, reason))
	a := node(t, e, "a")
	require.True(t, a.Spec.Unschedulable)
	require.Equal(t, "true", a.Annotations[kube.AnnCordoned])
	require.Empty(t, node(t, e, "b").Annotations[kube.AnnCordoned], "b was cordoned by someone else")

	require.NoError(t, d.Undrain(ctx, []string{"a", "b"}))
	require.False(t, node(t, e, "a").Spec.Unschedulable, "facilityd's own cordon is cleared")
	require.True(t, node(t, e, "b").Spec.Unschedulable, "someone else's cordon is never undone")
	require.Empty(t, node(t, e, "a").Annotations[kube.AnnCordoned])
}

// TestPatchCarriesResourceVersion: a node changed between facilityd's
// read and its patch makes the API server refuse the patch (409); the
// backend reads again and patches, and the other change survives.
func TestPatchCarriesResourceVersion(t *testing.T) {
	e := kubetest.Start(t)
	ctx := context.Background()
	e.CreateNodes(t, "x")
	d := &kube.Drainer{Client: e.Client}
	var calls atomic.Int32
	d.SetBeforePatch(func(name string) {
		if calls.Add(1) == 1 {
			n := node(t, e, name)
			n.Labels["operator"] = "was-here"
			_, err := e.Client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
			require.NoError(t, err)
		}
	})
	require.NoError(t, d.Drain(ctx, []string{"x"}, reason))
	require.EqualValues(t, 2, calls.Load(), "the first patch was refused for its stale resourceVersion, and retried")
	n := node(t, e, "x")
	require.Equal(t, "was-here", n.Labels["operator"])
	require.Equal(t, reason, n.Annotations[kube.AnnReason])
}

// TestOlderEpochRefused: a node written by epoch 2 is never written by
// epoch 1 (a deposed leader), and is left as epoch 2 left it.
func TestOlderEpochRefused(t *testing.T) {
	e := kubetest.Start(t)
	ctx := context.Background()
	e.CreateNodes(t, "y")
	newer := &kube.Drainer{Client: e.Client, Fence: fence{"replica-b", 2}}
	older := &kube.Drainer{Client: e.Client, Fence: fence{"replica-a", 1}}
	require.NoError(t, newer.Drain(ctx, []string{"y"}, reason))
	err := older.Undrain(ctx, []string{"y"})
	require.Error(t, err)
	require.True(t, errors.Is(err, kube.ErrStale), "%v", err)
	n := node(t, e, "y")
	require.Equal(t, "2", n.Annotations[kube.AnnEpoch])
	require.Equal(t, "replica-b", n.Annotations[kube.AnnLeader])
	ours, _ := ownTaints(n)
	require.Len(t, ours, 2)
}

// TestCheckpointNow: the running pods of held nodes are the jobs; an
// opted-in pod gets the annotation and an Event.
func TestCheckpointNow(t *testing.T) {
	e := kubetest.Start(t)
	ctx := context.Background()
	e.CreateNodes(t, "g1", "g2")
	pods := e.Client.CoreV1().Pods("default")
	mk := func(name, nodeName string, ann map[string]string) {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: ann},
			Spec: corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{{Name: "train", Image: "trainer"}}}}
		p, err := pods.Create(ctx, p, metav1.CreateOptions{})
		require.NoError(t, err)
		p.Status.Phase = corev1.PodRunning
		_, err = pods.UpdateStatus(ctx, p, metav1.UpdateOptions{})
		require.NoError(t, err)
	}
	mk("trainer-0", "g1", map[string]string{kube.AnnOptIn: "seam:checkpoint_now"})
	mk("other", "g1", nil)
	mk("elsewhere", "g2", map[string]string{kube.AnnOptIn: "seam:checkpoint_now"})
	d := &kube.Drainer{Client: e.Client}
	jobs, err := d.Jobs(ctx, []string{"g1"})
	require.NoError(t, err)
	require.Equal(t, []scheduler.Job{
		{ID: "default/other", Nodes: []string{"g1"}},
		{ID: "default/trainer-0", Nodes: []string{"g1"}, Comment: "seam:checkpoint_now"},
	}, jobs)
	require.NoError(t, d.Signal(ctx, "default/trainer-0", "USR1", false))
	p, err := pods.Get(ctx, "trainer-0", metav1.GetOptions{})
	require.NoError(t, err)
	require.True(t, strings.HasSuffix(p.Annotations[kube.AnnCheckpointNow], " USR1"), p.Annotations)
	evs, err := e.Client.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=trainer-0"})
	require.NoError(t, err)
	require.Len(t, evs.Items, 1)
	require.Equal(t, kube.EventReason, evs.Items[0].Reason)
	require.Equal(t, corev1.EventTypeNormal, evs.Items[0].Type)
	require.ErrorContains(t, d.Signal(ctx, "no-slash", "USR1", false), "namespace/pod")
}
