package grade

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// MaskPoint is one segment of a voltage-tolerance mask (ITIC or a
// contract's custom mask): an excursion lasting up to DurationS seconds
// must stay within [MinPct, MaxPct] % of nominal. Points go in
// increasing duration; the last is the steady band.
type MaskPoint struct {
	DurationS float64 `json:"duration_s"`
	MinPct    float64 `json:"min_pct"`
	MaxPct    float64 `json:"max_pct"`
}

// Wave is one analog channel of a waveform capture (a power-quality
// analyser's COMTRADE record), in the channel's primary unit.
type Wave struct {
	Channel string
	// Start is the recorder's time of the first sample, Trigger its
	// trigger point's (zero, or equal to Start, when it has none): both
	// on the recorder's clock, which drifts from the runner's.
	Start, Trigger time.Time
	Rate           float64   // samples per second, uniform
	LineHz         float64   // the line frequency the RMS windows follow
	Values         []float64 // instantaneous values; NaN where missing
}

// Alignment is how a capture was put on the run's time line: the
// commanded edge it was aligned on, the capture's event time (its
// trigger, or the first half cycle outside the steady band), and the
// offset added to the recorder's times.
type Alignment struct {
	Edge    time.Time `json:"edge"`  // the runner's commanded edge (site time)
	Event   time.Time `json:"event"` // the capture's event, on the recorder's clock
	By      string    `json:"by"`    // "trigger" or "onset"
	OffsetS float64   `json:"offset_s"`
}

// RMSPoint is one RMS value of the capture, in % of nominal, at the end
// of its window on the run's time line; NaN where the window holds a
// missing sample.
type RMSPoint struct {
	Time time.Time `json:"time"`
	Pct  float64   `json:"pct"`
}

// CaptureResult is a capture graded against a mask.
type CaptureResult struct {
	Verdict Verdict     `json:"verdict"`
	Align   Alignment   `json:"align"`
	RMS     []RMSPoint  `json:"-"`
	Mask    []MaskPoint `json:"mask"`
	// StepS is the time between RMS values (half a line cycle).
	StepS float64 `json:"step_s"`
	// MinPct and MaxPct are the lowest and highest RMS values.
	MinPct float64 `json:"min_pct"`
	MaxPct float64 `json:"max_pct"`
}

// CaptureRMS is the RMS method: IEC 61000-4-30's Urms(1/2), the RMS
// over one line cycle refreshed every half cycle. An excursion's
// duration is the number of half cycles it lasts × half a cycle.
const CaptureRMS = "RMS over one cycle, refreshed every half cycle (IEC 61000-4-30 Urms(1/2))"

// GradeCapture aligns w on the commanded edge nearest its event and
// grades its RMS against mask, nominal being the channel's nominal RMS
// value. For each mask point i, the longest run of RMS values below
// MinPct[i] or above MaxPct[i] may last no longer than the previous
// point's duration (none for the first point): that is what "an
// excursion lasting up to DurationS stays within [MinPct, MaxPct]"
// means for a stepped excursion (50 % for 10 ms then 85 % for 2 s
// passes ITIC; 75 % for 1 s does not).
func GradeCapture(w Wave, nominal float64, mask []MaskPoint, edges []time.Time) CaptureResult {
	r := CaptureResult{Mask: mask, Verdict: Verdict{Check: "capture " + w.Channel, Kind: "mask"}}
	if msg := checkCapture(w, nominal, mask, edges); msg != "" {
		r.Verdict.Outcome, r.Verdict.Detail = Error, "cannot grade the capture: "+msg
		return r
	}
	n := int(math.Round(w.Rate / w.LineHz))
	half := n / 2
	r.StepS = float64(half) / w.Rate
	pct, at := halfCycleRMS(w.Values, n, half, nominal)
	steady := mask[len(mask)-1]
	event, by := captureEvent(w, pct, at, steady)
	edge := nearestEdge(edges, event)
	r.Align = Alignment{Edge: edge, Event: event, By: by, OffsetS: edge.Sub(event).Seconds()}
	offset := edge.Sub(event)
	r.RMS = make([]RMSPoint, len(pct))
	r.MinPct, r.MaxPct = math.Inf(1), math.Inf(-1)
	for k, p := range pct {
		r.RMS[k] = RMSPoint{Time: w.Start.Add(sampleTime(at[k], w.Rate) + offset), Pct: p}
		if !math.IsNaN(p) {
			r.MinPct, r.MaxPct = min(r.MinPct, p), max(r.MaxPct, p)
		}
	}
	gradeMask(&r, pct, steady)
	return r
}

func checkCapture(w Wave, nominal float64, mask []MaskPoint, edges []time.Time) string {
	switch {
	case len(mask) == 0:
		return "no mask to grade against"
	case nominal <= 0 || math.IsNaN(nominal):
		return fmt.Sprintf("nominal %g: give the channel's nominal RMS value", nominal)
	case w.LineHz <= 0:
		return fmt.Sprintf("line frequency %g Hz: the capture must state its line frequency", w.LineHz)
	case w.Rate/w.LineHz < 8:
		return fmt.Sprintf("%g samples/s is %.1f samples a %g Hz cycle: an RMS per half cycle needs at least 8 (record at 1 kHz or more)", w.Rate, w.Rate/w.LineHz, w.LineHz)
	case len(w.Values) < int(math.Round(w.Rate/w.LineHz))*2:
		return fmt.Sprintf("%d samples of %s: fewer than two line cycles", len(w.Values), w.Channel)
	case len(edges) == 0:
		return "the case has no commanded edge (load step or fault) to align the capture on"
	}
	for i := 1; i < len(mask); i++ {
		if mask[i].DurationS <= mask[i-1].DurationS {
			return fmt.Sprintf("mask point %d lasts %gs, not longer than point %d's %gs", i+1, mask[i].DurationS, i, mask[i-1].DurationS)
		}
	}
	return ""
}

// halfCycleRMS returns the RMS of each one-cycle window (n samples)
// stepped by half samples, in % of nominal, and the sample each window
// ends on.
func halfCycleRMS(v []float64, n, half int, nominal float64) ([]float64, []int) {
	var pct []float64
	var at []int
	for start := 0; start+n <= len(v); start += half {
		sum, bad := 0.0, false
		for _, x := range v[start : start+n] {
			if math.IsNaN(x) {
				bad = true
				break
			}
			sum += x * x
		}
		p := math.NaN()
		if !bad {
			p = math.Sqrt(sum/float64(n)) / nominal * 100
		}
		pct = append(pct, p)
		at = append(at, start+n-1)
	}
	return pct, at
}

// captureEvent is the capture's event time on the recorder's clock: its
// trigger when it has one inside the record, else the end of the first
// RMS window outside the steady band.
func captureEvent(w Wave, pct []float64, at []int, steady MaskPoint) (time.Time, string) {
	end := w.Start.Add(sampleTime(len(w.Values)-1, w.Rate))
	if !w.Trigger.IsZero() && w.Trigger.After(w.Start) && !w.Trigger.After(end) {
		return w.Trigger, "trigger"
	}
	for k, p := range pct {
		if p < steady.MinPct || p > steady.MaxPct {
			return w.Start.Add(sampleTime(at[k], w.Rate)), "onset"
		}
	}
	return w.Start, "start"
}

func sampleTime(k int, rate float64) time.Duration {
	return time.Duration(math.Round(float64(k) / rate * 1e9))
}

// nearestEdge is the commanded edge closest to the event: the clocks
// are taken to differ by less than half the time between edges.
func nearestEdge(edges []time.Time, event time.Time) time.Time {
	best := edges[0]
	for _, e := range edges[1:] {
		if absDur(e.Sub(event)) < absDur(best.Sub(event)) {
			best = e
		}
	}
	return best
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// run is the longest stretch of RMS values beyond a level.
type run struct {
	n, start int
	gapped   bool // a missing value touches it: it may be longer
}

func longestRun(pct []float64, beyond func(float64) bool) run {
	var best, cur run
	for k, p := range pct {
		switch {
		case math.IsNaN(p):
			if cur.n > 0 {
				cur.gapped = true
			}
			if cur.n > best.n {
				best = cur
			}
			cur = run{}
		case beyond(p):
			if cur.n == 0 {
				cur.start = k
				cur.gapped = k > 0 && math.IsNaN(pct[k-1])
			}
			cur.n++
		default:
			if cur.n > best.n {
				best = cur
			}
			cur = run{}
		}
	}
	if cur.n > best.n {
		best = cur
	}
	return best
}

// finding is one mask point's longest run and its margin.
type finding struct {
	point              int
	below              bool
	level, allowedS    float64
	r                  run
	durationS, marginS float64
}

func gradeMask(r *CaptureResult, pct []float64, steady MaskPoint) {
	v := &r.Verdict
	v.Samples = 0
	gaps := 0
	for _, p := range pct {
		if math.IsNaN(p) {
			gaps++
		} else {
			v.Samples++
		}
	}
	var fs []finding
	for i, p := range r.Mask {
		allowed := 0.0
		if i > 0 {
			allowed = r.Mask[i-1].DurationS
		}
		for _, below := range []bool{true, false} {
			level := p.MaxPct
			beyond := func(x float64) bool { return x > level }
			if below {
				level = p.MinPct
				beyond = func(x float64) bool { return x < level }
			}
			rn := longestRun(pct, beyond)
			if rn.n == 0 {
				continue
			}
			d := float64(rn.n) * r.StepS
			fs = append(fs, finding{point: i, below: below, level: level, allowedS: allowed, r: rn, durationS: d, marginS: allowed - d})
		}
	}
	slices.SortStableFunc(fs, func(a, b finding) int {
		if a.marginS != b.marginS {
			if a.marginS < b.marginS {
				return -1
			}
			return 1
		}
		return 0
	})
	offset := fmt.Sprintf("aligned by its %s on the edge at %s, offset %+.3f s", r.Align.By, r.Align.Edge.UTC().Format("15:04:05.000"), r.Align.OffsetS)
	if len(fs) > 0 {
		f := fs[0]
		side := "above"
		if f.below {
			side = "below"
		}
		v.Measured, v.Limit, v.Margin, v.Unit = ptr(f.durationS), ptr(f.allowedS), ptr(f.marginS), "s"
		at := r.RMS[f.r.start].Time
		v.At = &at
		if f.marginS < -1e-9 {
			v.Outcome = Fail
			v.Detail = fmt.Sprintf("%s was %s %g %% of nominal for %s from %s; the mask allows %s (point %d); %s",
				r.Verdict.Check, side, f.level, durText(f.durationS), at.UTC().Format("15:04:05.000"), durText(f.allowedS), f.point+1, offset)
			return
		}
	}
	if gaps > 0 {
		v.Outcome = Error
		v.Detail = fmt.Sprintf("%d of %d half-cycle RMS values hold missing samples: an excursion may hide in them; %s", gaps, len(pct), offset)
		return
	}
	v.Outcome = Pass
	if len(fs) == 0 {
		m := math.Min(r.MinPct-steady.MinPct, steady.MaxPct-r.MaxPct)
		v.Measured, v.Unit = ptr(r.MinPct), "%"
		v.Limit, v.Margin = ptr(steady.MinPct), ptr(m)
		if steady.MaxPct-r.MaxPct < r.MinPct-steady.MinPct {
			v.Measured, v.Limit = ptr(r.MaxPct), ptr(steady.MaxPct)
		}
		v.Detail = fmt.Sprintf("%s stayed within %g–%g %% of nominal (%.1f–%.1f %%): inside the mask; %s",
			r.Verdict.Check, steady.MinPct, steady.MaxPct, r.MinPct, r.MaxPct, offset)
		return
	}
	f := fs[0]
	v.Detail = fmt.Sprintf("%s ranged %.1f–%.1f %% of nominal; its longest excursion past %g %% lasted %s, the mask allows %s; %s",
		r.Verdict.Check, r.MinPct, r.MaxPct, f.level, durText(f.durationS), durText(f.allowedS), offset)
}

func durText(s float64) string {
	if s < 1 {
		return fmt.Sprintf("%.0f ms", s*1000)
	}
	return fmt.Sprintf("%.3g s", s)
}
