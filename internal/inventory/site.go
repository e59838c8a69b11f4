// Package inventory is the site as one typed graph: the site contract's
// spine (modules, racks and their PDUs, power blocks, feeds and UPSes,
// cooling loops, CDUs and pumps, controls networks, shared dependencies,
// load banks), the vendors' rack designs (trays, parts, power shelves,
// switches, manifolds), and the integrator's as-built inventory
// (serials, firmware, slots, the names each node has in Slurm,
// Kubernetes and its BMC), joined into elements related by contains,
// powers, cools, connects and managed_by. The contract checks, the
// budget, the simulator and everything after handover read this one
// model; the contract package decodes the design part from CUE.
package inventory

import (
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
	RackDesigns                                 []*RackDesign    // sorted by name
	ScaleUp                                     []*ScaleUpDomain // declared domains, sorted by id
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
	// Design names one of the module's rack designs ("" none: the rack
	// is known by its counts only); DesignOf is it, resolved.
	Design   Ref
	DesignOf *RackDesign
	Pos      diag.Pos
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
	// Derating is the breaker's share for continuous load (a ratio in
	// %); unset, the contract's default (80 %).
	Derating Q
	Voltage  Q
	Pos      diag.Pos
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
	// Derating is the breaker's share for continuous load (a ratio in
	// %); unset, the contract's default (80 %).
	Derating Q
	UPS      *UPS
	Pos      diag.Pos
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
	Switching  Q // the fastest square wave its contactors can switch (frequency); unset: not stated
	Kind       string
	Pos        diag.Pos
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

// RackDesign is the vendor's design of a rack: what sits in which U
// slot. It is part of the signed contract (the IT module's); serials and
// firmware are not (they are the as-built inventory).
type RackDesign struct {
	Path    string // contract path
	Name    string
	HeightU int
	Trays   []*TrayDesign // sorted by name
	Pos     diag.Pos
}

// Tray kinds: what occupies slots of a rack.
const (
	Compute          = "compute"           // a node: GPUs, CPUs, NICs, a BMC
	ScaleUpSwitch    = "scale-up-switch"   // an NVLink-class switch tray
	PowerShelf       = "power-shelf"       // PSUs onto the rack's DC busbar
	TorSwitch        = "tor-switch"        // the data fabric's top-of-rack switch
	ManagementSwitch = "management-switch" // the out-of-band management network
)

// TrayKinds lists the tray kinds.
var TrayKinds = []string{Compute, ScaleUpSwitch, PowerShelf, TorSwitch, ManagementSwitch}

// TrayDesign is a group of identical trays of a rack design.
type TrayDesign struct {
	Path    string // contract path
	Name    string // compute, nvswitch, shelf, …
	Kind    string
	Slots   []int // the first U of each tray: one entry per tray
	HeightU int
	// Power is one tray's design draw (not for power shelves).
	Power  Q
	Liquid bool
	Model  string
	Parts  []*PartDesign // sorted by name
	// power shelves: PSUs each, one PSU's rating, and the rack PDU
	// (by name) that feeds each shelf, one entry per tray
	PSUs     int
	PSUPower Q
	Feeds    []Ref
	Pos      diag.Pos
}

// Count is how many trays of the group the rack holds.
func (t *TrayDesign) Count() int { return len(t.Slots) }

// Part kinds.
const (
	GPU    = "gpu"
	CPU    = "cpu"
	NIC    = "nic"
	DPU    = "dpu"
	BMC    = "bmc"
	ASIC   = "switch-asic"
	PSU    = "psu"
	Drive  = "drive"
	Memory = "memory"
)

// PartKinds lists the part kinds a tray design may hold.
var PartKinds = []string{GPU, CPU, NIC, DPU, BMC, ASIC, Drive, Memory}

// PartDesign is a kind of part in a tray, and how many.
type PartDesign struct {
	Name  string
	Kind  string
	Count int
	Model string
	Pos   diag.Pos
}

// ScaleUpDomain is a declared scale-up (NVLink-class) domain spanning
// racks: NVL36×2 is two racks. A rack in none is its own domain.
type ScaleUpDomain struct {
	Path   string // contract path
	ID     string // "module/domain"
	Module string
	Racks  []Ref // rack ids of the module, or "module/rack" of another (an error)
	Pos    diag.Pos
}

// RackDesign returns the module's rack design called name, or nil.
func (m *Module) RackDesign(name string) *RackDesign {
	for _, d := range m.RackDesigns {
		if d.Name == name {
			return d
		}
	}
	return nil
}

// Rack returns the module's rack with id ("r01", not "ma/r01"), or nil.
func (m *Module) Rack(id string) *Rack {
	for _, r := range m.Racks {
		if r.ID == m.ID+"/"+id {
			return r
		}
	}
	return nil
}

// Tray returns the design's tray group called name, or nil.
func (d *RackDesign) Tray(name string) *TrayDesign {
	for _, t := range d.Trays {
		if t.Name == name {
			return t
		}
	}
	return nil
}

// Count is how many of the design's trays are of kind.
func (d *RackDesign) Count(kind string) int {
	n := 0
	for _, t := range d.Trays {
		if t.Kind == kind {
			n += t.Count()
		}
	}
	return n
}

// Parts is how many parts of kind the design's trays hold in all.
func (d *RackDesign) Parts(kind string) int {
	n := 0
	for _, t := range d.Trays {
		for _, p := range t.Parts {
			if p.Kind == kind {
				n += p.Count * t.Count()
			}
		}
	}
	return n
}

// DrawW is the design draw of every tray but the power shelves, in W.
func (d *RackDesign) DrawW() int64 {
	var w int64
	for _, t := range d.Trays {
		if t.Kind != PowerShelf {
			w += Watts(t.Power) * int64(t.Count())
		}
	}
	return w
}

// Watts is a power quantity in whole watts (64-bit: no ceiling on a
// rack's power).
func Watts(q Q) int64 {
	if !q.Set {
		return 0
	}
	return int64(q.Canon*1000 + 0.5) // canonical power is kW
}
