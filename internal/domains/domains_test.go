package domains_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/quick"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/domains"
	"github.com/seamdc/seam/internal/inventory"
	"github.com/seamdc/seam/internal/sitegen"
)

var update = flag.Bool("update", false, "rewrite golden files")

// threeModules is the design brief's site: three failure domains of one
// IT module each, 288 nodes of 4 GPUs.
func threeModules() []domains.Domain {
	var out []domains.Domain
	for _, n := range []string{"a", "b", "c"} {
		out = append(out, domains.Domain{Name: "fd-" + n, Modules: []string{"m" + n}, Pools: []domains.Pool{{Generation: "gb300-nvl72", Nodes: 288, GPUs: 1152}}})
	}
	return out
}

// briefJob checkpoints every 30 min and restarts in 20 (the brief); it
// writes in a minute (operate.md's worked example).
var briefJob = domains.Job{Name: "brief", GPUs: 1152, Interval: 30 * time.Minute, Write: time.Minute, Restart: 20 * time.Minute}

// llamaGPU is Llama 3 405B's rate: 419 unexpected interruptions in 54
// days on 16,384 GPUs, per GPU per 30-day month.
const llamaGPU = 419.0 / (54.0 / 30.0) / 16384

func evaluate(t *testing.T, doms []domains.Domain, r domains.Rates, jobs ...domains.Job) domains.Report {
	t.Helper()
	rep, err := domains.Evaluate("threemodule", doms, r, nil, jobs, domains.Options{Rows: domains.DefaultRows})
	require.NoError(t, err)
	return rep
}

// The design brief: one interruption per module a month, 30 min
// checkpoints, 20 min restart: 35 minutes a month packed, 105 over three.
func TestBriefExample(t *testing.T) {
	rep := evaluate(t, threeModules(), domains.Rates{Domain: 1}, briefJob)
	j := rep.Jobs[0]
	require.Len(t, j.Placements, 3)
	assert.Equal(t, 35.0, j.LostPerInterruptionMin)
	for i, want := range []float64{35, 70, 105} {
		p := j.Placements[i]
		assert.Equal(t, i+1, p.K)
		assert.Equal(t, want, p.LostMin.Total)
		assert.Equal(t, want, p.LostMin.Domain)
		assert.Zero(t, p.LostMin.Node)
		assert.InDelta(t, want/60*1152, p.GPUHours, 1e-9)
	}
	assert.Equal(t, []string{"fd-a"}, j.Placements[0].Domains)
	assert.Equal(t, []string{"fd-a", "fd-b", "fd-c"}, j.Placements[2].Domains)
	assert.Equal(t, [2]float64{35, 105}, j.Placeable)
	assert.Zero(t, j.FixedMin)
	assert.Equal(t, 1, j.Fewest)
	assert.Zero(t, j.SpanMin)
}

// With Llama 3 405B's per-GPU rate, node faults dwarf the module's one
// interruption: 1152 GPUs see 16.4 a month, 573 minutes' worth, and the
// domains' 35 (packed) and 105 (over three) stay what they were.
func TestNodeFaultsAdd(t *testing.T) {
	rep := evaluate(t, threeModules(), domains.Rates{Domain: 1, GPU: llamaGPU}, briefJob)
	j := rep.Jobs[0]
	node := llamaGPU * 1152
	assert.InDelta(t, 16.37, node, 0.005)
	for i, dom := range []float64{35, 70, 105} {
		p := j.Placements[i]
		assert.Equal(t, dom, p.LostMin.Domain)
		assert.InDelta(t, node*35, p.LostMin.Node, 1e-9)
		assert.InDelta(t, dom+node*35, p.LostMin.Total, 1e-9)
	}
	assert.InDelta(t, node*35, j.FixedMin, 1e-9, "node faults are fixed by the job's size")
	assert.Equal(t, [2]float64{35, 105}, j.Placeable, "placement changes only the domains' part")
	// MTBF 720 h / 17.37 = 41.4 h; the 30 min interval is far too short
	c := j.Checkpoint
	require.NotNil(t, c)
	assert.InDelta(t, 720/(1+node), c.MTBFh, 1e-9)
	assert.Greater(t, c.CostGPUHours, 0.0)
	assert.Greater(t, c.OptimumMin, 30.0)
}

// A job of 16,384 GPUs, Llama's own size, sees about one interruption
// every 3 h from its GPUs alone: 419 in 54 days.
func TestLlamaScale(t *testing.T) {
	p := domains.Place(domains.Job{Name: "llama", GPUs: 16384, Interval: 30 * time.Minute, Write: time.Minute, Restart: 20 * time.Minute},
		domains.Rates{GPU: llamaGPU}, nil, 2048)
	assert.InDelta(t, 419.0/54*30, p.Interruptions.Total, 1e-9)
	assert.InDelta(t, 54.0*24/419, p.MTBFh, 1e-9)
}

// Daly's formula against the three cases the paper works (its figures
// 3–5, δ = 5 min, R = 10 min): the model predicts τ_opt = 117 min at
// M = 24 h, 57 min at 6 h and 9.1 min at 15 min.
func TestDalyPaperCases(t *testing.T) {
	for _, c := range []struct {
		mtbf time.Duration
		want float64 // minutes
		tol  float64
	}{{24 * time.Hour, 117, 0.5}, {6 * time.Hour, 57, 0.5}, {15 * time.Minute, 9.1, 0.05}} {
		got := domains.Daly(5*time.Minute, c.mtbf).Minutes()
		assert.InDelta(t, c.want, got, c.tol, "M = %s", c.mtbf)
	}
	// Young's first order is further off where δ/M is large
	assert.InDelta(t, 12.2, domains.Young(5*time.Minute, 15*time.Minute).Minutes(), 0.05)
}

// operate.md's worked figures: M = 30 days / k modules, δ = 60 s: at
// k = 1 Young's interval is about 4.9 h, at k = 64 about 37 min, and
// the brief's fixed 30 min is right near k = 90.
func TestYoungWorkedFigures(t *testing.T) {
	assert.InDelta(t, 17636, domains.Young(time.Minute, domains.MTBF(1)).Seconds(), 1)
	assert.InDelta(t, 36.7, domains.Young(time.Minute, domains.MTBF(64)).Minutes(), 0.05)
	assert.InDelta(t, 31, domains.Young(time.Minute, domains.MTBF(90)).Minutes(), 0.05)
}

// Daly's series approximates the optimum of his complete model: within
// 0.01 % of it while δ/M ≤ 0.01, 0.3 % at δ/M = 1/3 (the paper's 15 min
// case), where Young's first order is 34 % off.
func TestDalyApproximatesTheOptimum(t *testing.T) {
	rel := func(a, b time.Duration) float64 { return math.Abs(a.Seconds()-b.Seconds()) / b.Seconds() }
	d := time.Minute
	for _, m := range []time.Duration{100 * time.Minute, 10 * time.Hour, 720 * time.Hour} {
		assert.Less(t, rel(domains.Daly(d, m), domains.Optimum(d, m)), 0.0001, "M = %s", m)
	}
	d, m := 5*time.Minute, 15*time.Minute
	assert.Less(t, rel(domains.Daly(d, m), domains.Optimum(d, m)), 0.003)
	assert.Greater(t, rel(domains.Young(d, m), domains.Optimum(d, m)), 0.33)
	// the optimum is the maximum of ETTR: a little either side is worse
	opt := domains.Optimum(d, m) + d
	for _, off := range []time.Duration{-30 * time.Second, 30 * time.Second} {
		assert.Less(t, domains.ETTR(opt+off, d, 10*time.Minute, m), domains.ETTR(opt, d, 10*time.Minute, m))
	}
}

// The property: the optimal interval shrinks as the failure rate grows,
// for Young's, for the complete model's optimum, and for Daly's while a
// write takes less than 2M (where his formula applies).
func TestOptimalIntervalShrinksAsRateGrows(t *testing.T) {
	prop := func(writeS, rate1, rate2 float64) bool {
		write := time.Duration(1+math.Mod(math.Abs(writeS), 7200)) * time.Second
		lo, hi := 0.01+math.Mod(math.Abs(rate1), 1000), 0.01+math.Mod(math.Abs(rate2), 1000)
		if lo > hi {
			lo, hi = hi, lo
		}
		mLo, mHi := domains.MTBF(hi), domains.MTBF(lo) // more failures, shorter MTBF
		ok := domains.Young(write, mLo) <= domains.Young(write, mHi) && domains.Optimum(write, mLo) <= domains.Optimum(write, mHi)
		if write < 2*mLo {
			ok = ok && domains.Daly(write, mLo) <= domains.Daly(write, mHi)
		}
		return ok
	}
	require.NoError(t, quick.Check(prop, &quick.Config{MaxCount: 5000, Rand: rand.New(rand.NewSource(15))}))
}

// Daly's two branches do not meet: at δ = 2M the series gives 4δ/9 and
// the second branch M = δ/2, so his τ jumps up as M falls through δ/2.
// The complete model's optimum has no such step, which is why the
// checkpoint advice compares against it (and derives write-bound from
// it: TestWriteBoundAtTheModelsBoundary).
func TestDalyBranchesDoNotMeet(t *testing.T) {
	d := 10 * time.Minute
	above := domains.Daly(d, d/2+time.Second).Seconds()
	below := domains.Daly(d, d/2-time.Second).Seconds()
	assert.InDelta(t, 4*d.Seconds()/9, above, 1)
	assert.InDelta(t, d.Seconds()/2, below, 1)
	assert.Greater(t, below, above)
	assert.LessOrEqual(t, domains.Optimum(d, d/2-time.Second), domains.Optimum(d, d/2+time.Second))
}

// A job is write-bound where the complete model's optimum computes no
// longer than the job writes: δ/M ≈ 0.797, the root of 1 − x = e^{−2x}.
// At an MTBF of an hour a 47-minute write still has an interval worth
// choosing and a 48-minute one does not; code, advice and the constant
// the docs quote agree.
func TestWriteBoundAtTheModelsBoundary(t *testing.T) {
	x := domains.WriteBoundShare
	assert.InDelta(t, 0, 1-x-math.Exp(-2*x), 1e-3, "the share is the root of 1 − x = e^(−2x)")
	m := time.Hour
	for _, c := range []struct {
		write time.Duration
		bound bool
	}{{time.Minute, false}, {30 * time.Minute, false}, {47 * time.Minute, false}, {48 * time.Minute, true}, {2 * time.Hour, true}} {
		assert.Equal(t, c.bound, domains.WriteBound(c.write, m), "a %s write at a 1 h MTBF", c.write)
		assert.Equal(t, c.bound, domains.Optimum(c.write, m) <= c.write, "%s", c.write)
	}
	assert.False(t, domains.WriteBound(time.Hour, domains.MTBF(0)), "no interruptions: never write-bound")

	rates := domains.Rates{Domain: 720} // one interruption an hour
	job := func(w time.Duration) domains.Job {
		return domains.Job{Name: "slow", GPUs: 1152, Interval: 3 * time.Hour, Write: w, Restart: time.Minute}
	}
	rep := evaluate(t, threeModules(), rates, job(48*time.Minute))
	require.NotNil(t, rep.Jobs[0].Checkpoint)
	assert.True(t, rep.Jobs[0].Checkpoint.WriteBound)
	assert.Contains(t, strings.Join(rep.Advice, "\n"), "job slow writes a checkpoint in 48 min, 80.0 % of its 1 h MTBF (write-bound from 79.7 %): even at the best interval it would write as long as it computes, so no interval helps; write faster or run smaller")
	rep = evaluate(t, threeModules(), rates, job(47*time.Minute))
	assert.False(t, rep.Jobs[0].Checkpoint.WriteBound)
	assert.NotContains(t, strings.Join(rep.Advice, "\n"), "write-bound")
}

// The property: packing a job into one failure domain never costs more
// than any spread that includes that domain, in minutes, GPU-hours and
// ETTR, whatever the rates.
func TestPackingNeverCostsMore(t *testing.T) {
	rnd := rand.New(rand.NewSource(15))
	names := []string{"fd-a", "fd-b", "fd-c", "fd-d", "fd-e", "fd-f"}
	for range 5000 {
		r := domains.Rates{Domain: rnd.Float64() * 5, Domains: map[string]float64{}, GPU: rnd.Float64() * 0.05, Node: rnd.Float64() * 0.1, Site: rnd.Float64()}
		for _, n := range names {
			if rnd.Intn(2) == 0 {
				r.Domains[n] = rnd.Float64() * 10
			}
		}
		j := domains.Job{Name: "j", GPUs: 1 + rnd.Intn(2000), Write: time.Duration(1+rnd.Intn(600)) * time.Second,
			Restart: time.Duration(rnd.Intn(3600)) * time.Second}
		j.Interval = j.Write + time.Duration(1+rnd.Intn(7200))*time.Second
		home := names[rnd.Intn(len(names))]
		spread := []string{home}
		for _, n := range names {
			if n != home && rnd.Intn(2) == 0 {
				spread = append(spread, n)
			}
		}
		nodes := (j.GPUs + 3) / 4
		packed, wide := domains.Place(j, r, []string{home}, nodes), domains.Place(j, r, spread, nodes)
		require.LessOrEqual(t, packed.LostMin.Total, wide.LostMin.Total, "%+v in %s against %v", j, home, spread)
		require.LessOrEqual(t, packed.GPUHours, wide.GPUHours)
		require.GreaterOrEqual(t, packed.ETTR, wide.ETTR)
	}
}

// Advice: the largest job in one domain, a job that must span and what
// it costs, a generation mix refused, and a generation no domain has.
func TestAdvice(t *testing.T) {
	doms := append(threeModules(), domains.Domain{Name: "fd-h", Modules: []string{"mh"}, Pools: []domains.Pool{{Generation: "h100", Nodes: 128, GPUs: 1024}}})
	jobs := []domains.Job{
		briefJob,
		{Name: "two", GPUs: 2000, Interval: time.Hour, Write: time.Minute, Restart: 20 * time.Minute},
		{Name: "mixed", GPUs: 4000, Interval: time.Hour, Write: time.Minute, Restart: 20 * time.Minute},
		{Name: "hopper", GPUs: 512, Interval: time.Hour, Write: time.Minute, Restart: 20 * time.Minute, Generation: "h100"},
		{Name: "big-hopper", GPUs: 2000, Interval: time.Hour, Write: time.Minute, Restart: 20 * time.Minute, Generation: "h100"},
		{Name: "volta", GPUs: 8, Interval: time.Hour, Write: time.Minute, Restart: 20 * time.Minute, Generation: "v100"},
	}
	rep := evaluate(t, doms, domains.Rates{Domain: 1}, jobs...)
	require.Len(t, rep.Largest, 2)
	assert.Equal(t, domains.Largest{Generation: "gb300-nvl72", GPUs: 1152, Domains: []string{"fd-a", "fd-b", "fd-c"}, Total: 3456}, rep.Largest[0])
	assert.Equal(t, domains.Largest{Generation: "h100", GPUs: 1024, Domains: []string{"fd-h"}, Total: 1024}, rep.Largest[1])
	byName := map[string]domains.JobReport{}
	for _, j := range rep.Jobs {
		byName[j.Name] = j
	}
	two := byName["two"]
	assert.Equal(t, "gb300-nvl72", two.Placed)
	assert.Equal(t, 2, two.Fewest)
	assert.Equal(t, 50.0, two.SpanMin, "one more domain's interruption at 30 + 20 min")
	assert.Len(t, two.Placements, 2, "k = 2 and 3")
	assert.Equal(t, "h100", byName["hopper"].Placed)
	assert.Equal(t, "needs 4000 GPUs; only a mix of generations holds it, and a job does not mix them: the largest, gb300-nvl72, has 3456 in 3 failure domains", byName["mixed"].Refused)
	assert.Equal(t, "needs 2000 GPUs of h100; the site has 1024 in 1 failure domain", byName["big-hopper"].Refused)
	assert.Equal(t, "no failure domain has compute of generation v100", byName["volta"].Refused)
	assert.Equal(t, 3, rep.Refused)
	advice := strings.Join(rep.Advice, "\n")
	assert.Contains(t, advice, "largest job in one failure domain: 1152 GPUs of gb300-nvl72 (fd-a, fd-b, fd-c)")
	assert.Contains(t, advice, "job two (2000 GPUs) must span 2 failure domains: +50 min a month (+1667 GPU-h) over one domain's interruptions")
	assert.Contains(t, advice, "job mixed refused: needs 4000 GPUs")
	assert.Contains(t, advice, "job brief: placement changes 35–105 of its lost minutes a month (packed: fd-a); 0 are fixed by its size")
}

// Where domains differ, a job goes to the cheapest that hold it: small
// cheap domains before a large dear one once it needs two of them, and
// the large dear one when nothing else holds it alone.
func TestCheapestDomainsThatHoldIt(t *testing.T) {
	pool := func(gpus int) []domains.Pool { return []domains.Pool{{Generation: "g", Nodes: gpus / 4, GPUs: gpus}} }
	doms := []domains.Domain{{Name: "big", Pools: pool(2000)}, {Name: "s1", Pools: pool(800)}, {Name: "s2", Pools: pool(800)}, {Name: "s3", Pools: pool(800)}}
	r := domains.Rates{Domain: 1, Domains: map[string]float64{"big": 5}}
	j := domains.Job{Name: "j", GPUs: 1500, Interval: time.Hour, Write: time.Minute, Restart: 10 * time.Minute}
	rep, err := domains.Evaluate("s", doms, r, nil, []domains.Job{j}, domains.Options{})
	require.NoError(t, err)
	ps := rep.Jobs[0].Placements
	require.Len(t, ps, 4)
	assert.Equal(t, []string{"big"}, ps[0].Domains, "only big holds it alone")
	assert.Equal(t, []string{"s1", "s2"}, ps[1].Domains, "two cheap ones hold it at 2 against big's 5")
	assert.Equal(t, []string{"s1", "s2", "s3"}, ps[2].Domains)
	assert.Equal(t, []string{"s1", "s2", "s3", "big"}, ps[3].Domains, "cheapest first")
	assert.Equal(t, [2]float64{2 * 40, 8 * 40}, rep.Jobs[0].Placeable)
}

// One name, one profile: the site's and a file's may not share one.
func TestDuplicateJob(t *testing.T) {
	b := briefJob
	b.Where = "jobs.jsonl:4"
	a := briefJob
	a.Where = "operate.cue:46:17"
	_, err := domains.Evaluate("s", threeModules(), domains.Rates{Domain: 1}, nil, []domains.Job{a, b}, domains.Options{})
	require.EqualError(t, err, "jobs.jsonl:4: job brief is declared twice (first at operate.cue:46:17): give each profile its own name")
}

func TestJobValidate(t *testing.T) {
	for _, c := range []struct {
		job  domains.Job
		want string
	}{
		{domains.Job{Name: "a", GPUs: 0, Interval: time.Hour, Write: time.Minute}, "jobs.jsonl:3: job a: 0 GPUs: give the GPUs the job runs on"},
		{domains.Job{Name: "a", GPUs: 8, Interval: time.Minute, Write: 2 * time.Minute}, "interval 1 min is not longer than the write (2 min)"},
		{domains.Job{Name: "a", GPUs: 8, Interval: time.Minute}, "a checkpoint written in 0 s"},
	} {
		c.job.Where = "jobs.jsonl:3"
		err := c.job.Validate()
		require.Error(t, err)
		assert.Contains(t, err.Error(), c.want)
	}
}

func TestReadJobs(t *testing.T) {
	in := `# name, GPUs, times
{"name": "pretrain", "gpus": 1152, "interval": "30 min", "write": "1 min", "restart": "20 min"}

{"name": "tune", "gpus": 64, "interval": "2 h", "write": "20 s", "restart": "5 min", "generation": "gb300-nvl72"}
`
	jobs, err := domains.ReadJobs("jobs.jsonl", strings.NewReader(in))
	require.NoError(t, err)
	require.Len(t, jobs, 2)
	assert.Equal(t, domains.Job{Name: "pretrain", GPUs: 1152, Interval: 30 * time.Minute, Write: time.Minute, Restart: 20 * time.Minute, Where: "jobs.jsonl:2"}, jobs[0])
	assert.Equal(t, "gb300-nvl72", jobs[1].Generation)
	assert.Equal(t, 20*time.Second, jobs[1].Write)

	bad := `{"name": "a", "gpu": 8, "interval": "30 min", "write": "1 min", "restart": "20 min"}
{"name": "b", "gpus": 8, "interval": "30 mins", "write": "1 min", "restart": "20 min"}
{"name": "c", "gpus": 8, "interval": "30 kW", "write": "1 min", "restart": "20 min"}
{"name": "d", "gpus": "8", "interval": "30 min", "write": "1 min", "restart": "20 min"}
{"name": "e", "gpus": 8, "interval": "1 min", "write": "2 min", "restart": "20 min"}
{"name": "e", "gpus": 8, "interval": "30 min", "write": "1 min", "restart": "20 min"}
{"name": "f", "gpus": 8,
{"gpus": 8}
`
	_, err = domains.ReadJobs("jobs.jsonl", strings.NewReader(bad))
	require.Error(t, err)
	golden(t, "testdata/jobs-errors.golden", err.Error()+"\n")
}

// FromGraph reads the failure domains from the inventory: on three
// sitegen cells, three domains of 288 nodes and 1152 GPUs.
func TestFromGraph(t *testing.T) {
	site, h, err := sitegen.Inventory(3)
	require.NoError(t, err)
	g, diags := inventory.Build(site, h)
	require.Empty(t, diags)
	doms := domains.FromGraph(g)
	require.Len(t, doms, 3)
	assert.Equal(t, domains.Domain{Name: "fd-002", Modules: []string{"m002"}, Pools: []domains.Pool{{Generation: "gb300-nvl72", Nodes: 288, GPUs: 1152}}}, doms[1])
}

// The report, as text and JSON, on the brief's site with Llama's GPU
// rate, the brief's job, one that must span and one refused.
func TestReportGolden(t *testing.T) {
	jobs := []domains.Job{briefJob,
		{Name: "two-modules", GPUs: 2048, Interval: 30 * time.Minute, Write: time.Minute, Restart: 20 * time.Minute, Where: "jobs.jsonl:2"},
		{Name: "too-big", GPUs: 4096, Interval: 30 * time.Minute, Write: time.Minute, Restart: 20 * time.Minute, Where: "jobs.jsonl:3"}}
	sources := map[string]string{"domain": "site.cue:30:11: design brief", "gpu": "site.cue:31:8: 419 per 1296 h among 16384 GPUs (Llama 3 405B)"}
	rep, err := domains.Evaluate("threemodule", threeModules(), domains.Rates{Domain: 1, GPU: llamaGPU}, sources, jobs, domains.Options{Rows: domains.DefaultRows})
	require.NoError(t, err)
	var text bytes.Buffer
	require.NoError(t, domains.Text(&text, rep))
	golden(t, "testdata/report.txt", text.String())
	js, err := json.MarshalIndent(rep, "", "  ")
	require.NoError(t, err)
	golden(t, "testdata/report.json", string(js)+"\n")
	// the same inputs give the same bytes
	rep2, err := domains.Evaluate("threemodule", threeModules(), domains.Rates{Domain: 1, GPU: llamaGPU}, sources, jobs, domains.Options{Rows: domains.DefaultRows})
	require.NoError(t, err)
	js2, _ := json.MarshalIndent(rep2, "", "  ")
	assert.Equal(t, string(js), string(js2))
}

func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test ./internal/domains -update")
	assert.Equal(t, string(want), got)
}
