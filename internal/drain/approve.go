package drain

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hiddeco/sshsig"
	"golang.org/x/crypto/ssh"

	"github.com/seamdc/seam/internal/hold"
	"github.com/seamdc/seam/internal/sign"
)

// Namespace is the SSHSIG namespace of facilityd's requests: a
// signature made for a contract (seam-contract) or for anything else
// does not approve a release.
const Namespace = "seam-facilityd"

// RequestFormat is the format of a request.
const RequestFormat = "seam.facilityd-request/v1"

// Actions a request asks for.
const (
	ActRelease    = "release"    // release an owner's hold
	ActHold       = "hold"       // place a hold (burn-in, maintenance, RMA, a person)
	ActDrain      = "drain"      // approve a drain the storm guard refused
	ActSuppress   = "suppress"   // suppress drains for a domain until a time
	ActUnsuppress = "unsuppress" // end a suppression
)

// Actions lists the actions.
var Actions = []string{ActRelease, ActHold, ActDrain, ActSuppress, ActUnsuppress}

// Request is what a person asks facilityd to do, signed with their SSH
// key: the approval is the signature, by a key the allowed-signers file
// lists for the request's By.
type Request struct {
	Format string    `json:"format"`
	Site   string    `json:"site"`
	Action string    `json:"action"`
	Owner  Owner     `json:"owner,omitempty"`
	Domain string    `json:"domain,omitempty"`
	Nodes  string    `json:"nodes,omitempty"` // a hostlist
	Until  time.Time `json:"until,omitzero"`
	Why    string    `json:"why,omitempty"`
	By     string    `json:"by"`
	Issued time.Time `json:"issued"`
	Nonce  string    `json:"nonce"`
}

// Signed is a request with its signature, as facilityd takes it.
type Signed struct {
	Request   json.RawMessage `json:"request"`
	Signature string          `json:"signature"` // armored SSHSIG
}

// NewRequest fills a request's format, issue time and nonce.
func NewRequest(site, action, by string, now time.Time) Request {
	var n [16]byte
	_, _ = rand.Read(n[:])
	return Request{Format: RequestFormat, Site: site, Action: action, By: by, Issued: now.UTC().Truncate(time.Second), Nonce: hex.EncodeToString(n[:])}
}

// Check validates a request's form.
func (r Request) Check() error {
	switch {
	case r.Format != RequestFormat:
		return fmt.Errorf("request format %q, want %q", r.Format, RequestFormat)
	case !slices.Contains(Actions, r.Action):
		return fmt.Errorf("request action %q: want one of %s", r.Action, strings.Join(Actions, ", "))
	case r.By == "":
		return errors.New("request names no person (by)")
	case r.Nonce == "" || r.Issued.IsZero():
		return errors.New("request without nonce or issue time")
	case r.Why == "" && r.Action != ActUnsuppress:
		return errors.New("request says not why: a reason is recorded with every approval")
	}
	switch r.Action {
	case ActRelease, ActHold, ActDrain:
		if _, err := hold.Parse(string(r.Owner)); err != nil {
			return err
		}
	}
	if r.Action == ActHold && r.Owner.Kind() == hold.Facility {
		return errors.New("facility holds are placed by alarms, not by requests")
	}
	if r.Action == ActHold && (r.Domain == "") == (r.Nodes == "") {
		return errors.New("a hold names a domain or nodes (a hostlist), one of them")
	}
	if (r.Action == ActSuppress || r.Action == ActUnsuppress) && r.Domain == "" {
		return errors.New("a suppression names a domain")
	}
	if r.Action == ActSuppress && r.Until.IsZero() {
		return errors.New("a suppression needs an end (until)")
	}
	return nil
}

// Sign signs a request with signer.
func Sign(r Request, signer ssh.Signer) (Signed, error) {
	if err := r.Check(); err != nil {
		return Signed{}, err
	}
	msg, err := json.Marshal(r)
	if err != nil {
		return Signed{}, err
	}
	sig, err := sshsig.Sign(bytes.NewReader(msg), signer, sshsig.HashSHA512, Namespace)
	if err != nil {
		return Signed{}, fmt.Errorf("sign: %w", err)
	}
	return Signed{Request: msg, Signature: string(sshsig.Armor(sig))}, nil
}

// Approval is a verified request: who approved it, with which key.
type Approval struct {
	Request
	Key string `json:"key"` // the signing key's SHA256 fingerprint
}

// Verifier checks signed requests against an allowed-signers file.
type Verifier struct {
	Allowed *sign.AllowedSigners
	Site    string
	// MaxAge bounds how old a request may be (default 10 min), and how
	// far in the future its issue time may lie (1 min).
	MaxAge time.Duration
}

// Verify checks the signature (namespace seam-facilityd, a key the
// allowed-signers file lists for the request's By at now), the form,
// the site and the age. Replays are the controller's to refuse (it
// keeps the nonces).
func (v Verifier) Verify(s Signed, now time.Time) (Approval, error) {
	var r Request
	dec := json.NewDecoder(bytes.NewReader(s.Request))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return Approval{}, fmt.Errorf("request: %w", err)
	}
	if err := r.Check(); err != nil {
		return Approval{}, err
	}
	if v.Site != "" && r.Site != v.Site {
		return Approval{}, fmt.Errorf("request is for site %q, not %q", r.Site, v.Site)
	}
	maxAge := v.MaxAge
	if maxAge <= 0 {
		maxAge = 10 * time.Minute
	}
	if age := now.Sub(r.Issued); age > maxAge || age < -time.Minute {
		return Approval{}, fmt.Errorf("request issued %s, %s ago: requests are taken within %s of their issue", r.Issued.Format(time.RFC3339), age.Round(time.Second), maxAge)
	}
	if v.Allowed == nil {
		return Approval{}, errors.New("no allowed-signers file: facilityd takes no approvals")
	}
	sig, err := sshsig.Unarmor([]byte(s.Signature))
	if err != nil {
		return Approval{}, fmt.Errorf("request signature: not an SSH signature: %w", err)
	}
	fp := ssh.FingerprintSHA256(sig.PublicKey)
	if sig.Namespace != Namespace {
		return Approval{}, fmt.Errorf("request signature is for namespace %q, not %q: it was made for another purpose", sig.Namespace, Namespace)
	}
	if !v.allows(sig.PublicKey, r.By, now) {
		return Approval{}, fmt.Errorf("key %s is not listed for %s among the allowed signers (namespace %s)", fp, r.By, Namespace) // no server path in an answer
	}
	if err := sshsig.Verify(bytes.NewReader(s.Request), sig, sig.PublicKey, sig.HashAlgorithm, Namespace); err != nil {
		return Approval{}, fmt.Errorf("request signature by %s does not match the request (tampered or for other content): %w", fp, err)
	}
	return Approval{Request: r, Key: fp}, nil
}

func (v Verifier) allows(key ssh.PublicKey, principal string, now time.Time) bool {
	for _, s := range v.Allowed.Lookup(key) {
		if s.Allows(principal, Namespace, now) {
			return true
		}
	}
	return false
}
