package fleet

import (
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strings"

	"github.com/seamdc/seam/internal/inventory"
)

// declaredRack is the rack the inventory puts a tray in.
func (f *Fleet) declaredRack(t *Tray) *Rack {
	if t.id == inventory.None {
		return t.rack
	}
	return f.rackBy[f.g.El(f.g.Parent(t.id)).Key]
}

func (f *Fleet) declaredFirmware(t *Tray) map[string]string {
	out := map[string]string{}
	if t.id == inventory.None {
		return out
	}
	if idn := f.g.El(t.id).Identity; idn != nil {
		maps.Copy(out, idn.Firmware)
	}
	return out
}

// rebuild sets every tray and node as the inventory declares it, then
// applies the defects in force, in order; a tray whose BMC would report
// something else gets a new version.
func (f *Fleet) rebuild() {
	for _, t := range f.trays {
		f.reset(t)
	}
	for _, n := range f.nodes {
		n.link, n.failures = DefaultLink, nil
		for _, g := range n.gpus {
			g.hotK, g.eccCorr, g.eccUncorr, g.remapped, g.remapWait = 0, 0, 0, 0, false
		}
	}
	seen := map[string]bool{}
	for _, d := range f.defects {
		f.apply(d)
		if d.Kind == ExtraTray {
			seen[d.Target] = true
		}
	}
	for k, t := range f.extra {
		if !seen[k] {
			if t.Node != nil && t.Node.state != Off {
				f.on--
			}
			delete(f.extra, k)
		}
	}
	for _, r := range f.racks {
		r.trays = r.trays[:0]
	}
	for _, t := range f.allTrays() {
		t.rack.trays = append(t.rack.trays, t)
	}
	for _, r := range f.racks {
		slices.SortFunc(r.trays, func(a, b *Tray) int { return a.Slot - b.Slot })
	}
	for _, t := range f.allTrays() {
		if fp := t.fingerprintOf(); fp != t.fingerprint {
			t.fingerprint = fp
			t.version.Add(1)
		}
	}
	f.changed = true
}

// allTrays are the inventory's trays and the extra ones, by key.
func (f *Fleet) allTrays() []*Tray {
	out := slices.Clone(f.trays)
	for _, k := range slices.Sorted(maps.Keys(f.extra)) {
		out = append(out, f.extra[k])
	}
	return out
}

func (f *Fleet) reset(t *Tray) {
	e := f.g.El(t.id)
	t.rack, t.Slot, t.Removed = f.declaredRack(t), e.Slot, false
	t.Serial, t.Firmware, t.partSerials = "", f.declaredFirmware(t), map[string]string{}
	if e.Identity != nil {
		t.Serial = e.Identity.Serial
	}
	for _, p := range t.PSUs {
		p.Present, p.Serial = true, ""
		if id, ok := f.g.Lookup(p.Key); ok && f.g.El(id).Identity != nil {
			p.Serial = f.g.El(id).Identity.Serial
		}
	}
}

func (f *Fleet) apply(d Defect) {
	switch d.Kind {
	case SlowLink:
		n, _ := f.Node(d.Target)
		n.link = d.Value
	case HotGPU, ECCErrors, FailedDiag:
		n, _ := f.Node(d.Target)
		g := n.gpus[d.GPU]
		switch d.Kind {
		case HotGPU:
			g.hotK = d.Value
		case ECCErrors:
			g.eccUncorr, g.eccCorr, g.remapped, g.remapWait = int(d.Value), 4*int(d.Value), int(d.Value), true
		}
		test, warn := diagWarning(d)
		n.failures = append(n.failures, failedTest{test: test, gpu: d.GPU, warning: warn})
	case MissingPSU:
		f.psu(d.Target).Present = false
	case SwappedPart:
		serial := d.Serial
		if serial == "" {
			serial = newSerial(d.Target)
		}
		switch {
		case f.byKey[d.Target] != nil:
			f.byKey[d.Target].Serial = serial
		case f.psu(d.Target) != nil:
			f.psu(d.Target).Serial = serial
		default:
			tray := f.byKey[d.Target[:strings.LastIndexByte(d.Target, '/')]]
			tray.partSerials[d.Target] = serial
		}
	case WrongSlot:
		a, b := f.byKey[d.Target], f.byKey[d.With]
		a.rack, b.rack = b.rack, a.rack
		a.Slot, b.Slot = b.Slot, a.Slot
	case FirmwareDrift:
		f.byKey[d.Target].Firmware[d.Component] = d.Version
	case MissingTray:
		f.byKey[d.Target].Removed = true
	case ExtraTray:
		f.extraTray(d)
	}
}

// extraTray puts a compute tray the inventory does not know in a rack:
// a copy of the rack's first compute tray, with new serials and no
// names. It keeps its state while its defect is in force.
func (f *Fleet) extraTray(d Defect) {
	r := f.rackBy[d.Target]
	if t := f.extra[d.Target]; t != nil && t.Slot == d.Slot {
		return
	}
	tpl := f.template(r)
	key := fmt.Sprintf("%s/extra-u%02d", r.Key, d.Slot)
	serial := d.Serial
	if serial == "" {
		serial = newSerial(key)
	}
	t := &Tray{Key: key, Kind: inventory.KindCompute, id: inventory.None, DesignW: tpl.DesignW, Liquid: tpl.Liquid, rack: r, Slot: d.Slot,
		Serial: serial, Firmware: f.declaredFirmware(tpl), partSerials: map[string]string{}, Extra: true,
		BMCName: "bmc-" + strings.ReplaceAll(key, "/", "-")}
	t.template = tpl.id
	n := &Node{Tray: t, Name: strings.ReplaceAll(key, "/", "-"), state: Off, link: DefaultLink, dcgm: f.opt.DCGM, Domain: tpl.Node.Domain, capW: tpl.DesignW}
	for _, g := range tpl.Node.gpus {
		n.gpus = append(n.gpus, &gpu{key: key + g.key[len(tpl.Key):], index: g.index, model: g.model})
	}
	t.Node = n
	f.extra[d.Target] = t
}

// newSerial is a serial no inventory record carries, stable for what it
// replaces.
func newSerial(of string) string {
	h := fnv.New32a()
	h.Write([]byte(of))
	return fmt.Sprintf("SN-SWAP-%08X", h.Sum32())
}

// fingerprintOf is what the tray's BMC reports, as one string.
func (t *Tray) fingerprintOf() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s|%d|%s|%v|", t.rack.Key, t.Slot, t.Serial, t.Removed)
	for _, k := range slices.Sorted(maps.Keys(t.Firmware)) {
		fmt.Fprintf(&b, "%s=%s,", k, t.Firmware[k])
	}
	for _, k := range slices.Sorted(maps.Keys(t.partSerials)) {
		fmt.Fprintf(&b, "%s=%s,", k, t.partSerials[k])
	}
	for _, p := range t.PSUs {
		fmt.Fprintf(&b, "%d:%v:%s,", p.Bay, p.Present, p.Serial)
	}
	return b.String()
}

// BMC is one simulated BMC: the tray, power shelf or CDU it manages.
type BMC struct {
	Name    string         // bmc-a-r01-n03, bmc-ma-r01-shelf-01
	Key     string         // what it manages
	Kind    inventory.Kind // compute, scale-up-switch, power-shelf, cdu
	Address string         // where the inventory says it answers
	Tray    *Tray          // nil for a CDU
}

// BMCs lists the BMCs that answer now: one per compute and switch tray
// and power shelf in its rack (an extra tray's too), one per CDU; by key.
func (f *Fleet) BMCs() []BMC {
	var out []BMC
	for _, t := range f.allTrays() {
		if !t.Removed {
			out = append(out, BMC{Name: t.BMCName, Key: t.Key, Kind: t.Kind, Address: t.Address, Tray: t})
		}
	}
	for _, c := range f.cdus {
		out = append(out, BMC{Name: "bmc-" + strings.ReplaceAll(c, "/", "-"), Key: c, Kind: inventory.KindCDU})
	}
	slices.SortFunc(out, func(a, b BMC) int { return strings.Compare(a.Key, b.Key) })
	return out
}

// TrayGraph is a tray as its BMC knows it: a small graph of the rack it
// physically sits in, the tray at its slot with its serials and
// firmware, its parts (the PSUs in their bays), its BMC and, for a
// switch tray, its scale-up domain. The declared graph is not changed.
func (f *Fleet) TrayGraph(t *Tray) *inventory.Graph {
	g := f.g
	sub := inventory.NewGraph(&inventory.Site{Name: g.Site.Name}, 64)
	rid, _ := sub.Add(inventory.None, *g.El(t.rack.id))
	src := t.id
	if t.Extra {
		src = t.template
	}
	el := *g.El(src)
	el.Key, el.Slot, el.Names, el.Pos = t.Key, t.Slot, nil, inventory.Element{}.Pos
	idn := inventory.Identity{Serial: t.Serial, Firmware: maps.Clone(t.Firmware)}
	if old := g.El(src).Identity; old != nil {
		idn.PartNumber, idn.Model = old.PartNumber, old.Model
		if !t.Extra {
			idn.AssetTag = old.AssetTag
		}
	}
	el.Identity = &idn
	if n := t.Node; n != nil && !t.Extra {
		el.Names = &inventory.NodeNames{Slurm: n.Name, Kubernetes: n.Kubernetes}
	} else if t.Extra {
		el.Names = &inventory.NodeNames{Slurm: t.Node.Name}
	}
	tid, _ := sub.Add(rid, el)
	bmc := inventory.None
	for _, c := range g.Children(src) {
		ce := *g.El(c)
		key := t.Key + ce.Key[len(g.El(src).Key):]
		ce.Key = key
		if ce.Kind == inventory.KindPSU {
			p := t.psuAt(ce.Slot)
			if p == nil || !p.Present {
				continue
			}
			ce.Identity = &inventory.Identity{Serial: p.Serial}
		} else if s, ok := t.partSerials[key]; ok || t.Extra {
			if !ok {
				s = newSerial(key)
			}
			id := inventory.Identity{Serial: s}
			if ce.Identity != nil {
				id = *ce.Identity
				id.Serial = s
			}
			ce.Identity = &id
		}
		if t.Extra && ce.Kind == inventory.KindBMC {
			ce.BMCAddress = ""
		}
		cid, _ := sub.Add(tid, ce)
		if ce.Kind == inventory.KindBMC && bmc == inventory.None {
			bmc = cid
			sub.Link(inventory.ManagedBy, tid, cid)
		}
	}
	if t.Kind == inventory.KindScaleUpSwitch {
		for _, d := range g.Out(inventory.Connects, src) {
			if g.El(d).Kind == inventory.KindScaleUpDomain {
				did, _ := sub.Add(rid, *g.El(d))
				sub.Link(inventory.Connects, tid, did)
			}
		}
	}
	sub.Seal()
	return sub
}

// PDU is the rack PDU the PSU's bay is cabled to (nil: none).
func (p *PSU) PDU() *PDU { return p.pdu }

func (t *Tray) psuAt(bay int) *PSU {
	for _, p := range t.PSUs {
		if p.Bay == bay {
			return p
		}
	}
	return nil
}

// CDUGraph is a CDU as its controller knows it: its loop, the CDU, its
// pumps.
func (f *Fleet) CDUGraph(key string) (*inventory.Graph, error) {
	g := f.g
	id, ok := g.Lookup(key)
	if !ok || g.El(id).Kind != inventory.KindCDU {
		return nil, fmt.Errorf("no CDU %q", key)
	}
	sub := inventory.NewGraph(&inventory.Site{Name: g.Site.Name}, 8)
	lid, _ := sub.Add(inventory.None, *g.El(g.Parent(id)))
	cid, _ := sub.Add(lid, *g.El(id))
	for _, c := range g.Children(id) {
		sub.Add(cid, *g.El(c))
	}
	sub.Seal()
	return sub, nil
}
