package simconfig

import (
	_ "embed"
	"fmt"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"cuelang.org/go/cue"

	"github.com/seamdc/seam/internal/cueload"
	"github.com/seamdc/seam/internal/diag"
	"github.com/seamdc/seam/internal/units"
)

//go:embed schema.cue
var schemaCUE []byte

// ImportPath is where sim configs may import the schema from.
const ImportPath = "seam.dev/simconfig"

const bind = `import seamsim "seam.dev/simconfig"

sim: seamsim.#Sim
`

// Rule ids of sim config problems (the schema's own are cueload's).
const (
	RuleUnit    = "SIM001" // a quantity of the wrong dimension, or without unit
	RulePattern = "SIM003" // a channel pattern or device glob that cannot work
)

// Config is a loaded sim config.
type Config struct {
	Dir         string
	Rate        float64               // physics steps per second
	ProfileDirs []string              // absolute
	Serve       map[string][]PointMap // profile → what its points serve, sorted by point
	Devices     []*Device
	Channels    []*Channel
	Scripts     map[string][]Event
	Captures    *Captures // the simulated analyser (capture.go); nil: none
	Defects     map[string]*Defect
	FleetStart  string // the nodes' state when sat sim starts ("idle", "off"); "": unsaid

	power, cooling, controls, loadbank []setting
	blocks, loops                      map[string][]setting
}

// setting is one parameter as written.
type setting struct {
	name string
	v    float64
	b    bool
	pos  diag.Pos
}

// Device is a rule that gives each matching site element a device.
type Device struct {
	Rule    string // the rule's name
	Name    string // the device name template: {0}, {1}, {2} are the element id's segments
	Element string // loadbank, block, feed, pdu, loop, cdu, link, meter
	Modules []string
	Match   []string
	Profile string
	SNMP    SNMP
	Pos     diag.Pos
}

// SNMP is a device's SNMP security.
type SNMP struct {
	Version, User, Auth, Priv string
}

// PointMap says what a profile point serves: a signal of the element, or
// a constant (in the point's unit, canonical after loading).
type PointMap struct {
	Point   string
	Signal  string
	Const   float64
	IsConst bool
	Pos     diag.Pos
}

// Channel says which device point serves contract channels matching
// Pattern.
type Channel struct {
	Pattern       string
	Device, Point string
	Pos           diag.Pos
}

// Event is one step of a fault script.
type Event struct {
	At     float64 // s
	Fault  string  // inject
	Clear  string  // or clear
	Target string
	For    float64 // s; 0: until cleared
	Code   int
	Pos    diag.Pos
}

// Defect is a configuration in which a module breaks its contract.
type Defect struct {
	Name, Violates, Description string
	Devices                     map[string]map[string]float64 // device → point → factor
	// NoSmoothing: the fleet's GPUs run without the contract's power
	// smoothing
	NoSmoothing bool
	Pos         diag.Pos

	blocks, loops map[string][]setting
}

// Load reads a sim config directory.
func Load(dir string) (*Config, diag.List, error) {
	r, diags, err := cueload.Load(dir, cueload.Config{ImportPath: ImportPath, Files: map[string][]byte{"schema.cue": schemaCUE}, Bind: bind, SchemaDoc: "internal/sim/simconfig/schema.cue"})
	if err != nil {
		return nil, nil, fmt.Errorf("sim config: %w", err)
	}
	if diags.Count(diag.Error) > 0 {
		return nil, diags, nil
	}
	if err := r.Value.Err(); err != nil {
		return nil, r.Diagnostics(err, ""), nil
	}
	sim := r.Value.LookupPath(cue.ParsePath("sim"))
	if d := r.Validate(cue.ParsePath("sim")); len(d) > 0 {
		return nil, d, nil
	}
	d := &decoder{r: r}
	c := d.config(sim)
	if d.diags.Count(diag.Error) > 0 {
		return nil, d.diags.Sorted(), nil
	}
	return c, d.diags.Sorted(), nil
}

type decoder struct {
	r     *cueload.Result
	diags diag.List
}

func (d *decoder) config(sim cue.Value) *Config {
	c := &Config{Dir: d.r.Dir, Rate: 100, Scripts: map[string][]Event{}, Defects: map[string]*Defect{}, Serve: map[string][]PointMap{}}
	if v := sim.LookupPath(cue.ParsePath("rate")); v.Exists() {
		c.Rate = d.quantity(v, "sim.rate", units.Frequency)
	}
	for _, v := range list(sim.LookupPath(cue.ParsePath("profile_dirs"))) {
		s, _ := v.String()
		c.ProfileDirs = append(c.ProfileDirs, filepath.Join(d.r.Dir, s))
	}
	c.power = settings(d, sim, "power", powerFields)
	c.cooling = settings(d, sim, "cooling", coolingFields)
	c.controls = settings(d, sim, "controls", controlsFields)
	c.loadbank = settings(d, sim, "loadbanks", loadBankFields)
	c.blocks = perElement(d, sim, "blocks", powerFields)
	c.loops = perElement(d, sim, "loops", coolingFields)
	serve := sim.LookupPath(cue.ParsePath("serve"))
	for _, l := range cueload.Labels(serve) {
		c.Serve[l] = d.points(l, serve.LookupPath(cue.MakePath(cue.Str(l))))
	}
	for _, l := range cueload.Labels(sim.LookupPath(cue.ParsePath("devices"))) {
		c.Devices = append(c.Devices, d.device(l, sim.LookupPath(cue.MakePath(cue.Str("devices"), cue.Str(l)))))
	}
	for _, l := range cueload.Labels(sim.LookupPath(cue.ParsePath("channels"))) {
		c.Channels = append(c.Channels, d.channel(l, sim.LookupPath(cue.MakePath(cue.Str("channels"), cue.Str(l)))))
	}
	for _, l := range cueload.Labels(sim.LookupPath(cue.ParsePath("scripts"))) {
		c.Scripts[l] = d.script(l, sim.LookupPath(cue.MakePath(cue.Str("scripts"), cue.Str(l))))
	}
	c.Captures = d.captures(sim)
	c.FleetStart = str(sim, "fleet_start")
	for _, l := range cueload.Labels(sim.LookupPath(cue.ParsePath("defects"))) {
		c.Defects[l] = d.defect(l, sim.LookupPath(cue.MakePath(cue.Str("defects"), cue.Str(l))))
	}
	return c
}

func (d *decoder) device(rule string, v cue.Value) *Device {
	dev := &Device{Rule: rule, Name: str(v, "name"), Element: str(v, "element"), Profile: str(v, "profile"), Pos: d.r.UserPos(v)}
	dev.Modules = strs(v.LookupPath(cue.ParsePath("modules")))
	dev.Match = strs(v.LookupPath(cue.ParsePath("match")))
	for _, m := range dev.Match {
		if _, err := path.Match(m, ""); err != nil {
			d.diags.Errorf(RulePattern, dev.Pos, "", "sim.devices.%s.match: %q is not a glob: %v", rule, m, err)
		}
	}
	if s := v.LookupPath(cue.ParsePath("snmp")); s.Exists() {
		dev.SNMP = SNMP{Version: str(s, "version"), User: str(s, "user"), Auth: str(s, "auth"), Priv: str(s, "priv")}
	}
	return dev
}

// points decodes what a profile's points serve.
func (d *decoder) points(prof string, v cue.Value) []PointMap {
	var out []PointMap
	for _, p := range cueload.Labels(v) {
		pv := v.LookupPath(cue.MakePath(cue.Str(p)))
		pm := PointMap{Point: p, Pos: d.r.UserPos(pv)}
		if f, err := pv.Float64(); err == nil {
			pm.Const, pm.IsConst = f, true
		} else if s, _ := pv.String(); s != "" && strings.ContainsAny(s[:1], "+-0123456789.") {
			qq, err := units.Parse(s)
			if err != nil {
				d.diags.Errorf(RuleUnit, pm.Pos, "", "sim.serve.%s.%s: %v", prof, p, err)
			}
			pm.Const, pm.IsConst = qq.Canon, true
		} else {
			pm.Signal = s
		}
		out = append(out, pm)
	}
	return out
}

// DeviceName expands a device name template for an element id.
func (dev *Device) DeviceName(element string) string {
	name := dev.Name
	for i, seg := range strings.Split(element, "/") {
		name = strings.ReplaceAll(name, "{"+strconv.Itoa(i)+"}", seg)
	}
	return name
}

// Matches reports whether the rule covers an element of its kind, given
// the module the element belongs to.
func (dev *Device) Matches(element, module string) bool {
	if len(dev.Modules) > 0 && !slices.Contains(dev.Modules, module) {
		return false
	}
	if len(dev.Match) == 0 {
		return true
	}
	for _, m := range dev.Match {
		if ok, _ := path.Match(m, element); ok {
			return true
		}
	}
	return false
}

func (d *decoder) channel(pattern string, v cue.Value) *Channel {
	ch := &Channel{Pattern: pattern, Device: str(v, "device"), Point: str(v, "point"), Pos: d.r.UserPos(v)}
	vars := map[string]bool{}
	for _, seg := range strings.Split(pattern, "/") {
		if isVar(seg) {
			vars[seg] = true
		} else if strings.ContainsAny(seg, "{}") {
			d.diags.Errorf(RulePattern, ch.Pos, "", "channel pattern %q: a {name} must be a whole path segment", pattern)
		}
	}
	for _, used := range varRE.FindAllString(ch.Device+" "+ch.Point, -1) {
		if !vars[used] {
			d.diags.Errorf(RulePattern, ch.Pos, "", "channel pattern %q: %q uses %s, which the pattern does not bind", pattern, ch.Device, used)
		}
	}
	return ch
}

var varRE = regexp.MustCompile(`\{[a-z0-9_-]+\}`)

func (d *decoder) script(name string, v cue.Value) []Event {
	var out []Event
	for i, ev := range list(v) {
		path := fmt.Sprintf("sim.scripts.%s[%d]", name, i)
		e := Event{Fault: str(ev, "fault"), Clear: str(ev, "clear"), Target: str(ev, "target"), Pos: d.r.UserPos(ev)}
		e.At = d.quantity(ev.LookupPath(cue.ParsePath("at")), path+".at", units.Time)
		if f := ev.LookupPath(cue.ParsePath("for")); f.Exists() {
			e.For = d.quantity(f, path+".for", units.Time)
		}
		if c, err := ev.LookupPath(cue.ParsePath("code")).Int64(); err == nil {
			e.Code = int(c)
		}
		if (e.Fault == "") == (e.Clear == "") {
			d.diags.Errorf(cueload.RuleSchema, e.Pos, "", "%s: an event either injects a fault or clears one", path)
		}
		out = append(out, e)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At < out[j].At })
	return out
}

func (d *decoder) defect(name string, v cue.Value) *Defect {
	df := &Defect{Name: name, Violates: str(v, "violates"), Description: str(v, "description"), Pos: d.r.UserPos(v),
		Devices: map[string]map[string]float64{}}
	df.blocks = perElement(d, v, "blocks", powerFields)
	df.loops = perElement(d, v, "loops", coolingFields)
	if sm := v.LookupPath(cue.ParsePath("fleet.smoothing")); sm.Exists() {
		on, _ := sm.Bool()
		df.NoSmoothing = !on
	}
	devs := v.LookupPath(cue.ParsePath("devices"))
	for _, dev := range cueload.Labels(devs) {
		pts := devs.LookupPath(cue.MakePath(cue.Str(dev), cue.Str("points")))
		df.Devices[dev] = map[string]float64{}
		for _, p := range cueload.Labels(pts) {
			f, _ := pts.LookupPath(cue.MakePath(cue.Str(p), cue.Str("factor"))).Float64()
			df.Devices[dev][p] = f
		}
	}
	return df
}

// quantity parses v as a quantity of dim and returns its canonical value.
func (d *decoder) quantity(v cue.Value, path string, dim units.Dimension) float64 {
	s, err := v.String()
	if err != nil {
		d.diags.Errorf(RuleUnit, d.r.UserPos(v), "", "%s: write a quantity with a unit, such as %q", path, example(dim))
		return 0
	}
	qq, err := units.Parse(s)
	if err != nil {
		d.diags.Errorf(RuleUnit, d.r.UserPos(v), "", "%s: %v", path, err)
		return 0
	}
	if qq.Dim != dim {
		d.diags.Errorf(RuleUnit, d.r.UserPos(v), "", "%s: %q is a %s, want a %s such as %q", path, s,
			strings.ReplaceAll(string(qq.Dim), "_", " "), strings.ReplaceAll(string(dim), "_", " "), example(dim))
		return 0
	}
	return qq.Canon
}

func example(dim units.Dimension) string {
	ex := map[units.Dimension]string{units.Time: "0.8 s", units.Ratio: "20 %", units.Temperature: "26 degC",
		units.TempDiff: "3 K", units.Flow: "3300 L/min", units.Pressure: "120 kPa", units.Frequency: "100 Hz"}
	if e, ok := ex[dim]; ok {
		return e
	}
	return "1 " + units.Canonical(dim)
}

func settings[P any](d *decoder, parent cue.Value, label string, fields []field[P]) []setting {
	return settingsFor(d, parent.LookupPath(cue.MakePath(cue.Str(label))), "sim."+label, fields)
}

func perElement[P any](d *decoder, parent cue.Value, label string, fields []field[P]) map[string][]setting {
	out := map[string][]setting{}
	v := parent.LookupPath(cue.MakePath(cue.Str(label)))
	for _, id := range cueload.Labels(v) {
		out[id] = settingsFor(d, v.LookupPath(cue.MakePath(cue.Str(id))), fmt.Sprintf("%s.%q", label, id), fields)
	}
	return out
}

func settingsFor[P any](d *decoder, v cue.Value, path string, fields []field[P]) []setting {
	var out []setting
	for _, f := range fields {
		fv := v.LookupPath(cue.MakePath(cue.Str(f.name)))
		if !fv.Exists() {
			continue
		}
		s := setting{name: f.name, pos: d.r.UserPos(fv)}
		switch {
		case f.setBool != nil:
			s.b, _ = fv.Bool()
		case f.dim == "":
			s.v, _ = fv.Float64()
		default:
			s.v = d.quantity(fv, path+"."+f.name, f.dim)
			if f.perUnit {
				s.v /= 100
			}
		}
		out = append(out, s)
	}
	return out
}

func apply[P any](p *P, fields []field[P], ss []setting) {
	for _, s := range ss {
		for _, f := range fields {
			if f.name != s.name {
				continue
			}
			if f.setBool != nil {
				f.setBool(p, s.b)
			} else {
				f.set(p, s.v)
			}
		}
	}
}

// Power returns the parameters of block id: the defaults, then the
// config's power section, then its blocks entry, then the defect's.
func (c *Config) Power(id string, df *Defect) Power {
	p := DefaultPower
	apply(&p, powerFields, c.power)
	apply(&p, powerFields, c.blocks[id])
	if df != nil {
		apply(&p, powerFields, df.blocks[id])
	}
	return p
}

// Cooling returns the parameters of loop id, layered as Power.
func (c *Config) Cooling(id string, df *Defect) Cooling {
	p := DefaultCooling
	apply(&p, coolingFields, c.cooling)
	apply(&p, coolingFields, c.loops[id])
	if df != nil {
		apply(&p, coolingFields, df.loops[id])
	}
	return p
}

// Controls returns the controls parameters.
func (c *Config) Controls() Controls {
	p := DefaultControls
	apply(&p, controlsFields, c.controls)
	return p
}

// LoadBank returns the load bank parameters.
func (c *Config) LoadBank() LoadBank {
	p := DefaultLoadBank
	apply(&p, loadBankFields, c.loadbank)
	return p
}

// Elements lists the element ids that the config or a defect overrides,
// so that a caller can check they exist in the site.
func (c *Config) Elements() map[string]diag.Pos {
	out := map[string]diag.Pos{}
	add := func(m map[string][]setting) {
		for id, ss := range m {
			if len(ss) > 0 {
				out[id] = ss[0].pos
			} else {
				out[id] = diag.Pos{File: c.Dir}
			}
		}
	}
	add(c.blocks)
	add(c.loops)
	for _, df := range c.Defects {
		add(df.blocks)
		add(df.loops)
	}
	return out
}

// DefectNames lists the defects, sorted.
func (c *Config) DefectNames() []string {
	var out []string
	for n := range c.Defects {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func isVar(seg string) bool {
	return len(seg) > 2 && seg[0] == '{' && seg[len(seg)-1] == '}' && !strings.ContainsAny(seg[1:len(seg)-1], "{}")
}

// Match matches a channel name against the pattern and returns the
// bound variables ("{m}" → "ma").
func (ch *Channel) Match(name string) (map[string]string, bool) {
	ps, ns := strings.Split(ch.Pattern, "/"), strings.Split(name, "/")
	if len(ps) != len(ns) {
		return nil, false
	}
	vars := map[string]string{}
	for i, p := range ps {
		switch {
		case isVar(p):
			if prev, ok := vars[p]; ok && prev != ns[i] {
				return nil, false
			}
			vars[p] = ns[i]
		case p != ns[i]:
			return nil, false
		}
	}
	return vars, true
}

// Expand replaces the variables of tmpl.
func Expand(tmpl string, vars map[string]string) string {
	return varRE.ReplaceAllStringFunc(tmpl, func(v string) string {
		if s, ok := vars[v]; ok {
			return s
		}
		return v
	})
}

func str(v cue.Value, label string) string {
	s, _ := v.LookupPath(cue.MakePath(cue.Str(label))).String()
	return s
}

func strs(v cue.Value) []string {
	var out []string
	for _, e := range list(v) {
		s, _ := e.String()
		out = append(out, s)
	}
	return out
}

func list(v cue.Value) []cue.Value {
	it, err := v.List()
	if err != nil {
		return nil
	}
	var out []cue.Value
	for it.Next() {
		out = append(out, it.Value())
	}
	return out
}
