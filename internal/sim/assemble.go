package sim

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/seamdc/seam/internal/binding"
	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/inventory"
	"github.com/seamdc/seam/internal/profile"
	"github.com/seamdc/seam/internal/sim/device"
	"github.com/seamdc/seam/internal/sim/simconfig"
)

// Config is what a simulation is built from.
type Config struct {
	Contracts *contract.Contracts
	Sim       *simconfig.Config
	Profiles  *profile.Set // the shipped profiles and the sim config's own
	Defect    string
	Secrets   Secrets
	Epoch     time.Time // wall time of sim time 0; zero: now
	Log       *slog.Logger
	// Graph is the inventory graph the fleet is generated from (nil:
	// built from Contracts and the handovers it has read).
	Graph *inventory.Graph
	// NoBMCs keeps Start from serving the fleet's BMCs (a run in process
	// that reads none of them need not open 1,689 ports).
	NoBMCs bool
}

// Secrets are the SNMP credentials the simulated agents accept, and
// the simulated BMCs' account.
type Secrets struct {
	Community, AuthPass, PrivPass string
	BMCUser, BMCPassword          string
}

// Environment variables of the SNMP credentials and the BMCs' account;
// the printed binding refers to them.
const (
	EnvCommunity   = "SEAM_SNMP_COMMUNITY"
	EnvAuth        = "SEAM_SNMP_AUTH"
	EnvPriv        = "SEAM_SNMP_PRIV"
	EnvBMCUser     = "SEAM_BMC_USER"
	EnvBMCPassword = "SEAM_BMC_PASSWORD"
)

// SecretsFrom reads the credentials from the environment, with loopback
// defaults for those unset.
func SecretsFrom(lookup func(string) (string, bool)) Secrets {
	get := func(k, def string) string {
		if v, ok := lookup(k); ok && v != "" {
			return v
		}
		return def
	}
	return Secrets{Community: get(EnvCommunity, "public"), AuthPass: get(EnvAuth, "seam-sim-auth"), PrivPass: get(EnvPriv, "seam-sim-priv"),
		BMCUser: get(EnvBMCUser, "admin"), BMCPassword: get(EnvBMCPassword, "seam-sim-bmc")}
}

// Sim is a simulated site with its devices.
type Sim struct {
	Site     *Site
	cfg      Config
	devices  []*device.Device // sorted by name
	byName   map[string]*device.Device
	channels []*binding.Channel
	banks    []*binding.LoadBank
	bmcs     bmcs
}

// New builds the site, its devices and its channel bindings; Start
// serves the devices.
func New(cfg Config) (*Sim, error) {
	if cfg.Epoch.IsZero() {
		cfg.Epoch = time.Now()
	}
	site, err := NewSite(cfg.Contracts, cfg.Sim, Options{Defect: cfg.Defect, Epoch: cfg.Epoch, Log: cfg.Log, Graph: cfg.Graph})
	if err != nil {
		return nil, err
	}
	s := &Sim{Site: site, cfg: cfg, byName: map[string]*device.Device{}}
	var errs []error
	for _, rule := range cfg.Sim.Devices {
		errs = append(errs, s.addDevices(rule)...)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	sort.Slice(s.devices, func(i, j int) bool { return s.devices[i].Name() < s.devices[j].Name() })
	if err := errors.Join(s.applyDefect(), s.bindChannels(), s.bindLoadBanks()); err != nil {
		return nil, err
	}
	site.SetDeviceFaulter(s)
	site.SetBMCFaulter(s)
	if cfg.Secrets.BMCUser == "" {
		s.cfg.Secrets.BMCUser, s.cfg.Secrets.BMCPassword = "admin", "seam-sim-bmc"
	}
	for _, d := range s.devices {
		site.AddDevice(d)
	}
	return s, nil
}

// addDevices gives every element the rule covers a device.
func (s *Sim) addDevices(rule *simconfig.Device) []error {
	prof := s.cfg.Profiles.Get(rule.Profile)
	if prof == nil {
		return []error{fmt.Errorf("%s: sim.devices.%s: no profile %q%s", rule.Pos, rule.Rule, rule.Profile,
			hint(profile.Suggest(rule.Profile, s.cfg.Profiles.Names())))}
	}
	var errs []error
	matched := 0
	for _, id := range s.Site.ElementIDs() {
		e := s.Site.elements[id]
		if e.Kind() != rule.Element || !rule.Matches(id, moduleOf(id, e.Kind())) {
			continue
		}
		matched++
		if err := s.addDevice(rule, prof, id, e); err != nil {
			errs = append(errs, err)
		}
	}
	if matched == 0 {
		errs = append(errs, fmt.Errorf("%s: sim.devices.%s matches no %s of the site", rule.Pos, rule.Rule, rule.Element))
	}
	return errs
}

func hint(s string) string {
	if s == "" {
		return ""
	}
	return ": " + s
}

// moduleOf is the module an element belongs to for a rule's modules
// filter: the IT module for a controls link, else the first segment.
func moduleOf(id, kind string) string {
	if kind == "link" {
		return lastSegment(id)
	}
	if kind == "pdu" {
		return elementModule(id)
	}
	if kind == "loadbank" {
		return "" // load banks are matched by id
	}
	return elementModule(id)
}

func (s *Sim) addDevice(rule *simconfig.Device, prof *profile.Profile, id string, e Element) error {
	name := rule.DeviceName(id)
	if s.byName[name] != nil {
		return fmt.Errorf("%s: sim.devices.%s: device name %q is taken (by element %s)", rule.Pos, rule.Rule, name, s.byName[name].Element())
	}
	maps, err := s.mappings(prof, e, id)
	if err != nil {
		return err
	}
	spec := device.Spec{Name: name, Element: id, Profile: prof, Mappings: maps}
	if prof.Protocol == profile.SNMP {
		spec.SNMP = device.SNMP{Version: rule.SNMP.Version, Community: s.cfg.Secrets.Community, User: rule.SNMP.User,
			AuthProto: rule.SNMP.Auth, AuthPass: s.cfg.Secrets.AuthPass, PrivProto: rule.SNMP.Priv, PrivPass: s.cfg.Secrets.PrivPass}
		if spec.SNMP.Version == "" {
			spec.SNMP.Version = "v2c"
		}
	}
	d, err := device.New(spec, siteSource{s.Site, e}, s.commander(e), s.Site.log)
	if err != nil {
		return fmt.Errorf("%s: %w", rule.Pos, err)
	}
	s.devices = append(s.devices, d)
	s.byName[name] = d
	return nil
}

// mappings turns the sim config's serve table for a profile into device
// mappings, checking every point and signal.
func (s *Sim) mappings(prof *profile.Profile, e Element, id string) ([]device.Mapping, error) {
	pms, ok := s.cfg.Sim.Serve[prof.Name]
	if !ok {
		return nil, fmt.Errorf("%s: sim.serve has no entry for profile %s (device of %s)", s.cfg.Sim.Dir, prof.Name, id)
	}
	signals := map[string]bool{device.SigUpdates: true, device.SigTime: true, device.SigUptime: true}
	for _, n := range e.Signals() {
		signals[n] = true
	}
	var out []device.Mapping
	var errs []error
	for _, pm := range pms {
		pt := prof.Point(pm.Point)
		switch {
		case pt == nil:
			errs = append(errs, fmt.Errorf("%s: sim.serve.%s: profile %s has no point %q%s", pm.Pos, prof.Name, prof.Name, pm.Point,
				hint(profile.Suggest(pm.Point, prof.PointNames()))))
		case !pm.IsConst && !signals[pm.Signal]:
			errs = append(errs, fmt.Errorf("%s: sim.serve.%s.%s: a %s (%s) has no signal %q (signals: %s)", pm.Pos, prof.Name, pm.Point,
				e.Kind(), id, pm.Signal, strings.Join(e.Signals(), ", ")))
		default:
			out = append(out, device.Mapping{Point: pt, Signal: pm.Signal, Const: pm.Const, IsConst: pm.IsConst})
		}
	}
	return out, errors.Join(errs...)
}

// siteSource reads an element's signals; Refresh runs inside Step, with
// the site's lock held.
type siteSource struct {
	s *Site
	e Element
}

func (src siteSource) Signal(n string) (float64, bool) { return src.e.Signal(n) }

// Fill writes all the element's signals at once, when it can.
func (src siteSource) Fill(m map[string]float64) bool {
	f, ok := src.e.(Filler)
	if ok {
		f.Fill(m)
	}
	return ok
}

// commander turns remote writes into element commands under the site's
// lock, and element errors into Modbus exceptions.
func (s *Sim) commander(e Element) device.CommandFunc {
	c, ok := e.(Commander)
	if !ok {
		return nil
	}
	return func(sig string, v float64) error {
		var err error
		s.Site.Locked(func() { err = c.Command(sig, v) })
		return commandError(err)
	}
}

// modbusError carries the exception code for a refused command.
type modbusError struct {
	err  error
	code int
}

func (e modbusError) Error() string        { return e.err.Error() }
func (e modbusError) Unwrap() error        { return e.err }
func (e modbusError) ModbusException() int { return e.code }

func commandError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrLocal):
		return modbusError{err, 1} // illegal function
	case errors.Is(err, ErrReadOnly):
		return modbusError{err, 2} // illegal data address
	case errors.Is(err, ErrOutOfRange):
		return modbusError{err, 3} // illegal data value
	}
	return modbusError{err, 4}
}

// applyDefect makes the defect's devices encode their points wrongly.
func (s *Sim) applyDefect() error {
	df := s.Site.defect
	if df == nil {
		return nil
	}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(df.Devices)) {
		pts := df.Devices[name]
		d := s.byName[name]
		if d == nil {
			errs = append(errs, fmt.Errorf("%s: defect %s: no device %q%s", df.Pos, df.Name, name, hint(profile.Suggest(name, s.deviceNames()))))
			continue
		}
		if err := d.SetFactors(pts); err != nil {
			errs = append(errs, fmt.Errorf("%s: defect %s: %w", df.Pos, df.Name, err))
		}
	}
	return errors.Join(errs...)
}

func (s *Sim) deviceNames() []string {
	var out []string
	for _, d := range s.devices {
		out = append(out, d.Name())
	}
	return out
}

// bindChannels finds the device point of every contract channel.
func (s *Sim) bindChannels() error {
	var errs []error
	seen := map[string]bool{}
	for _, b := range s.cfg.Contracts.Boundaries {
		for _, ch := range b.Channels {
			if seen[ch.Name] {
				continue
			}
			seen[ch.Name] = true
			bc, err := s.bindChannel(ch.Name)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			s.channels = append(s.channels, bc)
		}
	}
	sort.Slice(s.channels, func(i, j int) bool { return s.channels[i].Name < s.channels[j].Name })
	return errors.Join(errs...)
}

func (s *Sim) bindChannel(name string) (*binding.Channel, error) {
	var hits []*simconfig.Channel
	var vars map[string]string
	for _, c := range s.cfg.Sim.Channels {
		if v, ok := c.Match(name); ok {
			hits, vars = append(hits, c), v
		}
	}
	switch len(hits) {
	case 0:
		if s.gridChannel(name) {
			return s.bindPOI(name)
		}
		return nil, fmt.Errorf("%s: channel %s: no pattern of sim.channels matches it", s.cfg.Sim.Dir, name)
	case 1:
	default:
		return nil, fmt.Errorf("%s: channel %s: matched by %q and %q: make the patterns disjoint", hits[1].Pos, name, hits[0].Pattern, hits[1].Pattern)
	}
	c := hits[0]
	dev, pt := simconfig.Expand(c.Device, vars), simconfig.Expand(c.Point, vars)
	d := s.byName[dev]
	if d == nil {
		return nil, fmt.Errorf("%s: channel %s: no device %q%s", c.Pos, name, dev, hint(profile.Suggest(dev, s.deviceNames())))
	}
	if d.Profile().Point(pt) == nil {
		return nil, fmt.Errorf("%s: channel %s: profile %s of device %s has no point %q%s", c.Pos, name, d.Profile().Name, dev, pt,
			hint(profile.Suggest(pt, d.Profile().PointNames())))
	}
	return &binding.Channel{Name: name, DeviceName: dev, PointName: pt}, nil
}

// gridChannel says whether name is a grid boundary's channel (its
// grid.channel: the site's power at the point of interconnection).
func (s *Sim) gridChannel(name string) bool {
	for _, b := range s.cfg.Contracts.GridBoundaries() {
		if b.Grid != nil && b.Grid.Channel.To == name {
			return true
		}
	}
	return false
}

// bindPOI binds a grid boundary's channel to the power point of the
// device that serves the POI meter, when no pattern of sim.channels
// says otherwise.
func (s *Sim) bindPOI(name string) (*binding.Channel, error) {
	for _, d := range s.devices {
		if d.Element() == POIElement && d.Profile().Point("power") != nil {
			return &binding.Channel{Name: name, DeviceName: d.Name(), PointName: "power"}, nil
		}
	}
	return nil, fmt.Errorf("%s: channel %s is the grid boundary's power at the point of interconnection: give element %q a device "+
		"(sim.devices: {element: \"meter\", name: \"meter-{0}\", profile: \"generic-poi-meter\"}) or match the channel in sim.channels",
		s.cfg.Sim.Dir, name, POIElement)
}

// bindLoadBanks finds the device of every load bank.
func (s *Sim) bindLoadBanks() error {
	var errs []error
	for _, lb := range s.Site.banks {
		var dev *device.Device
		for _, d := range s.devices {
			if d.Element() == lb.ID {
				dev = d
			}
		}
		if dev == nil {
			errs = append(errs, fmt.Errorf("%s: load bank %s: no device rule of element loadbank serves it", s.cfg.Sim.Dir, lb.ID))
			continue
		}
		roles := map[string]string{}
		for _, role := range binding.Roles {
			if dev.Profile().Point(role) != nil {
				roles[role] = role // each role is played by the point of its name
			}
		}
		s.banks = append(s.banks, &binding.LoadBank{Name: lb.ID, DeviceName: dev.Name(), Roles: roles})
	}
	return errors.Join(errs...)
}

// ReadChannel reads a contract channel from its device's image, as a
// client reading the bound point would.
func (s *Sim) ReadChannel(name string) (float64, error) {
	for _, c := range s.channels {
		if c.Name == name {
			return s.byName[c.DeviceName].Read(c.PointName)
		}
	}
	return 0, fmt.Errorf("no channel %q", name)
}

// Devices lists the devices, sorted by name.
func (s *Sim) Devices() []*device.Device { return s.devices }

// Device returns the device called name, or nil.
func (s *Sim) Device(name string) *device.Device { return s.byName[name] }

// DeviceFault injects or clears a device fault (DeviceFaulter).
func (s *Sim) DeviceFault(kind, name string, code int, on bool) error {
	d := s.byName[name]
	if d == nil {
		return fmt.Errorf("%s: no device %q%s", kind, name, hint(profile.Suggest(name, s.deviceNames())))
	}
	return d.SetFault(kind, code, on)
}

// Start serves every device on its own loopback port, and every BMC of
// the fleet on its own. The devices refresh from the site's physics
// from New on, served or not.
func (s *Sim) Start() error {
	for i, d := range s.devices {
		if err := d.Start(); err != nil {
			for _, started := range s.devices[:i] {
				started.Stop()
			}
			return err
		}
	}
	if !s.cfg.NoBMCs {
		if err := s.startBMCs(); err != nil {
			s.Close()
			return err
		}
	}
	s.Site.log.Info("devices serving", "devices", len(s.devices), "bmcs", len(s.bmcs.servers))
	return nil
}

// ServeBMCs sets whether Start serves the fleet's BMCs (by default it
// does): a plan's run reads devices, never BMCs, and need not open a
// port per BMC (1,689 for the example).
func (s *Sim) ServeBMCs(on bool) { s.cfg.NoBMCs = !on }

// Close stops every device and BMC.
func (s *Sim) Close() {
	for _, d := range s.devices {
		d.Stop()
	}
	s.stopBMCs()
}

// SecretRefs say how the printed binding refers to the SNMP credentials.
type SecretRefs struct{ Community, Auth, Priv string }

// EnvRefs refer to the credentials' environment variables.
var EnvRefs = SecretRefs{Community: "env:" + EnvCommunity, Auth: "env:" + EnvAuth, Priv: "env:" + EnvPriv}

// deviceTimeout is how long a read of a simulated device may take in
// the binding the simulator writes: twice a real device's default,
// because the simulator answers hundreds of devices and BMCs from one
// process, and on a busy machine (CI) a loopback read can wait out a
// second with nothing wrong.
const deviceTimeout = 2 * time.Second

// Binding is the site binding of the running devices: every contract
// channel and load bank, and every device (rack PDUs, UPSes and CDUs too,
// so that `sat probe` can read them).
func (s *Sim) Binding(profileDirs []string, contracts string, refs SecretRefs) *binding.Binding {
	b := &binding.Binding{ProfileDirs: profileDirs, Contracts: contracts, Channels: s.channels, LoadBanks: s.banks}
	for _, d := range s.devices {
		bd := &binding.Device{Name: d.Name(), Address: d.Addr(), Unit: 1, Timeout: deviceTimeout, ProfileName: d.Profile().Name, Profile: d.Profile()}
		sp := d.Spec().SNMP
		switch {
		case d.Profile().Protocol == profile.Modbus:
			bd.Protocol = binding.ModbusTCP
		case sp.Version == "v3":
			bd.Protocol = binding.SNMPv3
			bd.V3 = &binding.V3{User: sp.User, AuthProtocol: orDefault(sp.AuthProto, "SHA"), AuthPass: binding.Secret{Ref: refs.Auth},
				PrivProtocol: orDefault(sp.PrivProto, "AES"), PrivPass: binding.Secret{Ref: refs.Priv}}
		default:
			bd.Protocol = binding.SNMPv2c
			bd.Community = binding.Secret{Ref: refs.Community}
		}
		b.Devices = append(b.Devices, bd)
	}
	return b
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// LoadProfiles loads profile directories into one set; a name defined
// twice is an error naming both directories.
func LoadProfiles(dirs ...string) (*profile.Set, error) {
	set := &profile.Set{}
	from := map[string]string{}
	for _, dir := range dirs {
		s, err := profile.MustLoad(dir)
		if err != nil {
			return nil, err
		}
		for _, p := range s.Profiles {
			if prev, ok := from[p.Name]; ok {
				return nil, fmt.Errorf("profile %s is defined in %s and in %s", p.Name, prev, dir)
			}
			from[p.Name] = dir
			set.Profiles = append(set.Profiles, p)
		}
	}
	sort.Slice(set.Profiles, func(i, j int) bool { return set.Profiles[i].Name < set.Profiles[j].Name })
	return set, nil
}

// ProfileDirs are the directories the sim config's profiles come from,
// after the shipped ones, made absolute.
func ProfileDirs(shipped string, cfg *simconfig.Config) []string {
	abs, err := filepath.Abs(shipped)
	if err != nil {
		abs = shipped
	}
	return append([]string{abs}, cfg.ProfileDirs...)
}
