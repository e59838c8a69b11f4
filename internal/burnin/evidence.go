package burnin

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/seamdc/seam/internal/clock"
	"github.com/seamdc/seam/internal/evidence"
	"github.com/seamdc/seam/internal/lifecycle"
)

// Journal record kinds a burn-in bundle adds to the evidence format's.
const (
	KindNode  = "burnin_node"  // one node's measures, problems, flags, verdict (case: the node)
	KindGroup = "burnin_group" // one collective: scope, members, busbw
	// KindFacility is the module-wide step's grade against the
	// boundaries' transient clauses.
	KindFacility = "burnin_facility"
)

// Files of a burn-in bundle, besides the evidence package's own.
const (
	ResultFile   = "burnin.json"    // the Result
	RawFile      = "raw.jsonl"      // every tool output as printed: {"name", "stdout"} a line
	BaselineFile = "baselines.json" // every node's seam.baseline/v1, in node order
)

// BundleOptions say how the bundle is signed and what it names.
type BundleOptions struct {
	Evidence evidence.Options
	Tool     string // "sat burnin 0.3.0"
	Clock    clock.Clock
	// Taken is when the baselines were taken (default the clock's now).
	Taken time.Time
}

// RawOutput is one line of raw.jsonl.
type RawOutput struct {
	Name   string `json:"name"`
	Stdout string `json:"stdout"`
}

// NodeRecord is a burnin_node record: the node's result and the digest
// of its baseline file's exact bytes, which links the file the gate
// provisions on to this journal.
type NodeRecord struct {
	*NodeResult
	Baseline string `json:"baseline_digest"`
}

// WriteBundle writes the burn-in into a new evidence bundle in dir:
// every raw tool output as printed (raw.jsonl), a record per
// collective and per node in the hash-chained journal, burnin.json and
// baselines.json; then the manifest and, with a signer, its signature.
// `sat verify` checks it as it checks a SAT run. It returns each node's
// baseline (lifecycle's seam.baseline/v1, linked to its tray's serial,
// naming the bundle) as the bytes whose digest the journal holds:
// WriteBaselines writes them where the gate reads them.
func WriteBundle(dir string, res *Result, opt BundleOptions) (*evidence.Manifest, map[string][]byte, error) {
	c := opt.Clock
	if c == nil {
		c = clock.Real{}
	}
	b, err := evidence.Create(dir, c, opt.Evidence)
	if err != nil {
		return nil, nil, err
	}
	fail := func(err error) (*evidence.Manifest, map[string][]byte, error) {
		_ = b.Close()
		return nil, nil, fmt.Errorf("burn-in evidence in %s: %w", dir, err)
	}
	// burnin.json, the largest file (10,000 nodes: about 100 MB), is
	// encoded while the journal is written
	result := make(chan encoded, 1)
	go func() { result <- indented(res) }()
	var raw bytes.Buffer
	size := 0
	for _, f := range res.Files {
		size += len(f.Name) + len(f.Data) + 32
	}
	raw.Grow(size + size/8) // JSON escapes each newline: 10,000 nodes' outputs are hundreds of MB
	enc := json.NewEncoder(&raw)
	for _, f := range res.Files {
		if err := enc.Encode(RawOutput{Name: f.Name, Stdout: string(f.Data)}); err != nil {
			return fail(err)
		}
	}
	if err := b.WriteFile(RawFile, raw.Bytes()); err != nil {
		return fail(err)
	}
	for _, g := range res.Groups {
		if _, err := b.Append(KindGroup, "", g); err != nil {
			return fail(err)
		}
	}
	if res.Facility != nil || res.FacilityError != "" {
		if _, err := b.Append(KindFacility, "", map[string]any{"result": res.Facility, "error": res.FacilityError}); err != nil {
			return fail(err)
		}
	}
	taken := opt.Taken
	if taken.IsZero() {
		taken = c.Now().UTC()
	}
	files := map[string][]byte{}
	var all []*lifecycle.Baseline
	outcome := "passed"
	if !res.Passed() {
		outcome = "failed"
	}
	for _, n := range res.Nodes {
		bl := Baseline(n, opt.Tool, taken)
		bl.Evidence = b.ID()
		data, err := json.MarshalIndent(bl, "", "  ")
		if err != nil {
			return fail(err)
		}
		data = append(data, '\n')
		if _, err := b.Append(KindNode, n.Name, NodeRecord{NodeResult: n, Baseline: evidence.Digest(data)}); err != nil {
			return fail(err)
		}
		files[n.Name] = data
		all = append(all, bl)
		if !n.Passed {
			outcome = "failed"
		}
	}
	for _, f := range []struct {
		name string
		encoded
	}{{BaselineFile, indented(all)}, {ResultFile, <-result}} {
		if f.err != nil {
			return fail(f.err)
		}
		if err := b.WriteFile(f.name, f.data); err != nil {
			return fail(err)
		}
	}
	m, err := b.Finish(evidence.Meta{ToolVersion: opt.Tool, PlanDigest: evidence.Digest(raw.Bytes()), Outcome: outcome})
	if err != nil {
		return nil, nil, fmt.Errorf("burn-in evidence in %s: %w", dir, err)
	}
	return m, files, nil
}

// encoded is a file's JSON, indented, or why it could not be.
type encoded struct {
	data []byte
	err  error
}

func indented(v any) encoded {
	data, err := json.MarshalIndent(v, "", "  ")
	return encoded{append(data, '\n'), err}
}

// WriteBaselines writes each node's baseline as dir/NODE.json, several
// at once (10,000 nodes are 10,000 files), and returns the files by
// node.
func WriteBaselines(dir string, baselines map[string][]byte) (map[string]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	out := make(map[string]string, len(baselines))
	for node := range baselines {
		out[node] = filepath.Join(dir, node+".json")
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		sem   = make(chan struct{}, 8)
	)
	for node, data := range baselines {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := os.WriteFile(out[node], data, 0o644); err != nil {
				mu.Lock()
				first = cmp.Or(first, fmt.Errorf("baseline of %s: %w", node, err))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if first != nil {
		return nil, first
	}
	return out, nil
}

// Baseline is a node's result as lifecycle's baseline: its measures
// with their units in their names, the GPU count, the verdict.
func Baseline(n *NodeResult, tool string, taken time.Time) *lifecycle.Baseline {
	bl := &lifecycle.Baseline{Format: lifecycle.BaselineFormat, Node: n.Name, Serial: n.Serial, Taken: taken, Tool: tool, Passed: n.Passed,
		Metrics: map[string]float64{"gpu_count": float64(len(n.GPUs))}}
	for k, v := range n.Measures {
		bl.Metrics[baselineMetric(k)] = v
	}
	return bl
}

// baselineMetric names a measure as a baseline metric (lifecycle's
// example: nccl_allreduce_busbw_gbps).
func baselineMetric(m string) string {
	if m == MeasureBusBW {
		return "nccl_allreduce_busbw_gbps"
	}
	return m
}
