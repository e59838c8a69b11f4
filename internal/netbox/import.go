package netbox

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/seamdc/seam/internal/inventory"
)

// ObjectError is a NetBox object seam cannot import: its endpoint, id
// and name, and the field.
type ObjectError struct {
	Endpoint string // dcim/devices
	ID       int
	Name     string
	Field    string
	Detail   string
}

func (e *ObjectError) Error() string {
	name := ""
	if e.Name != "" {
		name = fmt.Sprintf(" (%s)", e.Name)
	}
	field := ""
	if e.Field != "" {
		field = ", field " + e.Field
	}
	return fmt.Sprintf("%s id %d%s%s: %s", e.Endpoint, e.ID, name, field, e.Detail)
}

// ReadDir reads an export directory: each endpoint's pages (file gives
// their names), checked against the count NetBox gives.
func ReadDir(dir string) (*Export, error) {
	e := &Export{}
	var err error
	if e.Racks, err = readPages[Rack](dir, "dcim/racks"); err != nil {
		return nil, err
	}
	if e.Devices, err = readPages[Device](dir, "dcim/devices"); err != nil {
		return nil, err
	}
	if e.PowerPanels, err = readPages[PowerPanel](dir, "dcim/power-panels"); err != nil {
		return nil, err
	}
	if e.PowerFeeds, err = readPages[PowerFeed](dir, "dcim/power-feeds"); err != nil {
		return nil, err
	}
	if e.Cables, err = readPages[Cable](dir, "dcim/cables"); err != nil {
		return nil, err
	}
	return e, nil
}

func readPages[T any](dir, endpoint string) ([]T, error) {
	var out []T
	count := -1
	for p := 1; ; p++ {
		path := filepath.Join(dir, file(endpoint, p))
		raw, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			if p == 1 {
				return nil, fmt.Errorf("%s: no %s: save each endpoint's pages as the API returns them (GET /api/%s/?limit=1000 → %s)", dir, file(endpoint, 1), endpoint, file(endpoint, 1))
			}
			break
		}
		if err != nil {
			return nil, err
		}
		var pg Page[T]
		if err := decode(raw, &pg); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if count >= 0 && pg.Count != count {
			return nil, fmt.Errorf("%s: count %d, but page 1 says %d: the pages are of different exports", path, pg.Count, count)
		}
		count = pg.Count
		out = append(out, pg.Results...)
		if pg.Next == nil {
			break
		}
	}
	if len(out) != count {
		return nil, fmt.Errorf("%s: NetBox counts %d %s, the pages hold %d: save every page (follow next) as %s, %s, …", dir, count, endpoint, len(out), file(endpoint, 1), file(endpoint, 2))
	}
	return out, nil
}

// decode reads JSON, naming the line of a syntax or type error.
func decode(raw []byte, v any) error {
	err := json.Unmarshal(raw, v)
	var off int64 = -1
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
	}
	if off < 0 {
		return err
	}
	return fmt.Errorf("line %d: %w", 1+bytes.Count(raw[:min(int(off), len(raw))], []byte("\n")), err)
}

// ImportSite reads the site out of an export: each rack with its
// devices as trays (in the order of their ids), the BMC and data cables
// to switches of their racks, the power panels and feeds. Every problem
// names the object and the field.
func ImportSite(e *Export) (*Site, error) {
	s := &Site{}
	racks := map[int]*inventory.RackRecord{}
	for _, r := range e.Racks {
		rr, err := importRack(r)
		if err != nil {
			return nil, err
		}
		if s.Name == "" {
			s.Name = r.Site.Name
		} else if r.Site.Name != s.Name {
			return nil, &ObjectError{"dcim/racks", r.ID, r.Name, "site", fmt.Sprintf("site %q, but the racks before it are of %q: export one site", r.Site.Name, s.Name)}
		}
		if racks[r.ID] != nil {
			return nil, &ObjectError{"dcim/racks", r.ID, r.Name, "id", "two racks have this id"}
		}
		racks[r.ID] = rr
		s.Racks = append(s.Racks, rr)
	}
	trays := map[int]*tray{}
	for _, d := range e.Devices {
		t, err := importDevice(d, racks)
		if err != nil {
			return nil, err
		}
		trays[d.ID] = t
		t.rack.Trays = append(t.rack.Trays, t.rec)
	}
	for _, c := range e.Cables {
		if err := importCable(c, trays); err != nil {
			return nil, err
		}
	}
	panels := map[int]string{}
	for _, p := range e.PowerPanels {
		if p.Name == "" {
			return nil, &ObjectError{"dcim/power-panels", p.ID, "", "name", "a power panel needs its name (seam's power block)"}
		}
		panels[p.ID] = p.Name
		s.Panels = append(s.Panels, p.Name)
	}
	for _, f := range e.PowerFeeds {
		panel, ok := panels[f.PowerPanel.ID]
		if !ok {
			return nil, &ObjectError{"dcim/power-feeds", f.ID, f.Name, "power_panel", fmt.Sprintf("power panel id %d is not in dcim/power-panels", f.PowerPanel.ID)}
		}
		s.Feeds = append(s.Feeds, Feed{Name: f.Name, Panel: panel})
	}
	return s, nil
}

type tray struct {
	rack *inventory.RackRecord
	rec  *inventory.TrayRecord
	name string
}

func importRack(r Rack) (*inventory.RackRecord, error) {
	bad := func(field, format string, args ...any) error {
		return &ObjectError{"dcim/racks", r.ID, r.Name, field, fmt.Sprintf(format, args...)}
	}
	if r.Name == "" {
		return nil, bad("name", "a rack needs its name")
	}
	rr := &inventory.RackRecord{Name: r.Name, Serial: r.Serial, AssetTag: deref(r.AssetTag), Trays: []*inventory.TrayRecord{}}
	var err error
	if rr.Module, err = cfString(r.CustomFields, cfModule); err != nil {
		return nil, bad("custom_fields."+cfModule, "%v", err)
	}
	if rr.Module == "" && r.Location != nil {
		rr.Module = r.Location.Name
	}
	if rr.Module == "" {
		return nil, bad("custom_fields."+cfModule, "no seam module: set the custom field %s (or the rack's location) to the module's id", cfModule)
	}
	if rr.Position, err = cfString(r.CustomFields, cfPosition); err != nil {
		return nil, bad("custom_fields."+cfPosition, "%v", err)
	}
	if rr.PartNumber, err = cfString(r.CustomFields, cfPartNumber); err != nil {
		return nil, bad("custom_fields."+cfPartNumber, "%v", err)
	}
	return rr, nil
}

func importDevice(d Device, racks map[int]*inventory.RackRecord) (*tray, error) {
	name := deref(d.Name)
	bad := func(field, format string, args ...any) error {
		return &ObjectError{"dcim/devices", d.ID, name, field, fmt.Sprintf(format, args...)}
	}
	if d.Rack == nil {
		return nil, bad("rack", "the device is in no rack: seam imports racked devices (trays) only")
	}
	rack := racks[d.Rack.ID]
	if rack == nil {
		return nil, bad("rack", "rack id %d (%s) is not in dcim/racks", d.Rack.ID, d.Rack.Name)
	}
	if d.Position == nil {
		return nil, bad("position", "a device of rack %s has no position: give its U", rack.Name)
	}
	if *d.Position < 1 || *d.Position != math.Trunc(*d.Position) {
		return nil, bad("position", "U %g: seam's trays sit at whole units from U1", *d.Position)
	}
	if d.Role.Slug == "" {
		return nil, bad("role", "no role slug: the role is the tray's kind (compute, power-shelf, tor-switch, …)")
	}
	t := &inventory.TrayRecord{Slot: int(*d.Position), Kind: d.Role.Slug, PartNumber: d.DeviceType.Model, Serial: d.Serial, AssetTag: deref(d.AssetTag)}
	cf := d.CustomFields
	strs := []struct {
		key string
		to  *string
	}{{cfKubernetes, new(string)}, {cfBMCName, new(string)}, {cfBMCAddress, new(string)}, {cfBMCMAC, new(string)}, {cfBMCFirmware, new(string)},
		{cfPDU, &t.PDU}, {cfScaleUp, &t.ScaleUpDomain}}
	for _, s := range strs {
		v, err := cfString(cf, s.key)
		if err != nil {
			return nil, bad("custom_fields."+s.key, "%v", err)
		}
		*s.to = v
	}
	if raw, ok := cf[cfPartNumber]; ok {
		var pn *string
		if err := json.Unmarshal(raw, &pn); err != nil {
			return nil, bad("custom_fields."+cfPartNumber, "want a string: %v", err)
		}
		t.PartNumber = deref(pn)
	}
	for _, j := range []struct {
		key string
		to  any
	}{{cfFirmware, &t.Firmware}, {cfParts, &t.Parts}, {cfPSUs, &t.PSUs}} {
		if raw, ok := cf[j.key]; ok && string(raw) != "null" {
			if err := json.Unmarshal(raw, j.to); err != nil {
				return nil, bad("custom_fields."+j.key, "%v", err)
			}
		}
	}
	k8s, bmcName, bmcAddr, mac, fw := *strs[0].to, *strs[1].to, *strs[2].to, *strs[3].to, *strs[4].to
	if name != "" || k8s != "" || bmcName != "" {
		t.Node = &inventory.NodeNames{Slurm: name, Kubernetes: k8s, BMC: bmcName}
	}
	if d.OOBIP != nil {
		p, err := netip.ParsePrefix(d.OOBIP.Address)
		if err != nil {
			return nil, bad("oob_ip.address", "%q is not an address with its prefix length: %v", d.OOBIP.Address, err)
		}
		if bmcAddr != "" {
			return nil, bad("custom_fields."+cfBMCAddress, "the device has an oob_ip as well: give its BMC's address once")
		}
		bmcAddr = p.Addr().String()
	}
	if bmcAddr != "" || mac != "" || fw != "" {
		t.BMC = &inventory.BMCRecord{Address: bmcAddr, MAC: mac, Firmware: fw}
	}
	return &tray{rack: rack, rec: t, name: name}, nil
}

// importCable puts a cable between a tray's bmc or data interface and a
// switch of its rack on the tray's record.
func importCable(c Cable, trays map[int]*tray) error {
	bad := func(field, format string, args ...any) error {
		return &ObjectError{"dcim/cables", c.ID, c.Label, field, fmt.Sprintf(format, args...)}
	}
	end := func(field string, ts []Termination) (*tray, string, error) {
		if len(ts) != 1 {
			return nil, "", bad(field, "%d termination(s): seam imports cables with one interface at each end", len(ts))
		}
		tm := ts[0]
		if tm.ObjectType != "dcim.interface" {
			return nil, "", bad(field, "terminates on a %s: seam imports cables between interfaces", tm.ObjectType)
		}
		if tm.Object == nil {
			return nil, "", bad(field+".object", "interface id %d comes without its object: export with the API (its cable ends carry the interface and its device)", tm.ObjectID)
		}
		t := trays[tm.Object.Device.ID]
		if t == nil {
			return nil, "", bad(field+".object.device", "device id %d is not in dcim/devices", tm.Object.Device.ID)
		}
		return t, tm.Object.Name, nil
	}
	a, ai, err := end("a_terminations", c.ATerminations)
	if err != nil {
		return err
	}
	b, bi, err := end("b_terminations", c.BTerminations)
	if err != nil {
		return err
	}
	if bi == bmcInterface || bi == dataInterface {
		a, ai, b, bi = b, bi, a, ai
	}
	if ai != bmcInterface && ai != dataInterface {
		return bad("a_terminations", "neither end is a tray's %q or %q interface (%q, %q)", bmcInterface, dataInterface, ai, bi)
	}
	if a.rack != b.rack {
		return bad("b_terminations", "the switch is in rack %s, the tray in %s: seam's handover cables a tray to a switch of its own rack", b.rack.Name, a.rack.Name)
	}
	port, err := portNumber(bi)
	if err != nil {
		return bad("b_terminations.object.name", "%v", err)
	}
	p := inventory.Port{Switch: b.rec.Slot, Port: port}
	switch ai {
	case bmcInterface:
		if a.rec.BMC == nil {
			a.rec.BMC = &inventory.BMCRecord{}
		}
		a.rec.BMC.Port = p
	default:
		a.rec.Data = &p
	}
	return nil
}

// portNumber is the port a switch interface's name ends with: port-12,
// Ethernet1/12, swp12 are port 12.
func portNumber(name string) (int, error) {
	i := len(name)
	for i > 0 && name[i-1] >= '0' && name[i-1] <= '9' {
		i--
	}
	n, err := strconv.Atoi(name[i:])
	if err != nil || n < 1 {
		return 0, fmt.Errorf("switch interface %q: its name ends with no port number", name)
	}
	return n, nil
}

func cfString(cf CustomFields, key string) (string, error) {
	raw, ok := cf[key]
	if !ok {
		return "", nil
	}
	var s *string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("want a string, got %s", strings.TrimSpace(string(raw)))
	}
	return deref(s), nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
