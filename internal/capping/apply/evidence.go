package apply

import (
	"fmt"

	"github.com/seamdc/seam/internal/clock"
	"github.com/seamdc/seam/internal/evidence"
)

// Record kinds of a caps evidence bundle: one record a BMC.
const (
	KindApply = "cap.apply"
	KindClear = "cap.clear"
	KindRead  = "cap.read"
)

// CapsFile is the name the caps file has in the bundle.
const CapsFile = "caps.json"

// Evidence writes a run of caps as an evidence bundle in dir (which
// must be new): the caps file as read, one record a BMC (what it had,
// what was written, what it reads back, or its error), and the
// manifest; sealed when signer is not nil. Its outcome is passed when
// every BMC took its cap.
func Evidence(dir string, clk clock.Clock, signer evidence.Signer, by, tool string, op Op, caps []byte, results []Result) (*evidence.Manifest, error) {
	b, err := evidence.Create(dir, clk, evidence.Options{Signer: signer, By: by})
	if err != nil {
		return nil, err
	}
	if err := b.WriteFile(CapsFile, caps); err != nil {
		_ = b.Close()
		return nil, err
	}
	kind := map[Op]string{Apply: KindApply, Clear: KindClear, Read: KindRead}[op]
	outcome := "passed"
	for _, r := range results {
		if r.Err != nil {
			outcome = "failed"
		}
		if _, err := b.Append(kind, "", r); err != nil {
			_ = b.Close()
			return nil, fmt.Errorf("evidence: %w", err)
		}
	}
	return b.Finish(evidence.Meta{ToolVersion: tool, PlanDigest: evidence.Digest(caps), Outcome: outcome})
}
