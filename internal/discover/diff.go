package discover

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/seamdc/seam/internal/inventory"
)

// Finding kinds.
const (
	MissingTray   = "missing-tray"   // a declared tray no BMC reports
	ExtraTray     = "extra-tray"     // a tray in a slot the inventory gives no tray, with a serial it does not know
	WrongSlot     = "wrong-slot"     // a declared tray, by its serial, in another slot of its rack
	WrongRack     = "wrong-rack"     // a declared tray, by its serial, in another rack
	ChangedSerial = "changed-serial" // a slot's tray or part carries a serial the inventory does not give it (a swapped part)
	FirmwareDrift = "firmware-drift" // a component runs another version than declared
	PSUAbsent     = "psu-absent"     // a declared PSU's bay is empty
	ExtraPSU      = "extra-psu"      // a bay the inventory lists empty holds a PSU
)

// Finding is one difference between the declared inventory and what
// the BMCs report.
type Finding struct {
	Kind     string `json:"kind"`
	Element  string `json:"element"`         // the inventory's element it is about (tray, part, PSU), or where an extra one sits
	Node     string `json:"node,omitempty"`  // the node's Slurm name, for a compute tray
	Field    string `json:"field,omitempty"` // a firmware finding's component
	Declared string `json:"declared,omitempty"`
	Found    string `json:"found,omitempty"`
	BMC      string `json:"bmc,omitempty"` // the BMC that reported it
	URI      string `json:"uri,omitempty"`
	Message  string `json:"message"`
}

// declTray is a declared tray.
type declTray struct {
	id       inventory.ID
	key      string
	kind     string
	rack     string
	slot     int
	serial   string
	node     string
	firmware map[string]string
	parts    map[string]declPart // by kind/model/slot
	psus     map[int]declPart    // by bay
}

type declPart struct {
	key, serial string
}

// Declared is the inventory as discovery compares it: trays by their
// rack and slot and by their serial.
type Declared struct {
	g        *inventory.Graph
	trays    []*declTray
	at       map[string]*declTray // "rack U slot"
	bySerial map[string]*declTray
	racks    map[string]string // what a BMC may call a rack → its key
}

// partKind maps inventory part kinds to what discovery reads.
var partKind = map[inventory.Kind]string{inventory.KindGPU: "gpu", inventory.KindCPU: "cpu", inventory.KindNIC: "nic", inventory.KindDPU: "nic"}

// Declare indexes a graph's compute and switch trays and power shelves.
// names maps what BMCs may call a rack (the handover's rack names, a-r01)
// to its key (ma/r01); keys are always known.
func Declare(g *inventory.Graph, names map[string]string) *Declared {
	d := &Declared{g: g, at: map[string]*declTray{}, bySerial: map[string]*declTray{}, racks: map[string]string{}}
	for _, r := range g.OfKind(inventory.KindRack) {
		d.racks[g.El(r).Key] = g.El(r).Key
	}
	for name, key := range names {
		d.racks[name] = key
	}
	for _, k := range []inventory.Kind{inventory.KindCompute, inventory.KindScaleUpSwitch, inventory.KindPowerShelf} {
		for _, id := range g.OfKind(k) {
			d.add(id)
		}
	}
	return d
}

func (d *Declared) add(id inventory.ID) {
	g := d.g
	e := g.El(id)
	rack := g.Ancestor(id, inventory.KindRack)
	if rack == inventory.None {
		return
	}
	t := &declTray{id: id, key: e.Key, kind: e.Kind.String(), rack: g.El(rack).Key, slot: e.Slot, firmware: map[string]string{},
		parts: map[string]declPart{}, psus: map[int]declPart{}}
	if e.Identity != nil {
		t.serial = e.Identity.Serial
		maps.Copy(t.firmware, e.Identity.Firmware)
	}
	if e.Names != nil {
		t.node = e.Names.Slurm
	}
	for _, c := range g.Children(id) {
		ce := g.El(c)
		serial, model := "", ""
		if ce.Identity != nil {
			serial, model = ce.Identity.Serial, ce.Identity.Model
		}
		if ce.Kind == inventory.KindPSU {
			t.psus[ce.Slot] = declPart{key: ce.Key, serial: serial}
			continue
		}
		if k, ok := partKind[ce.Kind]; ok {
			t.parts[partID(k, model, ce.Slot)] = declPart{key: ce.Key, serial: serial}
		}
	}
	d.trays = append(d.trays, t)
	d.at[loc(t.rack, t.slot)] = t
	if t.serial != "" {
		d.bySerial[t.serial] = t
	}
}

func loc(rack string, slot int) string { return rack + " U" + strconv.Itoa(slot) }

// partID is how a part is matched: its kind, its model for network
// adapters (a NIC and a DPU are both adapters), its position.
func partID(kind, model string, slot int) string {
	if kind != "nic" {
		model = ""
	}
	return kind + "/" + model + "/" + strconv.Itoa(slot)
}

// Trays counts the declared trays.
func (d *Declared) Trays() int { return len(d.trays) }

// Compare lists what differs between the declared inventory and what
// the BMCs reported, sorted by element and kind. A declared tray that
// no BMC reports names the error of its BMC, when its BMC failed.
func (d *Declared) Compare(found []*Found, expect map[string]string) []Finding {
	var out []Finding
	reported := map[*declTray]*Tray{}
	failed := map[string]*Error{} // by declared tray key
	for _, f := range found {
		if len(f.Errors) > 0 {
			if key := expect[f.BMC]; key != "" {
				failed[key] = f.Errors[0]
			}
		}
	}
	var all []*Tray
	for _, f := range found {
		all = append(all, f.Trays...)
	}
	for _, t := range all {
		rack := d.racks[t.Rack]
		if rack == "" {
			rack = t.Rack
		}
		here := d.at[loc(rack, t.Slot)]
		owner := d.bySerial[t.Serial]
		switch {
		case owner != nil:
			reported[owner] = t
			if owner.rack != rack || owner.slot != t.Slot {
				kind, what := WrongSlot, "slot"
				if owner.rack != rack {
					kind, what = WrongRack, "rack"
				}
				out = append(out, Finding{Kind: kind, Element: owner.key, Node: owner.node, Declared: loc(owner.rack, owner.slot), Found: loc(rack, t.Slot),
					BMC: t.BMC, URI: t.URI, Message: fmt.Sprintf("%s %s is in the wrong %s: the inventory puts it at %s, its BMC reports %s",
						describe(owner), t.Serial, what, loc(owner.rack, owner.slot), loc(rack, t.Slot))})
			}
			out = append(out, d.compareTray(owner, t)...)
		case here != nil:
			if here.serial != "" && d.seen(all, here.serial) {
				out = append(out, Finding{Kind: ExtraTray, Element: loc(rack, t.Slot), Found: t.Serial, BMC: t.BMC, URI: t.URI,
					Message: fmt.Sprintf("%s: a %s tray with serial %s the inventory does not know, where it puts %s, which is elsewhere", loc(rack, t.Slot), t.Kind, t.Serial, here.key)})
				continue
			}
			reported[here] = t
			out = append(out, Finding{Kind: ChangedSerial, Element: here.key, Node: here.node, Declared: here.serial, Found: t.Serial, BMC: t.BMC, URI: t.URI,
				Message: fmt.Sprintf("%s: serial %s, the inventory says %s: the tray was swapped", describe(here), t.Serial, orNone(here.serial))})
			out = append(out, d.compareTray(here, t)...)
		default:
			out = append(out, Finding{Kind: ExtraTray, Element: loc(rack, t.Slot), Found: t.Serial, BMC: t.BMC, URI: t.URI,
				Message: fmt.Sprintf("%s: a %s tray (serial %s, BMC %s) where the inventory has none", loc(rack, t.Slot), t.Kind, orNone(t.Serial), t.BMC)})
		}
	}
	for _, dt := range d.trays {
		if reported[dt] != nil {
			continue
		}
		f := Finding{Kind: MissingTray, Element: dt.key, Node: dt.node, Declared: loc(dt.rack, dt.slot),
			Message: fmt.Sprintf("%s at %s: no BMC reports it", describe(dt), loc(dt.rack, dt.slot))}
		if e := failed[dt.key]; e != nil {
			f.BMC, f.URI = e.BMC, e.URI
			f.Message += fmt.Sprintf(" (its BMC %s failed: %s: %s)", e.BMC, e.URI, e.Msg)
		}
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b Finding) int {
		if c := strings.Compare(a.Element, b.Element); c != 0 {
			return c
		}
		return strings.Compare(a.Kind, b.Kind)
	})
	return out
}

// seen reports whether a tray with serial was reported anywhere.
func (d *Declared) seen(all []*Tray, serial string) bool {
	for _, t := range all {
		if t.Serial == serial {
			return true
		}
	}
	return false
}

func describe(t *declTray) string {
	if t.node != "" {
		return fmt.Sprintf("node %s (%s)", t.node, t.key)
	}
	return t.kind + " tray " + t.key
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// compareTray compares a tray's firmware, parts and PSUs with what its
// BMC reports.
func (d *Declared) compareTray(dt *declTray, t *Tray) []Finding {
	var out []Finding
	for _, comp := range slices.Sorted(maps.Keys(dt.firmware)) {
		want := dt.firmware[comp]
		got, ok := t.Firmware[comp]
		if !ok || got == want {
			continue
		}
		out = append(out, Finding{Kind: FirmwareDrift, Element: dt.key, Node: dt.node, Field: comp, Declared: want, Found: got, BMC: t.BMC, URI: t.URI,
			Message: fmt.Sprintf("%s: %s firmware %s, the inventory says %s", describe(dt), comp, got, want)})
	}
	for _, p := range t.Parts {
		dp, ok := dt.parts[partID(p.Kind, p.Model, p.Slot)]
		if !ok || dp.serial == "" || dp.serial == p.Serial {
			continue
		}
		out = append(out, Finding{Kind: ChangedSerial, Element: dp.key, Node: dt.node, Declared: dp.serial, Found: p.Serial, BMC: t.BMC, URI: p.URI,
			Message: fmt.Sprintf("%s: serial %s, the inventory says %s: the part was swapped", dp.key, orNone(p.Serial), dp.serial)})
	}
	if t.PSUs == nil {
		return out
	}
	for _, bay := range slices.Sorted(maps.Keys(dt.psus)) {
		dp := dt.psus[bay]
		got, ok := t.PSUs[bay]
		switch {
		case !ok:
			out = append(out, Finding{Kind: PSUAbsent, Element: dp.key, Declared: orNone(dp.serial), BMC: t.BMC, URI: t.URI,
				Message: fmt.Sprintf("%s: bay %d is empty, the inventory lists PSU %s", dp.key, bay, orNone(dp.serial))})
		case dp.serial != "" && got != dp.serial:
			out = append(out, Finding{Kind: ChangedSerial, Element: dp.key, Declared: dp.serial, Found: got, BMC: t.BMC, URI: t.URI,
				Message: fmt.Sprintf("%s: serial %s, the inventory says %s: the PSU was swapped", dp.key, orNone(got), dp.serial)})
		}
	}
	for _, bay := range slices.Sorted(maps.Keys(t.PSUs)) {
		if _, ok := dt.psus[bay]; !ok {
			out = append(out, Finding{Kind: ExtraPSU, Element: fmt.Sprintf("%s/psu-%d", dt.key, bay), Found: t.PSUs[bay], BMC: t.BMC, URI: t.URI,
				Message: fmt.Sprintf("%s: bay %d holds PSU %s, which the inventory lists as empty", dt.key, bay, orNone(t.PSUs[bay]))})
		}
	}
	return out
}

// Targets are the BMCs the inventory gives an address, at
// scheme://address (an address without a port gets the scheme's), each
// expecting its tray.
func (d *Declared) Targets(scheme string) []Target {
	var out []Target
	for _, dt := range d.trays {
		for _, b := range d.g.Out(inventory.ManagedBy, dt.id) {
			addr := d.g.El(b).BMCAddress
			if addr == "" {
				continue
			}
			name := "bmc-" + strings.ReplaceAll(dt.key, "/", "-")
			if n := d.g.El(dt.id).Names; n != nil && n.BMC != "" {
				name = n.BMC
			}
			out = append(out, Target{Name: name, URL: scheme + "://" + addr, Expect: dt.key})
		}
	}
	return out
}

// Only keeps the declared trays of the given racks (their keys, or the
// names BMCs call them): a discovery of part of the site.
func (d *Declared) Only(racks ...string) *Declared {
	keep := map[string]bool{}
	for _, r := range racks {
		if k := d.racks[r]; k != "" {
			keep[k] = true
		}
	}
	out := &Declared{g: d.g, at: map[string]*declTray{}, bySerial: map[string]*declTray{}, racks: d.racks}
	for _, t := range d.trays {
		if keep[t.rack] {
			out.trays = append(out.trays, t)
			out.at[loc(t.rack, t.slot)] = t
			if t.serial != "" {
				out.bySerial[t.serial] = t
			}
		}
	}
	return out
}

// HasRack reports whether a rack (its key or a name) is declared.
func (d *Declared) HasRack(r string) bool { return d.racks[r] != "" }

// BMCNames maps the names BMCs go by to the trays they manage: a node's
// BMC name from the handover, else "bmc-" and the tray's key with dashes
// (as the simulator names them).
func (d *Declared) BMCNames() map[string]string {
	out := map[string]string{}
	for _, dt := range d.trays {
		out["bmc-"+strings.ReplaceAll(dt.key, "/", "-")] = dt.key
		if n := d.g.El(dt.id).Names; n != nil && n.BMC != "" {
			out[n.BMC] = dt.key
		}
	}
	return out
}
