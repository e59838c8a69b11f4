package inventory_test

import (
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/seamdc/seam/internal/diag"
	"github.com/seamdc/seam/internal/inventory"
	"github.com/seamdc/seam/internal/sitegen"
)

// The figures: build and check of a 100,000-node inventory
// (goal under 2 s and 1 GiB), and the blast radius of one element on it
// (goal p99 under 10 ms). The site is sitegen.Inventory's: 348 cells of
// the worked example, 5,568 racks, 100,224 nodes, 1,620,288 parts,
// 1,866,329 elements.

const benchCells = 348

var bench struct {
	once sync.Once
	site *inventory.Site
	h    *inventory.Handover
	err  error
}

func benchInventory(b *testing.B) (*inventory.Site, *inventory.Handover) {
	b.Helper()
	bench.once.Do(func() {
		bench.site, bench.h, bench.err = sitegen.Inventory(benchCells)
	})
	if bench.err != nil {
		b.Fatal(bench.err)
	}
	return bench.site, bench.h
}

// BenchmarkBuildCheck builds the graph of the synthetic site and checks
// it. MB is the heap in use afterwards (the graph, the site and its
// handover records), graph-MB the graph's share, sys-MB what the
// process holds from the OS; build-s and check-s split the time, and
// buildcheck-s is their sum (the goal: under 2 s).
func BenchmarkBuildCheck(b *testing.B) {
	site, h := benchInventory(b)
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	var g *inventory.Graph
	var building, checking time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		// the last graph is gone before the next is built, as in a
		// process that builds one
		b.StopTimer()
		g = nil
		runtime.GC()
		b.StartTimer()
		start := time.Now()
		gr, diags := inventory.Build(site, h)
		built := time.Now()
		diags = append(diags, inventory.Check(gr)...)
		building, checking = building+built.Sub(start), checking+time.Since(built)
		if len(diags) > 0 {
			b.Fatalf("the synthetic site has %d diagnostics, the first: %s", len(diags), diags[0].Message)
		}
		g = gr
	}
	b.StopTimer()
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.HeapAlloc)/(1<<20), "MB")
	b.ReportMetric((float64(after.HeapAlloc)-float64(before.HeapAlloc))/(1<<20), "graph-MB")
	b.ReportMetric(float64(after.Sys)/(1<<20), "sys-MB")
	b.ReportMetric(float64(g.Len()), "elements")
	b.ReportMetric(building.Seconds()/float64(b.N), "build-s")
	b.ReportMetric(checking.Seconds()/float64(b.N), "check-s")
	b.ReportMetric((building+checking).Seconds()/float64(b.N), "buildcheck-s")
	runtime.KeepAlive(g)
}

var benchGraph struct {
	once sync.Once
	g    *inventory.Graph
}

func blastGraph(b *testing.B) *inventory.Graph {
	site, h := benchInventory(b)
	benchGraph.once.Do(func() { benchGraph.g, _ = inventory.Build(site, h) })
	return benchGraph.g
}

// BenchmarkNewChecks times, on the synthetic site's graph, the checks
// issue 36 added to Check (data NICs on a management switch, BMC
// addresses and host names, node names, design power below draw) with
// the uniqueness pass of Slurm and Kubernetes names they share a loop
// with ("new"), against that pass alone as it was ("old"), in one
// process on one graph: new - old is what they add to vet. (The one
// cable per port check runs in Build: BenchmarkBuildCheck.)
func BenchmarkNewChecks(b *testing.B) {
	g := blastGraph(b)
	for _, bm := range []struct {
		name  string
		check func(*inventory.Graph) diag.List
	}{{"old", inventory.UniqueNames}, {"new", inventory.NewChecks}} {
		b.Run(bm.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if d := bm.check(g); len(d) > 0 {
					b.Fatalf("the synthetic site has %d diagnostics, the first: %s", len(d), d[0].Message)
				}
			}
		})
	}
}

// BenchmarkBlast is the blast radius of one element at a time, over a
// fixed random sample of 600 elements: 100 each of feeds, PSUs, power
// shelves, CDUs, loops and ToR switches, all of them in each op; p50
// and p99 are of single queries, in ms.
func BenchmarkBlast(b *testing.B) {
	g := blastGraph(b)
	rng := rand.New(rand.NewPCG(1, 2))
	var sample []inventory.ID
	for _, k := range []inventory.Kind{inventory.KindFeed, inventory.KindPSU, inventory.KindPowerShelf,
		inventory.KindCDU, inventory.KindLoop, inventory.KindTorSwitch} {
		all := g.OfKind(k)
		for range 100 {
			sample = append(sample, all[rng.IntN(len(all))])
		}
	}
	rng.Shuffle(len(sample), func(i, j int) { sample[i], sample[j] = sample[j], sample[i] })
	var times []time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		for _, id := range sample {
			start := time.Now()
			inventory.Blast(g, id)
			times = append(times, time.Since(start))
		}
	}
	b.StopTimer()
	slices.Sort(times)
	at := func(p float64) float64 {
		return float64(times[min(len(times)-1, int(p*float64(len(times))))].Microseconds()) / 1000
	}
	b.ReportMetric(at(0.50), "p50-ms")
	b.ReportMetric(at(0.99), "p99-ms")
	b.ReportMetric(float64(len(times)), "queries")
}
