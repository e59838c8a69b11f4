package sim

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/seamdc/seam/internal/sim/physics"
)

// Element is a part of the site that a device serves: a load bank, a
// power block or one of its feeds, a rack PDU, a cooling loop or one of
// its CDUs or pumps, a controls link. Signals are in canonical units;
// alarms are 1 or 0; states are the codes the profiles use. Signal must
// be called with the site's lock held (devices refresh inside Step).
type Element interface {
	Kind() string // loadbank, block, feed, pdu, loop, cdu, pump, link, network
	Signal(name string) (float64, bool)
	Signals() []string
}

// Commander is an element that takes remote writes (a load bank).
type Commander interface {
	Command(name string, v float64) error
}

// StaticReturnPressure is the loop's static pressure at the CDU inlet.
const StaticReturnPressure = 150.0 // kPa

type bankElem struct{ lb *LoadBank }

func (bankElem) Kind() string                           { return "loadbank" }
func (e bankElem) Signal(n string) (float64, bool)      { return e.lb.Signal(n) }
func (bankElem) Signals() []string                      { return LoadBankSignals }
func (e bankElem) Command(name string, v float64) error { return e.lb.Command(name, v) }
func (pumpElem) Kind() string                           { return "pump" }
func (networkElem) Kind() string                        { return "network" }
func (networkElem) Signal(string) (float64, bool)       { return 0, false }
func (networkElem) Signals() []string                   { return nil }
func (e pumpElem) Signals() []string                    { return []string{"flow", "running", "speed"} }

type pumpElem struct{ p *physics.Pump }

func (e pumpElem) Signal(n string) (float64, bool) {
	switch n {
	case "flow":
		return e.p.Flow(), true
	case "speed":
		return e.p.Speed() * 100, true
	case "running":
		return b2f(e.p.Running()), true
	}
	return 0, false
}

type networkElem struct{ id string }

// Filler is an element that writes all its signals into a map at once,
// which devices use to refresh without computing a value per point.
type Filler interface {
	Fill(m map[string]float64)
}

// lookup serves one signal of a filler.
func lookup(f Filler, n string) (float64, bool) {
	m := map[string]float64{}
	f.Fill(m)
	v, ok := m[n]
	return v, ok
}

func signalsOf(f Filler) []string {
	m := map[string]float64{}
	f.Fill(m)
	return names(m)
}

func names(m map[string]float64) []string {
	var out []string
	for n := range m {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

type blockElem struct {
	s *Site
	b *powerBlock
}

func (blockElem) Kind() string                      { return "block" }
func (e blockElem) Signal(n string) (float64, bool) { return lookup(e, n) }
func (e blockElem) Signals() []string               { return signalsOf(e) }

func (e blockElem) Fill(m map[string]float64) {
	b := e.b.phys
	open := false
	m["frequency"], m["power"] = b.Hz(), b.Served()
	m["feed-lost"], m["on-battery"] = b2f(b.FeedLost.Active()), b2f(b.OnBattery.Active())
	for i, f := range b.Feeds {
		n := e.b.names(i, f)
		m[n[0]], m[n[1]], m[n[2]] = f.Volts(), f.LoadKW(), f.Amps()
		m[n[3]], m[n[4]], m[n[5]] = b2f(!f.Breaker.IsOpen()), b2f(f.OnBattery()), b2f(f.Live())
		m[n[6]] = upsCharge(f) * 100
		open = open || f.Breaker.IsOpen()
	}
	m["breaker-open"] = b2f(open)
}

// names are the signal names of feed i of a block, built once.
func (b *powerBlock) names(i int, f *physics.Feed) []string {
	for len(b.feedNames) <= i {
		b.feedNames = append(b.feedNames, nil)
	}
	if b.feedNames[i] == nil {
		x := "feed-" + lastSegment(f.ID) + "-"
		b.feedNames[i] = []string{x + "voltage", x + "power", x + "current", x + "breaker", x + "on-battery", x + "live", x + "charge"}
	}
	return b.feedNames[i]
}

type feedElem struct {
	s *Site
	b *powerBlock
	f *physics.Feed
}

func (feedElem) Kind() string                      { return "feed" }
func (e feedElem) Signal(n string) (float64, bool) { return lookup(e, n) }
func (e feedElem) Signals() []string               { return signalsOf(e) }

// values are what the feed's UPS reports (RFC 1628 shapes).
func (e feedElem) Fill(m map[string]float64) {
	f, st := e.f, e.b.state(e.f)
	source := 3.0 // normal
	switch {
	case f.OnBattery():
		source = 5
	case !f.Live():
		source = 2 // none
	}
	inV, inHz := f.Voltage.Nominal*math.Max(0, 1-f.Sag), e.b.phys.Frequency.Nominal
	if f.InputHz > 0 {
		inHz = f.InputHz
	}
	if f.SourceLost {
		inV, inHz = 0, 0
	}
	charge := upsCharge(f)
	battery := 2.0 // normal
	if charge < 0.25 {
		battery = 3
	}
	if charge <= 0 {
		battery = 4
	}
	rating := e.b.phys.Rating
	if f.UPS != nil {
		rating = f.UPS.Rating
	}
	remaining := 0.0
	if f.UPS != nil {
		remaining = f.UPS.Capacity() * charge / math.Max(f.LoadKW(), 0.05*rating) / 60
	}
	onBattFor := 0.0
	if f.OnBattery() {
		onBattFor = e.s.t - st.batterySince
	}
	freq := 0.0
	if f.Live() {
		freq = e.b.phys.Frequency.Value()
	}
	m["voltage"], m["frequency"], m["power"], m["current"] = f.Volts(), freq, f.LoadKW(), f.Amps()
	m["load"], m["input-voltage"], m["input-frequency"], m["output-source"] = f.LoadKW()/rating*100, inV, inHz, source
	m["on-battery"], m["battery-status"], m["seconds-on-battery"] = b2f(f.OnBattery()), battery, onBattFor
	m["runtime-remaining"], m["alarms-present"] = remaining*60, b2f(f.OnBattery())+b2f(battery > 2)
	m["charge"], m["breaker"], m["live"], m["input-line-bads"] = charge*100, b2f(!f.Breaker.IsOpen()), b2f(f.Live()), float64(st.lineBads)
}

func upsCharge(f *physics.Feed) float64 {
	if f.UPS == nil {
		return 0
	}
	return f.UPS.Charge()
}

type pduElem struct {
	s *Site
	p *rackPDU
}

func (pduElem) Kind() string                      { return "pdu" }
func (e pduElem) Signal(n string) (float64, bool) { return lookup(e, n) }
func (e pduElem) Signals() []string               { return signalsOf(e) }

// power is the rack PDU's share of its module's load: the module's load
// spread evenly over its racks, and over the live feeds.
func (p *rackPDU) power() float64 {
	if !p.feed.Live() || p.module.racks == 0 {
		return 0
	}
	served := p.block.phys.Served()
	if served <= 0 {
		return 0
	}
	m := p.module
	if m.fleet == 0 {
		return m.served / float64(m.racks) * p.feed.LoadKW() / served
	}
	// the load banks' share spread as before, plus what this rack's
	// trays draw through this PDU, as much of it as the block delivers
	ratio := m.served / m.demand
	banks := (m.demand - m.fleet) * ratio
	return banks/float64(m.racks)*p.feed.LoadKW()/served + p.fleet*ratio
}

func (e pduElem) Fill(m map[string]float64) {
	p := e.p
	v, kw := p.feed.Volts(), p.power()
	pf := p.block.phys.PowerFactor
	amps := 0.0
	if v > 0 {
		amps = kw * 1000 / (math.Sqrt(3) * v * pf)
	}
	hz := 0.0
	if p.feed.Live() {
		hz = p.block.phys.Frequency.Value()
	}
	outlet := 1.0 // off
	if p.feed.Live() {
		outlet = 2
	}
	m["voltage-state"], m["voltage"], m["phase-voltage"] = voltageState(v, p.feed.Voltage.Nominal), v, v/math.Sqrt(3)
	m["current"], m["power"], m["phase-power"], m["apparent-power"] = amps, kw, kw/3, kw/pf
	m["energy"], m["frequency"], m["power-factor"] = p.energy, hz, pf*100
	m["outlet-state"], m["live"] = outlet, b2f(p.feed.Live())
}

// voltageState is a PDU's sensor state for its inlet voltage (the
// Raritan PDU2-MIB codes): belowLowerCritical 2 under 50 % of nominal,
// belowLowerWarning 3 under 90 %, aboveUpperWarning 5 over 110 %,
// aboveUpperCritical 6 over 115 %, else normal 4.
func voltageState(v, nominal float64) float64 {
	r := v / nominal
	switch {
	case r < 0.5:
		return 2
	case r < 0.9:
		return 3
	case r > 1.15:
		return 6
	case r > 1.1:
		return 5
	}
	return 4
}

type loopElem struct {
	s *Site
	l *coolLoop
}

func (loopElem) Kind() string                      { return "loop" }
func (e loopElem) Signal(n string) (float64, bool) { return lookup(e, n) }
func (e loopElem) Signals() []string               { return signalsOf(e) }

func (e loopElem) Fill(m map[string]float64) {
	l := e.l.phys
	e.l.common(e.s, m)
	m["flow"] = l.Pumps.Flow()
	m["heat"] = l.Heat()
	m["heat-removed"] = l.Removed()
	m["redundancy-lost"] = b2f(l.RedundancyLost.Active())
	m["leak"] = b2f(l.Leak.Active())
	fault, running := false, 0.0
	for _, p := range l.Pumps.Pumps {
		fault = fault || p.Tripped
		running += b2f(p.Running())
	}
	m["pump-fault"], m["running-pumps"] = b2f(fault), running
}

// Command applies a write to the loop's controller: a new supply
// temperature setpoint.
func (e loopElem) Command(name string, v float64) error { return e.l.command(name, v) }

// Command applies a write to a CDU: the setpoint is the loop's.
func (e cduElem) Command(name string, v float64) error { return e.l.command(name, v) }

func (c *coolLoop) command(name string, v float64) error {
	if name != "setpoint" {
		return fmt.Errorf("loop %s: %s: %w", c.phys.ID, name, ErrReadOnly)
	}
	if v < 15 || v > 60 {
		return fmt.Errorf("loop %s: setpoint %.2f degC outside 15..60 degC: %w", c.phys.ID, v, ErrOutOfRange)
	}
	c.phys.Setpoint = v
	return nil
}

// common are the values every CDU of a loop and the loop itself report.
func (c *coolLoop) common(s *Site, m map[string]float64) {
	l := c.phys
	dp := l.Pumps.DP()
	primary := l.Valve.Fraction() * c.params.PrimaryFlow
	primaryReturn := l.FacilityWater
	if primary > 0 {
		primaryReturn += l.Removed() / (primary / 60 * 4.18)
	}
	age, silent := 0.0, false
	for _, m := range c.modules {
		if m.netLink != nil {
			a := m.netLink.age(s.t)
			age = math.Max(age, a)
			silent = silent || a > m.netLink.silentAfter
		}
	}
	m["supply-temp"], m["return-temp"], m["dp"] = l.Ts, l.Tr, dp
	m["return-pressure"], m["supply-pressure"] = StaticReturnPressure, StaticReturnPressure+dp
	m["valve"], m["setpoint"] = l.Valve.Position()*100, l.Setpoint
	m["primary-supply-temp"], m["primary-return-temp"], m["primary-flow"] = l.FacilityWater, primaryReturn, primary
	m["primary-dp"] = 80 * l.Valve.Fraction() * l.Valve.Fraction()
	m["high-temp"], m["low-flow"] = b2f(l.HighTemp.Active()), b2f(l.Pumps.Flow() < 0.9*l.Pumps.Setpoint)
	m["bms-heartbeat-age"], m["bms-comm-lost"] = age, b2f(silent)
}

type cduElem struct {
	s   *Site
	l   *coolLoop
	cdu *physics.CDU
}

func (cduElem) Kind() string                      { return "cdu" }
func (e cduElem) Signal(n string) (float64, bool) { return lookup(e, n) }
func (e cduElem) Signals() []string               { return signalsOf(e) }

func (e cduElem) Fill(m map[string]float64) {
	l := e.l.phys
	e.l.common(e.s, m)
	flow := e.cdu.Flow()
	m["flow"] = flow
	heat := 0.0
	if total := l.Pumps.Flow(); total > 0 {
		heat = l.Removed() * flow / total
	}
	m["heat"], m["heat-removed"] = heat, heat
	if total := l.Pumps.Flow(); total > 0 {
		m["primary-flow"] *= flow / total
	}
	m["leak"] = b2f(e.cdu.Leak && l.Leak.Active())
	m["redundancy-lost"] = b2f(!e.cdu.Redundant() && l.RedundancyLost.Active())
	fault, running := false, 0.0
	for i, p := range e.cdu.Pumps {
		n := pumpNames(i)
		state := 0.0 // off
		switch {
		case p.Tripped:
			state = 2
		case p.Running():
			state = 1
		}
		m[n[0]], m[n[1]], m[n[2]] = state, p.Speed()*100, b2f(p.Tripped)
		fault = fault || p.Tripped
		running += b2f(p.Running())
	}
	m["pump-fault"], m["running-pumps"] = b2f(fault), running
}

// pumpNameTable holds the signal names of the first pumps of a CDU,
// built once so that a refresh does not build strings.
var pumpNameTable = func() (t [8][3]string) {
	for i := range t {
		t[i] = pumpNamesOf(i)
	}
	return t
}()

func pumpNamesOf(i int) [3]string {
	x := "pump" + strconv.Itoa(i+1) + "-"
	return [3]string{x + "state", x + "speed", x + "fault"}
}

// pumpNames are the signal names of pump i of a CDU.
func pumpNames(i int) [3]string {
	if i < len(pumpNameTable) {
		return pumpNameTable[i]
	}
	return pumpNamesOf(i)
}

type linkElem struct {
	s *Site
	l *link
}

func (linkElem) Kind() string { return "link" }
func (e linkElem) Signal(n string) (float64, bool) {
	age := e.l.age(e.s.t)
	switch n {
	case "heartbeat-age":
		return age, true
	case "controller-silent":
		return b2f(age > e.l.silentAfter), true
	case "heartbeat":
		return float64(e.l.beats % 65536), true
	}
	return 0, false
}
func (linkElem) Signals() []string {
	return []string{"controller-silent", "heartbeat", "heartbeat-age"}
}

func lastSegment(id string) string { return id[strings.LastIndex(id, "/")+1:] }
