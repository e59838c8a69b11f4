package grade

import (
	"fmt"
	"math"
	"time"

	"github.com/seamdc/seam/internal/plan"
)

// level grades in_band, no_interruption and max_deviation: every good
// sample in the windows inside the limits. It keeps the sample with the
// least margin.
type level struct {
	g      *Grader
	wins   []window
	gaps   *gaps
	dev    bool    // max_deviation: |value − reference| ≤ max_deviation
	lo, hi float64 // in_band, no_interruption
	ref    float64
	maxDev float64

	n, outside int
	worst      measure // valid when n > 0
}

// measure is the deciding sample.
type measure struct {
	t                      time.Time
	value, measured, limit float64
	margin                 float64
}

func newLevel(g *Grader) (kind, error) {
	wins, err := g.windows()
	if err != nil {
		return nil, err
	}
	l := &level{g: g, wins: wins, gaps: newGaps(wins, g.maxGap, g.tl.Start)}
	c := g.c
	lo, hi, ok := c.Accepted()
	if !ok {
		if c.Kind == plan.MaxDeviation {
			return nil, fmt.Errorf("max_deviation check %s needs reference and max_deviation", c.ID)
		}
		return nil, fmt.Errorf("%s check %s needs min or max", c.Kind, c.ID)
	}
	l.lo, l.hi = lo, hi
	if c.Kind == plan.MaxDeviation {
		l.dev, l.ref, l.maxDev = true, *c.Reference, *c.MaxDeviation
	}
	return l, nil
}

func (l *level) add(s Sample) {
	if !s.Good || !l.inside(s.Time) {
		return
	}
	l.gaps.good(s.Time)
	l.n++
	m := l.measure(s)
	if m.margin < 0 {
		l.outside++
	}
	if l.n == 1 || m.margin < l.worst.margin {
		l.worst = m
	}
}

func (l *level) inside(t time.Time) bool {
	for _, w := range l.wins {
		if w.Has(t) {
			return true
		}
	}
	return false
}

func (l *level) measure(s Sample) measure {
	if l.dev {
		d := math.Abs(s.Value - l.ref)
		return measure{t: s.Time, value: s.Value, measured: d, limit: l.maxDev, margin: l.maxDev - d}
	}
	below, above := s.Value-l.lo, l.hi-s.Value
	if below <= above {
		return measure{t: s.Time, value: s.Value, measured: s.Value, limit: l.lo, margin: below}
	}
	return measure{t: s.Time, value: s.Value, measured: s.Value, limit: l.hi, margin: above}
}

func (l *level) verdict(v *Verdict) {
	l.gaps.finish()
	v.Samples = l.n
	start := l.g.tl.Start
	if w := l.worst; l.n > 0 {
		v.Measured, v.Limit, v.Margin, v.At = ptr(w.measured), ptr(w.limit), ptr(w.margin), ptr(w.t)
	}
	unit := l.g.c.Unit
	switch {
	case l.outside > 0:
		v.Outcome = Fail
		v.Detail = l.failure(unit, start)
	case l.n == 0:
		v.Outcome, v.Detail = Error, "no good sample in the graded window"
	case l.gaps.problem() != "":
		v.Outcome, v.Detail, v.At = Error, l.gaps.problem(), l.gaps.at()
	default:
		v.Outcome = Pass
		v.Detail = l.pass(unit, start)
	}
}

func (l *level) failure(unit string, start time.Time) string {
	w := &l.worst
	if l.dev {
		return fmt.Sprintf("%s at %s deviates %s from %s, more than the %s allowed (%d of %d samples outside)",
			num(w.value, unit), rel(w.t, start), num(w.measured, unit), num(l.ref, unit), num(l.maxDev, unit), l.outside, l.n)
	}
	side := "below the minimum"
	if w.limit == l.hi {
		side = "above the maximum"
	}
	return fmt.Sprintf("%s at %s is %s %s %s (%d of %d samples outside)",
		num(w.value, unit), rel(w.t, start), num(-w.margin, unit), side, num(w.limit, unit), l.outside, l.n)
}

func (l *level) pass(unit string, start time.Time) string {
	w := &l.worst
	if l.dev {
		return fmt.Sprintf("largest deviation %s (%s at %s) within the %s allowed around %s; %d samples",
			num(w.measured, unit), num(w.value, unit), rel(w.t, start), num(l.maxDev, unit), num(l.ref, unit), l.n)
	}
	return fmt.Sprintf("all %d samples inside %s; closest %s at %s, %s inside %s",
		l.n, band(l.lo, l.hi, unit), num(w.value, unit), rel(w.t, start), num(w.margin, unit), num(w.limit, unit))
}

func band(lo, hi float64, unit string) string {
	switch {
	case math.IsInf(lo, -1):
		return "≤ " + num(hi, unit)
	case math.IsInf(hi, 1):
		return "≥ " + num(lo, unit)
	}
	return fmt.Sprintf("[%s, %s]", num(lo, ""), num(hi, unit))
}
