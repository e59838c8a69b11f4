package report

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/seamdc/seam/internal/evidence"
	"github.com/seamdc/seam/internal/grade"
	"github.com/seamdc/seam/internal/gridsignal"
	"github.com/seamdc/seam/internal/plan"
	"github.com/seamdc/seam/internal/results"
	"github.com/seamdc/seam/internal/units"
)

// GridCase is the grid section's view of one case of kind grid: what
// drove the site, how the point-of-interconnection (POI) meter was
// sampled, each check's limit, measure and margin, and the plots: site
// power against time with the ramp and swing limits on their worst
// windows, the spectrum of the graded record against the line limits,
// and, for a case that dips the grid, the ride-through trace. All of it
// comes from the evidence: the plan the bundle carries, the samples,
// and the verdicts evidence.Audit re-graded.
type GridCase struct {
	ID, Title, Verdict string
	Reason             string // why there is no verdict to read (not run)
	ClausePath         string
	ClausePos          string
	Start, End         time.Time

	Drives []GridDrive // the train steps
	Dips   []GridDip   // the grid_dip steps

	Channel string // the POI meter's power channel
	Unit    string // the checks' unit (kW)
	// Samples counts the channel's good samples in the graded steps;
	// Rate is the rate they achieved (samples/s, from the first to the
	// last of each step) and Required the rate the plan asks for
	// (1/max_period_s), 0 where it states none.
	Samples        int
	Rate, Required float64

	Checks []GridCheck

	// Curve is the contract's ride-through curve as the plan's sources
	// write it (nil: they do not): dips of at most DurationS down to
	// VoltagePU must be ridden through.
	Curve []CurvePoint

	Power       *PlotData     // nil: no ramp or swing check, or no samples
	Spectrum    *SpectrumData // nil: no line check, or no whole record
	RideThrough *PlotData     // nil: no grid_dip step
	// Problems say what a plot could not show (a record too short for
	// its band): the verdicts stand regardless.
	Problems []string
}

// GridDrive is a train step: what drove the site's power and how.
type GridDrive struct {
	Step, Driver                string
	PeriodS, DutyPct, DurationS float64
	StallAtS, StallS            float64
	LowKW, HighKW               *float64
	Start, End                  float64 // s since the case started, as it ran
	Ran                         bool
}

// GridDip is a grid_dip step: the voltage at the POI dipped.
type GridDip struct {
	Step, Target         string
	VoltagePU, DurationS float64
	Start, End           float64 // s since the case started, as it ran
	Ran                  bool
}

// GridCheck is one check of a grid case with how it measures.
type GridCheck struct {
	Check
	Method                string // the measure in words
	WindowS               float64
	BandLowHz, BandHighHz float64
	SegmentS              float64
	Direction             string
	SharePct, ReferenceS  float64
	From                  string
	WithinS, ForS         float64
	SourceValues          []GridSource
	At                    float64 // s since the case started of what decided (NaN: none)
	steps                 []string
	planCheck             plan.Check
	verdict               grade.Verdict
	// ramp and swing: the worst window on the resampled record (times
	// in s since the case started) and the values at its two ends
	worst  *gridsignal.Change
	worstV [2]float64
}

// GridSource is a contract value a check's limit comes from, as the
// plan carries it.
type GridSource struct{ Path, Value, Pos string }

// isGridCheck reports whether a check kind measures the POI channel.
func isGridCheck(kind string) bool {
	switch kind {
	case plan.GridRamp, plan.GridSwing, plan.GridLine, plan.GridBandRMS, plan.RestoresWithin:
		return true
	}
	return false
}

// gridChannel is the POI channel a grid case grades: that of its first
// grid check ("" when it has none).
func gridChannel(pc *plan.Case) string {
	for _, k := range pc.Checks {
		if isGridCheck(k.Kind) {
			return k.Channel
		}
	}
	return ""
}

// gridState keeps a grid case's POI samples as the audit streams them:
// every good one, for the spectrum (50 samples/s for an hour is 180,000
// pairs), and the extremes decimated for the plots.
type gridState struct {
	channel string
	tl      grade.Timeline
	t       []time.Duration // since the case started
	v       []float64       // the channel's unit
	bad     int
	dec     *Decimator
}

func newGridState(pc *plan.Case, tl grade.Timeline, buckets int) *gridState {
	ch := gridChannel(pc)
	if ch == "" {
		return nil
	}
	if buckets <= 0 {
		buckets = DefaultBuckets
	}
	return &gridState{channel: ch, tl: tl, dec: NewDecimator(tl.Start, tl.End, buckets)}
}

func (g *gridState) add(s evidence.Sample) {
	if s.Channel != g.channel {
		return
	}
	if s.Quality != evidence.Good {
		g.bad++
		return
	}
	g.t = append(g.t, s.Time.Sub(g.tl.Start))
	g.v = append(g.v, s.Value)
	g.dec.Add(s.Time, s.Value)
}

// gridCases builds the grid section from the audit alone: the plan's
// grid cases in its order, each with the attempt that counts and its
// re-graded verdicts.
func gridCases(rep *evidence.Report, states map[*evidence.AuditCase]*gridState, plots bool) []GridCase {
	audited := rep.Counting()
	var out []GridCase
	for i := range rep.Plan.Cases {
		pc := &rep.Plan.Cases[i]
		if pc.Kind != plan.Grid {
			continue
		}
		gc := GridCase{ID: pc.ID, Title: pc.Title, ClausePath: pc.Clause.Path, ClausePos: pc.Clause.Pos,
			Channel: gridChannel(pc), Verdict: string(grade.Skipped)}
		for _, s := range pc.Sampling {
			if s.Channel == gc.Channel && s.MaxPeriodS > 0 {
				gc.Required = 1 / s.MaxPeriodS
			}
		}
		ac := audited[pc.ID]
		var tl *grade.Timeline
		if ac != nil && ac.End.Timeline != nil {
			tl = ac.End.Timeline
			gc.Start, gc.End = tl.Start, tl.End
		}
		gc.Drives, gc.Dips = gridSteps(pc, tl)
		if ac == nil || ac.Verdicts == nil {
			gc.Reason = "not run: the evidence holds no completed attempt of this case"
			if ac != nil {
				gc.Verdict, gc.Reason = string(ac.End.Result.Outcome), "not re-graded: "+ac.End.Result.Reason
			}
			for _, k := range pc.Checks {
				gc.Checks = append(gc.Checks, gridCheck(rep.Plan, k, grade.Verdict{Check: k.ID, Kind: k.Kind, Outcome: grade.Skipped}, tl))
			}
			out = append(out, gc)
			continue
		}
		v, _ := evidence.CaseVerdict(ac.End.Result, ac.Verdicts)
		gc.Verdict = string(v)
		for j, k := range pc.Checks {
			gc.Checks = append(gc.Checks, gridCheck(rep.Plan, k, ac.Verdicts[j], tl))
			if gc.Unit == "" && k.Channel == gc.Channel {
				gc.Unit = k.Unit
			}
		}
		if gc.Unit == "" {
			gc.Unit = "kW"
		}
		gc.Curve = rideCurve(rep.Plan, pc)
		if st := states[ac]; st != nil {
			gc.measure(st, plots)
		}
		out = append(out, gc)
	}
	return out
}

// CurvePoint is a point of a ride-through curve and where it is
// written.
type CurvePoint struct {
	DurationS, VoltagePU float64
	Pos                  string
}

// rideCurve reads the contract's ride-through curve from the plan's
// sources: a restores_within check names one point of it
// (…voltage_ride_through.curve[i].voltage), and the plan's other
// cases name the rest; every curve[i] with both its voltage and its
// duration is taken, by duration.
func rideCurve(p *plan.Plan, pc *plan.Case) []CurvePoint {
	prefix := ""
	for _, k := range pc.Checks {
		for _, src := range k.Sources {
			if i := strings.Index(src, ".curve["); i >= 0 && k.Kind == plan.RestoresWithin {
				prefix = src[:i+len(".curve[")]
			}
		}
	}
	if prefix == "" {
		return nil
	}
	byIndex := map[string]*CurvePoint{}
	var keys []string
	for path, src := range p.Sources {
		rest, ok := strings.CutPrefix(path, prefix)
		if !ok {
			continue
		}
		idx, field, ok := strings.Cut(rest, "].")
		if !ok {
			continue
		}
		q, err := units.Parse(src.Value)
		if err != nil {
			continue
		}
		cp := byIndex[idx]
		if cp == nil {
			cp = &CurvePoint{DurationS: math.NaN(), VoltagePU: math.NaN()}
			byIndex[idx] = cp
			keys = append(keys, idx)
		}
		switch {
		case field == "voltage" && q.Dim == units.Ratio:
			cp.VoltagePU, cp.Pos = q.Canon/100, src.Pos
		case field == "duration" && q.Dim == units.Time:
			cp.DurationS = q.Canon
		}
	}
	var out []CurvePoint
	for _, k := range keys {
		if cp := byIndex[k]; !math.IsNaN(cp.DurationS) && !math.IsNaN(cp.VoltagePU) {
			out = append(out, *cp)
		}
	}
	slices.SortFunc(out, func(a, b CurvePoint) int {
		if c := cmp.Compare(a.DurationS, b.DurationS); c != 0 {
			return c
		}
		return cmp.Compare(a.VoltagePU, b.VoltagePU)
	})
	return out
}

// gridSteps lists the case's train and grid_dip steps, placed in time
// where they ran.
func gridSteps(pc *plan.Case, tl *grade.Timeline) (drives []GridDrive, dips []GridDip) {
	at := func(id string) (float64, float64, bool) {
		if tl == nil {
			return 0, 0, false
		}
		sp := tl.Step(id)
		if sp == nil {
			return 0, 0, false
		}
		return sp.Start.Sub(tl.Start).Seconds(), sp.End.Sub(tl.Start).Seconds(), true
	}
	for _, s := range pc.Steps {
		switch s.Op {
		case plan.OpTrain:
			d := GridDrive{Step: s.ID, Driver: s.Driver, PeriodS: s.PeriodS, DutyPct: s.DutyPct, DurationS: s.DurationS,
				StallAtS: s.StallAtS, StallS: s.StallS, LowKW: s.LowKW, HighKW: s.HighKW}
			d.Start, d.End, d.Ran = at(s.ID)
			drives = append(drives, d)
		case plan.OpGridDip:
			d := GridDip{Step: s.ID, Target: s.Target, DurationS: s.DurationS}
			if s.VoltagePU != nil {
				d.VoltagePU = *s.VoltagePU
			}
			d.Start, d.End, d.Ran = at(s.ID)
			dips = append(dips, d)
		}
	}
	return drives, dips
}

func gridCheck(p *plan.Plan, k plan.Check, v grade.Verdict, tl *grade.Timeline) GridCheck {
	rec := results.Check{Verdict: v, Side: k.Side, Channel: k.Channel} // from the plan, never the results file
	gk := GridCheck{Check: checkView(rec, v), WindowS: k.WindowS, BandLowHz: k.BandLowHz, BandHighHz: k.BandHighHz,
		SegmentS: k.SegmentS, Direction: k.Direction, SharePct: k.SharePct, ReferenceS: k.ReferenceS, From: k.From,
		WithinS: k.WithinS, ForS: k.ForS, steps: k.Steps, planCheck: k, verdict: v, At: math.NaN()}
	gk.Side, gk.Channel = k.Side, k.Channel
	if gk.Unit == "" {
		gk.Unit = k.Unit
	}
	if gk.Unit == "" && k.Kind == plan.RestoresWithin {
		gk.Unit = "kW" // the power channel's, as the grader measures it
	}
	if !gk.HasLimit && k.Max != nil {
		gk.Limit, gk.HasLimit = *k.Max, true
	}
	if v.At != nil && tl != nil {
		gk.At = v.At.Sub(tl.Start).Seconds()
	}
	for _, s := range k.Sources {
		src := p.Sources[s]
		gk.SourceValues = append(gk.SourceValues, GridSource{Path: s, Value: src.Value, Pos: src.Pos})
		gk.Sources = append(gk.Sources, fmt.Sprintf("%s = %s (%s)", s, src.Value, src.Pos))
	}
	gk.Method = gridMethod(k)
	return gk
}

// gridMethod says in words how a check measures.
func gridMethod(k plan.Check) string {
	steps := strings.Join(k.Steps, ", ")
	switch k.Kind {
	case plan.GridRamp:
		word := "rise"
		if k.Direction == plan.Down {
			word = "fall"
		}
		return fmt.Sprintf("the largest %s within any %g s window, over the samples of %s resampled uniformly", word, k.WindowS, steps)
	case plan.GridSwing:
		return fmt.Sprintf("the largest max − min within any %g s window, over the samples of %s resampled uniformly", k.WindowS, steps)
	case plan.GridLine:
		return fmt.Sprintf("the largest spectral line (peak amplitude) in %g–%g Hz of each %g s record of %s: mean and linear trend removed, one Hann window per record, FFT; the worst record", k.BandLowHz, k.BandHighHz, k.WindowS, steps)
	case plan.GridBandRMS:
		return fmt.Sprintf("the RMS in %g–%g Hz of each %g s record of %s: Welch's method, %g s Hann segments overlapping by half, each detrended; the worst record", k.BandLowHz, k.BandHighHz, k.WindowS, steps, k.SegmentS)
	case plan.RestoresWithin:
		return fmt.Sprintf("every sample from %g s to %g s after step %s ended at least %g %% of the mean over the %g s before it started", k.WithinS, k.ForS, k.From, k.SharePct, k.ReferenceS)
	}
	return k.Describe()
}

// measure fills in the sampling achieved and the plots from the
// samples.
func (gc *GridCase) measure(st *gridState, plots bool) {
	tl := st.tl
	// the rate achieved over the graded steps
	var wins []plan.Window
	for _, k := range gc.Checks {
		if len(k.steps) == 0 {
			continue
		}
		w, err := k.planCheck.Windows(tl)
		if err != nil {
			continue
		}
		for _, x := range w {
			if !slices.Contains(wins, x) {
				wins = append(wins, x)
			}
		}
	}
	if len(wins) == 0 {
		wins = []plan.Window{{From: tl.Start, To: tl.End}}
	}
	// the steps' samples, each counted once (adjacent steps share the
	// sample on their boundary)
	var spans [][2]int
	for _, w := range wins {
		if a, b := st.index(w); b > a {
			spans = append(spans, [2]int{a, b})
		}
	}
	slices.SortFunc(spans, func(x, y [2]int) int { return x[0] - y[0] })
	var merged [][2]int
	for _, r := range spans {
		if n := len(merged); n > 0 && r[0] <= merged[n-1][1] {
			merged[n-1][1] = max(merged[n-1][1], r[1])
			continue
		}
		merged = append(merged, r)
	}
	span, gaps := 0.0, 0
	for _, r := range merged {
		a, b := r[0], r[1]
		gc.Samples += b - a
		if b-a >= 2 {
			span += (st.t[b-1] - st.t[a]).Seconds()
			gaps += b - a - 1
		}
	}
	if span > 0 {
		gc.Rate = float64(gaps) / span
	}
	if len(st.t) == 0 {
		return
	}
	scale, unit := 1.0, gc.Unit
	if peak := st.peak(); unit == "kW" && peak >= 1000 {
		scale, unit = 1000, "MW"
	}
	for i := range gc.Checks {
		k := &gc.Checks[i]
		switch k.Kind {
		case plan.GridRamp, plan.GridSwing:
			if err := k.worstWindow(st); err != nil {
				gc.Problems = append(gc.Problems, fmt.Sprintf("%s: the worst window cannot be drawn: %v", k.ID, err))
			}
		}
	}
	if !plots {
		return
	}
	if gc.hasKind(plan.GridRamp, plan.GridSwing) {
		gc.Power = gc.powerPlot(st, scale, unit)
	}
	if gc.hasKind(plan.GridLine) {
		sp, err := gc.spectrum(st, scale, unit)
		if err != nil {
			gc.Problems = append(gc.Problems, "the spectrum cannot be drawn: "+err.Error())
		}
		gc.Spectrum = sp
	}
	if len(gc.Dips) > 0 {
		gc.RideThrough = gc.rideThrough(st, scale, unit)
	}
}

func (gc *GridCase) hasKind(kinds ...string) bool {
	for _, k := range gc.Checks {
		if slices.Contains(kinds, k.Kind) {
			return true
		}
	}
	return false
}

// index returns the samples of st in the window: st.t[a:b].
func (g *gridState) index(w plan.Window) (a, b int) {
	from, to := w.From.Sub(g.tl.Start), w.To.Sub(g.tl.Start)
	a = sort.Search(len(g.t), func(i int) bool { return g.t[i] >= from })
	b = sort.Search(len(g.t), func(i int) bool { return g.t[i] > to })
	return a, max(a, b)
}

func (g *gridState) peak() float64 {
	p := 0.0
	for _, v := range g.v {
		p = math.Max(p, math.Abs(v))
	}
	return p
}

// runs are the check's runs as the grader measures them
// (grade.GridWindows, GridSplit, NewGridRun): its steps' good samples,
// contiguous steps joined, split at gaps longer than the channel's max
// gap, each on the grader's uniform grid.
func (g *gridState) runs(k plan.Check) ([]grade.GridRun, error) {
	wins, err := grade.GridWindows(k, g.tl)
	if err != nil {
		return nil, err
	}
	maxGap := grade.MaxGap(g.tl, k.Channel, grade.Options{})
	var out []grade.GridRun
	var lastErr error
	for _, w := range wins {
		a, b := g.index(w)
		ts, vs := g.t[a:b], g.v[a:b]
		for _, r := range grade.GridSplit(ts, maxGap) {
			run, err := grade.NewGridRun(k, ts[r[0]:r[1]], vs[r[0]:r[1]])
			if err != nil {
				lastErr = err
				continue
			}
			out = append(out, run)
		}
	}
	if len(out) == 0 && lastErr != nil {
		return nil, lastErr
	}
	return out, nil
}

// worstWindow finds the ramp's or swing's worst window as the grader
// does, for the plot: on each run, within window_s (a run shorter than
// that: within the run), the first of the largest.
func (k *GridCheck) worstWindow(st *gridState) error {
	runs, err := st.runs(k.planCheck)
	if err != nil {
		return err
	}
	var lastErr error
	for _, r := range runs {
		s := r.Series
		w := k.WindowS
		if len(s.Values)-1 < r.Window {
			w = float64(len(s.Values)-1) / s.Rate
		}
		var c gridsignal.Change
		if k.Kind == plan.GridSwing {
			c, err = gridsignal.Swing(s, w)
		} else {
			var up, down gridsignal.Change
			up, down, err = gridsignal.Ramp(s, w)
			c = up
			if k.Direction == plan.Down {
				c = down
			}
		}
		if err != nil {
			lastErr = err
			continue
		}
		if k.worst == nil || c.Value > k.worst.Value {
			i, j := int(math.Round(c.From*s.Rate)), int(math.Round(c.To*s.Rate))
			k.worstV = [2]float64{s.Values[i], s.Values[j]}
			c.From, c.To = c.From+r.T0.Seconds(), c.To+r.T0.Seconds()
			k.worst = &c
		}
	}
	if k.worst == nil && lastErr != nil {
		return lastErr
	}
	return nil
}

// DrivesText says what drove the site, for the page.
func (gc *GridCase) DrivesText() string {
	var ds []GridSummaryDrive
	for _, d := range gc.Drives {
		ds = append(ds, GridSummaryDrive{Step: d.Step, Driver: d.Driver, PeriodS: d.PeriodS, DutyPct: d.DutyPct,
			DurationS: d.DurationS, StallAtS: d.StallAtS, StallS: d.StallS, LowKW: d.LowKW, HighKW: d.HighKW, Ran: d.Ran})
	}
	return drivesText(ds)
}

// DipsText says how the grid was dipped, for the page.
func (gc *GridCase) DipsText() string {
	var ds []GridSummaryDip
	for _, d := range gc.Dips {
		ds = append(ds, GridSummaryDip{Step: d.Step, Target: d.Target, VoltagePU: d.VoltagePU, DurationS: d.DurationS, Ran: d.Ran})
	}
	return dipsText(ds)
}
