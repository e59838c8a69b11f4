package report

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/evidence"
	"github.com/seamdc/seam/internal/grade"
	"github.com/seamdc/seam/internal/plan"
)

const itcMaskReason = "sat: the require ITIC mask is not graded: its shortest segment (20 ms) needs waveform capture; the plan grades the maximum deviation and recovery"

func TestCoverageWithCaptures(t *testing.T) {
	p := &plan.Plan{Coverage: []plan.Coverage{
		{Clause: "a", Status: plan.Partial, Cases: []string{"sat.a"}, Reasons: []string{itcMaskReason}},
		{Clause: "b", Status: plan.Partial, Cases: []string{"sat.b"}, Reasons: []string{itcMaskReason, "sat: the square wave is shortened"}},
		{Clause: "c", Status: plan.Partial, Cases: []string{"sat.c"}, Reasons: []string{itcMaskReason}},
		{Clause: "d", Status: plan.Partial, Cases: []string{"sat.d"}, Reasons: []string{strings.Replace(itcMaskReason, "ITIC", "custom", 1)}},
		{Clause: "e", Status: plan.Partial, Cases: []string{"sat.e"}, Reasons: []string{itcMaskReason}},
	}}
	caps := []Capture{
		{Case: "sat.a", File: "a.cfg", Mask: "ITIC", Rate: 1000, Verdict: Pass},
		{Case: "sat.b", File: "b.cfg", Mask: "ITIC", Rate: 1000, Verdict: Pass},
		{Case: "sat.c", File: "c.cfg", Mask: "ITIC", Rate: 1000, Verdict: Fail},
		{Case: "sat.d", File: "d.cfg", Mask: "ITIC", Rate: 1000, Verdict: Pass}, // not the mask the contract names
	}
	rows := coverageRows(p, caps)
	require.Len(t, rows, 5)
	assert.Equal(t, plan.Full, rows[0].Status, "the mask was the only reason")
	assert.Empty(t, rows[0].Reasons)
	assert.Equal(t, []string{"the ITIC mask, from capture a.cfg of sat.a at 1000 samples/s (PASS)"}, rows[0].Proved)
	assert.Equal(t, plan.Partial, rows[1].Status, "another reason is left")
	assert.Equal(t, []string{"sat: the square wave is shortened"}, rows[1].Reasons)
	assert.Equal(t, plan.Partial, rows[2].Status, "a failed capture proves nothing")
	assert.Equal(t, []string{itcMaskReason}, rows[2].Reasons)
	assert.Equal(t, []string{"not the ITIC mask: capture c.cfg of sat.c is FAIL"}, rows[2].Proved)
	assert.Equal(t, plan.Partial, rows[3].Status, "an ITIC capture does not prove a custom mask")
	assert.Equal(t, plan.Partial, rows[4].Status, "no capture")
	assert.Empty(t, rows[4].Proved)
}

// The plot shows the RMS in % over the capture, the mask from the
// aligned edge, clipped to the capture.
func TestCapturePlot(t *testing.T) {
	t0 := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	var rms []grade.RMSPoint
	for k := 0; k <= 300; k++ {
		rms = append(rms, grade.RMSPoint{Time: t0.Add(time.Duration(k) * 10 * time.Millisecond), Pct: 100})
	}
	c := &evidence.AuditCapture{CaptureRecord: evidence.CaptureRecord{Channel: "VAB", Mask: "ITIC"},
		Result: grade.CaptureResult{RMS: rms, Mask: []grade.MaskPoint{{DurationS: 0.02, MinPct: 0, MaxPct: 120}, {DurationS: 0.5, MinPct: 70, MaxPct: 120}, {DurationS: 10, MinPct: 80, MaxPct: 110}, {DurationS: 1e9, MinPct: 90, MaxPct: 110}},
			Align:   grade.Alignment{Edge: t0.Add(time.Second), OffsetS: -1.3},
			Verdict: grade.Verdict{Outcome: grade.Pass}}}
	d := capturePlot(c)
	assert.Len(t, d.Measured, 301)
	assert.InDelta(t, 3.0, d.Duration, 1e-9)
	require.Len(t, d.Bands, 4, "the steady band before the edge, then 3 mask points inside the capture")
	assert.Equal(t, Band{Label: "ITIC steady band", From: 0, To: 1, Lo: 90, Hi: 110}, d.Bands[0])
	assert.InDelta(t, 1.02, d.Bands[1].To, 1e-9)
	assert.InDelta(t, 1.5, d.Bands[2].To, 1e-9)
	assert.InDelta(t, 3.0, d.Bands[3].To, 1e-9, "clipped to the capture")
	assert.Equal(t, "commanded edge (capture -1.300 s)", d.Marks[0].Label)
	svg, err := d.SVG()
	require.NoError(t, err)
	assert.Contains(t, string(svg), "time since the capture")
}
