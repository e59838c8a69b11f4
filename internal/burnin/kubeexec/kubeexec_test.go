package kubeexec

import (
	"context"
	"errors"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/seamdc/seam/internal/burnin"
	"github.com/seamdc/seam/internal/burnin/kubeexec/kubelettest"
	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/gputools"
	"github.com/seamdc/seam/internal/peer/kubetest"
	"github.com/seamdc/seam/internal/sim"
	"github.com/seamdc/seam/internal/sim/fleet"
	"github.com/seamdc/seam/internal/topology"
)

const ns = "burnin"

// site is the example's simulated site and the nodes of module ma.
type site struct {
	o     *sim.Opened
	nodes []burnin.Node
}

func openSite(t testing.TB) *site {
	t.Helper()
	dir, err := filepath.Abs("../../../contracts/examples/threemodule")
	require.NoError(t, err)
	fixtures, err := filepath.Abs("../../../fixtures")
	require.NoError(t, err)
	o, diags, err := sim.Open(sim.Paths{Contracts: dir, Fixtures: fixtures}, "", sim.SecretsFrom(func(string) (string, bool) { return "", false }), time.Time{}, nil)
	require.NoError(t, err)
	require.Empty(t, diags)
	c, _, err := contract.Load(dir)
	require.NoError(t, err)
	_, err = c.ReadInventory(nil)
	require.NoError(t, err)
	g, _ := c.Graph()
	top, err := topology.FromGraph(g, topology.GraphOptions{RackNames: topology.RackNames(g, c.Handovers)})
	require.NoError(t, err)
	nodes, err := burnin.NodesFrom(top, g, "ma")
	require.NoError(t, err)
	return &site{o: o, nodes: nodes}
}

func (s *site) rack(name string) []burnin.Node {
	var out []burnin.Node
	for _, n := range s.nodes {
		if n.Rack == name {
			out = append(out, n)
		}
	}
	return out
}

// load puts the nodes at burn-in in the simulator and lets two minutes
// of site time pass (the GPUs' temperatures settle).
func (s *site) load(_ context.Context, nodes []string, on bool) error {
	st := fleet.Idle
	if on {
		st = fleet.BurnIn
	}
	if _, err := s.o.SetNodes(sim.NodeRequest{Nodes: nodes, State: st}); err != nil {
		return err
	}
	s.o.Site.Advance(2 * time.Minute)
	return nil
}

func (s *site) views(names ...string) ([]*gputools.Node, error) { return s.o.GPUViews(names...) }

func names(ns []burnin.Node) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = n.Name
	}
	return out
}

func client(t testing.TB, env *kubetest.Env) k8s.Interface {
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = 1000, 2000
	cs, err := k8s.NewForConfig(cfg)
	require.NoError(t, err)
	return cs
}

func createNamespace(t testing.TB, cs k8s.Interface) {
	_, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
}

func heldNames(r *burnin.Result) []string {
	var out []string
	for _, n := range r.Held() {
		out = append(out, n.Name)
	}
	sort.Strings(out)
	return out
}

func reasons(r *burnin.Result) string {
	var b strings.Builder
	for _, n := range r.Held() {
		b.WriteString(n.Name + ": " + strings.Join(n.Reasons(), "; ") + "\n")
	}
	return b.String()
}

// One control plane (a real etcd and kube-apiserver) for the
// subtests: starting it is the slow part.
func TestKubernetes(t *testing.T) {
	env := kubetest.Start(t)
	cs := client(t, env)
	createNamespace(t, cs)
	s := openSite(t)
	rack := s.rack("a-r01")
	require.Len(t, rack, 18)
	hang, notReady, cordoned, missing := "gpu-a-r02-n01", "gpu-a-r02-n02", "gpu-a-r02-n03", "gpu-a-r02-n04"
	env.CreateNodes(t, append(names(rack), hang, notReady, cordoned)...)
	kl := kubelettest.Start(t, kubelettest.Config{Client: cs, Nodes: append(names(rack), cordoned), Hang: []string{hang}, Run: kubelettest.GPUTools(s.views)})

	t.Run("a rack burned in through Kubernetes holds exactly its two defects", func(t *testing.T) { rackBurnin(t, cs, s, kl, rack) })
	t.Run("a pod that never starts is a timeout naming node and pod", func(t *testing.T) { neverStarts(t, cs, hang) })
	t.Run("nodes that cannot run a pod are named", func(t *testing.T) { unavailable(t, cs, notReady, cordoned, missing) })
	t.Run("a node under another burn-in is refused", func(t *testing.T) { otherReservation(t, cs, rack[0].Name) })
	t.Run("the RBAC of deploy/kubernetes/burnin is enough", func(t *testing.T) { rbacEnough(t, env, rack[1].Name) })
}

// Burn-in of rack a-r01's 18 nodes through the real API server: the
// nodes are tainted during and not after (a taint someone else set
// stays), every job's pods are pinned to their nodes and tolerate the
// taint, a user pod made meanwhile is not bound (no scheduler runs: it
// would see the taint) and the fake kubelet never runs it; the slow
// link and the failed diagnostic are exactly the two held, with their
// reasons, read from rank 0's log through pods/log.
func rackBurnin(t *testing.T, cs k8s.Interface, s *site, kl *kubelettest.Kubelet, rack []burnin.Node) {
	ctx := context.Background()
	slow, diag := "gpu-a-r01-n07", "gpu-a-r01-n15"
	require.NoError(t, s.o.AddFleetDefect(fleet.Defect{Kind: fleet.SlowLink, Target: slow, Value: 0.6}))
	require.NoError(t, s.o.AddFleetDefect(fleet.Defect{Kind: fleet.FailedDiag, Target: diag, GPU: 1, Test: "Targeted Power"}))
	t.Cleanup(func() { _, _ = s.o.SetNodes(sim.NodeRequest{Nodes: names(rack), State: fleet.Idle}) })

	theirs := corev1.Taint{Key: "example.com/maintenance", Value: "CHG-7", Effect: corev1.TaintEffectNoSchedule}
	other := rack[2].Name
	n, err := cs.CoreV1().Nodes().Get(ctx, other, metav1.GetOptions{})
	require.NoError(t, err)
	n.Spec.Taints = append(n.Spec.Taints, theirs)
	n, err = cs.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
	require.NoError(t, err)
	before := n.Spec.Taints // with the API server's node.kubernetes.io/not-ready

	ex := &Kube{Client: cs, Namespace: ns, Image: "registry.example/gpu-tools:1"}
	require.NoError(t, ex.Reserve(ctx, "bi-test", "alice", names(rack)))
	for _, name := range names(rack) {
		n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		assert.Contains(t, n.Spec.Taints, Taint("bi-test"), "node %s is tainted during the burn-in", name)
		assert.Contains(t, n.Annotations[AnnReason], "sat burnin run by alice, reservation bi-test")
		if name == other {
			assert.Contains(t, n.Spec.Taints, theirs)
		}
	}
	user, err := cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "user-job"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "train", Image: "train:1", Command: []string{"nvidia-smi", "-L"}}}}}, metav1.CreateOptions{})
	require.NoError(t, err)

	var progress strings.Builder
	r, err := burnin.Run(ctx, rack, ex, burnin.Config{Load: s.load, Progress: &progress, Timeout: 3 * time.Minute, Parallel: 4})
	require.NoError(t, err)
	require.Equal(t, []string{slow, diag}, heldNames(r), reasons(r))
	assert.Contains(t, strings.Join(r.Node(slow).Reasons(), "\n"), "bisected from rack a-r01")
	assert.Contains(t, strings.Join(r.Node(diag).Reasons(), "\n"), "targeted_power: Fail on GPU 1")
	assert.Contains(t, progress.String(), "busbw")

	ran := kl.Ran()
	require.NotEmpty(t, ran)
	sawRack := false
	for _, p := range ran {
		assert.NotEqual(t, "user-job", p.Name, "the kubelet never ran the user's pod")
		assert.Contains(t, p.Spec.Tolerations, Toleration("bi-test"), "pod %s tolerates the burn-in's taint", p.Name)
		assert.NotEmpty(t, p.Spec.NodeName)
		assert.Equal(t, corev1.RestartPolicyNever, p.Spec.RestartPolicy)
		assert.Equal(t, "registry.example/gpu-tools:1", p.Spec.Containers[0].Image)
		for _, e := range p.Spec.Containers[0].Env {
			if e.Name == "SLURM_JOB_NODELIST" && e.Value == "gpu-a-r01-n[01-18]" {
				sawRack = true
			}
		}
	}
	assert.True(t, sawRack, "the rack's job carried its 18 nodes")
	u, err := cs.CoreV1().Pods(ns).Get(ctx, user.Name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Empty(t, u.Spec.NodeName, "the user's pod was bound to no node")
	left, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: LabelReservation + "=bi-test"})
	require.NoError(t, err)
	assert.Empty(t, left.Items, "the burn-in deleted its pods")

	require.NoError(t, ex.Release(ctx))
	for _, name := range names(rack) {
		n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		for _, tt := range n.Spec.Taints {
			assert.NotEqual(t, TaintKey, tt.Key, "node %s: the burn-in's taint is gone", name)
		}
		assert.NotContains(t, n.Annotations, AnnReason)
		if name == other {
			assert.Equal(t, before, n.Spec.Taints, "someone else's taints stay")
			assert.Contains(t, n.Spec.Taints, theirs)
		}
	}
}

// A pod on a node whose kubelet never starts it: the job ends at its
// timeout with an error naming the pod and the node, and the pod is
// deleted (the API server keeps it terminating until a kubelet
// confirms).
func neverStarts(t *testing.T, cs k8s.Interface, node string) {
	ex := &Kube{Client: cs, Namespace: ns, Image: "tools:1"}
	require.NoError(t, ex.Reserve(context.Background(), "bi-hang", "alice", []string{node}))
	t.Cleanup(func() { _ = ex.Release(context.Background()) })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	o := ex.Run(ctx, burnin.Job{Step: "diag", Nodes: []string{node}, Command: []string{"dcgmi", "diag", "-r", "3", "-j"}})
	require.Error(t, o.Err)
	assert.True(t, errors.Is(o.Err, context.DeadlineExceeded), o.Err.Error())
	assert.Regexp(t, `^dcgmi on `+node+`: pod seam-burnin-[0-9a-f]{6}-diag-1-0 on node `+node+` never started \(Pending`, o.Err.Error())
	pods, err := cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: LabelReservation + "=bi-hang"})
	require.NoError(t, err)
	for _, p := range pods.Items {
		assert.NotNil(t, p.DeletionTimestamp, "pod %s is being deleted", p.Name)
	}
}

func unavailable(t *testing.T, cs k8s.Interface, notReady, cordoned, missing string) {
	ctx := context.Background()
	n, err := cs.CoreV1().Nodes().Get(ctx, cordoned, metav1.GetOptions{})
	require.NoError(t, err)
	n.Spec.Unschedulable = true
	_, err = cs.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
	require.NoError(t, err)
	ex := &Kube{Client: cs, Namespace: ns}
	require.NoError(t, ex.Reserve(ctx, "bi-missing", "alice", []string{notReady, missing}), "a missing node is left to the check, not an error")
	t.Cleanup(func() { _ = ex.Release(ctx) })
	bad, err := ex.Unavailable(ctx, []string{"gpu-a-r01-n01", notReady, cordoned, missing})
	require.NoError(t, err)
	assert.Len(t, bad, 3)
	assert.Contains(t, bad[notReady], "NotReady (no Ready condition: no kubelet has registered it)")
	assert.Contains(t, bad[cordoned], "cordoned (spec.unschedulable) by someone else")
	assert.Contains(t, bad[missing], "Kubernetes has no such node")
}

func otherReservation(t *testing.T, cs k8s.Interface, node string) {
	ctx := context.Background()
	a := &Kube{Client: cs, Namespace: ns}
	require.NoError(t, a.Reserve(ctx, "bi-a", "alice", []string{node}))
	t.Cleanup(func() { _ = a.Release(ctx) })
	free := "gpu-a-r01-n18"
	b := &Kube{Client: cs, Namespace: ns}
	err := b.Reserve(ctx, "bi-b", "bob", []string{free, node})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "node "+node+" is under burn-in reservation bi-a")
	require.NoError(t, b.Release(ctx))
	n, err := cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Contains(t, n.Spec.Taints, Taint("bi-a"), "bob's release leaves alice's taint")
	assert.NotContains(t, n.Spec.Taints, Taint("bi-b"))
	assert.Contains(t, n.Annotations[AnnReason], "reservation bi-a", "and her reason")
	f, err := cs.CoreV1().Nodes().Get(ctx, free, metav1.GetOptions{})
	require.NoError(t, err)
	assert.NotContains(t, f.Spec.Taints, Taint("bi-b"), "a reservation that failed leaves no taint on the free node")
	assert.NotContains(t, f.Annotations, AnnReason)
}
