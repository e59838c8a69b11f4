package binding

import (
	_ "embed"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"cuelang.org/go/cue"

	"github.com/seamdc/seam/internal/cueload"
	"github.com/seamdc/seam/internal/diag"
	"github.com/seamdc/seam/internal/profile"
	"github.com/seamdc/seam/internal/units"
)

//go:embed binding.cue
var schemaCUE []byte

// ImportPath is where binding files may import the schema from.
const ImportPath = "seam.dev/binding"

const bind = `import seambinding "seam.dev/binding"

profiles: [...string]
contracts?: string
devices: [seambinding.#Name]: seambinding.#Device
channels: [string]: seambinding.#Channel
loadbanks: [seambinding.#Name]: seambinding.#LoadBank
`

// Load reads a binding directory and the profiles it names. The
// contract directory it names (contracts:) is recorded, not read: the
// device layer does not know the contract model. LoadWith checks the
// binding against it. A non-nil error is a tool failure (an unreadable
// directory); problems are diagnostics positioned relative to dir. Use
// the binding only when diags has no error.
func Load(dir string) (*Binding, diag.List, error) { return LoadWith(dir, nil) }

// LoadWith is Load that also checks the binding covers what the
// contract directory it names needs bound, as req lists it (nil: no
// check). internal/bindreq reads contracts for it.
func LoadWith(dir string, req Requirer) (*Binding, diag.List, error) {
	dir, err := Dir(dir)
	if err != nil {
		return nil, nil, err
	}
	r, diags, err := cueload.Load(dir, cueload.Config{ImportPath: ImportPath, Files: map[string][]byte{"binding.cue": schemaCUE}, Bind: bind})
	if err != nil {
		return nil, nil, fmt.Errorf("binding: %w", err)
	}
	if diags.Count(diag.Error) > 0 {
		return nil, diags, nil
	}
	d := &decoder{r: r}
	d.topLevel()
	d.diags = append(d.diags, r.Validate(d.units()...)...)
	if d.diags.Count(diag.Error) > 0 {
		return nil, d.diags.Sorted(), nil
	}
	b := d.decode()
	d.diags = append(d.diags, b.loadProfiles()...)
	d.diags = append(d.diags, b.resolve()...)
	if b.Contracts != "" && req != nil {
		want, cd, err := req(b.Contracts, r.Dir)
		if err != nil {
			return nil, nil, err
		}
		d.diags = append(d.diags, cd...)
		if cd.Count(diag.Error) == 0 {
			d.diags = append(d.diags, b.Check(want)...)
		}
	}
	return b, d.diags.Sorted(), nil
}

type decoder struct {
	r     *cueload.Result
	diags diag.List
}

var topFields = map[string]bool{"profiles": true, "contracts": true, "devices": true, "channels": true, "loadbanks": true, "simulator": true, "ambient": true}

func (d *decoder) topLevel() {
	it, err := d.r.Value.Fields()
	if err != nil {
		return
	}
	for it.Next() {
		if l := it.Selector().Unquoted(); !topFields[l] {
			d.diags.Errorf(cueload.RuleNotAllowed, d.r.UserPos(it.Value()), l, "unknown top-level field %q", l).Hint =
				"a binding has profiles, contracts, devices, channels, loadbanks and, from sat sim, simulator"
		}
	}
}

// units lists the parts validated on their own, so that one error never
// hides another.
func (d *decoder) units() []cue.Path {
	paths := []cue.Path{cue.ParsePath("profiles"), cue.ParsePath("contracts"), cue.ParsePath("simulator")}
	for _, group := range []string{"devices", "channels", "loadbanks"} {
		for _, l := range cueload.Labels(d.r.Value.LookupPath(cue.ParsePath(group))) {
			paths = append(paths, cue.MakePath(cue.Str(group), cue.Str(l)))
		}
	}
	return paths
}

func at(v cue.Value, path ...string) cue.Value {
	sels := make([]cue.Selector, len(path))
	for i, p := range path {
		sels[i] = cue.Str(p)
	}
	return v.LookupPath(cue.MakePath(sels...))
}

func str(v cue.Value, path ...string) string {
	s, _ := at(v, path...).String()
	return s
}

func integer(v cue.Value, path ...string) int {
	n, _ := at(v, path...).Int64()
	return int(n)
}

func (d *decoder) decode() *Binding {
	v := d.r.Value
	b := &Binding{Dir: d.r.Dir, channelsPos: d.r.UserPos(at(v, "channels")), loadbanksPos: d.r.UserPos(at(v, "loadbanks"))}
	if it, err := at(v, "profiles").List(); err == nil {
		for it.Next() {
			s, _ := it.Value().String()
			b.ProfileDirs = append(b.ProfileDirs, abs(d.r.Dir, s))
		}
	}
	if c := str(v, "contracts"); c != "" {
		b.Contracts = abs(d.r.Dir, c)
	}
	for _, name := range cueload.Labels(at(v, "devices")) {
		b.Devices = append(b.Devices, d.device(name, at(v, "devices", name)))
	}
	for _, name := range cueload.Labels(at(v, "channels")) {
		cv := at(v, "channels", name)
		opt, _ := at(cv, "optional").Bool()
		b.Channels = append(b.Channels, &Channel{Name: name, DeviceName: str(cv, "device"), PointName: str(cv, "point"),
			Optional: opt, Pos: d.r.UserPos(cv)})
	}
	for _, name := range cueload.Labels(at(v, "loadbanks")) {
		lv := at(v, "loadbanks", name)
		lb := &LoadBank{Name: name, DeviceName: str(lv, "device"), Roles: map[string]string{}, Pos: d.r.UserPos(lv)}
		for _, role := range Roles {
			lb.Roles[role] = role
			if p := str(lv, "points", role); p != "" {
				lb.Roles[role] = p
			}
		}
		b.LoadBanks = append(b.LoadBanks, lb)
	}
	if sv := at(v, "simulator"); sv.Exists() {
		k, _ := at(sv, "time_scale").Float64()
		stepped, _ := at(sv, "stepped").Bool()
		b.Simulator = &Simulator{Control: str(sv, "control"), TimeScale: k, Stepped: stepped, Pos: d.r.UserPos(sv)}
	}
	d.ambient(b, at(v, "ambient"))
	return b
}

// ambient reads the ambient channels: each must be a bound channel.
func (d *decoder) ambient(b *Binding, v cue.Value) {
	it, err := v.List()
	if err != nil {
		return
	}
	for i := 0; it.Next(); i++ {
		name, _ := it.Value().String()
		if b.Channel(name) == nil {
			d.diags.Add(diag.Diagnostic{Rule: RuleUnknownChannel, Severity: diag.Error, Pos: d.r.UserPos(it.Value()), Path: fmt.Sprintf("ambient[%d]", i),
				Message: fmt.Sprintf("ambient[%d]: channel %q is not bound in channels", i, name),
				Hint:    "bind it in channels (the device and point that measure it), or drop it from ambient"})
			continue
		}
		b.Ambient = append(b.Ambient, name)
	}
}

func abs(dir, p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(dir, p)
}

func (d *decoder) device(name string, v cue.Value) *Device {
	dev := &Device{Name: name, Protocol: Protocol(str(v, "protocol")), Address: str(v, "address"),
		Unit: uint8(integer(v, "unit")), Retries: integer(v, "retries"), ProfileName: str(v, "profile"),
		Note: str(v, "note"), Pos: d.r.UserPos(v)}
	path := "devices." + quote(name)
	dev.Timeout = d.duration(at(v, "timeout"), path+".timeout")
	if iv := at(v, "instrument"); iv.Exists() {
		dev.Instrument = &Instrument{Make: str(iv, "make"), Model: str(iv, "model"), Serial: str(iv, "serial"),
			Calibrated: str(iv, "calibrated"), Due: str(iv, "due"), Certificate: str(iv, "certificate")}
	}
	secret := func(what string, p ...string) Secret {
		sv := at(v, p...)
		s, _ := sv.String()
		return Secret{Ref: s, What: what + " of device " + name, Dir: d.r.Dir, Pos: d.r.UserPos(sv)}
	}
	switch dev.Protocol {
	case ModbusRTU:
		dev.Serial = Serial{Baud: integer(v, "serial", "baud"), DataBits: integer(v, "serial", "data_bits"),
			StopBits: integer(v, "serial", "stop_bits"), Parity: str(v, "serial", "parity")}
	case SNMPv2c:
		dev.Community = secret("community", "community")
	case SNMPv3:
		dev.V3 = &V3{User: str(v, "user"), Context: str(v, "context"), AuthProtocol: str(v, "auth", "protocol"),
			AuthPass: secret("auth passphrase", "auth", "passphrase")}
		if at(v, "priv").Exists() {
			dev.V3.PrivProtocol = str(v, "priv", "protocol")
			dev.V3.PrivPass = secret("priv passphrase", "priv", "passphrase")
		}
	}
	return dev
}

func quote(l string) string {
	if strings.ContainsAny(l, "-/. ") {
		return `"` + l + `"`
	}
	return l
}

func (d *decoder) duration(v cue.Value, path string) time.Duration {
	s, _ := v.String()
	q, err := units.Parse(s)
	if err == nil && (q.Dim != units.Time || q.Canon <= 0) {
		err = fmt.Errorf("%q is not a positive time", s)
	}
	if err != nil {
		d.diags.Errorf(RuleDuration, d.r.UserPos(v), path, "%s: %v", path, err).Hint = "write a time with its unit, such as \"1 s\" or \"500 ms\""
		return time.Second
	}
	return time.Duration(math.Round(q.Canon * float64(time.Second)))
}

// loadProfiles loads every profile directory and merges them; their
// diagnostics are positioned relative to the binding directory.
func (b *Binding) loadProfiles() diag.List {
	var diags diag.List
	b.Profiles = &profile.Set{}
	seen := map[string]*profile.Profile{}
	for _, dir := range b.ProfileDirs {
		set, pd, err := profile.Load(dir)
		if err != nil {
			diags.Errorf(RuleProfiles, diag.Pos{File: "."}, "profiles", "%v", err).Hint = "profiles lists directories relative to the binding"
			continue
		}
		for _, d := range pd {
			d.Pos = rebase(b.Dir, dir, d.Pos)
			diags.Add(d)
		}
		for _, p := range set.Profiles {
			if first, ok := seen[p.Name]; ok {
				diags.Errorf(RuleDuplicateProfile, rebase(b.Dir, dir, p.Pos), "", "profile %q is defined twice", p.Name).Related =
					[]diag.Related{{Pos: rebase(b.Dir, first.Dir, first.Pos), Message: "first defined here"}}
				continue
			}
			seen[p.Name] = p
			b.Profiles.Profiles = append(b.Profiles.Profiles, p)
		}
	}
	sort.Slice(b.Profiles.Profiles, func(i, j int) bool { return b.Profiles.Profiles[i].Name < b.Profiles.Profiles[j].Name })
	return diags
}

// Rebase makes a position relative to from (a profile or contract
// directory) relative to to (the binding directory).
func Rebase(to, from string, p diag.Pos) diag.Pos { return rebase(to, from, p) }

func rebase(to, from string, p diag.Pos) diag.Pos {
	p = p.Resolved()
	if !p.IsValid() || filepath.IsAbs(p.File) {
		return p
	}
	full := filepath.Join(from, p.File)
	p.File = filepath.ToSlash(full)
	if rel, err := filepath.Rel(to, full); err == nil {
		p.File = filepath.ToSlash(rel)
	}
	return p
}

// Dir is the binding directory a --site argument names: the directory
// itself, or the directory of a .cue file in it (sat sim prints the
// file's path; the whole directory is the binding). It is checked first,
// so that a wrong path reads "binding directory x: no such file or
// directory" rather than a loader's message.
func Dir(path string) (string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("binding directory %s: %w", path, errors.Unwrap(err))
	}
	switch {
	case st.IsDir():
		return path, nil
	case st.Mode().IsRegular() && filepath.Ext(path) == ".cue":
		return filepath.Dir(path), nil
	}
	return "", fmt.Errorf("binding directory %s: not a directory, nor a .cue file in one", path)
}

// isDir checks dir first, so that a wrong path reads "binding directory
// x: no such file or directory" rather than a loader's message.
func isDir(dir string) error {
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("binding directory %s: %w", dir, errors.Unwrap(err))
	}
	if !st.IsDir() {
		return fmt.Errorf("binding directory %s: not a directory", dir)
	}
	return nil
}
