package burnin

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/seamdc/seam/internal/burnin/ingest"
)

// Node is a node to burn in: its scheduler name, where it sits (its
// rack is its scale-up domain), its tray's serial, which its baseline
// is linked to, and the GPU model the inventory lists for its tray
// (its telemetry is checked against it).
type Node struct {
	Name     string `json:"name"`
	Rack     string `json:"rack"`
	Module   string `json:"module"`
	Serial   string `json:"serial,omitempty"`
	GPUModel string `json:"gpu_model,omitempty"`
}

// Job is one command on one or more nodes, one task per node.
type Job struct {
	Step    string   // diag, telemetry, single, pair, rack, module, bisect
	Nodes   []string // in rank order
	Command []string
}

// Output is what a job printed (rank 0's standard output) and its exit
// code; Err is set when it could not run or did not answer in time.
// Stdout is the caller's to keep: an executor never reuses it.
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

// Recording is an Executor that answers jobs from outputs a site
// recorded before (internal/burnin/recorded) instead of running them.
// The ladder takes its collectives from it, the groups it recorded,
// instead of making its own; a bisection's half it holds no output for
// cannot be re-run, so the half's members are implicated for a re-test
// (NodeResult.Retest) instead of being held on a guess.
type Recording interface {
	Executor
	// Groups are the node lists of the collectives recorded in scope
	// (ScopePair, ScopeRack, ScopeModule), each in the nodes' order.
	Groups(scope string) [][]string
	// Has reports whether an output of j is recorded.
	Has(j Job) bool
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

// WithDefaults is c with every unset field at the default Run gives
// it.
func (c Config) WithDefaults() (Config, error) {
	err := c.defaults()
	return c, err
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
	// Retest are the reasons a node needs a re-test: a group it was in
	// was low and no recorded output narrows that to a node (a
	// Recording only). Not a hold: nothing shows the node is at fault.
	Retest   []string `json:"retest,omitempty"`
	Passed   bool     `json:"passed"`
	answered bool     // its single-node all-reduce read: it joins the collectives
	silent   bool     // it did not answer: its other steps are not tried
	// unread: one of its own steps gave no reading (no answer, output
	// that does not read, no measurement): its pairs implicate nobody
	unread bool
}

// Reasons are the node's problems, flags and reasons for a re-test,
// one line each.
func (n *NodeResult) Reasons() []string {
	out := slices.Clone(n.Problems)
	for _, f := range n.Flags {
		out = append(out, f.String())
	}
	return append(out, n.Retest...)
}

// Verdicts of a node.
const (
	VerdictPassed = "passed"
	VerdictHeld   = "held"   // a problem or a flag of its own
	VerdictRetest = "retest" // only implicated: a re-test decides
)

// Verdict is the node's verdict.
func (n *NodeResult) Verdict() string {
	switch {
	case n.Passed:
		return VerdictPassed
	case len(n.Retest) > 0 && len(n.Problems) == 0 && len(n.Flags) == 0:
		return VerdictRetest
	}
	return VerdictHeld
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
	return len(r.Held())+len(r.Retests()) == 0 && r.FacilityError == "" && (r.Facility == nil || r.Facility.Passed)
}

// Held are the nodes held back: those that did not pass on a problem
// or a flag of their own.
func (r *Result) Held() []*NodeResult { return r.with(VerdictHeld) }

// Retests are the nodes only implicated, which need a re-test.
func (r *Result) Retests() []*NodeResult { return r.with(VerdictRetest) }

func (r *Result) with(verdict string) []*NodeResult {
	var out []*NodeResult
	for _, n := range r.Nodes {
		if n.Verdict() == verdict {
			out = append(out, n)
		}
	}
	return out
}

func (r *Result) keep(name string, data []byte) {
	r.mu.Lock()
	r.Files = append(r.Files, File{Name: name, Data: data}) // the executor's to give (Output)
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
				n.silent, n.unread = true, true
				n.Problems = append(n.Problems, fmt.Sprintf("node %s: %s: not burned in", n.Name, why))
			}
		}
	}
	r.singles(ctx)
	r.collectives(ctx, ScopePair, r.specs(ScopePair, r.pairs))
	r.collectives(ctx, ScopeRack, r.specs(ScopeRack, r.byRack))
	r.collectives(ctx, ScopeModule, r.specs(ScopeModule, r.byModule))
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
