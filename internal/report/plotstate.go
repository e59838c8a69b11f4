package report

import (
	"fmt"
	"path"
	"strings"
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
	d.Commanded = p.commanded(pc)
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
			if t0, err := k.TimeZero(p.tl); err == nil {
				d.Marks = append(d.Marks, Mark{At: p.rel(t0) + k.WithinS, Label: k.Side + " alarm deadline", Failed: true})
			}
		}
		return
	}
	if k.Channel != p.channel {
		return
	}
	if v.Outcome == grade.Error && v.At != nil && strings.HasPrefix(v.Detail, "no good sample for") {
		d.Marks = append(d.Marks, Mark{At: p.rel(*v.At), Failed: true, Label: k.Side + ": gap in the samples"})
	}
	lo, hi, ok := k.Accepted()
	if !ok {
		return
	}
	wins, _ := k.Windows(p.tl) // a step that did not run has no band
	for _, w := range wins {
		d.Bands = append(d.Bands, Band{From: p.rel(w.From), To: p.rel(w.To), Lo: lo, Hi: hi, Failed: failed,
			Envelope: k.Kind == plan.MaxDeviation, Label: k.BandLabel()})
	}
	if (k.Kind == plan.RecoveryTime || k.Kind == plan.SettlesWithin) && v.At != nil && v.Measured != nil {
		d.Marks = append(d.Marks, Mark{At: p.rel(*v.At), Failed: failed,
			Label: fmt.Sprintf("%s recovered %.3g s (≤ %g s)", k.Side, *v.Measured, k.WithinS)})
	}
}

func (p *plotState) rel(t time.Time) float64 { return t.Sub(p.tl.Start).Seconds() }

// commanded is each load bank's setpoint as the case's program
// commanded it, rebuilt from the plan's steps and the times they ran:
// a set is a step, a ramp runs from its start to its end, a square wave
// alternates high and low at its edges, from low.
func (p *plotState) commanded(pc *plan.Case) []Series {
	steps := map[string]plan.Step{}
	for _, s := range pc.Steps {
		steps[s.ID] = s
	}
	level := map[string]float64{}
	lines := map[string][]Point{}
	var banks []string
	at := func(bank string, t time.Time, kw float64) {
		if _, ok := lines[bank]; !ok {
			banks = append(banks, bank)
			lines[bank] = []Point{{T: 0, V: level[bank]}}
		}
		lines[bank] = append(lines[bank], Point{T: p.rel(t), V: kw})
		level[bank] = kw
	}
	for _, sp := range p.tl.Steps {
		s, ok := steps[sp.Step]
		if !ok || s.LoadBank == "" {
			continue
		}
		b := s.LoadBank
		switch s.Op {
		case plan.OpSetLoad:
			at(b, sp.Start, level[b])
			at(b, sp.Start, *s.KW)
		case plan.OpRamp:
			at(b, sp.Start, level[b])
			at(b, sp.End, *s.KW)
		case plan.OpSquareWave:
			at(b, sp.Start, level[b])
			at(b, sp.Start, *s.LowKW)
			for i, e := range sp.Edges {
				kw := *s.HighKW
				if i%2 == 1 {
					kw = *s.LowKW
				}
				at(b, e, level[b])
				at(b, e, kw)
			}
		}
	}
	var out []Series
	for _, b := range banks {
		pts := append(lines[b], Point{T: p.rel(p.tl.End), V: level[b]})
		out = append(out, Series{Label: "commanded " + b + " setpoint", Points: pts})
	}
	return out
}

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
