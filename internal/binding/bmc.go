package binding

import (
	"bytes"
	"fmt"
	"net"
	"sort"
	"strconv"
	"time"

	"cuelang.org/go/cue"

	"github.com/seamdc/seam/internal/cueload"
	"github.com/seamdc/seam/internal/diag"
)

// Rules of the BMC section.
const (
	RuleBMCSecret  = "BIND030" // the BMCs' password written inline
	RuleBMCAddress = "BIND031" // a BMC endpoint that is no host:port
)

// BMCs is a binding's bmcs section: how sat discover reaches the site's
// BMCs over Redfish.
type BMCs struct {
	User      string
	Password  Secret
	Scheme    string // https, http
	Insecure  bool
	Auth      string // session, basic
	Timeout   time.Duration
	Parallel  int           // BMCs walked at once
	PerBMC    int           // requests in flight to one BMC
	Endpoints []BMCEndpoint // sorted by name; none: the inventory's addresses
	Pos       diag.Pos
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
	pv := at(v, "password")
	ref, _ := pv.String()
	b.Password = Secret{Ref: ref, What: "password of the BMCs", Dir: r.Dir, Pos: r.UserPos(pv)}
	if !b.Password.valid() {
		d.diags.Errorf(RuleBMCSecret, b.Password.Pos, "bmcs.password", "bmcs.password: the password is written inline").Hint =
			`write a reference: "env:SEAM_BMC_PASSWORD" or "file:bmc-password"`
	}
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
	return b, d.diags.Sorted(), nil
}

// MarshalBMCs writes the bmcs section as a file of the given CUE
// package, to sit beside a binding (sat sim's bmcs.cue). LoadBMCs reads
// it back to an equal section.
func MarshalBMCs(b *BMCs, pkg string) []byte {
	var w bytes.Buffer
	q := strconv.Quote
	fmt.Fprintf(&w, "package %s\n\nbmcs: {\n", pkg)
	fmt.Fprintf(&w, "\tuser:     %s\n\tpassword: %s\n\tscheme:   %s\n", q(b.User), q(b.Password.Ref), q(b.Scheme))
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
