package compile

import (
	"fmt"
	"math"

	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/plan"
	"github.com/seamdc/seam/internal/units"
)

// Timing defaults, by medium: how long to let a load step settle, how
// long to measure at each steady load, how long to let things recover
// after a fault is restored. Thermal loops are slow, so liquid waits
// longer. docs/plan-format.md lists them.
type timing struct{ settle, measure, recover float64 }

var timings = map[string]timing{
	"electrical": {settle: 30, measure: 300, recover: 60},
	"liquid":     {settle: 300, measure: 600, recover: 300},
	"controls":   {settle: 10, measure: 300, recover: 60},
}

func timingOf(medium string) timing {
	if t, ok := timings[medium]; ok {
		return t
	}
	return timings["electrical"]
}

// Other defaults.
const (
	baselineS        = 60  // hold before a fault is injected
	operatorS        = 120 // estimated time for a manual step
	automaticS       = 1   // estimated time for a device to inject or restore a fault
	rampFullScaleS   = 30  // stepwise ramps move the design load in this time
	defaultCycles    = 10  // square waves without repetitions
	samplesPerWindow = 10  // samples a time limit must hold at least
	interlockPeriodS = 1   // slowest sampling of a safety channel
	maxSilenceS      = 5   // a safety channel silent this long trips
	rmsPeriodS       = 0.2 // IEC 61000-4-30 10/12-cycle RMS aggregation
	interlockMargin  = 0.1 // interlock bands widen by this share of their width
)

// stepLevels are the loads, in % of the design load, that steady cases
// measure at and failure cases climb through.
var stepLevels = []float64{0, 25, 50, 75, 100}

// designKW is the consumer's design load that % loads refer to: its
// design heat to liquid on a liquid boundary, else its design power.
func (k *compiler) designKW(b *contract.Boundary) float64 {
	m := k.c.Site.Module(b.Consumer.To)
	if m == nil {
		return 0
	}
	if b.Medium == "liquid" {
		return m.DesignHeat()
	}
	return m.DesignPower()
}

// loadKW resolves a load written as power or as % of the design load.
func (k *compiler) loadKW(b *contract.Boundary, q contract.Q) (float64, bool) {
	if !q.Set {
		return 0, false
	}
	if q.Dim == units.Power {
		return q.Canon, true
	}
	d := k.designKW(b)
	if d == 0 {
		return 0, false
	}
	return d * q.Canon / 100, true
}

// bankAt returns the largest load bank connected at module, or nil.
func (k *compiler) bankAt(module string) *contract.LoadBank {
	var best *contract.LoadBank
	for _, lb := range k.c.Site.LoadBanks {
		if lb.Module.To == module && (best == nil || lb.Rating.Canon > best.Rating.Canon) {
			best = lb
		}
	}
	return best
}

// hold caps a soak hold at --max-hold, and says whether it did.
func (k *compiler) hold(d float64) (float64, bool) {
	if k.maxHold > 0 && d > k.maxHold {
		return k.maxHold, true
	}
	return d, false
}

// program builds a case's steps and tracks the load bank's setpoint.
type program struct {
	lb    *contract.LoadBank
	kw    float64
	steps []plan.Step
}

func newProgram(lb *contract.LoadBank) *program { return &program{lb: lb} }

// setpoint rounds a load to the bank's resolution: down for the low
// side of a swing, up for the high side, so the tested swing is never
// smaller than the signed one; never above the bank's rating.
func (p *program) setpoint(kw float64, up bool) float64 {
	if p.lb == nil {
		return kw
	}
	if r := p.lb.Resolution.Canon; r > 0 {
		n := kw / r
		if up {
			n = math.Ceil(n - 1e-9)
		} else {
			n = math.Floor(n + 1e-9)
		}
		kw = n * r
	}
	return round(math.Min(math.Max(kw, 0), p.lb.Rating.Canon))
}

func (p *program) add(s plan.Step) { s.EstimatedS = tenths(s.EstimatedS); p.steps = append(p.steps, s) }

// tenths rounds an estimate to a tenth of a second.
func tenths(s float64) float64 { return math.Round(s*10) / 10 }

func (p *program) set(id string, kw float64) {
	est := 0.0
	if r := p.lb.MaxRate.Canon; r > 0 {
		est = math.Abs(kw-p.kw) / r
	}
	p.add(plan.Step{ID: id, Op: plan.OpSetLoad, LoadBank: p.lb.ID, KW: plan.F(kw), EstimatedS: est})
	p.kw = kw
}

func (p *program) ramp(id string, kw, rate float64, note string) {
	p.add(plan.Step{ID: id, Op: plan.OpRamp, LoadBank: p.lb.ID, FromKW: plan.F(p.kw), KW: plan.F(kw),
		RateKWPerS: round(rate), Note: note, EstimatedS: math.Abs(kw-p.kw) / rate})
	p.kw = kw
}

func (p *program) hold(id string, d float64, note string) {
	p.add(plan.Step{ID: id, Op: plan.OpHold, DurationS: round(d), Note: note, EstimatedS: d})
}

// gentleRate is the ramp rate between steady loads: the design load in
// rampFullScaleS, never faster than the bank.
func (p *program) gentleRate(design float64) float64 {
	r := design / rampFullScaleS
	if r <= 0 {
		r = p.lb.Rating.Canon / rampFullScaleS
	}
	if m := p.lb.MaxRate.Canon; m > 0 && r > m {
		r = m
	}
	return nice(r)
}

// climb raises the load stepwise to target through the step levels
// below it, letting each step settle.
func (p *program) climb(target, design, settle float64) {
	rate := p.gentleRate(design)
	for _, f := range stepLevels[1:] {
		kw := p.setpoint(design*f/100, false)
		// a level within 2 % of the design load below the target is
		// not a step worth settling at
		if kw >= target-0.02*design || kw <= p.kw {
			continue
		}
		p.ramp(fmt.Sprintf("ramp-%g", f), kw, rate, fmt.Sprintf("%g %% of the design load", f))
		p.hold(fmt.Sprintf("settle-%g", f), settle, "")
	}
	if target > p.kw {
		p.ramp("ramp-load", target, rate, "")
		p.hold("settle-load", settle, "")
	}
}

// unload ramps the bank back to zero at the gentle rate.
func (p *program) unload(design float64) {
	if p.kw > 0 {
		p.ramp("ramp-zero", 0, p.gentleRate(design), "leave the load bank at zero")
	}
}

func kwText(kw float64) string {
	if math.Abs(kw) >= 1000 {
		return units.Format(round(kw/1000), "MW")
	}
	return units.Format(round(kw), "kW")
}

func rateText(kwPerS float64) string {
	if kwPerS >= 1000 {
		return units.Format(round(kwPerS/1000), "MW/s")
	}
	return units.Format(round(kwPerS), "kW/s")
}

func secText(s float64) string {
	switch {
	case s >= 3600 && math.Mod(s, 3600) == 0:
		return units.Format(s/3600, "h")
	case s >= 60 && math.Mod(s, 60) == 0:
		return units.Format(s/60, "min")
	case s < 1:
		return units.Format(round(s*1000), "ms")
	}
	return units.Format(round(s), "s")
}

// nice rounds a positive rate down to two significant digits.
func nice(v float64) float64 {
	if v <= 0 {
		return v
	}
	e := math.Pow(10, 1-math.Floor(math.Log10(v)))
	return round(math.Floor(v*e+1e-9) / e)
}
