// Package grade turns a plan check and the samples of its channel into
// a verdict: PASS, FAIL or ERROR, with the measured value, the limit it
// was graded against, the margin, and the sample that decided.
//
// It is pure: no clock, no I/O. The runner grades every case with it at
// the case's end, reading the case's samples back from the evidence
// bundle; `sat verify` and reports re-grade offline with the same
// function from the same bytes, so online and offline verdicts cannot
// disagree.
//
// The API is three calls:
//
//	g := grade.New(check, timeline, grade.Options{MaxGap: 2 * time.Second})
//	for _, s := range samples { g.Add(s) } // the check's channel, in time order
//	v := g.Verdict()
//
// or grade.Grade(check, timeline, opts, seq) over an iter.Seq.
//
// # Windows
//
// A check grades either the samples taken during its steps (the spans of
// those steps in the Timeline) or, with from, a window that starts when
// step from ended ("time zero") and lasts for_s. A recovery_time check
// grades each load edge of its steps: the window after an edge ends at
// the next edge of the case, or at the case's end.
//
// # Outcomes
//
// FAIL needs proof: a good sample outside the limit (or an alarm seen
// late, or never). ERROR means the samples cannot decide: none at all,
// or a gap longer than Options.MaxGap where the check needs them, or
// the alarm already raised before the event. A proven violation is FAIL
// even if samples are missing elsewhere. Stale and error samples are
// never graded: they count as gaps. Nor is a sample whose value is NaN
// or infinite: it is no reading (a NaN compares false with every limit,
// so graded it could never fail), and a check whose samples are all
// such has none and is an ERROR, like one with no samples at all.
package grade

import (
	"fmt"
	"iter"
	"math"
	"time"

	"github.com/seamdc/seam/internal/plan"
)

// Outcome is a check's or a case's result.
type Outcome string

// Outcomes. Checks are PASS, FAIL or ERROR; cases may also be ABORTED
// (an abort interrupted them) or SKIPPED (not run).
const (
	Pass    Outcome = "PASS"
	Fail    Outcome = "FAIL"
	Error   Outcome = "ERROR" // the harness or a device, not the product
	Aborted Outcome = "ABORTED"
	Skipped Outcome = "SKIPPED"
)

// Sample is one reading of a channel: its site time, value in the
// channel's canonical unit, and whether its quality was good.
type Sample struct {
	Time  time.Time
	Value float64
	Good  bool
}

// Span is one step of a case as it ran.
type Span struct {
	Step  string    `json:"step"`
	Op    string    `json:"op"`
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// Edges are the times load changes were commanded during the step:
	// the first setpoint write of each set, ramp or square-wave edge.
	Edges []time.Time `json:"edges,omitempty"`
}

// Timeline is what a case did, as far as grading needs it.
type Timeline struct {
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	Steps []Span    `json:"steps"`
	// MaxGapS is, per channel, the longest time in seconds without a
	// good sample that a graded window may have; the runner sets it from
	// the plan's sampling, so that an offline re-grade uses the same.
	// A channel without an entry uses Options.MaxGap.
	MaxGapS map[string]float64 `json:"max_gap_s,omitempty"`
}

// Step returns the span of step id, or nil when it did not run.
func (tl Timeline) Step(id string) *Span {
	for i := range tl.Steps {
		if tl.Steps[i].Step == id {
			return &tl.Steps[i]
		}
	}
	return nil
}

// StepSpan is the span of step id (plan.Timing).
func (tl Timeline) StepSpan(id string) (start, end time.Time, ok bool) {
	if sp := tl.Step(id); sp != nil {
		return sp.Start, sp.End, true
	}
	return time.Time{}, time.Time{}, false
}

// CaseEnd is when the case ended (plan.Timing).
func (tl Timeline) CaseEnd() time.Time { return tl.End }

// Options tune grading.
type Options struct {
	// MaxGap is the longest time without a good sample that a graded
	// window may have; longer is an ERROR. Timeline.MaxGapS overrides it
	// per channel. 0 means 2 s.
	MaxGap time.Duration
}

// Verdict is a graded check.
type Verdict struct {
	Check   string  `json:"check"`
	Kind    string  `json:"kind"`
	Outcome Outcome `json:"outcome"`
	// Measured is what decided: the worst value, deviation, delay or
	// recovery time; nil when nothing could be measured.
	Measured *float64 `json:"measured,omitempty"`
	// Limit is the number Measured was compared with.
	Limit *float64 `json:"limit,omitempty"`
	// Margin is how far inside the limit Measured lies, in Unit:
	// positive passes, negative fails.
	Margin *float64 `json:"margin,omitempty"`
	// Unit of Measured, Limit and Margin ("s" for times).
	Unit string `json:"unit,omitempty"`
	// At is the site time of the sample that decided.
	At *time.Time `json:"at,omitempty"`
	// Samples counts the good samples graded.
	Samples int `json:"samples"`
	// Detail says it in one sentence.
	Detail string `json:"detail"`
}

// Grader grades one check from its channel's samples.
type Grader struct {
	c      plan.Check
	tl     Timeline
	maxGap time.Duration
	impl   kind
	err    string // a problem with the check or timeline itself
	// nonFinite counts the samples added whose value is NaN or
	// infinite: graded as not good, named in an ERROR's detail.
	nonFinite int
}

// kind is the per check kind logic.
type kind interface {
	add(s Sample)
	verdict(v *Verdict)
}

// New returns a grader for c over a case that ran as tl.
func New(c plan.Check, tl Timeline, opt Options) *Grader {
	g := &Grader{c: c, tl: tl, maxGap: MaxGap(tl, c.Channel, opt)}
	var err error
	switch c.Kind {
	case plan.InBand, plan.NoInterruption, plan.MaxDeviation:
		g.impl, err = newLevel(g)
	case plan.SettlesWithin:
		g.impl, err = newSettle(g)
	case plan.RecoveryTime:
		g.impl, err = newRecovery(g)
	case plan.AlarmWithin:
		g.impl, err = newAlarm(g)
	case plan.GridRamp, plan.GridSwing, plan.GridLine, plan.GridBandRMS:
		g.impl, err = newGrid(g)
	case plan.RestoresWithin:
		g.impl, err = newRestore(g)
	default:
		err = fmt.Errorf("unknown check kind %q", c.Kind)
	}
	if err != nil {
		g.err = err.Error()
	}
	return g
}

// Add feeds the next sample of the check's channel; samples must come in
// time order. A value that is NaN or infinite is taken as a sample that
// is not good: a gap.
func (g *Grader) Add(s Sample) {
	if math.IsNaN(s.Value) || math.IsInf(s.Value, 0) {
		g.nonFinite++
		s.Good = false
	}
	if g.impl != nil {
		g.impl.add(s)
	}
}

// Verdict grades what was added.
func (g *Grader) Verdict() Verdict {
	v := Verdict{Check: g.c.ID, Kind: g.c.Kind, Unit: g.c.Unit}
	if g.impl == nil {
		v.Outcome, v.Detail = Error, "cannot grade: "+g.err
		return v
	}
	g.impl.verdict(&v)
	if v.Outcome == Error && g.nonFinite > 0 {
		v.Detail += fmt.Sprintf("; %d sample(s) were NaN or infinite, which are not graded", g.nonFinite)
	}
	return v
}

// Grade grades c over the samples of its channel, in time order.
func Grade(c plan.Check, tl Timeline, opt Options, samples iter.Seq[Sample]) Verdict {
	g := New(c, tl, opt)
	for s := range samples {
		g.Add(s)
	}
	return g.Verdict()
}

// window is a closed interval of site time.
type window = plan.Window

// windows are the spans the check grades (plan.Check.Windows).
func (g *Grader) windows() ([]window, error) { return g.c.Windows(g.tl) }

// timeZero is the end of step from.
func (g *Grader) timeZero() (time.Time, error) { return g.c.TimeZero(g.tl) }

func seconds(s float64) time.Duration { return plan.Seconds(s) }

// gaps tracks the longest stretch without a good sample in a set of
// windows.
type gaps struct {
	wins  []window
	last  []time.Time // the last good sample (or the start) in each window
	worst time.Duration
	from  time.Time
	max   time.Duration
	start time.Time // the case's start: times are said from it
}

func newGaps(wins []window, max time.Duration, start time.Time) *gaps {
	g := &gaps{wins: wins, max: max, last: make([]time.Time, len(wins)), start: start}
	for i, w := range wins {
		g.last[i] = w.From
	}
	return g
}

func (g *gaps) good(t time.Time) {
	for i, w := range g.wins {
		if w.Has(t) {
			g.note(g.last[i], t)
			g.last[i] = t
		}
	}
}

func (g *gaps) note(a, b time.Time) {
	if d := b.Sub(a); d > g.worst {
		g.worst, g.from = d, a
	}
}

// finish closes each window at its end; cut is when sampling stopped
// (the case's end).
func (g *gaps) finish() {
	for i, w := range g.wins {
		if w.To.After(w.From) {
			g.note(g.last[i], w.To)
		}
	}
}

func (g *gaps) problem() string {
	if g.worst <= g.max {
		return ""
	}
	return fmt.Sprintf("no good sample for %s from %s (the check needs one at least every %s)",
		g.worst.Round(time.Millisecond), rel(g.from, g.start), g.max)
}

// at is where the worst gap starts, for the verdict to mark it.
func (g *gaps) at() *time.Time { return ptr(g.from) }

func ptr[T any](v T) *T { return &v }

// num formats a value for a detail sentence.
func num(v float64, unit string) string {
	s := fmt.Sprintf("%.6g", v)
	if math.Abs(v) >= 1e6 {
		s = fmt.Sprintf("%.0f", v)
	}
	if unit == "" {
		return s
	}
	return s + " " + unit
}

func rel(t, start time.Time) string { return fmt.Sprintf("+%.3f s", t.Sub(start).Seconds()) }
