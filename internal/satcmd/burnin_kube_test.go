package satcmd

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/seamdc/seam/internal/burnin/kubeexec"
	"github.com/seamdc/seam/internal/burnin/kubeexec/kubelettest"
	"github.com/seamdc/seam/internal/cli"
	"github.com/seamdc/seam/internal/peer/kubetest"
	"github.com/seamdc/seam/internal/sim"
	"github.com/seamdc/seam/internal/sim/fleet"
)

// sat burnin run --scheduler kubernetes against a real kube-apiserver
// (kubetest) whose four nodes a fake kubelet serves
// (kubeexec/kubelettest: it runs the pods' commands as the simulated
// GPU tools and serves their logs to the API server's pods/log): the
// slow node is held back (exit 2), the bundle verifies, the nodes are
// tainted during the burn-in and not after.
func TestBurninRunCommandOnKubernetes(t *testing.T) {
	env := kubetest.Start(t)
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = 1000, 2000
	cs, err := k8s.NewForConfig(cfg)
	require.NoError(t, err)
	ctx := context.Background()
	_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "burnin"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	o, diags, err := sim.Open(sim.Paths{Contracts: exampleDir, Fixtures: fixturesDir}, "", sim.SecretsFrom(func(string) (string, bool) { return "", false }), time.Time{}, nil)
	require.NoError(t, err)
	require.Empty(t, diags)
	nodes := []string{"gpu-a-r01-n01", "gpu-a-r01-n02", "gpu-a-r01-n03", "gpu-a-r01-n04"}
	env.CreateNodes(t, nodes...)
	var mu sync.Mutex
	tainted := map[string]bool{}
	run := kubelettest.GPUTools(o.GPUViews)
	kubelettest.Start(t, kubelettest.Config{Client: cs, Nodes: nodes, Run: func(ctx context.Context, p *corev1.Pod) kubelettest.Result {
		n, err := cs.CoreV1().Nodes().Get(ctx, p.Spec.NodeName, metav1.GetOptions{})
		if err == nil && len(n.Spec.Taints) > 0 {
			for _, tt := range n.Spec.Taints {
				if tt.Key == kubeexec.TaintKey && tt.Value == "seam-burnin-ma" {
					mu.Lock()
					tainted[p.Spec.NodeName] = true
					mu.Unlock()
				}
			}
		}
		return run(ctx, p)
	}})
	_, err = o.SetNodes(sim.NodeRequest{Nodes: nodes, State: fleet.BurnIn})
	require.NoError(t, err)
	require.NoError(t, o.AddFleetDefect(fleet.Defect{Kind: fleet.SlowLink, Target: "gpu-a-r01-n03", Value: 0.5}))
	o.Site.Advance(2 * time.Minute)

	key, trust := sshKey(t)
	ev := filepath.Join(t.TempDir(), "burnin")
	code, stdout, stderr := sat(t, "burnin", "run", "--scheduler", "kubernetes", "--kubeconfig", env.Kubeconfig, "--namespace", "burnin",
		"--image", "registry.example/gpu-tools:1", "--contracts", exampleDir, "--module", "ma", "--nodes", strings.Join(nodes, ","),
		"--out", ev, "--sign-key", key, "--timeout", "2m", "--parallel", "4")
	require.Equal(t, cli.ExitFindings, code, stdout+stderr)
	assert.Contains(t, stdout, "4 nodes burned in, 3 passed, 1 held back")
	assert.Contains(t, stdout, "held gpu-a-r01-n03")
	assert.Contains(t, stderr, "4 nodes of ma reserved (seam-burnin-ma)")
	assert.Contains(t, stderr, "burnin: [1/")
	code, out, errOut := sat(t, "verify", ev, "--trust", trust)
	assert.Equal(t, cli.ExitOK, code, out+errOut)
	mu.Lock()
	defer mu.Unlock()
	for _, name := range nodes {
		assert.True(t, tainted[name], "node %s carried the burn-in's taint while its pods ran", name)
		n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		for _, tt := range n.Spec.Taints {
			assert.NotEqual(t, kubeexec.TaintKey, tt.Key, "node %s: the taint is gone after", name)
		}
	}
	left, err := cs.CoreV1().Pods("burnin").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, left.Items, "the burn-in's pods are deleted")
}

func TestBurninRunKubernetesFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--scheduler", "kubernetes", "--namespace", "b"}, "--scheduler kubernetes needs --namespace NS and --image IMAGE"},
		{[]string{"--scheduler", "kubernetes", "--namespace", "b", "--image", "i", "--tools", "/x"}, "--slurm-conf and --tools are for --scheduler slurm"},
		{[]string{"--image", "i"}, "--kubeconfig, --namespace, --image and --pod-env are for --scheduler kubernetes"},
		{[]string{"--scheduler", "pbs"}, `--scheduler "pbs": slurm, kubernetes or sim`},
		{[]string{"--scheduler", "kubernetes", "--namespace", "b", "--image", "i", "--pod-env", "X"}, `want NAME=VALUE, got "X"`},
	} {
		args := append([]string{"burnin", "run", "--contracts", exampleDir, "--module", "ma", "--out", filepath.Join(t.TempDir(), "o")}, tc.args...)
		code, _, stderr := sat(t, args...)
		assert.Equal(t, cli.ExitTool, code, stderr)
		assert.Contains(t, stderr, tc.want)
	}
}
