package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/evidence"
	"github.com/seamdc/seam/internal/grade"
	"github.com/seamdc/seam/internal/plan"
	"github.com/seamdc/seam/internal/report/reporttest"
)

const poi = "u1/site/power"

// gridPlan is the example's IST plan header with two grid cases written
// by hand: the training pattern at a 2 s period graded for ramp, swing,
// line and band RMS at the POI meter (50 samples/s), and a 0.5 pu dip
// graded for the power restored.
func gridPlan(t testing.TB) (*plan.Plan, []byte) {
	t.Helper()
	base, _ := examplePlan(t, "ist", "")
	p := &plan.Plan{Header: base.Header, LoadBanks: base.LoadBanks, Interlocks: []plan.Interlock{}, Coverage: []plan.Coverage{},
		Sources: map[string]plan.Source{
			`boundaries."u1-site".grid.ramp`:                {Pos: "grid.cue:12:3", Value: "3 MW/s"},
			`boundaries."u1-site".grid.swing`:               {Pos: "grid.cue:13:3", Value: "3 MW"},
			`boundaries."u1-site".grid.oscillation.max`:     {Pos: "grid.cue:15:4", Value: "1 MW"},
			`boundaries."u1-site".grid.oscillation.band`:    {Pos: "grid.cue:16:4", Value: "0.1–20 Hz"},
			`boundaries."u1-site".grid.ride_through.retain`: {Pos: "grid.cue:20:4", Value: "90 %"},
		}}
	p.Header.Module = ""
	sampling := []plan.Sampling{{Channel: poi, MaxPeriodS: 0.02, Reason: "the line band's upper edge, 20 Hz, needs 2.5 × 20 samples/s"}}
	clause := func(name string) plan.ClauseRef {
		return plan.ClauseRef{Path: `boundaries."u1-site".grid.` + name, Pos: "grid.cue:10:2", BoundaryDigest: "sha256:" + strings.Repeat("0", 64)}
	}
	p.Cases = []plan.Case{{
		ID: "ist.u1-site.grid.training-2s", Kind: plan.Grid, Level: plan.IST, Module: "u1", Boundary: "u1-site",
		Title: "the training pattern at a 2 s period, graded at the point of interconnection", Clause: clause("oscillation"),
		Interlocks: []string{}, Preconditions: []plan.Precondition{}, Sides: []string{plan.Require}, Sampling: sampling, EstimatedS: 33,
		Steps: []plan.Step{
			{ID: "idle", Op: plan.OpHold, DurationS: 3, EstimatedS: 3},
			{ID: "train", Op: plan.OpTrain, Driver: plan.DriverFleet, PeriodS: 2, DutyPct: 70, DurationS: 40, EstimatedS: 40},
			{ID: "rest", Op: plan.OpHold, DurationS: 2, EstimatedS: 2},
		},
		Checks: []plan.Check{
			{ID: "ramp-up", Kind: plan.GridRamp, Side: plan.Require, Channel: poi, Unit: "kW", Direction: plan.Up, WindowS: 1, Max: plan.F(3000),
				Steps: []string{"train"}, Sources: []string{`boundaries."u1-site".grid.ramp`}},
			{ID: "swing", Kind: plan.GridSwing, Side: plan.Require, Channel: poi, Unit: "kW", WindowS: 10, Max: plan.F(3000),
				Steps: []string{"train"}, Sources: []string{`boundaries."u1-site".grid.swing`}},
			{ID: "line", Kind: plan.GridLine, Side: plan.Require, Channel: poi, Unit: "kW", BandLowHz: 0.1, BandHighHz: 20, WindowS: 20, Max: plan.F(1000),
				Steps: []string{"train"}, Sources: []string{`boundaries."u1-site".grid.oscillation.max`, `boundaries."u1-site".grid.oscillation.band`}},
			{ID: "band-rms", Kind: plan.GridBandRMS, Side: plan.Require, Channel: poi, Unit: "kW", BandLowHz: 0.1, BandHighHz: 20, WindowS: 20, SegmentS: 10, Max: plan.F(1000),
				Steps: []string{"train"}, Sources: []string{`boundaries."u1-site".grid.oscillation.max`, `boundaries."u1-site".grid.oscillation.band`}},
		},
	}, {
		ID: "ist.u1-site.grid.ride-through", Kind: plan.Grid, Level: plan.IST, Module: "u1", Boundary: "u1-site",
		Title: "a dip to 0.5 pu for 0.3 s from the grid side: power restored", Clause: clause("ride_through"),
		Interlocks: []string{}, Preconditions: []plan.Precondition{}, Sides: []string{plan.Require}, Sampling: sampling, EstimatedS: 20.3,
		Steps: []plan.Step{
			{ID: "before", Op: plan.OpHold, DurationS: 8, EstimatedS: 8},
			{ID: "dip", Op: plan.OpGridDip, Target: "u1", VoltagePU: plan.F(0.5), DurationS: 0.3, EstimatedS: 0.3},
			{ID: "after", Op: plan.OpHold, DurationS: 12, EstimatedS: 12},
		},
		Checks: []plan.Check{
			{ID: "restored", Kind: plan.RestoresWithin, Side: plan.Require, Channel: poi, SharePct: 90, ReferenceS: 5, From: "dip", WithinS: 1, ForS: 10,
				Sources: []string{`boundaries."u1-site".grid.ride_through.retain`}},
		},
	}}
	raw, err := plan.Encode(p)
	require.NoError(t, err)
	p, err = plan.Decode(raw)
	require.NoError(t, err, "the hand-written grid plan must be valid")
	return p, raw
}

var (
	gridMu   sync.Mutex
	gridRuns = map[string]*Run{}
)

// loadGridRun writes and loads (once per defect) a bundle of the grid plan.
func loadGridRun(t *testing.T, defect string) *Run {
	t.Helper()
	gridMu.Lock()
	defer gridMu.Unlock()
	if r, ok := gridRuns[defect]; ok {
		return r
	}
	p, raw := gridPlan(t)
	dir := filepath.Join(t.TempDir(), "grid-"+defect)
	_, err := reporttest.Write(dir, p, raw, reporttest.Options{Defect: defect})
	require.NoError(t, err)
	r, err := Load(dir, Options{Plots: true})
	require.NoError(t, err)
	require.True(t, r.OK(), "integrity %v, mismatches %v", r.Integrity, r.Mismatches)
	gridRuns[defect] = r
	return r
}

// gradesGrid reports whether internal/grade knows the grid kinds yet.
func gradesGrid() bool {
	v := grade.New(plan.Check{ID: "x", Kind: plan.GridSwing}, grade.Timeline{}, grade.Options{}).Verdict()
	return !strings.Contains(v.Detail, "unknown check kind")
}

func gridCase(t *testing.T, r *Run, id string) *GridCase {
	t.Helper()
	for i := range r.Grid {
		if strings.HasSuffix(r.Grid[i].ID, id) {
			return &r.Grid[i]
		}
	}
	t.Fatalf("no grid case %s in %d", id, len(r.Grid))
	return nil
}

// TestGridSection reads bundles of the grid plan, the site healthy and
// without smoothing: each case's plots are there, the spectrum's
// largest line lies under its limit on the healthy site and above it on
// the other, the ramp and swing limits are drawn on their worst windows
// and the ride-through trace shows the dip and the restore threshold.
func TestGridSection(t *testing.T) {
	for _, tt := range []struct {
		defect    string
		lineAbove bool
		verdict   string
	}{
		{"", false, Pass},
		{reporttest.GridOscillation, true, Fail},
	} {
		t.Run("defect="+tt.defect, func(t *testing.T) {
			r := loadGridRun(t, tt.defect)
			require.Len(t, r.Grid, 2)
			tr := gridCase(t, r, "training-2s")
			assert.Equal(t, poi, tr.Channel)
			assert.InDelta(t, 50, tr.Rate, 0.01, "the meter's rate achieved over the train step")
			assert.InDelta(t, 50, tr.Required, 1e-9)
			assert.Equal(t, 2001, tr.Samples, "40 s at 50 samples/s, both ends")
			require.Len(t, tr.Drives, 1)
			assert.Equal(t, GridDrive{Step: "train", Driver: "fleet", PeriodS: 2, DutyPct: 70, DurationS: 40, Start: 3, End: 43, Ran: true}, tr.Drives[0])

			require.NotNil(t, tr.Power, "%v", tr.Problems)
			assert.Equal(t, "MW", tr.Power.Unit, "10 MW of site power is drawn in MW")
			require.Len(t, tr.Power.Bands, 2, "the ramp's and the swing's limits on their worst windows")
			for _, b := range tr.Power.Bands {
				assert.InDelta(t, 3, b.Hi-b.Lo, 1e-9, "a 3 MW limit: %+v", b)
				assert.GreaterOrEqual(t, b.From, 3.0, "inside the train step: %+v", b)
				assert.Equal(t, !tt.lineAbove, b.Loose, "a limit passed by far leaves the axis to the waveform: %+v", b)
			}

			require.NotNil(t, tr.Spectrum, "%v", tr.Problems)
			assert.Empty(t, tr.Problems, "the plots are of the windows and the record graded")
			sp := tr.Spectrum
			assert.Equal(t, 1000, sp.Samples, "a 20 s record at 50 samples/s")
			assert.InDelta(t, 0.05, sp.Lines[0].Freq, 1e-9, "from 1/record")
			assert.InDelta(t, 20, sp.Lines[len(sp.Lines)-1].Freq, 1e-9, "up to rate ÷ 2.5")
			require.Len(t, sp.Bands, 1)
			b := sp.Bands[0]
			assert.InDelta(t, 0.5, b.Largest.Freq, 1e-9, "the pattern's 2 s period")
			assert.InDelta(t, 1, b.Limit, 1e-9, "1 MW")
			assert.Equal(t, tt.lineAbove, b.Largest.Amplitude > b.Limit, "largest line %g MW against %g MW", b.Largest.Amplitude, b.Limit)

			rt := gridCase(t, r, "ride-through")
			assert.Nil(t, rt.Power, "no ramp or swing check")
			assert.Nil(t, rt.Spectrum, "no line check")
			require.NotNil(t, rt.RideThrough)
			require.Len(t, rt.RideThrough.Commanded, 1)
			lowest := math.Inf(1)
			for _, p := range rt.RideThrough.Commanded[0].Points {
				lowest = math.Min(lowest, p.V)
			}
			assert.Equal(t, 0.5, lowest, "the dip drawn to 0.5 pu")
			require.Len(t, rt.RideThrough.Bands, 1)
			assert.InDelta(t, 9, rt.RideThrough.Bands[0].Lo, 1e-6, "90 % of 10 MW")
			assert.InDelta(t, 8.3+1, rt.RideThrough.Bands[0].From, 1e-6, "within_s after the dip ended")

			if !gradesGrid() {
				t.Log("internal/grade does not grade the grid kinds yet: verdicts not asserted")
				return
			}
			assert.Equal(t, tt.verdict, tr.Verdict)
			assert.Equal(t, Pass, rt.Verdict)
		})
	}
}

// TestGridSummaryFiles checks grid-summary.json and grid-summary.csv of
// the failing bundle: a row per check with its limit, value, margin and
// the re-graded verdict, the sampling achieved, what drove the site.
func TestGridSummaryFiles(t *testing.T) {
	r := loadGridRun(t, reporttest.GridOscillation)
	var buf bytes.Buffer
	require.NoError(t, GridSummaryJSON(&buf, r))
	var s GridSummary
	require.NoError(t, json.Unmarshal(buf.Bytes(), &s))
	assert.Equal(t, GridSummaryFormat, s.Format)
	assert.True(t, s.Evidence.Verified)
	assert.NotEmpty(t, s.Evidence.Manifest)
	require.Len(t, s.Cases, 2)
	tr := s.Cases[0]
	assert.Equal(t, "ist.u1-site.grid.training-2s", tr.ID)
	assert.Equal(t, GridMeasurement{Channel: poi, Unit: "kW", Samples: 2001, RateAchieved: 50, RateRequired: 50}, tr.Measurement)
	require.Len(t, tr.Drives, 1)
	assert.Equal(t, "fleet", tr.Drives[0].Driver)
	require.Len(t, tr.Checks, 4)
	line := tr.Checks[2]
	assert.Equal(t, "line", line.ID)
	assert.Equal(t, 0.1, line.BandLowHz)
	assert.Equal(t, 20.0, line.BandHighHz)
	require.NotNil(t, line.Limit)
	assert.Equal(t, 1000.0, *line.Limit)
	assert.Contains(t, line.Method, "Hann")
	require.Len(t, line.Sources, 2)
	assert.Equal(t, "1 MW", line.Sources[0].Value)
	for i, k := range r.Grid[0].Checks {
		assert.Equal(t, k.Verdict, tr.Checks[i].Verdict, "the re-graded verdict of %s", k.ID)
	}
	if gradesGrid() {
		assert.Equal(t, Fail, s.Outcome)
		assert.Equal(t, Fail, line.Verdict)
		require.NotNil(t, line.Measured)
		require.NotNil(t, line.Margin)
		assert.Greater(t, *line.Measured, 1000.0)
		assert.Less(t, *line.Margin, 0.0)
		assert.InDelta(t, 2*4712.4/math.Pi*math.Sin(0.7*math.Pi), *line.Measured, 30, "the square wave's fundamental")
	}

	golden(t, "grid-oscillation.grid-summary.json", redactDigests(buf.String()))

	buf.Reset()
	require.NoError(t, GridSummaryCSV(&buf, r))
	golden(t, "grid-oscillation.grid-summary.csv", redactDigests(buf.String()))
	rows, err := csv.NewReader(&buf).ReadAll()
	require.NoError(t, err)
	require.Len(t, rows, 1+4+1, "a header and a row per check")
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	lineRow := rows[3]
	assert.Equal(t, "line", lineRow[col["check"]])
	assert.Equal(t, "grid_line", lineRow[col["kind"]])
	assert.Equal(t, "1000", lineRow[col["limit"]])
	assert.Equal(t, "50", lineRow[col["rate_achieved_per_s"]])
	assert.Equal(t, tr.Checks[2].Verdict, lineRow[col["verdict"]])
	assert.Contains(t, lineRow[col["drives"]], "train: fleet, 2 s period, 70 % compute, 40 s")
	ride := rows[5]
	assert.Equal(t, "restored", ride[col["check"]])
	assert.Contains(t, ride[col["dips"]], "dip: u1 to 0.5 pu for 0.3 s")
	assert.Contains(t, ride[col["sources"]], "90 %")
}

// redactDigests hides what changes with the example's contracts (the
// plan's header comes from them): digests, and the times redact hides.
func redactDigests(s string) string {
	s = regexp.MustCompile(`sha256:[0-9a-f]{64}`).ReplaceAllString(s, "sha256:<digest>")
	s = regexp.MustCompile(`SHA256:[A-Za-z0-9+/]{43}`).ReplaceAllString(s, "SHA256:<key>")
	return redact(s, "<none>")
}

// TestGridSectionInHTML renders the page: the grid section, its table
// and three plots (power, spectrum, ride-through), and no section in a
// report of a plan without grid cases.
func TestGridSectionInHTML(t *testing.T) {
	r := loadGridRun(t, reporttest.GridOscillation)
	var buf bytes.Buffer
	require.NoError(t, HTML(&buf, r))
	page := buf.String()
	selfContained(t, page)
	assert.Contains(t, page, `<section id="grid">`)
	assert.Equal(t, 1, strings.Count(page, `id="grid-power-`))
	assert.Equal(t, 1, strings.Count(page, `id="grid-spectrum-`))
	assert.Equal(t, 1, strings.Count(page, `id="grid-ride-`))
	assert.Contains(t, page, "frequency (Hz, log scale)")
	assert.Contains(t, page, "The contract&#39;s ride-through curve is not in the plan")

	healthy := loadGridRun(t, "")
	assert.Nil(t, (&Run{}).GridSummary())
	assert.NotNil(t, healthy.GridSummary())
}

// TestGridSectionInChromium opens the failing grid bundle's page in
// headless Chromium: no console message, the grid section's three plots
// and one per case with samples, ink in the screenshot. With
// -screenshots DIR it writes the grid section's (report-grid.png, for
// docs/grid.md).
func TestGridSectionInChromium(t *testing.T) {
	r := loadGridRun(t, reporttest.GridOscillation)
	var buf bytes.Buffer
	require.NoError(t, HTML(&buf, r))
	path := filepath.Join(t.TempDir(), "report.html")
	require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o644))
	p := openReport(t, path)
	if *screenshots != "" {
		shoot(t, path, *screenshots, "", map[string]string{"report-grid.png": "#grid"})
	}
	assert.Empty(t, p.console, "console messages")
	plots := 3
	for _, c := range r.Cases {
		if c.Plot != nil {
			plots++
		}
	}
	assert.Equal(t, plots, p.plots, "the grid section's three plots and the cases'")
	ink, blue, _ := inkStats(t, p.png)
	assert.Greater(t, ink, 0.03, "the screenshot is blank")
	assert.Greater(t, blue, 2000, "no measured line drawn")
}

// TestGridSamplesCountedOnce: a check over adjacent steps counts the
// sample on their boundary once, as the grader does.
func TestGridSamplesCountedOnce(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	tl := grade.Timeline{Start: t0, End: t0.Add(10 * time.Second), Steps: []grade.Span{
		{Step: "a", Op: plan.OpHold, Start: t0, End: t0.Add(5 * time.Second)},
		{Step: "b", Op: plan.OpTrain, Start: t0.Add(5 * time.Second), End: t0.Add(10 * time.Second)},
	}}
	for _, tt := range []struct {
		name    string
		steps   []string
		samples int
	}{
		{"one step", []string{"b"}, 251},
		{"adjacent steps", []string{"a", "b"}, 501},
		{"the same step twice", []string{"b", "b"}, 251},
	} {
		t.Run(tt.name, func(t *testing.T) {
			k := plan.Check{ID: "swing", Kind: plan.GridSwing, Channel: poi, Unit: "kW", WindowS: 1, Max: plan.F(100), Steps: tt.steps}
			st := newGridState(&plan.Case{Checks: []plan.Check{k}}, tl, 0)
			for i := 0; i <= 500; i++ {
				st.add(evidence.Sample{Channel: poi, Time: t0.Add(time.Duration(i) * 20 * time.Millisecond), Value: float64(i % 7), Quality: evidence.Good})
			}
			gc := GridCase{Unit: "kW", Checks: []GridCheck{gridCheck(&plan.Plan{}, k, grade.Verdict{Check: k.ID, Kind: k.Kind, Outcome: grade.Pass}, &tl)}}
			gc.measure(st, false)
			assert.Equal(t, tt.samples, gc.Samples)
			assert.InDelta(t, 50, gc.Rate, 1e-9)
			require.NotNil(t, gc.Checks[0].worst)
			assert.Equal(t, 6.0, gc.Checks[0].worst.Value, "the swing of 0..6 within 1 s")
		})
	}
}

// TestRideCurve reads the contract's ride-through curve from the plan's
// sources: every point with a voltage and a duration, by duration; a
// case whose checks name no point of it has none.
func TestRideCurve(t *testing.T) {
	const c = `boundaries."u1-site".grid.require.voltage_ride_through.curve`
	p := &plan.Plan{Sources: map[string]plan.Source{
		c + "[0].voltage":  {Pos: "grid.cue:37:16", Value: "0 pu"},
		c + "[0].duration": {Pos: "grid.cue:37:34", Value: "150 ms"},
		c + "[2].voltage":  {Pos: "grid.cue:39:16", Value: "0.7 pu"},
		c + "[2].duration": {Pos: "grid.cue:39:36", Value: "3 s"},
		c + "[1].voltage":  {Pos: "grid.cue:38:16", Value: "0.5 pu"},
		c + "[1].duration": {Pos: "grid.cue:38:36", Value: "300 ms"},
		c + "[3].voltage":  {Pos: "grid.cue:40:16", Value: "0.9 pu"}, // no duration: not a point
	}}
	for _, tt := range []struct {
		name    string
		sources []string
		want    []CurvePoint
	}{
		{"a point named", []string{c + "[1].voltage", c + "[1].duration"}, []CurvePoint{
			{0.15, 0, "grid.cue:37:16"}, {0.3, 0.5, "grid.cue:38:16"}, {3, 0.7, "grid.cue:39:16"}}},
		{"no point named", []string{`boundaries."u1-site".grid.ride_through.retain`}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pc := &plan.Case{Checks: []plan.Check{{ID: "restored", Kind: plan.RestoresWithin, Sources: tt.sources}}}
			got := rideCurve(p, pc)
			require.Len(t, got, len(tt.want))
			for i := range got {
				assert.InDelta(t, tt.want[i].DurationS, got[i].DurationS, 1e-12)
				assert.InDelta(t, tt.want[i].VoltagePU, got[i].VoltagePU, 1e-12)
				assert.Equal(t, tt.want[i].Pos, got[i].Pos)
			}
		})
	}
}

// TestRideThroughZoomsOnTheDip: a dip in a long case is drawn from 5 s
// before it to past the contract's curve, the time axis counting from
// there, the dip and the curve where they happened.
func TestRideThroughZoomsOnTheDip(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	tl := grade.Timeline{Start: t0, End: t0.Add(160 * time.Second)}
	k := plan.Check{ID: "restored", Kind: plan.RestoresWithin, Channel: poi}
	st := newGridState(&plan.Case{Checks: []plan.Check{k}}, tl, 0)
	for i := 0; i <= 1600; i++ {
		v := 3000.0
		if i >= 1000 && i < 1003 {
			v = 1000
		}
		st.add(evidence.Sample{Channel: poi, Time: t0.Add(time.Duration(i) * 100 * time.Millisecond), Value: v, Quality: evidence.Good})
	}
	gc := GridCase{Channel: poi, Unit: "kW", Dips: []GridDip{{Step: "dip", Target: "u1", VoltagePU: 0.5, DurationS: 0.3, Start: 100, End: 100.3, Ran: true}},
		Curve: []CurvePoint{{DurationS: 0.15, VoltagePU: 0}, {DurationS: 3, VoltagePU: 0.7}}}
	d := gc.rideThrough(st, 1000, "MW")
	require.NotNil(t, d)
	assert.InDelta(t, 9.3, d.Duration, 1e-9, "from 5 s before the dip to 1 s past the curve's 3 s")
	assert.Equal(t, "time since +95.0 s into the case (s)", d.XLabel)
	assert.Equal(t, 94, d.Samples, "the samples of 95..104.3 s")
	lowest := Point{V: math.Inf(1)}
	for _, p := range d.Measured {
		if p.V < lowest.V {
			lowest = p
		}
	}
	assert.Equal(t, Point{T: 5, V: 1}, lowest, "the dip, 5 s in, in MW")
	require.Len(t, d.Curves, 1)
	assert.Equal(t, []Point{{T: 5, V: 0}, {T: 5.15, V: 0}, {T: 5.15, V: 0.7}, {T: 8, V: 0.7}}, roundPoints(d.Curves[0].Points))
	require.Len(t, d.Marks, 1)
	assert.InDelta(t, 5, d.Marks[0].At, 1e-9)
}

func roundPoints(ps []Point) []Point {
	out := make([]Point, len(ps))
	for i, p := range ps {
		out[i] = Point{T: math.Round(p.T*1e9) / 1e9, V: p.V}
	}
	return out
}
