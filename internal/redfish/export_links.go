package redfish

import "github.com/seamdc/seam/internal/inventory"

// relations writes the links of an element's parent and of the edges it
// takes (powers, cools into it) or gives (connects, managed_by from it).
func (x *exporter) relations(id inventory.ID) {
	g, pl := x.g, x.places[id]
	r := x.res[pl.uri]
	if p := g.Parent(id); p != inventory.None {
		x.parent(pl, r, x.places[p])
	}
	for _, src := range g.In(inventory.Powers, id) {
		sp := x.places[src]
		if pl.typ == "Chassis" {
			r.many["Links.PoweredBy"] = append(r.many["Links.PoweredBy"], sp.uri)
			if sp.typ == "PowerSupply" {
				s := x.res[sp.uri]
				s.many["Links.PoweringChassis"] = append(s.many["Links.PoweringChassis"], pl.uri)
			}
		} else {
			r.many["Links.Oem.Seam.PoweredBy"] = append(r.many["Links.Oem.Seam.PoweredBy"], sp.uri)
		}
	}
	for _, src := range g.In(inventory.Cools, id) {
		path := "Links.Oem.Seam.CooledBy"
		if pl.typ == "Chassis" {
			path = "Links.CooledBy"
		}
		r.many[path] = append(r.many[path], x.places[src].uri)
	}
	for _, m := range g.Out(inventory.ManagedBy, id) {
		x.managedBy(pl, r, x.places[m])
	}
	for _, t := range g.Out(inventory.Connects, id) {
		r.many["Links.Oem.Seam.ConnectedTo"] = append(r.many["Links.Oem.Seam.ConnectedTo"], x.places[t].uri)
	}
}

// facilityLinks are the links by which a facility lists the equipment
// in it.
var facilityLinks = map[string]string{"RackPDU": "Links.RackPDUs", "PowerShelf": "Links.PowerShelves", "Bus": "Links.ElectricalBuses",
	"Switchgear": "Links.Switchgear", "CDU": "Links.CDUs"}

// parent writes the link to an element's container: the standard one
// its type has for a container of that type (both ways where Redfish
// has both), a subordinate's URI, or Links.Oem.Seam.ContainedBy.
func (x *exporter) parent(pl *place, r *res, pp *place) {
	pr := x.res[pp.uri]
	add := func(r *res, path, uri string) { r.many[path] = append(r.many[path], uri) }
	switch {
	case pl.typ == "Chassis" && pp.typ == "Chassis":
		r.one["Links.ContainedBy"] = pp.uri
		add(pr, "Links.Contains", pl.uri)
	case pl.typ == "Chassis" && pp.typ == "Facility":
		r.one["Links.Facility"] = pp.uri
		add(pr, "Links.ContainsChassis", pl.uri)
	case pl.typ == "Facility" && pp.typ == "Facility":
		r.one["Links.ContainedByFacility"] = pp.uri
		add(pr, "Links.ContainsFacilities", pl.uri)
	case (pl.typ == "PowerDistribution" || pl.typ == "CoolingUnit") && pp.typ == "Chassis":
		add(r, "Links.Chassis", pp.uri)
	case (pl.typ == "PowerDistribution" || pl.typ == "CoolingUnit") && pp.typ == "Facility":
		r.one["Links.Facility"] = pp.uri
		add(pr, facilityLinks[pl.sub], pl.uri)
	case pl.typ == "CoolingLoop" && pp.typ == "Facility":
		r.one["Links.Facility"] = pp.uri
		add(pr, "Links.CoolingLoops", pl.uri)
	case pl.typ == "CoolingLoop" && pp.typ == "Chassis":
		r.one["Links.Chassis"] = pp.uri
	case pl.typ == "Manager" && pp.typ == "Chassis":
		r.one["Links.ManagerInChassis"] = pp.uri
		add(pr, "Links.ManagersInChassis", pl.uri)
	case pl.typ == "Processor" || pl.typ == "Switch":
		r.one["Links.Chassis"] = pp.uri
		if pl.typ == "Switch" {
			add(pr, "Links.Switches", pl.uri)
		}
	case pl.typ == "PowerSupply" || pl.typ == "Circuit" || pl.typ == "Pump" || pl.typ == "Memory" ||
		pl.typ == "NetworkAdapter" || pl.typ == "Drive":
		// its URI is below its container's
	default:
		r.one["Links.Oem.Seam.ContainedBy"] = pp.uri
	}
}

// managedBy links a managed element to its manager: Links.ManagedBy
// where both are what Redfish expects (with the manager's
// ManagerFor… back), else Links.Oem.Seam.ManagedBy.
func (x *exporter) managedBy(pl *place, r *res, mp *place) {
	if mp.typ != "Manager" || !managedTypes[pl.typ] {
		r.many["Links.Oem.Seam.ManagedBy"] = append(r.many["Links.Oem.Seam.ManagedBy"], mp.uri)
		return
	}
	r.many["Links.ManagedBy"] = append(r.many["Links.ManagedBy"], mp.uri)
	m := x.res[mp.uri]
	back := map[string]string{"Chassis": "Links.ManagerForChassis", "Switch": "Links.ManagerForSwitches", "Fabric": "Links.ManagerForFabrics"}[pl.typ]
	if back != "" {
		m.many[back] = append(m.many[back], pl.uri)
	}
	if pl.sys != "" {
		s := x.res[pl.sys]
		s.many["Links.ManagedBy"] = append(s.many["Links.ManagedBy"], mp.uri)
		m.many["Links.ManagerForServers"] = append(m.many["Links.ManagerForServers"], pl.sys)
	}
}
