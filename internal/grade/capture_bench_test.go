package grade

import (
	"math"
	"testing"
	"time"
)

// BenchmarkGradeCapture10s grades a 10 s capture at 10 kHz (100,000
// samples, 1,000 half-cycle RMS values) against ITIC.
func BenchmarkGradeCapture10s(b *testing.B) {
	const rate, n = 10000.0, 100000
	v := make([]float64, n)
	for k := range v {
		t := float64(k) / rate
		a := 1.0
		if t >= 1 && t < 1.1 {
			a = 0.6
		}
		v[k] = 230 * math.Sqrt2 * a * math.Sin(2*math.Pi*50*t)
	}
	w := Wave{Channel: "VA", Start: recStart, Trigger: recStart.Add(time.Second), Rate: rate, LineHz: 50, Values: v}
	for b.Loop() {
		if r := GradeCapture(w, 230, itic, edges); r.Verdict.Outcome != Fail {
			b.Fatalf("%s %s", r.Verdict.Outcome, r.Verdict.Detail)
		}
	}
}
