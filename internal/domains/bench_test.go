package domains_test

import (
	"fmt"
	"math/rand"
	"sync"
	"testing"
	"time"

	"github.com/seamdc/seam/internal/domains"
	"github.com/seamdc/seam/internal/inventory"
	"github.com/seamdc/seam/internal/sitegen"
)

// The figure: the model for 1,000 job profiles on a 100-module
// site, goal under 1 s. The site is sitegen.Inventory's 100 cells of the
// worked example (1,600 racks, 28,800 nodes, 115,200 GPUs, 100 failure
// domains); the jobs are drawn with a fixed seed, from 8 GPUs to 131,072
// (some span up to every domain, some are refused), with a per-GPU rate
// (Llama 3 405B's) and one domain in ten at twice the rate, so the
// placements are not all alike.

const benchModules, benchJobs = 100, 1000

var benchSite struct {
	once sync.Once
	g    *inventory.Graph
	err  error
}

func benchGraph(b *testing.B) *inventory.Graph {
	b.Helper()
	benchSite.once.Do(func() {
		site, h, err := sitegen.Inventory(benchModules)
		if err != nil {
			benchSite.err = err
			return
		}
		benchSite.g, _ = inventory.Build(site, h)
	})
	if benchSite.err != nil {
		b.Fatal(benchSite.err)
	}
	return benchSite.g
}

func benchInputs(doms []domains.Domain) (domains.Rates, []domains.Job) {
	rnd := rand.New(rand.NewSource(15))
	r := domains.Rates{Domain: 1, GPU: llamaGPU, Domains: map[string]float64{}}
	for i, d := range doms {
		if i%10 == 3 {
			r.Domains[d.Name] = 2
		}
	}
	jobs := make([]domains.Job, benchJobs)
	for i := range jobs {
		write := time.Duration(10+rnd.Intn(600)) * time.Second
		jobs[i] = domains.Job{Name: fmt.Sprintf("job-%04d", i), GPUs: 8 << rnd.Intn(15), Write: write,
			Interval: write + time.Duration(5+rnd.Intn(240))*time.Minute, Restart: time.Duration(1+rnd.Intn(40)) * time.Minute}
	}
	return r, jobs
}

// BenchmarkEvaluate costs 1,000 job profiles on the 100-domain site:
// every-k shows each job over every k its generation allows (the most
// work: up to 100 placements a job), rows-3 the default three rows. jobs/op and placements/op count
// what one run produced.
func BenchmarkEvaluate(b *testing.B) {
	doms := domains.FromGraph(benchGraph(b))
	if len(doms) != benchModules {
		b.Fatalf("%d domains, want %d", len(doms), benchModules)
	}
	r, jobs := benchInputs(doms)
	for _, c := range []struct {
		name string
		rows int
	}{{"every-k", 0}, {"rows-3", domains.DefaultRows}} {
		b.Run(c.name, func(b *testing.B) {
			var rep domains.Report
			b.ReportAllocs()
			for b.Loop() {
				var err error
				rep, err = domains.Evaluate("generated", doms, r, nil, jobs, domains.Options{Rows: c.rows})
				if err != nil {
					b.Fatal(err)
				}
			}
			placements := 0
			for _, j := range rep.Jobs {
				placements += len(j.Placements)
			}
			b.ReportMetric(float64(len(rep.Jobs)), "jobs/op")
			b.ReportMetric(float64(placements), "placements/op")
			b.ReportMetric(float64(rep.Refused), "refused/op")
		})
	}
}

// BenchmarkFromGraph reads the 100 failure domains from the graph
// (28,800 nodes): the step before the model.
func BenchmarkFromGraph(b *testing.B) {
	g := benchGraph(b)
	b.ReportAllocs()
	for b.Loop() {
		if len(domains.FromGraph(g)) != benchModules {
			b.Fatal("wrong domains")
		}
	}
}
