package sitegen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/seamdc/seam/internal/inventory"
)

// Handover writes a synthetic as-built inventory of site in the per-rack
// form (inventory.HandoverFormat): every rack with a design gets every
// tray of it, with serials, asset tags, firmware (the trays' BIOS and
// BMC, the power shelves' own), its node's names, its
// BMC's address and switch ports, and its parts' serials. Serials are
// made up and unique ("SN-GPU-0000123"); rack names are the module's
// letter and the rack id ("a-r01" for ma/r01). One tray per line keeps a
// diff of it readable.
func Handover(site *inventory.Site) []byte {
	var w bytes.Buffer
	fmt.Fprintf(&w, "{\"format\": %q, \"site\": %q, \"racks\": [\n", inventory.HandoverFormat, site.Name)
	serials := map[string]int{}
	serial := func(kind string) string {
		serials[kind]++
		return fmt.Sprintf("SN-%s-%07d", strings.ToUpper(kind), serials[kind])
	}
	first := true
	mi := -1
	for _, m := range site.Modules {
		if len(m.Racks) > 0 {
			mi++
		}
		for ri, r := range m.Racks {
			d := r.DesignOf
			if d == nil {
				continue
			}
			if !first {
				w.WriteString(",\n")
			}
			first = false
			pos := strings.TrimPrefix(r.ID, m.ID+"/")
			name := RackName(m.ID, pos)
			fmt.Fprintf(&w, "  {\"name\": %q, \"module\": %q, \"position\": %q, \"part_number\": %q, \"serial\": %q, \"asset_tag\": %q, \"trays\": [\n",
				name, m.ID, pos, strings.ToUpper(d.Name), serial("rack"), "AT-"+name)
			w.WriteString(strings.Join(trays(d, mi, ri, name, serial), ",\n"))
			w.WriteString("\n  ]}")
		}
	}
	w.WriteString("\n]}\n")
	return w.Bytes()
}

// ShelfFirmware is the power shelves' firmware in a generated handover.
const ShelfFirmware = "2.1.0"

// RackName is the integrator's name of a rack: the module id without its
// leading "m", a dash, the rack id.
func RackName(module, rack string) string {
	return strings.TrimPrefix(module, "m") + "-" + rack
}

// bmcAddress is a BMC's address and MAC, unique across the site:
// 10.<module+1>.<rack+1>.<slot> and 02:5e:… for the first 255 modules,
// and past them, where an octet would overflow, an IPv6 address in
// fd5e::/16 and a locally administered MAC (06:…) that carry the
// module in two bytes.
func bmcAddress(module, rack, slot int) (addr, mac string) {
	m := module + 1
	if m < 256 {
		return fmt.Sprintf("10.%d.%d.%d", m, rack+1, slot), fmt.Sprintf("02:5e:%02x:%02x:%02x:01", m, rack+1, slot)
	}
	return fmt.Sprintf("fd5e::%x:%x:%x", m, rack+1, slot), fmt.Sprintf("06:%02x:%02x:%02x:%02x:01", m>>8, m&0xff, rack+1, slot)
}

// trays writes each tray of a design as one line of JSON.
func trays(d *inventory.RackDesign, module, rack int, name string, serial func(string) string) []string {
	var tor, mgmt int
	for _, t := range d.Trays {
		switch t.Kind {
		case inventory.TorSwitch:
			tor = t.Slots[0]
		case inventory.ManagementSwitch:
			mgmt = t.Slots[0]
		}
	}
	var out []string
	node := 0
	for _, at := range bySlot(d) {
		t, i, slot := at.t, at.i, at.t.Slots[at.i]
		{
			rec := inventory.TrayRecord{Slot: slot, Kind: t.Kind, PartNumber: partNumber(t), Serial: serial(t.Name),
				AssetTag: fmt.Sprintf("AT-%s-U%02d", name, slot)}
			switch t.Kind {
			case inventory.PowerShelf:
				// one release across the fleet: vet's UNIFORM001 compares them
				rec.Firmware = map[string]string{"shelf": ShelfFirmware}
				if i < len(t.Feeds) {
					rec.PDU = t.Feeds[i].To
				}
				for range t.PSUs {
					rec.PSUs = append(rec.PSUs, serial("psu"))
				}
			case inventory.Compute, inventory.ScaleUpSwitch:
				rec.Firmware = map[string]string{"bios": "1.4.2", "bmc": "25.06-1"}
				rec.ScaleUpDomain = name
				rec.Parts = map[string][]string{}
				for _, p := range t.Parts {
					for range p.Count {
						rec.Parts[p.Kind] = append(rec.Parts[p.Kind], serial(p.Kind))
					}
				}
				addr, mac := bmcAddress(module, rack, slot)
				rec.BMC = &inventory.BMCRecord{Address: addr, MAC: mac, Port: inventory.Port{Switch: mgmt, Port: slot}}
				if t.Kind == inventory.Compute {
					node++
					host := fmt.Sprintf("gpu-%s-n%02d", name, node)
					rec.Node = &inventory.NodeNames{Slurm: host, Kubernetes: host + ".cluster.example", BMC: "bmc-" + strings.TrimPrefix(host, "gpu-")}
					rec.Data = &inventory.Port{Switch: tor, Port: node}
				}
			}
			line, _ := json.Marshal(rec)
			out = append(out, "    "+string(line))
		}
	}
	return out
}

func partNumber(t *inventory.TrayDesign) string {
	if t.Model == "" {
		return strings.ToUpper(t.Name)
	}
	return strings.ToUpper(strings.ReplaceAll(t.Model, " ", "-"))
}

type trayAt struct {
	t *inventory.TrayDesign
	i int
}

// bySlot lists every tray of a design, lowest slot first.
func bySlot(d *inventory.RackDesign) []trayAt {
	var out []trayAt
	for _, t := range d.Trays {
		for i := range t.Slots {
			out = append(out, trayAt{t, i})
		}
	}
	slices.SortFunc(out, func(a, b trayAt) int { return a.t.Slots[a.i] - b.t.Slots[b.i] })
	return out
}
