package burnin

import (
	"bufio"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
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
	// Baselines is the directory each node's baseline is written to,
	// as NODE.json, while the journal is written ("": none written).
	Baselines string
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
// `sat verify` checks it as it checks a SAT run. Each node's baseline
// (lifecycle's seam.baseline/v1, linked to its tray's serial, naming
// the bundle; the journal holds its digest) is written to
// opt.Baselines, where the gate reads it; WriteBundle returns the
// files by node.
//
// 10,000 nodes make a bundle of about 220 MB. Its files are streamed,
// never held whole, and each node is encoded once, for its journal
// record and burnin.json alike: in a fresh process each megabyte held
// is a megabyte of pages the kernel must hand over.
func WriteBundle(dir string, res *Result, opt BundleOptions) (*evidence.Manifest, map[string]string, error) {
	c := opt.Clock
	if c == nil {
		c = clock.Real{}
	}
	b, err := evidence.Create(dir, c, opt.Evidence)
	if err != nil {
		return nil, nil, err
	}
	fail := func(err error) (*evidence.Manifest, map[string]string, error) {
		_ = b.Close()
		return nil, nil, fmt.Errorf("burn-in evidence in %s: %w", dir, err)
	}
	taken := opt.Taken
	if taken.IsZero() {
		taken = c.Now().UTC()
	}
	nodes, err := encodeNodes(res.Nodes, opt.Tool, taken, b.ID())
	if err != nil {
		return fail(err)
	}
	// 10,000 files: written while the rest is
	written := make(chan written, 1)
	go func() { written <- writeBaselines(opt.Baselines, nodes) }()
	rawDigest, err := writeFiles(b, res, nodes)
	files := <-written
	if err := cmp.Or(err, files.err); err != nil {
		return fail(err)
	}
	outcome := "passed"
	if !res.Passed() {
		outcome = "failed"
	}
	m, err := b.Finish(evidence.Meta{ToolVersion: opt.Tool, PlanDigest: rawDigest, Outcome: outcome})
	if err != nil {
		return nil, nil, fmt.Errorf("burn-in evidence in %s: %w", dir, err)
	}
	return m, files.files, nil
}

// writeFiles writes the bundle's files and records: raw.jsonl, a
// record per collective, the facility's, one per node, baselines.json
// and burnin.json. It returns raw.jsonl's digest.
func writeFiles(b *evidence.Bundle, res *Result, nodes []encodedNode) (string, error) {
	rawDigest, err := b.WriteFileFrom(RawFile, func(w io.Writer) error { return writeRaw(w, res.Files) })
	if err != nil {
		return "", err
	}
	for _, g := range res.Groups {
		if _, err := b.Append(KindGroup, "", g); err != nil {
			return "", err
		}
	}
	if res.Facility != nil || res.FacilityError != "" {
		if _, err := b.Append(KindFacility, "", map[string]any{"result": res.Facility, "error": res.FacilityError}); err != nil {
			return "", err
		}
	}
	all := make([]*lifecycle.Baseline, len(nodes))
	for i, n := range nodes {
		if _, err := b.Append(KindNode, n.name, n.record()); err != nil {
			return "", err
		}
		all[i] = n.parsed
	}
	if _, err := b.WriteFileFrom(BaselineFile, func(w io.Writer) error { return json.NewEncoder(w).Encode(all) }); err != nil {
		return "", err
	}
	_, err = b.WriteFileFrom(ResultFile, func(w io.Writer) error { return writeResult(w, res, nodes) })
	return rawDigest, err
}

// writeRaw writes raw.jsonl: a RawOutput line per file.
func writeRaw(w io.Writer, files []File) error {
	enc := json.NewEncoder(w)
	for _, f := range files {
		if err := enc.Encode(RawOutput{Name: f.Name, Stdout: string(f.Data)}); err != nil {
			return fmt.Errorf("%s: %w", f.Name, err)
		}
	}
	return nil
}

// encodedNode is a node encoded for the bundle: its result's JSON and
// its baseline file's bytes.
type encodedNode struct {
	name     string
	result   []byte
	baseline []byte
	parsed   *lifecycle.Baseline
}

// record is the node's burnin_node record: the result and its
// baseline's digest (NodeRecord's JSON).
func (n encodedNode) record() json.RawMessage {
	digest := `,"baseline_digest":"` + evidence.Digest(n.baseline) + `"}`
	return append(n.result[:len(n.result)-1:len(n.result)-1], digest...)
}

// encodeNodes encodes every node, several at once.
func encodeNodes(nodes []*NodeResult, tool string, taken time.Time, bundle string) ([]encodedNode, error) {
	out := make([]encodedNode, len(nodes))
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	workers := runtime.GOMAXPROCS(0)
	for w := range workers {
		wg.Go(func() {
			for i := w; i < len(nodes); i += workers {
				out[i], errs[i] = encodeNode(nodes[i], tool, taken, bundle)
			}
		})
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

func encodeNode(n *NodeResult, tool string, taken time.Time, bundle string) (encodedNode, error) {
	bl := Baseline(n, tool, taken)
	bl.Evidence = bundle
	data, err := json.MarshalIndent(bl, "", "  ")
	if err != nil {
		return encodedNode{}, fmt.Errorf("baseline of %s: %w", n.Name, err)
	}
	result, err := json.Marshal(n)
	if err != nil {
		return encodedNode{}, fmt.Errorf("result of %s: %w", n.Name, err)
	}
	return encodedNode{name: n.Name, result: result, baseline: append(data, '\n'), parsed: bl}, nil
}

// writeResult writes burnin.json, compact as the journal is (indented,
// 10,000 nodes made 105 MB): the Result, its nodes as encodeNodes
// encoded them.
func writeResult(w io.Writer, res *Result, nodes []encodedNode) error {
	rest, err := json.Marshal(struct {
		Groups        []*Group        `json:"groups"`
		Analysis      Analysis        `json:"analysis"`
		Facility      *FacilityResult `json:"facility,omitempty"`
		FacilityError string          `json:"facility_error,omitempty"`
	}{res.Groups, res.Analysis, res.Facility, res.FacilityError})
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, `{"size":%d,"gpus_per_node":%d,"nodes":[`, res.Size, res.GPUs)
	for i, n := range nodes {
		if i > 0 {
			bw.WriteByte(',')
		}
		bw.Write(n.result)
	}
	bw.WriteString("],")
	bw.Write(rest[1:])
	bw.WriteByte('\n')
	return bw.Flush()
}

// written are the baseline files, or why they are not.
type written struct {
	files map[string]string
	err   error
}

// writeBaselines writes each node's baseline as dir/NODE.json and
// returns the files by node.
func writeBaselines(dir string, nodes []encodedNode) written {
	if dir == "" {
		return written{}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return written{err: err}
	}
	files := make(map[string]string, len(nodes))
	for _, n := range nodes {
		files[n.name] = filepath.Join(dir, n.name+".json")
	}
	// one at a time: creating files in one directory in parallel
	// contends for it, and took twice the CPU for no less time
	for _, n := range nodes {
		if err := os.WriteFile(files[n.name], n.baseline, 0o644); err != nil {
			return written{err: fmt.Errorf("baseline of %s: %w", n.name, err)}
		}
	}
	return written{files: files}
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
