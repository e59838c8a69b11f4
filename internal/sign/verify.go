package sign

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/seamdc/seam/internal/contract"
)

// Status of one party's signature on one boundary.
type Status string

// Statuses. Only StatusSigned counts.
const (
	StatusSigned  Status = "signed"  // a valid signature over the current digest
	StatusMissing Status = "missing" // no signature from this party
	StatusStale   Status = "stale"   // a valid signature over an earlier digest: a change invalidated it
	StatusInvalid Status = "invalid" // a signature that does not hold: tampered, unknown key, wrong namespace
)

// PartyResult is one party's signature on one boundary.
type PartyResult struct {
	Party        string `json:"party"`
	Status       Status `json:"status"`
	Key          string `json:"key,omitempty"`           // fingerprint of the signing key
	SignedDigest string `json:"signed_digest,omitempty"` // what the statement names
	SignedAt     string `json:"signed_at,omitempty"`
	Detail       string `json:"detail,omitempty"`
	Statement    string `json:"statement"` // path of the statement file
}

// BoundaryResult is every party's signature on one boundary.
type BoundaryResult struct {
	Boundary string        `json:"boundary"`
	Digest   string        `json:"digest"`
	Parties  []PartyResult `json:"parties"`
}

// Report is the result of Verify.
type Report struct {
	Dir        string           `json:"dir"`
	Schema     Schema           `json:"schema"`
	Boundaries []BoundaryResult `json:"boundaries"`
	Orphans    []string         `json:"orphans"` // signature files that no boundary and party expects
}

// OK reports whether every required signature is present and current.
func (r Report) OK() bool {
	for _, b := range r.Boundaries {
		for _, p := range b.Parties {
			if p.Status != StatusSigned {
				return false
			}
		}
	}
	return true
}

// Count returns how many party signatures have status s.
func (r Report) Count(s Status) int {
	n := 0
	for _, b := range r.Boundaries {
		for _, p := range b.Parties {
			if p.Status == s {
				n++
			}
		}
	}
	return n
}

// Verify checks, for every boundary (or only boundary, when not empty),
// the signature of every party it lists against the allowed signers.
func Verify(c *contract.Contracts, allowed *AllowedSigners, boundary string, now time.Time) (Report, error) {
	units, err := Units(c)
	if err != nil {
		return Report{}, err
	}
	r := Report{Dir: c.Dir, Schema: currentSchema(), Orphans: []string{}}
	expected := map[string]bool{}
	found := false
	for _, u := range units {
		for _, p := range u.Parties {
			expected[filepath.Base(StatementPath(c.Dir, u.Boundary, p))] = true
		}
		if boundary != "" && u.Boundary != boundary {
			continue
		}
		found = true
		br := BoundaryResult{Boundary: u.Boundary, Digest: u.Digest}
		for _, p := range u.Parties {
			br.Parties = append(br.Parties, checkParty(c, u, p, allowed, now))
		}
		r.Boundaries = append(r.Boundaries, br)
	}
	if boundary != "" && !found {
		return Report{}, fmt.Errorf("no boundary %q in %s", boundary, c.Dir)
	}
	r.Orphans, err = orphans(c.Dir, expected)
	return r, err
}

func checkParty(c *contract.Contracts, u Unit, party string, allowed *AllowedSigners, now time.Time) PartyResult {
	path := StatementPath(c.Dir, u.Boundary, party)
	res := PartyResult{Party: party, Statement: rel(c.Dir, path)}
	if err := CheckParty(party); err != nil {
		res.Status, res.Detail = StatusInvalid, err.Error()
		return res
	}
	msg, errMsg := os.ReadFile(path)
	armored, errSig := os.ReadFile(path + ".sig")
	switch {
	case errors.Is(errMsg, fs.ErrNotExist) && errors.Is(errSig, fs.ErrNotExist):
		res.Status, res.Detail = StatusMissing, "no signature from "+party
		return res
	case errMsg != nil:
		res.Status, res.Detail = StatusInvalid, fmt.Sprintf("signature without its statement: %v", errMsg)
		return res
	case errSig != nil:
		res.Status, res.Detail = StatusMissing, fmt.Sprintf("statement %s is not signed (sign it with contractc sign or ssh-keygen -Y sign -n %s)", res.Statement, Namespace)
		return res
	}
	fp, err := VerifyMessage(msg, armored, allowed, party, now)
	res.Key = fp
	if err != nil {
		res.Status, res.Detail = StatusInvalid, err.Error()
		return res
	}
	st, err := ParseStatement(msg)
	if err != nil {
		res.Status, res.Detail = StatusInvalid, err.Error()
		return res
	}
	res.SignedDigest, res.SignedAt = st.Digest, st.SignedAt
	res.Status, res.Detail = judge(c, u, party, st)
	return res
}

// judge compares a validly signed statement with the current contract.
func judge(c *contract.Contracts, u Unit, party string, st Statement) (Status, string) {
	switch {
	case st.Boundary != u.Boundary || st.Party != party:
		return StatusInvalid, fmt.Sprintf("the statement is %s's for boundary %s, filed as %s's for %s", st.Party, st.Boundary, party, u.Boundary)
	case st.Site != c.Site.Name:
		return StatusInvalid, fmt.Sprintf("the statement is for site %q, not %q", st.Site, c.Site.Name)
	case st.Schema.Version != currentSchema().Version:
		return StatusStale, fmt.Sprintf("signed under schema %s, contracts now read under %s", st.Schema.Version, currentSchema().Version)
	case st.Digest != u.Digest:
		return StatusStale, fmt.Sprintf("signed %s on %s; the boundary changed since and is now %s", short(st.Digest), st.SignedAt, short(u.Digest))
	}
	return StatusSigned, ""
}

func orphans(dir string, expected map[string]bool) ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(dir, SigDir))
	if errors.Is(err, fs.ErrNotExist) {
		return []string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("signatures: %w", err)
	}
	out := []string{}
	for _, e := range entries {
		name := e.Name()
		base := strings.TrimSuffix(name, ".sig")
		if strings.HasSuffix(base, ".json") && !expected[base] {
			out = append(out, filepath.ToSlash(filepath.Join(SigDir, name)))
		}
	}
	sort.Strings(out)
	return out, nil
}

func rel(dir, path string) string {
	if r, err := filepath.Rel(dir, path); err == nil {
		return filepath.ToSlash(r)
	}
	return path
}

// short abbreviates a digest for messages: "sha256:1a2b3c4d5e6f".
func short(d string) string {
	if len(d) > 19 {
		return d[:19]
	}
	return d
}
