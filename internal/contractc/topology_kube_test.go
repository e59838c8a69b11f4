package contractc

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/seamdc/seam/internal/cli"
	"github.com/seamdc/seam/internal/peer/kubetest"
)

// records writes an inventory of eight nodes in two modules; moved puts
// rack b-r02 in module ma (as it was), else mb.
func records(t *testing.T, moved bool) string {
	var b strings.Builder
	b.WriteString("[\n")
	for i, rack := range []string{"a-r01", "a-r01", "a-r02", "a-r02", "b-r01", "b-r01", "b-r02", "b-r02"} {
		module, block := "m"+rack[:1], "p1"
		if rack[0] == 'b' {
			block = "p2"
		}
		if moved && rack == "b-r02" {
			module = "ma"
		}
		sep := ","
		if i == 7 {
			sep = ""
		}
		fmt.Fprintf(&b, `  {"node": "gpu-%s-n0%d", "module": %q, "power_block": %q, "cooling_loop": "l%s", "rack": %q, "nvlink_domain": %q}%s`+"\n",
			rack, i%2+1, module, block, block[1:], rack, rack, sep)
	}
	b.WriteString("]\n")
	path := filepath.Join(t.TempDir(), "inv.json")
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))
	return path
}

// contractc topology apply --kubernetes and drift --kubernetes against
// a real kube-apiserver with seven of the inventory's eight nodes, one
// of them with a rack label typed by hand (kubectl label): a dry run
// changes nothing; the apply sets every label server-side as
// seam-topology, overrides the hand-typed one, and creates no Node for
// the node Kubernetes lacks; again is unchanged; a rack moved between
// modules changes its module label; a label seam set and no longer
// gives (the zone) is removed; drift finds nothing left.
func TestTopologyApplyKubernetes(t *testing.T) {
	t.Parallel()
	e := kubetest.Start(t)
	have := []string{"gpu-a-r01-n01", "gpu-a-r01-n02", "gpu-a-r02-n01", "gpu-a-r02-n02", "gpu-b-r01-n01", "gpu-b-r01-n02", "gpu-b-r02-n01"}
	e.CreateNodes(t, have...)
	ctx := context.Background()
	nodes := e.Client.CoreV1().Nodes()
	_, err := nodes.Patch(ctx, "gpu-a-r02-n01", types.MergePatchType, []byte(`{"metadata":{"labels":{"topology.seam.io/rack":"a-r01"}}}`), metav1.PatchOptions{FieldManager: "kubectl-label"})
	require.NoError(t, err)
	labels := func(node string) map[string]string {
		n, err := nodes.Get(ctx, node, metav1.GetOptions{})
		require.NoError(t, err)
		return n.Labels
	}
	run := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := Main(append([]string{"topology"}, args...), &out, &errb)
		return code, out.String(), errb.String()
	}
	inv, old := records(t, false), records(t, true)
	// as an operator in the group deploy/kubernetes/topology/rbac.yaml binds
	e.Apply(t, "../../deploy/kubernetes/topology/rbac.yaml")
	kc := []string{"--kubernetes", "--kubeconfig", userKubeconfig(t, e, "erin", "seam-topology")}
	waitCanList(t, kc[2])

	code, out, errs := run(append([]string{"apply", "--records", old, "--dry-run"}, kc...)...)
	require.Equal(t, cli.ExitOK, code, out+errs)
	assert.Contains(t, out, "kubernetes: 35 label change(s) on 7 of 7 node(s) (field manager seam-topology)\n")
	assert.Contains(t, out, "  ~ topology.seam.io/rack=a-r01 → a-r02 on gpu-a-r02-n01\n")
	assert.Contains(t, out, "  ! 1 node not in Kubernetes, skipped (server-side apply would create them): gpu-b-r02-n02\n")
	assert.Contains(t, out, "kubernetes: dry-run\n")
	assert.Equal(t, "a-r01", labels("gpu-a-r02-n01")["topology.seam.io/rack"], "a dry run changes nothing")
	assert.NotContains(t, labels("gpu-a-r01-n01"), "topology.seam.io/module")

	code, out, errs = run(append([]string{"apply", "--records", old, "--zone-label"}, kc...)...)
	require.Equal(t, cli.ExitOK, code, out+errs)
	assert.Contains(t, out, "kubernetes: applied\n")
	for _, n := range have {
		l := labels(n)
		rack := strings.TrimSuffix(strings.TrimPrefix(n, "gpu-"), n[len(n)-4:])
		assert.Equal(t, rack, l["topology.seam.io/rack"], n)
		assert.Equal(t, rack, l["topology.seam.io/scale-up-domain"], n)
		assert.NotEmpty(t, l["topology.kubernetes.io/zone"], n)
		assert.Equal(t, n, l["kubernetes.io/hostname"], "%s: labels seam does not manage stay", n)
	}
	assert.Equal(t, "ma", labels("gpu-b-r02-n01")["topology.seam.io/module"])
	_, err = nodes.Get(ctx, "gpu-b-r02-n02", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "the node Kubernetes lacks is not created: %v", err)

	code, out, errs = run(append([]string{"apply", "--records", old, "--zone-label"}, kc...)...)
	require.Equal(t, cli.ExitOK, code, out+errs)
	assert.Contains(t, out, "kubernetes: 0 label change(s) on 0 of 7 node(s)")
	assert.Contains(t, out, "kubernetes: unchanged\n")

	// the rack moved to mb, and the zone label is no longer asked for
	code, out, errs = run(append([]string{"apply", "--records", inv}, kc...)...)
	require.Equal(t, cli.ExitOK, code, out+errs)
	assert.Contains(t, out, "  ~ topology.seam.io/module=ma → mb on gpu-b-r02-n01\n")
	assert.Contains(t, out, "kubernetes: applied\n")
	assert.Equal(t, "mb", labels("gpu-b-r02-n01")["topology.seam.io/module"])
	for _, n := range have {
		assert.NotContains(t, labels(n), "topology.kubernetes.io/zone", "%s: the zone label seam set is removed", n)
	}

	code, out, errs = run(append([]string{"drift", "--records", inv}, kc...)...)
	assert.Equal(t, cli.ExitFindings, code, out+errs)
	assert.Contains(t, out, "node-missing")
	assert.Contains(t, out, "gpu-b-r02-n02")
	assert.NotContains(t, out, "label-wrong")

	code, _, errs = run("apply", "--records", inv, "--kubectl", "nodes.json")
	assert.Equal(t, cli.ExitTool, code)
	assert.Contains(t, errs, "--kubectl nodes.json is a saved copy: it shows the changes (--dry-run); apply them to the cluster with --kubernetes")

	// an identity that may list nodes but not patch them fails, naming
	// the node (the old inventory moves one rack back, one node here);
	// one that may not even list them writes nothing
	_, err = e.Client.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "node-reader"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list"}}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = e.Client.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "carol-reads-nodes"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "node-reader"},
		Subjects: []rbacv1.Subject{{Kind: "User", Name: "carol"}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	carol := userKubeconfig(t, e, "carol")
	waitCanList(t, carol)
	code, out, errs = run("apply", "--records", old, "--kubernetes", "--kubeconfig", carol)
	assert.Equal(t, cli.ExitTool, code, out+errs)
	assert.Contains(t, out, "kubernetes: failed\n")
	assert.Contains(t, errs, `contractc topology apply: kubernetes: failed: kubernetes: labelling 1 of 1 node(s) failed (gpu-b-r02-n01): node gpu-b-r02-n01: nodes "gpu-b-r02-n01" is forbidden: User "carol" cannot patch resource "nodes"`)
	assert.Equal(t, "mb", labels("gpu-b-r02-n01")["topology.seam.io/module"], "nothing written")
	code, out, errs = run("apply", "--records", old, "--kubernetes", "--kubeconfig", userKubeconfig(t, e, "dave"))
	assert.Equal(t, cli.ExitTool, code, out+errs)
	assert.Contains(t, out, "kubernetes: refused\n")
	assert.Contains(t, errs, "kubernetes: listing nodes: nodes is forbidden: User \"dave\" cannot list resource \"nodes\"")
}

// userKubeconfig writes a kubeconfig for a user of the API server, in
// groups, with no rights beyond what RBAC grants it.
func userKubeconfig(t *testing.T, e *kubetest.Env, name string, groups ...string) string {
	cfg := e.User(t, name, groups...)
	kc := clientcmdapi.NewConfig()
	kc.Clusters["test"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos[name] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: name}
	kc.CurrentContext = "test"
	path := filepath.Join(t.TempDir(), name+".kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*kc, path))
	return path
}

// waitCanList waits, a minute at most, until the kubeconfig's user may
// list nodes: the API server's authorizer sees a new binding through its
// cache.
func waitCanList(t *testing.T, kubeconfig string) {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	require.NoError(t, err)
	cs, err := k8s.NewForConfig(cfg)
	require.NoError(t, err)
	const within = time.Minute
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		_, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{Limit: 1})
		if err == nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s still may not list nodes %s after its binding was made: %v", kubeconfig, within, err)
		case <-tick.C:
		}
	}
}
