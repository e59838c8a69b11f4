package inventory

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/seamdc/seam/internal/diag"
)

// Build joins the site contract and its handover inventories into one
// graph. Problems joining them (a record naming a rack that does not
// exist, a tray where the design has none) are diagnostics; the checks
// of the joined graph are Check's.
func Build(site *Site, handovers ...*Handover) (*Graph, diag.List) {
	elements, keyed := estimate(site)
	b := &builder{g: newGraph(site, elements, keyed), asBuilt: map[*Rack]*RackRecord{}, names: map[*Rack][]*NodeRecord{}, cdus: map[ID][]ID{},
		partial: map[*Handover]bool{}, pdus: map[string]ID{}, tors: map[int]ID{}, mgmts: map[int]ID{},
		design: map[int]*TrayDesign{}, bySlot: map[int]*TrayRecord{}}
	b.join(handovers)
	b.site()
	b.g.seal()
	return b.g, b.diags
}

type builder struct {
	g       *Graph
	diags   diag.List
	asBuilt map[*Rack]*RackRecord   // the per-rack form
	names   map[*Rack][]*NodeRecord // the design brief's form, sorted by node
	cdus    map[ID][]ID             // a loop's CDUs, while the graph is built
	partial map[*Handover]bool      // files with records that did not join
	// identities is the block parts' identities are allocated from
	identities []Identity
	// ports: the cable in each port of the rack being built's switches,
	// by switch slot and port (as built); one map, cleared per rack
	ports map[[2]int]cableEnd
	// the maps of the rack being built (rackBuild's, and traysBySlot's
	// design by slot): one set, cleared per rack, as a site has thousands
	pdus        map[string]ID
	tors, mgmts map[int]ID
	design      map[int]*TrayDesign
	bySlot      map[int]*TrayRecord
}

// complete reports whether every record of the files recs come from
// was read and joined: only then do counts over them mean anything.
func (b *builder) complete(recs []*NodeRecord) bool {
	for _, rec := range recs {
		if h := rec.h; h != nil && (h.partial || b.partial[h]) {
			return false
		}
	}
	return true
}

// checkNames reports a rack whose brief records are not one per node.
func (b *builder) checkNames(r *Rack, rb *rackBuild, nodes int, want string) {
	if len(rb.names) == 0 || len(rb.names) == nodes || !b.complete(rb.names) {
		return
	}
	first, last := rb.names[0].Node, rb.names[len(rb.names)-1].Node
	b.diags.Errorf(RuleCounts, rb.names[0].Pos, "", "rack %s: the handover lists %d nodes in it (%s … %s), but %s",
		r.ID, len(rb.names), first, last, want).Hint = "one record per node: add or remove records, or fix their rack"
}

// estimate is how many elements the site will have, and how many of
// them are not parts (which the key index takes), to size the graph.
func estimate(site *Site) (elements, keyed int) {
	n, parts := 16, 0
	for _, m := range site.Modules {
		for _, r := range m.Racks {
			n += 8
			if d := r.DesignOf; d != nil {
				for _, t := range d.Trays {
					n += t.Count()
					parts += t.Count() * t.PSUs
					for _, p := range t.Parts {
						parts += t.Count() * p.Count
					}
				}
			} else {
				n += r.Nodes
			}
		}
	}
	return n + parts, n
}

func (b *builder) site() {
	g, s := b.g, b.g.Site
	root, _ := g.add(None, Element{Key: s.Name, Kind: KindSite, Pos: s.Pos})
	for _, sh := range s.Shared {
		g.add(root, Element{Key: "shared/" + sh.ID, Kind: KindShared, Pos: sh.Pos})
	}
	// facility modules first: racks link to their feeds and loops
	for _, m := range s.Modules {
		if m.Kind != "it" {
			b.module(root, m)
		}
	}
	for _, m := range s.Modules {
		if m.Kind == "it" {
			b.module(root, m)
		}
	}
	for _, lb := range s.LoadBanks {
		id, _ := g.add(root, Element{Key: lb.ID, Kind: KindLoadBank, PowerW: Watts(lb.Rating), Pos: lb.Pos})
		if m, ok := g.Lookup(lb.Module.To); ok {
			g.link(Connects, id, m)
		}
	}
}

func (b *builder) module(root ID, m *Module) {
	g := b.g
	mid, _ := g.add(root, Element{Key: m.ID, Kind: KindModule, Pos: m.Pos})
	for _, bl := range m.Blocks {
		bid, _ := g.add(mid, Element{Key: bl.ID, Kind: KindBlock, PowerW: Watts(bl.Rating), Pos: bl.Pos})
		for _, f := range bl.Feeds {
			fid, _ := g.add(bid, Element{Key: f.ID, Kind: KindFeed, Pos: f.Pos})
			g.link(Powers, bid, fid)
			if f.UPS != nil {
				g.add(fid, Element{Key: f.ID + "/ups", Kind: KindUPS, PowerW: Watts(f.UPS.Rating), Pos: f.UPS.Pos})
			}
		}
	}
	for _, l := range m.Loops {
		lid, _ := g.add(mid, Element{Key: l.ID, Kind: KindLoop, Pos: l.Pos})
		for _, c := range l.CDUs {
			cid, _ := g.add(lid, Element{Key: c.ID, Kind: KindCDU, PowerW: Watts(c.Capacity), Pos: c.Pos})
			g.link(Cools, lid, cid)
			b.cdus[lid] = append(b.cdus[lid], cid)
			for _, p := range c.Pumps {
				g.add(cid, Element{Key: p.ID, Kind: KindPump, Pos: p.Pos})
			}
		}
	}
	for _, n := range m.Networks {
		g.add(mid, Element{Key: n.ID, Kind: KindNetwork, Pos: n.Pos})
	}
	domains := map[string]ID{} // rack id → its declared domain
	for _, d := range m.ScaleUp {
		did, _ := g.add(mid, Element{Key: m.ID + "/scale-up/" + strings.TrimPrefix(d.ID, m.ID+"/"), Kind: KindScaleUpDomain, Pos: d.Pos})
		for _, r := range d.Racks {
			if !strings.Contains(r.To, "/") {
				domains[m.ID+"/"+r.To] = did
			}
		}
	}
	for _, r := range m.Racks {
		b.rack(mid, m, r, domains)
	}
}

// trayKinds maps tray kinds to element kinds.
var trayKinds = map[string]Kind{Compute: KindCompute, ScaleUpSwitch: KindScaleUpSwitch, PowerShelf: KindPowerShelf,
	TorSwitch: KindTorSwitch, ManagementSwitch: KindManagementSwitch}

var partKinds = map[string]Kind{GPU: KindGPU, CPU: KindCPU, NIC: KindNIC, DPU: KindDPU, BMC: KindBMC, ASIC: KindASIC, Drive: KindDrive, Memory: KindMemory}

// rackBuild is what one rack's trays share while they are added. Its
// maps are the builder's, cleared for each rack.
type rackBuild struct {
	id, busbar, manifold, domain ID
	pdus                         map[string]ID // by PDU name
	tors, mgmts                  map[int]ID    // switches by slot
	rec                          *RackRecord
	bySlot                       map[int]*TrayRecord
	names                        []*NodeRecord
	node                         int // compute trays added
}

// cableEnd is what a switch port's cable comes from, for a message.
type cableEnd struct {
	what string // "the BMC of", "the data NICs of"
	rec  *TrayRecord
}

func (b *builder) rack(mid ID, m *Module, r *Rack, domains map[string]ID) {
	g := b.g
	clear(b.pdus)
	clear(b.tors)
	clear(b.mgmts)
	rb := &rackBuild{busbar: None, manifold: None, pdus: b.pdus, tors: b.tors, mgmts: b.mgmts,
		rec: b.asBuilt[r], names: b.names[r]}
	clear(b.ports)
	e := Element{Key: r.ID, Kind: KindRack, PowerW: Watts(r.DesignPower), Pos: r.Pos}
	if rb.rec != nil {
		e.Identity = identity(rb.rec.PartNumber, rb.rec.Serial, rb.rec.AssetTag, "", nil)
	}
	if rb.rec != nil && rb.rec.Reserved {
		e.Reserved = true
	}
	rb.id, _ = g.add(mid, e)
	defer b.spares(r, rb)
	for _, p := range r.PDUs {
		pid, _ := g.add(rb.id, Element{Key: p.ID, Kind: KindPDU, Pos: p.Pos})
		rb.pdus[strings.TrimPrefix(p.ID, r.ID+"/")] = pid
		if f, ok := g.Lookup(p.Feed.To); ok {
			g.link(Powers, f, pid)
		}
	}
	if e.Reserved {
		return // a reserved position holds nothing: no trays, no nodes
	}
	rb.domain = None
	if d, ok := domains[r.ID]; ok {
		rb.domain = d
	}
	d := r.DesignOf
	if d == nil {
		if rb.rec != nil && slices.ContainsFunc(rb.rec.Trays, func(t *TrayRecord) bool { return !t.Spare }) && r.Design.To == "" {
			// the rack's path: a design that is there but broken is a schema
			// error, and vet drops this finding as its cascade
			b.diags.Errorf(RuleAsBuilt, rb.rec.Pos, r.Path, "rack %s lists %d trays, but the contract's rack %s names no rack design: its trays are not checked",
				rb.rec.Name, len(rb.rec.Trays), r.ID).Hint = `give the rack its design in the contract (design: "…"), or leave the trays out of the handover`
		}
		b.countedRack(r, rb)
		return
	}
	if d.Count(PowerShelf) > 0 {
		rb.busbar, _ = g.add(rb.id, Element{Key: r.ID + "/busbar", Kind: KindBusbar, PowerW: d.DrawW(), Pos: d.Pos})
	}
	if slices.ContainsFunc(d.Trays, func(t *TrayDesign) bool { return t.Liquid }) {
		rb.manifold, _ = g.add(rb.id, Element{Key: r.ID + "/manifold", Kind: KindManifold, Pos: r.Pos})
		if loop, ok := g.Lookup(r.CooledBy.To); ok {
			for _, cdu := range b.cdus[loop] {
				g.link(Cools, cdu, rb.manifold)
			}
		}
	}
	if rb.domain == None && d.Count(ScaleUpSwitch) > 0 {
		rb.domain, _ = g.add(rb.id, Element{Key: r.ID + "/scale-up", Kind: KindScaleUpDomain, Pos: d.Pos})
	}
	if rb.rec != nil {
		rb.bySlot = b.traysBySlot(r, d, rb.rec)
	}
	// switches first, so that trays can be cabled to them
	order := slices.Clone(d.Trays)
	slices.SortStableFunc(order, func(a, c *TrayDesign) int { return b2i(!isSwitch(a.Kind)) - b2i(!isSwitch(c.Kind)) })
	for _, t := range order {
		for i, slot := range t.Slots {
			b.tray(r, rb, t, i, slot)
		}
	}
	b.checkNames(r, rb, rb.node, fmt.Sprintf("its design %s has %d compute trays", d.Name, rb.node))
}

// spares adds the spare trays a rack's record lists: on the shelf, in
// no slot, linked to nothing (no node, no design draw), keyed by their
// kind: ma/r01/spare-compute-01.
func (b *builder) spares(r *Rack, rb *rackBuild) {
	if rb.rec == nil {
		return
	}
	n := map[string]int{}
	for _, t := range rb.rec.Trays {
		if !t.Spare {
			continue
		}
		n[t.Kind]++
		model := ""
		if d := r.DesignOf; d != nil {
			for _, td := range d.Trays {
				if td.Kind == t.Kind && td.Model != "" {
					model = td.Model
					break
				}
			}
		}
		b.g.add(rb.id, Element{Key: fmt.Sprintf("%s/spare-%s-%02d", r.ID, t.Kind, n[t.Kind]), Kind: KindSpare,
			Identity: identity(t.PartNumber, t.Serial, t.AssetTag, model, t.Firmware), Pos: t.Pos})
	}
}

// twoDigits is n (from 1) as fmt's %02d writes it.
func twoDigits(n int) string {
	if n < 10 {
		return "0" + strconv.Itoa(n)
	}
	return strconv.Itoa(n)
}

func isSwitch(kind string) bool { return kind == TorSwitch || kind == ManagementSwitch }

func b2i(v bool) int {
	if v {
		return 1
	}
	return 0
}

// countedRack is a rack known by its node count only: its nodes draw
// from its PDUs directly.
func (b *builder) countedRack(r *Rack, rb *rackBuild) {
	g := b.g
	n := max(r.Nodes, len(r.NodeIDs))
	if r.Nodes > 0 {
		b.checkNames(r, rb, n, fmt.Sprintf("the contract gives it %d nodes", n))
	}
	for i := 0; i < n; i++ {
		key := fmt.Sprintf("%s/node-%02d", r.ID, i+1)
		if i < len(r.NodeIDs) {
			key = r.ID + "/" + r.NodeIDs[i]
		}
		e := Element{Key: key, Kind: KindCompute, Names: b.nodeNames(rb, key, nil), Pos: r.Pos}
		if n > 0 {
			e.PowerW = Watts(r.DesignPower) / int64(n)
		}
		id, _ := g.add(rb.id, e)
		for _, name := range sortedKeys(rb.pdus) {
			g.link(Powers, rb.pdus[name], id)
		}
		if l, ok := g.Lookup(r.CooledBy.To); ok {
			g.link(Cools, l, id)
		}
	}
}

// nodeNames are a compute tray's names: the per-rack record's, else the
// design brief's next record, else its key with dashes.
func (b *builder) nodeNames(rb *rackBuild, key string, rec *TrayRecord) *NodeNames {
	defer func() { rb.node++ }()
	if rec != nil && rec.Node != nil {
		n := *rec.Node
		return &n
	}
	if rb.node < len(rb.names) {
		nr := rb.names[rb.node]
		return &NodeNames{Slurm: nr.Node, Kubernetes: nr.Node}
	}
	name := strings.ReplaceAll(key, "/", "-")
	return &NodeNames{Slurm: name, Kubernetes: name}
}

// tray adds one tray of a design group, at slot, with its parts.
func (b *builder) tray(r *Rack, rb *rackBuild, t *TrayDesign, i, slot int) {
	g := b.g
	key := r.ID + "/" + t.Name + "-" + twoDigits(i+1) // fmt's %02d, without fmt: a site has 150,000 trays
	rec := rb.bySlot[slot]
	e := Element{Key: key, Kind: trayKinds[t.Kind], Slot: slot, HeightU: max(t.HeightU, 1), PowerW: Watts(t.Power), Liquid: t.Liquid, Pos: t.Pos}
	if rec != nil {
		e.Identity = identity(rec.PartNumber, rec.Serial, rec.AssetTag, t.Model, rec.Firmware)
		e.Pos = rec.Pos
	} else if t.Model != "" {
		e.Identity = &Identity{Model: t.Model}
	}
	if rec != nil {
		e.Domain = rec.ScaleUpDomain
	}
	if t.Kind == Compute {
		e.Names = b.nodeNames(rb, key, rec)
		if rec == nil && rb.node-1 < len(rb.names) {
			e.Pos, e.Domain = rb.names[rb.node-1].Pos, rb.names[rb.node-1].NVLinkDomain
		}
	}
	if t.Kind == PowerShelf {
		e.PowerW = int64(t.PSUs) * Watts(t.PSUPower)
	}
	id, _ := g.add(rb.id, e)
	switch t.Kind {
	case TorSwitch:
		rb.tors[slot] = id
	case ManagementSwitch:
		rb.mgmts[slot] = id
	}
	b.power(rb, t, i, id, rec)
	if t.Liquid && rb.manifold != None {
		g.link(Cools, rb.manifold, id)
	}
	if (t.Kind == Compute || t.Kind == ScaleUpSwitch) && rb.domain != None {
		g.link(Connects, id, rb.domain)
	}
	b.parts(rb, t, key, id, rec)
	if t.Kind == Compute {
		b.cable(rb, id, rec, portOf(rec, false), KindTorSwitch)
	}
}

// power links a tray to what feeds it: a shelf's PSUs from its PDU and
// onto the busbar; compute and switch trays from the busbar; ToR and
// management switches from every rack PDU (dual-corded, AC).
func (b *builder) power(rb *rackBuild, t *TrayDesign, i int, id ID, rec *TrayRecord) {
	g := b.g
	switch t.Kind {
	case PowerShelf:
		pdu := None
		if i < len(t.Feeds) {
			if p, ok := rb.pdus[t.Feeds[i].To]; ok {
				pdu = p
			}
		}
		if rec != nil && rec.PDU != "" {
			pdu = None
			if p, ok := rb.pdus[rec.PDU]; ok {
				pdu = p
			} else if len(rb.pdus) > 0 { // a rack without PDUs is INV002's
				b.diags.Errorf(RuleUnknownRef, rec.Pos, "", "rack %s: the power shelf at U%d is on PDU %q, which rack %s does not have (its PDUs: %s): the shelf's PSUs are on no feed",
					rb.rec.Name, rec.Slot, rec.PDU, g.els[rb.id].Key, strings.Join(sortedKeys(rb.pdus), ", ")).Hint = didYouMeanOr(rec.PDU, sortedKeys(rb.pdus), "fix the shelf's pdu")
			}
		}
		if rec != nil && len(rec.PSUs) > t.PSUs {
			b.diags.Errorf(RuleCounts, rec.Pos, "", "rack %s: the power shelf at U%d lists %d PSUs, but the design's %s has %d bays: the extra serials are not read",
				rb.rec.Name, rec.Slot, len(rec.PSUs), t.Name, t.PSUs).Hint = `one entry per bay, "" for an empty one`
		}
		for bay := 1; bay <= t.PSUs; bay++ {
			e := Element{Key: g.els[id].Key + "/psu-" + strconv.Itoa(bay), Kind: KindPSU, Slot: bay, PowerW: Watts(t.PSUPower), Pos: g.els[id].Pos}
			if rec != nil && rec.PSUs != nil {
				// the record lists the bays: "" is an empty one; bays past
				// its list are as designed, their serials unknown
				if bay <= len(rec.PSUs) && rec.PSUs[bay-1] == "" {
					continue
				}
				if bay <= len(rec.PSUs) {
					e.Identity = b.identity(Identity{Serial: rec.PSUs[bay-1]})
				}
			}
			psu, _ := g.add(id, e)
			g.link(Powers, pdu, psu)
			g.link(Powers, psu, rb.busbar)
		}
	case TorSwitch, ManagementSwitch:
		for _, name := range sortedKeys(rb.pdus) {
			g.link(Powers, rb.pdus[name], id)
		}
	default:
		if rb.busbar != None {
			g.link(Powers, rb.busbar, id)
		} else {
			for _, name := range sortedKeys(rb.pdus) {
				g.link(Powers, rb.pdus[name], id)
			}
		}
	}
}

// parts adds a tray's parts; the BMC manages the tray and is cabled to
// a management switch.
func (b *builder) parts(rb *rackBuild, t *TrayDesign, key string, id ID, rec *TrayRecord) {
	g := b.g
	if rec != nil {
		for _, p := range t.Parts {
			if serials := rec.Parts[p.Kind]; len(serials) > p.Count {
				b.diags.Errorf(RuleCounts, rec.Pos, "", "rack %s: the %s tray at U%d lists %d %s serials, but the design's %s tray holds %d: the extra serials are not read",
					rb.rec.Name, t.Kind, rec.Slot, len(serials), p.Kind, t.Name, p.Count).Hint = "fix the serials, or the design's part count"
			}
		}
	}
	keys := partKeys{all: partKeysOf(key, t.Parts), tray: key}
	for _, p := range t.Parts {
		// per part kind, not per part: a site has millions of parts
		kind, serials := partKinds[p.Kind], rec.partSerials(p.Kind)
		for n := 1; n <= p.Count; n++ {
			e := Element{Key: keys.next(p.Name, n), Kind: kind, Slot: n, Pos: g.els[id].Pos}
			serial := ""
			if n <= len(serials) {
				serial = serials[n-1]
			}
			if p.Model != "" || serial != "" {
				e.Identity = b.identity(Identity{Serial: serial, Model: p.Model})
			}
			if p.Kind == BMC && rec != nil && rec.BMC != nil {
				e.BMCAddress = rec.BMC.Address
				if rec.BMC.Firmware != "" {
					if e.Identity == nil {
						e.Identity = &Identity{}
					}
					e.Identity.Firmware = map[string]string{"bmc": rec.BMC.Firmware}
				}
			}
			pid, _ := g.add(id, e)
			if p.Kind == BMC && n == 1 {
				g.link(ManagedBy, id, pid)
				b.cable(rb, pid, rec, portOf(rec, true), KindManagementSwitch)
			}
		}
	}
}

// portOf is the switch port a tray record cables its data NICs (or, with
// bmc, its BMC) to.
func portOf(rec *TrayRecord, bmc bool) *Port {
	switch {
	case rec == nil:
		return nil
	case bmc && rec.BMC != nil && rec.BMC.Switch != 0:
		return &rec.BMC.Port
	case !bmc && rec.Data != nil:
		return rec.Data
	}
	return nil
}

// cable connects id to the switch in the slot the as-built record rec
// names, or, by design (no as-built record), to the rack's first switch
// of kind. A switch port takes one cable (INV025).
func (b *builder) cable(rb *rackBuild, id ID, rec *TrayRecord, port *Port, kind Kind) {
	if port != nil {
		sw, ok := rb.tors[port.Switch]
		if !ok {
			sw, ok = rb.mgmts[port.Switch]
		}
		if ok {
			b.g.link(Connects, id, sw)
			b.port(rb, rec, port, sw, kind)
		}
		return
	}
	if rec != nil {
		return
	}
	pool := rb.tors
	if kind == KindManagementSwitch {
		pool = rb.mgmts
	}
	if slots := sortedKeys(pool); len(slots) > 0 {
		b.g.link(Connects, id, pool[slots[0]])
	}
}

// port records the cable of rec in a switch port, reporting a port
// that has one already.
func (b *builder) port(rb *rackBuild, rec *TrayRecord, port *Port, sw ID, kind Kind) {
	if port.Port <= 0 {
		return
	}
	what := "the data NICs of"
	if kind == KindManagementSwitch {
		what = "the BMC of"
	}
	if b.ports == nil {
		b.ports = make(map[[2]int]cableEnd, 64)
	}
	at := [2]int{port.Switch, port.Port}
	prev, taken := b.ports[at]
	if !taken {
		b.ports[at] = cableEnd{what, rec}
		return
	}
	swe := b.g.els[sw]
	b.diags.Errorf(RulePort, rec.Pos, "", "rack %s: port %d of %s %s at U%d has two cables: from %s the %s tray at U%d, and from %s the %s tray at U%d (%s)",
		rb.rec.Name, port.Port, kindLabel(swe.Kind), swe.Key, swe.Slot, what, rec.Kind, rec.Slot, prev.what, prev.rec.Kind, prev.rec.Slot, prev.rec.Pos).Hint =
		"a port takes one cable: read the port of one of them again at the switch, and fix its record's \"port\""
}

// partKeysOf is the keys of a tray's parts, "key/name-n" in the order
// parts adds them, in one string: a site has millions. partKeys cuts
// them from it.
func partKeysOf(key string, parts []*PartDesign) string {
	size := 0
	for _, p := range parts {
		for i := 1; i <= p.Count; i++ {
			size += partKeyLen(key, p.Name, i)
		}
	}
	var sb strings.Builder
	sb.Grow(size)
	for _, p := range parts {
		for i := 1; i <= p.Count; i++ {
			sb.WriteString(key)
			sb.WriteByte('/')
			sb.WriteString(p.Name)
			sb.WriteByte('-')
			sb.WriteString(strconv.Itoa(i))
		}
	}
	return sb.String()
}

// partKeyLen is the length of the key of part name-i of tray key.
func partKeyLen(key, name string, i int) int {
	digits := 1
	for ; i >= 10; i /= 10 {
		digits++
	}
	return len(key) + len(name) + 2 + digits
}

// partKeys cuts a tray's part keys from partKeysOf's string, in its
// order.
type partKeys struct {
	all, tray string
	at        int
}

// next is the key of part name-i, the next in all.
func (k *partKeys) next(name string, i int) string {
	end := k.at + partKeyLen(k.tray, name, i)
	key := k.all[k.at:end]
	k.at = end
	return key
}

// identity allocates identities in blocks: a site has millions.
func (b *builder) identity(v Identity) *Identity {
	if len(b.identities) == cap(b.identities) {
		b.identities = make([]Identity, 0, 4096)
	}
	b.identities = append(b.identities, v)
	return &b.identities[len(b.identities)-1]
}

// partSerials are the serials a tray record gives parts of kind, by
// position (none without a record).
func (rec *TrayRecord) partSerials(kind string) []string {
	if rec == nil {
		return nil
	}
	return rec.Parts[kind]
}

func identity(pn, serial, tag, model string, fw map[string]string) *Identity {
	if pn == "" && serial == "" && tag == "" && model == "" && len(fw) == 0 {
		return nil
	}
	return &Identity{PartNumber: pn, Serial: serial, AssetTag: tag, Model: model, Firmware: fw}
}

// traysBySlot indexes a rack record's trays by slot, reporting two in
// one slot and trays the design does not have there. The index is the
// builder's, good until the next rack's.
func (b *builder) traysBySlot(r *Rack, d *RackDesign, rec *RackRecord) map[int]*TrayRecord {
	design, out := b.design, b.bySlot
	clear(design)
	clear(out)
	for _, t := range d.Trays {
		for _, s := range t.Slots {
			design[s] = t
		}
	}
	for _, t := range rec.Trays {
		if t.Spare {
			continue // on the shelf: b.spares adds it
		}
		if prev, ok := out[t.Slot]; ok {
			b.diags.Errorf(RuleSlot, t.Pos, "", "rack %s: two trays in slot U%d: this %s tray, and the %s tray at %s", rec.Name, t.Slot,
				t.Kind, prev.Kind, prev.Pos).Hint = "one tray per slot: fix the slot of one of them"
			continue
		}
		want, ok := design[t.Slot]
		switch {
		case !ok:
			b.diags.Errorf(RuleAsBuilt, t.Pos, "", "rack %s: a %s tray at U%d, where its design %s has no tray (the design's slots: %s)",
				rec.Name, t.Kind, t.Slot, d.Name, slotList(d)).Hint = "fix the tray's slot (its lowest U), or the rack design"
			continue
		case t.Kind != want.Kind:
			b.diags.Errorf(RuleAsBuilt, t.Pos, "", "rack %s: a %s tray at U%d, where its design %s has a %s tray (%s)",
				rec.Name, t.Kind, t.Slot, d.Name, want.Kind, want.Name).Hint = "a tray in the wrong slot, or the wrong kind in the record: fix the slot or the kind"
			continue
		}
		out[t.Slot] = t
	}
	_ = r
	return out
}

func slotList(d *RackDesign) string {
	var all []int
	for _, t := range d.Trays {
		all = append(all, t.Slots...)
	}
	slices.Sort(all)
	var parts []string
	for i := 0; i < len(all); {
		j := i
		for j+1 < len(all) && all[j+1] == all[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d–%d", all[i], all[j]))
		} else {
			parts = append(parts, fmt.Sprint(all[i]))
		}
		i = j + 1
	}
	return strings.Join(parts, ", ")
}

func sortedKeys[K int | string, V any](m map[K]V) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// didYouMeanOr is didYouMean's hint, or otherwise.
func didYouMeanOr(s string, known []string, otherwise string) string {
	if h := didYouMean(s, known); h != "" {
		return h
	}
	return otherwise
}
