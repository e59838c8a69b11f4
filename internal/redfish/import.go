package redfish

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/seamdc/seam/internal/inventory"
)

// Import reads a Redfish tree as a graph: seam's own export (whose
// Oem.Seam names every element's kind, and whose Name is its key) back
// into the graph it came from, and any other service — DMTF's mockups, a
// BMC — as what it finds of seam's kinds: chassis, systems, managers,
// power supplies, power distribution, CDUs and loops, processors,
// memory, network adapters, drives, switches, fabrics, firmware. The
// report counts what was read and made, and lists every problem (a
// document that does not parse or is not an object, a member that is not
// an object, a link to nowhere, a loop in Contains, an element contained
// twice) with the URI and the file it was read from. Import does not
// stop at a problem: the graph holds what could be read.
func Import(t *Tree, source string) (*inventory.Graph, *Report) {
	im := &importer{t: t, rep: newReport(), nodes: map[string]*node{}, odd: map[string]*oddity{}}
	im.rep.Source, im.rep.Resources = source, t.Len()
	im.parse()
	im.checkLinks()
	im.legacyPower()
	im.classify()
	im.fields()
	im.parents()
	g := im.graph()
	im.relations(g)
	im.firmware(g)
	g.Seal()
	im.finish(g)
	return g, im.rep
}

// node is one resource of the tree: a document, or an object embedded in
// one (a legacy Power resource's power supplies).
type node struct {
	uri   string // with a #fragment for an embedded resource
	typ   string // Redfish type
	obj   map[string]any
	file  string
	seam  map[string]any // its Oem.Seam
	owner string         // an embedded resource's document's owner
	el    *elem          // the element it is, or is a view of
}

// elem is an element being read: its resource, other views of the same
// thing (a chassis's system), and what it is.
type elem struct {
	primary *node
	views   []*node
	kind    inventory.Kind
	dead    bool // no seam kind: not an element
	e       inventory.Element
	fw      map[string]string
	parent  *elem
	kids    []*elem
	id      inventory.ID
}

func (el *elem) all() []*node { return append([]*node{el.primary}, el.views...) }

type importer struct {
	t     *Tree
	rep   *Report
	nodes map[string]*node
	order []*node // documents and embedded resources, by URI
	elems []*elem
	odd   map[string]*oddity // aggregated notes
}

type oddity struct {
	n   int
	uri string
	at  string
}

func (im *importer) problem(uri, at, format string, args ...any) {
	im.rep.Problems = append(im.rep.Problems, Problem{URI: uri, File: im.file(uri), At: at, Msg: fmt.Sprintf(format, args...)})
}

func (im *importer) note(uri, at, format string, args ...any) {
	im.rep.Notes = append(im.rep.Notes, Problem{URI: uri, File: im.file(uri), At: at, Msg: fmt.Sprintf(format, args...)})
}

// oddly counts a note that may repeat many times; finish writes it once,
// with its count and its first place.
func (im *importer) oddly(uri, at, msg string) {
	if o := im.odd[msg]; o != nil {
		o.n++
		return
	}
	im.odd[msg] = &oddity{n: 1, uri: uri, at: at}
}

func (im *importer) file(uri string) string {
	base, _, _ := strings.Cut(uri, "#")
	if f := im.t.File(base); f != base {
		return f
	}
	return ""
}

// parse decodes every document, in parallel, and keeps the objects.
func (im *importer) parse() {
	uris := im.t.URIs()
	type parsed struct {
		v         any
		line, col int
		err       error
	}
	out := make([]parsed, len(uris))
	var wg sync.WaitGroup
	next := make(chan int)
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for i := range next {
				v, line, col, err := decode(im.t.docs[uris[i]])
				out[i] = parsed{v, line, col, err}
			}
		})
	}
	for i := range uris {
		next <- i
	}
	close(next)
	wg.Wait()
	for i, u := range uris {
		p := out[i]
		if p.err != nil {
			pr := Problem{URI: u, File: im.file(u), Msg: p.err.Error()}
			if pr.File == "" {
				pr.File = u
			}
			if p.line > 0 {
				pr.File += fmt.Sprintf(":%d:%d", p.line, p.col)
			}
			im.rep.Problems = append(im.rep.Problems, pr)
			continue
		}
		o, ok := p.v.(map[string]any)
		if !ok {
			im.problem(u, "", "the document is %s, not a JSON object", jsonKind(p.v))
			continue
		}
		typ := typeName(str(o, "@odata.type"))
		if typ == "" {
			im.note(u, "", "no @odata.type: not a Redfish resource, skipped")
			continue
		}
		if id, ok := o["@odata.id"].(string); ok && Clean(id) != u {
			im.note(u, "/@odata.id", "its @odata.id is %s: read as the resource at %s", id, u)
		}
		n := &node{uri: u, typ: typ, obj: o, file: im.file(u), seam: object(o, "Oem", "Seam")}
		im.nodes[u] = n
		im.order = append(im.order, n)
		im.rep.Types[typ]++
	}
}

func jsonKind(v any) string {
	switch v.(type) {
	case []any:
		return "an array"
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

// checkLinks checks that every link leads to a resource of the tree (or
// into one, with a fragment), and that collections' members are
// references.
func (im *importer) checkLinks() {
	for _, n := range im.order {
		im.members(n)
		visitRefs(n.obj, "", func(ptr string, ref any) { im.checkLink(n, ptr, ref) })
	}
}

func (im *importer) members(n *node) {
	m, ok := n.obj["Members"]
	if !ok {
		return
	}
	list, ok := m.([]any)
	if !ok {
		im.problem(n.uri, "/Members", "Members is %s, not an array", jsonKind(m))
		return
	}
	seen := map[string]bool{}
	for i, x := range list {
		o, ok := x.(map[string]any)
		if !ok {
			im.problem(n.uri, fmt.Sprintf("/Members/%d", i), "member %d is %s, not an object", i, jsonKind(x))
			continue
		}
		u, ok := o["@odata.id"].(string)
		if !ok {
			im.problem(n.uri, fmt.Sprintf("/Members/%d", i), "member %d has no @odata.id", i)
			continue
		}
		if seen[Clean(u)] {
			im.note(n.uri, fmt.Sprintf("/Members/%d", i), "lists %s twice", u)
		}
		seen[Clean(u)] = true
	}
	if c, ok := integer(n.obj, "Members@odata.count"); ok && int(c) != len(list) {
		im.note(n.uri, "/Members@odata.count", "Members@odata.count is %d, but it lists %d", c, len(list))
	}
}

// local is a link as a URI of the tree: a service's absolute links to
// itself are made relative; "" for a link to another service.
func (im *importer) local(u string) string {
	if im.t.origin != "" && strings.HasPrefix(u, im.t.origin+"/") {
		return u[len(im.t.origin):]
	}
	if strings.Contains(u, "://") {
		return ""
	}
	return u
}

func (im *importer) checkLink(n *node, ptr string, ref any) {
	s, ok := ref.(string)
	if !ok {
		im.problem(n.uri, ptr, "@odata.id is %s, not a string", jsonKind(ref))
		return
	}
	u := im.local(s)
	if u == "" {
		im.note(n.uri, ptr, "links to another service: %s (not read)", s)
		return
	}
	base, frag, _ := strings.Cut(u, "#")
	base = Clean(base)
	if base == "" || !strings.HasPrefix(base, "/") {
		im.problem(n.uri, ptr, "link to nowhere: %q is not a URI of this service", s)
		return
	}
	if _, ok := im.t.docs[base]; !ok {
		why := "no resource has that URI"
		if g, ok := im.t.gone[base]; ok {
			why = "GET " + base + ": " + g
		}
		im.problem(n.uri, ptr, "link to nowhere: %s (%s)", s, why)
		return
	}
	if t := im.nodes[base]; t != nil && frag != "" {
		if _, ok := pointer(t.obj, frag); !ok {
			im.problem(n.uri, ptr, "link to nowhere: %s (%s has nothing at #%s)", s, base, frag)
		}
	}
}

// legacyPower reads the power supplies of deprecated Power resources as
// resources of their own, for a chassis that has no PowerSubsystem.
func (im *importer) legacyPower() {
	for _, n := range slices.Clone(im.order) {
		if n.typ != "Power" {
			continue
		}
		owner := parentCollection(n.uri)
		if c := im.nodes[owner]; c != nil && len(refs(c.obj, "PowerSubsystem")) > 0 {
			im.note(n.uri, "/PowerSupplies", "deprecated Power resource: its power supplies are not read, %s has a PowerSubsystem", owner)
			continue
		}
		list, _ := n.obj["PowerSupplies"].([]any)
		for i, x := range list {
			o, ok := x.(map[string]any)
			if !ok {
				continue
			}
			u := str(o, "@odata.id")
			if u == "" || im.nodes[u] != nil {
				u = fmt.Sprintf("%s#/PowerSupplies/%d", n.uri, i)
			}
			e := &node{uri: u, typ: "PowerSupply", obj: o, file: n.file, owner: owner}
			im.nodes[u] = e
			im.order = append(im.order, e)
			im.rep.Types["PowerSupply"]++
		}
	}
	slices.SortFunc(im.order, func(a, b *node) int { return strings.Compare(a.uri, b.uri) })
}

// elementTypes are the Redfish types that are elements of their own.
var elementTypes = map[string]bool{"Chassis": true, "Facility": true, "Manager": true, "PowerSupply": true, "CoolingLoop": true,
	"Pump": true, "Memory": true, "NetworkAdapter": true, "Drive": true, "Switch": true, "Fabric": true}

// classify makes elements of resources, and views of a chassis's other
// resources: its system, its power shelf (when it links back to it), its
// CDU (likewise); then it decides each element's kind.
func (im *importer) classify() {
	newElem := func(n *node) {
		el := &elem{primary: n}
		n.el = el
		im.elems = append(im.elems, el)
	}
	var later []*node
	for _, n := range im.order {
		switch {
		case elementTypes[n.typ]:
			newElem(n)
		case n.typ == "ComputerSystem" || n.typ == "PowerDistribution" || n.typ == "CoolingUnit":
			later = append(later, n)
		case n.typ == "Circuit" && (str(n.obj, "CircuitType") == "Feeder" || n.seam != nil):
			newElem(n)
		case n.typ == "Processor" && (processorKinds[str(n.obj, "ProcessorType")] != 0 || n.seam != nil):
			newElem(n)
		case !structural(n.typ):
			im.rep.Ignored[n.typ]++
		}
	}
	for _, n := range later {
		c := im.nodes[Clean(first(refs(n.obj, "Links", "Chassis")))]
		view := c != nil && c.typ == "Chassis" && c.el != nil
		switch n.typ {
		case "PowerDistribution":
			view = view && Clean(first(refs(c.obj, "Links", "PowerDistribution"))) == n.uri
		case "CoolingUnit":
			view = view && slices.ContainsFunc(refs(c.obj, "Links", "CoolingUnits"), func(u string) bool { return Clean(u) == n.uri })
		}
		if view {
			n.el = c.el
			c.el.views = append(c.el.views, n)
		} else {
			newElem(n)
		}
	}
	for _, el := range im.elems {
		im.kindOf(el)
	}
}

// structural types are read for what they lead to, or hold, not as
// elements.
func structural(typ string) bool {
	switch typ {
	case "ServiceRoot", "PowerSubsystem", "PowerEquipment", "ThermalEquipment", "UpdateService", "Power", "SoftwareInventory":
		return true
	}
	return strings.HasSuffix(typ, "Collection")
}

var processorKinds = map[string]inventory.Kind{"CPU": inventory.KindCPU, "GPU": inventory.KindGPU, "Accelerator": inventory.KindGPU}

// kindOf is an element's kind: its Oem.Seam.Kind, else what its
// resources say.
func (im *importer) kindOf(el *elem) {
	p := el.primary
	if k := str(p.seam, "Kind"); k != "" {
		if kind, ok := inventory.KindOf(k); ok {
			el.kind = kind
			return
		}
		im.problem(p.uri, "/Oem/Seam/Kind", "Oem.Seam.Kind %q is not a kind of seam's inventory", k)
	}
	var ok bool
	if el.kind, ok = im.infer(el); !ok {
		el.dead = true
		what := p.typ
		if t := str(p.obj, "ChassisType"); t != "" {
			what = "a " + t + " chassis"
		} else if t := str(p.obj, "EquipmentType"); t != "" {
			what = "a " + t
		}
		im.note(p.uri, "", "%s with no system, power shelf or CDU: not an element (what it holds goes to its container)", what)
	}
}

func (im *importer) infer(el *elem) (inventory.Kind, bool) {
	p := el.primary
	for _, v := range el.views {
		switch v.typ {
		case "ComputerSystem":
			return inventory.KindCompute, true
		case "PowerDistribution":
			return inventory.KindPowerShelf, true
		case "CoolingUnit":
			return inventory.KindCDU, true
		}
	}
	switch p.typ {
	case "Chassis":
		switch str(p.obj, "ChassisType") {
		case "Rack", "Enclosure":
			return inventory.KindRack, true
		case "RackGroup", "Row", "Pod":
			return inventory.KindModule, true
		case "Shelf":
			return inventory.KindPowerShelf, true
		}
		return 0, false
	case "Facility":
		if str(p.obj, "FacilityType") == "Site" {
			return inventory.KindSite, true
		}
		return inventory.KindModule, true
	case "ComputerSystem":
		return inventory.KindCompute, true
	case "Manager":
		return inventory.KindBMC, true
	case "PowerSupply":
		return inventory.KindPSU, true
	case "PowerDistribution":
		k, ok := map[string]inventory.Kind{"Bus": inventory.KindBusbar, "RackPDU": inventory.KindPDU, "FloorPDU": inventory.KindPDU,
			"Switchgear": inventory.KindBlock, "PowerShelf": inventory.KindPowerShelf, "BatteryShelf": inventory.KindUPS}[str(p.obj, "EquipmentType")]
		return k, ok
	case "Circuit":
		return inventory.KindFeed, true
	case "CoolingLoop":
		return inventory.KindLoop, true
	case "CoolingUnit":
		return inventory.KindCDU, true
	case "Pump":
		return inventory.KindPump, true
	case "Processor":
		k, ok := processorKinds[str(p.obj, "ProcessorType")]
		return k, ok
	case "Memory":
		return inventory.KindMemory, true
	case "NetworkAdapter":
		return inventory.KindNIC, true
	case "Drive":
		return inventory.KindDrive, true
	case "Switch":
		return inventory.KindASIC, true
	case "Fabric":
		if str(p.obj, "FabricType") == "NVLink" {
			return inventory.KindScaleUpDomain, true
		}
		return inventory.KindNetwork, true
	}
	return 0, false
}

// fields reads an element's own properties: identity, location, size,
// power, names, address, and seam's extensions.
func (im *importer) fields() {
	for _, el := range im.elems {
		if el.dead {
			continue
		}
		p, seam := el.primary.obj, el.primary.seam
		e := &el.e
		e.Kind = el.kind
		var idn inventory.Identity
		for _, f := range []struct {
			prop string
			to   *string
		}{{"PartNumber", &idn.PartNumber}, {"SerialNumber", &idn.Serial}, {"AssetTag", &idn.AssetTag}, {"Model", &idn.Model}} {
			for _, n := range el.all() {
				if *f.to == "" {
					*f.to = str(n.obj, f.prop)
				}
			}
			if v := str(seam, f.prop); v != "" {
				*f.to = v
			}
		}
		if idn.PartNumber != "" || idn.Serial != "" || idn.AssetTag != "" || idn.Model != "" {
			e.Identity = &idn
		}
		e.Slot = int(im.intOf(p, seam, "Slot", []string{"Location", "PartLocation", "LocationOrdinalValue"}, []string{"Location", "Placement", "RackOffset"}))
		e.HeightU = int(im.intOf(p, seam, "HeightU", []string{"HeightRackUnits"}))
		e.PowerW = im.power(el)
		e.Liquid, _ = seam["Liquid"].(bool)
		e.Domain = str(seam, "ScaleUpDomain")
		if el.primary.typ == "Manager" {
			e.BMCAddress = addressOf(str(p, "RemoteRedfishServiceUri"))
		}
		if a := str(seam, "Address"); a != "" {
			e.BMCAddress = a
		}
		e.Names = names(el)
	}
}

// intOf is the first whole number at the paths, or Oem.Seam's oem.
func (im *importer) intOf(p, seam map[string]any, oem string, paths ...[]string) int64 {
	if v, ok := integer(seam, oem); ok {
		return v
	}
	for _, path := range paths {
		if v, ok := integer(p, path...); ok {
			return v
		}
	}
	return 0
}

// power is PowerW: Oem.Seam.PowerW, a power shelf's PowerSubsystem
// capacity, or the watt property of the resource's type.
func (im *importer) power(el *elem) int64 {
	p := el.primary
	if v, ok := integer(p.seam, "PowerW"); ok {
		return v
	}
	if el.kind == inventory.KindPowerShelf && p.typ == "Chassis" {
		ps := im.nodes[Clean(first(refs(p.obj, "PowerSubsystem")))]
		if ps != nil && ps.typ != "PowerSubsystem" {
			im.note(p.uri, "/PowerSubsystem", "PowerSubsystem links to %s, a %s: read %s instead", ps.uri, ps.typ, p.uri+"/PowerSubsystem")
			ps = nil
		}
		if ps == nil {
			ps = im.nodes[p.uri+"/PowerSubsystem"]
		}
		if ps != nil {
			v, _ := integer(ps.obj, "CapacityWatts")
			return v
		}
		return 0
	}
	if prop := capsOf[p.typ].power; prop != "" && str(p.obj, "ChassisType") != "Other" {
		v, _ := integer(p.obj, prop)
		return v
	}
	return 0
}

// names are a node's names: its system's HostName (Slurm) and Oem.Seam,
// or its own Oem.Seam.
func names(el *elem) *inventory.NodeNames {
	var n inventory.NodeNames
	for _, r := range el.all() {
		if r.typ == "ComputerSystem" && n.Slurm == "" {
			n.Slurm = str(r.obj, "HostName")
		}
		for prop, to := range map[string]*string{"Slurm": &n.Slurm, "Kubernetes": &n.Kubernetes, "BMC": &n.BMC} {
			if v := str(r.seam, prop); v != "" {
				*to = v
			}
		}
	}
	if n == (inventory.NodeNames{}) {
		return nil
	}
	return &n
}
