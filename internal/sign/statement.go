package sign

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"time"
)

// StatementType names the statement format; it changes when the meaning
// of a statement does.
const StatementType = "seam.contract.signature/v1"

// Namespace is the SSHSIG namespace of contract signatures: a signature
// made for another purpose (git commits, files) never counts here.
const Namespace = "seam-contract"

// Statement is what a party signs: "I, Party, sign boundary Boundary of
// site Site whose signed unit has digest Digest". It is written as JSON
// beside the contracts, and the SSH signature covers its exact bytes.
type Statement struct {
	Type     string `json:"type"`
	Site     string `json:"site"`
	Boundary string `json:"boundary"`
	Party    string `json:"party"`
	Digest   string `json:"digest"`
	Schema   Schema `json:"schema"`
	Tool     string `json:"tool"`
	SignedAt string `json:"signed_at"` // RFC 3339, UTC; informational
}

// Schema records the contract language the digest was computed under.
type Schema struct {
	Version string `json:"version"`
	Digest  string `json:"digest"`
}

// Marshal writes the statement as indented JSON with a final newline.
func (s Statement) Marshal() []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a struct of strings always encodes
	return buf.Bytes()
}

// ParseStatement reads a statement strictly: unknown fields, a missing
// field or another type are errors.
func ParseStatement(b []byte) (Statement, error) {
	var s Statement
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return Statement{}, fmt.Errorf("not a signature statement: %w", err)
	}
	if dec.More() {
		return Statement{}, fmt.Errorf("not a signature statement: data after the JSON object")
	}
	if s.Type != StatementType {
		return Statement{}, fmt.Errorf("statement type %q, want %q", s.Type, StatementType)
	}
	for _, f := range []struct{ name, v string }{{"site", s.Site}, {"boundary", s.Boundary}, {"party", s.Party},
		{"digest", s.Digest}, {"schema.version", s.Schema.Version}} {
		if f.v == "" {
			return Statement{}, fmt.Errorf("statement has no %s", f.name)
		}
	}
	if _, err := time.Parse(time.RFC3339, s.SignedAt); err != nil {
		return Statement{}, fmt.Errorf("statement signed_at: %w", err)
	}
	return s, nil
}

// partyRE is what a party name may be: it becomes a file name and an
// allowed-signers principal, so no spaces, commas, quotes or slashes.
var partyRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@+-]*$`)

// CheckParty reports a party name that cannot name a signer.
func CheckParty(p string) error {
	if !partyRE.MatchString(p) {
		return fmt.Errorf("party %q cannot be a signer: use letters, digits and . _ @ + - only (it names a file and an allowed-signers principal)", p)
	}
	return nil
}
