package report

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/grade"
	"github.com/seamdc/seam/internal/plan"
)

// The lower axis shows what each bank was commanded, rebuilt from the
// plan's steps and the times they ran: the title's "620 kW–2.08 MW on
// lb-ma" is the dashed line, not the per-feed power below it.
func TestCommandedSetpoint(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	kw := plan.F
	pc := &plan.Case{Steps: []plan.Step{
		{ID: "start", Op: plan.OpSetLoad, LoadBank: "lb-ma", KW: kw(0)},
		{ID: "ramp", Op: plan.OpRamp, LoadBank: "lb-ma", FromKW: kw(0), KW: kw(620)},
		{ID: "square", Op: plan.OpSquareWave, LoadBank: "lb-ma", LowKW: kw(620), HighKW: kw(2080)},
		{ID: "hold", Op: plan.OpHold},
	}}
	tl := grade.Timeline{Start: t0, End: at(20), Steps: []grade.Span{
		{Step: "start", Op: plan.OpSetLoad, Start: at(0), End: at(0)},
		{Step: "ramp", Op: plan.OpRamp, Start: at(0), End: at(6)},
		{Step: "square", Op: plan.OpSquareWave, Start: at(6), End: at(14), Edges: []time.Time{at(6), at(10)}},
		{Step: "hold", Op: plan.OpHold, Start: at(14), End: at(20)},
	}}
	p := &plotState{tl: tl}
	got := p.commanded(pc)
	require.Len(t, got, 1)
	assert.Equal(t, "commanded lb-ma setpoint", got[0].Label)
	want := []Point{{0, 0}, {0, 0}, {0, 0}, {0, 0}, {6, 620}, {6, 620}, {6, 620}, {6, 620}, {6, 2080}, {10, 2080}, {10, 620}, {20, 620}}
	assert.Equal(t, want, got[0].Points)
}

// Labels of marks close in time go on different rows; a mark far from
// the others goes back to the first row; a mark near the right edge has
// its label end at its line.
func TestMarkRowsDoNotOverlap(t *testing.T) {
	marks := []Mark{{At: 10, Label: "inject leak on cdu-2"}, {At: 10.5, Label: "guarantee alarm +0.55 s"}, {At: 11, Label: "restore"}, {At: 50, Label: "far away"}, {At: 59, Label: "near the end"}}
	got := placeLabels(marks, 60, 50, 500)
	var rows []int
	for _, lb := range got {
		rows = append(rows, lb.Row)
	}
	assert.Equal(t, []int{0, 1, 2, 0, 1}, rows)
	assert.True(t, got[4].Right, "the last label is drawn to the left of its line")
	assert.LessOrEqual(t, got[4].X1, 500.0)
	for i := range got {
		for j := range got[:i] {
			if got[i].Row == got[j].Row {
				assert.True(t, got[i].X0 >= got[j].X1 || got[j].X0 >= got[i].X1, "%q and %q share a row and overlap", got[i].Label, got[j].Label)
			}
		}
	}
}

// A case's reason does not repeat what its checks' rows say.
func TestUnsaid(t *testing.T) {
	checks := []Check{{ID: "guarantee-max-deviation", Detail: "cannot grade: step step-up did not run"}}
	reason := "step ramp-load (ramp): the load bank was zeroed\nguarantee-max-deviation: cannot grade: step step-up did not run"
	assert.Equal(t, "step ramp-load (ramp): the load bank was zeroed", unsaid(reason, checks))
	assert.Equal(t, "", unsaid("", checks))
}

// A gap in the samples that made a check an ERROR is marked on the
// plot where it starts, in the axis's time since the case started.
func TestGapIsMarked(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	gapAt := t0.Add(12 * time.Second)
	p := &plotState{channel: "p1/ma/voltage", tl: grade.Timeline{Start: t0, End: t0.Add(time.Minute)}}
	d := &PlotData{}
	k := plan.Check{ID: "guarantee-in-band", Kind: plan.InBand, Side: plan.Guarantee, Channel: "p1/ma/voltage", Min: plan.F(400), Max: plan.F(430)}
	p.decorate(d, k, grade.Verdict{Outcome: grade.Error, At: &gapAt, Detail: "no good sample for 4s from +12.000 s (the check needs one at least every 2s)"})
	require.Len(t, d.Marks, 1)
	assert.Equal(t, Mark{At: 12, Label: "guarantee: gap in the samples", Failed: true}, d.Marks[0])
}
