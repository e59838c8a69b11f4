package gridsignal

import (
	"math"
	"math/rand/v2"
	"testing"
)

// wave samples f(t) at rate for d seconds.
func wave(rate, d float64, f func(t float64) float64) Series {
	v := make([]float64, int(math.Round(rate*d)))
	for i := range v {
		v[i] = f(float64(i) / rate)
	}
	return Series{rate, v}
}

func sine(a, f float64) func(float64) float64 {
	return func(t float64) float64 { return a * math.Sin(2*math.Pi*f*t) }
}

// within reports whether got is within rel (relative) of want.
func within(got, want, rel float64) bool {
	return math.Abs(got-want) <= rel*math.Abs(want)
}

func TestLargestLine(t *testing.T) {
	const dp, duty = 2000.0, 0.3
	squareWave := func(d float64) func(float64) float64 {
		// Period 4 s (0.25 Hz): 200 samples at 50/s, high for duty of them.
		return func(t float64) float64 {
			if math.Mod(t, 4) < 4*d-1e-9 {
				return 1e6 + dp
			}
			return 1e6
		}
	}
	tests := []struct {
		name       string
		s          Series
		f1, f2     float64
		freq, ampl float64
	}{
		{"sine 0.5 Hz on a bin", wave(50, 120, sine(1500, 0.5)), 0.1, 20, 0.5, 1500},
		{"sine 7 Hz on a bin, 0.1 Hz record", wave(50, 10, sine(3, 7)), 0.1, 20, 7, 3},
		{"sine plus trend and offset", wave(50, 120, func(t float64) float64 {
			return 5e7 + 2e4*t + sine(1500, 0.5)(t)
		}), 0.1, 20, 0.5, 1500},
		{"sine 2 Hz, band up to 2 Hz", wave(5, 600, sine(10, 2)), 0.05, 2, 2, 10},
		{"square wave, duty 0.3", wave(50, 120, squareWave(duty)), 0.1, 20,
			0.25, 2 * dp / math.Pi * math.Sin(math.Pi*duty)},
		{"square wave, duty 0.5", wave(50, 120, squareWave(0.5)), 0.1, 20,
			0.25, 2 * dp / math.Pi},
		{"square wave, band above it sees the 2nd harmonic", wave(50, 120, squareWave(duty)), 0.3, 20,
			0.5, 2 * dp / math.Pi / 2 * math.Sin(2*math.Pi*duty)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := LargestLine(tt.s, tt.f1, tt.f2)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%g Hz, amplitude %g (%+.3f %%)", got.Freq, got.Amplitude, 100*(got.Amplitude/tt.ampl-1))
			if !within(got.Freq, tt.freq, 1e-9) || !within(got.Amplitude, tt.ampl, 0.01) {
				t.Errorf("got %g Hz, amplitude %g; want %g Hz, %g (±1 %%)", got.Freq, got.Amplitude, tt.freq, tt.ampl)
			}
		})
	}
}

func TestBandRMS(t *testing.T) {
	const fs, sigma = 50.0, 3.0
	r := rand.New(rand.NewPCG(7, 11))
	noise := make([]float64, 120*fs)
	for i := range noise {
		noise[i] = 4e5 + sigma*r.NormFloat64()
	}
	white := Series{fs, noise}
	noiseRMS := func(f1, f2 float64) float64 { return sigma * math.Sqrt((f2-f1)/(fs/2)) }
	const a = 100.0
	tests := []struct {
		name            string
		s               Series
		f1, f2, segment float64
		want, rel       float64
	}{
		{"white noise 1-10 Hz", white, 1, 10, 10, noiseRMS(1, 10), 0.05},
		{"white noise 0.5-20 Hz", white, 0.5, 20, 10, noiseRMS(0.5, 20), 0.05},
		// The band takes the bins on both edges: 9 bins of 0.25 Hz here,
		// 2.25 Hz of noise rather than 2 (sqrt(9/8) = 6 % above the
		// formula; 1-10 Hz in 0.1 Hz bins is 0.55 % above it).
		{"white noise 2-4 Hz, 4 s segments", white, 2, 4, 4, sigma * math.Sqrt(9*0.25/(fs/2)), 0.05},
		{"sine 3 Hz on a bin, in band", wave(fs, 120, sine(a, 3)), 1, 10, 10, a / math.Sqrt2, 0.02},
		{"sine 3.05 Hz between bins, in band", wave(fs, 120, sine(a, 3.05)), 1, 10, 10, a / math.Sqrt2, 0.02},
		{"sine plus trend and offset, in band", wave(fs, 120, func(t float64) float64 {
			return 5e7 + 2e4*t + sine(a, 3.05)(t)
		}), 1, 10, 10, a / math.Sqrt2, 0.02},
		{"sine 0.2 Hz, in band 0.1-1 Hz", wave(fs, 600, sine(a, 0.2)), 0.1, 1, 60, a / math.Sqrt2, 0.02},
		{"odd segment length", wave(fs, 120, sine(a, 3)), 1, 10, 9.98, a / math.Sqrt2, 0.02},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := BandRMS(tt.s, tt.f1, tt.f2, tt.segment)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("band RMS %g, want %g (%+.2f %%)", got, tt.want, 100*(got/tt.want-1))
			if !within(got, tt.want, tt.rel) {
				t.Errorf("band RMS %g, want %g (±%g %%)", got, tt.want, 100*tt.rel)
			}
		})
	}
	outside := []struct {
		name            string
		s               Series
		f1, f2, segment float64
	}{
		{"sine 15 Hz, band 1-10 Hz", wave(fs, 120, sine(a, 15)), 1, 10, 10},
		{"sine 0.3 Hz, band 1-10 Hz", wave(fs, 120, sine(a, 0.3)), 1, 10, 10},
		{"sine 12.3 Hz, band 1-10 Hz", wave(fs, 120, sine(a, 12.3)), 1, 10, 10},
	}
	for _, tt := range outside {
		t.Run(tt.name, func(t *testing.T) {
			got, err := BandRMS(tt.s, tt.f1, tt.f2, tt.segment)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("band RMS %g", got)
			if got > 1e-3*a {
				t.Errorf("band RMS %g, want near 0 (under %g)", got, 1e-3*a)
			}
		})
	}
}

func TestSpectrumHoldsTheLargestLine(t *testing.T) {
	tests := []struct {
		name   string
		s      Series
		f1, f2 float64
		want   Line // the line at want.Freq
	}{
		{"sine 0.5 Hz", wave(50, 120, sine(1500, 0.5)), 0.1, 20, Line{0.5, 1500}},
		{"sine 7 Hz in 1..10 Hz", wave(50, 10, sine(3, 7)), 1, 10, Line{7, 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lines, err := Spectrum(tt.s, tt.f1, tt.f2)
			if err != nil {
				t.Fatal(err)
			}
			df := tt.s.Rate / float64(len(tt.s.Values))
			if got := len(lines); math.Abs(float64(got)-((tt.f2-tt.f1)/df+1)) > 1 {
				t.Errorf("%d lines in %g..%g Hz at %g Hz spacing", got, tt.f1, tt.f2, df)
			}
			if lines[0].Freq < tt.f1*(1-1e-9) || lines[len(lines)-1].Freq > tt.f2*(1+1e-9) {
				t.Errorf("lines run %g..%g Hz, outside the band %g..%g Hz", lines[0].Freq, lines[len(lines)-1].Freq, tt.f1, tt.f2)
			}
			largest, err := LargestLine(tt.s, tt.f1, tt.f2)
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, l := range lines {
				if l.Amplitude > largest.Amplitude {
					t.Errorf("line %g Hz (%g) above the largest line %+v", l.Freq, l.Amplitude, largest)
				}
				if math.Abs(l.Freq-tt.want.Freq) < df/2 {
					found = true
					if !within(l.Amplitude, tt.want.Amplitude, 2e-4) || l != largest {
						t.Errorf("line at %g Hz: %+v, want amplitude %g and the largest line %+v", tt.want.Freq, l, tt.want.Amplitude, largest)
					}
				}
			}
			if !found {
				t.Errorf("no line at %g Hz", tt.want.Freq)
			}
		})
	}
}
