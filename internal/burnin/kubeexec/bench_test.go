package kubeexec

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/burnin"
	"github.com/seamdc/seam/internal/burnin/kubeexec/kubelettest"
	"github.com/seamdc/seam/internal/peer/kubetest"
)

// A rack of 18 simulated nodes burned in through a real kube-apiserver
// and the fake kubelet (every step of the ladder, no defect): the cost of the
// Kubernetes path itself (pod creation, watch, pods/log, deletion), not
// of real GPUs or a real kubelet.
func BenchmarkRackThroughKubernetes(b *testing.B) {
	env := kubetest.Start(b)
	cs := client(b, env)
	s := openSite(b)
	rack := s.rack("a-r01")
	env.CreateNodes(b, names(rack)...)
	createNamespace(b, cs)
	kubelettest.Start(b, kubelettest.Config{Client: cs, Nodes: names(rack), Run: kubelettest.GPUTools(s.views)})
	ctx := context.Background()
	for b.Loop() {
		ex := &Kube{Client: cs, Namespace: ns, Image: "tools:1"}
		require.NoError(b, ex.Reserve(ctx, "bi-bench", "bench", names(rack)))
		r, err := burnin.Run(ctx, rack, ex, burnin.Config{Load: s.load, Timeout: 5 * time.Minute, Parallel: 8})
		require.NoError(b, err)
		require.Empty(b, r.Held(), reasons(r))
		require.NoError(b, ex.Release(ctx))
	}
}
