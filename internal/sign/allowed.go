package sign

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"
)

// AllowedSigners is an allowed-signers file in the format of
// ssh-keygen(1): "principals [options] keytype base64-key [comment]"
// per line. Principals are the contract's party names.
type AllowedSigners struct {
	File    string
	Entries []Signer
}

// Signer is one line of an allowed-signers file.
type Signer struct {
	Line          int
	Principals    []string // patterns: * and ? match, a leading ! negates
	Key           ssh.PublicKey
	Namespaces    []string // empty: any namespace
	ValidAfter    time.Time
	ValidBefore   time.Time
	CertAuthority bool
}

// ReadAllowedSigners reads and parses file.
func ReadAllowedSigners(file string) (*AllowedSigners, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("allowed signers: %w", err)
	}
	return ParseAllowedSigners(file, b)
}

// ParseAllowedSigners parses the content of an allowed-signers file;
// errors name file:line.
func ParseAllowedSigners(file string, b []byte) (*AllowedSigners, error) {
	as := &AllowedSigners{File: file}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		s, err := parseSignerLine(line)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", file, n, err)
		}
		s.Line = n
		as.Entries = append(as.Entries, s)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return as, nil
}

func parseSignerLine(line string) (Signer, error) {
	principals, rest, err := splitPrincipals(line)
	if err != nil {
		return Signer{}, err
	}
	key, _, options, _, err := ssh.ParseAuthorizedKey([]byte(rest))
	if err != nil {
		return Signer{}, fmt.Errorf("principals %q: cannot read the key: %w", principals, err)
	}
	s := Signer{Principals: strings.Split(principals, ","), Key: key}
	for _, o := range options {
		if err := s.option(o); err != nil {
			return Signer{}, err
		}
	}
	return s, nil
}

// splitPrincipals cuts the first field, which may be double-quoted.
func splitPrincipals(line string) (string, string, error) {
	if strings.HasPrefix(line, `"`) {
		end := strings.Index(line[1:], `"`)
		if end < 0 {
			return "", "", fmt.Errorf("unterminated quote in principals")
		}
		return line[1 : end+1], strings.TrimSpace(line[end+2:]), nil
	}
	i := strings.IndexAny(line, " \t")
	if i < 0 {
		return "", "", fmt.Errorf("want principals, then a key")
	}
	return line[:i], strings.TrimSpace(line[i:]), nil
}

func (s *Signer) option(o string) error {
	name, val, hasVal := strings.Cut(o, "=")
	val = strings.Trim(val, `"`)
	switch strings.ToLower(name) {
	case "cert-authority":
		s.CertAuthority = true
	case "namespaces":
		s.Namespaces = strings.Split(val, ",")
	case "valid-after", "valid-before":
		t, err := parseSSHTime(val)
		if err != nil || !hasVal {
			return fmt.Errorf("option %s: %q is not a time such as 20260131 or 20260131T1200Z", name, val)
		}
		if name == "valid-after" {
			s.ValidAfter = t
		} else {
			s.ValidBefore = t
		}
	default:
		return fmt.Errorf("unknown option %q (known: cert-authority, namespaces, valid-after, valid-before)", name)
	}
	return nil
}

// parseSSHTime reads ssh-keygen's YYYYMMDD[HHMM[SS]][Z]; without Z the
// time is local, as ssh-keygen reads it.
func parseSSHTime(v string) (time.Time, error) {
	loc := time.Local
	if strings.HasSuffix(v, "Z") || strings.HasSuffix(v, "z") {
		loc, v = time.UTC, v[:len(v)-1]
	}
	v = strings.Replace(v, "T", "", 1)
	for _, layout := range []string{"20060102", "200601021504", "20060102150405"} {
		if len(v) == len(layout) {
			return time.ParseInLocation(layout, v, loc)
		}
	}
	return time.Time{}, fmt.Errorf("bad time %q", v)
}

// Allows reports whether the entry lets principal sign in namespace at now.
func (s Signer) Allows(principal, namespace string, now time.Time) bool {
	if s.CertAuthority || !matchList(principal, s.Principals) {
		return false
	}
	if len(s.Namespaces) > 0 && !matchList(namespace, s.Namespaces) {
		return false
	}
	if !s.ValidAfter.IsZero() && now.Before(s.ValidAfter) {
		return false
	}
	return s.ValidBefore.IsZero() || now.Before(s.ValidBefore)
}

// KeysFor returns the keys allowed for principal in namespace at now.
func (as *AllowedSigners) KeysFor(principal, namespace string, now time.Time) []Signer {
	var out []Signer
	for _, s := range as.Entries {
		if s.Allows(principal, namespace, now) {
			out = append(out, s)
		}
	}
	return out
}

// Lookup returns the entries that list key, whatever their principals.
func (as *AllowedSigners) Lookup(key ssh.PublicKey) []Signer {
	var out []Signer
	for _, s := range as.Entries {
		if bytes.Equal(s.Key.Marshal(), key.Marshal()) {
			out = append(out, s)
		}
	}
	return out
}

// matchList is ssh's pattern-list match: no negated pattern may match,
// and some positive pattern must.
func matchList(s string, patterns []string) bool {
	ok := false
	for _, p := range patterns {
		p = strings.TrimSpace(p)
		if neg, found := strings.CutPrefix(p, "!"); found {
			if wildcard(neg, s) {
				return false
			}
		} else if wildcard(p, s) {
			ok = true
		}
	}
	return ok
}

// wildcard matches s against p, where * is any run and ? any one byte.
func wildcard(p, s string) bool {
	for len(p) > 0 {
		switch p[0] {
		case '*':
			for i := len(s); i >= 0; i-- {
				if wildcard(p[1:], s[i:]) {
					return true
				}
			}
			return false
		case '?':
			if s == "" {
				return false
			}
		default:
			if s == "" || s[0] != p[0] {
				return false
			}
		}
		p, s = p[1:], s[1:]
	}
	return s == ""
}
