package kubernetes_test

import (
	"context"
	"fmt"
	"testing"

	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/seamdc/seam/internal/peer/kubetest"
	kube "github.com/seamdc/seam/internal/scheduler/kubernetes"
)

// BenchmarkApplyLabels1000 labels 1,000 nodes of a real kube-apiserver
// by server-side apply, six labels each, as contractc topology apply
// --kubernetes does (its client: 100 requests/s, burst 200, 16 at a
// time), with the list before and the read back after. Reported:
// seconds per 1,000 nodes, the list included.
func BenchmarkApplyLabels1000(b *testing.B) {
	e := kubetest.Start(b)
	names := make([]string, 1000)
	for i := range names {
		names[i] = fmt.Sprintf("gpu-%03d", i)
	}
	e.CreateNodes(b, names...)
	cfg := rest.CopyConfig(e.Config)
	cfg.QPS, cfg.Burst = 100, 200
	cs, err := k8s.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	round := 0
	for b.Loop() {
		round++
		n := &kube.Nodes{Client: cs}
		if _, err := n.Read(ctx); err != nil {
			b.Fatal(err)
		}
		labels := map[string]map[string]string{}
		for i, name := range names {
			labels[name] = map[string]string{"topology.seam.io/module": fmt.Sprintf("m%02d", i/100), "topology.seam.io/rack": fmt.Sprintf("r%03d-%d", i/18, round),
				"topology.seam.io/power-block": "p1", "topology.seam.io/cooling-loop": "l1", "topology.seam.io/scale-up-domain": fmt.Sprintf("r%03d", i/18), "topology.seam.io/generation": "gb300"}
		}
		if err := n.ApplyLabels(ctx, "seam-topology", labels); err != nil {
			b.Fatal(err)
		}
		st, err := n.Read(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if got := st.Nodes[0].Labels["topology.seam.io/rack"]; got != fmt.Sprintf("r000-%d", round) {
			b.Fatalf("read back rack %q", got)
		}
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/1000nodes")
}
