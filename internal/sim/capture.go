package sim

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/seamdc/seam/internal/comtrade"
	"github.com/seamdc/seam/internal/sim/simconfig"
)

// captureRecorder is the simulated power-quality analyser: per power
// block, it keeps the last PreS of every feed's RMS voltage and the
// block's frequency at the physics rate, triggers when a feed's RMS
// moves more than TriggerPct of nominal within one line cycle (a load
// step, a feed transfer), records PostS more, and writes a COMTRADE
// capture (2013, BINARY32) of the waveform at RateHz: each physics
// step's RMS held until the next (zero-order hold) on a sine at the
// block's frequency. Its clock reads the site's plus OffsetS. At the
// point of interconnection it triggers on the grid's voltage (a dip) and
// records the grid's voltage (per unit, as a sine of RMS pu) and the
// site's power at the POI (kW, as measured: no waveform).
type captureRecorder struct {
	cfg    simconfig.Captures
	site   string
	epoch  time.Time
	dt     float64
	log    *slog.Logger
	blocks []*blockRecorder
	poi    *poiRecorder
	n      int // captures written
}

// poiRecorder records the point of interconnection.
type poiRecorder struct {
	g       *grid
	channel string // the power's channel id: the grid boundary's channel
	hist    []poiValues
	trig    float64
}

type poiValues struct{ t, pu, kw, hz float64 }

// blockRecorder records one power block.
type blockRecorder struct {
	b    *powerBlock
	hist []stepValues // newest last, at most pre + post
	// trig is the sim time of the open capture's trigger (NaN: none)
	trig float64
}

// stepValues is a physics step's state as the analyser sees it.
type stepValues struct {
	t    float64
	v    []float64 // per feed, line-line RMS V
	live []bool
	hz   float64
}

func newCaptureRecorder(cfg *simconfig.Captures, s *Site) *captureRecorder {
	r := &captureRecorder{cfg: *cfg, site: s.name, epoch: s.epoch, dt: s.dt, log: s.log}
	for _, b := range s.blocks {
		r.blocks = append(r.blocks, &blockRecorder{b: b, trig: math.NaN()})
	}
	r.poi = &poiRecorder{g: &s.grid, channel: s.grid.channel, trig: math.NaN()}
	if r.poi.channel == "" {
		r.poi.channel = POIElement + "/power"
	}
	return r
}

// step records the physics step that ended at sim time t.
func (r *captureRecorder) step(t float64) {
	keep := int(math.Ceil((r.cfg.PreS+r.cfg.PostS)/r.dt)) + 2
	for _, br := range r.blocks {
		br.hist = append(br.hist, br.values(t))
		if len(br.hist) > keep {
			br.hist = br.hist[len(br.hist)-keep:]
		}
		switch {
		case math.IsNaN(br.trig) && br.triggered(r.cfg.TriggerPct, r.dt):
			br.trig = t
		case !math.IsNaN(br.trig) && t >= br.trig+r.cfg.PostS-r.dt/2:
			if err := r.write(br); err != nil {
				r.log.Warn("simulated analyser: capture not written", "block", br.b.phys.ID, "err", err)
			}
			br.trig = math.NaN()
		}
	}
	r.stepPOI(t, keep)
}

// stepPOI records the POI: it triggers when the grid's voltage moves
// more than TriggerPct within one line cycle.
func (r *captureRecorder) stepPOI(t float64, keep int) {
	p := r.poi
	p.hist = append(p.hist, poiValues{t: t, pu: p.g.pu, kw: p.g.kw, hz: p.g.hz})
	if len(p.hist) > keep {
		p.hist = p.hist[len(p.hist)-keep:]
	}
	switch {
	case math.IsNaN(p.trig):
		back := max(1, int(math.Round(1/math.Max(p.g.hz, 1)/r.dt)))
		if n := len(p.hist); n > back && math.Abs(p.hist[n-1].pu-p.hist[n-1-back].pu) > r.cfg.TriggerPct/100 {
			p.trig = t
		}
	case t >= p.trig+r.cfg.PostS-r.dt/2:
		if err := r.writePOI(); err != nil {
			r.log.Warn("simulated analyser: capture not written", "at", "poi", "err", err)
		}
		p.trig = math.NaN()
	}
}

// writePOI writes the POI's open capture.
func (r *captureRecorder) writePOI() error {
	p := r.poi
	from := p.trig - r.cfg.PreS
	var steps []poiValues
	for _, v := range p.hist {
		if v.t >= from-r.dt/2 {
			steps = append(steps, v)
		}
	}
	if len(steps) < 2 {
		return errors.New("no history to write")
	}
	start := math.Max(from, steps[0].t-r.dt)
	n := int(math.Round((steps[len(steps)-1].t - start) * r.cfg.RateHz))
	c := &comtrade.Capture{Config: comtrade.Config{Station: r.site, Device: "seam-sim PQ analyser", Revision: "2013", DataType: comtrade.Binary32,
		LineHz: p.g.hz, Rates: []comtrade.Rate{{Hz: r.cfg.RateHz, EndSample: n}},
		Start: r.clock(start), Trigger: r.clock(p.trig), TimeMult: 1, TimeBase: time.Microsecond}}
	c.Analogs = []comtrade.Analog{
		{Index: 1, ID: POIElement + "/voltage", Phase: "AB", Circuit: POIElement, Unit: "pu", A: 1e-6, Min: -2147483647, Max: 2147483647, Primary: 1, Secondary: 1, PS: "P"},
		{Index: 2, ID: p.channel, Circuit: POIElement, Unit: "kW", A: 1e-3, Min: -2147483647, Max: 2147483647, Primary: 1, Secondary: 1, PS: "P"},
	}
	c.Analog = [][]float64{make([]float64, n), make([]float64, n)}
	c.Time = make([]float64, n)
	phase, k := 0.0, 0
	for i := range n {
		ts := start + float64(i)/r.cfg.RateHz
		for k < len(steps)-1 && steps[k].t < ts {
			k++
		}
		sv := steps[k]
		c.Time[i] = float64(i) / r.cfg.RateHz
		c.Analog[0][i] = math.Round(sv.pu*math.Sqrt2*math.Sin(phase)*1e6) / 1e6
		c.Analog[1][i] = math.Round(sv.kw*1e3) / 1e3
		phase = math.Mod(phase+2*math.Pi*sv.hz/r.cfg.RateHz, 2*math.Pi)
	}
	return r.save(POIElement, c)
}

func (r *captureRecorder) clock(t float64) time.Time {
	return r.epoch.Add(time.Duration(math.Round((t + r.cfg.OffsetS) * 1e9)))
}

func (br *blockRecorder) values(t float64) stepValues {
	sv := stepValues{t: t, hz: br.b.phys.Hz()}
	for _, f := range br.b.phys.Feeds {
		sv.v = append(sv.v, f.Volts())
		sv.live = append(sv.live, f.Live())
	}
	return sv
}

// triggered says whether a feed's RMS moved more than pct % of its
// nominal since one line cycle (at least one physics step) ago.
func (br *blockRecorder) triggered(pct, dt float64) bool {
	n := len(br.hist)
	cycle := 1 / math.Max(br.b.phys.Frequency.Nominal, 1)
	back := max(1, int(math.Round(cycle/dt)))
	if n <= back {
		return false
	}
	now, then := br.hist[n-1], br.hist[n-1-back]
	for i, f := range br.b.phys.Feeds {
		if math.Abs(now.v[i]-then.v[i]) > pct/100*f.Voltage.Nominal {
			return true
		}
	}
	return false
}

// write writes the open capture: PreS before the trigger to PostS after.
func (r *captureRecorder) write(br *blockRecorder) error {
	from := br.trig - r.cfg.PreS
	var steps []stepValues
	for _, sv := range br.hist {
		if sv.t >= from-r.dt/2 {
			steps = append(steps, sv)
		}
	}
	if len(steps) < 2 {
		return errors.New("no history to write")
	}
	return r.save(strings.ReplaceAll(br.b.phys.ID, "/", "-"), r.capture(br, steps, math.Max(from, steps[0].t-r.dt)))
}

// save writes capture c as NAME-NNN.cfg and .dat, NNN counting the
// analyser's captures.
func (r *captureRecorder) save(name string, c *comtrade.Capture) error {
	if err := os.MkdirAll(r.cfg.Dir, 0o755); err != nil {
		return err
	}
	r.n++
	base := filepath.Join(r.cfg.Dir, fmt.Sprintf("%s-%03d", name, r.n))
	cfg, err := os.Create(base + ".cfg.tmp")
	if err != nil {
		return err
	}
	dat, err := os.Create(base + ".dat")
	if err != nil {
		cfg.Close()
		return err
	}
	err = errors.Join(comtrade.Write(cfg, dat, c), cfg.Close(), dat.Close())
	if err != nil {
		return err
	}
	// the cfg appears last, whole: a reader polling the directory
	// never finds a cfg without its dat
	if err := os.Rename(base+".cfg.tmp", base+".cfg"); err != nil {
		return err
	}
	r.log.Info("simulated analyser: capture written", "file", base+".cfg", "trigger", c.Trigger, "samples", len(c.Time))
	return nil
}

// capture synthesizes the waveform of steps at the analyser's rate.
// A step's values hold from the step before it up to its own time; the
// record starts at start.
func (r *captureRecorder) capture(br *blockRecorder, steps []stepValues, start float64) *comtrade.Capture {
	b := br.b.phys
	n := int(math.Round((steps[len(steps)-1].t - start) * r.cfg.RateHz))
	clk := r.clock
	c := &comtrade.Capture{Config: comtrade.Config{Station: r.site, Device: "seam-sim PQ analyser", Revision: "2013", DataType: comtrade.Binary32,
		LineHz: b.Frequency.Nominal, Rates: []comtrade.Rate{{Hz: r.cfg.RateHz, EndSample: n}},
		Start: clk(start), Trigger: clk(br.trig), TimeMult: 1, TimeBase: time.Microsecond}}
	for i, f := range b.Feeds {
		c.Analogs = append(c.Analogs, comtrade.Analog{Index: i + 1, ID: f.ID, Phase: "AB", Circuit: b.ID, Unit: "V",
			A: 1e-4, Min: -2147483647, Max: 2147483647, Primary: 1, Secondary: 1, PS: "P"})
		c.Statuses = append(c.Statuses, comtrade.Status{Index: i + 1, ID: f.ID + " live", Circuit: b.ID, Normal: 1})
		c.Analog = append(c.Analog, make([]float64, n))
		c.Status = append(c.Status, make([]bool, n))
	}
	c.Time = make([]float64, n)
	phase, k := 0.0, 0
	for i := 0; i < n; i++ {
		ts := start + float64(i)/r.cfg.RateHz
		for k < len(steps)-1 && steps[k].t < ts {
			k++
		}
		sv := steps[k]
		c.Time[i] = float64(i) / r.cfg.RateHz
		for j := range b.Feeds {
			c.Analog[j][i] = math.Round(sv.v[j]*math.Sqrt2*math.Sin(phase)*1e4) / 1e4
			c.Status[j][i] = sv.live[j]
		}
		hz := sv.hz
		if hz <= 0 { // no feed live: the analyser's phase runs on at nominal
			hz = b.Frequency.Nominal
		}
		phase = math.Mod(phase+2*math.Pi*hz/r.cfg.RateHz, 2*math.Pi)
	}
	return c
}
