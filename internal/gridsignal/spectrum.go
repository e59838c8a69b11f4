package gridsignal

import (
	"fmt"
	"math"
	"math/cmplx"

	"gonum.org/v1/gonum/dsp/fourier"
	"gonum.org/v1/gonum/dsp/window"
)

// LargestLine returns the largest spectral line with f1 <= f <= f2 Hz:
// the line of Spectrum with the largest amplitude (the lowest in
// frequency on a tie). The package doc gives the exact rules.
//
// The FFT's cost grows with the record's largest prime factor: 30000
// samples take about 2 ms, a prime 30011 about 0.8 s. A record cut to
// whole seconds at a whole-number rate keeps it fast.
func LargestLine(s Series, f1, f2 float64) (Line, error) {
	lines, err := Spectrum(s, f1, f2)
	if err != nil {
		return Line{}, err
	}
	best := lines[0]
	for _, l := range lines[1:] {
		if l.Amplitude > best.Amplitude {
			best = l
		}
	}
	return best, nil
}

// Spectrum returns every bin with f1 <= f <= f2 Hz, lowest first, as a
// line of peak amplitude: the record's mean and linear trend removed,
// one Hann window over the whole record, its FFT, and bin k read as a
// sinusoid of peak amplitude 2|X_k| / (N·CG), CG the window's coherent
// gain (the mean of its coefficients). It is what LargestLine reads
// the largest line from, for a plot of the whole band. It takes the
// same band, rate and resolution as LargestLine (the package doc).
func Spectrum(s Series, f1, f2 float64) ([]Line, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	if err := s.checkBand(f1, f2); err != nil {
		return nil, err
	}
	n := len(s.Values)
	if err := s.checkResolution("record", n, f1); err != nil {
		return nil, err
	}
	lo, hi, err := bins(s.Rate, n, f1, f2)
	if err != nil {
		return nil, err
	}
	w := hann(n)
	sum := 0.0
	for _, c := range w {
		sum += c
	}
	cg := sum / float64(n)
	x := make([]float64, n)
	detrend(x, s.Values)
	for i := range x {
		x[i] *= w[i]
	}
	X := fourier.NewFFT(n).Coefficients(nil, x)
	lines := make([]Line, 0, hi-lo+1)
	for k := lo; k <= hi; k++ {
		lines = append(lines, Line{
			Freq:      float64(k) * s.Rate / float64(n),
			Amplitude: 2 * cmplx.Abs(X[k]) / (float64(n) * cg),
		})
	}
	return lines, nil
}

// BandRMS returns the RMS of the series in f1 <= f <= f2 Hz from a
// Welch estimate of its power spectral density: segments of segment
// seconds (rounded to whole samples) overlapping by half, each with its
// mean and linear trend removed and a Hann window, the one-sided density
// 2|X_k|² / (Rate·Σw²) (the ENBW correction; DC and Nyquist not
// doubled) averaged over the segments, and the square root of
// Σ PSD_k·Δf over the bins in the band. The package doc gives the exact
// rules.
func BandRMS(s Series, f1, f2, segment float64) (float64, error) {
	if err := s.check(); err != nil {
		return 0, err
	}
	if err := s.checkBand(f1, f2); err != nil {
		return 0, err
	}
	n := len(s.Values)
	l, err := s.segment(segment)
	if err != nil {
		return 0, err
	}
	if err := s.checkResolution("segment", l, f1); err != nil {
		return 0, err
	}
	lo, hi, err := bins(s.Rate, l, f1, f2)
	if err != nil {
		return 0, err
	}
	w := hann(l)
	s2 := 0.0
	for _, c := range w {
		s2 += c * c
	}
	fft := fourier.NewFFT(l)
	x := make([]float64, l)
	X := make([]complex128, l/2+1)
	psd := make([]float64, hi-lo+1)
	hop := l / 2
	segs := 0
	for start := 0; start+l <= n; start += hop {
		detrend(x, s.Values[start:start+l])
		for i := range x {
			x[i] *= w[i]
		}
		fft.Coefficients(X, x)
		for k := lo; k <= hi; k++ {
			a := real(X[k])*real(X[k]) + imag(X[k])*imag(X[k])
			if k != 0 && 2*k != l {
				a *= 2
			}
			psd[k-lo] += a / (s.Rate * s2)
		}
		segs++
	}
	df := s.Rate / float64(l)
	power := 0.0
	for _, p := range psd {
		power += p / float64(segs) * df
	}
	return math.Sqrt(power), nil
}

// segment turns a segment in seconds into whole samples, checking that
// it holds two samples and fits the record.
func (s Series) segment(segment float64) (int, error) {
	n := len(s.Values)
	if math.IsNaN(segment) || math.IsInf(segment, 0) {
		return 0, fmt.Errorf("%w: segment %g s: want a finite number of seconds", ErrWindow, segment)
	}
	l := math.Round(segment * s.Rate)
	if l < 2 {
		return 0, fmt.Errorf("%w: segment %g s is fewer than two samples at %g samples/s: want at least %g s", ErrWindow, segment, s.Rate, 2/s.Rate)
	}
	if l > float64(n) {
		return 0, fmt.Errorf("%w: segment %g s (%g samples) is longer than the record (%g s: %d samples at %g samples/s)", ErrWindow, segment, l, float64(n)/s.Rate, n, s.Rate)
	}
	return int(l), nil
}

// bins returns the first and last bin of an l-point transform at rate
// whose frequencies lie in f1..f2.
func bins(rate float64, l int, f1, f2 float64) (lo, hi int, err error) {
	df := rate / float64(l)
	lo = int(math.Ceil(f1 / df * (1 - tol)))
	hi = min(int(math.Floor(f2/df*(1+tol))), l/2)
	if lo > hi {
		return 0, 0, fmt.Errorf("%w: no bin of the %g Hz spacing (%d samples at %g samples/s) lies in %g..%g Hz: widen the band or lengthen the record", ErrBand, df, l, rate, f1, f2)
	}
	return lo, hi, nil
}

// hann returns the l coefficients of gonum's (symmetric) Hann window.
func hann(l int) []float64 {
	w := make([]float64, l)
	for i := range w {
		w[i] = 1
	}
	return window.Hann(w)
}

// detrend writes v less its mean and least-squares linear trend
// (against the sample index) to dst.
func detrend(dst, v []float64) {
	n := float64(len(v))
	mean := 0.0
	for _, x := range v {
		mean += x
	}
	mean /= n
	mid := (n - 1) / 2
	sxy := 0.0
	for i, x := range v {
		sxy += (float64(i) - mid) * (x - mean)
	}
	slope := 0.0
	if sxx := n * (n*n - 1) / 12; sxx > 0 {
		slope = sxy / sxx
	}
	for i, x := range v {
		dst[i] = x - mean - slope*(float64(i)-mid)
	}
}
