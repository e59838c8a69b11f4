// Package poll is facilityd's one collector: it reads every device of a
// site binding through its profile (PDUs and CDUs accept few Modbus
// connections and SNMP agents rate-limit, so alarms and the metrics
// share this one poller), turns the alarm points bound to the contract's
// alarm channels into observations, counts controller heartbeats, and
// reports a device that stops answering or freezes as device_silent
// for its domains: its alarms are then unknown, not clear.
package poll

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/seamdc/seam/internal/alarm"
	"github.com/seamdc/seam/internal/binding"
	"github.com/seamdc/seam/internal/clock"
	"github.com/seamdc/seam/internal/probe"
)

// Point is an alarm point to watch.
type Point struct {
	Device, Point string
	Channel       string // the contract's alarm channel, or "" (a point the configuration adds)
	Type          alarm.Type
	Domain        alarm.Domain
}

// Counter is a controller's heartbeat counter: each change of its value
// is a beat of Heartbeat.
type Counter struct {
	Device, Point, Heartbeat string
}

// Poller reads the site's devices every Period.
type Poller struct {
	Devices  []probe.Device
	Points   []Point
	Counters []Counter
	Period   time.Duration
	// Silence is how long a device may give no good reading before it
	// is device_silent.
	Silence time.Duration
	Sink    func(alarm.Observation)
	Beat    func(name string, at time.Time)
	// Sample sees every read, for metrics; may be nil.
	Sample func(probe.Sample)
	Log    *slog.Logger

	mu      sync.Mutex
	points  map[string]map[string][]Point // device → point → alarm points
	counter map[string]map[string]Counter
	domains map[string][]alarm.Domain // device → the domains of its alarm points
	active  map[string]bool           // device/point → last active
	count   map[string]float64        // device/point → last counter value
	good    map[string]time.Time      // device → last good read
	silent  map[string]bool
}

// Run polls until ctx is done.
func (p *Poller) Run(ctx context.Context, clk clock.Clock) {
	p.init(clk.Now())
	p.log().Info("polling", "devices", len(p.Devices), "alarm_points", len(p.Points), "heartbeat_counters", len(p.Counters), "period_seconds", p.Period.Seconds())
	g := clock.NewGroup(clk)
	// each device at the poll period, or at its own update period when
	// that is longer: reading a rack PDU that refreshes once a second
	// twice a second only costs the device
	byPeriod := map[time.Duration][]probe.Device{}
	for _, d := range p.Devices {
		period := p.Period
		if pr := d.Profile(); pr != nil && pr.UpdatePeriod > period {
			period = pr.UpdatePeriod
		}
		byPeriod[period] = append(byPeriod[period], d)
	}
	for period, devs := range byPeriod {
		g.Go(func() { probe.Poll(ctx, devs, period, clk, p.take) })
	}
	g.Go(func() {
		for clk.Sleep(ctx, p.Period) == nil {
			p.checkSilence(clk.Now())
		}
	})
	g.Wait()
}

func (p *Poller) log() *slog.Logger {
	if p.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return p.Log
}

func (p *Poller) init(now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.points, p.counter = map[string]map[string][]Point{}, map[string]map[string]Counter{}
	p.domains, p.active, p.count = map[string][]alarm.Domain{}, map[string]bool{}, map[string]float64{}
	p.good, p.silent = map[string]time.Time{}, map[string]bool{}
	for _, pt := range p.Points {
		if p.points[pt.Device] == nil {
			p.points[pt.Device] = map[string][]Point{}
		}
		p.points[pt.Device][pt.Point] = append(p.points[pt.Device][pt.Point], pt)
		if !slices.Contains(p.domains[pt.Device], pt.Domain) {
			p.domains[pt.Device] = append(p.domains[pt.Device], pt.Domain)
		}
	}
	for _, c := range p.Counters {
		if p.counter[c.Device] == nil {
			p.counter[c.Device] = map[string]Counter{}
		}
		p.counter[c.Device][c.Point] = c
	}
	for _, d := range p.Devices {
		p.good[d.Name()] = now
	}
}

// take handles one read of one device.
func (p *Poller) take(s probe.Sample) {
	if p.Sample != nil {
		p.Sample(s)
	}
	var out []alarm.Observation
	var beats []string
	p.mu.Lock()
	good := false
	for _, r := range s.Readings {
		if r.Quality != probe.Good {
			continue
		}
		good = true
		k := s.Device + "/" + r.Point
		for _, pt := range p.points[s.Device][r.Point] {
			on := r.Value >= 0.5
			if was, seen := p.active[k+"|"+pt.Domain.String()]; seen && was == on {
				continue
			}
			p.active[k+"|"+pt.Domain.String()] = on
			out = append(out, alarm.Observation{Type: pt.Type, Domain: pt.Domain, Active: on, Kind: alarm.FromDevice, Source: k, At: r.Received,
				Detail: detail(pt, r)})
		}
		if c, ok := p.counter[s.Device][r.Point]; ok {
			if was, seen := p.count[k]; !seen || was != r.Value {
				p.count[k] = r.Value
				if seen {
					beats = append(beats, c.Heartbeat)
				}
			}
		}
	}
	if good && len(s.Readings) > 0 {
		p.good[s.Device] = s.Done
		if p.silent[s.Device] {
			p.silent[s.Device] = false
			for _, d := range p.domains[s.Device] {
				out = append(out, alarm.Observation{Type: alarm.DeviceSilent, Domain: d, Active: false, Kind: alarm.FromDevice, Source: s.Device, At: s.Done,
					Detail: "device " + s.Device + " answers again"})
			}
		}
	}
	p.mu.Unlock()
	for _, o := range out {
		p.Sink(o)
	}
	for _, b := range beats {
		if p.Beat != nil {
			p.Beat(b, s.Done)
		}
	}
	if s.Err != nil && !good {
		p.log().Debug("device read failed", "device", s.Device, "error", s.Err)
	}
}

func detail(pt Point, r probe.Reading) string {
	what := pt.Device + " " + pt.Point
	if pt.Channel != "" {
		what = pt.Channel + " (" + what + ")"
	}
	if r.Value >= 0.5 {
		return what + " active"
	}
	return what + " clear"
}

// checkSilence raises device_silent for each device with no good read
// within Silence.
func (p *Poller) checkSilence(now time.Time) {
	var out []alarm.Observation
	p.mu.Lock()
	for dev, last := range p.good {
		if p.silent[dev] || now.Sub(last) <= p.Silence || len(p.domains[dev]) == 0 && len(p.counter[dev]) == 0 {
			continue
		}
		p.silent[dev] = true
		for _, d := range p.domains[dev] {
			out = append(out, alarm.Observation{Type: alarm.DeviceSilent, Domain: d, Active: true, Kind: alarm.FromDevice, Source: dev, At: now,
				Detail: fmt.Sprintf("device %s gave no good reading for %s: its alarms are unknown", dev, now.Sub(last).Round(time.Millisecond))})
		}
		p.log().Warn("device silent", "device", dev, "silent_seconds", now.Sub(last).Seconds())
	}
	p.mu.Unlock()
	slices.SortFunc(out, func(a, b alarm.Observation) int {
		return strings.Compare(a.Source+a.Domain.String(), b.Source+b.Domain.String())
	})
	for _, o := range out {
		p.Sink(o)
	}
}

// Channel is a contract channel, as Points needs it.
type Channel struct {
	Name     string
	Quantity string // "alarm" for alarm channels
	At       string // the inventory element measured
	Consumer string // the boundary's consumer module
}

// Points maps the contract's alarm channels that the binding binds to
// their devices' points, typed by the vocabulary and placed in the
// domain of the element they are at (a module's alarm, such as a silent
// controller, in the boundary's consumer module). Channels that cannot
// be mapped are returned as errors, each naming the channel.
func Points(channels []Channel, b *binding.Binding, ix *alarm.Index) ([]Point, []error) {
	bound := map[string]*binding.Channel{}
	for _, ch := range b.Channels {
		bound[ch.Name] = ch
	}
	var out []Point
	var errs []error
	for _, ch := range channels {
		if ch.Quantity != "alarm" {
			continue
		}
		def, ok := alarm.ForPoint(ch.Name)
		if !ok {
			errs = append(errs, fmt.Errorf("alarm channel %s: its last segment names no alarm type of the vocabulary", ch.Name))
			continue
		}
		var d alarm.Domain
		switch {
		case def.Domain == alarm.Module && ch.Consumer != "":
			d, ok = ix.OfElement(ch.Consumer)
		case ch.At != "":
			d, ok = ix.OfElement(ch.At)
		default:
			ok = false
		}
		if !ok {
			errs = append(errs, fmt.Errorf("alarm channel %s: at %q is no element of a domain", ch.Name, ch.At))
			continue
		}
		bc := bound[ch.Name]
		if bc == nil {
			errs = append(errs, fmt.Errorf("alarm channel %s: the binding does not bind it", ch.Name))
			continue
		}
		out = append(out, Point{Device: bc.DeviceName, Point: bc.PointName, Channel: ch.Name, Type: def.Type, Domain: d})
	}
	return out, errs
}

// Siblings adds the other alarm points of the devices points already
// watches: a CDU group controller bound for its loop's redundancy-lost
// and leak channels also reports pump-fault, high-supply-temp and
// low-flow, in the same domain. Only devices whose bound alarm points
// lie in one domain are taken, and only points whose names the
// vocabulary knows.
func Siblings(points []Point, b *binding.Binding) []Point {
	domains := map[string][]alarm.Domain{}
	have := map[string]bool{}
	for _, p := range points {
		if !slices.Contains(domains[p.Device], p.Domain) {
			domains[p.Device] = append(domains[p.Device], p.Domain)
		}
		have[p.Device+"/"+p.Point] = true
	}
	var out []Point
	for _, dev := range b.Devices {
		ds := domains[dev.Name]
		if len(ds) != 1 || dev.Profile == nil {
			continue
		}
		for _, pt := range dev.Profile.Points {
			if pt.AlarmSpec == nil || have[dev.Name+"/"+pt.Name] {
				continue
			}
			if def, ok := alarm.ForPoint(pt.Name); ok {
				out = append(out, Point{Device: dev.Name, Point: pt.Name, Type: def.Type, Domain: ds[0]})
			}
		}
	}
	return out
}
