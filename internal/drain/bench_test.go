package drain_test

import (
	"context"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/seamdc/seam/internal/alarm"
	"github.com/seamdc/seam/internal/clock"
	"github.com/seamdc/seam/internal/drain"
	"github.com/seamdc/seam/internal/inventory"
	"github.com/seamdc/seam/internal/peer/slurmtest"
	"github.com/seamdc/seam/internal/scheduler/schedtest"
	"github.com/seamdc/seam/internal/sitegen"
)

// The figures: alarm to every node drained, against a real
// slurmctld (Debian's 22.05; nodes defined without a slurmd), for one
// module (the example's mb, 288 nodes, by l2's redundancy lost) and for
// 10,080 node names (a synthetic site of 35 cells, every node by one
// site-wide alarm, drained by hostlist in one call). The time runs from
// the alarm's event reaching the controller to scontrol having applied
// the drain (its RPC answered), checked with sinfo after each round.
// Goal: one module within 2 s.

func BenchmarkAlarmToDrainedModule(b *testing.B) {
	benchDrain(b, exampleIndex(b), alarm.CoolingRedundancyLost, alarm.Domain{Kind: alarm.CoolingLoop, Value: "l2"}, 20)
}

func BenchmarkAlarmToDrained10000(b *testing.B) {
	site, h, err := sitegen.Inventory(35)
	if err != nil {
		b.Fatal(err)
	}
	g, _ := inventory.Build(site, h)
	ix := alarm.NewIndex(g)
	benchDrain(b, ix, alarm.LeakDetected, alarm.Domain{Kind: alarm.Site, Value: ix.Site()}, 8)
}

func benchDrain(b *testing.B, ix *alarm.Index, t alarm.Type, d alarm.Domain, rounds int) {
	all := ix.Nodes(alarm.Domain{Kind: alarm.Site, Value: ix.Site()})
	want := ix.Nodes(d)
	var nodes []slurmtest.Node
	for _, n := range all {
		nodes = append(nodes, slurmtest.Node{Name: n})
	}
	c := slurmtest.Start(b, slurmtest.Config{Nodes: nodes, Within: 180 * time.Second})
	s := c.Slurm()
	s.Timeout = 2 * time.Minute
	ctx := context.Background()
	var lat []time.Duration
	b.ResetTimer()
	for range b.N {
		for range rounds {
			stream := alarm.NewStream()
			ctl := drain.New(drain.Config{Storm: drain.Storm{MaxNodes: len(all)}}, drain.Deps{Index: ix, Scheduler: s, Stream: stream, Clock: clock.Real{}})
			ev := stream.Observe(alarm.Observation{Type: t, Domain: d, Active: true, Kind: alarm.FromDevice, Source: "bench", At: time.Now()})
			start := time.Now()
			ctl.Handle(ctx, ev)
			lat = append(lat, time.Since(start))
			b.StopTimer()
			st, err := s.Status(ctx, want)
			if err != nil {
				b.Fatal(err)
			}
			for _, n := range want {
				if !st.Nodes[n].Drained {
					b.Fatalf("%s not drained", n)
				}
			}
			if err := s.Undrain(ctx, want); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
	}
	slices.Sort(lat)
	b.ReportMetric(float64(len(want)), "nodes")
	b.ReportMetric(lat[len(lat)/2].Seconds()*1000, "p50-ms")
	b.ReportMetric(lat[(len(lat)*99)/100].Seconds()*1000, "p99-ms")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkMemory100k: the domain index of a 100,224-node site (348
// cells of the example) with every domain's nodes resolved, and a
// controller holding every node of the site under one hold per module:
// MB is the heap in use for both, beyond the graph itself.
func BenchmarkMemory100k(b *testing.B) {
	site, h, err := sitegen.Inventory(348)
	if err != nil {
		b.Fatal(err)
	}
	g, _ := inventory.Build(site, h)
	for range b.N {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		start := time.Now()
		ix := alarm.NewIndex(g)
		for _, d := range ix.Domains() {
			_ = ix.Nodes(d)
		}
		f := schedtest.New(ix.Nodes(alarm.Domain{Kind: alarm.Site, Value: ix.Site()}))
		stream := alarm.NewStream()
		ctl := drain.New(drain.Config{Storm: drain.Storm{MaxNodes: 1 << 20}}, drain.Deps{Index: ix, Scheduler: f, Stream: stream})
		for _, d := range ix.Domains() {
			if d.Kind == alarm.Module && len(ix.Nodes(d)) > 0 {
				ctl.Handle(context.Background(), stream.Observe(alarm.Observation{Type: alarm.LeakDetected, Domain: d, Active: true, Kind: alarm.FromDevice, Source: "bench", At: time.Now()}))
			}
		}
		elapsed := time.Since(start)
		runtime.GC()
		runtime.ReadMemStats(&after)
		if n := len(ctl.HeldNodes()); n != ix.FleetSize() {
			b.Fatalf("%d nodes held, want %d", n, ix.FleetSize())
		}
		b.ReportMetric(float64(ix.FleetSize()), "nodes")
		b.ReportMetric(float64(after.HeapInuse-before.HeapInuse)/(1<<20), "MB")
		b.ReportMetric(elapsed.Seconds(), "s-index+hold-all")
		runtime.KeepAlive(ctl)
	}
}
