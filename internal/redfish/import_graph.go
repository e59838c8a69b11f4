package redfish

import (
	"fmt"
	"slices"
	"strings"

	"github.com/seamdc/seam/internal/inventory"
)

// container is the URI of the resource that holds n, by the link its
// type has for that (the first of them), or by its URI; "" for none.
func (im *importer) container(n *node) string {
	if u := first(refs(n.obj, "Links", "Oem", "Seam", "ContainedBy")); u != "" {
		return u
	}
	if n.owner != "" {
		return n.owner
	}
	l := object(n.obj, "Links")
	switch n.typ {
	case "Chassis":
		if u := first(refs(l, "ContainedBy")); u != "" {
			return u
		}
		return first(refs(l, "Facility"))
	case "Facility":
		return first(refs(l, "ContainedByFacility"))
	case "PowerDistribution", "CoolingUnit", "CoolingLoop":
		if u := first(refs(l, "Chassis")); u != "" {
			return u
		}
		return first(refs(l, "Facility"))
	case "Manager":
		return first(refs(l, "ManagerInChassis"))
	case "Processor", "Switch":
		if u := first(refs(l, "Chassis")); u != "" {
			return u
		}
	case "ComputerSystem", "Fabric", "SoftwareInventory":
		return ""
	}
	return im.uriOwner(n.uri)
}

// uriOwner is the nearest resource above uri in its path that is an
// element or a view of one (a power supply's chassis, a processor's
// system).
func (im *importer) uriOwner(uri string) string {
	for u := parentCollection(Clean(uri)); strings.HasPrefix(u, Root+"/"); u = parentCollection(u) {
		if n := im.nodes[u]; n != nil && n.el != nil {
			return u
		}
	}
	return ""
}

// node is the resource a link leads to: the embedded one of a fragment,
// else the document.
func (im *importer) node(u string) *node {
	if u = im.local(u); u == "" {
		return nil
	}
	if n := im.nodes[u]; n != nil {
		return n
	}
	base, _, _ := strings.Cut(u, "#")
	return im.nodes[Clean(base)]
}

// elementAt is the element a container link leads to, climbing through
// containers that are no elements.
func (im *importer) elementAt(u string) *elem {
	seen := map[*node]bool{}
	for u != "" {
		n := im.node(u)
		if n == nil || seen[n] {
			return nil
		}
		seen[n] = true
		if n.el != nil && !n.el.dead {
			return n.el
		}
		u = im.container(n)
	}
	return nil
}

// containsLists are the links by which a container lists what it holds.
var containsLists = map[string][]string{
	"Chassis": {"Contains", "ManagersInChassis"},
	"Facility": {"ContainsChassis", "ContainsFacilities", "RackPDUs", "FloorPDUs", "PowerShelves", "ElectricalBuses",
		"Switchgear", "TransferSwitches", "CDUs", "CoolingLoops"},
}

// parents gives every element its container: the one its resource
// names, else the one that lists it; two that disagree, and loops, are
// problems.
func (im *importer) parents() {
	listed := map[*elem][]*node{} // element → the containers that list it
	for _, n := range im.order {
		for _, prop := range containsLists[n.typ] {
			for _, u := range refs(n.obj, "Links", prop) {
				if c := im.node(u); c != nil && c.el != nil && !c.el.dead {
					listed[c.el] = append(listed[c.el], n)
				}
			}
		}
	}
	for _, el := range im.elems {
		if el.dead {
			continue
		}
		p := el.primary
		if u := im.container(p); u != "" {
			el.parent = im.elementAt(u)
		}
		for _, by := range listed[el] {
			lp := im.elementAt(by.uri)
			switch {
			case lp == nil || lp == el.parent:
			case el.parent == nil && im.container(p) == "":
				el.parent = lp
			default:
				im.problem(p.uri, "", "contained twice: its own links say %s, and %s lists it in its Links", im.uriOf(el.parent), by.uri)
			}
		}
		if el.parent == el {
			im.problem(p.uri, "", "a loop in Contains: it contains itself")
			el.parent = nil
		}
	}
	im.loops()
}

func (im *importer) uriOf(el *elem) string {
	if el == nil {
		return "nothing"
	}
	return el.primary.uri
}

// loops finds cycles of containers, reports each with its resources'
// URIs, and breaks it at its first element.
func (im *importer) loops() {
	const (
		unseen = iota
		onPath
		done
	)
	state := map[*elem]int{}
	for _, start := range im.elems {
		var path []*elem
		el := start
		for el != nil && state[el] == unseen {
			state[el] = onPath
			path = append(path, el)
			el = el.parent
		}
		if el != nil && state[el] == onPath {
			i := slices.Index(path, el)
			cycle := path[i:]
			var uris []string
			for _, c := range cycle {
				uris = append(uris, c.primary.uri)
			}
			im.problem(cycle[0].primary.uri, "", "a loop in Contains: %s → %s", strings.Join(uris, " → "), uris[0])
			cycle[len(cycle)-1].parent = nil
		}
		for _, p := range path {
			state[p] = done
		}
	}
}

// key is an element's key: its Name when it comes from a seam export,
// else its container's key and its Id.
func (im *importer) key(el *elem, keys map[*elem]string) string {
	if k, ok := keys[el]; ok {
		return k
	}
	p := el.primary
	k := ""
	if p.seam != nil && str(p.obj, "Name") != "" {
		k = str(p.obj, "Name")
	} else {
		k = str(p.obj, "Id")
		if k == "" {
			k = p.uri[strings.LastIndexAny(p.uri, "/#")+1:]
		}
		if p.owner != "" {
			k = "PowerSupply-" + or(str(p.obj, "MemberId"), k)
		}
		if el.parent != nil {
			k = im.key(el.parent, keys) + "/" + k
		}
	}
	keys[el] = k
	return k
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// graph adds the elements, containers before what they contain, each
// level in order of keys.
func (im *importer) graph() *inventory.Graph {
	keys := map[*elem]string{}
	byKey := map[string]*elem{}
	var roots []*elem
	for _, el := range im.elems {
		if el.dead {
			continue
		}
		k := im.key(el, keys)
		if prev := byKey[k]; prev != nil {
			if el.primary.seam != nil {
				im.problem(el.primary.uri, "/Name", "element %s is named twice: by %s and by %s", k, prev.primary.uri, el.primary.uri)
			}
			for n := 2; byKey[k] != nil; n++ {
				k = fmt.Sprintf("%s~%d", keys[el], n)
			}
			keys[el] = k
		}
		byKey[k] = el
		el.e.Key = k
		if el.parent == nil {
			roots = append(roots, el)
		} else {
			el.parent.kids = append(el.parent.kids, el)
		}
	}
	site := &inventory.Site{}
	for _, el := range roots {
		if el.kind == inventory.KindSite {
			site.Name = el.e.Key
		}
	}
	g := inventory.NewGraph(site, len(im.elems))
	byKeyOrder := func(a, b *elem) int { return naturalCompareTotal(a.e.Key, b.e.Key) }
	var add func(parent inventory.ID, els []*elem)
	add = func(parent inventory.ID, els []*elem) {
		slices.SortFunc(els, byKeyOrder)
		for _, el := range els {
			el.id, _ = g.Add(parent, el.e)
			add(el.id, el.kids)
		}
	}
	add(inventory.None, roots)
	return g
}

// relations links the elements: powered and cooled by what their links
// name, managed by, connected to; and the reverse links a manager or a
// power supply gives.
func (im *importer) relations(g *inventory.Graph) {
	for _, el := range im.elems {
		if el.dead {
			continue
		}
		for _, n := range el.all() {
			l := object(n.obj, "Links")
			seam := object(l, "Oem", "Seam")
			in := func(r inventory.Relation, uris []string) {
				for _, u := range uris {
					im.edge(g, r, im.target(n, r, u), el)
				}
			}
			out := func(r inventory.Relation, uris []string) {
				for _, u := range uris {
					im.edge(g, r, el, im.target(n, r, u))
				}
			}
			in(inventory.Powers, append(refs(l, "PoweredBy"), refs(seam, "PoweredBy")...))
			in(inventory.Cools, append(refs(l, "CooledBy"), refs(seam, "CooledBy")...))
			out(inventory.ManagedBy, append(refs(l, "ManagedBy"), refs(seam, "ManagedBy")...))
			out(inventory.Connects, refs(seam, "ConnectedTo"))
			switch n.typ {
			case "PowerSupply":
				out(inventory.Powers, refs(l, "PoweringChassis"))
			case "Manager":
				for _, prop := range []string{"ManagerForChassis", "ManagerForServers", "ManagerForSwitches", "ManagerForFabrics"} {
					in(inventory.ManagedBy, refs(l, prop))
				}
			}
		}
	}
}

// target is the element a relation's link leads to; a link to a
// resource that is no element (a fan) is counted in a note.
func (im *importer) target(from *node, r inventory.Relation, u string) *elem {
	n := im.node(u)
	if n == nil {
		return nil // a link to nowhere or to another service: reported already
	}
	if n.el == nil || n.el.dead {
		typ := n.typ
		if _, frag, ok := strings.Cut(u, "#"); ok && n.uri != u {
			typ = strings.TrimLeft(frag, "/")
			if i := strings.IndexByte(typ, '/'); i >= 0 {
				typ = typ[:i]
			}
		}
		im.oddly(from.uri, "", fmt.Sprintf("a %s link leads to %s, which seam has no kind for: not read", r, typ))
		return nil
	}
	return n.el
}

func (im *importer) edge(g *inventory.Graph, r inventory.Relation, from, to *elem) {
	if from == nil || to == nil || from == to {
		return
	}
	g.Link(r, from.id, to.id)
}

// firmware reads SoftwareInventory into its related elements' firmware
// (by SoftwareId, else Id), and a resource's own FirmwareVersion when
// the inventory has none for it.
func (im *importer) firmware(g *inventory.Graph) {
	for _, n := range im.order {
		if n.typ != "SoftwareInventory" {
			continue
		}
		comp, version := or(str(n.obj, "SoftwareId"), str(n.obj, "Id")), str(n.obj, "Version")
		for _, u := range refs(n.obj, "RelatedItem") {
			if t := im.node(u); t != nil && t.el != nil && !t.el.dead && version != "" {
				fw := im.fwOf(g, t.el)
				fw[comp] = version
			}
		}
	}
	for _, el := range im.elems {
		if el.dead || el.primary.seam != nil {
			continue
		}
		if v := str(el.primary.obj, "FirmwareVersion"); v != "" && (g.El(el.id).Identity == nil || len(g.El(el.id).Identity.Firmware) == 0) {
			im.fwOf(g, el)["firmware"] = v
		}
	}
}

func (im *importer) fwOf(g *inventory.Graph, el *elem) map[string]string {
	e := g.El(el.id)
	if e.Identity == nil {
		e.Identity = &inventory.Identity{}
	}
	if e.Identity.Firmware == nil {
		e.Identity.Firmware = map[string]string{}
	}
	return e.Identity.Firmware
}

// finish counts the graph and writes the aggregated notes.
func (im *importer) finish(g *inventory.Graph) {
	for i := range g.Len() {
		im.rep.Kinds[g.El(inventory.ID(i)).Kind.String()]++
	}
	for _, r := range []inventory.Relation{inventory.Contains, inventory.Powers, inventory.Cools, inventory.Connects, inventory.ManagedBy} {
		if n := g.Edges(r); n > 0 {
			im.rep.Relations[r.String()] = n
		}
	}
	msgs := make([]string, 0, len(im.odd))
	for m := range im.odd {
		msgs = append(msgs, m)
	}
	slices.Sort(msgs)
	for _, m := range msgs {
		o := im.odd[m]
		if o.n > 1 {
			m = fmt.Sprintf("%s (%d times; the first here)", m, o.n)
		}
		im.note(o.uri, o.at, "%s", m)
	}
}
