// Package recorded grades a burn-in a site already ran: its tools'
// outputs, per node and per group, listed in a manifest
// (DIR/manifest.json, format seam.burnin.recorded/v1). Load reads and
// checks every output first: a file that does not read (truncated,
// garbage), a node the inventory does not have, a manifest naming a
// missing file or not parsing is an error naming the file and line,
// never a pass. The Recording it returns answers burn-in's ladder as an
// Executor (burnin.Recording), so the analysis, the thresholds, the
// bisection, the evidence and the gate are burn-in's own; a bisection
// the recorded outputs cannot answer implicates its nodes for a re-test
// instead of holding them. docs/burnin.md ("Grading a burn-in a site
// already ran") describes the manifest.
package recorded

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/seamdc/seam/internal/burnin"
	"github.com/seamdc/seam/internal/burnin/ingest"
	"github.com/seamdc/seam/internal/topology/hostlist"
)

// Recording is a site's recorded burn-in, read and checked; it answers
// the ladder's jobs from the recorded outputs.
type Recording struct {
	dir      string
	manifest []byte
	nodes    []burnin.Node
	perNode  map[string]*output    // diag and telemetry, by step and node
	byNodes  map[string]*output    // every all-reduce, by its set of nodes
	groups   map[string][][]string // pair, rack and module runs, by step
	index    map[string]int        // the inventory's order
	byData   map[*byte]*output     // by its data's first byte, for the parsers
}

// output is one recorded output as the ladder gets it.
type output struct {
	entry *Entry
	path  string
	data  []byte
	bad   bool // its file does not read (the error says why)
	// what its parser read (with its tool's exit code 0): the ladder
	// gets these rather than parsing the file again
	diag *ingest.Diag
	gpus []ingest.GPUTelemetry
	nccl *ingest.NCCLRun
}

var _ burnin.Recording = (*Recording)(nil)

// Grade reads the burn-in recorded in dir for the inventory's nodes and
// grades it with burn-in's own ladder and analysis (burnin.Run); the
// site's manifest is kept with the outputs as recorded/manifest.json.
// The nodes graded are those the manifest names. A bad input is an
// error (*BadInput), and nothing is graded.
func Grade(ctx context.Context, dir string, inventory []burnin.Node, cfg burnin.Config) (*burnin.Result, error) {
	cfg, err := cfg.WithDefaults()
	if err != nil {
		return nil, err
	}
	rec, err := Load(dir, inventory, cfg)
	if err != nil {
		return nil, err
	}
	cfg.Vendor = rec.vendor(cfg.Vendor)
	res, err := burnin.Run(ctx, rec.Nodes(), rec, cfg)
	if err != nil {
		return nil, err
	}
	res.Files = append(res.Files, burnin.File{Name: "recorded/" + ManifestFile, Data: rec.manifest})
	return res, nil
}

// Load reads dir's manifest and every output it names, and checks
// them: each entry's step, kind and nodes (every one in the inventory),
// its file (inside dir, present, readable by its tool's parser when the
// tool exited 0, the all-reduce at cfg.Size and on the nodes the
// manifest names), no output recorded twice, and every node's
// diagnostic, telemetry and single-node all-reduce present. cfg's Size,
// GPUs and Vendor must be set (burnin.Config.WithDefaults).
func Load(dir string, inventory []burnin.Node, cfg burnin.Config) (*Recording, error) {
	mpath := filepath.Join(dir, ManifestFile)
	m, raw, err := readManifest(mpath)
	if err != nil {
		return nil, err
	}
	if len(m.Entries) == 0 {
		return nil, fmt.Errorf("%s: no entries: nothing recorded to grade", mpath)
	}
	l := &loader{cfg: cfg, mpath: mpath, index: map[string]int{}, byName: map[string]burnin.Node{}}
	for i, n := range inventory {
		l.index[n.Name], l.byName[n.Name] = i, n
	}
	rec := &Recording{dir: dir, manifest: raw, perNode: map[string]*output{}, byNodes: map[string]*output{}, groups: map[string][][]string{}, index: l.index,
		byData: map[*byte]*output{}}
	outs := make([]*output, len(m.Entries))
	for i := range m.Entries {
		outs[i] = l.entry(dir, &m.Entries[i])
	}
	l.read(outs)
	for _, o := range outs {
		if o != nil && !o.bad {
			l.file(rec, o)
		}
	}
	if len(l.bad) == 0 { // else an entry missing may be one that did not read
		l.complete(rec, outs)
	}
	l.gpus(outs)
	if len(l.bad) > 0 {
		return nil, &BadInput{Errs: l.bad}
	}
	return rec, nil
}

// BadInput is every bad input Load found, each naming its file and,
// where there is one, its line.
type BadInput struct{ Errs []error }

// maxShown bounds the errors Error lists.
const maxShown = 20

func (b *BadInput) Error() string {
	var s strings.Builder
	fmt.Fprintf(&s, "the recorded burn-in does not read (%d bad input(s)); nothing was graded:", len(b.Errs))
	for _, e := range b.Errs[:min(maxShown, len(b.Errs))] {
		s.WriteString("\n  " + e.Error())
	}
	if len(b.Errs) > maxShown {
		fmt.Fprintf(&s, "\n  and %d more", len(b.Errs)-maxShown)
	}
	return s.String()
}

// Unwrap returns the errors.
func (b *BadInput) Unwrap() []error { return b.Errs }

// loader collects what Load finds wrong.
type loader struct {
	cfg    burnin.Config
	mpath  string
	index  map[string]int // inventory order
	byName map[string]burnin.Node
	bad    []error
}

func (l *loader) errf(e *Entry, format string, args ...any) {
	l.bad = append(l.bad, fmt.Errorf("%s:%d: %s (%s): %s", l.mpath, e.Line, e.File, e.Step, fmt.Sprintf(format, args...)))
}

// entry checks an entry's step, kind, nodes and file name, and returns
// its output (nil when it is bad), its nodes expanded and put in
// inventory order.
func (l *loader) entry(dir string, e *Entry) *output {
	st, ok := steps[e.Step]
	switch {
	case e.File == "":
		l.errf(e, "no file")
		return nil
	case !filepath.IsLocal(e.File):
		l.errf(e, "the file must be a relative path inside %s", dir)
		return nil
	case !ok:
		l.errf(e, "unknown step %q (%s)", e.Step, strings.Join(slices.Sorted(maps.Keys(steps)), ", "))
		return nil
	case e.Kind != "" && e.Kind != st.kind:
		l.errf(e, "kind %q, but step %s is %s output", e.Kind, e.Step, st.kind)
		return nil
	}
	e.Kind = st.kind
	nodes, err := l.nodes(e)
	if err != nil {
		l.errf(e, "%v", err)
		return nil
	}
	if len(nodes) < st.min || (st.max > 0 && len(nodes) > st.max) {
		l.errf(e, "%d node(s) for step %s, which runs on %s", len(nodes), e.Step, count(st))
		return nil
	}
	if err := l.placed(e.Step, nodes); err != nil {
		l.errf(e, "%v", err)
		return nil
	}
	e.Nodes = nodes
	return &output{entry: e, path: filepath.Join(dir, e.File)}
}

// nodes expands an entry's host lists: every node once, each in the
// inventory, in inventory order.
func (l *loader) nodes(e *Entry) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, expr := range e.Nodes {
		names, err := hostlist.Expand(expr)
		if err != nil {
			return nil, err
		}
		for _, n := range names {
			if _, ok := l.byName[n]; !ok {
				return nil, fmt.Errorf("node %s is not in the inventory%s", n, l.modules())
			}
			if seen[n] {
				return nil, fmt.Errorf("node %s listed twice", n)
			}
			seen[n] = true
			out = append(out, n)
		}
	}
	sort.Slice(out, func(i, j int) bool { return l.index[out[i]] < l.index[out[j]] })
	return out, nil
}

// modules names the inventory's modules, for messages.
func (l *loader) modules() string {
	set := map[string]bool{}
	for _, n := range l.byName {
		set[n.Module] = true
	}
	if len(set) == 0 {
		return ""
	}
	return " (module " + strings.Join(slices.Sorted(maps.Keys(set)), ", ") + ")"
}

// placed checks where a group's nodes sit: a pair's and a rack's in
// one rack, a module's in one module across racks.
func (l *loader) placed(step string, nodes []string) error {
	racks, modules := map[string]bool{}, map[string]bool{}
	for _, n := range nodes {
		racks[l.byName[n].Rack], modules[l.byName[n].Module] = true, true
	}
	switch {
	case (step == StepPair || step == StepRack) && len(racks) > 1:
		return fmt.Errorf("a %s run on nodes of racks %s: a pair's or a rack's nodes share one rack (record it as module or bisect)", step, strings.Join(slices.Sorted(maps.Keys(racks)), ", "))
	case step == StepModule && len(modules) > 1:
		return fmt.Errorf("a module run on nodes of modules %s", strings.Join(slices.Sorted(maps.Keys(modules)), ", "))
	case step == StepModule && len(racks) == 1:
		return fmt.Errorf("a module run within one rack: record it as rack")
	}
	return nil
}

// read reads and checks every output's file, in parallel.
func (l *loader) read(outs []*output) {
	errs := make([]error, len(outs))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4*runtime.GOMAXPROCS(0)) // more than the CPUs: opening a file is mostly waiting
	for i, o := range outs {
		if o == nil {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			errs[i] = l.check(o)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			l.errf(outs[i].entry, "%v", err)
			outs[i].bad = true
		}
	}
}

// check reads an output's file and, when its tool exited 0, reads it
// with its tool's parser (a tool that failed is the node's failure, and
// the ladder grades it so).
func (l *loader) check(o *output) error {
	data, err := os.ReadFile(o.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("the manifest names %s, which does not exist", o.path)
	case err != nil:
		return err
	}
	o.data = data
	e := o.entry
	if e.Exit != 0 && e.Kind != KindDCGM {
		return nil
	}
	switch e.Kind {
	case KindDCGM:
		o.diag, err = l.cfg.Vendor.ParseDiag(o.path, data, e.Exit)
		if err != nil && e.Exit != 0 {
			err = nil // dcgmi failed and printed no JSON: the node's failure
		}
	case KindSMI:
		o.gpus, err = l.cfg.Vendor.ParseTelemetry(o.path, data)
	case KindNCCL:
		err = l.nccl(o)
	}
	return err
}

// nccl checks an all-reduce: it reads, it has the row of the fixed
// size, and its ranks ran on the nodes the manifest names.
func (l *loader) nccl(o *output) error {
	run, err := l.cfg.Vendor.ParseCollective(o.path, o.data)
	if err != nil {
		return err
	}
	o.nccl = run
	if _, ok := run.At(l.cfg.Size); !ok {
		sizes := make([]string, len(run.Rows))
		for i, r := range run.Rows {
			sizes[i] = strconv.FormatInt(r.Size, 10)
		}
		return fmt.Errorf("%s: no row of %d bytes, the size graded (the table has %s): grade at a size it ran (sat burnin grade --size)", o.path, l.cfg.Size, strings.Join(sizes, ", "))
	}
	if len(run.Ranks) == 0 {
		return nil // rank lines elided: burnin.Run checks what there is
	}
	named := map[string]bool{}
	for _, n := range o.entry.Nodes {
		named[n] = true
	}
	ran := map[string]bool{}
	for _, rk := range run.Ranks {
		if !named[rk.Host] {
			return fmt.Errorf("%s:%d: rank %d ran on %s, which the manifest does not name for this file (%s)", o.path, rk.Line, rk.Rank, rk.Host, hostlist.Compress(o.entry.Nodes))
		}
		ran[rk.Host] = true
	}
	var idle []string
	for _, n := range o.entry.Nodes {
		if !ran[n] {
			idle = append(idle, n)
		}
	}
	if len(idle) > 0 {
		return fmt.Errorf("%s: no rank ran on %s, which the manifest names for this file", o.path, hostlist.Compress(idle))
	}
	return nil
}

// file files a checked output under its step and nodes; an output
// recorded twice is an error naming both.
func (l *loader) file(rec *Recording, o *output) {
	e := o.entry
	key := strings.Join(e.Nodes, ",")
	index := rec.byNodes
	if e.Kind != KindNCCL {
		key, index = e.Step+" "+e.Nodes[0], rec.perNode
	}
	if prev := index[key]; prev != nil {
		l.errf(e, "recorded twice: %s (line %d) is the same %s on the same nodes: keep one", prev.entry.File, prev.entry.Line, e.Step)
		return
	}
	if e.Step == StepRack || e.Step == StepModule {
		name := l.byName[e.Nodes[0]].Rack
		if e.Step == StepModule {
			name = l.byName[e.Nodes[0]].Module
		}
		for _, g := range rec.groups[e.Step] {
			if l.groupName(e.Step, g) == name {
				l.errf(e, "a second %s run of %s (%s): keep one", e.Step, name, hostlist.Compress(g))
				return
			}
		}
	}
	index[key] = o
	if len(o.data) > 0 {
		rec.byData[&o.data[0]] = o
	}
	if e.Step == StepPair || e.Step == StepRack || e.Step == StepModule {
		rec.groups[e.Step] = append(rec.groups[e.Step], e.Nodes)
	}
}

func (l *loader) groupName(step string, nodes []string) string {
	if step == StepModule {
		return l.byName[nodes[0]].Module
	}
	return l.byName[nodes[0]].Rack
}

// complete checks that every node the manifest names has its
// diagnostic, telemetry and single-node all-reduce listed, and keeps
// those nodes, in inventory order, as the ones graded.
func (l *loader) complete(rec *Recording, outs []*output) {
	first := map[string]*Entry{}
	has := map[string]bool{}
	for _, o := range outs {
		if o == nil {
			continue
		}
		e := o.entry
		for _, n := range e.Nodes {
			if first[n] == nil {
				first[n] = e
			}
		}
		if len(e.Nodes) == 1 {
			has[e.Kind+" "+e.Nodes[0]] = true
		}
	}
	names := slices.Collect(maps.Keys(first))
	sort.Slice(names, func(i, j int) bool { return l.index[names[i]] < l.index[names[j]] })
	for _, n := range names {
		var missing []string
		for _, s := range []string{StepDiag, StepTelemetry, StepSingle} {
			if !has[steps[s].kind+" "+n] {
				missing = append(missing, s)
			}
		}
		if len(missing) > 0 {
			l.errf(first[n], "node %s has no recorded %s: every node graded needs its diag, telemetry and single", n, strings.Join(missing, ", "))
			continue
		}
		rec.nodes = append(rec.nodes, l.byName[n])
	}
}

// gpus checks the GPUs per node against the telemetry: when no table
// lists cfg.GPUs GPUs, the count given is wrong, and every node would
// be held for it.
func (l *loader) gpus(outs []*output) {
	counts := map[int]bool{}
	for _, o := range outs {
		if o != nil && !o.bad && o.entry.Kind == KindSMI && o.entry.Exit == 0 {
			counts[len(o.gpus)] = true
		}
	}
	if len(counts) > 0 && !counts[l.cfg.GPUs] {
		var seen []string
		for _, c := range slices.Sorted(maps.Keys(counts)) {
			seen = append(seen, strconv.Itoa(c))
		}
		l.bad = append(l.bad, fmt.Errorf("%s: %d GPUs per node given, but no nvidia-smi table lists that many (they list %s): give the nodes' GPU count (sat burnin grade --gpus)",
			l.mpath, l.cfg.GPUs, strings.Join(seen, ", ")))
	}
}

// vendor is v whose parsers answer with what Load read from the same
// bytes (the ladder is handed the recorded bytes themselves): each
// output is parsed once, and the parse's file is the recorded file.
func (r *Recording) vendor(v burnin.Vendor) burnin.Vendor {
	w := v
	w.ParseDiag = func(file string, out []byte, exit int) (*ingest.Diag, error) {
		if o := r.parsed(out); o != nil && o.diag != nil && o.entry.Exit == exit {
			return o.diag, nil
		}
		return v.ParseDiag(file, out, exit)
	}
	w.ParseTelemetry = func(file string, out []byte) ([]ingest.GPUTelemetry, error) {
		if o := r.parsed(out); o != nil && o.gpus != nil {
			return o.gpus, nil
		}
		return v.ParseTelemetry(file, out)
	}
	w.ParseCollective = func(file string, out []byte) (*ingest.NCCLRun, error) {
		if o := r.parsed(out); o != nil && o.nccl != nil {
			return o.nccl, nil
		}
		return v.ParseCollective(file, out)
	}
	return w
}

// parsed is the output whose recorded bytes out is.
func (r *Recording) parsed(out []byte) *output {
	if len(out) == 0 {
		return nil
	}
	o := r.byData[&out[0]]
	if o == nil || len(o.data) != len(out) {
		return nil
	}
	return o
}

// Nodes are the nodes graded: those the manifest names, in inventory
// order.
func (r *Recording) Nodes() []burnin.Node { return r.nodes }

// Describe names the recording.
func (r *Recording) Describe() string { return "the outputs recorded in " + r.dir }

// Run answers a job with its recorded output and exit code.
func (r *Recording) Run(_ context.Context, j burnin.Job) burnin.Output {
	o := r.find(j)
	if o == nil {
		return burnin.Output{Err: fmt.Errorf("no recorded output of %s on %s in %s", j.Step, hostlist.Compress(j.Nodes), r.dir)}
	}
	return burnin.Output{Stdout: o.data, Exit: o.entry.Exit}
}

// Has reports whether j's output is recorded: a diagnostic or telemetry
// by its node, an all-reduce of any step by its set of nodes (a
// bisection's half of one node is answered by its single-node run, of
// two by their pair's).
func (r *Recording) Has(j burnin.Job) bool { return r.find(j) != nil }

// Groups are the pair, rack and module runs recorded, in manifest order.
func (r *Recording) Groups(scope string) [][]string { return r.groups[scope] }

func (r *Recording) find(j burnin.Job) *output {
	if j.Step == StepDiag || j.Step == StepTelemetry {
		if len(j.Nodes) != 1 {
			return nil
		}
		return r.perNode[j.Step+" "+j.Nodes[0]]
	}
	return r.byNodes[strings.Join(r.ordered(j.Nodes), ",")]
}

// ordered puts nodes in inventory order, as the entries' keys are.
func (r *Recording) ordered(nodes []string) []string {
	if len(nodes) < 2 {
		return nodes
	}
	out := slices.Clone(nodes)
	sort.Slice(out, func(i, j int) bool { return r.index[out[i]] < r.index[out[j]] })
	return out
}

func count(s step) string {
	switch {
	case s.max == 0:
		return fmt.Sprintf("at least %d", s.min)
	case s.min == s.max:
		return strconv.Itoa(s.min)
	}
	return fmt.Sprintf("%d to %d", s.min, s.max)
}
