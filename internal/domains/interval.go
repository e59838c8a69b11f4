package domains

import (
	"math"
	"time"
)

// The checkpoint interval. δ is a checkpoint's write time, R the
// restart time, M the job's mean time between interruptions; τ is the
// compute time between two checkpoints, as both papers write it, so a
// job checkpoints every τ + δ (the profiles' interval, start to start).

// Young is Young's first-order optimum (CACM 17(9), 1974): τ = √(2δM).
func Young(write, mtbf time.Duration) time.Duration {
	if mtbf <= 0 || isInf(mtbf) {
		return inf
	}
	return seconds(math.Sqrt(2 * write.Seconds() * mtbf.Seconds()))
}

// Daly is Daly's higher-order optimum (FGCS 22(3), 2006, "A higher order
// estimate of the optimum checkpoint interval for restart dumps"):
//
//	τ = √(2δM)·[1 + ⅓·√(δ/2M) + (1/9)·(δ/2M)] − δ   for δ < 2M
//	τ = M                                          for δ ≥ 2M
//
// The first branch reproduces the paper's three worked cases (M = 24 h,
// 6 h and 15 min with δ = 5 min: 117, 57 and 9.1 min; TestDalyPaperCases).
func Daly(write, mtbf time.Duration) time.Duration {
	if mtbf <= 0 || isInf(mtbf) {
		return inf
	}
	d, m := write.Seconds(), mtbf.Seconds()
	if d >= 2*m {
		return mtbf
	}
	x := d / (2 * m)
	return seconds(math.Sqrt(2*d*m)*(1+math.Sqrt(x)/3+x/9) - d)
}

// Optimum is the τ that maximises ETTR in Daly's complete model (the
// cost function the paper's perturbation series approximates): the root
// of (1 − τ/M)·e^{τ/M} = e^{−δ/M}, found by bisection on τ/M ∈ (0, 1).
// It needs no branch: it falls as M falls, for every δ.
func Optimum(write, mtbf time.Duration) time.Duration {
	if mtbf <= 0 || isInf(mtbf) {
		return inf
	}
	target := math.Exp(-write.Seconds() / mtbf.Seconds())
	lo, hi := 0.0, 1.0
	for range 100 {
		mid := (lo + hi) / 2
		if (1-mid)*math.Exp(mid) > target {
			lo = mid
		} else {
			hi = mid
		}
	}
	return seconds((lo + hi) / 2 * mtbf.Seconds())
}

// WriteBound reports whether a job is write-bound: at the optimum
// interval it would compute no longer than it writes (τ* ≤ δ), so no
// interval helps and only a faster write or a smaller job does. Putting
// τ = δ into the optimum's condition (1 − τ/M)·e^{τ/M} = e^{−δ/M} gives
// 1 − δ/M = e^{−2δ/M}, whose root is δ/M ≈ 0.797 (WriteBoundShare): a
// write of about four fifths of the MTBF or more. There the best
// interval's ETTR is at most about 20 % (with no restart time).
func WriteBound(write, mtbf time.Duration) bool {
	if write <= 0 || mtbf <= 0 || isInf(mtbf) {
		return false
	}
	return Optimum(write, mtbf) <= write
}

// WriteBoundShare is the write as a share of the MTBF from which a job is
// write-bound, the root of 1 − x = e^{−2x}; for the words of the advice
// and the docs (WriteBound decides from the model itself).
const WriteBoundShare = 0.797

// ETTR is the effective training time ratio in Daly's complete model
// with exponentially distributed interruptions: the share of wall time
// that is useful work for a job that computes τ = interval − write
// between checkpoints, τ / (M·e^{R/M}·(e^{(τ+δ)/M} − 1)). With no
// interruptions (M infinite) it is τ/(τ+δ); 0 for an interval not longer
// than the write.
func ETTR(interval, write, restart, mtbf time.Duration) float64 {
	tau := (interval - write).Seconds()
	if tau <= 0 {
		return 0
	}
	d := write.Seconds()
	if isInf(mtbf) {
		return tau / (tau + d)
	}
	m := mtbf.Seconds()
	if m <= 0 {
		return 0
	}
	return tau / (m * math.Exp(restart.Seconds()/m) * math.Expm1((tau+d)/m))
}

// MTBF is the mean time between interruptions at rate interruptions per
// Month; infinite at rate 0.
func MTBF(rate float64) time.Duration {
	if rate <= 0 {
		return inf
	}
	return seconds(Month.Seconds() / rate)
}

// inf is an infinite duration: no interruptions.
const inf = time.Duration(math.MaxInt64)

func isInf(d time.Duration) bool { return d == inf }

func seconds(s float64) time.Duration {
	if s >= inf.Seconds() {
		return inf
	}
	return time.Duration(math.Round(s * float64(time.Second)))
}
