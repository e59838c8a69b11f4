package redfish

import (
	"crypto/sha256"
	"fmt"
	"net"
	"net/url"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/seamdc/seam/internal/inventory"
)

// The OEM extension's types (FORMAT.md describes their properties).
const (
	oemElement = "#SeamInventory.v1_0_0.Element"
	oemSystem  = "#SeamInventory.v1_0_0.System"
	oemLinks   = "#SeamInventory.v1_0_0.Links"
)

// RedfishVersion is the protocol version the export claims, as DMTF's
// 2025.4 mockups do.
const RedfishVersion = "1.15.0"

// Export writes the graph as a Redfish service tree (FORMAT.md is the
// mapping). The tree is canonical: the same graph gives the same bytes,
// whatever order its elements were added in — sorted keys, members and
// links in natural order of their URIs, Ids from the elements' keys.
func Export(g *inventory.Graph) *Tree {
	x := &exporter{g: g, res: map[string]*res{}, colls: map[string]*coll{}, taken: map[string]bool{}}
	x.placer = placeAll(g)
	x.places, x.order = x.placer.places, x.placer.order
	x.root()
	for _, id := range x.order {
		x.docs(id)
	}
	for _, id := range x.order {
		x.element(id)
	}
	for _, id := range x.order {
		x.relations(id)
	}
	return x.encode()
}

type exporter struct {
	g      *inventory.Graph
	placer *placer
	places []*place
	order  []inventory.ID // elements by key
	res    map[string]*res
	colls  map[string]*coll
	taken  map[string]bool // firmware inventory Ids
}

// res is one document being written: plain properties, and links kept
// by their dotted path until the end, when they are sorted.
type res struct {
	props map[string]any
	one   map[string]string
	many  map[string][]string
}

type coll struct {
	typ, name string
	members   []string
}

func sortedByKey(g *inventory.Graph) []inventory.ID {
	order := make([]inventory.ID, g.Len())
	for i := range order {
		order[i] = inventory.ID(i)
	}
	slices.SortFunc(order, func(a, b inventory.ID) int { return naturalCompareTotal(g.El(a).Key, g.El(b).Key) })
	return order
}

// doc starts the document at uri.
func (x *exporter) doc(uri, typ, id, name string) *res {
	r := &res{props: map[string]any{"@odata.id": uri, "@odata.type": odataType[typ], "Id": id, "Name": name},
		one: map[string]string{}, many: map[string][]string{}}
	x.res[uri] = r
	return r
}

// collection makes sure the collection at uri exists, of members of
// typ, named name.
func (x *exporter) collection(uri, typ, name string) *coll {
	c := x.colls[uri]
	if c == nil {
		c = &coll{typ: typ, name: name}
		x.colls[uri] = c
	}
	return c
}

func (x *exporter) member(collURI, typ, name, uri string) {
	c := x.collection(collURI, typ, name)
	c.members = append(c.members, uri)
}

// root writes the service root and the top-level collections, which a
// client finds even when they are empty.
func (x *exporter) root() {
	site := ""
	if s := x.g.OfKind(inventory.KindSite); len(s) > 0 {
		site = x.g.El(s[0]).Key
	}
	r := x.doc(Root, "ServiceRoot", "RootService", "seam inventory: "+site)
	r.props["@odata.id"] = Root + "/"
	r.props["RedfishVersion"] = RedfishVersion
	r.props["Product"] = "seam inventory export"
	r.props["Vendor"] = "seam"
	r.props["UUID"] = uuidOf("seam redfish export " + site)
	for prop, uri := range map[string]string{"Chassis": chassisColl, "Systems": systemsColl, "Managers": managersColl,
		"Facilities": facilitiesColl, "Fabrics": fabricsColl, "PowerEquipment": powerEquipment,
		"ThermalEquipment": thermalEquip, "UpdateService": updateService} {
		r.one[prop] = uri
	}
	x.collection(chassisColl, "Chassis", "Chassis Collection")
	x.collection(systemsColl, "ComputerSystem", "Computer System Collection")
	x.collection(managersColl, "Manager", "Manager Collection")
	x.collection(facilitiesColl, "Facility", "Facility Collection")
	x.collection(fabricsColl, "Fabric", "Fabric Collection")
	pe := x.doc(powerEquipment, "PowerEquipment", "PowerEquipment", "Power Equipment")
	for prop, name := range map[string]string{"RackPDUs": "Rack PDU Collection", "PowerShelves": "Power Shelf Collection",
		"ElectricalBuses": "Electrical Bus Collection", "Switchgear": "Switchgear Collection"} {
		pe.one[prop] = powerEquipment + "/" + prop
		x.collection(powerEquipment+"/"+prop, "PowerDistribution", name)
	}
	te := x.doc(thermalEquip, "ThermalEquipment", "ThermalEquipment", "Thermal Equipment")
	te.one["CDUs"], te.one["CoolingLoops"] = cdusColl, loopsColl
	x.collection(cdusColl, "CoolingUnit", "CDU Collection")
	x.collection(loopsColl, "CoolingLoop", "Cooling Loop Collection")
	us := x.doc(updateService, "UpdateService", "UpdateService", "Update Service")
	us.one["FirmwareInventory"] = firmwareColl
	x.collection(firmwareColl, "SoftwareInventory", "Firmware Inventory Collection")
}

// uuidOf is a name-based UUID (the layout of RFC 9562 version 5, with
// SHA-256), stable for one site.
func uuidOf(name string) string {
	s := sha256.Sum256([]byte(name))
	s[6] = s[6]&0x0f | 0x50
	s[8] = s[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", s[0:4], s[4:6], s[6:8], s[8:10], s[10:16])
}

// parentCollection is the collection a URI is a member of.
func parentCollection(uri string) string { return uri[:strings.LastIndex(uri, "/")] }

// docs starts an element's documents: its resource, and its system or
// PowerDistribution when it has one.
func (x *exporter) docs(id inventory.ID) {
	pl, key := x.places[id], x.g.El(id).Key
	x.doc(pl.uri, pl.typ, pl.id, key)
	x.member(parentCollection(pl.uri), pl.typ, collectionNames[pl.typ], pl.uri)
	if pl.sys != "" {
		x.doc(pl.sys, "ComputerSystem", pl.id, key)
		x.member(systemsColl, "ComputerSystem", collectionNames["ComputerSystem"], pl.sys)
	}
	if pl.pd != "" {
		x.doc(pl.pd, "PowerDistribution", pl.id, key)
		x.member(pdCollections["PowerShelf"], "PowerDistribution", "Power Shelf Collection", pl.pd)
	}
}

// element writes an element's own properties.
func (x *exporter) element(id inventory.ID) {
	pl, e := x.places[id], x.g.El(id)
	r := x.res[pl.uri]
	if prop := subtypeProperty[pl.typ]; prop != "" && pl.sub != "" {
		r.props[prop] = pl.sub
	}
	oem := map[string]any{"@odata.type": oemElement, "Kind": e.Kind.String()}
	r.props["Oem"] = map[string]any{"Seam": oem}
	c := capsOf[pl.typ]
	put := func(ok bool, prop string, v any) {
		if ok {
			r.props[prop] = v
		} else {
			oem[prop] = v
		}
	}
	if idn := e.Identity; idn != nil {
		for _, f := range [...]struct {
			prop, v string
			ok      bool
		}{{"PartNumber", idn.PartNumber, c.ids}, {"SerialNumber", idn.Serial, c.ids}, {"AssetTag", idn.AssetTag, c.assetTag}, {"Model", idn.Model, c.ids}} {
			if f.v != "" {
				put(f.ok, f.prop, f.v)
			}
		}
		x.firmware(pl, e.Key, idn.Firmware)
	}
	if e.Slot != 0 {
		if c.location {
			r.props["Location"] = x.location(id, pl, e.Slot)
		} else {
			oem["Slot"] = e.Slot
		}
	}
	if e.HeightU != 0 {
		if c.height {
			r.props["HeightRackUnits"], r.props["RackUnits"] = e.HeightU, "EIA_310"
		} else {
			oem["HeightU"] = e.HeightU
		}
	}
	if e.Liquid {
		oem["Liquid"] = true
	}
	if e.Domain != "" {
		oem["ScaleUpDomain"] = e.Domain
	}
	x.address(r, pl, oem, e.BMCAddress)
	x.subordinate(id, pl, r)
	x.power(e, pl, r, oem)
	x.names(e, pl, oem)
}

// collectionNames name the collections of each type.
var collectionNames = map[string]string{
	"Chassis": "Chassis Collection", "ComputerSystem": "Computer System Collection", "Manager": "Manager Collection",
	"Facility": "Facility Collection", "Fabric": "Fabric Collection", "CoolingUnit": "CDU Collection",
	"CoolingLoop": "Cooling Loop Collection", "PowerSupply": "Power Supply Collection", "Circuit": "Feeder Circuit Collection",
	"Pump": "Pump Collection", "Processor": "Processor Collection", "Memory": "Memory Collection",
	"NetworkAdapter": "Network Adapter Collection", "Drive": "Drive Collection", "Switch": "Switch Collection",
	"PowerDistribution": "Power Distribution Collection", "SoftwareInventory": "Firmware Inventory Collection",
}

// subtypeProperty names the property that holds a place's sub.
var subtypeProperty = map[string]string{
	"Chassis": "ChassisType", "Facility": "FacilityType", "PowerDistribution": "EquipmentType", "CoolingUnit": "EquipmentType",
	"Processor": "ProcessorType", "Fabric": "FabricType", "Switch": "SwitchType", "Circuit": "CircuitType", "Manager": "ManagerType",
}

// location is a part's place in its container: the U slot of a tray (its
// lowest U), a PSU's bay, a processor's socket, a part's slot.
func (x *exporter) location(id inventory.ID, pl *place, slot int) map[string]any {
	kind := x.g.El(id).Kind
	typ, label := "Slot", fmt.Sprintf("Slot %d", slot)
	switch {
	case kind.IsTray():
		label = fmt.Sprintf("U%d", slot)
	case pl.typ == "PowerSupply":
		typ, label = "Bay", fmt.Sprintf("Bay %d", slot)
	case pl.typ == "Processor":
		typ, label = "Socket", fmt.Sprintf("Socket %d", slot)
	}
	loc := map[string]any{"PartLocation": map[string]any{"LocationOrdinalValue": slot, "LocationType": typ, "ServiceLabel": label}}
	if kind.IsTray() {
		placement := map[string]any{"RackOffset": slot, "RackOffsetUnits": "EIA_310"}
		if rack := x.g.Ancestor(id, inventory.KindRack); rack != inventory.None {
			placement["Rack"] = x.g.El(rack).Key
		}
		loc["Placement"] = placement
	}
	return loc
}

// address is where a BMC answers: the Manager's RemoteRedfishServiceUri
// (as the bladed mockup gives it) when the address is a host or
// host:port, else Oem.Seam.Address.
func (x *exporter) address(r *res, pl *place, oem map[string]any, addr string) {
	if addr == "" {
		return
	}
	if pl.typ == "Manager" {
		if u := serviceURI(addr); u != "" {
			r.props["RemoteRedfishServiceUri"] = u
			return
		}
	}
	oem["Address"] = addr
}

// serviceURI is https://addr/redfish/v1 when addressOf reads addr back
// from it, else "".
func serviceURI(addr string) string {
	host := addr
	if ip := net.ParseIP(addr); ip != nil && ip.To4() == nil {
		host = "[" + addr + "]"
	}
	u := "https://" + host + Root
	if addressOf(u) != addr {
		return ""
	}
	return u
}

// addressOf is the address in a service URI: its host (with the port,
// if any).
func addressOf(uri string) string {
	u, err := url.Parse(uri)
	if err != nil || u.Host == "" {
		return ""
	}
	if strings.HasPrefix(u.Host, "[") && strings.HasSuffix(u.Host, "]") {
		return u.Host[1 : len(u.Host)-1]
	}
	return u.Host
}

// subordinate writes what hangs below an element's resource: its
// system, a shelf's PowerDistribution, the collections its parts go to,
// and links it into its owner.
func (x *exporter) subordinate(id inventory.ID, pl *place, r *res) {
	if pl.sys != "" {
		s := x.res[pl.sys]
		s.props["SystemType"] = "Physical"
		s.many["Links.Chassis"] = []string{pl.uri}
		r.many["Links.ComputerSystems"] = []string{pl.sys}
	}
	if pl.pd != "" {
		v := x.res[pl.pd]
		v.props["EquipmentType"] = "PowerShelf"
		v.many["Links.Chassis"] = []string{pl.uri}
		v.one["PowerSupplies"] = pl.uri + subCollection["PowerSupply"]
		r.one["Links.PowerDistribution"] = pl.pd
		x.powerSubsystem(pl)
	}
	owner := pl.owner(x.placer, id)
	if owner == inventory.None {
		return
	}
	o := x.places[owner]
	ownerURI, ownerRes := o.uri, x.res[o.uri]
	switch pl.typ {
	case "PowerSupply":
		x.powerSubsystem(o)
		return
	case "Processor", "Memory":
		ownerURI, ownerRes = o.sys, x.res[o.sys]
	}
	prop := strings.TrimPrefix(subCollection[pl.typ], "/")
	ownerRes.one[prop] = ownerURI + subCollection[pl.typ]
}

// powerSubsystem makes sure a chassis has its PowerSubsystem and the
// collection of its power supplies.
func (x *exporter) powerSubsystem(pl *place) {
	uri := pl.uri + "/PowerSubsystem"
	if x.res[uri] != nil {
		return
	}
	ps := x.doc(uri, "PowerSubsystem", "PowerSubsystem", "Power Subsystem")
	ps.one["PowerSupplies"] = pl.uri + subCollection["PowerSupply"]
	x.collection(pl.uri+subCollection["PowerSupply"], "PowerSupply", collectionNames["PowerSupply"])
	x.res[pl.uri].one["PowerSubsystem"] = uri
}

// power is PowerW: a shelf's capacity in its PowerSubsystem, a rating or
// draw in the watt property its type has, else (and for the kinds that
// are a Chassis of type Other, whose watts mean different things)
// Oem.Seam.PowerW.
func (x *exporter) power(e *inventory.Element, pl *place, r *res, oem map[string]any) {
	if e.PowerW == 0 {
		return
	}
	switch {
	case pl.pd != "":
		x.res[pl.uri+"/PowerSubsystem"].props["CapacityWatts"] = e.PowerW
	case capsOf[pl.typ].power != "" && pl.sub != "Other":
		r.props[capsOf[pl.typ].power] = e.PowerW
	default:
		oem["PowerW"] = e.PowerW
	}
}

// names are a node's names: the Slurm name is its system's HostName,
// the Kubernetes and BMC names its Oem.Seam.
func (x *exporter) names(e *inventory.Element, pl *place, oem map[string]any) {
	n := e.Names
	if n == nil || *n == (inventory.NodeNames{}) {
		return
	}
	if pl.sys == "" {
		for prop, v := range map[string]string{"Slurm": n.Slurm, "Kubernetes": n.Kubernetes, "BMC": n.BMC} {
			if v != "" {
				oem[prop] = v
			}
		}
		return
	}
	s := x.res[pl.sys]
	if n.Slurm != "" {
		s.props["HostName"] = n.Slurm
	}
	if n.Kubernetes != "" || n.BMC != "" {
		so := map[string]any{"@odata.type": oemSystem}
		if n.Kubernetes != "" {
			so["Kubernetes"] = n.Kubernetes
		}
		if n.BMC != "" {
			so["BMC"] = n.BMC
		}
		s.props["Oem"] = map[string]any{"Seam": so}
	}
}

// firmware writes an element's firmware versions as SoftwareInventory
// in the UpdateService's FirmwareInventory, each related to the element.
func (x *exporter) firmware(pl *place, key string, fw map[string]string) {
	comps := make([]string, 0, len(fw))
	for c := range fw {
		comps = append(comps, c)
	}
	slices.Sort(comps)
	for _, c := range comps {
		want := pl.id + "-" + flatID(c)
		id := want
		for n := 2; x.taken[id]; n++ {
			id = fmt.Sprintf("%s~%d", want, n)
		}
		x.taken[id] = true
		uri := firmwareColl + "/" + id
		s := x.doc(uri, "SoftwareInventory", id, key+" "+c)
		s.props["SoftwareId"] = c
		s.props["Version"] = fw[c]
		s.many["RelatedItem"] = []string{pl.uri}
		x.member(firmwareColl, "SoftwareInventory", collectionNames["SoftwareInventory"], uri)
	}
}

// encode writes every document: collections' members and every link
// list in natural order of their URIs, no duplicates; keys sorted;
// four-space indents like DMTF's mockups.
func (x *exporter) encode() *Tree {
	for uri, c := range x.colls {
		r := x.doc(uri, "", "", c.name)
		delete(r.props, "Id")
		r.props["@odata.type"] = "#" + collectionType[c.typ] + "." + collectionType[c.typ]
		r.many["Members"] = c.members
		r.props["Members@odata.count"] = len(uniqueSorted(c.members))
	}
	uris := make([]string, 0, len(x.res))
	for u := range x.res {
		uris = append(uris, u)
	}
	out := make([][]byte, len(uris))
	var wg sync.WaitGroup
	work := make(chan int)
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for i := range work {
				out[i] = x.res[uris[i]].encode()
			}
		})
	}
	for i := range uris {
		work <- i
	}
	close(work)
	wg.Wait()
	t := NewTree()
	for i, u := range uris {
		t.Put(u, out[i], "")
	}
	return t
}

func (r *res) encode() []byte {
	doc := r.props
	for path, uri := range r.one {
		setPath(doc, path, ref(uri))
	}
	for path, uris := range r.many {
		list := []any{}
		for _, u := range uniqueSorted(uris) {
			list = append(list, ref(u))
		}
		setPath(doc, path, list)
	}
	if l, ok := doc["Links"].(map[string]any); ok {
		if o, ok := l["Oem"].(map[string]any); ok {
			o["Seam"].(map[string]any)["@odata.type"] = oemLinks
		}
	}
	return append(appendJSON(make([]byte, 0, 1024), doc, 0), '\n')
}

func ref(uri string) map[string]any { return map[string]any{"@odata.id": uri} }

// setPath sets a dotted path in nested maps.
func setPath(doc map[string]any, path string, v any) {
	parts := strings.Split(path, ".")
	for _, p := range parts[:len(parts)-1] {
		next, ok := doc[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			doc[p] = next
		}
		doc = next
	}
	doc[parts[len(parts)-1]] = v
}

func uniqueSorted(uris []string) []string {
	out := slices.Clone(uris)
	slices.SortFunc(out, func(a, b string) int { return naturalCompareTotal(a, b) })
	return slices.Compact(out)
}
