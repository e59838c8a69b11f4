// Package contract is the Go model of a site and its boundary contracts,
// decoded from CUE with the position of every value, and the checks that
// contractc vet runs over it.
package contract

import (
	"math"

	"github.com/seamdc/seam/internal/cueload"

	"github.com/seamdc/seam/internal/diag"
	"github.com/seamdc/seam/internal/units"
)

// Q is a quantity as written in a contract, with its position. A Q that
// was not written has Set false.
type Q struct {
	units.Quantity
	Set bool
	Raw string
	Pos diag.Pos
}

// Ref is a reference to another element by id, with its position.
type Ref struct {
	To  string
	Pos diag.Pos
}

// Site is the inventory: modules and what they contain.
type Site struct {
	Name      string
	Pos       diag.Pos
	Modules   []*Module // sorted by id
	Shared    []*Shared
	LoadBanks []*LoadBank
}

// Module is a factory-built module.
type Module struct {
	ID, Kind, Vendor, Generation, FailureDomain string
	DependsOn                                   []Ref
	Racks                                       []*Rack
	Blocks                                      []*Block
	Loops                                       []*Loop
	Networks                                    []*Network
	Pos                                         diag.Pos
}

// Rack is a rack position inside an IT module; ID is "module/rack".
type Rack struct {
	Path           string // contract path
	ID, Module     string
	DesignPower    Q
	GPUs           int
	Nodes          int
	NodeIDs        []string
	LiquidFraction Q
	CooledBy       Ref
	PDUs           []*PDU
	Pos            diag.Pos
}

// LiquidShare is the fraction (0..1) of the rack's heat taken by liquid.
func (r *Rack) LiquidShare() float64 {
	if !r.LiquidFraction.Set {
		return 1
	}
	return r.LiquidFraction.Canon / 100
}

// PDU is a rack power entry on a feed; ID is "module/rack/pdu".
type PDU struct {
	Path    string // contract path
	ID      string
	Feed    Ref
	Breaker Q
	Voltage Q
	Pos     diag.Pos
}

// Block is a power block inside a power module; ID is "module/block".
type Block struct {
	Path        string // contract path
	ID, Module  string
	Rating      Q
	Voltage     Q
	Frequency   Q
	PowerFactor float64
	Redundancy  string
	Powers      []Ref
	Feeds       []*Feed
	Pos         diag.Pos
}

// Feed is one feed of a block; ID is "module/block/feed".
type Feed struct {
	Path    string // contract path
	ID      string
	Block   *Block
	Breaker Q
	UPS     *UPS
	Pos     diag.Pos
}

// UPS rides a feed through the loss of its source.
type UPS struct {
	Rating, RideThrough Q
	Pos                 diag.Pos
}

// Loop is a cooling loop inside a cooling module; ID is "module/loop".
type Loop struct {
	Path       string // contract path
	ID, Module string
	Coolant    string
	SupplyTemp Q
	DeltaT     Q
	Redundancy string
	Cools      []Ref
	CDUs       []*CDU
	Pos        diag.Pos
}

// Cp is the coolant's specific heat in kJ/(kg·K).
func (l *Loop) Cp() float64 {
	if l.Coolant == "pg25" {
		return units.CpPG25
	}
	return units.CpWater
}

// CDU is a coolant distribution unit; ID is "module/loop/cdu".
type CDU struct {
	ID             string
	Capacity       Q
	PumpRedundancy string
	Pumps          []*Pump
	Pos            diag.Pos
}

// Pump is one pump of a CDU; ID is "module/loop/cdu/pump".
type Pump struct {
	ID   string
	Flow Q
	Pos  diag.Pos
}

// Network is a controls network; ID is "module/network".
type Network struct {
	ID, Module string
	Paths      int
	Serves     []Ref
	Pos        diag.Pos
}

// Shared is something several modules may depend on.
type Shared struct {
	ID, Kind string
	Paths    int
	Pos      diag.Pos
	PathsPos diag.Pos // where paths is written, or the entry's position
}

// LoadBank is test equipment connected at a module.
type LoadBank struct {
	ID         string
	Module     Ref
	Rating     Q
	Resolution Q
	MaxRate    Q
	Kind       string
	Pos        diag.Pos
}

// Boundary is a joint between a supplier and a consumer module.
type Boundary struct {
	ID                 string
	Supplier, Consumer Ref
	Medium             string
	Parties            []string
	Channels           []*Channel
	Steady             []*Steady
	Transient          []*Transient
	Failure            []*Failure
	Pos                diag.Pos
}

// Channel is a logical measurement point.
type Channel struct {
	Name     string
	Quantity units.Dimension // or "alarm"
	At       Ref
	Safety   bool
	Pos      diag.Pos
}

// Alarm is the pseudo-dimension of alarm channels.
const Alarm units.Dimension = "alarm"

// Band is nominal ± tolerance, or min and/or max.
type Band struct {
	Nominal, Tolerance, Min, Max Q
	Set                          bool
	Pos                          diag.Pos
}

// Interval returns the band as canonical [lo, hi]; open sides are
// infinite. ok is false for a band that cannot be read (tolerance
// without nominal).
func (b Band) Interval() (lo, hi float64, ok bool) {
	lo, hi = math.Inf(-1), math.Inf(1)
	if b.Nominal.Set {
		if !b.Tolerance.Set {
			return 0, 0, false
		}
		t := b.Tolerance.Canon
		if b.Tolerance.Dim == units.Ratio {
			t = math.Abs(b.Nominal.Canon) * t / 100
		}
		lo, hi = b.Nominal.Canon-t, b.Nominal.Canon+t
	} else if b.Tolerance.Set {
		return 0, 0, false
	}
	if b.Min.Set {
		lo = math.Max(lo, b.Min.Canon)
	}
	if b.Max.Set {
		hi = math.Min(hi, b.Max.Canon)
	}
	return lo, hi, true
}

// Clause is what every clause kind shares.
type Clause struct {
	Kind     string // steady, transient, failure
	Name     string
	Boundary *Boundary
	Channel  Ref
	Pos      diag.Pos
}

// Path is the clause's contract path, e.g. boundaries.p1-ma.steady.voltage-a.
func (c *Clause) Path() string {
	return "boundaries." + quoteLabel(c.Boundary.ID) + "." + c.Kind + "." + quoteLabel(c.Name)
}

// Steady is a steady-state clause.
type Steady struct {
	Clause
	Guarantee, Require Band
}

// Excitation is the load swing a consumer produces.
type Excitation struct {
	Kind            string
	Channel         Ref
	Low, High, Rate Q
	Period, Duty    Q
	Repetitions     int
	Pos             diag.Pos
}

// Withstand is the largest excitation a supplier rides through.
type Withstand struct {
	Step, Rate, MinPeriod Q
	Set                   bool
	Pos                   diag.Pos
}

// Response is a transient response envelope.
type Response struct {
	MaxDeviation, Recovery Q
	SettleInto             Ref
	Mask                   []MaskPoint
	MaskName               string
	Set                    bool
	Pos                    diag.Pos
}

// MaskPoint: an excursion lasting up to Duration must stay within
// [Min, Max] (in % of nominal).
type MaskPoint struct {
	Duration, Min, Max Q
}

// Transient is a transient clause.
type Transient struct {
	Clause
	Excitation         Excitation
	Withstand          Withstand
	Guarantee, Require Response
}

// Behaviour is what happens on a failure event.
type Behaviour struct {
	NoInterruption *bool
	RideThrough    Q
	Degraded       Band
	DegradedFor    Q
	Alarm          Ref
	AlarmWithin    Q
	Recovery       Q
	Set            bool
	Pos            diag.Pos
}

// Failure is a failure clause.
type Failure struct {
	Clause
	Event              string
	Target             Ref
	Load               Q
	Guarantee, Require Behaviour
}

// Contracts is a loaded, decoded contract directory.
type Contracts struct {
	Dir        string
	Loaded     *cueload.Result // the CUE value and files behind the model
	Site       *Site
	Boundaries []*Boundary
}

// Module returns the module with id, or nil.
func (s *Site) Module(id string) *Module {
	for _, m := range s.Modules {
		if m.ID == id {
			return m
		}
	}
	return nil
}

// DesignPower is the sum of the module's racks' design power, in kW.
func (m *Module) DesignPower() float64 {
	total := 0.0
	for _, r := range m.Racks {
		total += r.DesignPower.Canon
	}
	return total
}

// DesignHeat is the module's heat to liquid, in kW.
func (m *Module) DesignHeat() float64 {
	total := 0.0
	for _, r := range m.Racks {
		total += r.DesignPower.Canon * r.LiquidShare()
	}
	return total
}
