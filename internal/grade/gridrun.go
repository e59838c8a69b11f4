package grade

import (
	"fmt"
	"math"
	"time"

	"github.com/seamdc/seam/internal/gridsignal"
	"github.com/seamdc/seam/internal/plan"
)

// GridRun is a stretch of a grid check's good samples as the grader
// measures it: resampled onto the uniform grid of GridRate from its
// first sample, T0 after the case started. Window is the samples a
// window_s spans on that grid (its intervals). A report that plots a
// verdict cuts its runs and records with GridWindows, GridSplit,
// NewGridRun and Records, so that what it draws is what was graded.
type GridRun struct {
	T0     time.Duration
	Series gridsignal.Series
	Window int
}

// NewGridRun puts one run of good samples (times since the case's
// start, in order, no gap longer than the check's max gap) on the
// grader's grid: its rate is GridRate of the run's median interval.
func NewGridRun(c plan.Check, ts []time.Duration, vs []float64) (GridRun, error) {
	if len(ts) < 2 {
		return GridRun{}, fmt.Errorf("%w: one sample", gridsignal.ErrWindow)
	}
	rate, err := GridRate(c, medianInterval(ts))
	if err != nil {
		return GridRun{}, err
	}
	return GridRun{T0: ts[0], Series: gridsignal.Series{Rate: rate, Values: resample(ts, vs, rate)},
		Window: int(math.Round(rate * c.WindowS))}, nil
}

// Records are a spectral check's records in the run: each one's first
// sample, all of l samples (window_s each, one after the other, and one
// more ending at the run's last sample). A run shorter than window_s is
// one record cut to a length the FFT is fast for, and short says so.
func (r GridRun) Records() (starts []int, l int, short bool) {
	n := len(r.Series.Values)
	if n < r.Window {
		return []int{0}, gridsignal.FastLengthBelow(n), true
	}
	return recordStarts(n, r.Window), r.Window, false
}

// GridSplit cuts good samples (times in order) into the runs between
// gaps longer than gap: index ranges [a, b).
func GridSplit(ts []time.Duration, gap time.Duration) [][2]int { return runs(ts, gap) }

// GridWindows are the windows a grid check measures: its steps'
// windows, those that ran one after the other joined into one.
func GridWindows(c plan.Check, tl Timeline) ([]plan.Window, error) {
	wins, err := c.Windows(tl)
	if err != nil {
		return nil, err
	}
	wins, _ = joinSteps(wins, c.Steps)
	return wins, nil
}

// MaxGap is the longest time without a good sample a check of channel
// may have in tl (the default when the timeline sets none).
func MaxGap(tl Timeline, channel string, opt Options) time.Duration {
	if s, ok := tl.MaxGapS[channel]; ok && s > 0 {
		return seconds(s)
	}
	if opt.MaxGap > 0 {
		return opt.MaxGap
	}
	return 2 * time.Second
}
