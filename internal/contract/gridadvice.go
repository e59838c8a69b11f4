package contract

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/seamdc/seam/internal/gridload"
)

// The least of each mitigation that makes a failing grid design pass on
// its own, and what it costs (docs/grid.md).

func passes(figs []GridFigure) bool {
	return !slices.ContainsFunc(figs, func(f GridFigure) bool { return !f.OK() })
}

// failingPeriods are the periods whose figures fail, the worst first;
// the mitigation searches run on them and confirm on the whole sweep.
func failingPeriods(figs []GridFigure) []float64 {
	var out []float64
	for _, f := range figs {
		if !f.OK() && !slices.Contains(out, f.Period) {
			out = append(out, f.Period)
		}
	}
	return out
}

// search finds the least x in [0, hi] for which build(x) passes every
// clause, by bisection on the failing periods, confirmed on all.
func (m *gridModel) search(a *GridAssessment, hi, tol float64, build func(float64) []gridload.Group) (float64, bool) {
	periods := failingPeriods(a.Figures)
	for range 3 {
		if !passes(m.evaluate(build(hi), periods)) {
			return 0, false
		}
		lo, up := 0.0, hi
		for up-lo > tol {
			mid := (lo + up) / 2
			if passes(m.evaluate(build(mid), periods)) {
				up = mid
			} else {
				lo = mid
			}
		}
		figs := m.evaluate(build(up), m.periods)
		if passes(figs) {
			return up, true
		}
		periods = append(periods, failingPeriods(figs)...)
	}
	return 0, false
}

// perGPURamp is the fastest a GPU may ramp for the site to keep every
// ramp and swing limit, each shared over every GPU, W/s; 0 when the
// grid states none.
func (m *gridModel) perGPURamp() float64 {
	r := math.Inf(1)
	limit := func(kw, seconds float64) { r = math.Min(r, kw*1000/seconds/float64(m.gpus)) }
	for _, l := range []RampLimit{m.g.RampUp, m.g.RampDown} {
		if l.PerSecond.Set {
			limit(l.PerSecond.Canon, 1)
		}
		if l.PerMinute.Set {
			limit(l.PerMinute.Canon, 1)
		}
	}
	if m.g.Swing.Set && m.g.SwingWindow.Canon > 0 {
		limit(m.share(m.g.Swing), m.g.SwingWindow.Canon)
	}
	if math.IsInf(r, 1) {
		return 0
	}
	return r
}

// floorAdvice is the least smoothing floor that passes, every rack's
// other answers as declared and ramp rates of the ramp clause's share.
func (m *gridModel) floorAdvice(a *GridAssessment) GridAdvice {
	ramp := m.perGPURamp()
	build := func(f float64) []gridload.Group {
		out := slices.Clone(m.groups)
		for i := range out {
			s := gridload.Smoothing{RampUp: ramp, RampDown: ramp}
			if out[i].Smoothing != nil {
				s = *out[i].Smoothing
			}
			s.Floor = f
			out[i].Smoothing = &s
		}
		return out
	}
	f, ok := m.search(a, 1, 0.005, build)
	rates := "the ramp rates declared"
	if ramp > 0 {
		rates = fmt.Sprintf("ramp rates of %.3g W/s per GPU (the ramp and swing limits' share) where none is declared", ramp)
	}
	if !ok {
		return GridAdvice{What: "no smoothing floor alone passes, even 100 %, with " + rates}
	}
	f = math.Ceil(f*200) / 2 // to the half percent
	cost := m.energyCost(build(f / 100))
	if f < 1 {
		return GridAdvice{OK: true, What: fmt.Sprintf("power smoothing with %s passes with no floor; it costs %s", rates, cost)}
	}
	return GridAdvice{OK: true, What: fmt.Sprintf("a smoothing floor of %.1f %% of the GPU power limit, with %s, passes; it costs %s", f, rates, cost)}
}

// storageAdvice is the least storage per rack that passes on its own.
func (m *gridModel) storageAdvice(a *GridAssessment) GridAdvice {
	var perRack float64 // W: the largest rack swing
	for _, g := range m.groups {
		perRack = math.Max(perRack, float64(g.GPUsPerRack)*(m.load.Compute-math.Min(m.load.Communication, m.load.Idle)))
	}
	const socMin, socMax, response = 0.2, 0.8, 0
	build := func(p float64) []gridload.Group {
		out := slices.Clone(m.groups)
		for i := range out {
			out[i].Storage = &gridload.Storage{Power: p, Energy: p * m.horizon / (socMax - socMin), SoCMin: socMin, SoCMax: socMax, Response: response, Horizon: m.horizon}
		}
		return out
	}
	p, ok := m.search(a, 1.5*perRack, 1000, build) // to the kW
	if !ok {
		return GridAdvice{What: fmt.Sprintf("no storage alone passes, even %s per rack", showPower(1.5*perRack/1000))}
	}
	p = math.Ceil(p/1000) * 1000
	energy := p * m.horizon / (socMax - socMin) / 3.6e6 // kWh
	racks := 0
	for _, g := range m.groups {
		racks += g.Racks
	}
	return GridAdvice{OK: true, What: fmt.Sprintf("storage of %s and %.2f kWh per rack (kept between 20 %% and 80 %%, answering at once, flattening toward its %s average; %s and %.2f MWh for the %d racks) passes; it costs %s",
		showPower(p/1000), energy, fmtSecs(m.horizon), showPower(p/1000*float64(racks)), energy*float64(racks)/1000, racks, m.storageCost(build(p)))}
}

// energyCost is the energy a mitigation adds to the job's, per day and
// as a share.
func (m *gridModel) energyCost(groups []gridload.Group) string {
	base := gridload.Mean(m.training(m.groups, m.load.Period))
	with := gridload.Mean(m.training(groups, m.load.Period))
	return costText(with-base, base)
}

// storageCost is the round-trip loss on what the storage moves, at an
// assumed 90 %.
func (m *gridModel) storageCost(groups []gridload.Group) string {
	l := m.load
	sc := gridload.Scenario{Rate: m.rate, Seconds: m.horizon + 120}
	var moved, base float64
	var n int
	for _, g := range groups {
		grid, racks := g.Power(l, sc)
		for i := range grid {
			moved += math.Max(0, racks[i]-grid[i])
			base += racks[i]
		}
		n = len(grid)
	}
	// a tenth of what it discharges is lost (mean W over the scenario)
	return costText(0.1*moved/float64(n), base/float64(n)) + " at an assumed 90 % round trip"
}

func costText(extraW, baseW float64) string {
	mwh := extraW / 1e6 * 24 // W of mean power → MWh per day
	return fmt.Sprintf("%.1f MWh a day, %.1f %% of the job's energy", mwh, 100*extraW/baseW)
}

func adviceText(adv []GridAdvice) string {
	var parts []string
	for _, a := range adv {
		parts = append(parts, a.What)
	}
	return "on its own, " + strings.Join(parts, "; or ")
}
