package grade

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/plan"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func at(s float64) time.Time { return t0.Add(seconds(s)) }

// series samples f every step seconds over [a, b].
func series(a, b, step float64, f func(t float64) float64) []Sample {
	var out []Sample
	for i := 0; ; i++ {
		t := math.Round((a+float64(i)*step)*1000) / 1000
		if t > b {
			return out
		}
		out = append(out, Sample{Time: at(t), Value: f(t), Good: true})
	}
}

func flat(v float64) func(float64) float64 { return func(float64) float64 { return v } }

// steady is a case with one measuring hold from 10 s to 20 s.
var steady = Timeline{Start: at(0), End: at(30), Steps: []Span{
	{Step: "start", Op: plan.OpSetLoad, Start: at(0), End: at(0)},
	{Step: "hold", Op: plan.OpHold, Start: at(10), End: at(20)},
	{Step: "ramp-zero", Op: plan.OpRamp, Start: at(20), End: at(30), Edges: []time.Time{at(20)}},
}}

func inBand(lo, hi *float64) plan.Check {
	return plan.Check{ID: "in-band", Kind: plan.InBand, Channel: "v", Unit: "V", Min: lo, Max: hi, Steps: []string{"hold"}}
}

func grade(c plan.Check, tl Timeline, s []Sample) Verdict {
	return Grade(c, tl, Options{MaxGap: 2 * time.Second}, slices.Values(s))
}

func TestInBand(t *testing.T) {
	c := inBand(plan.F(400), plan.F(430))
	tests := []struct {
		name     string
		samples  []Sample
		outcome  Outcome
		measured float64
		limit    float64
		margin   float64
		detail   string
	}{
		{"inside", series(0, 30, 0.5, func(t float64) float64 { return 415 + t/10 }), Pass, 417, 430, 13, "all 21 samples inside [400, 430 V]; closest 417 V at +20.000 s, 13 V inside 430 V"},
		{"outside the hold is not graded", series(0, 30, 0.5, func(t float64) float64 {
			if t < 10 || t > 20 {
				return 500
			}
			return 420
		}), Pass, 420, 430, 10, "all 21 samples"},
		{"one sample below", series(0, 30, 0.5, func(t float64) float64 {
			if t == 15 {
				return 398.5
			}
			return 415
		}), Fail, 398.5, 400, -1.5, "398.5 V at +15.000 s is 1.5 V below the minimum 400 V (1 of 21 samples outside)"},
		{"above", series(10, 20, 1, flat(431)), Fail, 431, 430, -1, "above the maximum 430 V (11 of 11"},
		{"no samples", nil, Error, 0, 0, 0, "no good sample in the graded window"},
		{"gap", append(series(10, 12, 0.5, flat(415)), series(16, 20, 0.5, flat(415))...), Error, 415, 400, 15,
			"no good sample for 4s from +12.000 s (the check needs one at least every 2s)"},
		{"gap at the end", series(10, 17, 0.5, flat(415)), Error, 415, 400, 15, "no good sample for 3s from +17.000 s"},
		{"proven failure beats a gap", append(series(10, 11, 0.5, flat(380)), series(18, 20, 0.5, flat(415))...), Fail, 380, 400, -20, "is 20 V below"},
		{"bad samples are gaps", func() []Sample {
			s := series(10, 20, 0.5, flat(415))
			for i := 4; i < 14; i++ {
				s[i].Good, s[i].Value = false, 0
			}
			return s
		}(), Error, 415, 400, 15, "no good sample for 5.5s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := grade(c, steady, tt.samples)
			assert.Equal(t, tt.outcome, v.Outcome, v.Detail)
			assert.Contains(t, v.Detail, tt.detail)
			assert.Equal(t, "V", v.Unit)
			if tt.outcome != Error || tt.measured != 0 {
				require.NotNil(t, v.Measured)
				assert.InDelta(t, tt.measured, *v.Measured, 1e-9)
				assert.InDelta(t, tt.limit, *v.Limit, 1e-9)
				assert.InDelta(t, tt.margin, *v.Margin, 1e-9)
			}
		})
	}
}

// The timeline's per-channel allowance overrides the option.
func TestTimelineMaxGap(t *testing.T) {
	c := inBand(plan.F(400), plan.F(430))
	c.Channel = "v"
	s := append(series(10, 12, 0.5, flat(415)), series(16, 20, 0.5, flat(415))...)
	tl := steady
	tl.MaxGapS = map[string]float64{"v": 5}
	assert.Equal(t, Pass, grade(c, tl, s).Outcome)
	tl.MaxGapS = map[string]float64{"other": 5}
	assert.Equal(t, Error, grade(c, tl, s).Outcome)
}

func TestOneSidedBands(t *testing.T) {
	v := grade(inBand(plan.F(3120), nil), steady, series(10, 20, 0.5, func(t float64) float64 { return 3300 - t }))
	assert.Equal(t, Pass, v.Outcome)
	assert.InDelta(t, 3280, *v.Measured, 1e-9)
	assert.InDelta(t, 160, *v.Margin, 1e-9)
	assert.Contains(t, v.Detail, "inside ≥ 3120 V")

	v = grade(inBand(nil, plan.F(2)), steady, series(10, 20, 0.5, flat(2.5)))
	assert.Equal(t, Fail, v.Outcome)
	assert.InDelta(t, -0.5, *v.Margin, 1e-9)
}

func TestFromWindow(t *testing.T) {
	tl := Timeline{Start: at(0), End: at(60), Steps: []Span{
		{Step: "inject", Op: plan.OpOperator, Start: at(5), End: at(10)},
		{Step: "observe", Op: plan.OpHold, Start: at(10), End: at(50)},
	}}
	c := plan.Check{ID: "degraded", Kind: plan.InBand, Unit: "L/min", Min: plan.F(2700), From: "inject", ForS: 40}
	// the dip before time zero and after the window is not graded
	s := series(0, 60, 0.5, func(t float64) float64 {
		if t < 10 || t > 50 {
			return 100
		}
		return 2800
	})
	v := grade(c, tl, s)
	assert.Equal(t, Pass, v.Outcome, v.Detail)
	assert.Equal(t, 81, v.Samples)

	c.From = "missing"
	v = grade(c, tl, s)
	assert.Equal(t, Error, v.Outcome)
	assert.Equal(t, "cannot grade: step missing, its time zero, did not run", v.Detail)
}

func TestNoInterruption(t *testing.T) {
	tl := Timeline{Start: at(0), End: at(40), Steps: []Span{{Step: "inject", Start: at(4), End: at(5)}}}
	c := plan.Check{ID: "ni", Kind: plan.NoInterruption, Unit: "V", Min: plan.F(373.5), From: "inject", ForS: 20}
	dip := func(t float64) float64 {
		if t > 6 && t < 6.5 {
			return 360
		}
		return 410
	}
	v := grade(c, tl, series(0, 40, 0.1, dip))
	assert.Equal(t, Fail, v.Outcome)
	assert.InDelta(t, 360, *v.Measured, 1e-9)
	assert.InDelta(t, -13.5, *v.Margin, 1e-9)
	assert.Equal(t, at(6.1), *v.At)

	v = grade(c, tl, series(0, 40, 0.1, flat(400)))
	assert.Equal(t, Pass, v.Outcome)
}

func TestMaxDeviation(t *testing.T) {
	tl := Timeline{Start: at(0), End: at(20), Steps: []Span{
		{Step: "excite", Op: plan.OpSquareWave, Start: at(5), End: at(9), Edges: []time.Time{at(5), at(7)}},
		{Step: "after", Op: plan.OpHold, Start: at(9), End: at(12)},
	}}
	c := plan.Check{ID: "dev", Kind: plan.MaxDeviation, Unit: "V", Reference: plan.F(415), MaxDeviation: plan.F(33.2), Steps: []string{"excite", "after"}}
	sag := func(depth float64) func(float64) float64 {
		return func(t float64) float64 {
			if t >= 5 && t < 5.3 {
				return 415 - depth
			}
			return 415
		}
	}
	v := grade(c, tl, series(0, 20, 0.1, sag(20)))
	assert.Equal(t, Pass, v.Outcome, v.Detail)
	assert.InDelta(t, 20, *v.Measured, 1e-9)
	assert.InDelta(t, 13.2, *v.Margin, 1e-9)
	assert.Contains(t, v.Detail, "largest deviation 20 V (395 V at +5.000 s)")

	v = grade(c, tl, series(0, 20, 0.1, sag(40)))
	assert.Equal(t, Fail, v.Outcome)
	assert.InDelta(t, 40, *v.Measured, 1e-9)
	assert.InDelta(t, -6.8, *v.Margin, 1e-9)
	assert.Contains(t, v.Detail, "375 V at +5.000 s deviates 40 V from 415 V, more than the 33.2 V allowed (3 of 71 samples outside)")
}

// square is a square wave with edges at 5, 7, 9, 11 s, then a hold and
// a ramp to zero at 20 s.
var square = Timeline{Start: at(0), End: at(25), Steps: []Span{
	{Step: "excite", Op: plan.OpSquareWave, Start: at(5), End: at(13), Edges: []time.Time{at(5), at(7), at(9), at(11)}},
	{Step: "after", Op: plan.OpHold, Start: at(13), End: at(20)},
	{Step: "ramp-zero", Op: plan.OpRamp, Start: at(20), End: at(25), Edges: []time.Time{at(20)}},
}}

func TestRecoveryTime(t *testing.T) {
	c := plan.Check{ID: "rec", Kind: plan.RecoveryTime, Unit: "V", Min: plan.F(402.55), Max: plan.F(427.45), WithinS: 1, Steps: []string{"excite"}}
	// out of band for `out` seconds after each edge
	after := func(out float64, lastEdge float64) func(float64) float64 {
		return func(t float64) float64 {
			for _, e := range []float64{5, 7, 9, 11} {
				d := out
				if e == 11 {
					d = lastEdge
				}
				if t >= e && t < e+d {
					return 390
				}
			}
			return 415
		}
	}
	v := grade(c, square, series(0, 25, 0.1, after(0.45, 0.45)))
	assert.Equal(t, Pass, v.Outcome, v.Detail)
	assert.InDelta(t, 0.4, *v.Measured, 1e-6)
	assert.InDelta(t, 0.6, *v.Margin, 1e-6)
	assert.Contains(t, v.Detail, "within 0.4 s of each of 4 load edges (allowed 1 s)")

	v = grade(c, square, series(0, 25, 0.1, after(0.45, 1.5)))
	assert.Equal(t, Fail, v.Outcome, v.Detail)
	assert.InDelta(t, 1.4, *v.Measured, 1e-6)
	assert.Contains(t, v.Detail, "after the edge at +11.000 s, still outside [402.55, 427.45 V] 1 s later: 390 V at +12.000 s")

	// the ramp to zero starts a new edge that is not graded: a dip
	// after it does not count against the last square-wave edge
	dipAtZero := func(t float64) float64 {
		if t >= 20 && t < 23 {
			return 390
		}
		return 415
	}
	v = grade(c, square, series(0, 25, 0.1, dipAtZero))
	assert.Equal(t, Pass, v.Outcome, v.Detail)
	assert.Zero(t, *v.Measured)

	noEdges := square
	noEdges.Steps = []Span{{Step: "excite", Start: at(5), End: at(13)}}
	v = grade(c, noEdges, series(0, 25, 0.1, flat(415)))
	assert.Equal(t, Error, v.Outcome)
	assert.Equal(t, "no load edge was commanded in the graded steps", v.Detail)
}

// An edge closer to the next than within_s cannot fail on its own: the
// thermal square wave recovers over several edges.
func TestRecoveryWindowShorterThanLimit(t *testing.T) {
	c := plan.Check{ID: "rec", Kind: plan.RecoveryTime, Unit: "degC", Min: plan.F(28.5), Max: plan.F(31.5), WithinS: 3, Steps: []string{"excite"}}
	warm := func(t float64) float64 {
		if t >= 5 && t < 12.5 {
			return 32
		}
		return 30
	}
	v := grade(c, square, series(0, 25, 0.1, warm))
	assert.Equal(t, Pass, v.Outcome, v.Detail)
	// warm until the next edge after each of the first three edges
	assert.InDelta(t, 1.9, *v.Measured, 1e-6)
}

func TestSettlesWithin(t *testing.T) {
	tl := Timeline{Start: at(0), End: at(60), Steps: []Span{{Step: "inject", Start: at(9), End: at(10)}}}
	c := plan.Check{ID: "settle", Kind: plan.SettlesWithin, Unit: "L/min", Min: plan.F(3200), WithinS: 15, From: "inject", ForS: 40}
	dip := func(d float64) func(float64) float64 {
		return func(t float64) float64 {
			if t >= 10 && t < 10+d {
				return 3000
			}
			return 3300
		}
	}
	v := grade(c, tl, series(0, 60, 0.5, dip(8)))
	assert.Equal(t, Pass, v.Outcome, v.Detail)
	assert.InDelta(t, 7.5, *v.Measured, 1e-9)
	assert.InDelta(t, 7.5, *v.Margin, 1e-9)
	assert.Equal(t, "s", v.Unit)

	v = grade(c, tl, series(0, 60, 0.5, dip(20)))
	assert.Equal(t, Fail, v.Outcome, v.Detail)
	assert.InDelta(t, 19.5, *v.Measured, 1e-9)
	assert.Contains(t, v.Detail, "still outside ≥ 3200 L/min 15 s after the event: 3000 L/min at +25.000 s")

	v = grade(c, tl, series(0, 60, 0.5, flat(3300)))
	assert.Equal(t, Pass, v.Outcome)
	assert.Zero(t, *v.Measured)
}

func TestAlarmWithin(t *testing.T) {
	tl := Timeline{Start: at(0), End: at(40), Steps: []Span{{Step: "inject", Op: plan.OpInjectFault, Start: at(9.9), End: at(10)}}}
	c := plan.Check{ID: "alarm", Kind: plan.AlarmWithin, Channel: "a", WithinS: 2, From: "inject"}
	raiseAt := func(r float64) func(float64) float64 {
		return func(t float64) float64 {
			if t >= r {
				return 1
			}
			return 0
		}
	}
	tests := []struct {
		name     string
		samples  []Sample
		outcome  Outcome
		measured *float64
		detail   string
	}{
		{"in time", series(0, 40, 0.1, raiseAt(11.25)), Pass, plan.F(1.3), "raised 1.3 s after the event (allowed 2 s)"},
		{"during the step", series(0, 40, 0.1, raiseAt(9.95)), Pass, plan.F(0), "raised 0 s after"},
		{"late", series(0, 40, 0.1, raiseAt(15)), Fail, plan.F(5), "raised 5 s after the event, later than the 2 s allowed (not raised at +12.000 s)"},
		{"never", series(0, 40, 0.1, flat(0)), Fail, nil, "not raised within 2 s of the event: still quiet at +40.000 s, 30 s after it"},
		{"already raised", series(0, 40, 0.1, flat(1)), Error, nil, "already raised at +9.800 s, before the event"},
		{"gap over the limit", append(series(0, 11, 0.1, flat(0)), series(13, 40, 0.1, flat(1))...), Error, plan.F(3), "no good sample between +11.000 s and the limit at +12.000 s"},
		{"no samples after", series(0, 9, 0.1, flat(0)), Error, nil, "no good sample of the alarm after the event"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := grade(c, tl, tt.samples)
			assert.Equal(t, tt.outcome, v.Outcome, v.Detail)
			assert.Contains(t, v.Detail, tt.detail)
			if tt.measured == nil {
				assert.Nil(t, v.Measured)
			} else {
				require.NotNil(t, v.Measured)
				assert.InDelta(t, *tt.measured, *v.Measured, 1e-6)
				assert.InDelta(t, 2-*tt.measured, *v.Margin, 1e-6)
			}
		})
	}
}

func TestBadChecks(t *testing.T) {
	for _, c := range []plan.Check{
		{ID: "x", Kind: "wobble", Steps: []string{"hold"}},
		{ID: "x", Kind: plan.InBand, Steps: []string{"hold"}},
		{ID: "x", Kind: plan.InBand, Min: plan.F(1)},
		{ID: "x", Kind: plan.InBand, Min: plan.F(1), Steps: []string{"nope"}},
		{ID: "x", Kind: plan.MaxDeviation, Steps: []string{"hold"}},
		{ID: "x", Kind: plan.RecoveryTime, Min: plan.F(1), Steps: []string{"nope"}},
		{ID: "x", Kind: plan.SettlesWithin, Min: plan.F(1), From: "nope"},
	} {
		v := grade(c, steady, series(0, 30, 1, flat(1)))
		assert.Equal(t, Error, v.Outcome, c)
		assert.Contains(t, v.Detail, "cannot grade: ")
	}
}

func BenchmarkGradeInBand(b *testing.B) {
	c := inBand(plan.F(400), plan.F(430))
	tl := Timeline{Start: at(0), End: at(3600), Steps: []Span{{Step: "hold", Start: at(0), End: at(3600)}}}
	s := series(0, 3600, 0.1, flat(415))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		grade(c, tl, s)
	}
	b.ReportMetric(float64(len(s)), "samples/op")
}

// A sample that is not a finite number is not a reading: it is graded
// as a gap, like a stale or error sample, so a check whose samples are
// all NaN or infinite has no good sample and is an ERROR, never a PASS
// (a NaN compares false with every limit, so it would never fail).
func TestNonFiniteSamplesAreNotGraded(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	dev := plan.Check{ID: "dev", Kind: plan.MaxDeviation, Channel: "v", Unit: "V", Reference: plan.F(415), MaxDeviation: plan.F(33.2), Steps: []string{"hold"}}
	settle := plan.Check{ID: "settle", Kind: plan.SettlesWithin, Channel: "v", Unit: "V", Min: plan.F(400), WithinS: 5, From: "start", ForS: 20}
	rec := plan.Check{ID: "rec", Kind: plan.RecoveryTime, Channel: "v", Unit: "V", Min: plan.F(400), Max: plan.F(430), WithinS: 5, Steps: []string{"ramp-zero"}}
	tests := []struct {
		name    string
		check   plan.Check
		samples []Sample
		outcome Outcome
		detail  string
		n       int
	}{
		{"in_band, all NaN", inBand(plan.F(400), plan.F(430)), series(0, 30, 0.5, flat(nan)), Error, "no good sample in the graded window; 61 sample(s) were NaN or infinite, which are not graded", 0},
		{"in_band, all +Inf", inBand(plan.F(400), nil), series(0, 30, 0.5, flat(inf)), Error, "no good sample in the graded window", 0},
		{"in_band, all -Inf", inBand(nil, plan.F(430)), series(0, 30, 0.5, flat(-inf)), Error, "no good sample in the graded window", 0},
		{"max_deviation, all NaN", dev, series(0, 30, 0.5, flat(nan)), Error, "no good sample in the graded window", 0},
		{"settles_within, all NaN", settle, series(0, 30, 0.5, flat(nan)), Error, "", 0},
		{"recovery_time, all NaN", rec, series(0, 30, 0.5, flat(nan)), Error, "", 0},
		{"NaN for 4 s is a gap", inBand(plan.F(400), plan.F(430)), series(0, 30, 0.5, func(t float64) float64 {
			if t > 12 && t < 16 {
				return nan
			}
			return 415
		}), Error, "no good sample for 4s from +12.000 s", 14},
		{"one NaN among good samples is one missing sample", inBand(plan.F(400), plan.F(430)), series(0, 30, 0.5, func(t float64) float64 {
			if t == 15 {
				return nan
			}
			return 415
		}), Pass, "all 20 samples inside", 20},
		{"a NaN does not hide a sample outside", inBand(plan.F(400), plan.F(430)), series(10, 20, 0.5, func(t float64) float64 {
			if t == 15 {
				return 399
			}
			return nan
		}), Fail, "399 V at +15.000 s is 1 V below the minimum 400 V (1 of 1 samples outside)", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := grade(tt.check, steady, tt.samples)
			assert.Equal(t, tt.outcome, v.Outcome, v.Detail)
			assert.Contains(t, v.Detail, tt.detail)
			assert.Equal(t, tt.n, v.Samples)
			for _, p := range []*float64{v.Measured, v.Limit, v.Margin} {
				if p != nil {
					assert.False(t, math.IsNaN(*p) || math.IsInf(*p, 0), "a verdict holds no NaN or infinity: %v", *p)
				}
			}
		})
	}
}
