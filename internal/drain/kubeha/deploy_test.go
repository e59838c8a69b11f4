package kubeha_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"

	"github.com/seamdc/seam/internal/alarm"
	"github.com/seamdc/seam/internal/drain"
	"github.com/seamdc/seam/internal/drain/kubeha"
	"github.com/seamdc/seam/internal/hold"
	"github.com/seamdc/seam/internal/peer/kubetest"
	kube "github.com/seamdc/seam/internal/scheduler/kubernetes"
)

const deployDir = "../../../deploy/kubernetes"

var update = flag.Bool("update", false, "rewrite deploy/kubernetes/daemonset-tolerations.yaml from the vocabulary")

// manifests reads kustomization.yaml's resources, one object per
// document, each with the file and document it came from.
func manifests(t *testing.T) []struct {
	where string
	obj   *unstructured.Unstructured
} {
	t.Helper()
	var k struct {
		Resources []string `json:"resources"`
	}
	b, err := os.ReadFile(filepath.Join(deployDir, "kustomization.yaml"))
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(b, &k))
	require.NotEmpty(t, k.Resources)
	var out []struct {
		where string
		obj   *unstructured.Unstructured
	}
	for _, f := range k.Resources {
		b, err := os.ReadFile(filepath.Join(deployDir, f))
		require.NoError(t, err)
		for i, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(b), -1) {
			if strings.TrimSpace(stripComments(doc)) == "" {
				continue
			}
			var m map[string]any
			require.NoError(t, yaml.Unmarshal([]byte(doc), &m), "%s document %d", f, i+1)
			out = append(out, struct {
				where string
				obj   *unstructured.Unstructured
			}{fmt.Sprintf("%s document %d", f, i+1), &unstructured.Unstructured{Object: m}})
		}
	}
	return out
}

func stripComments(s string) string {
	var keep []string
	for _, l := range strings.Split(s, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

// apply creates the manifests through the dynamic client: for real, or
// as a server-side dry run (the API server validates against its
// OpenAPI schema and admission, and stores nothing).
func apply(t *testing.T, cfg *rest.Config, dryRun bool, only func(kind string) bool) map[string]*unstructured.Unstructured {
	t.Helper()
	dc, err := dynamic.NewForConfig(cfg)
	require.NoError(t, err)
	disc, err := k8s.NewForConfig(cfg)
	require.NoError(t, err)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc.Discovery()))
	opts := metav1.CreateOptions{FieldValidation: "Strict"}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	out := map[string]*unstructured.Unstructured{}
	for _, m := range manifests(t) {
		gvk := m.obj.GroupVersionKind()
		if only != nil && !only(gvk.Kind) {
			continue
		}
		mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		require.NoError(t, err, m.where)
		var ri dynamic.ResourceInterface = dc.Resource(mapping.Resource)
		if ns := m.obj.GetNamespace(); ns != "" {
			ri = dc.Resource(mapping.Resource).Namespace(ns)
		}
		got, err := ri.Create(context.Background(), m.obj, opts)
		require.NoError(t, err, "%s: %s %s", m.where, gvk.Kind, m.obj.GetName())
		out[gvk.Kind+"/"+m.obj.GetName()] = got
	}
	return out
}

// TestManifestsDryRun: deploy/kubernetes passes the real API server's
// server-side dry run, strict field validation on (an unknown or
// misspelt field is an error), and says what the issue asks: two
// replicas, a PodDisruptionBudget, RBAC for nodes, leases, events and
// the state.
func TestManifestsDryRun(t *testing.T) {
	e := kubetest.Start(t)
	apply(t, e.Config, false, func(k string) bool { return k == "Namespace" })
	got := apply(t, e.Config, true, func(k string) bool { return k != "Namespace" }) // the Namespace was created for real, above
	dep := got["Deployment/facilityd"]
	require.NotNil(t, dep)
	replicas, _, _ := unstructured.NestedInt64(dep.Object, "spec", "replicas")
	require.EqualValues(t, 2, replicas)
	require.NotNil(t, got["PodDisruptionBudget/facilityd"])
	require.NotNil(t, got["ServiceAccount/facilityd"])
	require.NotNil(t, got["NetworkPolicy/facilityd"], "accepted; its effect is unproven here (no network plugin)")
	// the dry run stored nothing
	_, err := e.Client.AppsV1().Deployments("seam-facilityd").Get(context.Background(), "facilityd", metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "%v", err)
	// a misspelt field is refused: the dry run does validate
	bad := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
		"metadata": map[string]any{"name": "x", "namespace": "seam-facilityd"}, "spec": map[string]any{"minAvailble": 1}}}
	dc, err := dynamic.NewForConfig(e.Config)
	require.NoError(t, err)
	_, err = dc.Resource(policyPDB).Namespace("seam-facilityd").Create(context.Background(), bad, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldValidation: "Strict"})
	require.ErrorContains(t, err, "minAvailble")
}

// TestRBACIsEnough: as the ServiceAccount, with only the shipped RBAC,
// facilityd can do all it does (elect, claim and save the state,
// journal, hold and release nodes, list and signal pods) and nothing
// more (no node deletion, no pod eviction).
func TestRBACIsEnough(t *testing.T) {
	e := kubetest.Start(t)
	apply(t, e.Config, false, func(k string) bool {
		return strings.Contains("Namespace ServiceAccount ClusterRole ClusterRoleBinding Role RoleBinding", k)
	})
	e.CreateNodes(t, "n1")
	ctx := context.Background()
	pod, err := e.Client.CoreV1().Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "train", Annotations: map[string]string{kube.AnnOptIn: "seam:checkpoint_now"}},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "t", Image: "t"}}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	pod.Status.Phase = corev1.PodRunning
	_, err = e.Client.CoreV1().Pods("default").UpdateStatus(ctx, pod, metav1.UpdateOptions{})
	require.NoError(t, err)

	sa := rest.CopyConfig(e.Config)
	sa.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:seam-facilityd:facilityd",
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:seam-facilityd", "system:authenticated"}}
	cs, err := k8s.NewForConfig(sa)
	require.NoError(t, err)
	const ns = "seam-facilityd"
	el := &kubeha.Elector{Client: cs, Namespace: ns, Identity: "facilityd-0", LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: 500 * time.Millisecond}
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	leading := make(chan int64, 1)
	go func() {
		_ = el.Run(lctx, func(c context.Context, epoch int64) { leading <- epoch; <-c.Done() })
	}()
	epoch := <-leading
	store := &kubeha.Store{Client: cs, Namespace: ns, Leader: "facilityd-0", Epoch: epoch}
	st, err := store.Claim(ctx, "site")
	require.NoError(t, err)
	require.NoError(t, store.Save(st))
	require.NoError(t, (&kubeha.Journal{Client: cs, Namespace: ns, Leader: "facilityd-0", Epoch: epoch}).Record(drain.RecStart, nil))
	d := &kube.Drainer{Client: cs, Fence: el, Cordon: true}
	reason := hold.Reason([]drain.Owner{drain.FacilityOwner(alarm.LeakDetected, l2)}, 256)
	require.NoError(t, d.Drain(ctx, []string{"n1"}, reason))
	s, err := d.Status(ctx, []string{"n1"})
	require.NoError(t, err)
	require.True(t, s.Nodes["n1"].Drained)
	jobs, err := d.Jobs(ctx, []string{"n1"})
	require.NoError(t, err)
	require.Len(t, jobs, 1)
	require.NoError(t, d.Signal(ctx, jobs[0].ID, "USR1", false))
	require.NoError(t, d.Undrain(ctx, []string{"n1"}))

	err = cs.CoreV1().Nodes().Delete(ctx, "n1", metav1.DeleteOptions{})
	require.True(t, apierrors.IsForbidden(err), "deleting a node: %v", err)
	err = cs.CoreV1().Pods("default").Delete(ctx, "train", metav1.DeleteOptions{})
	require.True(t, apierrors.IsForbidden(err), "deleting a pod: %v", err)
	_, err = cs.CoreV1().ConfigMaps("default").Get(ctx, "facilityd-state", metav1.GetOptions{})
	require.True(t, apierrors.IsForbidden(err), "ConfigMaps outside its namespace: %v", err)
}

// TestDaemonSetTolerations: the shipped patch tolerates every taint
// facilityd can place (each alarm type's facility key, each other owner
// kind's key), appends to a DaemonSet's tolerations keeping its own (a
// server-side dry run of the JSON patch), and is what the
// vocabulary generates (-update rewrites it).
func TestDaemonSetTolerations(t *testing.T) {
	path := filepath.Join(deployDir, "daemonset-tolerations.yaml")
	want := tolerationsFile()
	if *update {
		require.NoError(t, os.WriteFile(path, want, 0o644))
	}
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, string(want), string(b), "%s is stale: go test ./internal/drain/kubeha -run TestDaemonSetTolerations -update", path)

	e := kubetest.Start(t)
	ctx := context.Background()
	own := corev1.Toleration{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}
	labels := map[string]string{"app": "dcgm-exporter"}
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "dcgm-exporter", Namespace: "default"}, Spec: appsv1.DaemonSetSpec{
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Tolerations: []corev1.Toleration{own},
			Containers: []corev1.Container{{Name: "x", Image: "x"}}}}}}
	_, err = e.Client.AppsV1().DaemonSets("default").Create(ctx, ds, metav1.CreateOptions{})
	require.NoError(t, err)
	patch, err := yaml.YAMLToJSON(b)
	require.NoError(t, err)
	got, err := e.Client.AppsV1().DaemonSets("default").Patch(ctx, "dcgm-exporter", types.JSONPatchType, patch,
		metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}, FieldValidation: "Strict"})
	require.NoError(t, err)
	tols := got.Spec.Template.Spec.Tolerations
	require.Contains(t, tols, own, "the DaemonSet's own toleration is kept")
	for _, taint := range allTaints() {
		ok := false
		for _, tol := range tols {
			ok = ok || tol.ToleratesTaint(logr.Discard(), &taint, false)
		}
		require.True(t, ok, "no toleration for %v", taint)
	}
}

// allTaints are one taint of each key facilityd can place.
func allTaints() []corev1.Taint {
	var out []corev1.Taint
	for _, d := range alarm.Defs {
		out = append(out, kube.Taints(drain.FacilityOwner(d.Type, alarm.Domain{Kind: d.Domain, Value: "x"}).Tag())...)
	}
	for _, k := range hold.Kinds {
		if k != hold.Facility {
			out = append(out, kube.Taints(k+":x")...)
		}
	}
	return out
}

func tolerationsFile() []byte {
	var b bytes.Buffer
	b.WriteString(`# A JSON patch (RFC 6902) for the DaemonSets that must keep running on
# nodes facilityd holds (GPU exporters, the device plugin, driver
# roll-outs):
#   kubectl patch daemonset -n NS NAME --type json --patch-file deploy/kubernetes/daemonset-tolerations.yaml
# facilityd's holds are NoSchedule taints: they never evict a running
# pod, but they keep a DaemonSet's new pods (a roll-out, a pod restarted
# after an update) off a held node unless it tolerates them; Kubernetes
# adds tolerations only for its own node.kubernetes.io taints. One
# toleration per key facilityd can place (each alarm type, each other
# owner kind), any value (any domain, any name).
# A JSON patch and not a strategic merge: tolerations have no merge key,
# so a strategic merge patch would replace the DaemonSet's own. Each op
# appends, so the list must exist (GPU DaemonSets tolerate nvidia.com/gpu
# already); for one without tolerations, add "tolerations: []" first.
# Generated from the vocabulary: go test ./internal/drain/kubeha -run TestDaemonSetTolerations -update
`)
	seen := map[string]bool{}
	for _, t := range allTaints() {
		if seen[t.Key] {
			continue
		}
		seen[t.Key] = true
		fmt.Fprintf(&b, "- op: add\n  path: /spec/template/spec/tolerations/-\n  value: {key: %s, operator: Exists, effect: NoSchedule}\n", t.Key)
	}
	return b.Bytes()
}

var policyPDB = schema.GroupVersionResource{Group: "policy", Version: "v1", Resource: "poddisruptionbudgets"}
