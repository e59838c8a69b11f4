package contract

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/seamdc/seam/internal/diag"
	"github.com/seamdc/seam/internal/inventory"
	"github.com/seamdc/seam/internal/units"
)

// Operating is what a site declares for running and expanding it
// (docs/operations.md): the uniformity policy, equipment as built that
// no rack record holds, spares, the floor, tie-ins, power tranches and
// facility power meters. None of it is in a boundary's signed unit.
type Operating struct {
	// Uniformity is "error" when the site makes uniformity and spares
	// findings errors; otherwise they are warnings.
	Uniformity string
	SpareRule  *SpareRule
	Equipment  []*Equipment
	Spares     []*Spare
	Floor      *Floor
	// ModuleFloors are the modules' own floors, by module id.
	ModuleFloors map[string]*Floor
	// Masses are the floor-loading values of the racks and their
	// designs, by contract path of the rack or tray group.
	Masses   map[string]Amount
	TieIns   []*TieIn
	Tranches []*Tranche
	Meters   []*Meter
	// NetworkSwitches are the switches each controls network rides on,
	// by network id ("ctl/net").
	NetworkSwitches map[string][]Ref
}

// SpareRule: at least Min spares per Per installed, rounded up.
type SpareRule struct {
	Min, Per int
	Pos      diag.Pos
}

// Need is how many spares the rule asks for with n installed.
func (r SpareRule) Need(n int) int {
	if n <= 0 || r.Per <= 0 {
		return 0
	}
	return (n*r.Min + r.Per - 1) / r.Per
}

// Equipment is a group of identical parts of a module as built.
type Equipment struct {
	ID, Module, Kind, PartNumber, Firmware string
	Count                                  int
	Switches                               []Ref
	Pos                                    diag.Pos
}

// Spare is what the site holds of one part number.
type Spare struct {
	PartNumber string
	OnHand     int
	Rule       *SpareRule
	Pos        diag.Pos
}

// Floor is a floor's rating per area, a pressure (1 kN/m² = 1 kPa).
type Floor struct {
	Rating Q
	Path   string
	Pos    diag.Pos
}

// TieIn is an expansion provision built in the first phase.
type TieIn struct {
	ID, Kind  string
	Module    Ref
	Positions int
	Breaker   Q
	Voltage   Q
	Flow      Q
	Valved    bool
	Pairs     int
	Tranche   Ref
	Pos       diag.Pos
}

// Tranche is a step of the utility supply.
type Tranche struct {
	ID        string
	Date      string
	DatePos   diag.Pos
	Capacity  Q
	Energises []Ref
	Pos       diag.Pos
}

// Meter is a facility power meter or declared load.
type Meter struct {
	ID, Kind, Channel, At string
	Design                Q
	Pos                   diag.Pos
}

// operating decodes the site's operating declarations.
func (d *decoder) operating(n node) *Operating {
	n.path = "site"
	o := &Operating{ModuleFloors: map[string]*Floor{}, Masses: map[string]Amount{}, NetworkSwitches: map[string][]Ref{}}
	if p := n.at("policy"); p.exists() {
		o.Uniformity = p.str("uniformity")
		if r := p.at("spares"); r.exists() {
			o.SpareRule = &SpareRule{Min: r.int("min"), Per: r.int("per"), Pos: r.pos()}
		}
	}
	for _, e := range n.entries("equipment") {
		o.Equipment = append(o.Equipment, &Equipment{ID: e.name, Module: e.str("module"), Kind: e.str("kind"),
			PartNumber: e.str("part_number"), Firmware: e.str("firmware"), Count: max(e.int("count"), 1),
			Switches: e.refs("switches"), Pos: e.pos()})
	}
	for _, s := range n.entries("spares") {
		sp := &Spare{PartNumber: s.name, OnHand: s.int("on_hand"), Pos: s.pos()}
		if r := s.at("rule"); r.exists() {
			sp.Rule = &SpareRule{Min: r.int("min"), Per: r.int("per"), Pos: r.pos()}
		}
		o.Spares = append(o.Spares, sp)
	}
	o.Floor = d.floor(n.at("floor"))
	for _, m := range n.entries("modules") {
		if f := d.floor(m.at("floor")); f != nil {
			o.ModuleFloors[m.name] = f
		}
		d.masses(m, o.Masses)
		for _, w := range m.entries("networks") {
			if sw := w.refs("switches"); len(sw) > 0 {
				o.NetworkSwitches[m.name+"/"+w.name] = sw
			}
		}
	}
	for _, t := range n.entries("tie_ins") {
		ti := &TieIn{ID: t.name, Kind: t.str("kind"), Module: t.ref("module"), Positions: t.int("positions"),
			Breaker: t.q("breaker", units.Current), Voltage: t.q("voltage", units.Voltage), Flow: t.q("flow", units.Flow),
			Pairs: t.int("pairs"), Pos: t.pos()}
		ti.Valved, _ = t.at("valved").v.Bool()
		if t.at("tranche").exists() {
			ti.Tranche = t.ref("tranche")
		}
		o.TieIns = append(o.TieIns, ti)
	}
	for _, t := range n.entries("tranches") {
		o.Tranches = append(o.Tranches, &Tranche{ID: t.name, Date: t.str("date"), DatePos: t.at("date").pos(),
			Capacity: t.q("capacity", units.Power), Energises: t.refs("energises"), Pos: t.pos()})
	}
	for _, m := range n.entries("meters") {
		o.Meters = append(o.Meters, &Meter{ID: m.name, Kind: m.str("kind"), Channel: m.str("channel"), At: m.str("at"),
			Design: m.q("design", units.Power), Pos: m.pos()})
	}
	return o
}

func (d *decoder) floor(n node) *Floor {
	if !n.exists() {
		return nil
	}
	return &Floor{Rating: n.q("rating", units.Pressure), Path: n.path, Pos: n.pos()}
}

// masses reads a module's floor-loading values: each rack's declared
// weight, each rack design's weight, coolant and footprint, and each tray
// group's weight, keyed by their contract paths.
func (d *decoder) masses(m node, out map[string]Amount) {
	put := func(n node, label string, dim Measure) {
		if a := n.amount(label, dim); a.Set {
			out[a.Path] = a
		}
	}
	for _, r := range m.entries("racks") {
		put(r, "weight", Mass)
	}
	for _, rd := range m.entries("rack_designs") {
		put(rd, "weight", Mass)
		put(rd, "coolant", Volume)
		put(rd, "footprint", Area)
		for _, t := range rd.entries("trays") {
			put(t, "weight", Mass)
		}
	}
}

// Measure is a dimension the floor-loading rule needs that the contract
// unit table (internal/units) does not have.
type Measure string

// The floor-loading measures and their canonical units.
const (
	Mass   Measure = "mass"   // kg
	Volume Measure = "volume" // L
	Area   Measure = "area"   // m2
)

// measureUnits is the closed table of the floor-loading measures: the
// factor to the canonical unit.
var measureUnits = map[Measure]map[string]float64{
	Mass:   {"kg": 1, "t": 1000},
	Volume: {"L": 1, "m3": 1000},
	Area:   {"m2": 1},
}

func measureHint(m Measure) string {
	switch m {
	case Mass:
		return `write a mass with its unit: "1360 kg" or "1.36 t"`
	case Volume:
		return `write a volume with its unit: "60 L" or "0.06 m3"`
	}
	return `write an area with its unit: "0.72 m2" (a 600 mm × 1200 mm rack)`
}

// Amount is a floor-loading value as written, in its canonical unit.
type Amount struct {
	Value float64
	Raw   string
	Path  string
	Set   bool
	Pos   diag.Pos
}

// amount reads a mass, volume or area: "1360 kg", "60 L", "0.72 m2".
func (n node) amount(label string, m Measure) Amount {
	c := n.at(label)
	if !c.exists() {
		return Amount{}
	}
	raw, err := c.v.String()
	if err != nil {
		num, _ := c.v.MarshalJSON()
		c.d.diags.Add(diag.Diagnostic{Rule: RuleNoUnit, Severity: diag.Error, Pos: c.pos(), Path: c.path,
			Message: fmt.Sprintf("%s: %s has no unit", c.path, num), Hint: measureHint(m)})
		return Amount{}
	}
	v, unit, ok := strings.Cut(strings.TrimSpace(raw), " ")
	f, err := strconv.ParseFloat(v, 64)
	scale, known := measureUnits[m][strings.TrimSpace(unit)]
	if !ok || err != nil || !known || f <= 0 {
		c.d.diags.Add(diag.Diagnostic{Rule: RuleBadUnit, Severity: diag.Error, Pos: c.pos(), Path: c.path,
			Message: fmt.Sprintf("%s: %q is not a %s", c.path, raw, m), Hint: measureHint(m)})
		return Amount{}
	}
	return Amount{Value: f * scale, Raw: raw, Path: c.path, Set: true, Pos: c.pos()}
}

// checkOperating runs the operating and expansion rules
// (docs/operations.md).
func checkOperating(c *Contracts, g *inventory.Graph, diags *diag.List) {
	checkControlsNet(c, g, diags)
	ps := parts(c)
	checkUniformity(c, ps, diags)
	checkSpares(c, ps, diags)
	checkFloor(c, diags)
	checkExpansion(c, diags)
	checkMeters(c, diags)
}
