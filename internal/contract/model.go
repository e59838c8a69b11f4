// Package contract is the Go model of a site and its boundary contracts,
// decoded from CUE with the position of every value, and the checks that
// contractc vet runs over it.
package contract

import (
	"math"

	"github.com/seamdc/seam/internal/cueload"
	"github.com/seamdc/seam/internal/diag"
	"github.com/seamdc/seam/internal/inventory"
	"github.com/seamdc/seam/internal/units"
)

// The site's spine is the inventory's (internal/inventory): one model of
// the site for the contract checks and everything after handover.
type (
	Q             = inventory.Q
	Ref           = inventory.Ref
	Site          = inventory.Site
	Module        = inventory.Module
	Rack          = inventory.Rack
	PDU           = inventory.PDU
	Block         = inventory.Block
	Feed          = inventory.Feed
	UPS           = inventory.UPS
	Loop          = inventory.Loop
	CDU           = inventory.CDU
	Pump          = inventory.Pump
	Network       = inventory.Network
	Shared        = inventory.Shared
	LoadBank      = inventory.LoadBank
	RackDesign    = inventory.RackDesign
	TrayDesign    = inventory.TrayDesign
	PartDesign    = inventory.PartDesign
	ScaleUpDomain = inventory.ScaleUpDomain
)

// Boundary is a joint between a supplier and a consumer module.
type Boundary struct {
	ID                 string
	Supplier, Consumer Ref
	Medium             string
	Parties            []string
	PartiesPos         diag.Pos
	Channels           []*Channel
	Steady             []*Steady
	Transient          []*Transient
	Failure            []*Failure
	// Grid is a grid boundary's requirements and load (nil otherwise).
	Grid *Grid
	Pos  diag.Pos
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
	// Handovers are the as-built inventories read with the contracts
	// (ReadInventory); they are not part of the signed contract.
	Handovers []*inventory.Handover
	// Ops is what the site declares for operating and expanding it.
	Ops *Operating
	// Grid is the site's answer to its grid boundaries.
	Grid *GridDesign
	// Commissioning is what the site states of its commissioning (nil:
	// nothing; CommissioningRules gives the rules either way).
	Commissioning *Commissioning
}
