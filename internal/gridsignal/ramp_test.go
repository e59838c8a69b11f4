package gridsignal

import (
	"math/rand/v2"
	"testing"
)

// square returns n samples at rate of a square wave that is low for
// lowN samples, then high for highN, repeating from low.
func square(n, lowN, highN int, low, high float64) []float64 {
	v := make([]float64, n)
	for i := range v {
		if i%(lowN+highN) < lowN {
			v[i] = low
		} else {
			v[i] = high
		}
	}
	return v
}

func TestRampSwingHandBuilt(t *testing.T) {
	step := make([]float64, 50) // 0 until 2.0 s, then 5
	for i := 20; i < len(step); i++ {
		step[i] = 5
	}
	stepDown := make([]float64, 50) // 7 until 3.0 s, then 2
	for i := range stepDown {
		stepDown[i] = 7
		if i >= 30 {
			stepDown[i] = 2
		}
	}
	ramp := make([]float64, 151) // 30 units/s for 10 s, then flat
	for i := range ramp {
		ramp[i] = float64(3 * min(i, 100))
	}
	zig := []float64{0, 4, 1, 6, 2, 2, 9, 3, 3, 3}
	tests := []struct {
		name            string
		s               Series
		window          float64
		up, down, swing Change
	}{
		{"step up, 1 s", Series{10, step}, 1,
			Change{5, 1.9, 2}, Change{}, Change{5, 1.9, 2}},
		{"step down, 1 s", Series{10, stepDown}, 1,
			Change{}, Change{5, 2.9, 3}, Change{5, 2.9, 3}},
		{"step up, one sample", Series{10, step}, 0.1,
			Change{5, 1.9, 2}, Change{}, Change{5, 1.9, 2}},
		// The whole second from 0 s to 1 s is the first with the largest rise.
		{"ramp 30/s, 1 s", Series{10, ramp}, 1,
			Change{30, 0, 1}, Change{}, Change{30, 0, 1}},
		{"ramp 30/s, 2.5 s", Series{10, ramp}, 2.5,
			Change{75, 0, 2.5}, Change{}, Change{75, 0, 2.5}},
		// 0.57 s at 100 samples/s is 57 samples, though 0.57*100 < 57 in float64.
		{"ramp 3/sample, 0.57 s at 100/s", Series{100, ramp}, 0.57,
			Change{171, 0, 0.57}, Change{}, Change{171, 0, 0.57}},
		{"ramp, whole record", Series{10, ramp}, 15,
			Change{300, 0, 10}, Change{}, Change{300, 0, 10}},
		// Low 1.4 s, high 0.6 s (duty 0.3), 100 apart: the first edges.
		{"square, 0.5 s", Series{10, square(100, 14, 6, -20, 80)}, 0.5,
			Change{100, 1.3, 1.4}, Change{100, 1.9, 2}, Change{100, 1.3, 1.4}},
		{"square, 3 s", Series{10, square(100, 14, 6, -20, 80)}, 3,
			Change{100, 1.3, 1.4}, Change{100, 1.9, 2}, Change{100, 1.3, 1.4}},
		{"constant", Series{10, []float64{4, 4, 4, 4}}, 0.2,
			Change{}, Change{}, Change{}},
		// Rises 0→4, 1→6, 2→9; falls 4→1, 6→2, 9→3; at 0.2 s (2 samples):
		// rise 7 (2 at 0.4 s → 9 at 0.6 s); fall 6 (9 at 0.6 → 3 at 0.7).
		{"zigzag, 0.2 s", Series{10, zig}, 0.2,
			Change{7, 0.5, 0.6}, Change{6, 0.6, 0.7}, Change{7, 0.5, 0.6}},
		{"zigzag, whole record", Series{10, zig}, 0.9,
			Change{9, 0, 0.6}, Change{6, 0.6, 0.7}, Change{9, 0, 0.6}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up, down, err := Ramp(tt.s, tt.window)
			if err != nil {
				t.Fatal(err)
			}
			swing, err := Swing(tt.s, tt.window)
			if err != nil {
				t.Fatal(err)
			}
			if up != tt.up || down != tt.down || swing != tt.swing {
				t.Errorf("up %+v, down %+v, swing %+v\nwant up %+v, down %+v, swing %+v", up, down, swing, tt.up, tt.down, tt.swing)
			}
		})
	}
}

// bruteRamp is the definition, pair by pair: the earliest end, then the
// latest start, rises before falls for the swing.
func bruteRamp(v []float64, w int) (up, down, swing pair) {
	for j := 1; j < len(v); j++ {
		var rise, fall pair
		for i := j - 1; i >= max(0, j-w); i-- {
			if d := v[j] - v[i]; d > rise.value {
				rise = pair{d, i, j}
			}
			if d := v[i] - v[j]; d > fall.value {
				fall = pair{d, i, j}
			}
		}
		if rise.value > up.value {
			up = rise
		}
		if fall.value > down.value {
			down = fall
		}
		if rise.value > swing.value {
			swing = rise
		}
		if fall.value > swing.value {
			swing = fall
		}
	}
	return up, down, swing
}

// bruteSwing is max - min over every window of w+1 samples.
func bruteSwing(v []float64, w int) float64 {
	best := 0.0
	for s := 0; s+w < len(v); s++ {
		lo, hi := v[s], v[s]
		for _, x := range v[s : s+w+1] {
			lo, hi = min(lo, x), max(hi, x)
		}
		best = max(best, hi-lo)
	}
	return best
}

func TestRampSwingAgainstBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	tests := []struct {
		name string
		gen  func() float64
	}{
		{"few levels (ties)", func() float64 { return float64(r.IntN(4)) }},
		{"continuous", func() float64 { return r.NormFloat64() * 1e3 }},
		{"random walk", nil},
	}
	const rate = 10.0
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for trial := range 40 {
				n := 2 + r.IntN(200)
				v := make([]float64, n)
				for i := range v {
					if tt.gen != nil {
						v[i] = tt.gen()
					} else if i > 0 {
						v[i] = v[i-1] + r.NormFloat64()
					}
				}
				w := 1 + r.IntN(n-1)
				s := Series{rate, v}
				up, down, err := Ramp(s, float64(w)/rate)
				if err != nil {
					t.Fatal(err)
				}
				swing, err := Swing(s, float64(w)/rate)
				if err != nil {
					t.Fatal(err)
				}
				bu, bd, bs := bruteRamp(v, w)
				if up != bu.change(s) || down != bd.change(s) || swing != bs.change(s) {
					t.Fatalf("trial %d (n %d, w %d): up %+v down %+v swing %+v; brute force %+v %+v %+v",
						trial, n, w, up, down, swing, bu.change(s), bd.change(s), bs.change(s))
				}
				if want := bruteSwing(v, w); swing.Value != want {
					t.Fatalf("trial %d (n %d, w %d): swing %g, max-min over windows %g", trial, n, w, swing.Value, want)
				}
			}
		})
	}
}
