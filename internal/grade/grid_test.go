package grade

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/plan"
)

// gridCase trains from 20 s to 140 s (two records of 60 s), then holds.
var gridCase = Timeline{Start: at(0), End: at(160), Steps: []Span{
	{Step: "before", Op: plan.OpHold, Start: at(0), End: at(20)},
	{Step: "train", Op: plan.OpTrain, Start: at(20), End: at(140)},
	{Step: "after", Op: plan.OpHold, Start: at(140), End: at(160)},
}}

func gridCheck(kind string, max float64) plan.Check {
	c := plan.Check{ID: kind, Kind: kind, Channel: "u1/site/power", Unit: "kW", Max: plan.F(max), WindowS: 60, Steps: []string{"train"}}
	switch kind {
	case plan.GridRamp:
		c.WindowS, c.Direction = 1, plan.Up
	case plan.GridLine:
		c.BandLowHz, c.BandHighHz = 0.1, 20
	case plan.GridBandRMS:
		c.BandLowHz, c.BandHighHz, c.SegmentS = 0.1, 20, 20
	}
	return c
}

func with(c plan.Check, f func(*plan.Check)) plan.Check { f(&c); return c }

// jittered samples f over [a, b] at intervals of 20 ms ± 6 ms (a fixed
// seed: the same samples every run).
func jittered(a, b float64, f func(t float64) float64) []Sample {
	r := rand.New(rand.NewPCG(1, 2))
	var out []Sample
	for t := a; t <= b; t += 0.014 + 0.012*r.Float64() {
		ts := at(t)
		x := ts.Sub(t0).Seconds()
		out = append(out, Sample{Time: ts, Value: f(x), Good: true})
	}
	return out
}

func sine(offset, amp, hz float64) func(float64) float64 {
	return func(t float64) float64 { return offset + amp*math.Sin(2*math.Pi*hz*t) }
}

// squareWave is low for the first half of each period from 20 s, then high.
func squareWave(low, high, period float64) func(float64) float64 {
	return func(t float64) float64 {
		if math.Mod(t-20, period) < period/2 {
			return low
		}
		return high
	}
}

func without(s []Sample, a, b float64) []Sample {
	var out []Sample
	for _, x := range s {
		if x.Time.Before(at(a)) || x.Time.After(at(b)) {
			out = append(out, x)
		}
	}
	return out
}

func TestGridChecks(t *testing.T) {
	noise := func() func(float64) float64 {
		r := rand.New(rand.NewPCG(7, 11))
		return func(float64) float64 { return 5000 + 100*r.NormFloat64() }
	}
	// white noise of σ 100 kW sampled at 50/s spreads evenly over
	// 0..25 Hz: 0.1..20 Hz holds 100·sqrt(19.9/25) = 89.2 kW RMS
	const noiseRMS = 89.22
	tests := []struct {
		name     string
		c        plan.Check
		samples  []Sample
		outcome  Outcome
		measured float64 // ± tol
		tol      float64
		at       float64 // the verdict's At, s from the case's start (-1: not checked)
		detail   string
	}{
		// a 100 kW line at 1 Hz, sampled irregularly, reads its
		// amplitude within 2 % (linear interpolation onto 50/s)
		{"line below its limit", gridCheck(plan.GridLine, 105), jittered(0, 160, sine(5000, 100, 1)), Pass, 100, 2, -1,
			"largest line in 0.1–20 Hz is 99."},
		{"line above its limit", gridCheck(plan.GridLine, 95), jittered(0, 160, sine(5000, 100, 1)), Fail, 100, 2, -1,
			"at 1 Hz in the record from +"},
		{"line: the worst record decides", gridCheck(plan.GridLine, 65), jittered(0, 160, func(t float64) float64 {
			if t >= 80 {
				return sine(5000, 100, 0.5)(t)
			}
			return sine(5000, 10, 0.5)(t)
		}), Fail, 100, 2, 79.99, "at 0.5 Hz in the record from +79.9"},
		{"a line outside the band is not measured", gridCheck(plan.GridLine, 5), series(0, 160, 0.02, sine(5000, 1000, 0.05)), Pass, 0, 5, -1, "limit 5 kW"},

		// a square wave of 2000 kW every 10 s: each edge is a rise or
		// fall of 2000 kW within one sample interval
		{"square wave rise", gridCheck(plan.GridRamp, 2000.5), series(0, 160, 0.02, squareWave(1000, 3000, 10)), Pass, 2000, 1e-9, 24.98,
			"largest rise within 1 s is 2000 kW from +24.980 s to +25.000 s, limit 2000.5 kW"},
		{"square wave rise above its limit", gridCheck(plan.GridRamp, 1500), series(0, 160, 0.02, squareWave(1000, 3000, 10)), Fail, 2000, 1e-9, 24.98,
			"above the limit 1500 kW by 500 kW"},
		{"square wave fall", with(gridCheck(plan.GridRamp, 1999), func(c *plan.Check) { c.Direction = plan.Down }),
			series(0, 160, 0.02, squareWave(1000, 3000, 10)), Fail, 2000, 1e-9, 29.98, "largest fall within 1 s is 2000 kW from +29.980 s"},
		{"square wave swing", gridCheck(plan.GridSwing, 2000), series(0, 160, 0.02, squareWave(1000, 3000, 10)), Pass, 2000, 1e-9, 24.98,
			"largest swing within 1 min is 2000 kW"},
		{"a rise outside the steps is not graded", gridCheck(plan.GridRamp, 10), series(0, 160, 0.02, func(t float64) float64 {
			if t > 150 {
				return 9000
			}
			return 1000
		}), Pass, 0, 1e-9, -1, "largest rise within 1 s is 0 kW"},
		{"a step shorter than the window is measured whole", with(gridCheck(plan.GridSwing, 2500), func(c *plan.Check) { c.WindowS = 300 }),
			series(0, 160, 0.02, squareWave(1000, 3000, 10)), Pass, 2000, 1e-9, -1, "within the step train (shorter than 5 min)"},

		{"a step shorter than the window is one record", with(gridCheck(plan.GridLine, 105), func(c *plan.Check) { c.Steps = []string{"after"} }),
			series(0, 160, 0.02, sine(5000, 100, 1)), Pass, 100, 0.5, 140,
			"largest line in 0.1–20 Hz is 100 kW at 1 Hz in step after from +140.000 s, shorter than 1 min: one record, limit 105 kW (1001 samples, on a grid of 50 samples/s)"},
		{"too short for the band's lower edge", with(gridCheck(plan.GridLine, 105), func(c *plan.Check) { c.Steps, c.BandLowHz = []string{"after"}, 0.04 }),
			series(0, 160, 0.02, sine(5000, 100, 1)), Error, 0, 0, -1,
			"cannot measure the samples of step after (20 s from +140.000 s): too short to resolve the band: a record of 20 s (1000 samples at 50 samples/s) cannot resolve 0.04 Hz: needs at least 25 s (1/f1)"},
		{"white noise band RMS", gridCheck(plan.GridBandRMS, 100), series(0, 160, 0.02, noise()), Pass, noiseRMS, 0.08 * noiseRMS, -1,
			"RMS in 0.1–20 Hz (20 s segments) is"},
		{"white noise band RMS above its limit", gridCheck(plan.GridBandRMS, 70), series(0, 160, 0.02, noise()), Fail, noiseRMS, 0.08 * noiseRMS, -1,
			"above the limit 70 kW"},

		{"a gap is an error", gridCheck(plan.GridLine, 105), without(jittered(0, 160, sine(5000, 100, 1)), 50, 55), Error, 100, 2, 50,
			"no good sample for 5."},
		{"stray samples in a gap: the gap is the error, not their rate", gridCheck(plan.GridLine, 105), func() []Sample {
			s := without(series(0, 160, 0.02, sine(5000, 100, 1)), 50.01, 54.49)
			for _, x := range []float64{51.5, 52.4, 53.3} {
				s = append(s, Sample{Time: at(x), Value: 5000, Good: true})
			}
			slices.SortFunc(s, func(a, b Sample) int { return a.Time.Compare(b.Time) })
			return s
		}(), Error, 100, 0.5, 50, "no good sample for 1.5s from +50.000 s"},
		{"a proven failure beats a gap", gridCheck(plan.GridRamp, 1500), without(series(0, 160, 0.02, squareWave(1000, 3000, 10)), 100, 106), Fail, 2000, 1e-9, 24.98,
			"above the limit"},
		{"sampling too slow for the band", gridCheck(plan.GridLine, 105), series(0, 160, 0.05, sine(5000, 100, 1)), Error, 0, 0, -1,
			"during train, sampling too slow for the band: the samples come every 50 ms (20 samples/s); the band up to 20 Hz needs at least 50 samples/s (2.5 × f2)"},
		{"a step too short for the band's lower edge", with(gridCheck(plan.GridLine, 105), func(c *plan.Check) { c.BandLowHz = 0.01 }),
			series(0, 160, 0.02, sine(5000, 100, 1)), Error, 0, 0, -1, "cannot measure the samples of step train (2 min from +20.000 s): too short to resolve the band: a record of 60 s"},
		{"no samples", gridCheck(plan.GridSwing, 2000), nil, Error, 0, 0, -1, "no good sample in the graded window"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := New(tt.c, gridCase, Options{MaxGap: time.Second})
			for _, s := range tt.samples {
				g.Add(s)
			}
			v := g.Verdict()
			assert.Equal(t, v, g.Verdict(), "a second verdict is the same")
			assert.Equal(t, tt.outcome, v.Outcome, v.Detail)
			assert.Contains(t, v.Detail, tt.detail)
			if tt.tol > 0 {
				require.NotNil(t, v.Measured, v.Detail)
				assert.InDelta(t, tt.measured, *v.Measured, tt.tol, v.Detail)
				assert.InDelta(t, *tt.c.Max-*v.Measured, *v.Margin, 1e-9)
				assert.Equal(t, *tt.c.Max, *v.Limit)
				assert.Equal(t, "kW", v.Unit)
			}
			if tt.at >= 0 {
				require.NotNil(t, v.At, v.Detail)
				assert.InDelta(t, tt.at, v.At.Sub(t0).Seconds(), 0.03, v.Detail)
			}
		})
	}
}

// Samples that are NaN or infinite are not graded: among good ones they
// are missing samples, and a window of nothing else is an ERROR.
func TestGridNonFinite(t *testing.T) {
	nan := math.NaN()
	some := series(0, 160, 0.02, sine(5000, 100, 1))
	for i := 100; i < len(some); i += 97 {
		some[i].Value = nan
	}
	long := series(0, 160, 0.02, sine(5000, 100, 1))
	for i := range long {
		if x := long[i].Time.Sub(t0).Seconds(); x >= 60 && x < 64 {
			long[i].Value = math.Inf(-1)
		}
	}
	for _, tt := range []struct {
		name    string
		c       plan.Check
		samples []Sample
		outcome Outcome
		detail  string
	}{
		{"all NaN", gridCheck(plan.GridLine, 105), series(0, 160, 0.02, flat(nan)), Error, "no good sample in the graded window; 8001 sample(s) were NaN or infinite"},
		{"a NaN now and then is a missing sample", gridCheck(plan.GridLine, 105), some, Pass, "largest line in 0.1–20 Hz is 99.9"},
		{"a ramp ignores them too", gridCheck(plan.GridRamp, 250), some, Pass, "largest rise within 1 s is 199."},
		{"infinite for 4 s is a gap", gridCheck(plan.GridSwing, 1000), long, Error, "no good sample for 4."},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v := grade(tt.c, gridCase, tt.samples)
			assert.Equal(t, tt.outcome, v.Outcome, v.Detail)
			assert.Contains(t, v.Detail, tt.detail)
			for _, p := range []*float64{v.Measured, v.Limit, v.Margin} {
				if p != nil {
					assert.False(t, math.IsNaN(*p) || math.IsInf(*p, 0), "a verdict holds no NaN or infinity: %v", *p)
				}
			}
		})
	}
}

// dipCase: a reference hold, a 0.3 s dip at 20 s, then 20 s after it.
var dipCase = Timeline{Start: at(0), End: at(40), Steps: []Span{
	{Step: "before", Op: plan.OpHold, Start: at(0), End: at(20)},
	{Step: "dip", Op: plan.OpGridDip, Start: at(20), End: at(20.3)},
	{Step: "after", Op: plan.OpHold, Start: at(20.3), End: at(40)},
}}

func TestRestoresWithin(t *testing.T) {
	c := plan.Check{ID: "restore", Kind: plan.RestoresWithin, Channel: "u1/site/power", SharePct: 90, ReferenceS: 5, WithinS: 1, ForS: 10, From: "dip"}
	// down to 500 kW from the dip's start for d seconds, else 1000 kW
	down := func(d float64) []Sample {
		return series(0, 40, 0.02, func(t float64) float64 {
			if t >= 20 && t < 20+d {
				return 500
			}
			return 1000
		})
	}
	tests := []struct {
		name     string
		c        plan.Check
		samples  []Sample
		outcome  Outcome
		measured float64
		limit    float64
		at       float64
		detail   string
	}{
		{"back within the second", c, down(0.8), Pass, 1000, 900, 21.3,
			"from 1 s to 10 s after dip, every sample at least 90 % (900) of the reference 1000 (the mean of 250 samples over the 5 s before dip started): lowest 1000 (100 %) at +21.300 s; 451 samples"},
		{"stays down for 5 s", c, down(5), Fail, 500, 900, 21.3,
			"500 at +21.300 s (1 s after dip ended) is 50 % of the reference 1000 (the mean of 250 samples over the 5 s before dip started), below the 90 % (900) required from 1 s to 10 s after dip (185 of 451 samples below)"},
		{"a share the load meets", with(c, func(c *plan.Check) { c.SharePct = 40 }), down(5), Pass, 500, 400, 21.3, "lowest 500 (50 %)"},
		{"the dip itself is not graded", c, down(1.2), Pass, 1000, 900, 21.3, "lowest 1000"},
		{"no reference", c, series(20, 40, 0.02, flat(1000)), Error, 0, 0, -1,
			"no good sample in the 5 s before dip started (+15.000 s to +20.000 s): no reference to restore to"},
		{"a gap after the dip", c, without(down(0.5), 25, 28), Error, 1000, 900, 24.98, "no good sample for 3.04s from +24.980 s"},
		{"a failure beats a gap", c, without(down(5), 27, 30), Fail, 500, 900, 21.3, "below the 90 %"},
		{"for_s before within_s", with(c, func(c *plan.Check) { c.ForS = 1 }), down(0), Error, 0, 0, -1, "needs for_s (1 s) after within_s (1 s)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := grade(tt.c, dipCase, tt.samples)
			assert.Equal(t, tt.outcome, v.Outcome, v.Detail)
			assert.Contains(t, v.Detail, tt.detail)
			if tt.at < 0 {
				assert.Nil(t, v.Measured)
				return
			}
			require.NotNil(t, v.Measured)
			assert.InDelta(t, tt.measured, *v.Measured, 1e-9)
			assert.InDelta(t, tt.limit, *v.Limit, 1e-9)
			assert.InDelta(t, tt.measured-tt.limit, *v.Margin, 1e-9)
			require.NotNil(t, v.At)
			assert.InDelta(t, tt.at, v.At.Sub(t0).Seconds(), 1e-6)
		})
	}
}

func TestBadGridChecks(t *testing.T) {
	for _, tt := range []struct {
		c      plan.Check
		detail string
	}{
		{with(gridCheck(plan.GridRamp, 1), func(c *plan.Check) { c.Max = nil }), "grid_ramp check grid_ramp needs max"},
		{with(gridCheck(plan.GridRamp, 1), func(c *plan.Check) { c.Direction = "sideways" }), `needs direction up or down, not "sideways"`},
		{with(gridCheck(plan.GridSwing, 1), func(c *plan.Check) { c.WindowS = 0 }), "needs window_s above 0 s"},
		{with(gridCheck(plan.GridLine, 1), func(c *plan.Check) { c.BandHighHz = 0.05 }), "needs 0 < band_low_hz < band_high_hz, not 0.1..0.05 Hz"},
		{with(gridCheck(plan.GridBandRMS, 1), func(c *plan.Check) { c.SegmentS = 0 }), "needs segment_s above 0 s"},
		{with(gridCheck(plan.GridSwing, 1), func(c *plan.Check) { c.Steps = []string{"spin"} }), "step spin did not run"},
	} {
		v := grade(tt.c, gridCase, series(0, 160, 0.02, flat(1)))
		assert.Equal(t, Error, v.Outcome)
		assert.Equal(t, "cannot grade: ", v.Detail[:len("cannot grade: ")])
		assert.Contains(t, v.Detail, tt.detail)
	}
}

func TestGridHelpers(t *testing.T) {
	assert.Equal(t, []int{0, 3000, 6000, 6001}, recordStarts(9001, 3000))
	assert.Equal(t, []int{0, 3000}, recordStarts(6000, 3000))
	assert.Empty(t, recordStarts(2999, 3000))
	ts := []time.Duration{0, 10 * time.Millisecond, 30 * time.Millisecond}
	assert.Equal(t, []float64{0, 1, 2, 3}, resample(ts, []float64{0, 1, 3}, 100))
	assert.Equal(t, [][2]int{{0, 2}, {2, 3}}, runs([]time.Duration{0, time.Second, 3 * time.Second}, time.Second))
	for _, tt := range []struct {
		c        plan.Check
		interval time.Duration
		rate     float64
		err      string
	}{
		{gridCheck(plan.GridLine, 1), 20 * time.Millisecond, 50, ""},
		{gridCheck(plan.GridLine, 1), time.Millisecond, 1000, ""},
		{gridCheck(plan.GridLine, 1), 19900 * time.Microsecond, 3072.0 / 60, ""},        // 3016 intervals: 3072 = 2^10·3
		{gridCheck(plan.GridLine, 1), 20100 * time.Microsecond, 50, ""},                 // 0.5 % slow: within the slack, the grid at 2.5 × f2
		{gridCheck(plan.GridRamp, 1), 19900 * time.Microsecond, 51, ""},                 // 51 intervals in 1 s
		{gridCheck(plan.GridSwing, 1), 7 * time.Millisecond, 8572.0 / 60, ""},           // no smoothing for ramp and swing
		{gridCheck(plan.GridBandRMS, 1), 21 * time.Millisecond, 0, "needs at least 50"}, // 5 % slow
	} {
		rate, err := GridRate(tt.c, tt.interval)
		if tt.err != "" {
			assert.ErrorContains(t, err, tt.err)
			continue
		}
		require.NoError(t, err)
		assert.InDelta(t, tt.rate, rate, 1e-9, "%s at %s", tt.c.Kind, tt.interval)
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 200 {
		d := make([]time.Duration, 1+r.IntN(40))
		for i := range d {
			d[i] = time.Duration(r.IntN(6)) // many equal, as a steady rate gives
		}
		k := r.IntN(len(d))
		sorted := slices.Clone(d)
		slices.Sort(sorted)
		require.Equal(t, sorted[k], nth(d, k), "%v, k %d", sorted, k)
	}
}

// TestGridJoinsSteps: steps that ran one after the other are one record:
// a minute's rise that spans two steps is measured whole, and the
// verdict names both steps.
func TestGridJoinsSteps(t *testing.T) {
	ramp := func(x float64) float64 { return 1000 + 10*x } // 600 kW a minute, throughout
	c := with(gridCheck(plan.GridRamp, 500), func(c *plan.Check) { c.WindowS, c.Steps = 60, []string{"before", "train"} })
	v := Grade(c, gridCase, Options{}, slices.Values(jittered(0, 160, ramp)))
	require.Equal(t, Fail, v.Outcome, v.Detail)
	assert.InDelta(t, 600, *v.Measured, 1)
	// apart, neither step alone holds more than its own length's rise
	c.Steps = []string{"before"}
	v = Grade(c, gridCase, Options{}, slices.Values(jittered(0, 160, ramp)))
	require.Equal(t, Pass, v.Outcome, v.Detail)
	assert.InDelta(t, 200, *v.Measured, 1)
}
