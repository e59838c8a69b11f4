package report

import (
	"fmt"
	"math"
	"path"
	"strings"
	"time"

	"github.com/seamdc/seam/internal/evidence"
	"github.com/seamdc/seam/internal/grade"
	"github.com/seamdc/seam/internal/plan"
)

// Capture is a power-quality analyser's waveform capture of a case
// (sat attach --case), aligned on the case's commanded edge and graded
// against its mask by the audit.
type Capture struct {
	Case, File, Channel, Unit, Mask string
	Rate                            float64 // samples per second
	Samples                         int
	Nominal                         float64
	OffsetS                         float64 // the recorder's clock offset the alignment found
	AlignedBy                       string  // trigger or onset
	Edge                            time.Time
	Verdict, Detail                 string
	Plot                            *PlotData // nil when it could not be graded
}

// maxCapturePoints bounds the RMS values a capture's plot draws.
const maxCapturePoints = 4000

// captureViews are the audit's captures, in journal order.
func captureViews(rep *evidence.Report) []Capture {
	var out []Capture
	for _, c := range rep.Captures {
		v := Capture{Case: c.Case, File: path.Base(c.Files[0]), Channel: c.Channel, Unit: c.Unit, Mask: c.Mask, Rate: c.Rate,
			Samples: c.Samples, Nominal: c.Nominal, Verdict: string(c.Result.Verdict.Outcome), Detail: c.Result.Verdict.Detail,
			OffsetS: c.Result.Align.OffsetS, AlignedBy: c.Result.Align.By, Edge: c.Result.Align.Edge}
		if len(c.Result.RMS) > 0 {
			v.Plot = capturePlot(c)
		}
		out = append(out, v)
	}
	return out
}

// capturePlot draws the half-cycle RMS in % of nominal over seconds
// since the capture's first RMS value, with the mask as an envelope
// from the aligned edge: what each duration after the event allows.
func capturePlot(c *evidence.AuditCapture) *PlotData {
	r := c.Result
	t0 := r.RMS[0].Time
	d := &PlotData{Channel: c.Channel + " RMS", Unit: "% of nominal", Samples: len(r.RMS),
		XLabel: "time since the capture's first RMS value, on the run's clock (s)"}
	stride := max(1, len(r.RMS)/maxCapturePoints)
	for i := 0; i < len(r.RMS); i += stride {
		if p := r.RMS[i]; !math.IsNaN(p.Pct) {
			d.Measured = append(d.Measured, Point{T: p.Time.Sub(t0).Seconds(), V: p.Pct})
		} else {
			d.BadQuality++
		}
	}
	d.Duration = r.RMS[len(r.RMS)-1].Time.Sub(t0).Seconds()
	edge := r.Align.Edge.Sub(t0).Seconds()
	failed := r.Verdict.Outcome == grade.Fail
	mask := r.Mask
	steady := mask[len(mask)-1]
	d.Bands = append(d.Bands, Band{Label: fmt.Sprintf("%s steady band", c.Mask), From: 0, To: math.Max(edge, 0), Lo: steady.MinPct, Hi: steady.MaxPct})
	from := 0.0
	for _, p := range mask {
		if edge+from >= d.Duration {
			break
		}
		to := math.Min(edge+p.DurationS, d.Duration)
		d.Bands = append(d.Bands, Band{Label: c.Mask + " mask after the edge", From: edge + from, To: to, Lo: p.MinPct, Hi: p.MaxPct,
			Envelope: true, Failed: failed})
		from = p.DurationS
	}
	d.Marks = append(d.Marks, Mark{At: edge, Label: fmt.Sprintf("commanded edge (capture %+.3f s)", r.Align.OffsetS), Failed: failed})
	return d
}

// CoverageRow is a clause of the plan's coverage table as the evidence
// leaves it: a capture that proved a mask the polling could not grade
// takes that reason away, and a clause with no reason left is full.
type CoverageRow struct {
	Clause, Pos, Status string
	Cases               []string
	Reasons             []string
	// Proved says what captures proved of it ("the ITIC mask, from
	// capture X (PASS)"), or did not (a capture that failed or could
	// not be graded).
	Proved []string
}

// maskReason is how the compiler says a mask needs waveform capture.
const maskReason = "mask is not graded"

// coverageRows is the plan's coverage with the captures' proof.
func coverageRows(p *plan.Plan, caps []Capture) []CoverageRow {
	passed, other := map[string][]Capture{}, map[string][]Capture{}
	for _, c := range caps {
		if c.Verdict == Pass {
			passed[c.Case] = append(passed[c.Case], c)
		} else {
			other[c.Case] = append(other[c.Case], c)
		}
	}
	var out []CoverageRow
	for _, cov := range p.Coverage {
		row := CoverageRow{Clause: cov.Clause, Pos: cov.Pos, Status: cov.Status, Cases: cov.Cases}
		var proof []Capture
		failing := false
		for _, id := range cov.Cases {
			failing = failing || len(other[id]) > 0
			proof = append(proof, passed[id]...)
			for _, c := range other[id] {
				row.Proved = append(row.Proved, fmt.Sprintf("not the %s mask: capture %s of %s is %s", c.Mask, c.File, c.Case, c.Verdict))
			}
		}
		for _, r := range cov.Reasons {
			if strings.Contains(r, maskReason) {
				if c, ok := provedBy(r, proof); ok {
					row.Proved = append(row.Proved, fmt.Sprintf("the %s mask, from capture %s of %s at %g samples/s (PASS)", c.Mask, c.File, c.Case, c.Rate))
					continue
				}
			}
			row.Reasons = append(row.Reasons, r)
		}
		if len(row.Reasons) == 0 && len(proof) > 0 && !failing {
			row.Status = plan.Full
		}
		out = append(out, row)
	}
	return out
}

// provedBy finds a passing capture with the mask the reason names.
func provedBy(reason string, caps []Capture) (Capture, bool) {
	for _, c := range caps {
		if strings.Contains(reason, " "+c.Mask+" mask") {
			return c, true
		}
	}
	return Capture{}, false
}
