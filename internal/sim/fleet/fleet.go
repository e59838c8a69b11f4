// Package fleet is the simulated site's nodes after handover, generated
// from the inventory graph: every compute tray a node with a workload
// (off, idle, the contract's training square wave, a burn-in load), a
// power cap and four GPUs with their power, temperature, clocks and ECC
// counts; every rack's trays summed through its power shelves' PSUs onto
// its rack PDUs (which the simulator's feed and block physics then
// carry) and, as heat, into its cooling loop; per-node defects (a slow
// scale-up link, a hot GPU, ECC errors, a failed diagnostic, a missing
// PSU, a swapped part, a tray in the wrong slot, firmware drift, a tray
// missing or one too many); the grid job (the contract's grid load
// driven in phase across the site, through each rack's NVML smoothing
// and storage); and, for the simulated BMCs, each tray as it
// physically is, as a small inventory graph. The fleet has no lock: the
// simulator calls it under its site's lock, and steps it with the
// physics.
package fleet

import (
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/seamdc/seam/internal/gridload"
	"github.com/seamdc/seam/internal/inventory"
)

// State is a node's workload.
type State string

// Node states. Off draws nothing (the simulator's physics is then that
// of the load banks alone); idle is a powered node waiting for work.
const (
	Off      State = "off"
	Idle     State = "idle"
	Training State = "training"
	BurnIn   State = "burn-in"
)

// States lists the node states.
var States = []State{Off, Idle, Training, BurnIn}

// Wave is a training job's square wave: between Low and High (shares of
// a node's design draw), Period seconds, High for Duty of it, edges at
// Rate (shares of the design draw per second).
type Wave struct {
	Low, High, Period, Duty, Rate float64
}

// DefaultWave is the worked example's training excitation: 30 % to
// 100 % every 4 s, half the time high, edges of 20 MW/s on a 2.08 MW
// module.
var DefaultWave = Wave{Low: 0.3, High: 1, Period: 4, Duty: 0.5, Rate: 20 / 2.08}

// Model numbers of the node model (assumed: no public source gives a
// GB300 tray's split; they follow its 6.4 kW design draw and 1.4 kW
// per B300).
const (
	IdleShare    = 0.2   // an idle node's draw, of its design draw
	OtherShare   = 0.125 // CPUs, NICs, DPU, fans: of the node's draw
	CapMinShare  = 0.4   // the lowest power limit, of the design draw
	PSUEff       = 0.96  // AC in, DC onto the busbar
	SlowdownC    = 87.0  // a GPU's slowdown temperature
	ThermalR     = 0.028 // K per W of GPU power above the coolant
	ThermalTau   = 20.0  // s: a GPU's temperature lag
	SwitchIdle   = 0.4   // a switch tray's draw with its rack's nodes idle, of its design
	DefaultDCGM  = "4.2.3"
	DefaultLink  = 1.0
	maxSMClock   = 1965
	memClock     = 3996
	defaultSlack = 0.0
)

// Options tune a fleet.
type Options struct {
	// Waves are the training waves by IT module (its id); a module
	// without one trains with DefaultWave.
	Waves map[string]Wave
	// DCGM is the DCGM version the nodes' dcgmi reports ("" DefaultDCGM).
	DCGM string
	// Grid is the contract's grid load and the racks' answers (nil:
	// none; Train then drives the modules' square waves' levels).
	Grid *Grid
}

// Fleet is the site's nodes, trays and racks.
type Fleet struct {
	g       *inventory.Graph
	opt     Options
	t       float64 // sim seconds
	nodes   []*Node
	names   map[string]*Node // by Slurm, Kubernetes and BMC name, and key
	trays   []*Tray          // the trays with a BMC, and power shelves, by key
	byKey   map[string]*Tray
	extra   map[string]*Tray // extra trays, by their defect's target
	racks   []*Rack
	rackBy  map[string]*Rack
	pdus    []*PDU
	modules []*Module
	cdus    []string
	defects []Defect
	on      int // nodes not off
	changed bool
	job     *job // the grid job, once Train has started one
}

// Module is an IT module's racks and what they draw.
type Module struct {
	Key    string
	racks  []*Rack
	wave   Wave
	load   gridload.Load // the grid job's, per GPU
	offset float64       // s: the grid job's lag (jitter)
	// SupplyC is the coolant supply temperature of the module's loop,
	// which the simulator sets each step.
	SupplyC float64
	// ACW is what the module's rack PDUs carry (W); LiquidW the heat it
	// puts into its loop.
	ACW, LiquidW float64
}

// Rack is a rack position and what physically sits in it.
type Rack struct {
	Key    string
	module *Module
	id     inventory.ID
	liquid float64
	auxW   float64 // the ToR and management switches (AC, both cords)
	pdus   []*PDU
	trays  []*Tray // physically here, by slot
	dark   bool
	answer gridload.Group // its grid answers (zero: none)
	// its storage, online since the first grid job
	storage     *gridload.StorageStepper
	storageRate float64
	// LoadW is what the rack's trays draw (W); StorageW what its
	// storage supplies of it (negative: takes in); DCW what its PSUs
	// deliver onto its busbar, the difference. GPUW is its GPUs' draw.
	LoadW, StorageW, DCW, GPUW float64
}

// PDU is a rack PDU. The simulator sets Live and Volts each step; the
// fleet sets ACW.
type PDU struct {
	Key   string // ma/r01/a
	Name  string // a
	rack  *Rack
	Live  bool
	Volts float64 // its phase voltage, V
	ACW   float64
	psus  int // live PSUs on it
}

// Tray is a tray as it physically is: where it sits, what serials it
// carries.
type Tray struct {
	Key     string // its key in the inventory (or an extra tray's)
	Kind    inventory.Kind
	id      inventory.ID // in the declared graph (None for an extra tray)
	DesignW float64
	Liquid  bool
	// where it sits
	rack *Rack
	Slot int
	// what it is
	Serial      string
	Firmware    map[string]string
	partSerials map[string]string // part key → serial, where it differs
	PSUs        []*PSU
	Node        *Node
	Removed     bool         // not in the rack any more: its BMC does not answer
	Extra       bool         // not in the inventory
	template    inventory.ID // an extra tray's model
	BMCName     string
	Address     string        // the BMC address the inventory gives
	version     atomic.Uint64 // bumps when what its BMC reports changes (read without the site's lock)
	fingerprint string
}

// PSU is one bay of a power shelf.
type PSU struct {
	Key     string
	Bay     int
	pdu     *PDU
	Serial  string
	Present bool
	// OutW is its DC output in the last step.
	OutW float64
}

// New builds the fleet of a graph: every compute tray a node (off), every
// power shelf's PSUs on their rack PDU.
func New(g *inventory.Graph, opt Options) *Fleet {
	if opt.DCGM == "" {
		opt.DCGM = DefaultDCGM
	}
	f := &Fleet{g: g, opt: opt, names: map[string]*Node{}, byKey: map[string]*Tray{}, extra: map[string]*Tray{}, rackBy: map[string]*Rack{}}
	for _, mid := range g.OfKind(inventory.KindModule) {
		m := &Module{Key: g.El(mid).Key, wave: DefaultWave, SupplyC: 30}
		if w, ok := opt.Waves[m.Key]; ok {
			m.wave = w
		}
		if opt.Grid != nil {
			m.offset = jitterOf(m.Key, opt.Grid.Jitter)
		}
		for _, rid := range g.Children(mid) {
			if g.El(rid).Kind == inventory.KindRack {
				f.addRack(m, rid)
			}
		}
		if len(m.racks) > 0 {
			f.modules = append(f.modules, m)
		}
	}
	for _, c := range g.OfKind(inventory.KindCDU) {
		f.cdus = append(f.cdus, g.El(c).Key)
	}
	slices.SortFunc(f.trays, func(a, b *Tray) int { return strings.Compare(a.Key, b.Key) })
	f.rebuild()
	return f
}

func (f *Fleet) addRack(m *Module, rid inventory.ID) {
	g := f.g
	r := &Rack{Key: g.El(rid).Key, module: m, id: rid, liquid: 1}
	if f.opt.Grid != nil {
		r.answer = f.opt.Grid.Answers[r.Key]
	}
	if site := g.Site; site != nil {
		if mod := site.Module(m.Key); mod != nil {
			if cr := mod.Rack(strings.TrimPrefix(r.Key, m.Key+"/")); cr != nil {
				r.liquid = cr.LiquidShare()
			}
		}
	}
	for _, c := range g.Children(rid) {
		e := g.El(c)
		switch e.Kind {
		case inventory.KindPDU:
			p := &PDU{Key: e.Key, Name: e.Key[strings.LastIndexByte(e.Key, '/')+1:], rack: r, Live: true}
			r.pdus = append(r.pdus, p)
			f.pdus = append(f.pdus, p)
		case inventory.KindTorSwitch, inventory.KindManagementSwitch:
			r.auxW += float64(e.PowerW)
		}
	}
	for _, c := range g.Children(rid) {
		e := g.El(c)
		switch e.Kind {
		case inventory.KindCompute, inventory.KindScaleUpSwitch, inventory.KindPowerShelf:
			f.addTray(r, c)
		}
	}
	m.racks = append(m.racks, r)
	f.racks = append(f.racks, r)
	f.rackBy[r.Key] = r
}

func (f *Fleet) addTray(r *Rack, id inventory.ID) {
	g := f.g
	e := g.El(id)
	t := &Tray{Key: e.Key, Kind: e.Kind, id: id, DesignW: float64(e.PowerW), Liquid: e.Liquid, rack: r, Slot: e.Slot}
	for _, b := range g.Out(inventory.ManagedBy, id) {
		t.Address = g.El(b).BMCAddress
	}
	t.BMCName = "bmc-" + strings.ReplaceAll(e.Key, "/", "-")
	if e.Kind == inventory.KindPowerShelf {
		t.DesignW = 0
		for _, c := range g.Children(id) {
			pe := g.El(c)
			if pe.Kind != inventory.KindPSU {
				continue
			}
			psu := &PSU{Key: pe.Key, Bay: pe.Slot}
			for _, src := range g.In(inventory.Powers, c) {
				for _, p := range r.pdus {
					if p.Key == g.El(src).Key {
						psu.pdu = p
					}
				}
			}
			t.PSUs = append(t.PSUs, psu)
		}
	}
	if e.Kind == inventory.KindCompute {
		n := &Node{Tray: t, Name: e.Key, state: Off, link: DefaultLink, dcgm: f.opt.DCGM}
		if e.Names != nil {
			if e.Names.Slurm != "" {
				n.Name = e.Names.Slurm
			}
			n.Kubernetes = e.Names.Kubernetes
			if e.Names.BMC != "" {
				t.BMCName = e.Names.BMC
			}
		}
		n.Domain = e.Domain
		for _, d := range g.Out(inventory.Connects, id) {
			if g.El(d).Kind == inventory.KindScaleUpDomain {
				n.Domain = g.El(d).Key
			}
		}
		for _, c := range g.Children(id) {
			if pe := g.El(c); pe.Kind == inventory.KindGPU {
				model := ""
				if pe.Identity != nil {
					model = pe.Identity.Model
				}
				n.gpus = append(n.gpus, &gpu{key: pe.Key, index: len(n.gpus), model: model})
			}
		}
		n.capW = t.DesignW
		t.Node = n
		f.nodes = append(f.nodes, n)
		for _, name := range []string{n.Name, n.Kubernetes, e.Key, t.BMCName} {
			if name != "" {
				f.names[name] = n
			}
		}
	}
	f.trays = append(f.trays, t)
	f.byKey[t.Key] = t
}

// Nodes lists the nodes, in the inventory's order.
func (f *Fleet) Nodes() []*Node { return f.nodes }

// Node finds a node by its Slurm, Kubernetes or BMC name or its key.
func (f *Fleet) Node(name string) (*Node, error) {
	if n := f.names[name]; n != nil {
		return n, nil
	}
	for _, t := range f.extra {
		if t.Node != nil && (t.Node.Name == name || t.Key == name) {
			return t.Node, nil
		}
	}
	return nil, fmt.Errorf("no node %q in the fleet (nodes are named as in Slurm, such as %s)", name, f.example())
}

func (f *Fleet) example() string {
	if len(f.nodes) == 0 {
		return "none: the inventory has no compute trays"
	}
	return f.nodes[0].Name
}

// Tray finds a tray by its key.
func (f *Fleet) Tray(key string) *Tray {
	if t := f.byKey[key]; t != nil {
		return t
	}
	for _, t := range f.extra {
		if t.Key == key {
			return t
		}
	}
	return nil
}

// PDUs lists the rack PDUs, in the inventory's order.
func (f *Fleet) PDUs() []*PDU { return f.pdus }

// Modules lists the IT modules that have racks.
func (f *Fleet) Modules() []*Module { return f.modules }

// Module finds an IT module by its key.
func (f *Fleet) Module(key string) *Module {
	for _, m := range f.modules {
		if m.Key == key {
			return m
		}
	}
	return nil
}

// Rack finds a rack by its key.
func (f *Fleet) Rack(key string) *Rack { return f.rackBy[key] }

// Graph is the declared inventory the fleet was built from.
func (f *Fleet) Graph() *inventory.Graph { return f.g }

// Active reports whether any node draws power: with none, the fleet
// adds nothing to the physics.
func (f *Fleet) Active() bool { return f.on > 0 }

// Rack is the rack a tray sits in.
func (t *Tray) Rack() *Rack { return t.rack }

// Version changes whenever what the tray's BMC reports changes.
// It may be read without the site's lock: BMCs check it on every request.
func (t *Tray) Version() uint64 { return t.version.Load() }
