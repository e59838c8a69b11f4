package burnin

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/seamdc/seam/internal/binding"

	"github.com/seamdc/seam/internal/grade"
	"github.com/seamdc/seam/internal/plan"
	"github.com/seamdc/seam/internal/probe"
)

// Facility is the module-wide run graded as a facility test: while the
// module trains (the synchronous load), the site's channels are probed
// through the binding and graded against the boundaries' transient
// clauses, with the SAT plan's checks and internal/grade, as sat run
// grades them. The load is the nodes' own, not a load bank's: the
// plan's excite step gives its period and number of cycles, the
// training wave its edges.
type Facility struct {
	// Plan is the site's compiled SAT plan; its transient cases whose
	// loaded module is Module are graded.
	Plan   *plan.Plan
	Module string
	// Read reads the named channels once (ChannelReader: through the
	// binding, only the devices they are on).
	Read func(ctx context.Context, channels []string) (map[string]probe.Reading, error)
	// Train starts (on) or stops the module's synchronous training load
	// and returns the site time it started or stopped at.
	Train func(ctx context.Context, on bool) (time.Time, error)
	// Wait moves site time on by d and returns it (the simulator: its
	// physics stepped by d; a real site: a clock's sleep).
	Wait func(ctx context.Context, d time.Duration) (time.Time, error)
	// Period and Duty are the training wave's period (0: 4 s, the
	// contract's training excitation) and high share of it (0: 0.5). A
	// transient clause excited at another period is not graded by this
	// load and is listed as skipped.
	Period time.Duration
	Duty   float64
	// Sample is the probe period (0: 100 ms).
	Sample time.Duration
}

// FacilityCase is one transient clause graded.
type FacilityCase struct {
	ID       string          `json:"id"`
	Clause   string          `json:"clause"` // the contract path and position
	Outcome  grade.Outcome   `json:"outcome"`
	Verdicts []grade.Verdict `json:"verdicts"`
}

// FacilityResult is the module-wide step's grade.
type FacilityResult struct {
	Module string         `json:"module"`
	Cycles int            `json:"cycles"`
	Period float64        `json:"period_s"`
	Start  time.Time      `json:"start"`
	End    time.Time      `json:"end"`
	Cases  []FacilityCase `json:"cases"`
	// Skipped are the module's transient cases this load does not
	// excite, with why.
	Skipped []string `json:"skipped,omitempty"`
	Passed  bool     `json:"passed"`
}

// Failures names every failed or unmeasured check with its clause.
func (r *FacilityResult) Failures() []string {
	var out []string
	for _, c := range r.Cases {
		for _, v := range c.Verdicts {
			if v.Outcome != grade.Pass {
				out = append(out, fmt.Sprintf("%s %s: %s %s: %s", c.Clause, c.ID, v.Check, v.Outcome, v.Detail))
			}
		}
	}
	return out
}

// gridCase is the grid boundaries' waveform checks (ramp, swing, line,
// band RMS) of the plan's grid cases, one of each measure, retargeted to
// the module's run (the excite step and after): the site's power at the
// point of interconnection must hold the utility's limits while one
// module trains too. Nil when the plan has no grid case (a SAT plan:
// compile --level all to grade the grid as well).
func (f *Facility) gridCase(excite string) *plan.Case {
	var out *plan.Case
	seen := map[string]bool{}
	for _, c := range f.Plan.Cases {
		if c.Kind != plan.Grid {
			continue
		}
		for _, k := range c.Checks {
			switch k.Kind {
			case plan.GridRamp, plan.GridSwing, plan.GridLine, plan.GridBandRMS:
			default:
				continue
			}
			key := fmt.Sprint(k.Kind, k.Direction, k.WindowS, k.BandLowHz, k.BandHighHz, k.Channel)
			if seen[key] {
				continue
			}
			seen[key] = true
			if out == nil {
				out = &plan.Case{ID: c.Boundary + " at the point of interconnection", Boundary: c.Boundary,
					Clause: plan.ClauseRef{Path: `boundaries."` + c.Boundary + `".grid.require`, Pos: c.Clause.Pos}}
			}
			k.Steps = []string{excite, "after"}
			out.Checks = append(out.Checks, k)
			for _, s := range c.Sampling {
				if s.Channel == k.Channel && !slices.ContainsFunc(out.Sampling, func(x plan.Sampling) bool { return x.Channel == s.Channel }) {
					out.Sampling = append(out.Sampling, s)
				}
			}
		}
	}
	return out
}

// cases are the plan's transient cases of the module that a square
// wave at the training load's period excites, the excite step they
// share (the most cycles), and the others with why they are skipped.
func (f *Facility) cases() ([]plan.Case, plan.Step, []string, error) {
	var out []plan.Case
	var skipped []string
	var excite plan.Step
	for _, c := range f.Plan.Cases {
		if c.Kind != "transient" || c.Module != f.Module {
			continue
		}
		var ex *plan.Step
		for i := range c.Steps {
			if c.Steps[i].Op == "square_wave" {
				ex = &c.Steps[i]
			}
		}
		switch {
		case ex == nil:
			skipped = append(skipped, c.ID+": not excited by a square wave")
			continue
		case plan.Seconds(ex.PeriodS) != f.Period:
			skipped = append(skipped, fmt.Sprintf("%s: excited at a period of %g s, the training load's is %s (sat run grades it with the load bank)", c.ID, ex.PeriodS, f.Period))
			continue
		}
		if ex.Cycles > excite.Cycles {
			excite = *ex
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, excite, skipped, fmt.Errorf("the plan has no transient case loading module %s with a square wave of %s: compile the site's SAT plan (contractc compile --level sat)", f.Module, f.Period)
	}
	return out, excite, skipped, nil
}

// Grade runs the synchronous load for the excite step's cycles and
// 3 s after, probing every Sample, and grades each case's checks over
// the timeline the training made: the excite step with an edge at every
// rise and fall of the wave, then after.
func (f *Facility) Grade(ctx context.Context) (*FacilityResult, error) {
	if f.Duty <= 0 {
		f.Duty = 0.5
	}
	if f.Period <= 0 {
		f.Period = 4 * time.Second
	}
	cases, ex, skipped, err := f.cases()
	if err != nil {
		return nil, err
	}
	if f.Sample <= 0 {
		f.Sample = 100 * time.Millisecond
	}
	// the grid's meter is read as fast as its band needs, the rest at
	// the step's own pace
	tick, fast := f.Sample, map[string]bool{}
	if g := f.gridCase(ex.ID); g != nil {
		cases = append(cases, *g)
		for _, s := range g.Sampling {
			fast[s.Channel] = true
			tick = min(tick, plan.Seconds(s.MaxPeriodS))
		}
	} else if f.hasGrid() {
		skipped = append(skipped, "the grid boundary: the plan has no grid case (compile --level all or ist to grade the site's power at the point of interconnection too)")
	}
	every := max(1, int(f.Sample/tick))
	period := plan.Seconds(ex.PeriodS)
	res := &FacilityResult{Module: f.Module, Cycles: ex.Cycles, Period: ex.PeriodS, Skipped: skipped}
	start, err := f.Train(ctx, true)
	if err != nil {
		return nil, fmt.Errorf("starting module %s's training load: %w", f.Module, err)
	}
	res.Start = start
	exciteEnd := start.Add(time.Duration(ex.Cycles) * period)
	afterEnd := exciteEnd.Add(3 * time.Second)
	var edges []time.Time
	for k := range ex.Cycles {
		t := start.Add(time.Duration(k) * period)
		edges = append(edges, t, t.Add(time.Duration(f.Duty*float64(period))))
	}
	tl := grade.Timeline{Start: start, End: afterEnd, Steps: []grade.Span{
		{Step: ex.ID, Op: ex.Op, Start: start, End: exciteEnd, Edges: edges},
		{Step: "after", Op: "hold", Start: exciteEnd, End: afterEnd},
	}}
	type graded struct {
		c       plan.Case
		graders []*grade.Grader
	}
	var gs []graded
	byChannel := map[string][]*grade.Grader{}
	for _, c := range cases {
		g := graded{c: c}
		for _, ch := range c.Checks {
			gr := grade.New(ch, tl, grade.Options{})
			g.graders = append(g.graders, gr)
			byChannel[ch.Channel] = append(byChannel[ch.Channel], gr)
		}
		gs = append(gs, g)
	}
	var channels, fastChannels []string
	for ch := range byChannel {
		channels = append(channels, ch)
		if fast[ch] {
			fastChannels = append(fastChannels, ch)
		}
	}
	sort.Strings(channels)
	sort.Strings(fastChannels)
	stopped := false
	for i, now := 0, start; now.Before(afterEnd); i++ {
		read := channels
		if i%every != 0 {
			read = fastChannels
		}
		rs, err := f.Read(ctx, read)
		if err != nil {
			return nil, fmt.Errorf("probing the site during module %s's training: %w", f.Module, err)
		}
		for ch, r := range rs {
			for _, gr := range byChannel[ch] {
				gr.Add(grade.Sample{Time: now, Value: r.Value, Good: r.Quality == probe.Good})
			}
		}
		if !stopped && !now.Before(exciteEnd) {
			if _, err := f.Train(ctx, false); err != nil {
				return nil, err
			}
			stopped = true
		}
		if now, err = f.Wait(ctx, tick); err != nil {
			return nil, err
		}
	}
	if !stopped {
		if _, err := f.Train(ctx, false); err != nil {
			return nil, err
		}
	}
	res.End = afterEnd
	res.Passed = true
	for _, g := range gs {
		fc := FacilityCase{ID: g.c.ID, Clause: g.c.Clause.Path + " (" + g.c.Clause.Pos + ")", Outcome: grade.Pass}
		for _, gr := range g.graders {
			v := gr.Verdict()
			fc.Verdicts = append(fc.Verdicts, v)
			switch {
			case v.Outcome == grade.Pass:
			case v.Outcome == grade.Fail:
				fc.Outcome, res.Passed = grade.Fail, false
			case fc.Outcome != grade.Fail:
				fc.Outcome, res.Passed = grade.Error, false
			}
		}
		res.Cases = append(res.Cases, fc)
	}
	return res, nil
}

// ChannelReader reads channels through a site's binding: each device
// one or more of them is on, once per call; a channel the binding does
// not bind is an error naming it.
func ChannelReader(s *probe.Site) func(ctx context.Context, channels []string) (map[string]probe.Reading, error) {
	bound := map[string]*binding.Channel{}
	for _, ch := range s.Binding.Channels {
		bound[ch.Name] = ch
	}
	return func(ctx context.Context, channels []string) (map[string]probe.Reading, error) {
		byDevice := map[string]map[string]probe.Reading{}
		out := make(map[string]probe.Reading, len(channels))
		for _, name := range channels {
			ch := bound[name]
			if ch == nil {
				return nil, fmt.Errorf("channel %s is not bound in the site's binding: bind it to the feed's or loop's device", name)
			}
			rs, ok := byDevice[ch.DeviceName]
			if !ok {
				d := s.Device(ch.DeviceName)
				if d == nil {
					return nil, fmt.Errorf("channel %s: device %s is not opened", name, ch.DeviceName)
				}
				readings, _ := d.Read(ctx)
				rs = map[string]probe.Reading{}
				for _, r := range readings {
					rs[r.Point] = r
				}
				byDevice[ch.DeviceName] = rs
			}
			r, ok := rs[ch.PointName]
			if !ok {
				r = probe.Reading{Device: ch.DeviceName, Point: ch.PointName, Quality: probe.Bad}
			}
			out[name] = r
		}
		return out, ctx.Err()
	}
}

// hasGrid reports whether the plan's site has a grid boundary the plan
// leaves out (its coverage names a grid clause).
func (f *Facility) hasGrid() bool {
	return slices.ContainsFunc(f.Plan.Coverage, func(c plan.Coverage) bool { return strings.Contains(c.Clause, ".grid.require.") })
}

// String is the step's outcome in a line.
func (r *FacilityResult) String() string {
	if r.Passed {
		return fmt.Sprintf("module %s under its training load (%d cycles of %g s): every transient clause held (%d cases)", r.Module, r.Cycles, r.Period, len(r.Cases))
	}
	return fmt.Sprintf("module %s under its training load: %s", r.Module, strings.Join(r.Failures(), "; "))
}
