package grade

import (
	"math"
	"strings"
	"testing"
	"time"
)

// itic is contract.ITIC in numbers (the satcmd test checks they agree).
var itic = []MaskPoint{{0.02, 0, 120}, {0.5, 70, 120}, {10, 80, 110}, {1e9, 90, 110}}

var recStart = time.Date(2026, 5, 1, 9, 59, 58, 700000000, time.UTC) // the recorder's clock

// wave is 3 s of a 230 V, 50 Hz phase voltage at 1 kHz whose RMS is
// scaled by level(t) (t in s from the record's start); the trigger is
// at 1 s.
func wave(rate, hz float64, level func(t float64) float64) Wave {
	n := int(3 * rate)
	v := make([]float64, n)
	for k := range v {
		t := float64(k) / rate
		v[k] = 230 * math.Sqrt2 * level(t) * math.Sin(2*math.Pi*hz*t)
	}
	return Wave{Channel: "VA", Start: recStart, Trigger: recStart.Add(time.Second), Rate: rate, LineHz: hz, Values: v}
}

// between is an excursion to pct % from 1 s for d seconds.
func between(pct, d float64) func(float64) float64 {
	return func(t float64) float64 {
		if t >= 1 && t < 1+d {
			return pct / 100
		}
		return 1
	}
}

// The runner commanded its edges on the site's clock: the recorder's
// reads 1.3 s behind it.
var edges = []time.Time{recStart.Add(-5 * time.Second), recStart.Add(time.Second + 1300*time.Millisecond), recStart.Add(20 * time.Second)}

func TestGradeCaptureITIC(t *testing.T) {
	tests := []struct {
		name   string
		hz     float64
		level  func(float64) float64
		want   Outcome
		detail string
	}{
		{"steady", 50, func(float64) float64 { return 1 }, Pass, "stayed within 90–110 %"},
		{"a 10 ms dropout rides through", 50, between(0, 0.010), Pass, "ranged 70.7–100.0 %"},
		{"a 60 ms dropout", 50, between(0, 0.060), Fail, "below 70 % of nominal for 50 ms"},
		{"a 60 ms dropout at 60 Hz", 60, between(0, 0.060), Fail, "below 70 % of nominal"},
		{"75 % for 300 ms", 50, between(75, 0.3), Pass, "the mask allows 500 ms"},
		{"75 % for 1 s", 50, between(75, 1), Fail, "below 80 % of nominal for 990 ms"},
		{"125 % for 100 ms", 50, between(125, 0.1), Fail, "above 120 % of nominal"},
		{"115 % for 300 ms", 50, between(115, 0.3), Pass, "past 110 %"},
		{"a stepped sag: 0 % for 10 ms, then 85 % for 1.5 s", 50, func(t float64) float64 {
			switch {
			case t >= 1 && t < 1.01:
				return 0
			case t >= 1.01 && t < 2.5:
				return 0.85
			}
			return 1
		}, Pass, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := GradeCapture(wave(1000, tt.hz, tt.level), 230, itic, edges)
			if r.Verdict.Outcome != tt.want || !strings.Contains(r.Verdict.Detail, tt.detail) {
				t.Fatalf("%s: %s, want %s containing %q", r.Verdict.Outcome, r.Verdict.Detail, tt.want, tt.detail)
			}
			if r.Align.By != "trigger" || math.Abs(r.Align.OffsetS-1.3) > 1e-9 || !r.Align.Edge.Equal(edges[1]) {
				t.Errorf("alignment %+v, want the trigger on edge 2, offset +1.3 s", r.Align)
			}
			if want := 0.5 / tt.hz; math.Abs(r.StepS-want) > 1e-3 {
				t.Errorf("RMS step %g s, want half a cycle (%g)", r.StepS, want)
			}
		})
	}
}

// TestGradeCaptureAlignedTimes: the RMS values sit on the run's time
// line, the excursion at the commanded edge, not 1.3 s before it.
func TestGradeCaptureAlignedTimes(t *testing.T) {
	r := GradeCapture(wave(1000, 50, between(0, 0.1)), 230, itic, edges)
	if r.Verdict.Outcome != Fail || r.Verdict.At == nil {
		t.Fatalf("%s %v", r.Verdict.Outcome, r.Verdict.Detail)
	}
	if d := r.Verdict.At.Sub(edges[1]); d < 0 || d > 30*time.Millisecond {
		t.Errorf("the dropout starts %v after the commanded edge on the aligned time line, want within a cycle and a half", d)
	}
	if r.MinPct > 1 || r.MaxPct < 99 || r.MaxPct > 101 {
		t.Errorf("RMS range %g–%g %%, want 0–100", r.MinPct, r.MaxPct)
	}
}

// TestGradeCaptureOnset: a record without a trigger is aligned on the
// first half cycle outside the steady band.
func TestGradeCaptureOnset(t *testing.T) {
	w := wave(2000, 50, between(75, 0.2))
	w.Trigger = w.Start
	r := GradeCapture(w, 230, itic, edges)
	if r.Align.By != "onset" || math.Abs(r.Align.OffsetS-1.3) > 0.02 {
		t.Errorf("alignment %+v, want by onset with an offset near +1.3 s", r.Align)
	}
	if r.Verdict.Outcome != Pass {
		t.Errorf("75 %% for 200 ms: %s %s, want PASS (ITIC allows 70 %% for 0.5 s)", r.Verdict.Outcome, r.Verdict.Detail)
	}
}

func TestGradeCaptureMissing(t *testing.T) {
	w := wave(1000, 50, func(float64) float64 { return 1 })
	w.Values[500] = math.NaN()
	if r := GradeCapture(w, 230, itic, edges); r.Verdict.Outcome != Error || !strings.Contains(r.Verdict.Detail, "hold missing samples") {
		t.Errorf("a missing sample and nothing proven: %s %s, want ERROR", r.Verdict.Outcome, r.Verdict.Detail)
	}
	w = wave(1000, 50, between(0, 0.2))
	w.Values[100] = math.NaN()
	if r := GradeCapture(w, 230, itic, edges); r.Verdict.Outcome != Fail {
		t.Errorf("a missing sample and a proven dropout: %s %s, want FAIL", r.Verdict.Outcome, r.Verdict.Detail)
	}
}

func TestGradeCaptureCustomMask(t *testing.T) {
	tight := []MaskPoint{{0.1, 85, 115}, {1e9, 95, 105}}
	r := GradeCapture(wave(1000, 50, between(90, 0.3)), 230, tight, edges)
	if r.Verdict.Outcome != Fail || !strings.Contains(r.Verdict.Detail, "below 95 % of nominal for 290 ms") || !strings.Contains(r.Verdict.Detail, "allows 100 ms") {
		t.Errorf("%s %s", r.Verdict.Outcome, r.Verdict.Detail)
	}
	if *r.Verdict.Margin > -0.18 || r.Verdict.Unit != "s" {
		t.Errorf("margin %g %s, want about −0.19 s (290 ms against 100 ms)", *r.Verdict.Margin, r.Verdict.Unit)
	}
}

func TestGradeCaptureCannot(t *testing.T) {
	ok := wave(1000, 50, func(float64) float64 { return 1 })
	slow := wave(200, 50, func(float64) float64 { return 1 })
	noHz := ok
	noHz.LineHz = 0
	tests := []struct {
		w       Wave
		nominal float64
		mask    []MaskPoint
		edges   []time.Time
		want    string
	}{
		{slow, 230, itic, edges, "record at 1 kHz or more"},
		{ok, 0, itic, edges, "nominal 0"},
		{noHz, 230, itic, edges, "line frequency 0"},
		{ok, 230, nil, edges, "no mask"},
		{ok, 230, itic, nil, "no commanded edge"},
		{ok, 230, []MaskPoint{{1, 0, 120}, {0.5, 70, 120}}, edges, "mask point 2 lasts 0.5s"},
	}
	for _, tt := range tests {
		r := GradeCapture(tt.w, tt.nominal, tt.mask, tt.edges)
		if r.Verdict.Outcome != Error || !strings.Contains(r.Verdict.Detail, tt.want) {
			t.Errorf("%s %s, want ERROR with %q", r.Verdict.Outcome, r.Verdict.Detail, tt.want)
		}
	}
}
