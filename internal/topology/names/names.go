// Package names holds what a scheduler accepts as a node's name: the
// one check that contractc vet (internal/inventory) and contractc
// topology (internal/topology) both call, so that vet refuses exactly
// what topology would, in the same words.
package names

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/seamdc/seam/internal/topology/hostlist"
)

// Slurm reports why Slurm cannot take s as a node name: empty, or a
// character its host lists and slurm.conf cannot carry (see
// hostlist.CheckName). The error reads "Slurm cannot take the name: …".
func Slurm(s string) error {
	if err := hostlist.CheckName(s, 0); err != nil {
		return fmt.Errorf("Slurm cannot take the name: %w", err)
	}
	return nil
}

// MaxSwitchName is the longest switch name topology.conf(5) allows.
const MaxSwitchName = 64

// Switch reports why Slurm cannot take s as a switch name: a rack's name
// in the handover becomes its leaf switch in topology.conf. The error
// reads "Slurm cannot take it as a switch name: …".
func Switch(s string) error {
	if err := hostlist.CheckName(s, MaxSwitchName); err != nil {
		return fmt.Errorf("Slurm cannot take it as a switch name: %w", err)
	}
	return nil
}

// Kubernetes reports why Kubernetes cannot take s as a node name: a
// node is an object, its name an RFC 1123 subdomain (lower-case letters,
// digits, '-' and '.', at most 253 characters). The error reads
// "Kubernetes cannot take the name "s": …".
func Kubernetes(s string) error {
	if err := DNSName(s); err != nil {
		return fmt.Errorf("Kubernetes cannot take the name %q: %w", s, err)
	}
	return nil
}

// Node checks a node's Slurm and Kubernetes names; a node with no
// Kubernetes name of its own joins Kubernetes under its Slurm name, so
// that name must suit both.
func Node(slurm, kube string) []error {
	var out []error
	if err := Slurm(slurm); err != nil {
		out = append(out, err)
	}
	if kube == "" {
		kube = slurm
		if slurm == "" {
			return out
		}
	}
	if err := Kubernetes(kube); err != nil {
		out = append(out, err)
	}
	return out
}

// DNSName checks a Kubernetes object name (an RFC 1123 subdomain:
// lower-case letters, digits, '-' and '.', at most 253 characters).
// One pass over its bytes: vet checks every node's name.
func DNSName(s string) error {
	if s == "" {
		return errors.New("empty")
	}
	if len(s) > 253 {
		return fmt.Errorf("%d characters, more than 253", len(s))
	}
	start := 0 // where the current dot-separated part starts
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == '.' {
			if n := i - start; n == 0 || n > 63 {
				return errors.New("each dot-separated part needs 1 to 63 characters")
			}
			start = i + 1
			continue
		}
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' && i > start && i+1 < len(s) && s[i+1] != '.' {
			continue
		}
		r, _ := utf8.DecodeRuneInString(s[i:])
		return fmt.Errorf("%q: lower-case letters, digits and '-' (not first or last) only", r)
	}
	return nil
}
