package compile

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/gridsignal"
	"github.com/seamdc/seam/internal/plan"
	"github.com/seamdc/seam/internal/units"
)

// Grid cases (docs/grid.md): at IST, the training pattern driven in
// phase across the site and graded at the point-of-interconnection
// meter for ramp, swing and spectrum, and voltage dips from the grid's
// side graded for the power coming back.

// gridClauseKind is the contract path segment of a grid boundary's
// requirements: their clauses' paths are boundaries."b".grid.require.X.
const gridClauseKind = plan.Grid + ".require"

// Names of the grid clauses, as written under grid.require.
const (
	gridRamp      = "ramp"
	gridSwing     = "swing"
	gridOsc       = "oscillation"
	gridVoltageRT = "voltage_ride_through"
	gridFreqRT    = "frequency_ride_through"
)

// Grid case timing.
const (
	gridLeadS     = 30  // idle before a job starts, and after it stops
	gridSettleS   = 10  // beyond the model's own settling, before a record
	gridRunS      = 90  // the least a job runs between its start and its stall
	gridMarginS   = 2   // a record runs this much longer than its window
	gridRefS      = 10  // the load a dip is measured against: its mean over this before the dip
	gridRestoreS  = 10  // a restore is watched this much longer than its limit
	gridBankShare = 0.5 // a ride-through holds each IT module's load bank at this share of its module's design
)

// gridClauses are a grid boundary's requirements as clauses, for the
// coverage table and the cases' notes.
func gridClauses(b *contract.Boundary) []*contract.Clause {
	g := b.Grid
	if g == nil {
		return nil
	}
	var out []*contract.Clause
	add := func(name string, set bool, pos ...contract.Q) {
		if !set {
			return
		}
		cl := &contract.Clause{Kind: gridClauseKind, Name: name, Boundary: b, Pos: g.Pos}
		for _, q := range pos {
			if q.Pos.IsValid() {
				cl.Pos = q.Pos
				break
			}
		}
		out = append(out, cl)
	}
	add(gridRamp, g.RampUp != (contract.RampLimit{}) || g.RampDown != (contract.RampLimit{}),
		g.RampUp.PerSecond, g.RampUp.PerMinute, g.RampDown.PerSecond, g.RampDown.PerMinute)
	add(gridSwing, g.Swing.Set, g.Swing)
	if o := g.Oscillation; o != nil {
		add(gridOsc, true, contract.Q{Pos: o.Pos})
	}
	if v := g.VoltageRT; v != nil {
		add(gridVoltageRT, true, contract.Q{Pos: v.Pos})
	}
	if f := g.FrequencyRT; f != nil {
		add(gridFreqRT, true, contract.Q{Pos: f.Pos})
	}
	return out
}

// gridBuilder builds one grid boundary's cases.
type gridBuilder struct {
	k       *compiler
	b       *contract.Boundary
	g       *contract.Grid
	ch      string // the meter's channel
	clauses map[string]*contract.Clause
}

// grid builds a grid boundary's IST cases.
func (k *compiler) grid(b *contract.Boundary) {
	g := b.Grid
	if g == nil {
		return
	}
	gb := &gridBuilder{k: k, b: b, g: g, ch: g.Channel.To, clauses: map[string]*contract.Clause{}}
	for _, cl := range gridClauses(b) {
		gb.clauses[cl.Name] = cl
	}
	if cl := gb.clauses[gridFreqRT]; cl != nil {
		k.note(cl, plan.IST, "a frequency excursion needs a test bench's grid simulator, which a plan cannot drive yet; vet checks the UPSs' transfer settings against it (GRID005)")
		k.bad[cl.Path()] = true
	}
	var waveform []*contract.Clause
	for _, n := range []string{gridRamp, gridSwing, gridOsc, gridVoltageRT} {
		if cl := gb.clauses[n]; cl != nil {
			waveform = append(waveform, cl)
		}
	}
	if len(waveform) == 0 {
		return
	}
	if gb.ch == "" || k.chans[b][gb.ch] == nil {
		what := fmt.Sprintf("%q is not a channel of %s", gb.ch, b.ID)
		if gb.ch == "" {
			what = "the grid section names no meter channel"
		}
		for _, cl := range waveform {
			k.untestable(cl, plan.IST, RuleNoChannel, firstValid(g.Channel.Pos, g.Pos),
				`declare the point-of-interconnection meter under the boundary's channels and name it: grid: channel: "u1/site/power"`,
				"no meter measures the site's power at the point of interconnection: %s", what)
		}
		return
	}
	if gb.g.Load != nil {
		gb.job()
		periods := gb.g.Load.Periods()
		if k.maxHold > 0 && len(periods) > 1 {
			// a rehearsal: the declared period only
			if cl := gb.clauses[gridOsc]; cl != nil {
				k.note(cl, plan.IST, "the sweep's %d other iteration periods are left out by --max-hold: only the declared %s is run", len(periods)-1, secText(periods[0]))
			}
			periods = periods[:1]
		}
		for _, p := range periods {
			gb.oscillation(p)
		}
	} else {
		for _, n := range []string{gridRamp, gridSwing, gridOsc} {
			if cl := gb.clauses[n]; cl != nil {
				k.untestable(cl, plan.IST, RuleNoLoad, g.Pos, "declare the training load under grid.load (docs/grid.md)",
					"the boundary declares no training load to drive")
			}
		}
	}
	gb.rideThrough()
}

// driver is what draws the training pattern at period p: every IT
// module's load bank where each can switch that fast and no rack
// answers the grid (a load bank in the racks' place neither smooths nor
// stores), else the fleet's GPUs.
func (gb *gridBuilder) driver(p float64) (string, []*contract.LoadBank, string) {
	k := gb.k
	var banks []*contract.LoadBank
	for _, m := range k.c.Site.Modules {
		if m.Kind != "it" || m.DesignPower() <= 0 {
			continue
		}
		lb := k.bankAt(m.ID)
		if lb == nil {
			return plan.DriverFleet, nil, fmt.Sprintf("%s has no load bank", m.ID)
		}
		if !lb.Switching.Set || lb.Switching.Canon < 1/p {
			return plan.DriverFleet, nil, fmt.Sprintf("%s cannot switch at %s (its switching limit: %s)", lb.ID, hzText(1/p), orNone(lb.Switching.Raw))
		}
		banks = append(banks, lb)
	}
	if len(banks) == 0 {
		return plan.DriverFleet, nil, "the site has no IT module"
	}
	for _, m := range k.c.Site.Modules {
		for _, r := range m.Racks {
			if resp := k.c.Grid.Response(r); resp != nil {
				return plan.DriverFleet, nil, fmt.Sprintf("rack %s answers the grid in the rack (%s), which a load bank in its place cannot reproduce", r.ID, resp.Path)
			}
		}
	}
	return plan.DriverLoadBanks, banks, ""
}

func orNone(s string) string {
	if s == "" {
		return "not stated"
	}
	return s
}

// bankLoad is what every bank carries in the compute and communication
// phases: the mean over the IT modules of their racks' draw (a load
// bank stands in for its module's GPUs, unsmoothed).
func (gb *gridBuilder) bankLoad(banks []*contract.LoadBank) (low, high float64) {
	l := gb.g.Load
	n := 0
	for _, m := range gb.k.c.Site.Modules {
		if m.Kind != "it" || m.DesignPower() <= 0 {
			continue
		}
		n++
		for _, r := range m.Racks {
			if r.GPUs == 0 {
				continue
			}
			gpus := float64(r.GPUs)
			base := math.Max(0, r.DesignPower.Canon-gpus*l.Compute.Canon)
			high += base + gpus*l.Compute.Canon
			low += base + gpus*l.Communication.Canon
		}
	}
	low, high = low/float64(max(n, 1)), high/float64(max(n, 1))
	p := newProgram(banks[0])
	return p.setpoint(low, false), p.setpointUncapped(high)
}

// settle is how long a job takes to reach steady training from idle:
// two periods, the slowest declared smoothing's ramp from idle to the
// compute draw and its hysteresis, a storage's horizon, and a margin.
func (gb *gridBuilder) settle(p float64) float64 {
	l := gb.g.Load
	s := 2*p + gridSettleS
	for _, m := range gb.k.c.Site.Modules {
		for _, r := range m.Racks {
			resp := gb.k.c.Grid.Response(r)
			if resp == nil {
				continue
			}
			if sm := resp.Smoothing; sm != nil && sm.RampUp.Canon > 0 {
				idle := l.Communication.Canon
				if l.Idle.Set {
					idle = l.Idle.Canon
				}
				s = math.Max(s, 2*p+gridSettleS+(l.Compute.Canon-idle)/sm.RampUp.Canon+sm.Hysteresis.Canon)
			}
			if resp.Storage != nil {
				s = math.Max(s, 2*p+gridSettleS+3*gb.swingWindow())
			}
		}
	}
	return math.Ceil(s)
}

func (gb *gridBuilder) swingWindow() float64 {
	if gb.g.Swing.Set && gb.g.SwingWindow.Canon > 0 {
		return gb.g.SwingWindow.Canon
	}
	return 60
}

// newCase starts a grid case proving clause name.
func (gb *gridBuilder) newCase(name, id string) *caseBuilder {
	k, b := gb.k, gb.b
	cl := gb.clauses[name]
	c := &built{Case: plan.Case{ID: caseID(plan.IST, b.ID, plan.Grid, id), Level: plan.IST, Kind: plan.Grid,
		Module: b.Consumer.To, Boundary: b.ID, Sides: []string{plan.Require},
		Clause:        plan.ClauseRef{Path: cl.Path(), Pos: posText(cl.Pos), BoundaryDigest: k.dg.boundaries[b.ID]},
		Preconditions: []plan.Precondition{}, Checks: []plan.Check{}, Interlocks: []string{}}}
	cb := &caseBuilder{k: k, c: c, b: b, cl: cl, level: plan.IST, prog: &program{}, samp: sampler{}}
	c.Preconditions = append(c.Preconditions, plan.Precondition{Kind: plan.PreState,
		Text: fmt.Sprintf("the site connected to %s's grid, every IT module energised, no job running; the point-of-interconnection meter %s recording", b.Supplier.To, gb.ch)})
	return cb
}

// train adds a train step at period p with the driver that fits it.
func (gb *gridBuilder) train(cb *caseBuilder, id string, p, d float64, note string) {
	l := gb.g.Load
	driver, banks, why := gb.driver(p)
	s := plan.Step{ID: id, Op: plan.OpTrain, Driver: driver, PeriodS: round(p), DutyPct: round(l.ComputeShare.Canon),
		DurationS: round(d), EstimatedS: d, Note: note}
	if driver == plan.DriverLoadBanks {
		low, high := gb.bankLoad(banks)
		s.LowKW, s.HighKW = plan.F(low), plan.F(high)
		for _, lb := range banks {
			gb.k.banks[lb.ID] = lb
			cb.c.Preconditions = append(cb.c.Preconditions, plan.Precondition{Kind: plan.PreLoadBankIdle, LoadBank: lb.ID,
				Text: lb.ID + " at 0 kW, in remote control, heartbeat running"})
		}
		s.Note = strings.TrimPrefix(s.Note+"; every IT module's load bank switches it, unsmoothed", "; ")
	} else {
		s.Action = fmt.Sprintf("start the training pattern on every GPU of the site in phase: %s iterations, %s computing",
			secText(p), units.Format(round(l.ComputeShare.Canon), "%"))
		s.Expect = "every node training, the site's power swinging with the iterations"
		if why != "" {
			s.Note = strings.TrimPrefix(s.Note+"; the fleet's GPUs run it: "+why, "; ")
		}
	}
	cb.prog.add(s)
}

func (gb *gridBuilder) stop(cb *caseBuilder, id string) {
	cb.prog.add(plan.Step{ID: id, Op: plan.OpStopTraining, EstimatedS: 0})
}

// limitCheck adds a grid check with its limit and sources.
func (gb *gridBuilder) limitCheck(cb *caseBuilder, c plan.Check, path string, q contract.Q) {
	g := gb.g
	c.Side, c.Channel, c.Unit = plan.Require, gb.ch, "kW"
	c.Max = plan.F(round(g.Power(q)))
	c.Sources = []string{gb.k.src(path, q, g.Pos)}
	if q.Dim == units.Ratio {
		c.Sources = append(c.Sources, gb.k.src(g.Path+".rated", g.Rated, g.Pos))
	}
	cb.check(c)
}

// rampChecks grades the ramp and swing clauses over steps.
func (gb *gridBuilder) rampChecks(cb *caseBuilder, steps []string, minute bool) {
	g := gb.g
	req := g.Path + ".require"
	for _, r := range []struct {
		dir string
		lim contract.RampLimit
	}{{plan.Up, g.RampUp}, {plan.Down, g.RampDown}} {
		if r.lim.PerSecond.Set {
			gb.limitCheck(cb, plan.Check{ID: "ramp-" + r.dir + "-1s", Kind: plan.GridRamp, Direction: r.dir, WindowS: 1, Steps: steps},
				req+".ramp."+r.dir+".per_second", perWindow(r.lim.PerSecond, 1))
		}
		if r.lim.PerMinute.Set && minute {
			gb.limitCheck(cb, plan.Check{ID: "ramp-" + r.dir + "-1min", Kind: plan.GridRamp, Direction: r.dir, WindowS: 60, Steps: steps},
				req+".ramp."+r.dir+".per_minute", perWindow(r.lim.PerMinute, 60))
		}
	}
	if g.Swing.Set && minute {
		c := plan.Check{ID: "swing", Kind: plan.GridSwing, WindowS: round(gb.swingWindow()), Steps: steps}
		gb.limitCheck(cb, c, req+".swing.max", g.Swing)
		cb.c.Checks[len(cb.c.Checks)-1].Sources = append(cb.c.Checks[len(cb.c.Checks)-1].Sources,
			gb.k.src(req+".swing.window", g.SwingWindow, g.Pos))
	}
}

// perWindow turns a ramp limit (a power rate, canonical kW/s) into the
// largest change within window seconds, as a power.
func perWindow(q contract.Q, window float64) contract.Q {
	out := q
	out.Canon, out.Dim = q.Canon*window, units.Power
	return out
}

// sampling asks for the meter fast enough for the band, or for ramps.
func (gb *gridBuilder) sampling(cb *caseBuilder) {
	if o := gb.g.Oscillation; o != nil && o.High.Canon > 0 {
		f := gridsignal.MinRateFactor
		cb.samp.need(gb.ch, 1/(f*o.High.Canon),
			fmt.Sprintf("the band's upper edge %s needs %g samples per second (%g × f2)", o.High.Raw, round(f*o.High.Canon), f))
		return
	}
	cb.samp.need(gb.ch, 1.0/samplesPerWindow, fmt.Sprintf("at least %d samples within each 1 s ramp window", samplesPerWindow))
}

// job is the job's start, a checkpoint's stall and its stop at the
// declared period, graded for ramp and swing.
func (gb *gridBuilder) job() {
	name := gridRamp
	if gb.clauses[name] == nil {
		name = gridSwing
	}
	if gb.clauses[name] == nil {
		return
	}
	l := gb.g.Load
	p := l.Period.Canon
	run := math.Max(math.Max(gridRunS, 3*p), gb.swingWindow())
	settle := gb.settle(p)
	cb := gb.newCase(name, "job")
	gb.stop(cb, "idle")
	cb.prog.add(plan.Step{ID: "rest", Op: plan.OpHold, DurationS: gridSettleS, EstimatedS: gridSettleS, Note: "the site settles idle"})
	cb.prog.add(plan.Step{ID: "baseline", Op: plan.OpHold, DurationS: gridLeadS, EstimatedS: gridLeadS, Note: "the site idle before the job"})
	d := settle + 2*run + l.CheckpointStall.Canon
	gb.train(cb, "job", p, d, "the job starts, trains, stalls for a checkpoint and trains on")
	if l.CheckpointStall.Canon > 0 {
		last := &cb.prog.steps[len(cb.prog.steps)-1]
		last.StallAtS, last.StallS = round(settle+run), round(l.CheckpointStall.Canon)
	}
	gb.stop(cb, "stop")
	after := gridLeadS + math.Max(60, run) + (settle - 2*p - gridSettleS)
	cb.prog.add(plan.Step{ID: "after", Op: plan.OpHold, DurationS: round(after), EstimatedS: after, Note: "the site back to idle after the job"})
	gb.rampChecks(cb, []string{"baseline", "job", "stop", "after"}, true)
	gb.sampling(cb)
	cb.c.Title = title(fmt.Sprintf("IST %s job", gb.b.ID), fmt.Sprintf("start, checkpoint stall and stop of the training job at %s", secText(p)),
		"ramp and swing at "+gb.ch)
	cb.done(nil)
}

// oscillation is steady training at period p, graded for the band's
// largest line and RMS, and for ramp and swing within it.
func (gb *gridBuilder) oscillation(p float64) {
	o := gb.g.Oscillation
	name := gridOsc
	if o == nil {
		return
	}
	cb := gb.newCase(name, fmt.Sprintf("oscillation-%dms", int(math.Round(p*1000))))
	gb.stop(cb, "idle")
	gb.train(cb, "warm", p, gb.settle(p), "until the site's power is steady")
	window := o.Window.Canon
	gb.train(cb, "record", p, window+gridMarginS, "the record the spectrum is taken from")
	gb.stop(cb, "stop")
	req := gb.g.Path + ".require.oscillation"
	band := []string{gb.k.src(req+".band.low", o.Low, o.Pos), gb.k.src(req+".band.high", o.High, o.Pos), gb.k.src(req+".window", o.Window, o.Pos)}
	if o.Line.Set {
		gb.limitCheck(cb, plan.Check{ID: "line", Kind: plan.GridLine, BandLowHz: round(o.Low.Canon), BandHighHz: round(o.High.Canon),
			WindowS: round(window), Steps: []string{"record"}}, req+".line", o.Line)
		gb.addSources(cb, band...)
	}
	if o.RMS.Set {
		seg := window / 4
		if o.Segment.Set {
			seg = o.Segment.Canon
		}
		seg = math.Max(seg, 1/o.Low.Canon)
		gb.limitCheck(cb, plan.Check{ID: "band-rms", Kind: plan.GridBandRMS, BandLowHz: round(o.Low.Canon), BandHighHz: round(o.High.Canon),
			WindowS: round(window), SegmentS: round(seg), Steps: []string{"record"}}, req+".rms", o.RMS)
		gb.addSources(cb, band...)
	}
	gb.rampChecks(cb, []string{"record"}, window >= gb.swingWindow())
	gb.sampling(cb)
	cb.c.Title = title(fmt.Sprintf("IST %s oscillation at %s", gb.b.ID, secText(p)),
		fmt.Sprintf("steady training at %s iterations", secText(p)), fmt.Sprintf("spectrum %s–%s at %s", o.Low.Raw, o.High.Raw, gb.ch))
	cb.done(nil)
}

func (gb *gridBuilder) addSources(cb *caseBuilder, src ...string) {
	c := &cb.c.Checks[len(cb.c.Checks)-1]
	c.Sources = append(c.Sources, src...)
}

// rideThrough dips the grid's voltage to each point of the curve with a
// duration, with every IT module's load bank holding a steady load, and
// grades the site's power coming back.
func (gb *gridBuilder) rideThrough() {
	v := gb.g.VoltageRT
	if v == nil {
		return
	}
	cl := gb.clauses[gridVoltageRT]
	k := gb.k
	if !v.RestoreShare.Set || !v.RestoreWithin.Set {
		k.untestable(cl, plan.IST, RuleNothing, v.Pos, `state restore: {share: "90 %", within: "1 s"}`,
			"the curve states no restore to grade after a dip")
		return
	}
	var banks []*contract.LoadBank
	for _, m := range k.c.Site.Modules {
		if m.Kind != "it" || m.DesignPower() <= 0 {
			continue
		}
		if lb := k.bankAt(m.ID); lb != nil {
			banks = append(banks, lb)
		}
	}
	if len(banks) == 0 {
		k.untestable(cl, plan.IST, RuleNoLoad, v.Pos, "declare a load bank at each IT module under site.loadbanks",
			"no load bank holds a steady load through the dip")
		return
	}
	path := gb.g.Path + ".require.voltage_ride_through"
	n := 0
	for i, pt := range v.Curve {
		if !pt.Duration.Set {
			continue
		}
		n++
		cb := gb.newCase(gridVoltageRT, fmt.Sprintf("voltage-dip-%d", n))
		for _, lb := range banks {
			k.banks[lb.ID] = lb
			cb.c.Preconditions = append(cb.c.Preconditions, plan.Precondition{Kind: plan.PreLoadBankIdle, LoadBank: lb.ID,
				Text: lb.ID + " at 0 kW, in remote control, heartbeat running"})
		}
		load := gb.loadBanks(cb, banks)
		pu := pt.Voltage.Canon
		if pt.Voltage.Dim == units.Ratio {
			pu /= 100
		}
		cb.prog.add(plan.Step{ID: "dip", Op: plan.OpGridDip, Target: gb.b.Supplier.To, VoltagePU: plan.F(round(pu)),
			DurationS: round(pt.Duration.Canon), EstimatedS: pt.Duration.Canon,
			Action: fmt.Sprintf("dip the grid's voltage at the point of interconnection to %s for %s with the test bench's grid simulator", pt.Voltage.Raw, pt.Duration.Raw),
			Expect: "the site stays connected; no UPS transfers to battery"})
		after := v.RestoreWithin.Canon + gridRestoreS
		cb.prog.add(plan.Step{ID: "after", Op: plan.OpHold, DurationS: round(after), EstimatedS: after, Note: "the power comes back"})
		for _, lb := range banks {
			p := &program{lb: lb, kw: load / float64(len(banks))}
			p.ramp("unload-"+lb.ID, 0, p.gentleRate(k.c.Site.Module(lb.Module.To).DesignPower()), "leave the load bank at zero")
			cb.prog.add(p.steps[0])
		}
		cp := fmt.Sprintf("%s.curve[%d]", path, i)
		cb.check(plan.Check{ID: "restored", Kind: plan.RestoresWithin, Side: plan.Require, Channel: gb.ch, Unit: "kW",
			SharePct: round(v.RestoreShare.Canon), ReferenceS: gridRefS, WithinS: round(v.RestoreWithin.Canon), From: "dip", ForS: round(after),
			Sources: []string{k.src(path+".restore.share", v.RestoreShare, v.Pos), k.src(path+".restore.within", v.RestoreWithin, v.Pos),
				k.src(cp+".voltage", pt.Voltage, pt.Pos), k.src(cp+".duration", pt.Duration, pt.Pos)}})
		cb.samp.within(gb.ch, v.RestoreWithin.Canon, "restore")
		cb.partial("no transfer is graded by the site's power coming back within the restore time; the UPSs' on-battery alarms are not graded here")
		cb.c.Title = title(fmt.Sprintf("IST %s voltage dip %d", gb.b.ID, n), fmt.Sprintf("%s for %s with %s of load banks", pt.Voltage.Raw, pt.Duration.Raw, kwText(load)),
			fmt.Sprintf("%s of the power back within %s at %s", v.RestoreShare.Raw, v.RestoreWithin.Raw, gb.ch))
		cb.c.loadKW = load
		cb.done(nil)
	}
}

// loadBanks brings every IT module's load bank to its share of its
// module's design load, climbing in quarters of it together, each level
// settled, and returns the load they carry.
func (gb *gridBuilder) loadBanks(cb *caseBuilder, banks []*contract.LoadBank) float64 {
	k := gb.k
	progs := make([]*program, len(banks))
	// each bank's program tracks its setpoint; its steps go into the case in turn
	take := func(p *program) {
		cb.prog.steps = append(cb.prog.steps, p.steps[len(p.steps)-1])
	}
	for i, lb := range banks {
		progs[i] = newProgram(lb)
		progs[i].set("start-"+lb.ID, 0)
		take(progs[i])
	}
	load := 0.0
	for _, f := range stepLevels[1:] {
		if f > 100*gridBankShare {
			break
		}
		load = 0
		for _, p := range progs {
			design := k.c.Site.Module(p.lb.Module.To).DesignPower()
			kw := p.setpoint(design*f/100, false)
			p.ramp(fmt.Sprintf("ramp-%g-%s", f, p.lb.ID), kw, p.gentleRate(design), fmt.Sprintf("%g %% of %s's design load", f, p.lb.Module.To))
			take(p)
			load += kw
		}
		cb.prog.hold(fmt.Sprintf("settle-%g", f), gridLeadS, "")
	}
	return load
}

func hzText(f float64) string { return units.Format(round(f), "Hz") }

// gridGraded lists the grid clauses a grid case's checks grade, by
// their sources.
func (k *compiler) gridGraded(c plan.Case) []string {
	var b *contract.Boundary
	for _, x := range k.c.Boundaries {
		if x.ID == c.Boundary {
			b = x
		}
	}
	if b == nil {
		return nil
	}
	var out []string
	for _, cl := range gridClauses(b) {
		p := cl.Path()
		for _, ck := range c.Checks {
			if slices.ContainsFunc(ck.Sources, func(s string) bool { return strings.HasPrefix(s, p+".") }) && !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	return out
}

// isIT reports whether module id is an IT module.
func (k *compiler) isIT(id string) bool {
	m := k.c.Site.Module(id)
	return m != nil && m.Kind == "it"
}
