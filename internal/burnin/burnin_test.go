package burnin

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seamdc/seam/internal/evidence"
	"github.com/seamdc/seam/internal/hold"
	"github.com/seamdc/seam/internal/ledger"
	"github.com/seamdc/seam/internal/lifecycle"
	"github.com/seamdc/seam/internal/scheduler/schedtest"
	"golang.org/x/crypto/ssh"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/gputools"
	"github.com/seamdc/seam/internal/sim"
	"github.com/seamdc/seam/internal/sim/fleet"
	"github.com/seamdc/seam/internal/topology"
)

var (
	exampleDir  = mustAbs("../../contracts/examples/threemodule")
	fixturesDir = mustAbs("../../fixtures")
)

func mustAbs(p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		panic(err)
	}
	return a
}

// site is the example's simulated site, opened, and its nodes by module.
type site struct {
	o     *sim.Opened
	nodes []Node
}

func openSite(t testing.TB, modules ...string) *site { return openSiteWith(t, "", modules...) }

// openSiteWith opens the site with a simulator defect ("" none).
func openSiteWith(t testing.TB, defect string, modules ...string) *site {
	t.Helper()
	o, diags, err := sim.Open(sim.Paths{Contracts: exampleDir, Fixtures: fixturesDir}, defect, sim.SecretsFrom(func(string) (string, bool) { return "", false }), time.Time{}, nil)
	require.NoError(t, err)
	require.Empty(t, diags)
	c, _, err := contract.Load(exampleDir)
	require.NoError(t, err)
	_, err = c.ReadInventory(nil)
	require.NoError(t, err)
	g, _ := c.Graph()
	top, err := topology.FromGraph(g, topology.GraphOptions{RackNames: topology.RackNames(g, c.Handovers)})
	require.NoError(t, err)
	nodes, err := NodesFrom(top, g, modules...)
	require.NoError(t, err)
	return &site{o: o, nodes: nodes}
}

// load puts the nodes at burn-in in the simulator and lets two minutes
// of site time pass (the GPUs' temperatures settle: a 20 s lag).
func (s *site) load(_ context.Context, nodes []string, on bool) error {
	st := fleet.Idle
	if on {
		st = fleet.BurnIn
	}
	if _, err := s.o.SetNodes(sim.NodeRequest{Nodes: nodes, State: st}); err != nil {
		return err
	}
	s.o.Site.Advance(2 * time.Minute)
	return nil
}

// healthySite is module ma's simulated site with no defect, opened once
// for the package's tests and put under burn-in load once, its GPUs
// settled: the tests that change only what the tools report (mangle,
// slowLinks) share it and run without Config.Load. A test that adds a
// simulator defect or loads nodes opens its own (openSite).
func healthySite(t testing.TB) *site {
	t.Helper()
	sharedOnce.Do(func() {
		s := openSite(t, "ma")
		names := make([]string, len(s.nodes))
		for i, n := range s.nodes {
			names[i] = n.Name
		}
		require.NoError(t, s.load(context.Background(), names, true))
		shared = s
	})
	if shared == nil {
		t.Fatal("the shared simulated site did not open (see the first test that opened it)")
	}
	return shared
}

var (
	sharedOnce sync.Once
	shared     *site
)

// slowLinks are the simulated tools with the named nodes' scale-up
// links at a share of healthy, as fleet.SlowLink sets them, without
// changing the shared site.
func (s *site) slowLinks(slow map[string]float64) Tools {
	return Tools{Nodes: func(names ...string) ([]*gputools.Node, error) {
		vs, err := s.o.GPUViews(names...)
		for _, v := range vs {
			if f, ok := slow[v.Name]; ok {
				v.LinkFactor = f
			}
		}
		return vs, err
	}}
}

func (s *site) tools() Tools {
	return Tools{Nodes: func(names ...string) ([]*gputools.Node, error) { return s.o.GPUViews(names...) }}
}

func heldNames(r *Result) []string {
	var out []string
	for _, n := range r.Held() {
		out = append(out, n.Name)
	}
	sort.Strings(out)
	return out
}

// The done-when, without the scheduler: a module of 288
// simulated nodes with a slow scale-up link, a hot GPU and a failed
// diagnostic goes up the whole ladder (single, ring pairs, 16 racks,
// the module, bisections), and exactly those three are held back, each
// with the reason that names it. (TestBurninThroughSlurm runs the same
// ladder through a real Slurm.)
func TestModuleOf288ThreeDefects(t *testing.T) {
	s := openSite(t, "ma")
	require.Len(t, s.nodes, 288)
	slow, hot, diag := s.nodes[40].Name, s.nodes[101].Name, s.nodes[250].Name
	// the factory's burn-in: the same nodes before shipping, healthy
	factory, err := Run(context.Background(), s.nodes, s.tools(), Config{Load: s.load})
	require.NoError(t, err)
	require.Empty(t, heldNames(factory), reasons(factory))
	require.NoError(t, s.o.AddFleetDefect(fleet.Defect{Kind: fleet.SlowLink, Target: slow, Value: 0.5}))
	require.NoError(t, s.o.AddFleetDefect(fleet.Defect{Kind: fleet.HotGPU, Target: hot, GPU: 1}))
	require.NoError(t, s.o.AddFleetDefect(fleet.Defect{Kind: fleet.FailedDiag, Target: diag, GPU: 3, Test: "GPU Memory"}))
	var progress strings.Builder
	res, err := Run(context.Background(), s.nodes, s.tools(), Config{Load: s.load, Progress: &progress})
	require.NoError(t, err)
	want := []string{slow, hot, diag}
	sort.Strings(want)
	require.Equal(t, want, heldNames(res), "exactly the three defective nodes are held back:\n%s", reasons(res))
	t.Logf("held back:\n%s", reasons(res))

	sl := strings.Join(res.Node(slow).Reasons(), "\n")
	assert.Contains(t, sl, slow+": single busbw_gbps")
	assert.Contains(t, sl, "bisected from rack")
	assert.Contains(t, sl, "bisected from module ma")
	ht := strings.Join(res.Node(hot).Reasons(), "\n")
	assert.Contains(t, ht, "GPU 1")
	assert.Contains(t, ht, "thermally throttled")
	assert.Contains(t, ht, "gpu_temp_max_c")
	dg := strings.Join(res.Node(diag).Reasons(), "\n")
	assert.Contains(t, dg, "memory: Fail on GPU 3", "DCGM 4.x names the plugin")
	assert.Contains(t, dg, "GPU 3 failed the gpu memory test")
	for _, f := range res.Node(slow).Flags {
		assert.NotZero(t, f.Threshold, f.String())
		assert.NotZero(t, f.Median, f.String())
	}
	for _, n := range res.Nodes {
		if n.Passed {
			assert.InDelta(t, 825, n.Measures[MeasureBusBW], 20, "%s: a single node of 4 GPUs in one NVLink domain", n.Name)
		}
	}
	scopes := map[string]int{}
	for _, g := range res.Groups {
		scopes[g.Scope]++
	}
	assert.Equal(t, 288, scopes[ScopePair], "each rack's 18 ring neighbours")
	assert.Equal(t, 16, scopes[ScopeRack])
	assert.Equal(t, 1, scopes[ScopeModule])
	assert.GreaterOrEqual(t, scopes["bisect"], 8, "two halves per level")
	assert.Contains(t, progress.String(), "burnin: [1/")

	// the evidence: a bundle sat verify accepts, signed, with the
	// baselines linked to the trays' serials
	_, signer := testKey(t)
	dir := filepath.Join(t.TempDir(), "burnin")
	m, files, err := WriteBundle(dir, res, BundleOptions{Tool: "sat burnin test", Evidence: evidence.Options{Signer: evidence.SSHSigner(signer), By: "test"},
		Baselines: filepath.Join(t.TempDir(), "baselines")})
	require.NoError(t, err)
	assert.Equal(t, "failed", m.Outcome)
	rep, err := evidence.Verify(dir, []ssh.PublicKey{signer.PublicKey()})
	require.NoError(t, err)
	require.True(t, rep.OK(), "%.2000s", strings.Join(rep.All(), "\n"))
	require.Len(t, files, len(res.Nodes))
	b, digest, err := lifecycle.ReadBaseline(files[slow])
	require.NoError(t, err)
	assert.False(t, b.Passed)
	assert.Equal(t, m.Bundle, b.Evidence)
	assert.Equal(t, res.Node(slow).Serial, b.Serial)
	assert.NotEmpty(t, b.Serial, "linked to the tray's serial in the inventory")
	journal, err := os.ReadFile(filepath.Join(dir, evidence.JournalFile))
	require.NoError(t, err)
	assert.Contains(t, string(journal), digest, "the journal's burnin_node record holds the baseline file's digest")
	raw, err := os.ReadFile(filepath.Join(dir, RawFile))
	require.NoError(t, err)
	assert.Contains(t, string(raw), `\"DCGM Diagnostic\"`, "the tool's output as printed")
	// a tampered raw output fails verification
	require.NoError(t, os.WriteFile(filepath.Join(dir, RawFile), []byte(strings.Replace(string(raw), `\"status\": \"Fail\"`, `\"status\": \"Pass\"`, 1)), 0o644))
	rep, err = evidence.Verify(dir, []ssh.PublicKey{signer.PublicKey()})
	require.NoError(t, err)
	assert.False(t, rep.OK())

	// factory versus site: the slow link's bandwidth dropped, the hot
	// GPU's temperature rose
	var fb, sb []*lifecycle.Baseline
	for _, n := range factory.Nodes {
		fb = append(fb, Baseline(n, "factory", time.Time{}))
	}
	for _, n := range res.Nodes {
		sb = append(sb, Baseline(n, "site", time.Time{}))
	}
	worse, notes := Compare(fb, sb)
	assert.Empty(t, notes)
	got := map[string]bool{}
	for _, w := range worse {
		got[w.Node+" "+w.Metric] = true
	}
	assert.True(t, got[slow+" nccl_allreduce_busbw_gbps"], "%v", worse)
	assert.True(t, got[hot+" "+MeasureTemp], "%v", worse)
	for _, w := range worse {
		assert.Contains(t, []string{slow, hot}, w.Node, w.String())
	}

	// the gate: the passing nodes provisioned, the three held through
	// the ledger (drained, their reasons kept), the others back
	g := &fakeGate{}
	names := make([]string, len(s.nodes))
	for i, n := range s.nodes {
		names[i] = n.Name
	}
	sched := schedtest.New(names)
	l := &ledger.Ledger{Backend: hold.NewMemory(&hold.Book{}, nil, nil), Sched: sched}
	require.NoError(t, Hold(context.Background(), l, "seam-burnin-ma", "cx", "burn-in under way", s.nodes))
	assert.Zero(t, sched.DrainedCount(), "the reservation keeps the nodes out: the burn-in's jobs run")
	acts := Gate(context.Background(), l, g, lifecycle.Auth{}, "seam-burnin-ma", "cx", res, files, m.Bundle)
	require.Len(t, acts, 288)
	assert.Len(t, g.provisioned, 285)
	var drained []string
	for _, n := range names {
		if st := sched.Node(n); st.Drained {
			drained = append(drained, n)
			assert.Equal(t, "burnin:seam-burnin-ma", st.Reason)
		}
	}
	assert.ElementsMatch(t, want, drained)
	h, err := l.Hold(context.Background(), Owner("seam-burnin-ma"))
	require.NoError(t, err)
	require.NotNil(t, h)
	assert.ElementsMatch(t, want, h.Nodes, "the failed nodes stay held once the reservation ends")
	assert.Empty(t, h.Reservation)
	for _, a := range acts {
		if a.Node == diag {
			assert.Contains(t, a.Reason, "burn-in failed (evidence "+m.Bundle+"): node "+diag+": dcgmi diag")
		}
	}

	// the report: CSV, JUnit per rack, HTML per rack with outliers marked
	var csvOut, junit, html strings.Builder
	require.NoError(t, WriteCSV(&csvOut, res))
	require.NoError(t, WriteJUnit(&junit, res))
	require.NoError(t, WriteHTML(&html, res))
	assert.Equal(t, 289, strings.Count(csvOut.String(), "\n"))
	assert.Contains(t, csvOut.String(), slow+",ma,")
	assert.Equal(t, 16, strings.Count(junit.String(), "<testsuite "))
	assert.Equal(t, 3, strings.Count(junit.String(), "<failure "))
	assert.Equal(t, 16, strings.Count(html.String(), "<h3>"))
	assert.Equal(t, 1, strings.Count(html.String(), `class="outlier"`), "the slow node's bar")
}

// fakeGate records the provisioning; the lifecycle store's own tests
// prove provisioning on SQLite and PostgreSQL.
type fakeGate struct {
	mu          sync.Mutex
	provisioned []string
}

func (g *fakeGate) Provision(_ context.Context, _ lifecycle.Auth, file, _ string) (*lifecycle.Moved, error) {
	b, _, err := lifecycle.ReadBaseline(file)
	if err != nil {
		return nil, err
	}
	if !b.Passed {
		return nil, fmt.Errorf("provisioned on a failed baseline %s", file)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.provisioned = append(g.provisioned, b.Node)
	return &lifecycle.Moved{}, nil
}

func testKey(t *testing.T) (ed25519.PrivateKey, ssh.Signer) {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	s, err := ssh.NewSignerFromKey(priv)
	require.NoError(t, err)
	return priv, s
}

func reasons(r *Result) string {
	var b strings.Builder
	for _, n := range r.Held() {
		b.WriteString(n.Name + ":\n  " + strings.Join(n.Reasons(), "\n  ") + "\n")
	}
	return b.String()
}

// mangle is an executor that changes what some nodes' tools print.
type mangle struct {
	Executor
	edit func(j Job, out Output) Output
}

func (m mangle) Run(ctx context.Context, j Job) Output { return m.edit(j, m.Executor.Run(ctx, j)) }

// Bad tool output is never a pass: a truncated all-reduce table, a DCGM
// JSON of an unknown version, #wrong non-zero, GPUs reporting [N/A]
// power, a run that lost its large size; each held with a reason naming
// the node and the file.
func TestBadOutputNeverPasses(t *testing.T) {
	s := healthySite(t)
	nodes := s.nodes[:18]
	edit := func(j Job, out Output) Output {
		n, tool := j.Nodes[0], j.Command[0]
		if len(j.Nodes) > 1 {
			return out
		}
		text := string(out.Stdout)
		switch {
		case n == nodes[2].Name && tool == "all_reduce_perf":
			out.Stdout = []byte(text[:strings.Index(text, "# Out of bounds")-10])
		case n == nodes[5].Name && tool == "dcgmi":
			out.Stdout = []byte(strings.Replace(text, `"version": "4.2.3"`, `"version": "5.0.0"`, 1))
		case n == nodes[8].Name && tool == "all_reduce_perf":
			out.Stdout = []byte(strings.Replace(text, "      0\n", "     17\n", 1))
		case n == nodes[11].Name && tool == "nvidia-smi":
			out.Stdout = []byte(strings.ReplaceAll(text, " W, ", ", "))
			out.Stdout = []byte(strings.Replace(string(out.Stdout), "1400.00, ", "[N/A], ", 1))
		case n == nodes[14].Name && tool == "all_reduce_perf":
			out.Stdout = []byte(strings.Replace(text, "8589934592  ", "4294967296  ", 1))
		}
		return out
	}
	res, err := Run(context.Background(), nodes, mangle{s.tools(), edit}, Config{})
	require.NoError(t, err)
	want := []string{nodes[2].Name, nodes[5].Name, nodes[8].Name, nodes[11].Name, nodes[14].Name}
	sort.Strings(want)
	require.Equal(t, want, heldNames(res), reasons(res))
	for i, frag := range map[int]string{
		2:  "nodes/" + nodes[2].Name + "/all_reduce_perf.txt:",
		5:  "nodes/" + nodes[5].Name + "/dcgmi-diag.json: DCGM version 5.0.0 in the 4.x shape: an unknown version",
		8:  "17 in-place at 8589934592 bytes: the all-reduce computed wrong results",
		11: "reports no temperature or power ([N/A])",
		14: "no row of 8589934592 bytes",
	} {
		assert.Contains(t, strings.Join(res.Node(nodes[i].Name).Reasons(), "\n"), frag, nodes[i].Name)
		assert.Contains(t, strings.Join(res.Node(nodes[i].Name).Reasons(), "\n"), nodes[i].Name)
	}
}

// A rack that is low as a whole while neither of its halves is (a
// fault between them, or one that did not repeat) holds every member
// with that reason: never a pass on a result nobody explained.
func TestLowRackWithoutALowHalf(t *testing.T) {
	s := healthySite(t)
	nodes := s.nodes[:18]
	edit := func(j Job, out Output) Output {
		if len(j.Nodes) == 18 && j.Command[0] == "all_reduce_perf" {
			var b strings.Builder
			for _, l := range strings.Split(string(out.Stdout), "\n") {
				if f := strings.Fields(l); len(f) == 13 && f[0] == "8589934592" {
					f[7], f[11] = "500.00", "500.00"
					l = strings.Join(f, "  ")
				}
				b.WriteString(l + "\n")
			}
			out.Stdout = []byte(b.String())
		}
		return out
	}
	res, err := Run(context.Background(), nodes, mangle{s.tools(), edit}, Config{})
	require.NoError(t, err)
	require.Len(t, res.Held(), 18, reasons(res))
	assert.Contains(t, strings.Join(res.Node(nodes[0].Name).Reasons(), "\n"), "rack a-r01 was low (busbw 500.0 GB/s, threshold 751.1) but neither half of it was")
}
