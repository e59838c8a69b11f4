package plan

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/seamdc/seam/internal/units"
)

// A check's meaning lives here, once: which values it accepts, over
// which spans of a case it grades them, and how it reads for people.
// The compiler (interlock limits from the bands it grades), the grader,
// the report's plots and contractc show all ask these methods.

// Accepted is the range of values the check passes, [lo, hi] with an
// open side infinite: reference ± max_deviation for max_deviation,
// [min, max] for the band kinds. ok is false for alarm_within, which
// grades a time, not a value; for the grid kinds (grid_ramp,
// grid_swing, grid_line, grid_band_rms), whose max bounds a measure of
// the waveform (a change, a line's amplitude), not the channel's
// values; and for restores_within, whose floor is a share of a
// reference measured during the case.
func (c Check) Accepted() (lo, hi float64, ok bool) {
	lo, hi = math.Inf(-1), math.Inf(1)
	switch c.Kind {
	case MaxDeviation:
		if c.Reference == nil || c.MaxDeviation == nil {
			return lo, hi, false
		}
		return *c.Reference - *c.MaxDeviation, *c.Reference + *c.MaxDeviation, true
	case InBand, NoInterruption, SettlesWithin, RecoveryTime:
		if c.Min == nil && c.Max == nil {
			return lo, hi, false
		}
		if c.Min != nil {
			lo = *c.Min
		}
		if c.Max != nil {
			hi = *c.Max
		}
		return lo, hi, true
	}
	return lo, hi, false
}

// Timing is a case as it ran, as far as a check's windows need it
// (grade.Timeline is one): the span of each step that ran, and the
// case's end.
type Timing interface {
	StepSpan(id string) (start, end time.Time, ok bool)
	CaseEnd() time.Time
}

// Window is a closed span of site time.
type Window struct{ From, To time.Time }

// Has reports whether t lies in the window.
func (w Window) Has(t time.Time) bool { return !t.Before(w.From) && !t.After(w.To) }

// Seconds converts a plan's seconds to a duration, rounded to the
// nanosecond.
func Seconds(s float64) time.Duration { return time.Duration(math.Round(s * float64(time.Second))) }

// TimeZero is the end of step From: the event a from-check counts from.
func (c Check) TimeZero(t Timing) (time.Time, error) {
	if c.From == "" {
		return time.Time{}, fmt.Errorf("check %s names no step to count from", c.ID)
	}
	_, end, ok := t.StepSpan(c.From)
	if !ok {
		return time.Time{}, fmt.Errorf("step %s, its time zero, did not run", c.From)
	}
	return end, nil
}

// Windows are the spans over which the check holds its channel to its
// band:
//   - with steps: the span of each of those steps (recovery_time takes
//     its load edges from them);
//   - with from: from time zero (the end of step from) for for_s, or to
//     the case's end; settles_within and restores_within only from time
//     zero + within_s; alarm_within from time zero to its limit, time
//     zero + within_s.
//
// The grid kinds grade the spans of their steps; restores_within's
// reference span (reference_s before step from started) is not a
// window: nothing is held to a limit there.
//
// A step that did not run is an error.
func (c Check) Windows(t Timing) ([]Window, error) {
	if c.From != "" {
		t0, err := c.TimeZero(t)
		if err != nil {
			return nil, err
		}
		switch c.Kind {
		case AlarmWithin:
			return []Window{{t0, t0.Add(Seconds(c.WithinS))}}, nil
		case SettlesWithin, RestoresWithin:
			return []Window{{t0.Add(Seconds(c.WithinS)), t0.Add(Seconds(c.ForS))}}, nil
		}
		end := t.CaseEnd()
		if c.ForS > 0 {
			end = t0.Add(Seconds(c.ForS))
		}
		return []Window{{t0, end}}, nil
	}
	if len(c.Steps) == 0 {
		return nil, fmt.Errorf("check %s names neither steps nor from", c.ID)
	}
	var out []Window
	for _, id := range c.Steps {
		a, b, ok := t.StepSpan(id)
		if !ok {
			return nil, fmt.Errorf("step %s did not run", id)
		}
		out = append(out, Window{a, b})
	}
	return out, nil
}

// Describe says what the check demands, for people: "within
// 402.55–427.45 V during hold", "back within 402.55–427.45 V in 1.5 s
// after each edge during excite", "raised within 2 s".
func (c Check) Describe() string {
	var what string
	switch c.Kind {
	case InBand:
		what = BandText(c.Min, c.Max, c.Unit)
	case MaxDeviation:
		if c.Reference == nil || c.MaxDeviation == nil {
			return "a maximum deviation without its reference"
		}
		what = fmt.Sprintf("within %s ± %s", number(*c.Reference, c.Unit), number(*c.MaxDeviation, c.Unit))
	case RecoveryTime:
		what = fmt.Sprintf("back %s in %s after each edge", BandText(c.Min, c.Max, c.Unit), DurationText(c.WithinS))
	case AlarmWithin:
		what = "raised within " + DurationText(c.WithinS)
	case NoInterruption:
		if c.Min == nil {
			return "no interruption, without its floor"
		}
		what = "never below " + number(*c.Min, c.Unit)
		if c.Max != nil {
			what += " nor above " + number(*c.Max, c.Unit)
		}
	case SettlesWithin:
		return fmt.Sprintf("%s from %s to %s after %s", BandText(c.Min, c.Max, c.Unit), DurationText(c.WithinS), DurationText(c.ForS), c.From)
	case GridRamp:
		verb := "rise"
		if c.Direction == Down {
			verb = "fall"
		}
		what = fmt.Sprintf("%s %s within any %s", verb, atMost(c.Max, c.Unit), DurationText(c.WindowS))
	case GridSwing:
		what = fmt.Sprintf("swing %s within any %s", atMost(c.Max, c.Unit), DurationText(c.WindowS))
	case GridLine:
		what = fmt.Sprintf("largest line in %s %s in each %s record", hzBand(c), atMost(c.Max, c.Unit), DurationText(c.WindowS))
	case GridBandRMS:
		what = fmt.Sprintf("RMS in %s %s in each %s record (%s segments)", hzBand(c), atMost(c.Max, c.Unit), DurationText(c.WindowS), DurationText(c.SegmentS))
	case RestoresWithin:
		return fmt.Sprintf("at least %s %% of the mean over the %s before %s, from %s to %s after %s",
			bare(c.SharePct), DurationText(c.ReferenceS), c.From, DurationText(c.WithinS), DurationText(c.ForS), c.From)
	default:
		return c.Kind
	}
	return what + " " + c.windowText()
}

// atMost reads a grid check's limit: "at most 1 MW".
func atMost(max *float64, unit string) string {
	if max == nil {
		return "without its limit"
	}
	return "at most " + number(*max, unit)
}

func hzBand(c Check) string { return bare(c.BandLowHz) + "–" + number(c.BandHighHz, "Hz") }

func (c Check) windowText() string {
	if len(c.Steps) > 0 {
		return "during " + strings.Join(c.Steps, ", ")
	}
	if c.ForS > 0 {
		return fmt.Sprintf("for %s after %s", DurationText(c.ForS), c.From)
	}
	return "after " + c.From
}

// BandLabel names the accepted band briefly, for a plot's legend:
// "guarantee band 402.55–427.45 V", "require envelope 415 ± 33.2 V".
func (c Check) BandLabel() string {
	lo, hi, ok := c.Accepted()
	if !ok {
		return c.Side + " " + strings.ReplaceAll(c.Kind, "_", " ")
	}
	what := "band"
	switch c.Kind {
	case MaxDeviation:
		return fmt.Sprintf("%s envelope %s ± %s", c.Side, bare(*c.Reference), number(*c.MaxDeviation, c.Unit))
	case RecoveryTime:
		what = "recovery band"
	case SettlesWithin:
		what = "settled band"
	case NoInterruption:
		what = "no-interruption limit"
	}
	switch {
	case math.IsInf(lo, 0):
		return fmt.Sprintf("%s %s ≤ %s", c.Side, what, number(hi, c.Unit))
	case math.IsInf(hi, 0):
		return fmt.Sprintf("%s %s ≥ %s", c.Side, what, number(lo, c.Unit))
	}
	return fmt.Sprintf("%s %s %s–%s", c.Side, what, bare(lo), number(hi, c.Unit))
}

// BandText reads a band for people: "within 402.55–427.45 V", "at
// least 3200 L/min", "at most 5 s".
func BandText(lo, hi *float64, unit string) string {
	switch {
	case lo != nil && hi != nil:
		return "within " + bare(*lo) + "–" + number(*hi, unit)
	case lo != nil:
		return "at least " + number(*lo, unit)
	case hi != nil:
		return "at most " + number(*hi, unit)
	}
	return "any value"
}

func number(v float64, unit string) string {
	if unit == "" {
		return bare(v)
	}
	return units.Format(v, unit)
}

func bare(v float64) string { return strings.TrimSuffix(units.Format(v, ""), " ") }

// DurationText renders seconds for people: "250 ms", "7.5 s", "5 min",
// "1 h 12 min"; 0 is "-".
func DurationText(s float64) string {
	switch {
	case s == 0:
		return "-"
	case s < 1:
		return units.Format(math.Round(s*1000), "ms")
	case s < 60:
		return units.Format(math.Round(s*10)/10, "s")
	case s < 3600:
		m, sec := int(s)/60, int(math.Round(s))%60
		if sec == 0 {
			return fmt.Sprintf("%d min", m)
		}
		return fmt.Sprintf("%d min %d s", m, sec)
	}
	h, m := int(s)/3600, int(math.Round(s/60))%60
	if m == 0 {
		return fmt.Sprintf("%d h", h)
	}
	return fmt.Sprintf("%d h %d min", h, m)
}
