package redfish

import (
	"net/url"
	"strconv"
	"strings"

	"github.com/seamdc/seam/internal/inventory"
)

// place is where an element lives in the tree: its primary resource
// (type, the subtype property's value, URI) and, for some, a second
// view of the same thing.
type place struct {
	typ string // Redfish type of the primary resource
	sub string // ChassisType, EquipmentType, FacilityType, ProcessorType, FabricType or CircuitType
	uri string
	sys string // a tray's ComputerSystem
	pd  string // a power shelf's PowerDistribution (PowerShelves)
	id  string // the resource's Id
}

// The top-level collections.
const (
	chassisColl    = Root + "/Chassis"
	systemsColl    = Root + "/Systems"
	managersColl   = Root + "/Managers"
	facilitiesColl = Root + "/Facilities"
	fabricsColl    = Root + "/Fabrics"
	powerEquipment = Root + "/PowerEquipment"
	thermalEquip   = Root + "/ThermalEquipment"
	updateService  = Root + "/UpdateService"
	firmwareColl   = updateService + "/FirmwareInventory"
	cdusColl       = thermalEquip + "/CDUs"
	loopsColl      = thermalEquip + "/CoolingLoops"
)

// pdCollections are the PowerEquipment collections by EquipmentType.
var pdCollections = map[string]string{
	"RackPDU":    powerEquipment + "/RackPDUs",
	"PowerShelf": powerEquipment + "/PowerShelves",
	"Bus":        powerEquipment + "/ElectricalBuses",
	"Switchgear": powerEquipment + "/Switchgear",
}

// chassisTypes are the ChassisType of the kinds exported as Chassis;
// every other kind without a Redfish resource of its own is a Chassis of
// type Other, its kind in Oem.Seam.
var chassisTypes = map[inventory.Kind]string{
	inventory.KindRack:             "Rack",
	inventory.KindCompute:          "Sled",
	inventory.KindScaleUpSwitch:    "Sled",
	inventory.KindPowerShelf:       "Shelf",
	inventory.KindTorSwitch:        "RackMount",
	inventory.KindManagementSwitch: "RackMount",
	inventory.KindManifold:         "Component",
}

// placer places every element of a graph, parents before children.
type placer struct {
	g      *inventory.Graph
	places []*place
	order  []inventory.ID             // elements by key
	taken  map[string]map[string]bool // collection → Ids
}

func placeAll(g *inventory.Graph) *placer {
	p := &placer{g: g, places: make([]*place, g.Len()), taken: map[string]map[string]bool{}}
	for i := range g.Len() {
		p.typeOf(inventory.ID(i))
	}
	// Ids: top-level resources first, then the ones below them, each in
	// key order, so that a clash of Ids resolves the same way whatever
	// the graph's order
	p.order = sortedByKey(g)
	for _, top := range []bool{true, false} {
		for _, id := range p.order {
			if pl := p.places[id]; (pl.owner(p, id) == inventory.None) == top {
				p.uri(id)
			}
		}
	}
	return p
}

func naturalCompareTotal(a, b string) int {
	if c := naturalCompare(a, b); c != 0 {
		return c
	}
	return strings.Compare(a, b)
}

// typeOf decides an element's resource type from its kind and, for parts,
// from what its parent is.
func (p *placer) typeOf(id inventory.ID) *place {
	if pl := p.places[id]; pl != nil {
		return pl
	}
	e := p.g.El(id)
	parent := p.g.Parent(id)
	parentIs := func(typ string) bool { return parent != inventory.None && p.typeOf(parent).typ == typ }
	pl := &place{typ: "Chassis", sub: "Other"}
	switch e.Kind {
	case inventory.KindSite:
		pl.typ, pl.sub = "Facility", "Site"
	case inventory.KindModule:
		pl.typ, pl.sub = "Facility", "Building"
	case inventory.KindRack, inventory.KindCompute, inventory.KindScaleUpSwitch, inventory.KindPowerShelf,
		inventory.KindTorSwitch, inventory.KindManagementSwitch, inventory.KindManifold:
		pl.sub = chassisTypes[e.Kind]
	case inventory.KindBusbar:
		pl.typ, pl.sub = "PowerDistribution", "Bus"
	case inventory.KindPDU:
		pl.typ, pl.sub = "PowerDistribution", "RackPDU"
	case inventory.KindBlock:
		pl.typ, pl.sub = "PowerDistribution", "Switchgear"
	case inventory.KindLoop:
		pl.typ, pl.sub = "CoolingLoop", ""
	case inventory.KindCDU:
		pl.typ, pl.sub = "CoolingUnit", "CDU"
	case inventory.KindBMC:
		pl.typ, pl.sub = "Manager", "BMC"
	case inventory.KindScaleUpDomain:
		pl.typ, pl.sub = "Fabric", "NVLink"
	case inventory.KindNetwork:
		pl.typ, pl.sub = "Fabric", "Ethernet"
	case inventory.KindPSU:
		if parentIs("Chassis") {
			pl.typ, pl.sub = "PowerSupply", ""
		}
	case inventory.KindFeed:
		if parentIs("PowerDistribution") {
			pl.typ, pl.sub = "Circuit", "Feeder"
		}
	case inventory.KindPump:
		if parentIs("CoolingUnit") {
			pl.typ, pl.sub = "Pump", ""
		}
	case inventory.KindGPU, inventory.KindCPU:
		if parentIs("Chassis") && p.hasSystem(parent) {
			pl.typ, pl.sub = "Processor", strings.ToUpper(e.Kind.String())
		}
	case inventory.KindMemory:
		if parentIs("Chassis") && p.hasSystem(parent) {
			pl.typ, pl.sub = "Memory", ""
		}
	case inventory.KindNIC, inventory.KindDPU:
		if parentIs("Chassis") {
			pl.typ, pl.sub = "NetworkAdapter", ""
		}
	case inventory.KindDrive:
		if parentIs("Chassis") {
			pl.typ, pl.sub = "Drive", ""
		}
	case inventory.KindASIC:
		if parentIs("Chassis") && p.fabricOf(parent) != inventory.None {
			pl.typ, pl.sub = "Switch", "NVLink"
		}
	}
	p.places[id] = pl
	return pl
}

// hasSystem reports whether a chassis is also a ComputerSystem: a
// compute tray, or a tray that holds processors or memory.
func (p *placer) hasSystem(id inventory.ID) bool {
	if p.g.El(id).Kind == inventory.KindCompute {
		return true
	}
	for _, c := range p.g.Children(id) {
		switch p.g.El(c).Kind {
		case inventory.KindCPU, inventory.KindGPU, inventory.KindMemory:
			return true
		}
	}
	return false
}

// fabricOf is the scale-up domain a tray connects to first (by key),
// exported as a Fabric, or None.
func (p *placer) fabricOf(tray inventory.ID) inventory.ID {
	best := inventory.None
	for _, d := range p.g.Out(inventory.Connects, tray) {
		if p.g.El(d).Kind != inventory.KindScaleUpDomain {
			continue
		}
		if best == inventory.None || naturalLess(p.g.El(d).Key, p.g.El(best).Key) {
			best = d
		}
	}
	return best
}

// owner is the element whose URI a subordinate resource's URI is built
// on, or None for a resource of a top-level collection.
func (pl *place) owner(p *placer, id inventory.ID) inventory.ID {
	switch pl.typ {
	case "PowerSupply", "Circuit", "Pump", "Processor", "Memory", "NetworkAdapter", "Drive":
		return p.g.Parent(id)
	case "Switch":
		return p.fabricOf(p.g.Parent(id))
	}
	return inventory.None
}

// uri gives an element its URI and Id.
func (p *placer) uri(id inventory.ID) {
	pl := p.places[id]
	e := p.g.El(id)
	flat := flatID(e.Key)
	var coll string
	switch pl.typ {
	case "Facility":
		coll = facilitiesColl
	case "Chassis":
		coll = chassisColl
	case "Manager":
		coll = managersColl
	case "Fabric":
		coll = fabricsColl
	case "PowerDistribution":
		coll = pdCollections[pl.sub]
	case "CoolingUnit":
		coll = cdusColl
	case "CoolingLoop":
		coll = loopsColl
	default:
		owner := pl.owner(p, id)
		o := p.places[owner]
		if pl.typ != "Switch" {
			flat = flatID(strings.TrimPrefix(e.Key, p.g.El(owner).Key+"/"))
		}
		coll = o.uri + subCollection[pl.typ]
		if pl.typ == "Processor" || pl.typ == "Memory" {
			coll = o.sys + subCollection[pl.typ]
		}
	}
	pl.id = p.claim(coll, flat)
	pl.uri = coll + "/" + pl.id
	if pl.typ == "Chassis" && p.hasSystem(id) {
		pl.sys = systemsColl + "/" + pl.id
	}
	if e.Kind == inventory.KindPowerShelf && pl.typ == "Chassis" {
		pl.pd = pdCollections["PowerShelf"] + "/" + pl.id
	}
}

// subCollection is where a subordinate resource's collection hangs
// below its owner.
var subCollection = map[string]string{
	"PowerSupply":    "/PowerSubsystem/PowerSupplies",
	"Circuit":        "/Feeders",
	"Pump":           "/Pumps",
	"Processor":      "/Processors",
	"Memory":         "/Memory",
	"NetworkAdapter": "/NetworkAdapters",
	"Drive":          "/Drives",
	"Switch":         "/Switches",
}

// claim takes an Id in a collection: id, or id~2, id~3… when two keys
// flatten to the same Id.
func (p *placer) claim(coll, id string) string {
	taken := p.taken[coll]
	if taken == nil {
		taken = map[string]bool{}
		p.taken[coll] = taken
	}
	want := id
	for n := 2; taken[id]; n++ {
		id = want + "~" + strconv.Itoa(n)
	}
	taken[id] = true
	return id
}

// flatID is a key as one URI segment: its slashes become dashes.
func flatID(key string) string {
	if key == "" {
		key = "_"
	}
	return url.PathEscape(strings.ReplaceAll(key, "/", "-"))
}
