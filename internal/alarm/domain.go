package alarm

import (
	"fmt"
	"strings"
)

// Kind is a kind of domain: what an alarm is raised for.
type Kind string

// Domain kinds. The syntax is the design brief's, kind=value:
// cooling_loop=l2, power_block=p1, feed=p1/a, cdu=l2/cdu-1, module=mb,
// rack=mb/r01, site=threemodule.
const (
	CoolingLoop Kind = "cooling_loop"
	CDU         Kind = "cdu"
	PowerBlock  Kind = "power_block"
	Feed        Kind = "feed"
	Module      Kind = "module"
	Rack        Kind = "rack"
	Site        Kind = "site"
	// Any is a Def's Domain when the alarm may be raised for a domain
	// of any kind.
	Any Kind = ""
)

// Kinds lists the domain kinds.
var Kinds = []Kind{CoolingLoop, CDU, PowerBlock, Feed, Module, Rack, Site}

// Domain is a failure domain: a loop, a CDU, a block, a feed, a module,
// a rack, or the site.
type Domain struct {
	Kind  Kind
	Value string
}

// String writes the domain as kind=value.
func (d Domain) String() string { return string(d.Kind) + "=" + d.Value }

// IsZero reports whether d is no domain.
func (d Domain) IsZero() bool { return d.Kind == "" && d.Value == "" }

// MarshalText writes kind=value.
func (d Domain) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText reads kind=value (syntax only; an Index resolves it).
func (d *Domain) UnmarshalText(b []byte) error {
	p, err := ParseDomain(string(b))
	if err != nil {
		return err
	}
	*d = p
	return nil
}

// ParseDomain reads kind=value. Only the syntax is checked: whether the
// domain exists is the Index's question.
func ParseDomain(s string) (Domain, error) {
	k, v, ok := strings.Cut(strings.TrimSpace(s), "=")
	if !ok {
		return Domain{}, fmt.Errorf("domain %q: want kind=value, such as cooling_loop=l2 (kinds: %s)", s, kindList())
	}
	kind, err := ParseKind(k)
	if err != nil {
		return Domain{}, fmt.Errorf("domain %q: %w", s, err)
	}
	v = strings.TrimSpace(v)
	if v == "" || strings.ContainsAny(v, " \t\n,;=\"'") {
		return Domain{}, fmt.Errorf("domain %q: the value must be an element id without spaces, commas or quotes", s)
	}
	return Domain{kind, v}, nil
}

// ParseKind reads a domain kind; loop and block are accepted for
// cooling_loop and power_block.
func ParseKind(s string) (Kind, error) {
	switch s = strings.TrimSpace(s); s {
	case "loop":
		return CoolingLoop, nil
	case "block":
		return PowerBlock, nil
	}
	for _, k := range Kinds {
		if string(k) == s {
			return k, nil
		}
	}
	return "", fmt.Errorf("unknown domain kind %q (kinds: %s)", s, kindList())
}

func kindList() string {
	s := make([]string, len(Kinds))
	for i, k := range Kinds {
		s[i] = string(k)
	}
	return strings.Join(s, ", ")
}
