package binding

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/seamdc/seam/internal/diag"
	"github.com/seamdc/seam/internal/profile"
	"github.com/seamdc/seam/internal/units"
)

// Rule ids of binding problems.
const (
	RuleUnknownProfile   = "BIND001" // a device names a profile that no directory defines
	RuleProtocol         = "BIND002" // a device's protocol does not match its profile's
	RuleUnknownDevice    = "BIND003" // a channel or load bank names no device
	RuleUnknownPoint     = "BIND004" // a channel or role names no point of the profile
	RuleDimension        = "BIND005" // a channel bound to a point of another dimension
	RuleUnbound          = "BIND006" // a channel or load bank of the site left unbound
	RuleUnknownChannel   = "BIND007" // a channel or load bank that the site does not have
	RuleInlineSecret     = "BIND008" // a credential written inline instead of by reference
	RuleAddress          = "BIND009" // an address that cannot be dialled
	RuleRole             = "BIND010" // a load bank role played by a point of the wrong kind
	RuleDuration         = "BIND011" // a timeout that is not a time
	RuleProfiles         = "BIND012" // a profile directory that cannot be read
	RuleDuplicateProfile = "BIND013" // one profile name in two directories
	RuleContracts        = "BIND014" // the contract directory does not load
)

// Rules describes every rule id that Load can report besides the
// schema's and the profiles' own.
var Rules = map[string]string{
	RuleUnknownProfile:   "a device names a profile that no profile directory defines",
	RuleProtocol:         "a device's protocol does not match its profile's (snmp-* needs an snmp profile)",
	RuleUnknownDevice:    "a channel or load bank names a device that is not declared",
	RuleUnknownPoint:     "a channel or load bank role names a point its device's profile does not have",
	RuleDimension:        "a channel bound to a point of another dimension (a temperature to a pressure)",
	RuleUnbound:          "a channel or load bank of the site that the binding leaves unbound",
	RuleUnknownChannel:   "a bound channel or load bank that the site does not have",
	RuleInlineSecret:     "a credential written inline: use env:NAME or file:PATH",
	RuleAddress:          "an address that cannot be dialled (want host:port, or a serial device for RTU)",
	RuleRole:             "a load bank role played by a point of the wrong kind (not writable, wrong unit)",
	RuleDuration:         "a timeout that is not a positive time",
	RuleProfiles:         "a profile directory that cannot be read",
	RuleDuplicateProfile: "a profile name defined in two profile directories",
	RuleContracts:        "the contract directory named by `contracts` does not load cleanly",
}

// resolve links devices to profiles, channels and load banks to devices
// and points, and checks what needs no site: protocols, addresses,
// credentials, load bank roles.
func (b *Binding) resolve() diag.List {
	var diags diag.List
	for _, dev := range b.Devices {
		b.resolveDevice(dev, &diags)
	}
	for _, ch := range b.Channels {
		path := "channels." + quote(ch.Name)
		ch.Device = b.Device(ch.DeviceName)
		if ch.Device == nil {
			diags.Errorf(RuleUnknownDevice, ch.Pos, path, "%s: no device %q", path, ch.DeviceName).Hint = profile.Suggest(ch.DeviceName, b.DeviceNames())
			continue
		}
		ch.Point = lookupPoint(ch.Device, ch.PointName, path, ch.Pos, &diags)
	}
	for _, lb := range b.LoadBanks {
		b.resolveLoadBank(lb, &diags)
	}
	return diags
}

func (b *Binding) resolveDevice(dev *Device, diags *diag.List) {
	path := "devices." + quote(dev.Name)
	dev.Profile = b.Profiles.Get(dev.ProfileName)
	switch {
	case dev.Profile == nil && len(b.Profiles.Profiles) > 0:
		diags.Errorf(RuleUnknownProfile, dev.Pos, path, "%s: no profile %q in %s", path, dev.ProfileName, strings.Join(b.relDirs(), ", ")).Hint =
			profile.Suggest(dev.ProfileName, b.Profiles.Names())
	case dev.Profile != nil && dev.Profile.Protocol != dev.Protocol.Family():
		diags.Errorf(RuleProtocol, dev.Pos, path, "%s: protocol %s cannot read profile %s, which is %s", path, dev.Protocol, dev.ProfileName, dev.Profile.Protocol)
	}
	if err := checkAddress(dev); err != nil {
		diags.Errorf(RuleAddress, dev.Pos, path+".address", "%s.address: %v", path, err)
	}
	for _, s := range dev.secrets() {
		if !s.valid() {
			diags.Errorf(RuleInlineSecret, s.Pos, path, "%s: the %s is written inline or malformed; credentials are never written in a binding", path, strings.TrimSuffix(s.What, " of device "+dev.Name)).Hint =
				"write a reference: \"env:NAME\" (an environment variable) or \"file:PATH\" (relative to the binding)"
		}
	}
}

// secrets lists the device's credential references.
func (dev *Device) secrets() []Secret {
	var out []Secret
	if dev.Protocol == SNMPv2c {
		out = append(out, dev.Community)
	}
	if dev.V3 != nil {
		out = append(out, dev.V3.AuthPass)
		if dev.V3.PrivProtocol != "" {
			out = append(out, dev.V3.PrivPass)
		}
	}
	return out
}

func checkAddress(dev *Device) error {
	if dev.Protocol == ModbusRTU {
		if !strings.HasPrefix(dev.Address, "/") {
			return fmt.Errorf("%q is not a serial device path such as /dev/ttyUSB0", dev.Address)
		}
		return nil
	}
	host, port, err := net.SplitHostPort(dev.Address)
	if err != nil {
		return fmt.Errorf("%q is not host:port: %v", dev.Address, strings.TrimPrefix(err.Error(), "address "+dev.Address+": "))
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || host == "" {
		return fmt.Errorf("%q needs a host and a port 1..65535", dev.Address)
	}
	return nil
}

func (b *Binding) relDirs() []string {
	var out []string
	for _, d := range b.ProfileDirs {
		out = append(out, rebase(b.Dir, d, diag.Pos{File: "."}).File)
	}
	return out
}

// lookupPoint finds a point of the device's profile, reporting it when
// missing. A device without a known profile was reported already.
func lookupPoint(dev *Device, name, path string, pos diag.Pos, diags *diag.List) *profile.Point {
	if dev.Profile == nil {
		return nil
	}
	pt := dev.Profile.Point(name)
	if pt == nil {
		diags.Errorf(RuleUnknownPoint, pos, path, "%s: profile %s of device %s has no point %q", path, dev.ProfileName, dev.Name, name).Hint =
			profile.Suggest(name, dev.Profile.PointNames())
	}
	return pt
}

func (b *Binding) resolveLoadBank(lb *LoadBank, diags *diag.List) {
	path := "loadbanks." + quote(lb.Name)
	lb.Device = b.Device(lb.DeviceName)
	if lb.Device == nil {
		diags.Errorf(RuleUnknownDevice, lb.Pos, path, "%s: no device %q", path, lb.DeviceName).Hint = profile.Suggest(lb.DeviceName, b.DeviceNames())
		return
	}
	for _, role := range Roles {
		pt := lookupPoint(lb.Device, lb.Roles[role], path+".points."+quote(role), lb.Pos, diags)
		if pt == nil {
			continue
		}
		spec := roleSpec[role]
		switch {
		case spec.write && !pt.Writable():
			diags.Errorf(RuleRole, lb.Pos, path, "%s: the %s role needs a writable point, and %s of profile %s is read-only", path, role, pt.Name, lb.Device.ProfileName)
		case !spec.write && pt.Writable():
			diags.Errorf(RuleRole, lb.Pos, path, "%s: the %s role is only read, but %s of profile %s is writable: a wrong mapping could write it", path, role, pt.Name, lb.Device.ProfileName)
		case pt.Dim != spec.dim:
			diags.Errorf(RuleRole, lb.Pos, path, "%s: the %s role needs %s, and %s of profile %s is %s", path, role, dimWord(spec.dim), pt.Name, lb.Device.ProfileName, dimWord(pt.Dim))
		}
	}
}

func dimWord(d units.Dimension) string {
	switch d {
	case profile.Raw:
		return "a plain number"
	case profile.Alarm:
		return "an alarm"
	}
	return "a " + strings.ReplaceAll(string(d), "_", " ")
}

// Requirements is what a site (or a plan) needs bound.
type Requirements struct {
	Source    string // what it comes from, for messages: a contract directory or a plan
	Channels  []Want
	LoadBanks []string
}

// Want is a channel that must be bound.
type Want struct {
	Name   string
	Dim    units.Dimension // a dimension, or profile.Alarm
	Safety bool
	Pos    diag.Pos // where the site declares it, if known
}

// Check reports channels and load banks that req needs and the binding
// leaves unbound, bound channels and load banks that req does not know,
// and channels bound to a point of another dimension.
func (b *Binding) Check(req Requirements) diag.List {
	var diags diag.List
	wanted := map[string]Want{}
	var names []string
	for _, w := range req.Channels {
		wanted[w.Name] = w
		names = append(names, w.Name)
	}
	for _, w := range req.Channels {
		if b.Channel(w.Name) == nil {
			d := diags.Errorf(RuleUnbound, b.where(b.channelsPos), "channels", "channel %q (%s) of %s is not bound", w.Name, dimWord(w.Dim), req.Source)
			d.Hint = fmt.Sprintf("add channels: %q: {device: \"…\", point: \"…\"}", w.Name)
			if w.Pos.IsValid() {
				d.Related = []diag.Related{{Pos: w.Pos, Message: "declared here"}}
			}
		}
	}
	for _, ch := range b.Channels {
		path := "channels." + quote(ch.Name)
		w, ok := wanted[ch.Name]
		switch {
		case !ok:
			diags.Errorf(RuleUnknownChannel, ch.Pos, path, "%s: %s has no channel %q", path, req.Source, ch.Name).Hint = profile.Suggest(ch.Name, names)
		case ch.Point != nil && ch.Point.Dim != w.Dim:
			diags.Errorf(RuleDimension, ch.Pos, path, "%s: the channel is %s, but point %s of profile %s is %s", path, dimWord(w.Dim), ch.Point.Name, ch.Device.ProfileName, dimWord(ch.Point.Dim)).Hint =
				"bind a point of the channel's quantity; docs/devices.md lists the shipped profiles' points"
		}
	}
	b.checkLoadBanks(req, &diags)
	return diags
}

func (b *Binding) checkLoadBanks(req Requirements, diags *diag.List) {
	want := map[string]bool{}
	for _, name := range req.LoadBanks {
		want[name] = true
		if b.LoadBank(name) == nil {
			diags.Errorf(RuleUnbound, b.where(b.loadbanksPos), "loadbanks", "load bank %q of %s is not bound", name, req.Source).Hint =
				fmt.Sprintf("add loadbanks: %q: {device: \"…\"}", name)
		}
	}
	for _, lb := range b.LoadBanks {
		if !want[lb.Name] {
			diags.Errorf(RuleUnknownChannel, lb.Pos, "loadbanks."+quote(lb.Name), "loadbanks.%s: %s has no load bank %q", quote(lb.Name), req.Source, lb.Name).Hint =
				profile.Suggest(lb.Name, req.LoadBanks)
		}
	}
}

// where is the position at which a missing binding is reported: the
// channels or loadbanks field, else the first device.
func (b *Binding) where(p diag.Pos) diag.Pos {
	if p.IsValid() {
		return p
	}
	for _, d := range b.Devices {
		if d.Pos.IsValid() {
			return diag.Pos{File: d.Pos.File}
		}
	}
	return diag.Pos{File: "."}
}
