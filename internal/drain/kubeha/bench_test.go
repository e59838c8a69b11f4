package kubeha_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/seamdc/seam/internal/alarm"
	"github.com/seamdc/seam/internal/clock"
	"github.com/seamdc/seam/internal/drain"
	"github.com/seamdc/seam/internal/drain/kubeha"
	"github.com/seamdc/seam/internal/peer/kubetest"
	kube "github.com/seamdc/seam/internal/scheduler/kubernetes"
)

// The figures against the real kube-apiserver (envtest, etcd
// with its defaults, on this machine): one module's 288 nodes held, from
// the alarm's event reaching the controller to every node's taint
// written (each intent committed to the ConfigMap first, each node
// patched with its resourceVersion), checked by a List after each round
// (goal: under 2 s); and a leader's failover with the default Lease
// timings (15 s, 10 s, 2 s), from the leader's death (its Lease not
// released) to the other replica leading (goal: under 20 s).

func BenchmarkHoldModuleKubernetes(b *testing.B) {
	e := kubetest.Start(b)
	ix := exampleIndex(b)
	module := ix.Nodes(l2)
	createNodesB(b, e, module)
	ctx := context.Background()
	var lat []time.Duration
	round := 0
	b.ResetTimer()
	for range b.N {
		for range 8 {
			round++
			store := &kubeha.Store{Client: e.Client, Namespace: ns, Name: fmt.Sprintf("bench-state-%d", round), Leader: "bench", Epoch: 0}
			st, err := store.Claim(ctx, ix.Site())
			if err != nil {
				b.Fatal(err)
			}
			d := &kube.Drainer{Client: e.Client}
			stream := alarm.NewStream()
			ctl := drain.New(drain.Config{}, drain.Deps{Index: ix, Scheduler: d, Stream: stream, StateStore: store, State: st, Clock: clock.Real{}})
			ev := stream.Observe(alarm.Observation{Type: alarm.CoolingRedundancyLost, Domain: l2, Active: true, Kind: alarm.FromDevice, Source: "bench", At: time.Now()})
			start := time.Now()
			ctl.Handle(ctx, ev)
			lat = append(lat, time.Since(start))
			b.StopTimer()
			s, err := d.Status(ctx, module)
			if err != nil {
				b.Fatal(err)
			}
			for _, n := range module {
				if !s.Nodes[n].Drained {
					b.Fatalf("round %d: %s not held", round, n)
				}
			}
			if err := d.Undrain(ctx, module); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
	}
	b.StopTimer()
	report(b, lat)
}

func BenchmarkLeaderFailover(b *testing.B) {
	e := kubetest.Start(b)
	var lat []time.Duration
	b.ResetTimer()
	for i := range b.N {
		lease := fmt.Sprintf("bench-failover-%d", i)
		actx, killA := context.WithCancel(context.Background())
		a := &kubeha.Elector{Client: e.Client, Namespace: ns, Name: lease, Identity: "a"}
		aLeads := make(chan struct{})
		go func() { _ = a.Run(actx, func(c context.Context, _ int64) { close(aLeads); <-c.Done() }) }()
		<-aLeads
		bctx, stopB := context.WithCancel(context.Background())
		bLeads := make(chan time.Time, 1)
		other := &kubeha.Elector{Client: e.Client, Namespace: ns, Name: lease, Identity: "b"}
		go func() { _ = other.Run(bctx, func(c context.Context, _ int64) { bLeads <- time.Now(); <-c.Done() }) }()
		time.Sleep(3 * time.Second) // b follows, renewing attempts against a's lease
		died := time.Now()
		killA()
		lat = append(lat, (<-bLeads).Sub(died))
		stopB()
	}
	b.StopTimer()
	report(b, lat)
}

func report(b *testing.B, lat []time.Duration) {
	slices.Sort(lat)
	p := func(q float64) time.Duration { return lat[min(len(lat)-1, int(q*float64(len(lat))))] }
	b.ReportMetric(p(0.5).Seconds(), "p50-s")
	b.ReportMetric(p(0.99).Seconds(), "p99-s")
	b.ReportMetric(0, "ns/op")
	b.Logf("%d rounds: p50 %s, p99 %s, max %s", len(lat), p(0.5).Round(time.Millisecond), p(0.99).Round(time.Millisecond), lat[len(lat)-1].Round(time.Millisecond))
}

func createNodesB(b *testing.B, e *kubetest.Env, names []string) {
	b.Helper()
	e.CreateNodes(b, names...)
}
