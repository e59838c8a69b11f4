package contract

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/seamdc/seam/contracts/schema"
	"github.com/seamdc/seam/internal/diag"
	"github.com/seamdc/seam/internal/gridload"
	"github.com/seamdc/seam/internal/gridsignal"
	"github.com/seamdc/seam/internal/units"
)

// Grid rule ids (docs/grid.md).
const (
	RuleGridRamp        = "GRID001"
	RuleGridSwing       = "GRID002"
	RuleGridLine        = "GRID003"
	RuleGridBand        = "GRID004"
	RuleGridRideThrough = "GRID005"
	RuleGridSmoothing   = "GRID006"
	RuleGridIncomplete  = "GRID007"
)

var gridRules = map[string]string{
	RuleGridRamp:        "the modelled site power rises or falls faster than the grid boundary's ramp limit",
	RuleGridSwing:       "the modelled site power swings more than the grid boundary allows within its window",
	RuleGridLine:        "a line of the modelled site power's spectrum in the grid's band is above the limit",
	RuleGridBand:        "the modelled site power's RMS in the grid's band is above the limit",
	RuleGridRideThrough: "a UPS whose transfer settings take load off the grid inside the ride-through curve, or give it back too late",
	RuleGridSmoothing:   "power smoothing declared for GPUs that do not support it",
	RuleGridIncomplete:  "a grid boundary that cannot be checked: no requirements, no load model, values out of range",
}

// GridFigure is one clause of a grid boundary against the modelled site:
// the worst over the swept iteration periods.
type GridFigure struct {
	Rule     string
	Clause   string // "ramp up per second", "line", …
	Path     string
	Measured float64 // kW
	Limit    float64 // kW
	Period   float64 // s, the iteration period of the worst case
	Freq     float64 // Hz, a line's
	// Where names the part of the job the worst change happened in.
	Where string
	Pos   diag.Pos
}

// Text says the figure in words.
func (f GridFigure) Text() string {
	at := ""
	if f.Freq > 0 {
		at = fmt.Sprintf(" at %.3g Hz", f.Freq)
	}
	if f.Where != "" {
		at += " " + f.Where
	}
	verb := "above"
	if f.OK() {
		verb = "within"
	}
	return fmt.Sprintf("the site's %s%s is %s, %s the limit %s (worst at an iteration period of %s, every module in phase)",
		f.Clause, at, showPower(f.Measured), verb, showPower(f.Limit), fmtSecs(f.Period))
}

// OK reports whether the figure is within its limit.
func (f GridFigure) OK() bool { return !units.Exceeds(f.Measured, f.Limit) }

// GridAdvice is the least of one mitigation that makes every clause pass
// on its own, and what it costs.
type GridAdvice struct {
	What string // "a smoothing floor of 97.5 % ..." or why none passes
	OK   bool
}

// GridAssessment is a grid boundary's design against its clauses.
type GridAssessment struct {
	Boundary *Boundary
	Figures  []GridFigure
	// Advice for each mitigation on its own, when a figure fails.
	Advice []GridAdvice
	// Energy is the job's mean site power, kW, as modelled with the
	// declared answers.
	Energy float64
	GPUs   int
	// Periods are the iteration periods swept, s.
	Periods []float64
}

// gridModel is one grid boundary's load model over the site's racks.
type gridModel struct {
	g       *Grid
	load    gridload.Load
	groups  []gridload.Group
	periods []float64
	rate    float64
	rated   float64 // kW
	gpus    int
	horizon float64 // s, storage's averaging window
	// err is the first measure the model could not take: never a pass
	err error
}

func (m *gridModel) fail(err error) {
	if err != nil && m.err == nil {
		m.err = err
	}
}

// AssessGrid models a grid boundary's site power and measures it against
// every clause. Problems that stop the model are diagnostics (GRID006,
// GRID007); the assessment is nil then.
func AssessGrid(c *Contracts, b *Boundary) (*GridAssessment, diag.List) {
	var diags diag.List
	m := newGridModel(c, b, &diags)
	if m == nil {
		return nil, diags
	}
	a := &GridAssessment{Boundary: b, GPUs: m.gpus, Periods: m.periods}
	a.Figures = m.evaluate(m.groups, m.periods)
	if m.err != nil {
		diags.Errorf(RuleGridIncomplete, b.Grid.Pos, b.Grid.Path, "%s: the modelled site power cannot be measured against these clauses: %v", b.Grid.Path, m.err).Hint =
			"check the clauses' windows and band against docs/grid.md (a window longer than the modelled job, a band the sampling cannot reach)"
		return nil, diags
	}
	a.Energy = gridload.Mean(m.training(m.groups, m.load.Period)) / 1000
	if slices.ContainsFunc(a.Figures, func(f GridFigure) bool { return !f.OK() }) {
		a.Advice = []GridAdvice{m.floorAdvice(a), m.storageAdvice(a)}
	}
	return a, diags
}

func newGridModel(c *Contracts, b *Boundary, diags *diag.List) *gridModel {
	g := b.Grid
	path := "boundaries." + quoteLabel(b.ID)
	if g == nil {
		diags.Errorf(RuleGridIncomplete, b.Pos, path, "%s is a grid boundary without a grid section: nothing states what the utility requires", path).Hint =
			`add grid: {rated: "6.5 MW", require: {ramp: ..., swing: ..., oscillation: ...}, load: {...}} (docs/grid.md)`
		return nil
	}
	if !g.Rated.Set || g.Rated.Canon <= 0 {
		diags.Errorf(RuleGridIncomplete, g.Pos, g.Path+".rated", "%s.rated: the site's rated power at the point of interconnection is needed: every share is of it", g.Path).Hint = `rated: "6.5 MW"`
		return nil
	}
	waveform := g.RampUp != (RampLimit{}) || g.RampDown != (RampLimit{}) || g.Swing.Set || g.Oscillation != nil
	if !waveform {
		return nil
	}
	l := g.Load
	if l == nil {
		diags.Errorf(RuleGridIncomplete, g.Pos, g.Path+".load", "%s: the grid limits the site's power swings, but the site declares no training load to check them against", g.Path).Hint =
			`declare the load: load: {period: "1 s", compute_share: "70 %", gpu_compute: "1.2 kW", gpu_communication: "300 W"}`
		return nil
	}
	lp := g.Path + ".load"
	switch {
	case !l.Period.Set || l.Period.Canon <= 0:
		diags.Errorf(RuleGridIncomplete, l.Pos, lp+".period", "%s.period must be a time above zero", lp)
		return nil
	case !l.ComputeShare.Set || l.ComputeShare.Canon <= 0 || l.ComputeShare.Canon > 100:
		diags.Errorf(RuleGridIncomplete, firstValid(l.ComputeShare.Pos, l.Pos), lp+".compute_share", "%s.compute_share must be a share above 0 %% and at most 100 %%", lp)
		return nil
	case l.Compute.Canon < l.Communication.Canon:
		diags.Errorf(RuleGridIncomplete, l.Compute.Pos, lp+".gpu_compute", "%s: a GPU draws %s computing but %s communicating: the compute phase is the high one", lp, l.Compute.Raw, l.Communication.Raw)
		return nil
	}
	if o := g.Oscillation; o != nil && !checkOscillation(o, g.Path+".require.oscillation", diags) {
		return nil
	}
	if g.Swing.Set && g.SwingWindow.Canon <= 0 {
		diags.Errorf(RuleGridIncomplete, firstValid(g.SwingWindow.Pos, g.Swing.Pos), g.Path+".require.swing.window", "%s.require.swing.window must be a time above zero", g.Path)
		return nil
	}
	m := &gridModel{g: g, rated: g.Rated.Canon}
	m.load = gridload.Load{Period: l.Period.Canon, ComputeShare: l.ComputeShare.Canon / 100,
		Compute: l.Compute.Canon * 1000, Communication: l.Communication.Canon * 1000, Idle: l.Communication.Canon * 1000}
	if l.Idle.Set {
		m.load.Idle = l.Idle.Canon * 1000
	}
	if l.CheckpointStall.Set {
		m.load.CheckpointStall = l.CheckpointStall.Canon
	}
	m.periods = l.Periods()
	m.rate, m.horizon = 10, 60
	if o := g.Oscillation; o != nil {
		m.rate = math.Max(m.rate, math.Ceil(2.5*o.High.Canon))
		m.horizon = math.Max(m.horizon, 1/o.Low.Canon)
	}
	if g.Swing.Set {
		// storage flattens a job's start and stop over several windows
		m.horizon = math.Max(m.horizon, 3*g.SwingWindow.Canon)
	}
	if !m.racks(c, diags) {
		return nil
	}
	return m
}

// checkOscillation reports an oscillation clause whose band or windows cannot
// resolve its frequencies.
func checkOscillation(o *Oscillation, path string, diags *diag.List) bool {
	switch {
	case !o.Low.Set || !o.High.Set || o.Low.Canon <= 0 || o.Low.Canon >= o.High.Canon:
		diags.Errorf(RuleGridIncomplete, o.Pos, path+".band", "%s.band: low %s must be above 0 Hz and below high %s", path, o.Low.Raw, o.High.Raw)
	case o.Window.Canon < 1/o.Low.Canon:
		diags.Errorf(RuleGridIncomplete, o.Window.Pos, path+".window", "%s.window: %s cannot resolve the band's low edge %s, which needs at least %s", path, o.Window.Raw, o.Low.Raw, fmtSecs(1/o.Low.Canon)).Hint =
			"lengthen the window to at least 1 / band.low"
	case o.Segment.Set && (o.Segment.Canon < 1/o.Low.Canon || o.Segment.Canon > o.Window.Canon):
		diags.Errorf(RuleGridIncomplete, o.Segment.Pos, path+".segment", "%s.segment: %s must be at least 1 / band.low (%s) and at most the window %s", path, o.Segment.Raw, fmtSecs(1/o.Low.Canon), o.Window.Raw)
	case !o.Line.Set && !o.RMS.Set:
		diags.Errorf(RuleGridIncomplete, o.Pos, path, "%s states a band but neither a line nor an rms limit", path).Hint = `line: "1 %", rms: "1 %"`
	default:
		return true
	}
	return false
}

// Periods are the declared iteration period and the sweep's periods,
// log-spaced: what vet models and the plan's grid cases drive.
func (l *TrainingLoad) Periods() []float64 {
	out := []float64{l.Period.Canon}
	if l.SweepSteps >= 2 && l.SweepFrom.Canon > 0 && l.SweepTo.Canon > l.SweepFrom.Canon {
		a, z := math.Log(l.SweepFrom.Canon), math.Log(l.SweepTo.Canon)
		for i := range l.SweepSteps {
			out = append(out, math.Exp(a+(z-a)*float64(i)/float64(l.SweepSteps-1)))
		}
	}
	return out
}

// racks groups the site's IT racks by what they draw and declare.
func (m *gridModel) racks(c *Contracts, diags *diag.List) bool {
	// racks are grouped by what the model sees, so that 100 modules that
	// declare the same answer are one group
	type key struct {
		gpus                int
		base, limit, filler float64
		smoothing           gridload.Smoothing
		storage             gridload.Storage
		smoothed, stored    bool
	}
	idx := map[key]int{}
	supported := schema.PowerSmoothingGPUs()
	refused := map[*GridResponse][]string{}
	var order []*GridResponse
	for _, mod := range c.Site.Modules {
		for _, r := range mod.Racks {
			if r.GPUs == 0 {
				continue
			}
			resp := c.Grid.Response(r)
			if resp != nil && resp.Smoothing != nil {
				if model := GPUModel(r); !slices.Contains(supported, model) {
					if refused[resp] == nil {
						order = append(order, resp)
					}
					what := model + " GPUs"
					if model == "" {
						what = "no GPU model named in their design"
					}
					refused[resp] = append(refused[resp], what+"\x00"+r.ID)
					continue
				}
			}
			g := m.group(r.GPUs, math.Max(0, r.DesignPower.Canon*1000-float64(r.GPUs)*m.load.Compute), resp)
			k := key{gpus: g.GPUsPerRack, base: g.Base, limit: g.PowerLimit, filler: g.Filler}
			if g.Smoothing != nil {
				k.smoothing, k.smoothed = *g.Smoothing, true
			}
			if g.Storage != nil {
				k.storage, k.stored = *g.Storage, true
			}
			if i, seen := idx[k]; seen {
				m.groups[i].Racks++
			} else {
				idx[k] = len(m.groups)
				m.groups = append(m.groups, g)
			}
			m.gpus += r.GPUs
		}
	}
	for _, resp := range order {
		diags.Errorf(RuleGridSmoothing, resp.Smoothing.Pos, resp.Path+".smoothing", "%s: power smoothing is declared for %s, which NVML's power smoothing does not support (it supports %s)",
			resp.Path, racksByModel(refused[resp]), strings.Join(supported, ", ")).Hint =
			"remove the smoothing, or answer with storage, filler or a lower power limit (contracts/schema/schema.cue, #PowerSmoothingGPUs, gives the table and its source)"
	}
	ok := len(order) == 0
	if ok && len(m.groups) == 0 {
		diags.Errorf(RuleGridIncomplete, m.g.Pos, m.g.Path, "%s: the site has no IT rack that states its GPUs, so there is no training load to check", m.g.Path).Hint = "state gpus on the IT racks"
		return false
	}
	return ok
}

// racksByModel says "16 racks with H100 GPUs (ma/r01 … ma/r16)" from
// "what\x00rack" entries in rack order.
func racksByModel(entries []string) string {
	var order []string
	racks := map[string][]string{}
	for _, e := range entries {
		what, rack, _ := strings.Cut(e, "\x00")
		if racks[what] == nil {
			order = append(order, what)
		}
		racks[what] = append(racks[what], rack)
	}
	var parts []string
	for _, what := range order {
		rs := racks[what]
		span := rs[0]
		if len(rs) > 1 {
			span += " … " + rs[len(rs)-1]
		}
		parts = append(parts, fmt.Sprintf("%d rack(s) with %s (%s)", len(rs), what, span))
	}
	return strings.Join(parts, " and ")
}

// GPUModel is the model of a rack's GPUs from its design, "" when it names none.
func GPUModel(r *Rack) string {
	if r.DesignOf == nil {
		return ""
	}
	for _, t := range r.DesignOf.Trays {
		for _, p := range t.Parts {
			if p.Kind == "gpu" && p.Model != "" {
				return p.Model
			}
		}
	}
	return ""
}

func (m *gridModel) group(gpus int, base float64, resp *GridResponse) gridload.Group {
	g := gridload.Group{Racks: 1, GPUsPerRack: gpus, Base: base}
	if resp == nil {
		return g
	}
	g.PowerLimit = resp.GPULimit.Canon * 1000
	g.Filler = resp.Filler.Canon * 1000
	if s := resp.Smoothing; s != nil {
		g.Smoothing = &gridload.Smoothing{Floor: s.Floor.Canon / 100, RampUp: s.RampUp.Canon * 1000,
			RampDown: s.RampDown.Canon * 1000, Hysteresis: s.Hysteresis.Canon}
	}
	if s := resp.Storage; s != nil {
		g.Storage = &gridload.Storage{Power: s.Power.Canon * 1000, Energy: s.Energy.Canon * 3.6e6,
			SoCMin: orDefault(s.SoCMin, 20) / 100, SoCMax: orDefault(s.SoCMax, 80) / 100, Response: s.Response.Canon, Horizon: m.horizon}
	}
	return g
}

func orDefault(q Q, def float64) float64 {
	if q.Set {
		return q.Canon
	}
	return def
}

// job is the scenario ramp and swing are measured on: idle, the job's
// start, training with one checkpoint stall, its stop, idle.
func (m *gridModel) job(groups []gridload.Group, period float64) []float64 {
	l := m.load
	l.Period = period
	return m.sum(groups, l, m.jobScenario(groups, period))
}

// jobRate is the job scenario's sampling: ramp and swing windows are a
// second or longer, so 20 samples a second resolve every edge.
const jobRate = 20

func (m *gridModel) jobScenario(groups []gridload.Group, period float64) gridload.Scenario {
	run := math.Max(90, 3*period)
	if m.g.Swing.Set {
		run = math.Max(run, m.g.SwingWindow.Canon)
	}
	// idle long enough for storage to have averaged idle before the start
	lead := 30.0
	if stored(groups) {
		lead = math.Max(lead, m.horizon)
	}
	sc := gridload.Scenario{Rate: jobRate, Start: lead, Stop: lead + 2*run + m.load.CheckpointStall}
	sc.Seconds = sc.Stop + lead + math.Max(60, run)
	if m.load.CheckpointStall > 0 {
		sc.StallAt = sc.Start + run
	}
	return sc
}

func stored(groups []gridload.Group) bool {
	return slices.ContainsFunc(groups, func(g gridload.Group) bool { return g.Storage != nil })
}

// where names the part of the job scenario a change ending at t is in.
func (m *gridModel) where(groups []gridload.Group, period, t float64) string {
	sc := m.jobScenario(groups, period)
	switch {
	case t >= sc.Stop:
		return "at the job's stop"
	case sc.StallAt > 0 && t >= sc.StallAt:
		return "around a checkpoint's stall"
	case t >= sc.Start:
		return "after the job's start"
	}
	return "before the job"
}

// training is steady training over the oscillation window, after the
// storage's horizon has passed.
func (m *gridModel) training(groups []gridload.Group, period float64) []float64 {
	l := m.load
	l.Period = period
	window := 120.0
	if o := m.g.Oscillation; o != nil {
		window = o.Window.Canon
	}
	warm := 2*period + 10
	if stored(groups) {
		warm += m.horizon
	}
	skip, n := int(math.Round(warm*m.rate)), gridsignal.FastLengthAbove(int(math.Ceil(window*m.rate)))
	s := m.sum(groups, l, gridload.Scenario{Rate: m.rate, Seconds: float64(skip+n) / m.rate})
	return s[skip : skip+n]
}

func (m *gridModel) sum(groups []gridload.Group, l gridload.Load, sc gridload.Scenario) []float64 {
	series := make([][]float64, len(groups))
	for i, g := range groups {
		series[i], _ = g.Power(l, sc)
	}
	return gridload.Sum(series...)
}

// share turns a limit in power or % of rated into kW.
func (m *gridModel) share(q Q) float64 { return m.g.Power(q) }

// Power is a limit written as power or as % of the rated power, in kW.
func (g *Grid) Power(q Q) float64 {
	if q.Dim == units.Ratio {
		return q.Canon / 100 * g.Rated.Canon
	}
	return q.Canon
}

// evaluate measures every clause at every period and keeps the worst.
func (m *gridModel) evaluate(groups []gridload.Group, periods []float64) []GridFigure {
	g := m.g
	var worst []GridFigure
	keep := func(i int, f GridFigure) {
		if i == len(worst) {
			worst = append(worst, f)
		} else if f.Measured/f.Limit > worst[i].Measured/worst[i].Limit {
			worst[i] = f
		}
	}
	for _, p := range periods {
		i := 0
		next := func(f GridFigure) { f.Period = p; keep(i, f); i++ }
		job := gridsignal.Series{Rate: jobRate, Values: m.job(groups, p)}
		// each window's ramps once, for up and down
		ramped := map[float64][2]gridsignal.Change{}
		ramps := func(window float64) (gridsignal.Change, gridsignal.Change) {
			if r, ok := ramped[window]; ok {
				return r[0], r[1]
			}
			up, down, err := gridsignal.Ramp(job, window)
			m.fail(err)
			ramped[window] = [2]gridsignal.Change{up, down}
			return up, down
		}
		for _, r := range []struct {
			name string
			lim  RampLimit
			up   bool
		}{{"up", g.RampUp, true}, {"down", g.RampDown, false}} {
			for _, w := range []struct {
				name   string
				q      Q
				window float64
			}{{"per_second", r.lim.PerSecond, 1}, {"per_minute", r.lim.PerMinute, 60}} {
				if !w.q.Set {
					continue
				}
				up, down := ramps(w.window)
				ch := up
				if !r.up {
					ch = down
				}
				next(GridFigure{Rule: RuleGridRamp, Clause: "ramp " + r.name + " " + strings.ReplaceAll(w.name, "_", " "),
					Path: g.Path + ".require.ramp." + r.name + "." + w.name, Measured: ch.Value / 1000, Limit: w.q.Canon * w.window,
					Where: m.where(groups, p, ch.To), Pos: w.q.Pos})
			}
		}
		if g.Swing.Set {
			s, err := gridsignal.Swing(job, g.SwingWindow.Canon)
			m.fail(err)
			next(GridFigure{Rule: RuleGridSwing, Clause: "swing within " + g.SwingWindow.Raw, Path: g.Path + ".require.swing.max",
				Measured: s.Value / 1000, Limit: m.share(g.Swing), Where: m.where(groups, p, s.To), Pos: g.Swing.Pos})
		}
		if o := g.Oscillation; o != nil {
			tr := gridsignal.Series{Rate: m.rate, Values: m.training(groups, p)}
			if o.Line.Set {
				line, err := gridsignal.LargestLine(tr, o.Low.Canon, o.High.Canon)
				m.fail(err)
				next(GridFigure{Rule: RuleGridLine, Clause: "largest line", Path: g.Path + ".require.oscillation.line",
					Measured: line.Amplitude / 1000, Limit: m.share(o.Line), Freq: line.Freq, Pos: o.Line.Pos})
			}
			if o.RMS.Set {
				seg := o.Window.Canon / 4
				if o.Segment.Set {
					seg = o.Segment.Canon
				}
				seg = math.Max(seg, 1/o.Low.Canon)
				rms, err := gridsignal.BandRMS(tr, o.Low.Canon, o.High.Canon, seg)
				m.fail(err)
				next(GridFigure{Rule: RuleGridBand, Clause: "band RMS", Path: g.Path + ".require.oscillation.rms",
					Measured: rms / 1000, Limit: m.share(o.RMS), Pos: o.RMS.Pos})
			}
		}
	}
	return worst
}

// checkGrid runs the grid rules on every grid boundary.
func checkGrid(c *Contracts, diags *diag.List) {
	for _, b := range c.Boundaries {
		if b.Grid != nil && b.Medium != "grid" {
			diags.Errorf(RuleGridIncomplete, b.Grid.Pos, b.Grid.Path, "%s: only a grid boundary (medium \"grid\") holds grid clauses; this one is %s", b.Grid.Path, b.Medium)
			continue
		}
		if b.Medium != "grid" {
			continue
		}
		a, ad := AssessGrid(c, b)
		*diags = append(*diags, ad...)
		if b.Grid != nil {
			checkGridChannel(b, diags)
			checkRideThrough(c, b.Grid, diags)
		}
		if a == nil {
			continue
		}
		hint := adviceText(a.Advice)
		for _, f := range a.Figures {
			if f.OK() {
				continue
			}
			diags.Errorf(f.Rule, f.Pos, f.Path, "%s: %s", f.Path, f.Text()).Hint = hint
		}
	}
}

// checkGridChannel: the point-of-interconnection channel is one of the
// boundary's power channels.
func checkGridChannel(b *Boundary, diags *diag.List) {
	ch := b.Grid.Channel
	if ch.To == "" {
		return
	}
	i := slices.IndexFunc(b.Channels, func(c *Channel) bool { return c.Name == ch.To })
	switch {
	case i < 0:
		var names []string
		for _, c := range b.Channels {
			if c.Quantity == units.Power {
				names = append(names, c.Name)
			}
		}
		diags.Errorf(RuleGridIncomplete, ch.Pos, b.Grid.Path+".channel", "%s.channel: %q is not a channel of boundary %s", b.Grid.Path, ch.To, b.ID).Hint =
			"name a power channel of the boundary" + didYouMeanSuffix(ch.To, names) + ", or declare it under channels with quantity power"
	case b.Channels[i].Quantity != units.Power:
		diags.Errorf(RuleGridIncomplete, ch.Pos, b.Grid.Path+".channel", "%s.channel: %q measures %s; the point-of-interconnection meter's channel measures power", b.Grid.Path, ch.To, b.Channels[i].Quantity)
	}
}
