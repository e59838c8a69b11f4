package reporttest

import (
	"math"
	"strings"
	"time"

	"github.com/seamdc/seam/internal/grade"
	"github.com/seamdc/seam/internal/plan"
)

// model is a deterministic site: every channel sits at a nominal value
// derived from the plan's own limits, droops a little with load, answers
// each load edge with a decaying excursion of 60 % of its allowed
// deviation (times Scale), and dips halfway to its lowest limit while a
// fault is injected. Alarms rise 0.4 s after the event.
type model struct {
	levels map[string]level
	rating map[string]float64 // load bank → kW
	grid   map[string]gridLevel
	opt    Options
}

// level is a channel's nominal value, half the width of its tightest
// band, its largest allowed transient deviation, the depth of its dip
// during a fault, and the time constant of its responses.
type level struct {
	ref, hw, dev, depth, tau float64
}

func newModel(p *plan.Plan, opt Options) *model {
	m := &model{levels: map[string]level{}, rating: map[string]float64{}, opt: opt}
	for _, lb := range p.LoadBanks {
		m.rating[lb.ID] = lb.RatingKW
	}
	type acc struct {
		ref, dev, within          float64
		lo, hi, lowest            float64
		hasRef, hasLo, hasHi, any bool
	}
	accs := map[string]*acc{}
	m.grid = gridLevels(p, opt)
	for _, c := range p.Cases {
		for _, k := range c.Checks {
			if _, ok := m.grid[k.Channel]; ok || k.Kind == plan.AlarmWithin {
				continue
			}
			a := accs[k.Channel]
			if a == nil {
				a = &acc{lo: math.Inf(-1), hi: math.Inf(1), lowest: math.Inf(1)}
				accs[k.Channel] = a
			}
			if k.Reference != nil {
				a.ref, a.hasRef = *k.Reference, true
				a.dev = max(a.dev, *k.MaxDeviation)
			}
			if k.Min != nil {
				a.lo, a.hasLo, a.lowest = max(a.lo, *k.Min), true, min(a.lowest, *k.Min)
			}
			if k.Max != nil {
				a.hi, a.hasHi = min(a.hi, *k.Max), true
			}
			if k.Kind == plan.RecoveryTime {
				a.within = max(a.within, k.WithinS)
			}
		}
	}
	for ch, a := range accs {
		var l level
		switch {
		case a.hasLo && a.hasHi:
			l.ref, l.hw = (a.lo+a.hi)/2, (a.hi-a.lo)/2
		case a.hasLo:
			l.ref, l.hw = a.lo*1.04, a.lo*0.04
		case a.hasHi:
			l.ref, l.hw = a.hi*0.5, a.hi*0.5
		}
		if a.hasRef {
			l.ref = a.ref
			if l.hw == 0 {
				l.hw = a.dev / 3
			}
		}
		l.dev = a.dev
		if l.dev == 0 {
			l.dev = l.hw
		}
		l.depth = l.hw
		if !math.IsInf(a.lowest, 0) {
			l.depth = 0.5 * (l.ref - a.lowest)
		}
		l.tau = 0.3
		if a.within > 0 {
			l.tau = a.within / 6
		}
		m.levels[ch] = l
	}
	return m
}

// edge is a commanded load change.
type edge struct {
	at     time.Time
	dkw    float64 // change of load
	weight float64 // 1 for a step, less for a ramp
	first  bool    // the first edge of a square wave
}

// events are what a case did to the site besides load.
type events struct {
	bank      string
	segs      []seg
	edges     []edge
	fault     time.Time // the event (end of the inject step); zero if none
	clear     time.Time // start of the restore step
	alarmRise time.Time
	trains    []train // the train steps
	dips      []seg   // the grid_dip steps (kw0: the voltage in pu)
}

// train is a train step as it ran: the site's power a square wave of
// period seconds, high for duty of each.
type train struct {
	from, to     time.Time
	period, duty float64
}

// seg is a stretch of linear load.
type seg struct {
	a, b     time.Time
	kw0, kw1 float64
}

// schedule lays the case's steps out in time from start.
func (m *model) schedule(c *plan.Case, start time.Time) (grade.Timeline, *events) {
	ev := &events{}
	t, kw := start, 0.0
	tl := grade.Timeline{Start: start}
	for _, s := range c.Steps {
		sp := grade.Span{Step: s.ID, Op: s.Op, Start: t}
		d := 0.0
		switch s.Op {
		case plan.OpSetLoad:
			ev.bank = s.LoadBank
			d = 0.5
			ev.edges = append(ev.edges, edge{at: t, dkw: *s.KW - kw, weight: 1})
			sp.Edges = []time.Time{t}
			ev.segs = append(ev.segs, seg{t, t, *s.KW, *s.KW})
			kw = *s.KW
		case plan.OpRamp:
			ev.bank = s.LoadBank
			d = max(0.5, math.Abs(*s.KW-*s.FromKW)/s.RateKWPerS)
			ev.edges = append(ev.edges, edge{at: t, dkw: *s.KW - *s.FromKW, weight: 0.2})
			sp.Edges = []time.Time{t}
			ev.segs = append(ev.segs, seg{t, t.Add(dur(d)), *s.FromKW, *s.KW})
			kw = *s.KW
		case plan.OpSquareWave:
			ev.bank = s.LoadBank
			d = float64(s.Cycles) * s.PeriodS
			for i := range s.Cycles {
				up := t.Add(dur(float64(i) * s.PeriodS))
				down := up.Add(dur(s.PeriodS * s.DutyPct / 100))
				ev.edges = append(ev.edges, edge{at: up, dkw: *s.HighKW - *s.LowKW, weight: 1, first: i == 0},
					edge{at: down, dkw: *s.LowKW - *s.HighKW, weight: 1})
				ev.segs = append(ev.segs, seg{up, down, *s.HighKW, *s.HighKW}, seg{down, down.Add(dur(s.PeriodS * (1 - s.DutyPct/100))), *s.LowKW, *s.LowKW})
				sp.Edges = append(sp.Edges, up, down)
			}
			kw = *s.LowKW
		case plan.OpHold:
			d = s.DurationS
		case plan.OpTrain:
			d = s.DurationS
			ev.trains = append(ev.trains, train{from: t, to: t.Add(dur(d)), period: s.PeriodS, duty: s.DutyPct / 100})
		case plan.OpGridDip:
			d = s.DurationS
			ev.dips = append(ev.dips, seg{a: t, b: t.Add(dur(d)), kw0: *s.VoltagePU})
		case plan.OpInjectFault, plan.OpRestore, plan.OpOperator:
			d = 1
			if s.ID == "restore" || s.Op == plan.OpRestore {
				ev.clear = t
			} else if s.Event != "" && ev.fault.IsZero() {
				ev.fault = t.Add(dur(d))
				delay := 0.4
				if m.opt.Defect == LateAlarm {
					delay = 30
				}
				ev.alarmRise = ev.fault.Add(dur(delay))
			}
		case plan.OpAwaitAlarm:
			d = s.TimeoutS
			if !ev.alarmRise.IsZero() {
				d = min(d, ev.alarmRise.Sub(t).Seconds()+m.opt.Period.Seconds())
			}
		}
		t = t.Add(dur(d))
		sp.End = t
		tl.Steps = append(tl.Steps, sp)
	}
	tl.End = t
	return tl, ev
}

func dur(s float64) time.Duration { return time.Duration(math.Round(s * float64(time.Second))) }

// load is the load bank's load at t.
func (ev *events) load(t time.Time) float64 {
	kw := 0.0
	for _, s := range ev.segs {
		switch {
		case t.Before(s.a):
			return kw
		case !t.After(s.b) && s.b.After(s.a):
			f := t.Sub(s.a).Seconds() / s.b.Sub(s.a).Seconds()
			return s.kw0 + f*(s.kw1-s.kw0)
		default:
			kw = s.kw1
		}
	}
	return kw
}

// value is channel ch at t.
func (m *model) value(ch string, t time.Time, tl grade.Timeline, ev *events) float64 {
	if strings.Contains(ch, "/alarm/") {
		if !ev.alarmRise.IsZero() && !t.Before(ev.alarmRise) && (ev.clear.IsZero() || t.Before(ev.clear)) {
			return 1
		}
		return 0
	}
	if strings.HasPrefix(ch, "bench/noise-") {
		return 100 + math.Sin(t.Sub(tl.Start).Seconds()/3)
	}
	if g, ok := m.grid[ch]; ok {
		return m.sitePower(g, t, ev)
	}
	l, ok := m.levels[ch]
	if !ok { // an excitation channel: the applied load
		return math.Round(ev.load(t)*10) / 10
	}
	rating := m.rating[ev.bank]
	if rating == 0 {
		rating = 1
	}
	secs := t.Sub(tl.Start).Seconds()
	v := l.ref + 0.05*l.hw*math.Sin(2*math.Pi*secs/7) - 0.2*l.hw*ev.load(t)/rating
	for _, e := range ev.edges {
		dt := t.Sub(e.at).Seconds()
		if dt < 0 || dt > 8*l.tau {
			continue
		}
		amp := 0.6 * l.dev * m.opt.Scale * e.weight * e.dkw / rating
		if e.first && m.opt.Defect == Dip {
			amp = math.Copysign(1.5*l.dev, e.dkw)
		}
		v -= amp * expDecay(dt, l.tau)
	}
	if !ev.fault.IsZero() && !t.Before(ev.fault) && (ev.clear.IsZero() || t.Before(ev.clear)) {
		v -= l.depth * math.Min(1, m.opt.Scale) * expDecay(t.Sub(ev.fault).Seconds(), 3)
	}
	if m.opt.Defect == RestoreSpike && !ev.clear.IsZero() && !t.Before(ev.clear) {
		v += 3 * math.Max(l.hw, l.depth) * expDecay(t.Sub(ev.clear).Seconds(), 0.4)
	}
	return v
}
