package gridsignal

import (
	"errors"
	"fmt"
	"math"
)

// Series is power (any unit; seam passes W) sampled uniformly at Rate
// samples per second.
type Series struct {
	Rate   float64
	Values []float64
}

// Change is the largest change found and where: From and To are times
// in seconds from the first sample.
type Change struct {
	Value, From, To float64
}

// Line is a spectral line: its frequency in Hz and its peak amplitude in
// the Series' unit.
type Line struct {
	Freq, Amplitude float64
}

// The kinds of error; every error the package returns wraps one.
var (
	// ErrSeries: the series cannot be measured (no values, a value that
	// is not a number or infinite, a rate that is not positive).
	ErrSeries = errors.New("unusable series")
	// ErrWindow: a window or segment holds fewer than two samples or is
	// longer than the record.
	ErrWindow = errors.New("window does not fit the record")
	// ErrBand: the band's edges are not 0 < f1 < f2, or no bin lies in it.
	ErrBand = errors.New("unusable band")
	// ErrRate: the rate is too slow for the band's upper edge.
	ErrRate = errors.New("sampling too slow for the band")
	// ErrResolution: the record or segment is too short to resolve the
	// band's lower edge.
	ErrResolution = errors.New("too short to resolve the band")
)

// tol is the relative tolerance of comparisons between a time or
// frequency the caller gives and one the sampling makes.
const tol = 1e-9

// MinRateFactor is the least ratio of the sampling rate to the band's
// upper edge: the rate must be at least 2.5·f2 samples/s.
const MinRateFactor = 2.5

// check validates the series itself.
func (s Series) check() error {
	if !(s.Rate > 0) || math.IsInf(s.Rate, 0) {
		return fmt.Errorf("%w: rate %g samples/s: want a positive, finite rate", ErrSeries, s.Rate)
	}
	if len(s.Values) == 0 {
		return fmt.Errorf("%w: no values", ErrSeries)
	}
	for i, v := range s.Values {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("%w: sample %d (at %g s) is %g: want a finite number (fill or cut gaps before measuring)", ErrSeries, i, float64(i)/s.Rate, v)
		}
	}
	return nil
}

// at is the time of sample i.
func (s Series) at(i int) float64 { return float64(i) / s.Rate }

// checkBand validates f1..f2 against the series' rate.
func (s Series) checkBand(f1, f2 float64) error {
	if !(f1 > 0) || math.IsInf(f1, 0) || math.IsNaN(f2) || math.IsInf(f2, 0) {
		return fmt.Errorf("%w: %g..%g Hz: want finite edges with f1 > 0 (DC is not in any band)", ErrBand, f1, f2)
	}
	if f1 >= f2 {
		return fmt.Errorf("%w: %g..%g Hz: want f1 < f2", ErrBand, f1, f2)
	}
	if need := MinRateFactor * f2; s.Rate < need*(1-tol) {
		return fmt.Errorf("%w: %g samples/s cannot measure up to %g Hz: needs at least %g samples/s (%g × f2)", ErrRate, s.Rate, f2, need, MinRateFactor)
	}
	return nil
}

// checkResolution checks that a transform of l samples resolves f1;
// what names it in the error ("record", "segment").
func (s Series) checkResolution(what string, l int, f1 float64) error {
	if float64(l)*f1 < s.Rate*(1-tol) {
		return fmt.Errorf("%w: a %s of %g s (%d samples at %g samples/s) cannot resolve %g Hz: needs at least %g s (1/f1)", ErrResolution, what, float64(l)/s.Rate, l, s.Rate, f1, 1/f1)
	}
	return nil
}

// lag turns a window in seconds into the most samples apart two samples
// in it can be, checking that it holds two samples and fits the record.
func (s Series) lag(window float64) (int, error) {
	n := len(s.Values)
	if math.IsNaN(window) || math.IsInf(window, 0) {
		return 0, fmt.Errorf("%w: window %g s: want a finite number of seconds", ErrWindow, window)
	}
	w := math.Floor(window * s.Rate * (1 + tol))
	if w < 1 {
		return 0, fmt.Errorf("%w: window %g s holds fewer than two samples at %g samples/s: want at least %g s", ErrWindow, window, s.Rate, 1/s.Rate)
	}
	if w > float64(n-1) {
		return 0, fmt.Errorf("%w: window %g s is longer than the record (%g s: %d samples at %g samples/s)", ErrWindow, window, s.at(n-1), n, s.Rate)
	}
	return int(w), nil
}
