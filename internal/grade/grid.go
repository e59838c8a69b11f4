package grade

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/seamdc/seam/internal/gridsignal"
	"github.com/seamdc/seam/internal/plan"
)

// The grid checks measure the waveform of a power channel, not each
// sample: grid_ramp, grid_swing, grid_line and grid_band_rms take the
// good samples of each of their steps, put them on a uniform grid and
// measure it with internal/gridsignal; restores_within compares the
// samples after an event with the channel's mean before it.
//
// # The uniform grid
//
// Each step's good samples are one run, split where two of them are
// further apart than the channel's max gap. A run is resampled by
// linear interpolation from its first sample, at an interval that
// divides window_s into a whole number of intervals no longer than the
// run's median sample interval (the lower median, of at most 65,536
// intervals spread evenly over the run); for grid_line and
// grid_band_rms that number has no prime factor above 5 (a record of
// window_s is then an FFT of a length that stays fast) and is at least
// 2.5 × f2 × window_s. So the grid is never coarser than the samples,
// and a meter read at a steady period whose window_s is a whole number
// of periods (20 ms and 60 s) is measured as it was sampled.
//
// # Records
//
// grid_ramp and grid_swing measure each run whole: the largest change
// within any window_s (a run shorter than window_s: within the run).
// grid_line and grid_band_rms measure each consecutive record of
// window_s from the run's first sample, and one more record ending at
// the run's last when the records leave samples over, so that every
// sample is in a record; the worst record decides. A run shorter than
// window_s is one record from its first sample (its end cut to the
// longest length with no prime factor above 5, at most a few percent),
// measured only if gridsignal accepts it: long enough for the band's
// lower edge (1/f1) and for segment_s.
//
// # Outcomes
//
// FAIL is a measure above max in a run (between gaps, so no gap is
// bridged by interpolation in it). Else ERROR: samples slower than the
// band needs (the median interval above 1/(2.5 × f2), with 1 % of
// slack for timestamps' jitter), then a gap longer than the max gap,
// then a step too short to measure. Else PASS. Measured is the worst
// measure in the channel's unit (kW), Limit is max, Margin max −
// Measured, and At where the worst change (its earlier sample) or
// record starts.

// rateSlack is how far the samples' median rate may fall below
// 2.5 × f2 (timestamps jitter) before the band is refused.
const rateSlack = 0.01

// gridTol is the relative tolerance of the whole-number counts of
// intervals taken from times in seconds.
const gridTol = 1e-9

// gridMeasure grades grid_ramp, grid_swing, grid_line and grid_band_rms.
type gridMeasure struct {
	g    *Grader
	c    plan.Check
	wins []window
	// from and to are the windows as times from the case's start (start,
	// in Unix nanoseconds).
	from, to []time.Duration
	start    int64
	gaps     *gaps
	// kept are, per window, its good samples: times from the case's
	// start and values.
	kept  []kept
	n     int
	names []string // each window's steps
}

type kept struct {
	t []time.Duration
	v []float64
}

// estimateAt is the count of samples from which a window's storage is
// sized for the whole window, at the rate they came in.
const estimateAt = 64

// maxEstimate bounds that size (64 MiB): beyond it the storage doubles.
const maxEstimate = 1 << 22

// grow makes room in k, a window ending at to: at estimateAt samples
// for the whole window at their rate (so a steady meter's samples are
// stored once, never copied), else twice as much.
func (k *kept) grow(to time.Duration) {
	n := len(k.t)
	c := max(2*n, estimateAt)
	if n == estimateAt {
		if per := (k.t[n-1] - k.t[0]) / time.Duration(n-1); per > 0 {
			c = max(c, int(min(int64(maxEstimate), int64((to-k.t[0])/per)*51/50+estimateAt)))
		}
	}
	t, v := make([]time.Duration, n, c), make([]float64, n, c)
	copy(t, k.t)
	copy(v, k.v)
	k.t, k.v = t, v
}

func newGrid(g *Grader) (kind, error) {
	c := g.c
	switch {
	case c.Max == nil:
		return nil, fmt.Errorf("%s check %s needs max", c.Kind, c.ID)
	case !(c.WindowS > 0) || math.IsInf(c.WindowS, 0):
		return nil, fmt.Errorf("%s check %s needs window_s above 0 s, not %g", c.Kind, c.ID, c.WindowS)
	case c.Kind == plan.GridRamp && c.Direction != plan.Up && c.Direction != plan.Down:
		return nil, fmt.Errorf("grid_ramp check %s needs direction up or down, not %q", c.ID, c.Direction)
	}
	if c.Kind == plan.GridLine || c.Kind == plan.GridBandRMS {
		if !(c.BandLowHz > 0) || !(c.BandHighHz > c.BandLowHz) || math.IsInf(c.BandHighHz, 0) {
			return nil, fmt.Errorf("%s check %s needs 0 < band_low_hz < band_high_hz, not %g..%g Hz", c.Kind, c.ID, c.BandLowHz, c.BandHighHz)
		}
		if c.Kind == plan.GridBandRMS && !(c.SegmentS > 0) {
			return nil, fmt.Errorf("grid_band_rms check %s needs segment_s above 0 s, not %g", c.ID, c.SegmentS)
		}
	}
	wins, err := g.windows()
	if err != nil {
		return nil, err
	}
	wins, names := joinSteps(wins, c.Steps)
	m := &gridMeasure{g: g, c: c, wins: wins, gaps: newGaps(wins, g.maxGap, g.tl.Start), kept: make([]kept, len(wins)),
		start: g.tl.Start.UnixNano(), names: names}
	for _, w := range wins {
		m.from = append(m.from, w.From.Sub(g.tl.Start))
		m.to = append(m.to, w.To.Sub(g.tl.Start))
	}
	return m, nil
}

func (m *gridMeasure) add(s Sample) {
	if !s.Good {
		return
	}
	d := time.Duration(s.Time.UnixNano() - m.start)
	in := false
	for i, from := range m.from {
		if d < from || d > m.to[i] {
			continue
		}
		k := &m.kept[i]
		if len(k.t) == cap(k.t) {
			k.grow(m.to[i])
		}
		k.t, k.v = append(k.t, d), append(k.v, s.Value)
		in = true
	}
	if in {
		m.n++
	}
}

// gap notes, through the gaps helper, the longest stretch of window i
// without a good sample (its edges included).
func (m *gridMeasure) gap(i int, ts []time.Duration) {
	start, prev := m.g.tl.Start, m.from[i]
	note := func(to time.Duration) {
		if d := to - prev; d > m.gaps.worst {
			m.gaps.worst, m.gaps.from = d, start.Add(prev)
		}
	}
	for _, t := range ts {
		note(t)
		prev = t
	}
	if m.to[i] > m.from[i] {
		note(m.to[i])
	}
}

func (m *gridMeasure) spectral() bool {
	return m.c.Kind == plan.GridLine || m.c.Kind == plan.GridBandRMS
}

// found is a run's measure.
type found struct {
	value   float64
	at      time.Duration // where the change, swing or record starts
	to      time.Duration // ramp and swing: where it ends
	freq    float64       // grid_line: the line's frequency
	records int           // spectral: records measured in the run
	rate    float64       // the grid's rate, samples/s
	short   bool          // the run was shorter than window_s: measured whole
	step    string
}

func (m *gridMeasure) verdict(v *Verdict) {
	v.Samples = m.n
	if m.n == 0 {
		v.Outcome, v.Detail = Error, "no good sample in the graded window"
		return
	}
	var best *found
	var rateProblem, unmeasured string
	records := 0
	for i := range m.wins {
		step := m.step(i)
		ts, vs := m.kept[i].t, m.kept[i].v
		m.gap(i, ts)
		if len(ts) == 0 {
			continue // the gap covers it
		}
		rs := runs(ts, m.g.maxGap)
		for _, r := range rs {
			f, err := m.measure(ts[r[0]:r[1]], vs[r[0]:r[1]])
			switch {
			// a stretch between gaps may be a few stray samples: the
			// gap is the problem then, not their rate
			case errors.Is(err, gridsignal.ErrRate) && len(rs) == 1:
				if rateProblem == "" {
					rateProblem = fmt.Sprintf("during %s, %s", step, err.Error())
				}
				continue
			case err != nil:
				if unmeasured == "" {
					unmeasured = fmt.Sprintf("cannot measure the samples of step %s (%s from %s): %s", step,
						plan.DurationText((ts[r[1]-1] - ts[r[0]]).Seconds()), rel(m.g.tl.Start.Add(ts[r[0]]), m.g.tl.Start), err)
				}
				continue
			}
			f.step = step
			records += f.records
			if best == nil || f.value > best.value {
				best = &f
			}
		}
	}
	limit := *m.c.Max
	if best != nil {
		v.Measured, v.Limit, v.Margin = ptr(best.value), ptr(limit), ptr(limit-best.value)
		v.At = ptr(m.g.tl.Start.Add(best.at))
	}
	switch {
	case best != nil && best.value > limit:
		v.Outcome, v.Detail = Fail, m.sentence(best, records)
	case rateProblem != "":
		v.Outcome, v.Detail = Error, rateProblem
	case m.gaps.problem() != "":
		v.Outcome, v.Detail, v.At = Error, m.gaps.problem(), m.gaps.at()
	case unmeasured != "":
		v.Outcome, v.Detail = Error, unmeasured
	case best == nil:
		v.Outcome, v.Detail = Error, "nothing could be measured in the graded window"
	default:
		v.Outcome, v.Detail = Pass, m.sentence(best, records)
	}
}

func (m *gridMeasure) step(i int) string {
	if i < len(m.names) {
		return m.names[i]
	}
	return fmt.Sprintf("window %d", i+1)
}

// joinSteps makes one window of steps that ran one after the other (a
// job's start, its training and its stop are one record of the site's
// power), named by their first and last step.
func joinSteps(wins []window, steps []string) ([]window, []string) {
	if len(steps) != len(wins) {
		return wins, nil
	}
	var out []window
	var names []string
	first := 0
	for i, w := range wins {
		if i > 0 && !w.From.After(out[len(out)-1].To.Add(time.Millisecond)) {
			out[len(out)-1].To = w.To
			names[len(names)-1] = steps[first] + "…" + steps[i]
			continue
		}
		first = i
		out = append(out, w)
		names = append(names, steps[i])
	}
	return out, names
}

// runs splits times into runs of samples no further apart than gap:
// index ranges [a, b).
func runs(ts []time.Duration, gap time.Duration) [][2]int {
	var out [][2]int
	a := 0
	for i := 1; i < len(ts); i++ {
		if ts[i]-ts[i-1] > gap {
			out = append(out, [2]int{a, i})
			a = i
		}
	}
	return append(out, [2]int{a, len(ts)})
}

// measure measures one run of samples.
func (m *gridMeasure) measure(ts []time.Duration, vs []float64) (found, error) {
	c := m.c
	if len(ts) < 2 {
		return found{}, fmt.Errorf("%w: one sample", gridsignal.ErrWindow)
	}
	run, err := NewGridRun(c, ts, vs)
	if err != nil {
		return found{}, err
	}
	rate, x, k := run.Series.Rate, run.Series.Values, float64(run.Window)
	f := found{rate: rate}
	start := ts[0]
	off := func(s float64) time.Duration { return start + plan.Seconds(s) }
	s := gridsignal.Series{Rate: rate, Values: x}
	switch c.Kind {
	case plan.GridRamp, plan.GridSwing:
		if len(x) < 2 {
			return found{}, fmt.Errorf("%w: the samples span less than one interval of the grid", gridsignal.ErrWindow)
		}
		w := c.WindowS
		if len(x)-1 < int(k) {
			w, f.short = float64(len(x)-1)/rate, true
		}
		var ch gridsignal.Change
		var err error
		if c.Kind == plan.GridSwing {
			ch, err = gridsignal.Swing(s, w)
		} else {
			var up, down gridsignal.Change
			up, down, err = gridsignal.Ramp(s, w)
			ch = up
			if c.Direction == plan.Down {
				ch = down
			}
		}
		if err != nil {
			return found{}, err
		}
		f.value, f.at, f.to = ch.Value, off(ch.From), off(ch.To)
		return f, nil
	}
	starts, l, short := run.Records()
	f.short = short
	for i, a := range starts {
		rec := gridsignal.Series{Rate: rate, Values: x[a : a+l]}
		var val, freq float64
		var err error
		if c.Kind == plan.GridLine {
			var line gridsignal.Line
			line, err = gridsignal.LargestLine(rec, c.BandLowHz, c.BandHighHz)
			val, freq = line.Amplitude, line.Freq
		} else {
			val, err = gridsignal.BandRMS(rec, c.BandLowHz, c.BandHighHz, c.SegmentS)
		}
		if err != nil {
			return found{}, err
		}
		if i == 0 || val > f.value {
			f.value, f.freq, f.at = val, freq, off(float64(a)/rate)
		}
		f.records++
	}
	return f, nil
}

// GridRate is the rate, in samples/s, of the uniform grid a grid
// check (grid_ramp, grid_swing, grid_line, grid_band_rms) puts a
// stretch of samples on whose median interval is interval: window_s
// divided into a whole number of intervals no longer than interval
// (for the spectral kinds a number with no prime factor above 5, and at
// least 2.5 × f2 × window_s). A record the grader measures starts at a
// verdict's At and holds window_s × rate samples, so a plot can
// resample the same record. The error wraps gridsignal.ErrRate when the
// interval is too long for the band (more than 1 % above
// 1/(2.5 × f2)), gridsignal.ErrSeries when it is not positive.
func GridRate(c plan.Check, interval time.Duration) (float64, error) {
	dt := interval.Seconds()
	if dt <= 0 {
		return 0, fmt.Errorf("%w: most samples share their time with another", gridsignal.ErrSeries)
	}
	if !(c.WindowS > 0) {
		return 0, fmt.Errorf("%w: window_s %g s", gridsignal.ErrWindow, c.WindowS)
	}
	k := math.Ceil(c.WindowS / dt * (1 - gridTol))
	if c.Kind == plan.GridLine || c.Kind == plan.GridBandRMS {
		need := gridsignal.MinRateFactor * c.BandHighHz
		if 1/dt < need*(1-rateSlack) {
			return 0, fmt.Errorf("%w: the samples come every %s (%.4g samples/s); the band up to %g Hz needs at least %g samples/s (%g × f2)",
				gridsignal.ErrRate, durationText(dt), 1/dt, c.BandHighHz, need, gridsignal.MinRateFactor)
		}
		k = float64(gridsignal.FastLengthAbove(int(math.Max(k, math.Ceil(need*c.WindowS*(1-gridTol))))))
	}
	return k / c.WindowS, nil
}

// recordStarts are the first samples of the records of l samples in n:
// every l from 0, and one ending at n when samples are left over.
func recordStarts(n, l int) []int {
	var out []int
	a := 0
	for ; a+l <= n; a += l {
		out = append(out, a)
	}
	if a < n && n >= l {
		out = append(out, n-l)
	}
	return out
}

// medianSpan is how many intervals, spread evenly over a run, its
// median interval is taken of: plenty to read a meter's period.
const medianSpan = 1 << 16

// medianInterval is the lower median of the intervals between ts (of
// medianSpan of them, evenly spread, in a longer run).
func medianInterval(ts []time.Duration) time.Duration {
	n := len(ts) - 1
	stride := 1
	if n > medianSpan {
		stride = (n + medianSpan - 1) / medianSpan
	}
	d := make([]time.Duration, 0, n/stride+1)
	for i := 0; i < n; i += stride {
		d = append(d, ts[i+1]-ts[i])
	}
	return nth(d, (len(d)-1)/2)
}

// nth is the k-th smallest of d (reordering d): quickselect with the
// median of three as pivot and three-way partitions, so that the equal
// intervals of a steady rate take one pass.
func nth(d []time.Duration, k int) time.Duration {
	lo, hi := 0, len(d)
	for hi-lo > 1 {
		a, b, c := d[lo], d[lo+(hi-lo)/2], d[hi-1]
		p := max(min(a, b), min(max(a, b), c))
		// d[lo:lt] < p, d[lt:i] == p, d[gt:hi] > p
		lt, i, gt := lo, lo, hi
		for i < gt {
			switch x := d[i]; {
			case x < p:
				d[lt], d[i] = d[i], d[lt]
				lt++
				i++
			case x > p:
				gt--
				d[gt], d[i] = d[i], d[gt]
			default:
				i++
			}
		}
		switch {
		case k < lt:
			hi = lt
		case k >= gt:
			lo = gt
		default:
			return p
		}
	}
	return d[lo]
}

// resample puts the samples (ts, vs) on a grid from ts[0] at rate
// samples/s up to the last sample, by linear interpolation. Samples
// already on that grid (a meter read at a steady period) are returned
// as they are.
func resample(ts []time.Duration, vs []float64, rate float64) []float64 {
	if onGrid(ts, rate) {
		return vs
	}
	last := len(ts) - 1
	span := (ts[last] - ts[0]).Seconds()
	n := int(math.Floor(span*rate*(1+gridTol))) + 1
	out := make([]float64, n)
	step := 1e9 / rate // ns
	j := 0
	for i := range out {
		t := float64(ts[0]) + float64(i)*step
		for j+1 < last && float64(ts[j+1]) <= t {
			j++
		}
		a, b := float64(ts[j]), float64(ts[j+1])
		switch {
		case t >= b:
			out[i] = vs[j+1]
		case t <= a:
			out[i] = vs[j]
		default:
			out[i] = vs[j] + (t-a)/(b-a)*(vs[j+1]-vs[j])
		}
	}
	return out
}

// onGrid reports whether every sample is at ts[0] + i/rate, to the
// nanosecond.
func onGrid(ts []time.Duration, rate float64) bool {
	step := 1e9 / rate
	if step != math.Round(step) {
		return false
	}
	d := time.Duration(step)
	for i, t := range ts {
		if t != ts[0]+time.Duration(i)*d {
			return false
		}
	}
	return true
}

func (m *gridMeasure) sentence(f *found, records int) string {
	c, start := m.c, m.g.tl.Start
	unit := c.Unit
	within := "within " + plan.DurationText(c.WindowS)
	if f.short {
		within = "within the step " + f.step + " (shorter than " + plan.DurationText(c.WindowS) + ")"
	}
	var what string
	switch c.Kind {
	case plan.GridRamp:
		verb := "rise"
		if c.Direction == plan.Down {
			verb = "fall"
		}
		what = fmt.Sprintf("largest %s %s is %s from %s to %s", verb, within, num(f.value, unit), rel(start.Add(f.at), start), rel(start.Add(f.to), start))
	case plan.GridSwing:
		what = fmt.Sprintf("largest swing %s is %s from %s to %s", within, num(f.value, unit), rel(start.Add(f.at), start), rel(start.Add(f.to), start))
	case plan.GridLine:
		what = fmt.Sprintf("largest line %s is %s at %.3g Hz %s", bandText(c), num(f.value, unit), f.freq, m.record(f))
	case plan.GridBandRMS:
		what = fmt.Sprintf("RMS %s (%s segments) is %s %s", bandText(c), plan.DurationText(c.SegmentS), num(f.value, unit), m.record(f))
	}
	var how []string
	if m.spectral() && !(f.short && records == 1) {
		rec := "record"
		if records != 1 {
			rec += "s"
		}
		how = append(how, fmt.Sprintf("worst of %d %s of %s", records, rec, plan.DurationText(c.WindowS)))
	}
	how = append(how, fmt.Sprintf("%d samples, on a grid of %.4g samples/s", m.n, f.rate))
	limit := *c.Max
	if f.value > limit {
		return fmt.Sprintf("%s, above the limit %s by %s (%s)", what, num(limit, unit), num(f.value-limit, unit), strings.Join(how, "; "))
	}
	return fmt.Sprintf("%s, limit %s (%s)", what, num(limit, unit), strings.Join(how, "; "))
}

// record names the record a spectral measure was worst in.
func (m *gridMeasure) record(f *found) string {
	start := m.g.tl.Start
	if f.short {
		return fmt.Sprintf("in step %s from %s, shorter than %s: one record", f.step, rel(start.Add(f.at), start), plan.DurationText(m.c.WindowS))
	}
	return "in the record from " + rel(start.Add(f.at), start)
}

func bandText(c plan.Check) string { return fmt.Sprintf("in %g–%g Hz", c.BandLowHz, c.BandHighHz) }

// durationText renders an interval in seconds: "20 ms", "1.5 s".
func durationText(s float64) string {
	if s < 1 {
		return fmt.Sprintf("%.4g ms", s*1000)
	}
	return fmt.Sprintf("%.4g s", s)
}

// restore grades restores_within: the reference is the mean of the good
// samples in the reference_s before step from started; from within_s
// after step from ended until for_s after it, every good sample is at
// least share_pct % of it. Measured is the lowest sample, Limit the
// share of the reference, both in the channel's unit.
type restore struct {
	g         *Grader
	ref       window // [start(from) − reference_s, start(from)), half open
	win       window // [t0 + within_s, t0 + for_s]
	gaps      *gaps
	sum       float64
	nRef      int
	n, below  int
	low       Sample
	limit     float64
	limitDone bool
}

func newRestore(g *Grader) (kind, error) {
	c := g.c
	switch {
	case !(c.SharePct > 0):
		return nil, fmt.Errorf("restores_within check %s needs share_pct above 0, not %g", c.ID, c.SharePct)
	case !(c.ReferenceS > 0):
		return nil, fmt.Errorf("restores_within check %s needs reference_s above 0 s, not %g", c.ID, c.ReferenceS)
	case !(c.ForS > c.WithinS):
		return nil, fmt.Errorf("restores_within check %s needs for_s (%g s) after within_s (%g s)", c.ID, c.ForS, c.WithinS)
	}
	sp := g.tl.Step(c.From)
	if sp == nil {
		return nil, fmt.Errorf("step %s, its time zero, did not run", c.From)
	}
	wins, err := g.windows()
	if err != nil {
		return nil, err
	}
	return &restore{g: g, ref: window{From: sp.Start.Add(-seconds(c.ReferenceS)), To: sp.Start}, win: wins[0],
		gaps: newGaps(wins, g.maxGap, g.tl.Start)}, nil
}

func (r *restore) add(s Sample) {
	if !s.Good {
		return
	}
	if !s.Time.Before(r.ref.From) && s.Time.Before(r.ref.To) {
		r.sum += s.Value
		r.nRef++
	}
	if !r.win.Has(s.Time) {
		return
	}
	if !r.limitDone { // samples come in time order: the reference is complete
		r.limit, r.limitDone = r.g.c.SharePct/100*r.reference(), true
	}
	r.gaps.good(s.Time)
	r.n++
	if r.n == 1 || s.Value < r.low.Value {
		r.low = s
	}
	if r.nRef > 0 && s.Value < r.limit {
		r.below++
	}
}

func (r *restore) reference() float64 {
	if r.nRef == 0 {
		return math.NaN()
	}
	return r.sum / float64(r.nRef)
}

func (r *restore) verdict(v *Verdict) {
	r.gaps.finish()
	c, start := r.g.c, r.g.tl.Start
	unit := c.Unit
	v.Samples = r.n
	ref := r.reference()
	limit := c.SharePct / 100 * ref
	refText := fmt.Sprintf("the reference %s (the mean of %d samples over the %s before %s started)", num(ref, unit), r.nRef, plan.DurationText(c.ReferenceS), c.From)
	span := fmt.Sprintf("from %s to %s after %s", plan.DurationText(c.WithinS), plan.DurationText(c.ForS), c.From)
	if r.nRef > 0 && r.n > 0 {
		v.Measured, v.Limit, v.Margin, v.At = ptr(r.low.Value), ptr(limit), ptr(r.low.Value-limit), ptr(r.low.Time)
	}
	t0 := r.win.From.Add(-seconds(c.WithinS))
	switch {
	case r.nRef == 0:
		v.Outcome = Error
		v.Detail = fmt.Sprintf("no good sample in the %s before %s started (%s to %s): no reference to restore to",
			plan.DurationText(c.ReferenceS), c.From, rel(r.ref.From, start), rel(r.ref.To, start))
	case !(ref > 0):
		v.Outcome = Error
		v.Detail = fmt.Sprintf("%s is not above 0: there is no power to restore", refText)
	case r.below > 0:
		v.Outcome = Fail
		v.Detail = fmt.Sprintf("%s at %s (%.3g s after %s ended) is %.3g %% of %s, below the %g %% (%s) required %s (%d of %d samples below)",
			num(r.low.Value, unit), rel(r.low.Time, start), r.low.Time.Sub(t0).Seconds(), c.From, 100*r.low.Value/ref, refText,
			c.SharePct, num(limit, unit), span, r.below, r.n)
	case r.n == 0:
		v.Outcome, v.Detail = Error, fmt.Sprintf("no good sample %s", span)
	case r.gaps.problem() != "":
		v.Outcome, v.Detail, v.At = Error, r.gaps.problem(), r.gaps.at()
	default:
		v.Outcome = Pass
		v.Detail = fmt.Sprintf("%s, every sample at least %g %% (%s) of %s: lowest %s (%.3g %%) at %s; %d samples",
			span, c.SharePct, num(limit, unit), refText, num(r.low.Value, unit), 100*r.low.Value/ref, rel(r.low.Time, start), r.n)
	}
}
