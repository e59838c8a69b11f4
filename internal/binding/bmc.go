package binding

import (
	"bytes"
	"fmt"
	"maps"
	"net"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"cuelang.org/go/cue"

	"github.com/seamdc/seam/internal/cueload"
	"github.com/seamdc/seam/internal/diag"
)

// Rules of the BMC section.
const (
	RuleBMCSecret  = "BIND030" // the BMCs' password written inline
	RuleBMCAddress = "BIND031" // a BMC endpoint that is no host:port
	// RuleBMCWritable is a BMC control written that the binding does not
	// declare writable: sat cap apply and facilityd refuse it with this id.
	RuleBMCWritable = "BIND032"
	// RuleBMCWritableOn is a writable_on entry for a BMC that the
	// endpoints do not have.
	RuleBMCWritableOn = "BIND033"
	// RuleBMCAccount is a bmcs section with neither one account (user and
	// password) nor a secrets file, or with both.
	RuleBMCAccount = "BIND034"
)

// The BMC controls a binding may declare writable (bmcs.writable): a
// node's power cap, the BMC's accounts (sat bmc rotate), its firmware
// (an update by SimpleUpdate or a multipart push) and its resets (the
// system's, the Manager's or the chassis's, as an update needs).
const (
	ControlPowerLimit = "PowerLimit"
	ControlAccounts   = "Accounts"
	ControlFirmware   = "Firmware"
	ControlReset      = "Reset"
)

// BMCs is a binding's bmcs section: how sat discover reaches the site's
// BMCs over Redfish.
type BMCs struct {
	User     string
	Password Secret
	// Secrets is the secrets file's path (absolute), when the section
	// names one instead of one account: each BMC's account, its active
	// and its pending secret (package bmcsecret).
	Secrets   string
	Scheme    string // https, http
	Insecure  bool
	Auth      string // session, basic
	Timeout   time.Duration
	Parallel  int           // BMCs walked at once
	PerBMC    int           // requests in flight to one BMC
	Endpoints []BMCEndpoint // sorted by name; none: the inventory's addresses
	// WritableControls are the controls every BMC may have written (the
	// allow-list); WritableOn overrides it for a BMC by name.
	WritableControls []string
	WritableOn       map[string][]string
	Pos              diag.Pos
}

// Writable says whether the binding declares control writable on the
// BMC called name; nil is an error with RuleBMCWritable saying what to
// declare.
func (b *BMCs) Writable(name, control string) error {
	if b != nil {
		list, ok := b.WritableOn[name]
		if !ok {
			list = b.WritableControls
		}
		if slices.Contains(list, control) {
			return nil
		}
	}
	return fmt.Errorf("%s: BMC %s: control %s is not declared writable by the binding: nothing not declared is written; declare it in bmcs: writable: [%q] (or writable_on: %q: [%q])",
		RuleBMCWritable, name, control, control, name, control)
}

// BMCEndpoint is one BMC: a name for messages and where it answers.
type BMCEndpoint struct {
	Name, Address string
	Pos           diag.Pos
}

// The loader takes a bmcs section at the top level of a binding.
func init() { topFields["bmcs"] = true }

const bindBMCs = `import seambinding "seam.dev/binding"

bmcs?: seambinding.#BMCs
`

// LoadBMCs reads the bmcs section of a binding directory (nil when it
// has none), checked against the schema's #BMCs: credentials by
// reference, endpoints as host:port. Problems are diagnostics
// positioned relative to dir.
func LoadBMCs(dir string) (*BMCs, diag.List, error) {
	if err := isDir(dir); err != nil {
		return nil, nil, err
	}
	r, diags, err := cueload.Load(dir, cueload.Config{ImportPath: ImportPath, Files: map[string][]byte{"binding.cue": schemaCUE}, Bind: bindBMCs})
	if err != nil {
		return nil, nil, fmt.Errorf("binding: %w", err)
	}
	if diags.Count(diag.Error) > 0 {
		return nil, diags, nil
	}
	v := at(r.Value, "bmcs")
	if !v.Exists() {
		return nil, nil, nil
	}
	if vd := r.Validate(cue.ParsePath("bmcs")); vd.Count(diag.Error) > 0 {
		return nil, vd, nil
	}
	d := &decoder{r: r}
	b := &BMCs{User: str(v, "user"), Scheme: str(v, "scheme"), Auth: str(v, "auth"), Parallel: integer(v, "parallel"),
		PerBMC: integer(v, "per_bmc"), Pos: r.UserPos(v)}
	b.Insecure, _ = at(v, "insecure").Bool()
	b.Timeout = d.duration(at(v, "timeout"), "bmcs.timeout")
	d.account(b, v)
	for _, name := range cueload.Labels(at(v, "endpoints")) {
		ev := at(v, "endpoints", name)
		addr, _ := ev.String()
		e := BMCEndpoint{Name: name, Address: addr, Pos: r.UserPos(ev)}
		if _, port, err := net.SplitHostPort(addr); err != nil || port == "" {
			d.diags.Errorf(RuleBMCAddress, e.Pos, "bmcs.endpoints."+quote(name), "bmcs.endpoints.%s: %q is not host:port", quote(name), addr).Hint =
				`write the BMC's address with its port: "10.1.1.7:443"`
		}
		b.Endpoints = append(b.Endpoints, e)
	}
	sort.Slice(b.Endpoints, func(i, j int) bool { return b.Endpoints[i].Name < b.Endpoints[j].Name })
	b.WritableControls = stringList(at(v, "writable"))
	for _, name := range cueload.Labels(at(v, "writable_on")) {
		wv := at(v, "writable_on", name)
		if b.WritableOn == nil {
			b.WritableOn = map[string][]string{}
		}
		b.WritableOn[name] = stringList(wv)
		if len(b.Endpoints) > 0 && !slices.ContainsFunc(b.Endpoints, func(e BMCEndpoint) bool { return e.Name == name }) {
			d.diags.Errorf(RuleBMCWritableOn, r.UserPos(wv), "bmcs.writable_on."+quote(name), "bmcs.writable_on.%s: no BMC %q among the endpoints", quote(name), name).Hint =
				"name a BMC of bmcs.endpoints, or drop the entry"
		}
	}
	return b, d.diags.Sorted(), nil
}

// account reads the section's account: user and password, or the
// secrets file.
func (d *decoder) account(b *BMCs, v cue.Value) {
	pv, sv := at(v, "password"), at(v, "secrets")
	if sv.Exists() {
		path, _ := sv.String()
		if path != "" && !filepath.IsAbs(path) {
			path = filepath.Join(d.r.Dir, path)
		}
		b.Secrets = path
	}
	switch {
	case sv.Exists() && (pv.Exists() || b.User != ""):
		d.diags.Errorf(RuleBMCAccount, d.r.UserPos(sv), "bmcs.secrets", "bmcs: both a secrets file and a user and password").Hint =
			"keep one: the secrets file (each BMC's account), or user and password (one account for all)"
		return
	case sv.Exists():
		if b.Secrets == "" {
			d.diags.Errorf(RuleBMCAccount, d.r.UserPos(sv), "bmcs.secrets", "bmcs.secrets is empty").Hint =
				`name the secrets file: secrets: "bmc-secrets.json"`
		}
		return
	case !pv.Exists() || b.User == "":
		d.diags.Errorf(RuleBMCAccount, b.Pos, "bmcs", "bmcs: no account: give user and password, or a secrets file").Hint =
			`write user: "seam" and password: "file:bmc-password", or secrets: "bmc-secrets.json" (docs/bmc-credentials.md)`
		return
	}
	ref, _ := pv.String()
	b.Password = Secret{Ref: ref, What: "password of the BMCs", Dir: d.r.Dir, Pos: d.r.UserPos(pv)}
	if !b.Password.valid() {
		d.diags.Errorf(RuleBMCSecret, b.Password.Pos, "bmcs.password", "bmcs.password: the password is written inline").Hint =
			`write a reference: "env:SEAM_BMC_PASSWORD" or "file:bmc-password", or use a secrets file (bmcs.secrets)`
	}
}

// MarshalBMCs writes the bmcs section as a file of the given CUE
// package, to sit beside a binding (sat sim's bmcs.cue). LoadBMCs reads
// it back to an equal section.
func MarshalBMCs(b *BMCs, pkg string) []byte {
	var w bytes.Buffer
	q := strconv.Quote
	fmt.Fprintf(&w, "package %s\n\nbmcs: {\n", pkg)
	if b.Secrets != "" {
		fmt.Fprintf(&w, "\tsecrets:  %s\n", q(b.Secrets))
	} else {
		fmt.Fprintf(&w, "\tuser:     %s\n\tpassword: %s\n", q(b.User), q(b.Password.Ref))
	}
	fmt.Fprintf(&w, "\tscheme:   %s\n", q(b.Scheme))
	if b.Insecure {
		w.WriteString("\tinsecure: true\n")
	}
	if b.Auth != "" && b.Auth != "session" {
		fmt.Fprintf(&w, "\tauth:     %s\n", q(b.Auth))
	}
	if b.Timeout > 0 && b.Timeout != 10*time.Second {
		fmt.Fprintf(&w, "\ttimeout:  %s\n", q(duration(b.Timeout)))
	}
	if b.Parallel > 0 && b.Parallel != 64 {
		fmt.Fprintf(&w, "\tparallel: %d\n", b.Parallel)
	}
	if b.PerBMC > 1 {
		fmt.Fprintf(&w, "\tper_bmc:  %d\n", b.PerBMC)
	}
	if len(b.WritableControls) > 0 {
		fmt.Fprintf(&w, "\twritable: [%s]\n", quoteAll(b.WritableControls))
	}
	if len(b.WritableOn) > 0 {
		w.WriteString("\twritable_on: {\n")
		for _, name := range slices.Sorted(maps.Keys(b.WritableOn)) {
			fmt.Fprintf(&w, "\t\t%s: [%s]\n", q(name), quoteAll(b.WritableOn[name]))
		}
		w.WriteString("\t}\n")
	}
	if len(b.Endpoints) > 0 {
		w.WriteString("\tendpoints: {\n")
		for _, e := range b.Endpoints {
			fmt.Fprintf(&w, "\t\t%s: %s\n", q(e.Name), q(e.Address))
		}
		w.WriteString("\t}\n")
	}
	w.WriteString("}\n")
	return w.Bytes()
}

func quoteAll(ss []string) string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strconv.Quote(s)
	}
	return strings.Join(out, ", ")
}

// stringList is a CUE list of strings; nil when v is none.
func stringList(v cue.Value) []string {
	it, err := v.List()
	if err != nil {
		return nil
	}
	var out []string
	for it.Next() {
		if s, err := it.Value().String(); err == nil {
			out = append(out, s)
		}
	}
	return out
}
