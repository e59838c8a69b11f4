package burnin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/seamdc/seam/internal/burnin/ingest"
)

// Node is a node to burn in: its scheduler name, where it sits (its
// rack is its scale-up domain), and its tray's serial, which its
// baseline is linked to.
type Node struct {
	Name   string `json:"name"`
	Rack   string `json:"rack"`
	Module string `json:"module"`
	Serial string `json:"serial,omitempty"`
}

// Job is one command on one or more nodes, one task per node.
type Job struct {
	Step    string   // diag, telemetry, single, pair, rack, module, bisect
	Nodes   []string // in rank order
	Command []string
}

// Output is what a job printed (rank 0's standard output) and its exit
// code; Err is set when it could not run or did not answer in time.
type Output struct {
	Stdout []byte
	Exit   int
	Err    error
}

// Executor runs jobs on nodes: through Slurm (Slurm), or in process
// against the simulator (tests, benchmarks).
type Executor interface {
	Run(ctx context.Context, j Job) Output
	// Describe names the scheduler for messages ("Slurm reservation
	// seam-burnin-…").
	Describe() string
}

// Checker is an Executor that can say which nodes cannot run a job at
// all (Slurm: down, drained, not responding), before any is tried.
type Checker interface {
	Unavailable(ctx context.Context, nodes []string) (map[string]string, error)
}

// Config tunes a burn-in.
type Config struct {
	// Size is the all-reduce's fixed size, bytes (default 8 GiB; at
	// least 1 GiB: smaller sizes do not reach the fabric's bandwidth).
	Size int64
	// GPUs per node (default 4).
	GPUs int
	// DiagLevel is dcgmi diag's -r (default 3).
	DiagLevel int
	// Parallel bounds the jobs running at once (default 8).
	Parallel int
	// Timeout bounds each job (default 10 min).
	Timeout time.Duration
	Floors  Floors
	Vendor  Vendor
	// Load puts the nodes under (on) or out of the synchronous load
	// that telemetry is read under; nil: the diagnostic's own load.
	Load func(ctx context.Context, nodes []string, on bool) error
	// Facility, when set, grades the module-wide run as a facility test
	// after the collectives (the first synchronous load the site sees).
	Facility *Facility
	Progress io.Writer
	Log      *slog.Logger
}

func (c *Config) defaults() error {
	if c.Size == 0 {
		c.Size = 8 << 30
	}
	if c.Size < 1<<30 {
		return fmt.Errorf("an all-reduce size of %d bytes: burn-in compares at ≥ 1 GiB (smaller sizes are latency-bound)", c.Size)
	}
	if c.GPUs <= 0 {
		c.GPUs = 4
	}
	if c.DiagLevel == 0 {
		c.DiagLevel = 3
	}
	if c.Parallel <= 0 {
		c.Parallel = 8
	}
	if c.Timeout <= 0 {
		c.Timeout = 10 * time.Minute
	}
	if c.Floors == nil {
		c.Floors = DefaultFloors()
	}
	if c.Vendor.Name == "" {
		c.Vendor = NVIDIA
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	return nil
}

// NodeResult is one node's burn-in.
type NodeResult struct {
	Node
	SKU      string                `json:"sku,omitempty"`
	GPUs     []ingest.GPUTelemetry `json:"gpus,omitempty"`
	Diag     *ingest.Diag          `json:"diag,omitempty"`
	Measures map[string]float64    `json:"measures"`
	// Problems are the reasons a result could not count: no answer,
	// output that does not read, a failed diagnostic, #wrong non-zero.
	Problems []string `json:"problems,omitempty"`
	Flags    []Flag   `json:"flags,omitempty"`
	Passed   bool     `json:"passed"`
	answered bool     // its single-node all-reduce read: it joins the collectives
	silent   bool     // it did not answer: its other steps are not tried
}

// Reasons are the node's problems and flags, one line each.
func (n *NodeResult) Reasons() []string {
	out := slices.Clone(n.Problems)
	for _, f := range n.Flags {
		out = append(out, f.String())
	}
	return out
}

// Group is one collective over several nodes.
type Group struct {
	Name    string   `json:"name"`
	Scope   string   `json:"scope"`
	Parent  string   `json:"parent,omitempty"` // the group a bisection split
	Members []string `json:"members"`
	Ranks   int      `json:"ranks"`
	BusBW   float64  `json:"busbw_gbps"`
	File    string   `json:"file"`
	Problem string   `json:"problem,omitempty"`
	Low     bool     `json:"low"`
	// Threshold it was held to (set for the groups judged low and their
	// bisections).
	Threshold float64 `json:"threshold,omitempty"`
}

// File is one tool output kept as evidence.
type File struct {
	Name string
	Data []byte
}

// Result is a burn-in's outcome.
type Result struct {
	Size     int64         `json:"size"`
	GPUs     int           `json:"gpus_per_node"`
	Nodes    []*NodeResult `json:"nodes"`
	Groups   []*Group      `json:"groups"`
	Analysis Analysis      `json:"analysis"`
	// Facility is the module-wide step graded against the boundaries'
	// transient clauses (nil: not run); FacilityError says why it could
	// not be graded.
	Facility      *FacilityResult `json:"facility,omitempty"`
	FacilityError string          `json:"facility_error,omitempty"`
	Files         []File          `json:"-"`
	mu            sync.Mutex
	byName        map[string]*NodeResult
}

// Node finds a node's result.
func (r *Result) Node(name string) *NodeResult { return r.byName[name] }

// Passed reports whether every node passed and the module-wide step,
// if it ran, held every transient clause.
func (r *Result) Passed() bool {
	return len(r.Held()) == 0 && r.FacilityError == "" && (r.Facility == nil || r.Facility.Passed)
}

// Held are the nodes that did not pass.
func (r *Result) Held() []*NodeResult {
	var out []*NodeResult
	for _, n := range r.Nodes {
		if !n.Passed {
			out = append(out, n)
		}
	}
	return out
}

func (r *Result) keep(name string, data []byte) {
	r.mu.Lock()
	r.Files = append(r.Files, File{Name: name, Data: slices.Clone(data)})
	r.mu.Unlock()
}

// runner is one burn-in in progress.
type runner struct {
	cfg   Config
	exec  Executor
	res   *Result
	sem   chan struct{}
	done  int
	total int
	mu    sync.Mutex
}

// Run burns nodes in up the ladder: on each node its diagnostic, its
// telemetry under load and a single-node all-reduce; each rack's ring
// neighbours in pairs; each rack; each module; then the analysis, and
// every rack or module that came out low bisected to its node. Every
// job is bounded by cfg.Timeout and at most cfg.Parallel run at once.
// The error is for a burn-in that could not start; everything a node
// did is in its NodeResult.
func Run(ctx context.Context, nodes []Node, exec Executor, cfg Config) (*Result, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	if len(nodes) == 0 {
		return nil, fmt.Errorf("no nodes to burn in")
	}
	res := &Result{Size: cfg.Size, GPUs: cfg.GPUs, byName: map[string]*NodeResult{}}
	for _, n := range nodes {
		if res.byName[n.Name] != nil {
			return nil, fmt.Errorf("node %s listed twice", n.Name)
		}
		nr := &NodeResult{Node: n, Measures: map[string]float64{}}
		res.Nodes = append(res.Nodes, nr)
		res.byName[n.Name] = nr
	}
	r := &runner{cfg: cfg, exec: exec, res: res, sem: make(chan struct{}, cfg.Parallel)}
	names := make([]string, len(nodes))
	for i, n := range nodes {
		names[i] = n.Name
	}
	if cfg.Load != nil {
		if err := cfg.Load(ctx, names, true); err != nil {
			return nil, fmt.Errorf("putting the nodes under load: %w", err)
		}
		defer func() { _ = cfg.Load(context.WithoutCancel(ctx), names, false) }()
	}
	if c, ok := exec.(Checker); ok {
		down, err := c.Unavailable(ctx, names)
		if err != nil {
			return nil, fmt.Errorf("asking %s which nodes can run: %w", exec.Describe(), err)
		}
		for _, n := range res.Nodes {
			if why, bad := down[n.Name]; bad {
				n.silent = true
				n.Problems = append(n.Problems, fmt.Sprintf("node %s: %s: not burned in", n.Name, why))
			}
		}
	}
	r.singles(ctx)
	r.collectives(ctx, ScopePair, r.pairs())
	r.collectives(ctx, ScopeRack, r.byRack())
	r.collectives(ctx, ScopeModule, r.byModule())
	if cfg.Facility != nil {
		r.addTotal(1)
		fr, err := cfg.Facility.Grade(ctx)
		status := ""
		switch {
		case err != nil:
			res.FacilityError, status = err.Error(), "could not grade: "+err.Error()
		default:
			res.Facility, status = fr, fr.String()
		}
		r.progress("facility", []string{cfg.Facility.Module}, status)
	}
	r.analyze(ctx)
	return res, ctx.Err()
}

func (r *runner) progress(step string, nodes []string, status string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.done++
	if r.cfg.Progress != nil {
		fmt.Fprintf(r.cfg.Progress, "burnin: [%d/%d] %-9s %s: %s\n", r.done, r.total, step, hostSummary(nodes), status)
	}
}

func hostSummary(nodes []string) string {
	if len(nodes) <= 2 {
		return strings.Join(nodes, ",")
	}
	return fmt.Sprintf("%s…%s (%d nodes)", nodes[0], nodes[len(nodes)-1], len(nodes))
}

// run runs one job under the semaphore and the timeout.
func (r *runner) run(ctx context.Context, j Job) Output {
	select {
	case r.sem <- struct{}{}:
	case <-ctx.Done():
		return Output{Err: ctx.Err()}
	}
	defer func() { <-r.sem }()
	jctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	out := r.exec.Run(jctx, j)
	if out.Err == nil && jctx.Err() == context.DeadlineExceeded {
		out.Err = jctx.Err()
	}
	if out.Err != nil && jctx.Err() == context.DeadlineExceeded {
		out.Err = fmt.Errorf("no answer within %s from %s: %w", r.cfg.Timeout, r.exec.Describe(), out.Err)
	}
	return out
}

func (r *runner) addTotal(n int) {
	r.mu.Lock()
	r.total += n
	r.mu.Unlock()
}

// forEach runs f for 0..n-1 concurrently (the semaphore bounds the
// jobs).
func forEach(n int, f func(i int)) {
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() { defer wg.Done(); f(i) }()
	}
	wg.Wait()
}

func fileSafe(s string) string { return strings.NewReplacer("/", "-", " ", "_").Replace(s) }

// singles runs each node's diagnostic, telemetry and single-node
// all-reduce.
func (r *runner) singles(ctx context.Context) {
	r.addTotal(3 * len(r.res.Nodes))
	forEach(len(r.res.Nodes), func(i int) {
		n := r.res.Nodes[i]
		for _, step := range []func(context.Context, *NodeResult){r.diag, r.telemetry, r.single} {
			if n.silent {
				r.progress("skipped", []string{n.Name}, "the node did not answer")
				continue
			}
			step(ctx, n)
		}
	})
}

func (r *runner) problem(n *NodeResult, format string, args ...any) {
	r.res.mu.Lock()
	n.Problems = append(n.Problems, fmt.Sprintf(format, args...))
	r.res.mu.Unlock()
}

func (r *runner) diag(ctx context.Context, n *NodeResult) {
	file := "nodes/" + n.Name + "/dcgmi-diag.json"
	out := r.run(ctx, Job{Step: "diag", Nodes: []string{n.Name}, Command: r.cfg.Vendor.Diag(r.cfg.DiagLevel)})
	r.res.keep(file, out.Stdout)
	if out.Err != nil && out.Exit == 0 {
		r.problem(n, "node %s: diagnostic (%s): %v", n.Name, file, out.Err)
		r.silence(n, out.Err)
		r.progress("diag", []string{n.Name}, "no answer")
		return
	}
	d, err := r.cfg.Vendor.ParseDiag(file, out.Stdout, out.Exit)
	if err != nil {
		r.problem(n, "node %s: diagnostic: %v", n.Name, err)
		r.progress("diag", []string{n.Name}, "unreadable")
		return
	}
	n.Diag = d
	ps := d.Problems()
	for _, p := range ps {
		r.problem(n, "node %s: dcgmi diag -r %d (%s, DCGM %s): %s", n.Name, r.cfg.DiagLevel, file, d.Version, p)
	}
	status := "pass"
	if len(ps) > 0 {
		status = fmt.Sprintf("FAIL (%d)", len(ps))
	}
	r.progress("diag", []string{n.Name}, status)
}

// silence marks a node that did not answer in time: its remaining
// single-node steps are not tried (each would wait its timeout again).
func (r *runner) silence(n *NodeResult, err error) {
	if errors.Is(err, context.DeadlineExceeded) {
		r.res.mu.Lock()
		n.silent = true
		n.Problems = append(n.Problems, fmt.Sprintf("node %s: did not answer in time: its other steps are not tried", n.Name))
		r.res.mu.Unlock()
	}
}

func (r *runner) telemetry(ctx context.Context, n *NodeResult) {
	file := "nodes/" + n.Name + "/nvidia-smi.csv"
	out := r.run(ctx, Job{Step: "telemetry", Nodes: []string{n.Name}, Command: r.cfg.Vendor.Telemetry})
	r.res.keep(file, out.Stdout)
	if out.Err != nil || out.Exit != 0 {
		r.problem(n, "node %s: telemetry (%s): exit %d: %v", n.Name, file, out.Exit, out.Err)
		r.silence(n, out.Err)
		r.progress("telemetry", []string{n.Name}, "no answer")
		return
	}
	gs, err := r.cfg.Vendor.ParseTelemetry(file, out.Stdout)
	if err != nil {
		r.problem(n, "node %s: telemetry: %v", n.Name, err)
		r.progress("telemetry", []string{n.Name}, "unreadable")
		return
	}
	n.GPUs = gs
	if len(gs) > 0 {
		n.SKU = gs[0].Name
	}
	if len(gs) != r.cfg.GPUs {
		r.problem(n, "node %s: %s lists %d GPUs, want %d", n.Name, file, len(gs), r.cfg.GPUs)
	}
	temp, power, clock := math.Inf(-1), 0.0, math.Inf(1)
	for _, g := range gs {
		if !g.Has["temperature.gpu"] || !g.Has["power.draw"] {
			r.problem(n, "node %s: %s: GPU %d reports no temperature or power ([N/A]): not a reading", n.Name, file, g.Index)
			continue
		}
		temp = math.Max(temp, g.TempC)
		power += g.PowerW
		if g.MaxClock > 0 {
			clock = math.Min(clock, g.SMClock/g.MaxClock)
		}
		if g.ECCUncorrected > 0 {
			r.problem(n, "node %s: GPU %d (serial %s): %.0f uncorrectable ECC errors (%s)", n.Name, g.Index, g.Serial, g.ECCUncorrected, file)
		}
		if g.Throttle&(0x20|0x40) != 0 {
			r.problem(n, "node %s: GPU %d (serial %s) is thermally throttled under load: clocks event reasons 0x%x (%s)", n.Name, g.Index, g.Serial, g.Throttle, file)
		}
	}
	if !math.IsInf(temp, 0) {
		n.Measures[MeasureTemp] = temp
		n.Measures[MeasurePower] = power
	}
	if !math.IsInf(clock, 0) {
		n.Measures[MeasureClock] = clock
	}
	r.progress("telemetry", []string{n.Name}, fmt.Sprintf("%d GPUs, max %.0f °C, %.0f W", len(gs), temp, power))
}

func (r *runner) single(ctx context.Context, n *NodeResult) {
	file := "nodes/" + n.Name + "/all_reduce_perf.txt"
	bw, err := r.collective(ctx, "single", file, []string{n.Name})
	if err != nil {
		r.problem(n, "node %s: single-node all-reduce: %v", n.Name, err)
		r.progress("single", []string{n.Name}, "failed")
		return
	}
	r.res.mu.Lock()
	n.Measures[MeasureBusBW] = bw
	n.answered = true
	r.res.mu.Unlock()
	r.progress("single", []string{n.Name}, fmt.Sprintf("busbw %.1f GB/s", bw))
}

// collective runs the all-reduce on nodes and returns its busbw at the
// fixed size.
func (r *runner) collective(ctx context.Context, step, file string, nodes []string) (float64, error) {
	out := r.run(ctx, Job{Step: step, Nodes: nodes, Command: r.cfg.Vendor.Collective(r.cfg.Size, r.cfg.GPUs)})
	r.res.keep(file, out.Stdout)
	if out.Err != nil || out.Exit != 0 {
		return 0, fmt.Errorf("%s: exit %d: %v", file, out.Exit, out.Err)
	}
	run, err := r.cfg.Vendor.ParseCollective(file, out.Stdout)
	if err != nil {
		return 0, err
	}
	if want := len(nodes) * r.cfg.GPUs; len(run.Ranks) > 0 && len(run.Ranks) != want {
		return 0, fmt.Errorf("%s: %d rank lines, want %d (%d nodes × %d GPUs)", file, len(run.Ranks), want, len(nodes), r.cfg.GPUs)
	}
	if hosts := run.Hosts(); len(hosts) > 0 && !slices.Equal(sorted(hosts), sorted(nodes)) {
		return 0, fmt.Errorf("%s: ran on %s, not on %s", file, strings.Join(hosts, ","), strings.Join(nodes, ","))
	}
	return run.BusBW(r.cfg.Size)
}

func sorted(xs []string) []string {
	out := slices.Clone(xs)
	sort.Strings(out)
	return out
}

// answered are the nodes whose single-node all-reduce read, in order:
// a node that did not answer is not put into a collective.
func (r *runner) answered(names []string) []string {
	var out []string
	for _, n := range names {
		if r.res.byName[n].answered {
			out = append(out, n)
		}
	}
	return out
}

type groupSpec struct {
	name    string
	members []string
}

// racks lists each rack's nodes in order, racks in first-seen order.
func (r *runner) racks() ([]string, map[string][]string) {
	var order []string
	by := map[string][]string{}
	for _, n := range r.res.Nodes {
		if _, ok := by[n.Rack]; !ok {
			order = append(order, n.Rack)
		}
		by[n.Rack] = append(by[n.Rack], n.Name)
	}
	return order, by
}

// pairs are each rack's ring neighbours: (n1,n2), (n2,n3), …, (nk,n1).
func (r *runner) pairs() []groupSpec {
	order, by := r.racks()
	var out []groupSpec
	for _, rack := range order {
		ns := r.answered(by[rack])
		for i := range ns {
			if len(ns) < 2 || (len(ns) == 2 && i == 1) {
				break
			}
			a, b := ns[i], ns[(i+1)%len(ns)]
			out = append(out, groupSpec{name: a + "+" + b, members: []string{a, b}})
		}
	}
	return out
}

func (r *runner) byRack() []groupSpec {
	order, by := r.racks()
	var out []groupSpec
	for _, rack := range order {
		if ns := r.answered(by[rack]); len(ns) > 1 {
			out = append(out, groupSpec{name: rack, members: ns})
		}
	}
	return out
}

func (r *runner) byModule() []groupSpec {
	var order []string
	by := map[string][]string{}
	for _, n := range r.res.Nodes {
		if _, ok := by[n.Module]; !ok {
			order = append(order, n.Module)
		}
		by[n.Module] = append(by[n.Module], n.Name)
	}
	var out []groupSpec
	for _, m := range order {
		if ns := r.answered(by[m]); len(ns) > 1 && r.spansRacks(ns) {
			out = append(out, groupSpec{name: m, members: ns})
		}
	}
	return out
}

func (r *runner) spansRacks(ns []string) bool {
	for _, n := range ns {
		if r.res.byName[n].Rack != r.res.byName[ns[0]].Rack {
			return true
		}
	}
	return false
}

// collectives runs each group's all-reduce.
func (r *runner) collectives(ctx context.Context, scope string, specs []groupSpec) {
	r.addTotal(len(specs))
	groups := make([]*Group, len(specs))
	forEach(len(specs), func(i int) {
		s := specs[i]
		groups[i] = r.group(ctx, scope, "", s)
	})
	r.res.mu.Lock()
	r.res.Groups = append(r.res.Groups, groups...)
	r.res.mu.Unlock()
}

func (r *runner) group(ctx context.Context, scope, parent string, s groupSpec) *Group {
	g := &Group{Name: s.name, Scope: scope, Parent: parent, Members: s.members, Ranks: len(s.members) * r.cfg.GPUs,
		File: "groups/" + scope + "-" + fileSafe(s.name) + ".txt"}
	bw, err := r.collective(ctx, scope, g.File, s.members)
	status := fmt.Sprintf("busbw %.1f GB/s", bw)
	if err != nil {
		g.Problem, status = err.Error(), "failed"
	}
	g.BusBW = bw
	r.progress(scope, s.members, status)
	return g
}

// analyze judges the nodes' measures and the groups, bisects every low
// group and sets each node's verdict.
func (r *runner) analyze(ctx context.Context) {
	var obs []Observation
	for _, n := range r.res.Nodes {
		for m, v := range n.Measures {
			obs = append(obs, Observation{Node: n.Name, Scope: ScopeSingle, Ranks: r.cfg.GPUs, SKU: n.SKU, Measure: m, Value: v})
		}
	}
	for _, g := range r.res.Groups {
		if g.Problem != "" {
			continue
		}
		sku := r.res.byName[g.Members[0]].SKU
		switch g.Scope {
		case ScopePair:
			for _, m := range g.Members {
				obs = append(obs, Observation{Node: m, Scope: ScopePair, Ranks: g.Ranks, SKU: sku, Measure: MeasureBusBW, Value: g.BusBW})
			}
		case ScopeRack:
			obs = append(obs, Observation{Node: g.Name, Scope: ScopeRack, Ranks: g.Ranks, SKU: sku, Measure: MeasureBusBW, Value: g.BusBW})
		case ScopeModule:
			obs = append(obs, Observation{Node: g.Name, Scope: ScopeModule, Ranks: g.Ranks, SKU: sku, Measure: MeasureModuleBusBW, Value: g.BusBW})
		}
	}
	an := Analyze(obs, r.cfg.Floors)
	r.res.Analysis = an
	groupFlag := map[string]Flag{}
	for _, f := range an.Flags {
		if n := r.res.byName[f.Node]; n != nil {
			n.Flags = append(n.Flags, f)
			continue
		}
		groupFlag[f.Node] = f
	}
	var low []*Group
	for _, g := range r.res.Groups {
		if f, ok := groupFlag[g.Name]; ok && (g.Scope == ScopeRack || g.Scope == ScopeModule) {
			g.Low, g.Threshold = true, f.Threshold
			low = append(low, g)
		}
		if g.Problem != "" && g.Scope != ScopePair {
			g.Low = true
			low = append(low, g)
		}
	}
	for _, g := range low {
		r.bisect(ctx, g, g, an)
	}
	for _, n := range r.res.Nodes {
		n.Passed = len(n.Problems) == 0 && len(n.Flags) == 0
	}
}

// threshold is what a group of members is held to in a bisection: a
// single node, its single-node cohort's; a group within one rack, the
// rack cohort's (bus bandwidth at a large size barely depends on the
// rank count inside one NVLink domain); across racks, the module
// cohort's or floor.
func (r *runner) threshold(an Analysis, members []string, parent *Group) (float64, string) {
	sku := r.res.byName[members[0]].SKU
	scope, measure, ranks := ScopeModule, MeasureModuleBusBW, 0
	switch {
	case len(members) == 1:
		scope, measure, ranks = ScopeSingle, MeasureBusBW, r.cfg.GPUs
	case !r.spansRacks(members):
		scope, measure = ScopeRack, MeasureBusBW
	}
	t := math.Inf(-1)
	for _, c := range an.Cohorts {
		if c.Scope == scope && c.Measure == measure && c.SKU == sku && (ranks == 0 || c.Ranks == ranks) && c.N >= 3 {
			t = math.Max(t, c.Threshold)
		}
	}
	if lim, ok := r.cfg.Floors[sku][measure]; ok && (lim.Scopes == nil || slices.Contains(lim.Scopes, scope)) {
		t = math.Max(t, lim.Value)
	}
	if math.IsInf(t, -1) && parent != nil && parent.Threshold > 0 && scope == parent.Scope {
		t = parent.Threshold
	}
	return t, scope
}

// bisect splits a low group in halves, runs each, and follows the low
// ones down to single nodes, each of which is flagged; a group whose
// halves are both fine is reported on all its members (the fault is
// between them, or it does not repeat).
func (r *runner) bisect(ctx context.Context, root, g *Group, an Analysis) {
	if len(g.Members) == 1 {
		return
	}
	half := len(g.Members) / 2
	// split a module at a rack boundary first: halves of racks
	specs := []groupSpec{{name: g.Name + "[a]", members: g.Members[:half]}, {name: g.Name + "[b]", members: g.Members[half:]}}
	r.addTotal(2)
	subs := make([]*Group, 2)
	forEach(2, func(i int) { subs[i] = r.group(ctx, "bisect", g.Name, specs[i]) })
	anyLow := false
	for _, s := range subs {
		t, scope := r.threshold(an, s.Members, g)
		s.Threshold = t
		s.Low = s.Problem != "" || s.BusBW < t
		r.res.mu.Lock()
		r.res.Groups = append(r.res.Groups, s)
		r.res.mu.Unlock()
		if !s.Low {
			continue
		}
		anyLow = true
		if len(s.Members) == 1 {
			n := r.res.byName[s.Members[0]]
			med := math.NaN()
			for _, c := range an.Cohorts {
				if c.Scope == ScopeSingle && c.Measure == MeasureBusBW && c.SKU == n.SKU {
					med = c.Median
				}
			}
			f := Flag{Node: n.Name, Measure: MeasureBusBW, Scope: root.Scope, Ranks: s.Ranks, Value: s.BusBW, Median: med, Threshold: t,
				Why: fmt.Sprintf("bisected from %s %s (busbw %.1f GB/s, threshold %.1f): its half stayed low down to this node (held to the %s threshold)", root.Scope, root.Name, root.BusBW, root.Threshold, scope)}
			if s.Problem != "" {
				f.Why = "bisected: its own run failed: " + s.Problem
			}
			r.res.mu.Lock()
			n.Flags = append(n.Flags, f)
			r.res.mu.Unlock()
			continue
		}
		r.bisect(ctx, root, s, an)
	}
	if !anyLow {
		for _, m := range g.Members {
			n := r.res.byName[m]
			r.problem(n, "node %s: %s %s was low (busbw %.1f GB/s, threshold %.1f) but neither half of it was: the fault lies between its halves or did not repeat",
				m, g.Scope, g.Name, g.BusBW, g.Threshold)
		}
	}
}
