package evidence

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hiddeco/sshsig"
	"golang.org/x/crypto/ssh"
)

// Namespace is the SSHSIG namespace of every evidence signature (seals
// and the manifest's), so that one can never pass for a contract
// signature or the other way round.
const Namespace = "seam-evidence"

// StatementType marks a seal statement.
const StatementType = "seam-evidence-seal/v1"

// Roles of a signer, as seals name them.
const (
	RoleRun        = "run"        // the run's own seals, by the engineer who ran it
	RoleWitness    = "witness"    // the witness of manual steps
	RoleAcceptance = "acceptance" // the engineer who accepts the run
	RoleAttach     = "attach"     // who attached a file after the run
)

// Signer signs a statement: it returns an armored SSHSIG of message in
// namespace seam-evidence, as `ssh-keygen -Y sign -n seam-evidence`
// writes it.
type Signer interface {
	Sign(message []byte) ([]byte, error)
}

// SSHSigner signs with an SSH key: a key file's, or one held by
// ssh-agent (a hardware key in the agent included).
func SSHSigner(s ssh.Signer) Signer { return sshSigner{s} }

type sshSigner struct{ s ssh.Signer }

func (k sshSigner) Sign(message []byte) ([]byte, error) {
	sig, err := sshsig.Sign(bytes.NewReader(message), k.s, sshsig.HashSHA512, Namespace)
	if err != nil {
		return nil, fmt.Errorf("evidence: signing: %w", err)
	}
	return sshsig.Armor(sig), nil
}

// Statement is what a seal signs: this bundle, the record it covers (a
// checkpoint) and that record's hash, which chains back to the first
// record, and through the checkpoint the first SamplesBytes of
// samples.csv. Role and By say who signs in what capacity.
type Statement struct {
	Type          string    `json:"type"`
	Bundle        string    `json:"bundle"`
	Seq           int64     `json:"seq"`
	Head          string    `json:"head"`
	SamplesBytes  int64     `json:"samples_bytes"`
	SamplesDigest string    `json:"samples_digest"`
	Role          string    `json:"role"`
	By            string    `json:"by,omitempty"`
	At            time.Time `json:"at"`
}

// SealData is the data of a seal record: the statement's exact bytes
// and its armored signature (ssh-keygen -Y verify -n seam-evidence
// checks it over the statement).
type SealData struct {
	Statement string `json:"statement"`
	Signature string `json:"signature"`
}

func (st Statement) bytes() []byte {
	b, _ := json.Marshal(st)
	return b
}

// sign signs st and returns the seal record's data and the signer's key.
func sign(s Signer, st Statement) (SealData, ssh.PublicKey, error) {
	msg := st.bytes()
	armored, err := s.Sign(msg)
	if err != nil {
		return SealData{}, nil, err
	}
	key, err := checkSignature(msg, armored)
	if err != nil {
		return SealData{}, nil, fmt.Errorf("evidence: the signer's signature does not verify: %w", err)
	}
	return SealData{Statement: string(msg), Signature: string(armored)}, key, nil
}

// checkSignature verifies an armored SSHSIG over msg in the evidence
// namespace and returns the key that made it.
func checkSignature(msg, armored []byte) (ssh.PublicKey, error) {
	sig, err := sshsig.Unarmor(armored)
	if err != nil {
		return nil, fmt.Errorf("not an SSH signature: %v", err)
	}
	if sig.Namespace != Namespace {
		return sig.PublicKey, fmt.Errorf("made for namespace %q, not %q", sig.Namespace, Namespace)
	}
	if err := sshsig.Verify(bytes.NewReader(msg), sig, sig.PublicKey, sig.HashAlgorithm, Namespace); err != nil {
		return sig.PublicKey, fmt.Errorf("does not verify over what it claims to sign (by %s): %v", ssh.FingerprintSHA256(sig.PublicKey), err)
	}
	return sig.PublicKey, nil
}

// parseStatement reads a seal's statement strictly, and checks it is in
// the form sat writes.
func parseStatement(raw string) (Statement, error) {
	var st Statement
	dec := json.NewDecoder(bytes.NewReader([]byte(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&st); err != nil {
		return st, fmt.Errorf("its statement is not one: %v", err)
	}
	if st.Type != StatementType {
		return st, fmt.Errorf("its statement is of type %q, not %q", st.Type, StatementType)
	}
	if !bytes.Equal(st.bytes(), []byte(raw)) {
		return st, errors.New("its statement is not in the form sat writes")
	}
	return st, nil
}

// Trusted reports whether key is among keys (any key when keys is nil).
func trustedKey(key ssh.PublicKey, keys []ssh.PublicKey) bool {
	if keys == nil {
		return true
	}
	for _, k := range keys {
		if bytes.Equal(k.Marshal(), key.Marshal()) {
			return true
		}
	}
	return false
}
