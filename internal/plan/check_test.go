package plan_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/plan"
)

// timing is a case that ran steps a (0–10 s) and b (10–30 s), ending at 40 s.
type timing struct{ t0 time.Time }

func (tm timing) StepSpan(id string) (time.Time, time.Time, bool) {
	switch id {
	case "a":
		return tm.t0, tm.t0.Add(10 * time.Second), true
	case "b":
		return tm.t0.Add(10 * time.Second), tm.t0.Add(30 * time.Second), true
	}
	return time.Time{}, time.Time{}, false
}

func (tm timing) CaseEnd() time.Time { return tm.t0.Add(40 * time.Second) }

func TestCheckMeaning(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(plan.Seconds(s)) }
	tm := timing{t0}
	for _, tt := range []struct {
		name    string
		c       plan.Check
		lo, hi  float64
		ok      bool
		windows []plan.Window
		text    string
	}{
		{"in band", plan.Check{Kind: plan.InBand, Unit: "V", Min: f(402.55), Max: f(427.45), Steps: []string{"a", "b"}},
			402.55, 427.45, true, []plan.Window{{at(0), at(10)}, {at(10), at(30)}}, "within 402.55–427.45 V during a, b"},
		{"deviation", plan.Check{Kind: plan.MaxDeviation, Unit: "V", Reference: f(415), MaxDeviation: f(33.2), Steps: []string{"b"}},
			381.8, 448.2, true, []plan.Window{{at(10), at(30)}}, "within 415 V ± 33.2 V during b"},
		{"recovery", plan.Check{Kind: plan.RecoveryTime, Unit: "V", Min: f(394), WithinS: 1.5, Steps: []string{"b"}},
			394, math.Inf(1), true, []plan.Window{{at(10), at(30)}}, "back at least 394 V in 1.5 s after each edge during b"},
		{"settles", plan.Check{Kind: plan.SettlesWithin, Unit: "V", Min: f(394), Max: f(436), WithinS: 2, ForS: 20, From: "a"},
			394, 436, true, []plan.Window{{at(12), at(30)}}, "within 394–436 V from 2 s to 20 s after a"},
		{"no interruption to the end", plan.Check{Kind: plan.NoInterruption, Unit: "V", Min: f(373.5), From: "a"},
			373.5, math.Inf(1), true, []plan.Window{{at(10), at(40)}}, "never below 373.5 V after a"},
		{"alarm", plan.Check{Kind: plan.AlarmWithin, WithinS: 5, From: "a"},
			math.Inf(-1), math.Inf(1), false, []plan.Window{{at(10), at(15)}}, "raised within 5 s after a"},
		// the grid kinds bound a measure of the waveform, not the values:
		// no accepted band (an interlock or a plot band at 1000 kW on a
		// site of 10 MW would be wrong)
		{"grid ramp", plan.Check{Kind: plan.GridRamp, Unit: "kW", Max: f(1000), WindowS: 1, Direction: plan.Down, Steps: []string{"b"}},
			math.Inf(-1), math.Inf(1), false, []plan.Window{{at(10), at(30)}}, "fall at most 1000 kW within any 1 s during b"},
		{"grid swing", plan.Check{Kind: plan.GridSwing, Unit: "kW", Max: f(1300), WindowS: 60, Steps: []string{"a", "b"}},
			math.Inf(-1), math.Inf(1), false, []plan.Window{{at(0), at(10)}, {at(10), at(30)}}, "swing at most 1300 kW within any 1 min during a, b"},
		{"grid line", plan.Check{Kind: plan.GridLine, Unit: "kW", Max: f(65), BandLowHz: 0.1, BandHighHz: 20, WindowS: 60, Steps: []string{"b"}},
			math.Inf(-1), math.Inf(1), false, []plan.Window{{at(10), at(30)}}, "largest line in 0.1–20 Hz at most 65 kW in each 1 min record during b"},
		{"grid band rms", plan.Check{Kind: plan.GridBandRMS, Unit: "kW", Max: f(65), BandLowHz: 0.1, BandHighHz: 20, WindowS: 60, SegmentS: 20, Steps: []string{"b"}},
			math.Inf(-1), math.Inf(1), false, []plan.Window{{at(10), at(30)}}, "RMS in 0.1–20 Hz at most 65 kW in each 1 min record (20 s segments) during b"},
		{"restores within", plan.Check{Kind: plan.RestoresWithin, SharePct: 90, ReferenceS: 5, WithinS: 1, ForS: 20, From: "a"},
			math.Inf(-1), math.Inf(1), false, []plan.Window{{at(11), at(30)}}, "at least 90 % of the mean over the 5 s before a, from 1 s to 20 s after a"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			lo, hi, ok := tt.c.Accepted()
			assert.Equal(t, tt.ok, ok)
			assert.InDelta(t, tt.lo, lo, 1e-9)
			if math.IsInf(tt.hi, 1) {
				assert.True(t, math.IsInf(hi, 1))
			} else {
				assert.InDelta(t, tt.hi, hi, 1e-9)
			}
			w, err := tt.c.Windows(tm)
			require.NoError(t, err)
			assert.Equal(t, tt.windows, w)
			assert.Equal(t, tt.text, tt.c.Describe())
		})
	}
	_, err := plan.Check{Kind: plan.InBand, Min: f(1), Steps: []string{"z"}}.Windows(tm)
	assert.ErrorContains(t, err, "step z did not run")
}
