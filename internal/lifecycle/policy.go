package lifecycle

import (
	"bytes"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"golang.org/x/crypto/ssh"

	"github.com/seamdc/seam/internal/sign"
	"github.com/seamdc/seam/internal/tsa"
)

// PolicyFormat is the access policy's format.
const PolicyFormat = "seam.lifecycle.access/v1"

// Permissions a role may have besides transitions.
const (
	MayAsBuilt        = "asbuilt"          // import the as-built inventory
	MayHolds          = "holds"            // set and release one's own holds
	MayReleaseAnyHold = "release-any-hold" // release a hold someone else set
	MayReconcile      = "reconcile"        // record what sat discover found
	MayAccess         = "access"           // change the access policy
	MayChemistry      = "chemistry"        // record a loop's water-chemistry samples
	MayIssues         = "issues"           // record bundles in the issues log, assign issues
	MayWaive          = "waive"            // waive an issue: the accepting engineer
)

var permissions = []string{MayAsBuilt, MayHolds, MayReleaseAnyHold, MayReconcile, MayAccess, MayChemistry, MayIssues, MayWaive}

// Policy is who may change what in a store: roles, the members who hold
// them, and the keys that authenticate them. It is kept in the store
// (every version of it), so a team that shares a store shares it.
type Policy struct {
	Format string `json:"format"`
	// AllowedSigners is an allowed-signers file's content (ssh-keygen's
	// format): the SSH keys of the members "ssh:PRINCIPAL". Only entries
	// without namespaces, or with seam-lifecycle among them, count.
	AllowedSigners string `json:"allowed_signers"`
	// EvidenceKeys is an authorized_keys content: the keys whose
	// signatures on an evidence bundle count (the test rigs' and the
	// commissioning engineers' keys), as sat verify --trust takes them.
	EvidenceKeys string `json:"evidence_keys"`
	// Roles by name.
	Roles map[string]Role `json:"roles"`
	// Members by principal: "ssh:NAME" (a principal of AllowedSigners)
	// or "db:ROLE" (a PostgreSQL role, the session's).
	Members map[string]Member `json:"members"`
	// TimeStampURL is an RFC 3161 authority outside the site that
	// time-stamps every seal; TimeStampRoots (PEM) the root
	// certificate(s) its signing certificate must chain to. Both or
	// neither.
	TimeStampURL   string `json:"time_stamp_url,omitempty"`
	TimeStampRoots string `json:"time_stamp_roots,omitempty"`

	signers  *sign.AllowedSigners
	evidence []ssh.PublicKey
	tsaRoots *x509.CertPool
}

// Role is what its members may do.
type Role struct {
	// Transitions are "from>to", either side "*" for any state.
	Transitions []string `json:"transitions,omitempty"`
	// May lists other permissions: asbuilt, holds, release-any-hold,
	// reconcile, access.
	May []string `json:"may,omitempty"`
}

// Member is a principal's roles and where they apply.
type Member struct {
	Roles []string `json:"roles"`
	// Modules, if set, are the only modules whose elements the member
	// may move (elements outside any module then not at all).
	Modules []string `json:"modules,omitempty"`
}

// policyFile is the policy as a person writes it: the keys may be
// files beside it.
type policyFile struct {
	Policy
	AllowedSignersFile string `json:"allowed_signers_file,omitempty"`
	EvidenceKeysFile   string `json:"evidence_keys_file,omitempty"`
	TimeStampRootsFile string `json:"time_stamp_roots_file,omitempty"`
}

// ReadPolicyFile reads a policy file; allowed_signers_file and
// evidence_keys_file (relative to it) are read into the policy.
func ReadPolicyFile(path string) (*Policy, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("access policy: %w", err)
	}
	var f policyFile
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("access policy %s: %w (docs/lifecycle.md shows one)", path, err)
	}
	dir := filepath.Dir(path)
	for _, inc := range []struct {
		file string
		into *string
		what string
	}{{f.AllowedSignersFile, &f.AllowedSigners, "allowed_signers"}, {f.EvidenceKeysFile, &f.EvidenceKeys, "evidence_keys"},
		{f.TimeStampRootsFile, &f.TimeStampRoots, "time_stamp_roots"}} {
		if inc.file == "" {
			continue
		}
		if *inc.into != "" {
			return nil, fmt.Errorf("access policy %s: give %s or %s_file, not both", path, inc.what, inc.what)
		}
		p := inc.file
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		raw, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("access policy %s: %s_file: %w", path, inc.what, err)
		}
		*inc.into = string(raw)
	}
	p := f.Policy
	if err := p.check(path); err != nil {
		return nil, err
	}
	return &p, nil
}

// ParsePolicy reads a policy as the store keeps it.
func ParsePolicy(doc []byte) (*Policy, error) {
	var p Policy
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("access policy: %w", err)
	}
	if err := p.check("the store's access policy"); err != nil {
		return nil, err
	}
	return &p, nil
}

// Marshal is the policy as the store keeps it.
func (p *Policy) Marshal() []byte {
	b, _ := json.MarshalIndent(p, "", "  ")
	return append(b, '\n')
}

// Validate checks a policy made in Go and reads its keys.
func (p *Policy) Validate() error { return p.check("(in Go)") }

// check validates the policy and reads its keys.
func (p *Policy) check(where string) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("access policy %s: %s", where, fmt.Sprintf(format, args...))
	}
	if p.Format != PolicyFormat {
		return bad("format %q, want %q", p.Format, PolicyFormat)
	}
	as, err := sign.ParseAllowedSigners("allowed_signers", []byte(p.AllowedSigners))
	if err != nil {
		return bad("%v", err)
	}
	p.signers = as
	p.evidence = nil
	for rest := []byte(p.EvidenceKeys); len(bytes.TrimSpace(rest)) > 0; {
		k, _, _, r, err := ssh.ParseAuthorizedKey(rest)
		if err != nil {
			return bad("evidence_keys: %v", err)
		}
		p.evidence, rest = append(p.evidence, k), r
	}
	if len(p.Roles) == 0 || len(p.Members) == 0 {
		return bad("it has no roles or no members: nobody could change anything")
	}
	p.tsaRoots = nil
	switch {
	case (p.TimeStampURL == "") != (p.TimeStampRoots == ""):
		return bad("give time_stamp_url and time_stamp_roots (or time_stamp_roots_file) together: the authority, and the roots its stamps must chain to")
	case p.TimeStampURL != "":
		if u, err := url.Parse(p.TimeStampURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return bad("time_stamp_url %q: want an http:// or https:// URL of an RFC 3161 authority", p.TimeStampURL)
		}
		roots, err := tsa.ParseRoots("time_stamp_roots", []byte(p.TimeStampRoots))
		if err != nil {
			return bad("%v", err)
		}
		p.tsaRoots = roots
	}
	for name, r := range p.Roles {
		for _, tr := range r.Transitions {
			if err := checkPattern(tr); err != nil {
				return bad("role %s: %v", name, err)
			}
		}
		for _, m := range r.May {
			if !slices.Contains(permissions, m) {
				return bad("role %s: may %q: the permissions are %s", name, m, strings.Join(permissions, ", "))
			}
		}
	}
	for _, who := range sortedKeys(p.Members) {
		m := p.Members[who]
		kind, name, _ := strings.Cut(who, ":")
		if (kind != "ssh" && kind != "db") || name == "" {
			return bad("member %q: write ssh:PRINCIPAL (a principal of allowed_signers) or db:ROLE (a PostgreSQL role)", who)
		}
		if kind == "ssh" && len(p.keysOf(name)) == 0 {
			return bad("member %s: allowed_signers lists no key of %s for namespace %s", who, name, Namespace)
		}
		if len(m.Roles) == 0 {
			return bad("member %s has no roles", who)
		}
		for _, r := range m.Roles {
			if _, ok := p.Roles[r]; !ok {
				return bad("member %s: no role %q (the roles: %s)", who, r, strings.Join(sortedKeys(p.Roles), ", "))
			}
		}
	}
	return nil
}

// checkPattern validates "from>to".
func checkPattern(tr string) error {
	from, to, ok := strings.Cut(tr, ">")
	if !ok {
		return fmt.Errorf("transition %q: write from>to, such as installed>commissioned (* for any state)", tr)
	}
	for _, s := range []string{from, to} {
		if s == "*" {
			continue
		}
		if _, err := ParseState(s); err != nil {
			return fmt.Errorf("transition %q: %v", tr, err)
		}
	}
	if from != "*" && to != "*" {
		if _, err := Allowed(State(from), State(to)); err != nil {
			return fmt.Errorf("transition %q: %v", tr, err)
		}
	}
	return nil
}

// keysOf are the allowed signers' entries for principal in the
// lifecycle namespace (any time: validity is checked when a statement
// is verified).
func (p *Policy) keysOf(principal string) []sign.Signer {
	var out []sign.Signer
	for _, e := range p.signers.Entries {
		if e.CertAuthority {
			continue
		}
		if slices.ContainsFunc(e.Principals, func(pat string) bool { return pat == principal || matchPattern(pat, principal) }) &&
			(len(e.Namespaces) == 0 || slices.Contains(e.Namespaces, Namespace)) {
			out = append(out, e)
		}
	}
	return out
}

// EvidenceKeyList is the keys whose evidence signatures count.
func (p *Policy) EvidenceKeyList() []ssh.PublicKey { return slices.Clone(p.evidence) }

// may says why actor may not do action on an element of module, or
// returns nil.
func (p *Policy) may(actor, action, module string) error {
	m, ok := p.Members[actor]
	if !ok {
		return &AccessError{Actor: actor, Action: action, Detail: "not a member of the store's access policy"}
	}
	if len(m.Modules) > 0 && !slices.Contains(m.Modules, module) {
		where := "module " + module
		if module == "" {
			where = "an element outside every module"
		}
		return &AccessError{Actor: actor, Action: action, Detail: fmt.Sprintf("%s is outside the member's modules (%s)", where, strings.Join(m.Modules, ", "))}
	}
	for _, rn := range m.Roles {
		r := p.Roles[rn]
		if from, to, isMove := strings.Cut(action, ">"); isMove {
			for _, pat := range r.Transitions {
				pf, pt, _ := strings.Cut(pat, ">")
				if (pf == "*" || pf == from) && (pt == "*" || pt == to) {
					return nil
				}
			}
		} else if slices.Contains(r.May, action) {
			return nil
		}
	}
	return &AccessError{Actor: actor, Action: action, Detail: fmt.Sprintf("none of the member's roles (%s) allows it", strings.Join(m.Roles, ", "))}
}

// matchPattern is the allowed-signers principal match (* and ?).
func matchPattern(p, s string) bool {
	ok, _ := filepath.Match(p, s)
	return ok && !strings.Contains(s, "/")
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// authority is the time-stamping authority the policy names (nil: none).
func (p *Policy) authority() *tsa.Authority {
	if p == nil || p.tsaRoots == nil {
		return nil
	}
	return &tsa.Authority{URL: p.TimeStampURL, Roots: p.tsaRoots}
}
