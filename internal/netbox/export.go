package netbox

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/seamdc/seam/internal/inventory"
)

// The custom fields seam writes and reads (define them in NetBox, on
// dcim.rack and dcim.device, before importing an export into it).
const (
	cfModule       = "seam_module"          // rack: its seam module
	cfPosition     = "seam_position"        // rack: its rack id in the module
	cfPartNumber   = "seam_part_number"     // rack: its part number; device: set when it has none
	cfKubernetes   = "seam_kubernetes"      // device: the node's Kubernetes name
	cfBMCName      = "seam_bmc_name"        // device: its BMC's host name
	cfBMCAddress   = "seam_bmc_address"     // device: its BMC's address when it is no IP address
	cfBMCMAC       = "seam_bmc_mac"         // device: its BMC's MAC
	cfBMCFirmware  = "seam_bmc_firmware"    // device: its BMC's firmware
	cfFirmware     = "seam_firmware"        // device: firmware by component (JSON)
	cfParts        = "seam_parts"           // device: part serials by kind (JSON)
	cfPSUs         = "seam_psus"            // device: a power shelf's PSU serials by bay (JSON)
	cfPDU          = "seam_pdu"             // device: a power shelf's rack PDU
	cfScaleUp      = "seam_scale_up_domain" // device: its scale-up domain
	noPartNumber   = "unspecified"          // the device type model of a tray with no part number
	bmcInterface   = "bmc"                  // a tray's BMC port
	dataInterface  = "data"                 // a tray's data port
	switchPortName = "port-"                // a switch's port N is port-N
)

// DefaultBaseURL is the API root the exported objects' url fields name.
const DefaultBaseURL = "https://netbox.invalid/api/"

// ExportSite is the site as NetBox objects: a rack per rack, a device
// per tray (its slot its position in U, its kind its role), a power
// panel per power block, a power feed per feed, and a cable per BMC or
// data port cabled to a switch of its rack. Ids are given in order from
// 1. base is the API root the url fields name ("" DefaultBaseURL).
func ExportSite(s *Site, base string) (*Export, error) {
	if base == "" {
		base = DefaultBaseURL
	}
	e := &exporter{base: strings.TrimSuffix(base, "/") + "/", site: Brief{ID: 1, Name: s.Name, Display: s.Name, Slug: slug(s.Name)}}
	e.site.URL = e.base + "dcim/sites/1/"
	out := &Export{}
	for _, r := range s.Racks {
		rack := e.rack(r)
		out.Racks = append(out.Racks, rack)
		slots := map[int]Device{}
		var devs []Device
		for _, t := range r.Trays {
			d, err := e.device(r, rack, t)
			if err != nil {
				return nil, err
			}
			out.Devices = append(out.Devices, d)
			devs = append(devs, d)
			slots[t.Slot] = d
		}
		for i, t := range r.Trays {
			for _, c := range []struct {
				iface string
				port  *inventory.Port
			}{{bmcInterface, bmcPort(t)}, {dataInterface, t.Data}} {
				if c.port == nil || (c.port.Switch == 0 && c.port.Port == 0) {
					continue
				}
				sw, ok := slots[c.port.Switch]
				if !ok {
					return nil, fmt.Errorf("rack %s, tray in slot %d: its %s port is cabled to a switch in slot %d, which the rack has no tray in", r.Name, t.Slot, c.iface, c.port.Switch)
				}
				out.Cables = append(out.Cables, e.cable(devs[i], c.iface, sw, switchPortName+strconv.Itoa(c.port.Port)))
			}
		}
	}
	panels := map[string]Brief{}
	for _, p := range s.Panels {
		e.ids.panel++
		pp := PowerPanel{ID: e.ids.panel, URL: e.url("dcim/power-panels", e.ids.panel), Display: p, Site: e.site, Name: p, CustomFields: CustomFields{}}
		panels[p] = Brief{ID: pp.ID, URL: pp.URL, Display: p, Name: p}
		out.PowerPanels = append(out.PowerPanels, pp)
	}
	for _, f := range s.Feeds {
		pb, ok := panels[f.Panel]
		if !ok {
			return nil, fmt.Errorf("power feed %s: its panel %s is not among the site's power blocks", f.Name, f.Panel)
		}
		e.ids.feed++
		out.PowerFeeds = append(out.PowerFeeds, PowerFeed{ID: e.ids.feed, URL: e.url("dcim/power-feeds", e.ids.feed), Display: f.Name, PowerPanel: pb, Name: f.Name,
			Status: Choice{"active", "Active"}, Type: Choice{"primary", "Primary"}, Supply: Choice{"ac", "AC"}, Phase: Choice{"three-phase", "Three-phase"},
			CustomFields: CustomFields{}})
	}
	return out, nil
}

func bmcPort(t *inventory.TrayRecord) *inventory.Port {
	if t.BMC == nil {
		return nil
	}
	return &t.BMC.Port
}

type exporter struct {
	base string
	site Brief
	ids  struct{ rack, device, iface, cable, panel, feed, dtype, role int }
	// device types and roles, made once each
	dtypes map[string]DeviceType
	roles  map[string]Brief
}

func (e *exporter) url(endpoint string, id int) string {
	return e.base + endpoint + "/" + strconv.Itoa(id) + "/"
}

func (e *exporter) rack(r *inventory.RackRecord) Rack {
	e.ids.rack++
	cf := CustomFields{cfModule: jsonOf(r.Module), cfPosition: strOrNull(r.Position), cfPartNumber: strOrNull(r.PartNumber)}
	return Rack{ID: e.ids.rack, URL: e.url("dcim/racks", e.ids.rack), Display: r.Name, Name: r.Name, Site: e.site, Status: &Choice{"active", "Active"},
		Serial: r.Serial, AssetTag: ptrOrNil(r.AssetTag), CustomFields: cf}
}

func (e *exporter) device(r *inventory.RackRecord, rack Rack, t *inventory.TrayRecord) (Device, error) {
	if t.Slot < 1 {
		return Device{}, fmt.Errorf("rack %s: a %s tray in slot %d: NetBox positions start at U1", r.Name, t.Kind, t.Slot)
	}
	e.ids.device++
	pos := float64(t.Slot)
	d := Device{ID: e.ids.device, URL: e.url("dcim/devices", e.ids.device), DeviceType: e.dtype(t), Role: e.role(t.Kind), Serial: t.Serial,
		AssetTag: ptrOrNil(t.AssetTag), Site: e.site, Rack: &Brief{ID: rack.ID, URL: rack.URL, Display: rack.Name, Name: rack.Name},
		Position: &pos, Face: &Choice{"front", "Front"}, Status: &Choice{"active", "Active"}, CustomFields: CustomFields{}}
	cf := d.CustomFields
	if t.PartNumber == "" {
		cf[cfPartNumber] = jsonOf("")
	}
	if t.Node != nil {
		if t.Node.Slurm != "" {
			d.Name = &t.Node.Slurm
		}
		set(cf, cfKubernetes, t.Node.Kubernetes)
		set(cf, cfBMCName, t.Node.BMC)
	}
	d.Display = deviceDisplay(d.Name, r.Name, t.Slot)
	if b := t.BMC; b != nil {
		if ip, err := netip.ParseAddr(b.Address); err == nil {
			d.OOBIP = &IPBrief{ID: d.ID, URL: e.url("ipam/ip-addresses", d.ID), Display: prefixed(ip), Address: prefixed(ip)}
		} else {
			set(cf, cfBMCAddress, b.Address)
		}
		set(cf, cfBMCMAC, b.MAC)
		set(cf, cfBMCFirmware, b.Firmware)
	}
	if len(t.Firmware) > 0 {
		cf[cfFirmware] = jsonOf(t.Firmware)
	}
	if len(t.Parts) > 0 {
		cf[cfParts] = jsonOf(t.Parts)
	}
	if len(t.PSUs) > 0 {
		cf[cfPSUs] = jsonOf(t.PSUs)
	}
	set(cf, cfPDU, t.PDU)
	set(cf, cfScaleUp, t.ScaleUpDomain)
	return d, nil
}

func prefixed(ip netip.Addr) string { return netip.PrefixFrom(ip, ip.BitLen()).String() }

func deviceDisplay(name *string, rack string, slot int) string {
	if name != nil {
		return *name
	}
	return fmt.Sprintf("%s U%d", rack, slot)
}

func (e *exporter) dtype(t *inventory.TrayRecord) DeviceType {
	model := t.PartNumber
	if model == "" {
		model = noPartNumber
	}
	if dt, ok := e.dtypes[model]; ok {
		return dt
	}
	if e.dtypes == nil {
		e.dtypes = map[string]DeviceType{}
	}
	e.ids.dtype++
	m := Brief{ID: 1, URL: e.base + "dcim/manufacturers/1/", Display: "unspecified", Name: "unspecified", Slug: "unspecified"}
	dt := DeviceType{ID: e.ids.dtype, URL: e.url("dcim/device-types", e.ids.dtype), Display: model, Manufacturer: m, Model: model, Slug: slug(model)}
	e.dtypes[model] = dt
	return dt
}

func (e *exporter) role(kind string) Brief {
	if r, ok := e.roles[kind]; ok {
		return r
	}
	if e.roles == nil {
		e.roles = map[string]Brief{}
	}
	e.ids.role++
	r := Brief{ID: e.ids.role, URL: e.url("dcim/device-roles", e.ids.role), Display: kind, Name: kind, Slug: kind}
	e.roles[kind] = r
	return r
}

func (e *exporter) cable(tray Device, iface string, sw Device, port string) Cable {
	e.ids.cable++
	end := func(d Device, name string) []Termination {
		e.ids.iface++
		in := &Interface{ID: e.ids.iface, URL: e.url("dcim/interfaces", e.ids.iface), Display: name, Name: name,
			Device: DeviceBrief{ID: d.ID, URL: d.URL, Display: d.Display, Name: d.Name}}
		return []Termination{{ID: e.ids.iface, ObjectType: "dcim.interface", ObjectID: in.ID, Object: in}}
	}
	label := tray.Display + " " + iface
	return Cable{ID: e.ids.cable, URL: e.url("dcim/cables", e.ids.cable), Display: label, Type: "cat6", ATerminations: end(tray, iface), BTerminations: end(sw, port),
		Status: Choice{"connected", "Connected"}, Label: label, CustomFields: CustomFields{}}
}

func jsonOf(v any) json.RawMessage { return json.RawMessage(jraw(v)) }

func strOrNull(s string) json.RawMessage {
	if s == "" {
		return json.RawMessage("null")
	}
	return jsonOf(s)
}

func set(cf CustomFields, k, v string) {
	if v != "" {
		cf[k] = jsonOf(v)
	}
}

func ptrOrNil(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func slug(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	return b.String()
}

// file is an endpoint's file name in an export directory: dcim/racks →
// dcim-racks.json, its page n (from 2) dcim-racks.n.json.
func file(endpoint string, page int) string {
	base := strings.ReplaceAll(endpoint, "/", "-")
	if page <= 1 {
		return base + ".json"
	}
	return base + "." + strconv.Itoa(page) + ".json"
}

// WriteDir writes the export into dir as NetBox's API pages it: each
// endpoint's results in pages of limit (0: one page), with count, next
// and previous as the API gives them.
func WriteDir(dir string, e *Export, base string, limit int) error {
	if base == "" {
		base = DefaultBaseURL
	}
	base = strings.TrimSuffix(base, "/") + "/"
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	lists := map[string][]any{}
	add := func(ep string, n int, at func(i int) any) {
		for i := range n {
			lists[ep] = append(lists[ep], at(i))
		}
	}
	add("dcim/racks", len(e.Racks), func(i int) any { return e.Racks[i] })
	add("dcim/devices", len(e.Devices), func(i int) any { return e.Devices[i] })
	add("dcim/power-panels", len(e.PowerPanels), func(i int) any { return e.PowerPanels[i] })
	add("dcim/power-feeds", len(e.PowerFeeds), func(i int) any { return e.PowerFeeds[i] })
	add("dcim/cables", len(e.Cables), func(i int) any { return e.Cables[i] })
	for _, ep := range Endpoints {
		all := lists[ep]
		per := limit
		if per <= 0 || per > len(all) {
			per = max(len(all), 1)
		}
		pages := max((len(all)+per-1)/per, 1)
		for p := 1; p <= pages; p++ {
			lo, hi := (p-1)*per, min(p*per, len(all))
			pg := Page[any]{Count: len(all), Results: append([]any{}, all[lo:hi]...)}
			if p < pages {
				pg.Next = link(base, ep, per, hi)
			}
			if p > 1 {
				pg.Previous = link(base, ep, per, lo-per)
			}
			var b bytes.Buffer
			enc := json.NewEncoder(&b)
			enc.SetEscapeHTML(false) // as NetBox writes its links: &offset=
			enc.SetIndent("", "  ")
			if err := enc.Encode(pg); err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(dir, file(ep, p)), b.Bytes(), 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

func link(base, ep string, limit, offset int) *string {
	s := fmt.Sprintf("%s%s/?limit=%d", base, ep, limit)
	if offset > 0 {
		s += "&offset=" + strconv.Itoa(offset)
	}
	return &s
}
