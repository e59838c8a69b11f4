package gridsignal

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func TestErrors(t *testing.T) {
	ok := wave(50, 120, sine(1, 0.5)) // 6000 samples, 120 s
	short := wave(50, 5, sine(1, 1))  // 250 samples, 5 s
	nan := wave(50, 20, sine(1, 1))
	nan.Values[17] = math.NaN()
	inf := wave(50, 20, sine(1, 1))
	inf.Values[3] = math.Inf(-1)
	ramp := func(s Series, w float64) error { _, _, err := Ramp(s, w); return err }
	swing := func(s Series, w float64) error { _, err := Swing(s, w); return err }
	line := func(s Series, f1, f2 float64) error { _, err := LargestLine(s, f1, f2); return err }
	band := func(s Series, f1, f2, seg float64) error { _, err := BandRMS(s, f1, f2, seg); return err }
	tests := []struct {
		name string
		err  error
		kind error
		want string // in the message
	}{
		{"ramp: empty", ramp(Series{Rate: 50}, 1), ErrSeries, "no values"},
		{"swing: empty", swing(Series{Rate: 50}, 1), ErrSeries, "no values"},
		{"line: empty", line(Series{Rate: 50}, 0.1, 1), ErrSeries, "no values"},
		{"band: empty", band(Series{Rate: 50}, 0.1, 1, 10), ErrSeries, "no values"},
		{"ramp: NaN", ramp(nan, 1), ErrSeries, "sample 17 (at 0.34 s) is NaN"},
		{"swing: NaN", swing(nan, 1), ErrSeries, "sample 17 (at 0.34 s) is NaN"},
		{"line: NaN", line(nan, 0.1, 1), ErrSeries, "sample 17 (at 0.34 s) is NaN"},
		{"band: NaN", band(nan, 0.1, 1, 10), ErrSeries, "sample 17 (at 0.34 s) is NaN"},
		{"band: infinite", band(inf, 0.1, 1, 10), ErrSeries, "sample 3 (at 0.06 s) is -Inf"},
		{"ramp: zero rate", ramp(Series{0, []float64{1, 2}}, 1), ErrSeries, "rate 0 samples/s"},
		{"line: NaN rate", line(Series{math.NaN(), []float64{1, 2}}, 0.1, 1), ErrSeries, "rate NaN samples/s"},

		{"ramp: window under two samples", ramp(ok, 0.019), ErrWindow, "window 0.019 s holds fewer than two samples at 50 samples/s: want at least 0.02 s"},
		{"swing: window under two samples", swing(ok, 0), ErrWindow, "window 0 s holds fewer than two samples"},
		{"ramp: negative window", ramp(ok, -1), ErrWindow, "window -1 s holds fewer than two samples"},
		{"ramp: NaN window", ramp(ok, math.NaN()), ErrWindow, "window NaN s"},
		{"ramp: window longer than the record", ramp(short, 5), ErrWindow, "window 5 s is longer than the record (4.98 s: 250 samples at 50 samples/s)"},
		{"swing: window longer than the record", swing(short, 60), ErrWindow, "window 60 s is longer than the record"},
		{"band: segment under two samples", band(ok, 0.1, 1, 0.02), ErrWindow, "segment 0.02 s is fewer than two samples at 50 samples/s: want at least 0.04 s"},
		{"band: segment longer than the record", band(ok, 0.1, 1, 121), ErrWindow, "segment 121 s (6050 samples) is longer than the record (120 s: 6000 samples at 50 samples/s)"},
		{"band: infinite segment", band(ok, 0.1, 1, math.Inf(1)), ErrWindow, "segment +Inf s"},

		{"line: record too short for f1", line(short, 0.1, 1), ErrResolution, "a record of 5 s (250 samples at 50 samples/s) cannot resolve 0.1 Hz: needs at least 10 s (1/f1)"},
		{"band: segment too short for f1", band(ok, 0.1, 1, 5), ErrResolution, "a segment of 5 s (250 samples at 50 samples/s) cannot resolve 0.1 Hz: needs at least 10 s (1/f1)"},

		{"line: rate too slow for f2", line(ok, 0.1, 20.5), ErrRate, "50 samples/s cannot measure up to 20.5 Hz: needs at least 51.25 samples/s (2.5 × f2)"},
		{"band: rate too slow for f2", band(ok, 0.1, 25, 10), ErrRate, "50 samples/s cannot measure up to 25 Hz: needs at least 62.5 samples/s (2.5 × f2)"},

		{"line: f1 = f2", line(ok, 1, 1), ErrBand, "1..1 Hz: want f1 < f2"},
		{"band: f1 > f2", band(ok, 5, 1, 10), ErrBand, "5..1 Hz: want f1 < f2"},
		{"line: f1 zero", line(ok, 0, 1), ErrBand, "0..1 Hz: want finite edges with f1 > 0"},
		{"band: f1 negative", band(ok, -1, 1, 10), ErrBand, "-1..1 Hz: want finite edges with f1 > 0"},
		{"line: f2 NaN", line(ok, 0.1, math.NaN()), ErrBand, "0.1..NaN Hz"},
		{"band: no bin in the band", band(ok, 0.15, 0.19, 10), ErrBand, "no bin of the 0.1 Hz spacing (500 samples at 50 samples/s) lies in 0.15..0.19 Hz"},
		{"line: no bin in the band", line(wave(50, 10, sine(1, 1)), 0.15, 0.19), ErrBand, "no bin of the 0.1 Hz spacing (500 samples at 50 samples/s) lies in 0.15..0.19 Hz"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !errors.Is(tt.err, tt.kind) {
				t.Fatalf("error %v, want one wrapping %q", tt.err, tt.kind)
			}
			if !strings.Contains(tt.err.Error(), tt.want) {
				t.Errorf("error %q\nwant it to say %q", tt.err, tt.want)
			}
		})
	}
}

// The edges of what each check allows are allowed.
func TestLimitsAllowed(t *testing.T) {
	s := wave(50, 10, sine(1, 5)) // 500 samples, 10 s
	tests := []struct {
		name string
		err  error
	}{
		{"window of one sample interval", func() error { _, _, err := Ramp(s, 0.02); return err }()},
		{"window of the whole record", func() error { _, err := Swing(s, 9.98); return err }()},
		{"record exactly 1/f1", func() error { _, err := LargestLine(s, 0.1, 20); return err }()},
		{"segment of the whole record at exactly 1/f1, rate exactly 2.5 f2", func() error { _, err := BandRMS(s, 0.1, 20, 10); return err }()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.err != nil {
				t.Error(tt.err)
			}
		})
	}
}
