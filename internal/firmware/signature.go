package firmware

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/seamdc/seam/internal/sign"
)

// A baseline is signed as a contract is: each party the policy names
// (policy.signed_by) signs a statement naming the baseline's canonical
// digest with its SSH key, in the contract namespace (its statement's
// type keeps it apart from a contract's), and the key must be one the
// contracts' allowed signers list for the party. The statements live in
// the baseline directory's signatures/.

// SignatureType names a baseline signature's statement.
const SignatureType = "seam.firmware.signature/v1"

// SigDir is the baseline directory's signatures directory.
const SigDir = "signatures"

// Statement is what a party signs: "I, Party, sign the firmware
// baseline whose canonical digest is Digest".
type Statement struct {
	Type     string `json:"type"`
	Party    string `json:"party"`
	Digest   string `json:"digest"`
	Tool     string `json:"tool"`
	SignedAt string `json:"signed_at"` // RFC 3339, UTC; informational
}

// StatementPath is where party's statement of the baseline in dir
// lives; its signature is the same path and ".sig".
func StatementPath(dir, party string) string { return filepath.Join(dir, SigDir, party+".json") }

// Signature states.
const (
	Signed  = "signed"
	Missing = "missing"
	Stale   = "stale"   // it signs another digest: the baseline changed since
	Invalid = "invalid" // a bad signature, or a key the allowed signers do not list for the party
)

// Signature is one required party's signature of the baseline.
type Signature struct {
	Party    string `json:"party"`
	State    string `json:"state"`
	Key      string `json:"key,omitempty"` // SHA256 fingerprint
	SignedAt string `json:"signed_at,omitempty"`
	Why      string `json:"why,omitempty"`
}

// Sign writes party's statement of the set's digest and its signature
// by signer, whose key allowed must list for party.
func Sign(set *Set, party string, signer ssh.Signer, allowed *sign.AllowedSigners, now time.Time, tool string) (string, error) {
	if err := sign.CheckParty(party); err != nil {
		return "", err
	}
	if allowed != nil {
		if err := sign.KeyAllowed(signer.PublicKey(), allowed, party, now); err != nil {
			return "", fmt.Errorf("refusing to sign as %s: %w", party, err)
		}
	}
	st := Statement{Type: SignatureType, Party: party, Digest: set.Digest, Tool: tool, SignedAt: now.UTC().Format(time.RFC3339)}
	body, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return "", err
	}
	body = append(body, '\n')
	sig, err := sign.SignMessage(body, signer)
	if err != nil {
		return "", err
	}
	path := StatementPath(set.Dir, party)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(path, body, 0o644); err != nil {
		return "", err
	}
	return path, os.WriteFile(path+".sig", sig, 0o644)
}

// Signatures checks the signature of each party the policy names
// against the set's digest and the allowed signers (nil: none allowed).
func Signatures(set *Set, allowed *sign.AllowedSigners, now time.Time) []Signature {
	out := make([]Signature, 0, len(set.Policy.SignedBy))
	for _, party := range set.Policy.SignedBy {
		out = append(out, signatureOf(set, party, allowed, now))
	}
	return out
}

func signatureOf(set *Set, party string, allowed *sign.AllowedSigners, now time.Time) Signature {
	s := Signature{Party: party}
	path := StatementPath(set.Dir, party)
	body, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		s.State, s.Why = Missing, fmt.Sprintf("no %s: sat firmware sign --party %s", path, party)
		return s
	}
	var armored []byte
	if err == nil {
		armored, err = os.ReadFile(path + ".sig")
	}
	if err != nil {
		s.State, s.Why = Invalid, err.Error()
		return s
	}
	var st Statement
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&st); err != nil || st.Type != SignatureType || st.Party != party {
		s.State, s.Why = Invalid, fmt.Sprintf("%s is not %s's statement of a firmware baseline (%s)", path, party, SignatureType)
		return s
	}
	s.SignedAt = st.SignedAt
	if allowed == nil {
		s.State, s.Why = Invalid, "no allowed signers file to check the key against"
		return s
	}
	if s.Key, err = sign.VerifyMessage(body, armored, allowed, party, now); err != nil {
		s.State, s.Why = Invalid, fmt.Sprintf("%s.sig: %v", path, err)
		return s
	}
	if st.Digest != set.Digest {
		s.State, s.Why = Stale, fmt.Sprintf("it signs %s; the baseline is now %s: the baseline changed since %s signed it", st.Digest, set.Digest, party)
		return s
	}
	s.State = Signed
	return s
}
