package headroom

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/seamdc/seam/internal/contract"
)

// PUEMeter is a facility power meter measured PUE reads: a channel (of
// quantity power, in kW as every power channel here) and what it meters.
type PUEMeter struct {
	Name    string // the site's name of the meter
	Kind    string // it, utility, or a facility load: cooling, lighting, losses, other
	Channel string // "": a declared load, counted at DesignW
	DesignW float64
}

// pueMeters are the site's meters that name a channel.
func pueMeters(c *contract.Contracts) []PUEMeter {
	if c.Ops == nil {
		return nil
	}
	var out []PUEMeter
	for _, m := range c.Ops.Meters {
		switch {
		case m.Channel != "":
			out = append(out, PUEMeter{Name: m.ID, Kind: m.Kind, Channel: m.Channel})
		case m.Design.Set && m.Kind != "it":
			out = append(out, PUEMeter{Name: m.ID, Kind: m.Kind, DesignW: m.Design.Canon * 1000})
		}
	}
	return out
}

// MinCoverage is the share of a window a meter's fresh readings must
// cover for its average to count: below it, measured PUE over that
// window is not exported.
const MinCoverage = 0.9

// bucketsPerWindow is the resolution of a window: readings are
// integrated into buckets of window/60.
const bucketsPerWindow = 60

// PUE is measured power usage effectiveness over sliding windows: the
// energy the facility meters measured over the window over the energy
// the IT meters measured (The Green Grid's PUE, ISO/IEC 30134-2, from
// power readings integrated over time). With a utility meter the
// facility is the utility meters; otherwise it is IT plus every facility
// load (cooling, lighting, losses, other) — contract.DesignPUE's rule.
// It is safe for concurrent use.
type PUE struct {
	meters     []PUEMeter
	windows    []time.Duration
	staleAfter time.Duration
	width      time.Duration // bucket width: the shortest window / bucketsPerWindow
	keep       int64         // buckets kept: the longest window's

	mu     sync.Mutex
	series map[string]*pueSeries // by channel
}

type pueSeries struct {
	last    Reading
	hasLast bool
	buckets map[int64]*pueBucket
}

// pueBucket is ∫P dt (kW·s) and the seconds of fresh readings in it.
type pueBucket struct{ energy, covered float64 }

// NewPUE measures PUE over each window from meters' readings; a gap
// between two readings longer than staleAfter is not counted (its
// power is unknown).
func NewPUE(meters []PUEMeter, windows []time.Duration, staleAfter time.Duration) (*PUE, error) {
	if len(windows) == 0 {
		return nil, fmt.Errorf("measured PUE: no window")
	}
	ws := append([]time.Duration(nil), windows...)
	sort.Slice(ws, func(i, j int) bool { return ws[i] < ws[j] })
	if ws[0] < time.Minute {
		return nil, fmt.Errorf("measured PUE: window %s: a window is a minute or more", ws[0])
	}
	var it, other int
	for _, m := range meters {
		switch {
		case m.Kind == "it" && m.Channel != "":
			it++
		case m.Kind != "it":
			other++
		}
	}
	if len(meters) > 0 && (it == 0 || other == 0) {
		return nil, fmt.Errorf("measured PUE: the meters are %s: it needs at least one it meter with a channel, and one utility or facility-load meter (measured, or declared with its design draw)", meterList(meters))
	}
	p := &PUE{meters: meters, windows: ws, staleAfter: staleAfter, width: ws[0] / bucketsPerWindow, series: map[string]*pueSeries{}}
	p.keep = int64(ws[len(ws)-1]/p.width) + 2
	for _, m := range meters {
		if m.Channel != "" {
			p.series[m.Channel] = &pueSeries{buckets: map[int64]*pueBucket{}}
		}
	}
	return p, nil
}

func meterList(ms []PUEMeter) string {
	var s []string
	for _, m := range ms {
		s = append(s, m.Name+" ("+m.Kind+")")
	}
	return strings.Join(s, ", ")
}

// Windows are the windows measured, shortest first.
func (p *PUE) Windows() []time.Duration { return p.windows }

// Take adds a good reading of a channel (kW at at); channels of no meter
// are ignored.
func (p *PUE) Take(channel string, r Reading) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.series[channel]
	if s == nil {
		return
	}
	if s.hasLast && r.At.After(s.last.At) {
		p.integrate(s, s.last, r.At)
	}
	if !s.hasLast || !r.At.Before(s.last.At) {
		s.last, s.hasLast = r, true
	}
	p.prune(s, r.At)
}

// integrate adds from's power from from.At to until, split across
// buckets; a gap longer than staleAfter counts only up to staleAfter.
func (p *PUE) integrate(s *pueSeries, from Reading, until time.Time) {
	if lim := from.At.Add(p.staleAfter); until.After(lim) {
		until = lim
	}
	for t := from.At; t.Before(until); {
		idx := t.UnixNano() / int64(p.width)
		end := time.Unix(0, (idx+1)*int64(p.width))
		if end.After(until) {
			end = until
		}
		dt := end.Sub(t).Seconds()
		b := s.buckets[idx]
		if b == nil {
			b = &pueBucket{}
			s.buckets[idx] = b
		}
		b.energy += from.Value * dt
		b.covered += dt
		t = end
	}
}

func (p *PUE) prune(s *pueSeries, now time.Time) {
	oldest := now.UnixNano()/int64(p.width) - p.keep
	for idx := range s.buckets {
		if idx < oldest {
			delete(s.buckets, idx)
		}
	}
}

// PUEResult is measured PUE over one window.
type PUEResult struct {
	Window         time.Duration
	PUE            Value // facility over IT
	FacilityW, ITW Value // the window's average power
	// DeclaredW is the part of the facility counted at declared design
	// draws (meters with no channel), not measured.
	DeclaredW float64
	// Missing names the meters whose readings cover too little of the
	// window (then PUE is not OK).
	Missing []string
}

// Compute is measured PUE over each window ending at now.
func (p *PUE) Compute(now time.Time) []PUEResult {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []PUEResult
	for _, w := range p.windows {
		out = append(out, p.window(w, now))
	}
	return out
}

func (p *PUE) window(w time.Duration, now time.Time) PUEResult {
	res := PUEResult{Window: w}
	first := now.Add(-w).UnixNano() / int64(p.width)
	last := now.UnixNano() / int64(p.width)
	var it, utility, loads float64
	hasUtility := false
	for _, m := range p.meters {
		if m.Channel == "" { // a declared load: its design draw
			res.DeclaredW += m.DesignW
			if m.Kind == "utility" {
				utility += m.DesignW
				hasUtility = true
			} else {
				loads += m.DesignW
			}
			continue
		}
		s := p.series[m.Channel]
		var energy, covered float64
		for idx := first + 1; idx <= last; idx++ { // whole buckets inside the window, and the current one
			if b := s.buckets[idx]; b != nil {
				energy += b.energy
				covered += b.covered
			}
		}
		// the last reading holds until now while it is fresh
		if s.hasLast && now.After(s.last.At) && now.Sub(s.last.At) <= p.staleAfter {
			dt := now.Sub(s.last.At).Seconds()
			energy += s.last.Value * dt
			covered += dt
		}
		span := float64(last-first) * p.width.Seconds()
		if covered < MinCoverage*span || covered == 0 {
			res.Missing = append(res.Missing, m.Name)
			continue
		}
		avg := energy / covered * 1000 // W
		switch m.Kind {
		case "it":
			it += avg
		case "utility":
			utility += avg
			hasUtility = true
		default:
			loads += avg
		}
	}
	if len(res.Missing) > 0 || it <= 0 {
		return res
	}
	fac := it + loads
	if hasUtility {
		fac = utility
	}
	res.ITW, res.FacilityW, res.PUE = val(it), val(fac), val(fac/it)
	return res
}

// DefaultPUEWindows are the windows measured PUE is exported over.
var DefaultPUEWindows = []time.Duration{15 * time.Minute, time.Hour, 24 * time.Hour}

// defaultPUE measures PUE over DefaultPUEWindows when the model has
// meters for it (at least one it meter and one facility meter with
// channels), else nil: contractc vet reports meters PUE cannot use.
func defaultPUE(m *Model, staleAfter time.Duration) *PUE {
	if len(m.PUE) == 0 {
		return nil
	}
	p, err := NewPUE(m.PUE, DefaultPUEWindows, staleAfter)
	if err != nil {
		return nil
	}
	return p
}

// MeasurePUE sets the windows measured PUE is exported over (replacing
// DefaultPUEWindows), or says why the model's meters cannot give it.
func (c *Collector) MeasurePUE(windows []time.Duration) error {
	p, err := NewPUE(c.model.PUE, windows, c.staleAfter)
	if err != nil {
		return err
	}
	if len(c.model.PUE) == 0 {
		return fmt.Errorf("measured PUE: the site declares no meters (site.meters: an it meter with a channel, and utility or facility loads)")
	}
	c.mu.Lock()
	c.pue = p
	c.mu.Unlock()
	return nil
}

var (
	pueLabels   = []string{"window"}
	pueRatio    = desc("seam_pue_ratio", "Measured PUE over the window: the facility meters' energy over the IT meters' (utility meters when declared, else IT plus the facility loads).", pueLabels)
	pueFacility = desc("seam_pue_facility_power_watts", "The facility's average power over the window, as measured PUE counts it.", pueLabels)
	pueIT       = desc("seam_pue_it_power_watts", "The IT meters' average power over the window.", pueLabels)
	pueDeclared = desc("seam_pue_declared_power_watts", "The part of the facility power measured PUE counts at declared design draws (meters without a channel), not measured.", pueLabels)
	pueMissing  = desc("seam_pue_meter_missing", "1 when a meter's fresh readings cover less than 90 % of the window: measured PUE over it is not exported.", []string{"window", "meter"})
)

func init() { descs = append(descs, pueRatio, pueFacility, pueIT, pueDeclared, pueMissing) }

// collectPUE exports measured PUE over each window.
func collectPUE(ch chan<- prometheus.Metric, p *PUE, now time.Time) {
	if p == nil {
		return
	}
	for _, r := range p.Compute(now) {
		w := windowLabel(r.Window)
		if r.PUE.OK {
			ch <- prometheus.MustNewConstMetric(pueRatio, prometheus.GaugeValue, r.PUE.V, w)
			ch <- prometheus.MustNewConstMetric(pueFacility, prometheus.GaugeValue, r.FacilityW.V, w)
			ch <- prometheus.MustNewConstMetric(pueIT, prometheus.GaugeValue, r.ITW.V, w)
			ch <- prometheus.MustNewConstMetric(pueDeclared, prometheus.GaugeValue, r.DeclaredW, w)
		}
		for _, m := range p.meters {
			if m.Channel == "" {
				continue
			}
			v := 0.0
			if slices.Contains(r.Missing, m.Name) {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(pueMissing, prometheus.GaugeValue, v, w, m.Name)
		}
	}
}

// windowLabel writes a window as 15m, 1h, 24h.
func windowLabel(d time.Duration) string {
	switch {
	case d%time.Hour == 0:
		return strconv.Itoa(int(d/time.Hour)) + "h"
	case d%time.Minute == 0:
		return strconv.Itoa(int(d/time.Minute)) + "m"
	}
	return strconv.Itoa(int(d/time.Second)) + "s"
}
