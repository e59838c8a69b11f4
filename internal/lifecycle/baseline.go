package lifecycle

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"time"
)

// BaselineFormat is the burn-in baseline's format.
const BaselineFormat = "seam.baseline/v1"

// Baseline is a node's burn-in baseline: what moves it from
// commissioned to provisioned. sat burnin writes one per node; anything
// else may, in this format (docs/lifecycle.md):
//
//	{"format": "seam.baseline/v1", "node": "gpu-a-r01-n01",
//	 "serial": "SN-COMPUTE-0000001", "taken": "2026-11-02T10:00:00Z",
//	 "tool": "sat burnin 0.2.0", "passed": true,
//	 "metrics": {"gpu_count": 4, "nccl_allreduce_busbw_gbps": 812.4}}
type Baseline struct {
	Format string `json:"format"`
	// Node is the node's key or one of its names (Slurm, Kubernetes,
	// BMC).
	Node string `json:"node"`
	// Serial is the serial of the node's tray the baseline was taken
	// on: a baseline of the tray before an RMA swap does not count.
	Serial string    `json:"serial"`
	Taken  time.Time `json:"taken"`
	Tool   string    `json:"tool"`
	Passed bool      `json:"passed"`
	// Metrics are the figures a later burn-in is compared with, each
	// name carrying its unit (…_gbps, …_tflops, …_w, …_c).
	Metrics map[string]float64 `json:"metrics"`
	// Evidence names the evidence the figures come from, if any (a
	// bundle's directory or digest).
	Evidence string `json:"evidence,omitempty"`
}

// ReadBaseline reads a baseline file strictly and returns it with the
// sha256 of its bytes.
func ReadBaseline(path string) (*Baseline, string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, "", fmt.Errorf("baseline: %w", err)
	}
	b, err := ParseBaseline(raw)
	if err != nil {
		return nil, "", fmt.Errorf("baseline %s: %w", path, err)
	}
	sum := sha256.Sum256(raw)
	return b, "sha256:" + hex.EncodeToString(sum[:]), nil
}

// ParseBaseline reads a baseline's bytes strictly.
func ParseBaseline(raw []byte) (*Baseline, error) {
	var b Baseline
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		return nil, fmt.Errorf("not a baseline: %w (docs/lifecycle.md describes the format)", err)
	}
	switch {
	case b.Format != BaselineFormat:
		return nil, fmt.Errorf("format %q, want %q", b.Format, BaselineFormat)
	case b.Node == "":
		return nil, fmt.Errorf("no node")
	case b.Serial == "":
		return nil, fmt.Errorf("no serial: a baseline names the tray it was taken on")
	case b.Taken.IsZero():
		return nil, fmt.Errorf("no time taken")
	case len(b.Metrics) == 0:
		return nil, fmt.Errorf("no metrics: a baseline is the figures later burn-ins compare with")
	}
	for k, v := range b.Metrics {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("metric %s is %v", k, v)
		}
	}
	return &b, nil
}

// WriteBaseline writes a baseline file (indented, a final newline).
func WriteBaseline(path string, b *Baseline) error {
	if b.Format == "" {
		b.Format = BaselineFormat
	}
	raw, err := json.MarshalIndent(b, "", "  ")
	if err != nil {
		return err
	}
	if _, err := ParseBaseline(raw); err != nil {
		return fmt.Errorf("baseline of %s: %w", b.Node, err)
	}
	return os.WriteFile(path, append(raw, '\n'), 0o644)
}
