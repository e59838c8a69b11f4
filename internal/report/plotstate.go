package report

import (
	"fmt"
	"math"
	"path"
	"time"

	"github.com/seamdc/seam/internal/evidence"
	"github.com/seamdc/seam/internal/grade"
	"github.com/seamdc/seam/internal/plan"
)

// DefaultBuckets is how many intervals a plot keeps the extremes of.
const DefaultBuckets = 400

// plotState decimates a case's plotted channels as the samples stream.
type plotState struct {
	channel, excitation string
	measured, excite    *Decimator
	bad                 int
	tl                  grade.Timeline
}

func newPlotState(pc *plan.Case, tl grade.Timeline, buckets int) *plotState {
	if buckets <= 0 {
		buckets = DefaultBuckets
	}
	ch := plottedChannel(pc)
	if ch == "" {
		return nil
	}
	p := &plotState{channel: ch, excitation: excitationChannel(pc), tl: tl,
		measured: NewDecimator(tl.Start, tl.End, buckets)}
	if p.excitation != "" {
		p.excite = NewDecimator(tl.Start, tl.End, buckets)
	}
	return p
}

// plottedChannel is the channel of the case's first check that grades a
// level rather than an alarm (the alarm shows as a mark), or the alarm's
// channel when that is all the case grades.
func plottedChannel(pc *plan.Case) string {
	for _, k := range pc.Checks {
		if k.Kind != plan.AlarmWithin {
			return k.Channel
		}
	}
	if len(pc.Checks) > 0 {
		return pc.Checks[0].Channel
	}
	return ""
}

// excitationChannel is a channel the case samples but does not grade:
// the compiler samples the applied load to record the excitation.
func excitationChannel(pc *plan.Case) string {
	graded := map[string]bool{}
	for _, k := range pc.Checks {
		graded[k.Channel] = true
	}
	for _, s := range pc.Sampling {
		if !graded[s.Channel] {
			return s.Channel
		}
	}
	return ""
}

func (p *plotState) add(s evidence.Sample) {
	if s.Channel == p.channel {
		if s.Quality != "good" {
			p.bad++
			return
		}
		p.measured.Add(s.Time, s.Value)
	}
	if s.Channel == p.excitation && s.Quality == "good" {
		p.excite.Add(s.Time, s.Value)
	}
}

// data builds the plot from the decimated samples and the case's
// checks and verdicts.
func (p *plotState) data(pc *plan.Case, verdicts []grade.Verdict) *PlotData {
	if p.measured.Len() == 0 {
		return nil
	}
	d := &PlotData{Channel: p.channel, Measured: p.measured.Points(), Samples: p.measured.Len() + p.bad, BadQuality: p.bad,
		Duration: p.tl.End.Sub(p.tl.Start).Seconds()}
	if p.excite != nil && p.excite.Len() > 0 {
		d.ExcitationChannel, d.ExcitationUnit, d.Excitation = p.excitation, unitGuess(p.excitation), p.excite.Points()
	}
	for i, k := range pc.Checks {
		if k.Channel == p.channel && d.Unit == "" {
			d.Unit = k.Unit
		}
		p.decorate(d, k, verdicts[i])
	}
	for _, sp := range p.tl.Steps {
		switch sp.Op {
		case plan.OpInjectFault, plan.OpRestore, plan.OpOperator:
			d.Marks = append(d.Marks, Mark{At: p.rel(sp.Start), Label: sp.Step})
		}
	}
	return d
}

// decorate adds the bands and marks of one check.
func (p *plotState) decorate(d *PlotData, k plan.Check, v grade.Verdict) {
	failed := v.Outcome == grade.Fail
	if k.Kind == plan.AlarmWithin {
		if v.At != nil {
			d.Marks = append(d.Marks, Mark{At: p.rel(*v.At), Label: fmt.Sprintf("%s alarm +%.3g s", k.Side, *v.Measured), Failed: failed})
		} else if failed {
			d.Marks = append(d.Marks, Mark{At: p.rel(p.timeZero(k)) + k.WithinS, Label: k.Side + " alarm deadline", Failed: true})
		}
		return
	}
	if k.Channel != p.channel {
		return
	}
	lo, hi := bounds(k)
	for _, w := range p.windows(k) {
		b := Band{From: p.rel(w[0]), To: p.rel(w[1]), Lo: lo, Hi: hi, Failed: failed, Envelope: k.Kind == plan.MaxDeviation}
		b.Label = bandLabel(k, lo, hi)
		d.Bands = append(d.Bands, b)
	}
	if (k.Kind == plan.RecoveryTime || k.Kind == plan.SettlesWithin) && v.At != nil && v.Measured != nil {
		d.Marks = append(d.Marks, Mark{At: p.rel(*v.At), Failed: failed,
			Label: fmt.Sprintf("%s recovered %.3g s (≤ %g s)", k.Side, *v.Measured, k.WithinS)})
	}
}

func bounds(k plan.Check) (lo, hi float64) {
	lo, hi = math.Inf(-1), math.Inf(1)
	if k.Kind == plan.MaxDeviation && k.Reference != nil && k.MaxDeviation != nil {
		return *k.Reference - *k.MaxDeviation, *k.Reference + *k.MaxDeviation
	}
	if k.Min != nil {
		lo = *k.Min
	}
	if k.Max != nil {
		hi = *k.Max
	}
	return lo, hi
}

func bandLabel(k plan.Check, lo, hi float64) string {
	what := "band"
	switch k.Kind {
	case plan.MaxDeviation:
		return fmt.Sprintf("%s envelope %s ± %s", k.Side, fmtNum(*k.Reference, ""), fmtNum(*k.MaxDeviation, k.Unit))
	case plan.RecoveryTime:
		what = "recovery band"
	case plan.SettlesWithin:
		what = "settled band"
	case plan.NoInterruption:
		what = "no-interruption limit"
	}
	switch {
	case math.IsInf(lo, 0):
		return fmt.Sprintf("%s %s ≤ %s", k.Side, what, fmtNum(hi, k.Unit))
	case math.IsInf(hi, 0):
		return fmt.Sprintf("%s %s ≥ %s", k.Side, what, fmtNum(lo, k.Unit))
	}
	return fmt.Sprintf("%s %s %s–%s", k.Side, what, fmtNum(lo, ""), fmtNum(hi, k.Unit))
}

// windows are the spans a check grades, as grade defines them.
func (p *plotState) windows(k plan.Check) [][2]time.Time {
	if k.From != "" {
		t0 := p.timeZero(k)
		if t0.IsZero() {
			return nil
		}
		end := p.tl.End
		if k.ForS > 0 {
			end = t0.Add(time.Duration(k.ForS * float64(time.Second)))
		}
		if k.Kind == plan.SettlesWithin {
			t0 = t0.Add(time.Duration(k.WithinS * float64(time.Second)))
		}
		return [][2]time.Time{{t0, end}}
	}
	var out [][2]time.Time
	for _, id := range k.Steps {
		if sp := p.tl.Step(id); sp != nil {
			out = append(out, [2]time.Time{sp.Start, sp.End})
		}
	}
	return out
}

func (p *plotState) timeZero(k plan.Check) time.Time {
	if sp := p.tl.Step(k.From); sp != nil {
		return sp.End
	}
	return time.Time{}
}

func (p *plotState) rel(t time.Time) float64 { return t.Sub(p.tl.Start).Seconds() }

// unitGuess names the canonical unit of a sampled channel from the last
// part of its name, for the excitation axis.
func unitGuess(channel string) string {
	switch path.Base(channel) {
	case "power", "load", "applied", "heat":
		return "kW"
	case "current":
		return "A"
	case "voltage":
		return "V"
	case "flow":
		return "L/min"
	case "supply-temp", "return-temp", "temperature":
		return "degC"
	}
	return "value"
}
