// Package headroom computes live headroom: readings of the site's
// channels against the limits its contracts set (feed breakers after
// derating, A/B pairs with one feed lost, block ratings, rack PDUs, loop
// capacity with one CDU lost, the flow the heat needs), and exports it to
// Prometheus under base-unit names. It is pure: readings come in through
// Take, from facilityd's one poller; it talks to no device.
package headroom

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/units"
)

// Model is the site's limits and what each channel measures.
type Model struct {
	Feeds  []*Feed
	Blocks []*Block
	PDUs   []*PDU
	Loops  []*Loop
	// Meters maps a channel name to what it measures.
	Meters map[string]Meter
	// PUE are the site's facility meters that measured PUE reads (pue.go).
	PUE []PUEMeter
	// Grids are the grid boundaries whose POI meter channel headroom
	// reads for the live grid figures (grid.go).
	Grids []*Grid
}

// Kind is what a channel measures at its element.
type Kind string

// The kinds of meter headroom reads.
const (
	Power       Kind = "power"       // kW at a feed or PDU
	Current     Kind = "current"     // A at a feed or PDU
	Voltage     Kind = "voltage"     // V at a feed or PDU
	SupplyTemp  Kind = "supply_temp" // degC at a loop
	ReturnTemp  Kind = "return_temp" // degC at a loop
	Flow        Kind = "flow"        // L/min at a loop
	ModuleHeat  Kind = "heat"        // kW of a module, to its loop
	Temperature Kind = "temperature" // another temperature at a loop
)

// Meter is one channel: what it measures and where.
type Meter struct {
	Channel string
	Kind    Kind
	At      string // the inventory element: a feed, PDU, loop or module id
}

// Feed is a feed of a power block and its breaker's continuous limit.
type Feed struct {
	ID, Block, Module string
	Domain            string // the alarm domain of its block ("power_block=p1/block")
	LimitW            float64
	Derating          float64
	Breaker           string  // as written, e.g. "4000 A"
	NominalV          float64 // its block's line-line voltage
}

// Block is a power block: its rating and its feeds.
type Block struct {
	ID, Module string
	Domain     string
	RatingW    float64
	Redundancy string
	Feeds      []*Feed
}

// PDU is a rack PDU and its breaker's continuous limit.
type PDU struct {
	ID, Rack, Module, Feed string
	LimitW                 float64
	Derating               float64
	// Siblings are the rack's PDUs, this one included.
	Siblings []string
}

// Loop is a cooling loop: CDU capacity with every CDU and with one lost,
// its design ΔT and the contract's supply-temperature band.
type Loop struct {
	ID, Module        string
	Domain            string // "cooling_loop=l1/loop"
	CapacityW         float64
	CapacityLostW     float64 // with the largest CDU lost (N+1), half (2N), all (N)
	Redundancy        string
	DeltaTK, Cp       float64
	SupplyLo, SupplyH float64 // the contract's supply band, degC; ±Inf when open
	BandFrom          string  // the clause the band comes from
	FlowMin           float64 // L/min: the highest minimum its contracts set on its flow, or 0
	FlowFrom          string  // the clause FlowMin comes from
	Cools             []string
}

// FromContracts builds the model: the limits from contract.Budget (one
// derating rule for vet, budget and headroom), the meters from the
// boundaries' channels. domain gives an element's alarm domain, or ""
// (then alerts carry no domain and go to people only).
func FromContracts(c *contract.Contracts, domain func(id string) string) (*Model, error) {
	if domain == nil {
		domain = func(string) string { return "" }
	}
	b := contract.Budget(c)
	m := &Model{Meters: map[string]Meter{}}
	feeds := map[string]*Feed{}
	for _, f := range b.Feeds {
		if !f.Feed.Breaker.Set || f.Limit <= 0 {
			return nil, fmt.Errorf("%s: feed %s has no breaker rating: its headroom cannot be computed (write breaker: \"… A\")", f.Feed.Path, f.Feed.ID)
		}
		fd := &Feed{ID: f.Feed.ID, Block: f.Feed.Block.ID, Module: f.Feed.Block.Module, Domain: domain(f.Feed.Block.ID),
			LimitW: f.Limit * 1000, Derating: f.Derating, Breaker: f.Feed.Breaker.Raw, NominalV: f.Feed.Block.Voltage.Canon}
		feeds[fd.ID] = fd
		m.Feeds = append(m.Feeds, fd)
	}
	for _, bb := range b.Blocks {
		bl := &Block{ID: bb.Block.ID, Module: bb.Block.Module, Domain: domain(bb.Block.ID), Redundancy: bb.Block.Redundancy}
		if bb.Block.Rating.Set {
			bl.RatingW = bb.Block.Rating.Canon * 1000
		}
		for _, f := range bb.Block.Feeds {
			bl.Feeds = append(bl.Feeds, feeds[f.ID])
		}
		m.Blocks = append(m.Blocks, bl)
	}
	for _, p := range b.PDUs {
		if !p.PDU.Breaker.Set || p.Limit <= 0 {
			return nil, fmt.Errorf("%s: PDU %s has no breaker rating: its headroom cannot be computed (write breaker: \"… A\")", p.PDU.Path, p.PDU.ID)
		}
		pd := &PDU{ID: p.PDU.ID, Rack: p.Rack.ID, Module: p.Rack.Module, Feed: p.PDU.Feed.To, LimitW: p.Limit * 1000, Derating: p.Derating}
		for _, s := range p.Rack.PDUs {
			pd.Siblings = append(pd.Siblings, s.ID)
		}
		m.PDUs = append(m.PDUs, pd)
	}
	loops := map[string]*Loop{}
	for _, l := range b.Loops {
		lp := &Loop{ID: l.Loop.ID, Module: l.Loop.Module, Domain: domain(l.Loop.ID), CapacityW: l.Capacity * 1000, CapacityLostW: l.CapacityLost * 1000,
			Redundancy: l.Loop.Redundancy, DeltaTK: l.Loop.DeltaT.Canon, Cp: l.Loop.Cp(), SupplyLo: math.Inf(-1), SupplyH: math.Inf(1)}
		for _, r := range l.Loop.Cools {
			lp.Cools = append(lp.Cools, r.To)
		}
		loops[lp.ID] = lp
		m.Loops = append(m.Loops, lp)
	}
	for _, bd := range c.Boundaries {
		for _, ch := range bd.Channels {
			if k, ok := kindOf(ch); ok {
				m.Meters[ch.Name] = Meter{Channel: ch.Name, Kind: k, At: ch.At.To}
			}
		}
	}
	supplyBands(c, m, loops)
	m.PUE = pueMeters(c)
	m.Grids = gridsOf(c)
	return m, nil
}

// kindOf says what a contract channel measures, for the kinds headroom
// reads; loop temperatures are told apart by the channel's name
// (…supply-temp, …return-temp).
func kindOf(ch *contract.Channel) (Kind, bool) {
	switch ch.Quantity {
	case units.Power:
		return Power, true
	case units.Current:
		return Current, true
	case units.Voltage:
		return Voltage, true
	case units.Flow:
		return Flow, true
	case units.Temperature:
		switch {
		case strings.HasSuffix(ch.Name, "supply-temp"):
			return SupplyTemp, true
		case strings.HasSuffix(ch.Name, "return-temp"):
			return ReturnTemp, true
		}
		return Temperature, true
	}
	return "", false
}

// supplyBands takes each loop's supply band from the steady clauses on
// its supply-temperature channels: the narrowest of what suppliers
// guarantee and consumers require (the band the loop must stay in for
// every contract to hold).
func supplyBands(c *contract.Contracts, m *Model, loops map[string]*Loop) {
	for _, bd := range c.Boundaries {
		for _, s := range bd.Steady {
			mt, ok := m.Meters[s.Channel.To]
			l := loops[mt.At]
			if !ok || l == nil || (mt.Kind != SupplyTemp && mt.Kind != Flow) {
				continue
			}
			for _, band := range []contract.Band{s.Guarantee, s.Require} {
				if !band.Set {
					continue
				}
				lo, hi, ok := band.Interval()
				if !ok {
					continue
				}
				if mt.Kind == Flow {
					if lo > l.FlowMin && !math.IsInf(lo, 0) {
						l.FlowMin, l.FlowFrom = lo, s.Path()
					}
					continue
				}
				if lo > l.SupplyLo || hi < l.SupplyH {
					l.BandFrom = s.Path()
				}
				l.SupplyLo, l.SupplyH = math.Max(l.SupplyLo, lo), math.Min(l.SupplyH, hi)
			}
		}
	}
}

// channels lists the meters' channel names, sorted.
func (m *Model) channels() []string {
	out := make([]string, 0, len(m.Meters))
	for k := range m.Meters {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
