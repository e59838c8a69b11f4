// Package gridsignal computes the measures of a uniformly sampled
// site-power waveform that a utility's grid clauses name: the ramp and
// the swing over a window, the largest spectral line in a band and the
// RMS in a band. contractc vet applies them to a modelled waveform and
// the grader to measured samples, so both read the same numbers. It is
// pure: no clock, no I/O.
//
// # The record
//
// A Series holds n values v[0..n-1] sampled at Rate samples per second;
// sample i is at time t_i = i/Rate seconds from the first sample. The
// record spans (n-1)/Rate seconds from its first sample to its last
// (Ramp, Swing); for the spectra it lasts n/Rate seconds (n samples of
// 1/Rate each, the DFT's resolution Rate/n). Values must be finite and
// there must be at least one; the unit is the caller's (seam passes W)
// and every result is in it.
//
// # Ramp and swing
//
// A window of w seconds holds the sample pairs no more than
// W = floor(w·Rate) samples apart (w·Rate is taken with a relative
// tolerance of 1e-9, so 0.57 s at 100 samples/s is 57 samples apart, not
// the 56 that floor(0.57·100) gives in floating point).
// W must be at least 1 (the window holds two samples) and at most n-1
// (the window fits in the record).
//
//   - Ramp's up is the largest rise max over i < j <= i+W of v[j]-v[i];
//     its down is the largest fall max over i < j <= i+W of v[i]-v[j],
//     reported as a positive number. From is t_i and To is t_j. Of
//     equal rises (falls) the one that ends first is reported and, of
//     those ending at that sample, the one that starts last (a step
//     reads as the one sample interval it happens in). A record that
//     never rises (falls) within a window gives the zero Change.
//   - Swing is the largest max-min over any window of W+1 consecutive
//     samples; From and To are the times of the two extremes, the
//     earlier first. It equals the larger of Ramp's up and down; of
//     equal swings the one that ends first is reported, a rise before a
//     fall at the same end.
//
// Both run in O(n) with monotonic deques.
//
// # Spectral measures
//
// A band f1..f2 Hz needs 0 < f1 < f2, a rate of at least 2.5·f2
// samples/s (above the Nyquist rate 2·f2 with margin for the
// anti-alias filter's roll-off), and a transform at least 1/f1 seconds
// long, so that its bin spacing is no coarser than f1 (both compared
// with a relative tolerance of 1e-9). A bin k of an
// L-point transform is at f_k = k·Rate/L and lies in the band when
// f1 <= f_k <= f2 (compared with a relative tolerance of 1e-9, so an
// edge that lands on a bin includes it); a band with no bin in it is an
// error. The window is gonum's symmetric Hann,
// w[m] = 0.5·(1 - cos(2πm/(L-1))), m = 0..L-1, and the transform is
// gonum's real FFT (fourier.NewFFT), unnormalised:
// X_k = Σ x[m]·w[m]·exp(-2πi·k·m/L).
//
// Before windowing, the mean and the least-squares linear trend are
// removed from the samples transformed (the whole record for
// LargestLine, each segment for BandRMS), so that an offset and a slow
// drift of site power do not leak into the band.
//
// LargestLine transforms the whole record once (L = n) and reads bin k
// as a sinusoid of peak amplitude
//
//	A_k = 2·|X_k| / (n·CG),  CG = (1/n)·Σ w[m]
//
// where CG, the window's coherent gain, is computed from the
// coefficients (about 0.5 for Hann). A sinusoid on a bin reads its own
// amplitude; one between two bins reads up to 1.42 dB (15 %) low (Hann's
// scalloping loss), so a record of whole cycles of the line of interest
// reads it in full (within 0.02 % in the tests, square waves included). The result is the bin with the largest A_k in the
// band (the lowest such bin on a tie), with its frequency f_k.
// Spectrum returns every bin's A_k in the band, lowest first: the
// spectrum a report plots, from which LargestLine reads its line.
//
// BandRMS estimates the power spectral density by Welch's method:
// segments of L = round(segment·Rate) samples (2 <= L <= n), one every
// floor(L/2) samples (50 % overlap) from the first sample, as many as
// fit (up to floor(L/2)-1 trailing samples go unused); each detrended,
// Hann-windowed and transformed; the one-sided density
//
//	PSD_k = 2·|X_k|² / (Rate·S2),  S2 = Σ w[m]²
//
// (DC, and the Nyquist bin k = L/2 when L is even, not doubled), in
// unit²/Hz, averaged over the segments. Dividing by Rate·S2 rather than
// by (Σ w[m])² is the equivalent-noise-bandwidth (ENBW) correction: the
// window widens each bin to ENBW = Rate·S2/(Σ w)² Hz (1.5 bins for
// Hann), and this scaling makes the density of broadband noise read its
// true level, so that Σ PSD_k·Δf over a band is the power in the band
// for noise and for a sinusoid alike (A²/2 for one of peak amplitude A,
// on a bin or between bins). The band RMS is
//
//	sqrt(Σ_{f1 <= f_k <= f2} PSD_k·Δf),  Δf = Rate/L.
//
// The sum takes the bins on both edges, so it covers one Δf more than
// f2-f1 when both edges fall on bins: broadband noise reads
// sqrt(1 + Δf/(f2-f1)) above its level over f2-f1 (0.55 % for 1..10 Hz
// in 10 s segments; 6 % for 2..4 Hz in 4 s segments). Choose segments
// long against the band.
//
// # Errors
//
// Errors wrap one of ErrSeries, ErrWindow, ErrBand, ErrRate and
// ErrResolution and name the numbers involved and what would do.
package gridsignal
