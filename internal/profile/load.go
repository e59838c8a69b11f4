package profile

import (
	_ "embed"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"

	"github.com/seamdc/seam/internal/cueload"
	"github.com/seamdc/seam/internal/diag"
	"github.com/seamdc/seam/internal/units"
)

//go:embed profile.cue
var schemaCUE []byte

// ImportPath is where profile files may import the schema from.
const ImportPath = "seam.dev/profile"

// bind makes every entry of `profiles` a #Profile named by its key.
const bind = `import seamprofile "seam.dev/profile"

profiles: [N=string]: seamprofile.#Profile & {name: N}
`

// Rule ids of profile problems (the schema's own are cueload's).
const (
	RuleUnit      = "PROFILE001" // a unit outside the unit table
	RuleDuration  = "PROFILE002" // a duration that is not a time
	RuleReference = "PROFILE003" // digits, timestamp or freshness naming no point
	RuleType      = "PROFILE004" // a data type that does not fit the table or protocol
	RuleAccess    = "PROFILE005" // a writable point in a read-only table
	RuleOverlap   = "PROFILE006" // two points on the same registers
	RuleAlarm     = "PROFILE007" // an alarm that cannot be read
	RuleTopLevel  = "PROFILE008" // a top-level field other than profiles
	RuleRange     = "PROFILE009" // plausible min above max, scale 0
	RuleDuplicate = "PROFILE010" // a profile name defined twice
)

// Rules describes every rule id a profile load can report.
var Rules = map[string]string{
	cueload.RuleEmpty:      "the directory holds no .cue files",
	cueload.RuleSyntax:     "a file does not parse as CUE",
	cueload.RuleModule:     "cue.mod/module.cue is wrong",
	cueload.RulePackage:    "files declare different packages, or none",
	cueload.RuleSchema:     "a value conflicts with the profile schema",
	cueload.RuleRequired:   "a required field is missing",
	cueload.RuleNotAllowed: "a field the schema does not know",
	RuleUnit:               "a unit outside seam's unit table",
	RuleDuration:           "a duration that is not a time with a unit",
	RuleReference:          "digits, timestamp or freshness names a point that does not exist or is not a plain number",
	RuleType:               "a data type that does not fit the table or the protocol",
	RuleAccess:             "a writable point in a read-only table (input registers, discrete inputs)",
	RuleOverlap:            "two points on overlapping registers (only bit alarms may share one)",
	RuleAlarm:              "an alarm point that cannot be read as stated",
	RuleTopLevel:           "a top-level field other than profiles",
	RuleRange:              "plausible min above max, or a scale of 0",
	RuleDuplicate:          "a profile name defined twice",
}

// Load reads a directory of profiles. A non-nil error is a tool failure
// (an unreadable directory); problems with the profiles are diagnostics,
// positioned in the files relative to dir, all of them at once. A
// broken profile never hides the others: the set holds every profile
// that decoded, and a file that does not parse is loaded apart from the
// rest, so that only its own profiles are missing.
func Load(dir string) (*Set, diag.List, error) {
	if err := isDir(dir); err != nil {
		return nil, nil, err
	}
	r, diags, err := load(dir)
	if err != nil {
		return nil, nil, err
	}
	if diags.Count(diag.Error) > 0 {
		return loadFiles(dir, diags)
	}
	set, more := decodeAll(r)
	return set, append(diags, more...).Sorted(), nil
}

func load(dir string) (*cueload.Result, diag.List, error) {
	r, diags, err := cueload.Load(dir, cueload.Config{ImportPath: ImportPath, Files: map[string][]byte{"profile.cue": schemaCUE}, Bind: bind, SchemaDoc: "internal/profile/profile.cue (explained in docs/devices.md)"})
	if err != nil {
		return nil, nil, fmt.Errorf("profiles: %w", err)
	}
	return r, diags, nil
}

// decodeAll validates each profile on its own and decodes those that
// pass: one wrong field fails its profile, not the directory.
func decodeAll(r *cueload.Result) (*Set, diag.List) {
	d := &decoder{r: r}
	d.topLevel()
	root := r.Value.LookupPath(cue.ParsePath("profiles"))
	set := &Set{}
	for _, l := range cueload.Labels(root) {
		if vd := validateProfile(r, root, l); vd.Count(diag.Error) > 0 {
			d.diags = append(d.diags, vd...)
			continue
		}
		if p := d.profile(l, root.LookupPath(cue.MakePath(cue.Str(l)))); p != nil {
			set.Profiles = append(set.Profiles, p)
		}
	}
	return set, d.diags.Sorted()
}

// loadFiles loads each file of a directory that does not load whole on
// its own (in a directory of its own, positions mapped back), keeping
// the profiles of every file that loads; first are the whole
// directory's problems, which name the files that do not.
func loadFiles(dir string, first diag.List) (*Set, diag.List, error) {
	names, err := cueFiles(dir)
	if err != nil {
		return nil, nil, err
	}
	broken := map[string]bool{}
	for _, d := range first {
		broken[filepath.Base(d.Pos.Resolved().File)] = true
	}
	set, diags := &Set{}, first
	for _, name := range names {
		if broken[name] {
			continue
		}
		tmp, err := os.MkdirTemp("", "seam-profile-")
		if err != nil {
			return nil, nil, err
		}
		defer os.RemoveAll(tmp)
		src, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, nil, err
		}
		if err := os.WriteFile(filepath.Join(tmp, name), src, 0o644); err != nil {
			return nil, nil, err
		}
		r, fd, err := load(tmp)
		if err != nil {
			return nil, nil, err
		}
		if fd.Count(diag.Error) > 0 {
			diags = append(diags, fd...)
			continue
		}
		one, more := decodeAll(r)
		for _, p := range one.Profiles {
			p.Dir = dir
		}
		set.Profiles = append(set.Profiles, one.Profiles...)
		diags = append(diags, more...)
	}
	sortProfiles(set)
	return set, diags.Sorted(), nil
}

func cueFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".cue") {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// MustLoad loads dir and fails on any error diagnostic; for tests and
// tools that load the shipped profiles.
func MustLoad(dir string) (*Set, error) {
	set, diags, err := Load(dir)
	if err != nil {
		return nil, err
	}
	if diags.Count(diag.Error) > 0 {
		var b strings.Builder
		for _, d := range diags {
			fmt.Fprintf(&b, "\n%s: %s", d.Pos, d.Message)
		}
		return nil, fmt.Errorf("profiles in %s:%s", dir, b.String())
	}
	return set, nil
}

type decoder struct {
	r     *cueload.Result
	diags diag.List
}

func (d *decoder) topLevel() {
	it, err := d.r.Value.Fields()
	if err != nil {
		return
	}
	for it.Next() {
		if l := it.Selector().Unquoted(); l != "profiles" {
			d.diags.Errorf(RuleTopLevel, d.r.UserPos(it.Value()), l, "unknown top-level field %q", l).Hint =
				"a profile file holds only `profiles: \"name\": {...}`"
		}
	}
}

func str(v cue.Value, label string) string {
	s, _ := v.LookupPath(cue.MakePath(cue.Str(label))).String()
	return s
}

func (d *decoder) profile(name string, v cue.Value) *Profile {
	p := &Profile{Name: name, Vendor: str(v, "vendor"), Model: str(v, "model"), Note: str(v, "note"),
		Protocol: Protocol(str(v, "protocol")), Freshness: str(v, "freshness"), Dir: d.r.Dir, Pos: d.r.UserPos(v)}
	path := "profiles." + quote(name)
	p.UpdatePeriod = d.duration(v, path, "update_period")
	p.StaleAfter = 3 * p.UpdatePeriod
	if s := d.duration(v, path, "stale_after"); s > 0 {
		p.StaleAfter = s
	}
	p.Limits = d.limits(v.LookupPath(cue.ParsePath("limits")), path)
	if w := v.LookupPath(cue.ParsePath("watchdog")); w.Exists() {
		code, _ := w.LookupPath(cue.ParsePath("fault")).Int64()
		p.Watchdog = &Watchdog{After: d.duration(w, path+".watchdog", "after"), Fault: int(code)}
	}
	p.MinSwitchingPeriod = d.duration(v, path, "min_switching_period")
	pv := v.LookupPath(cue.ParsePath("points"))
	for _, l := range cueload.Labels(pv) {
		p.Points = append(p.Points, d.point(p, l, pv.LookupPath(cue.MakePath(cue.Str(l))), path+".points."+quote(l)))
	}
	sortPoints(p.Points)
	d.references(p, path)
	if p.Protocol == Modbus {
		d.overlaps(p, path)
		p.Plan = PlanModbus(p.Points, p.Limits)
	} else {
		p.Batches = BatchSNMP(p.Points, p.Limits.MaxOIDs)
	}
	return p
}

func quote(l string) string {
	if strings.ContainsAny(l, "-/. ") {
		return `"` + l + `"`
	}
	return l
}

// duration reads a "1 s" field; 0 when absent.
func (d *decoder) duration(v cue.Value, path, label string) time.Duration {
	f := v.LookupPath(cue.MakePath(cue.Str(label)))
	if !f.Exists() {
		return 0
	}
	s, _ := f.String()
	q, err := units.Parse(s)
	if err == nil && q.Dim != units.Time {
		err = fmt.Errorf("%q is a %s, not a time", s, q.Dim)
	}
	if err == nil && q.Canon < 0 {
		err = fmt.Errorf("%q is negative", s)
	}
	if err != nil {
		d.diags.Errorf(RuleDuration, d.r.UserPos(f), path+"."+label, "%s.%s: %v", path, label, err).Hint =
			"write a time with its unit, such as \"1 s\" or \"50 ms\""
		return 0
	}
	return time.Duration(math.Round(q.Canon * float64(time.Second)))
}

func (d *decoder) limits(v cue.Value, path string) Limits {
	lim := DefaultLimits
	geti := func(label string, dst *int) {
		if n, err := v.LookupPath(cue.MakePath(cue.Str(label))).Int64(); err == nil {
			*dst = int(n)
		}
	}
	geti("max_registers", &lim.MaxRegisters)
	geti("max_bits", &lim.MaxBits)
	geti("max_gap", &lim.MaxGap)
	geti("max_oids", &lim.MaxOIDs)
	geti("max_repetitions", &lim.MaxRepetitions)
	lim.MinGap = d.duration(v, path+".limits", "min_gap")
	return lim
}

func (d *decoder) point(p *Profile, name string, v cue.Value, path string) *Point {
	pt := &Point{Name: name, Table: Table(str(v, "table")), OID: strings.TrimPrefix(str(v, "oid"), "."),
		Type: dataType(str(v, "type")), Order: WordOrder(str(v, "order")), Digits: str(v, "digits"),
		Timestamp: str(v, "timestamp"), Unit: str(v, "unit"), Access: Access(str(v, "access")),
		Note: str(v, "note"), Pos: d.r.UserPos(v), unitScale: 1}
	if a, err := v.LookupPath(cue.ParsePath("address")).Int64(); err == nil {
		pt.Address = uint16(a)
	}
	pt.Scale, _ = v.LookupPath(cue.ParsePath("scale")).Float64()
	pt.Offset, _ = v.LookupPath(cue.ParsePath("offset")).Float64()
	if pt.Scale == 0 {
		d.diags.Errorf(RuleRange, pt.Pos, path, "%s: scale 0 makes every value 0", path)
		pt.Scale = 1
	}
	d.unit(pt, v, path)
	d.alarm(pt, v, path)
	pt.States = d.states(v)
	pt.Unavailable = ints(v.LookupPath(cue.ParsePath("unavailable")))
	pt.Plausible = d.plausible(v, path)
	d.typeFits(p, pt, path)
	return pt
}

func (d *decoder) unit(pt *Point, v cue.Value, path string) {
	if pt.Unit == "" {
		return
	}
	zero, err := units.Parse("0 " + pt.Unit)
	if err != nil {
		d.diags.Errorf(RuleUnit, d.r.UserPos(v.LookupPath(cue.ParsePath("unit"))), path+".unit", "%s.unit: %v", path, err).Hint =
			"use a unit of seam's table (docs/contracts.md), or leave unit out for a plain number"
		return
	}
	one, _ := units.Parse("1 " + pt.Unit)
	pt.Dim, pt.unitOffset, pt.unitScale = zero.Dim, zero.Canon, one.Canon-zero.Canon
}

func (d *decoder) alarm(pt *Point, v cue.Value, path string) {
	a := v.LookupPath(cue.ParsePath("alarm"))
	if !a.Exists() {
		return
	}
	spec := &AlarmSpec{Bit: -1, Active: ints(a.LookupPath(cue.ParsePath("active")))}
	if b, err := a.LookupPath(cue.ParsePath("bit")).Int64(); err == nil {
		spec.Bit = int(b)
	}
	if n, err := a.LookupPath(cue.ParsePath("normal")).Int64(); err == nil {
		spec.Normal = n
	}
	pt.AlarmSpec = spec
	switch {
	case pt.Unit != "":
		d.diags.Errorf(RuleAlarm, pt.Pos, path, "%s: an alarm has no unit (%q)", path, pt.Unit).Hint = "remove unit: an alarm reads 1 when active and 0 when not"
	case spec.Bit >= 0 && len(spec.Active) > 0:
		d.diags.Errorf(RuleAlarm, pt.Pos, path, "%s: an alarm has either bit or active values, not both", path)
	case spec.Bit >= 0 && (pt.Type == Bool || pt.Type == Float32 || pt.Type == OctetString || spec.Bit >= 8*bytesOf(pt.Type)):
		d.diags.Errorf(RuleAlarm, pt.Pos, path, "%s: bit %d cannot be read from a %s", path, spec.Bit, pt.Type)
	}
	pt.Dim = Alarm
}

func bytesOf(t DataType) int {
	switch t {
	case Int16, Uint16:
		return 2
	case Counter64:
		return 8
	}
	return 4
}

func ints(v cue.Value) []int64 {
	it, err := v.List()
	if err != nil {
		return nil
	}
	var out []int64
	for it.Next() {
		if n, err := it.Value().Int64(); err == nil {
			out = append(out, n)
		}
	}
	return out
}

func (d *decoder) states(v cue.Value) map[int64]string {
	sv := v.LookupPath(cue.ParsePath("states"))
	if !sv.Exists() {
		return nil
	}
	out := map[int64]string{}
	for _, l := range cueload.Labels(sv) {
		n, err := strconv.ParseInt(l, 10, 64)
		if err != nil {
			continue // the schema only admits integers
		}
		out[n] = str(sv, l)
	}
	return out
}

func (d *decoder) plausible(v cue.Value, path string) Range {
	pv := v.LookupPath(cue.ParsePath("plausible"))
	var r Range
	if f, err := pv.LookupPath(cue.ParsePath("min")).Float64(); err == nil {
		r.Min, r.HasMin = f, true
	}
	if f, err := pv.LookupPath(cue.ParsePath("max")).Float64(); err == nil {
		r.Max, r.HasMax = f, true
	}
	if r.HasMin && r.HasMax && r.Min > r.Max {
		d.diags.Errorf(RuleRange, d.r.UserPos(pv), path+".plausible", "%s.plausible: min %g is above max %g", path, r.Min, r.Max)
	}
	return r
}

var modbusTypes = map[DataType]bool{Int16: true, Uint16: true, Int32: true, Uint32: true, Float32: true}

// typeFits checks the type against the table and the access against it.
func (d *decoder) typeFits(p *Profile, pt *Point, path string) {
	if p.Protocol != Modbus {
		return
	}
	switch {
	case pt.Table.IsBits() && pt.Type != Bool:
		d.diags.Errorf(RuleType, pt.Pos, path, "%s: a %s holds single bits: its type is bool, not %s", path, pt.Table, pt.Type)
	case !pt.Table.IsBits() && !modbusTypes[pt.Type]:
		d.diags.Errorf(RuleType, pt.Pos, path, "%s: a %s register cannot hold a %s", path, pt.Table, pt.Type).Hint = "use int16, uint16, int32, uint32 or float32"
	case pt.Type == Bool && pt.Order != ABCD:
		d.diags.Errorf(RuleType, pt.Pos, path, "%s: a bit has no word order", path)
	}
	if pt.Writable() && (pt.Table == Input || pt.Table == Discrete) {
		d.diags.Errorf(RuleAccess, pt.Pos, path, "%s: access is write, but %s is read-only in Modbus", path, pt.Where()).Hint =
			"writable points live in holding registers or coils"
	}
	if pt.End() > 65536 {
		d.diags.Errorf(RuleType, pt.Pos, path, "%s: a %s at %d runs past register 65535", path, pt.Type, pt.Address)
	}
}

// references checks digits, timestamp and freshness.
func (d *decoder) references(p *Profile, path string) {
	check := func(from, label, to string, pos diag.Pos) {
		if to == "" {
			return
		}
		target := p.Point(to)
		switch {
		case target == nil:
			d.diags.Errorf(RuleReference, pos, from, "%s.%s: no point %q in profile %s", from, label, to, p.Name).Hint = Suggest(to, p.PointNames())
		case target.Dim != Raw:
			d.diags.Errorf(RuleReference, pos, from, "%s.%s: %q is not a plain number (it has a unit or is an alarm)", from, label, to)
		}
	}
	check(path, "freshness", p.Freshness, p.Pos)
	for _, pt := range p.Points {
		at := path + ".points." + quote(pt.Name)
		check(at, "digits", pt.Digits, pt.Pos)
		check(at, "timestamp", pt.Timestamp, pt.Pos)
	}
}

// overlaps reports two points on overlapping registers, unless both are
// bit alarms (or one a plain register) of the same type and address.
func (d *decoder) overlaps(p *Profile, path string) {
	for i, a := range p.Points {
		for _, b := range p.Points[i+1:] {
			if a.Table != b.Table || a.End() <= int(b.Address) || b.End() <= int(a.Address) {
				continue
			}
			if a.Address == b.Address && a.Type == b.Type && (isBitView(a) || isBitView(b)) {
				continue
			}
			if a.Address == b.Address && a.Type == b.Type && a.Table.IsBits() {
				continue
			}
			d.diags.Errorf(RuleOverlap, b.Pos, path+".points."+quote(b.Name), "%s and %s overlap at %s", a.Name, b.Name, b.Where()).Related =
				[]diag.Related{{Pos: a.Pos, Message: a.Name + " is here"}}
		}
	}
}

func isBitView(pt *Point) bool {
	return pt.Dim == Alarm || (pt.Dim == Raw && pt.Scale == 1 && pt.Offset == 0)
}

// Suggest returns a hint naming the closest of names to s, or listing
// them: for "unknown point" and "unknown profile" messages.
func Suggest(s string, names []string) string { return cueload.DidYouMean(s, names) }

// isDir checks dir first, so that a wrong path reads "binding directory
// x: no such file or directory" rather than a loader's message.
func isDir(dir string) error {
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("profile directory %s: %w", dir, errors.Unwrap(err))
	}
	if !st.IsDir() {
		return fmt.Errorf("profile directory %s: not a directory", dir)
	}
	return nil
}

// sortProfiles orders a set's profiles by name.
func sortProfiles(s *Set) {
	slices.SortFunc(s.Profiles, func(a, b *Profile) int { return strings.Compare(a.Name, b.Name) })
}

// dataType reads a point's type; SNMP's Unsigned32 is Gauge32 (one ASN.1
// tag, RFC 2578 §7.1.11).
func dataType(s string) DataType {
	if s == "Unsigned32" {
		return Gauge32
	}
	return DataType(s)
}

// validateProfile validates a profile and each of its points on their
// own, so that every mistake is reported in one run (CUE stops at the
// first error of a value), each once.
func validateProfile(r *cueload.Result, root cue.Value, name string) diag.List {
	base := cue.MakePath(cue.Str("profiles"), cue.Str(name))
	paths := []cue.Path{base}
	for _, f := range cueload.Labels(root.LookupPath(cue.MakePath(cue.Str(name)))) {
		if f != "points" {
			paths = append(paths, cue.MakePath(cue.Str("profiles"), cue.Str(name), cue.Str(f)))
		}
	}
	for _, pt := range cueload.Labels(root.LookupPath(cue.MakePath(cue.Str(name), cue.Str("points")))) {
		paths = append(paths, cue.MakePath(cue.Str("profiles"), cue.Str(name), cue.Str("points"), cue.Str(pt)))
	}
	var out diag.List
	seen := map[string]bool{}
	for _, d := range unknownFields(r, root.LookupPath(cue.MakePath(cue.Str(name))), name) {
		seen[d.Pos.String()+"\x00"+d.Message] = true
		out = append(out, d)
	}
	for _, p := range paths {
		for _, d := range r.Validate(p) {
			key := d.Pos.String() + "\x00" + d.Message
			if !seen[key] {
				seen[key] = true
				out = append(out, d)
			}
		}
	}
	return out
}

// profileFields are the fields a profile may have, from the schema.
var profileFields = func() map[string]bool {
	out := map[string]bool{}
	v := cuecontext.New().CompileBytes(schemaCUE).LookupPath(cue.ParsePath("#Profile"))
	it, err := v.Fields(cue.Optional(true))
	if err != nil {
		return out
	}
	for it.Next() {
		out[it.Selector().Unquoted()] = true
	}
	return out
}()

// unknownFields reports the fields of a profile the schema does not
// have, as CUE would, so that they are reported together with the
// profile's other mistakes (CUE stops at one).
func unknownFields(r *cueload.Result, pv cue.Value, name string) diag.List {
	var out diag.List
	var known []string
	for k := range profileFields {
		known = append(known, k)
	}
	slices.Sort(known)
	it, err := pv.Fields()
	if err != nil {
		return nil
	}
	for it.Next() {
		l := it.Selector().Unquoted()
		if profileFields[l] {
			continue
		}
		path := "profiles." + quote(name) + "." + l
		d := out.Errorf(cueload.RuleNotAllowed, r.UserPos(it.Value()), path, "%s: field not allowed", path)
		d.Hint = "remove the field or fix its spelling; internal/profile/profile.cue (explained in docs/devices.md) lists the fields of a profile"
		if g := cueload.Closest(l, known); len(g) > 0 {
			d.Hint = fmt.Sprintf("did you mean %q? Otherwise remove the field; internal/profile/profile.cue (explained in docs/devices.md) lists the fields of a profile", g[0])
		}
	}
	return out
}
