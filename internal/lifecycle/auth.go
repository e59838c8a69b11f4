package lifecycle

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hiddeco/sshsig"
	"golang.org/x/crypto/ssh"

	"github.com/seamdc/seam/internal/sign"
)

// Namespace is the SSHSIG namespace of lifecycle statements: a signature
// made for anything else (a contract, evidence, a git commit) never
// counts here.
const Namespace = "seam-lifecycle"

// StatementType names the statement format.
const StatementType = "seam.lifecycle.statement/v1"

// Actions a statement states.
const (
	ActInit        = "init"
	ActTransition  = "transition"
	ActAsBuilt     = "asbuilt"
	ActHoldSet     = "hold-set"
	ActHoldRelease = "hold-release"
	ActReconcile   = "reconcile"
	ActAccess      = "access"
)

// Statement is what the maker of a change signs: "I, By, at At, make
// this change to element Element of store Store, which I saw at version
// Version". The store keeps its exact bytes with the signature, so that
// anyone can check every change again (sat lifecycle check).
type Statement struct {
	Type        string   `json:"type"`
	Store       string   `json:"store"`
	Site        string   `json:"site"`
	Action      string   `json:"action"`
	Element     string   `json:"element"`
	Version     int64    `json:"version"`
	From        State    `json:"from,omitempty"`
	To          State    `json:"to,omitempty"`
	Only        bool     `json:"only,omitempty"`
	Replacement string   `json:"replacement,omitempty"`
	Hold        *HoldRef `json:"hold,omitempty"`
	// Nodes are every node a hold change is on, when it is on more than
	// Element (the first of them).
	Nodes    []string   `json:"nodes,omitempty"`
	Reason   string     `json:"reason"`
	Evidence []Evidence `json:"evidence,omitempty"`
	// Digest is the sha256 of the document the change carries: an
	// as-built file, a reconcile report, a policy.
	Digest string `json:"digest,omitempty"`
	By     string `json:"by"`
	At     string `json:"at"` // RFC 3339 to the microsecond, UTC: the event's time
}

// HoldRef names a hold in a statement.
type HoldRef struct {
	Kind  string `json:"kind"`
	Owner string `json:"owner"`
}

// Marshal is the statement's bytes: what is signed.
func (st *Statement) Marshal() []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(st)
	return b.Bytes()
}

// ParseStatement reads a statement strictly.
func ParseStatement(b []byte) (*Statement, error) {
	var st Statement
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&st); err != nil {
		return nil, fmt.Errorf("not a lifecycle statement: %w", err)
	}
	if st.Type != StatementType {
		return nil, fmt.Errorf("statement type %q, want %q", st.Type, StatementType)
	}
	if _, err := time.Parse(time.RFC3339Nano, st.At); err != nil {
		return nil, fmt.Errorf("statement at: %w", err)
	}
	return &st, nil
}

func (st *Statement) time() time.Time {
	t, _ := time.Parse(time.RFC3339Nano, st.At)
	return t.UTC()
}

func stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000Z") }

// Auth is who makes a change: an SSH key of the store's allowed signers,
// or (PostgreSQL) the session's database role. Never a name typed in.
type Auth struct {
	// Signer is the SSH key that signs the change's statement.
	Signer ssh.Signer
	// Principal is the key's principal in the allowed signers; "" is the
	// one principal listed for the key.
	Principal string
	// Sign, if set, signs a statement instead of Signer (ssh-keygen -Y
	// sign of a prepared statement, a hardware key): it returns the
	// armored SSHSIG of the bytes, in namespace seam-lifecycle. Its Key
	// must be set.
	Sign func(statement []byte) ([]byte, error)
	Key  ssh.PublicKey
	// DBRole makes the change as the database role of the session
	// (PostgreSQL only): the server records that role, and refuses an
	// event that claims another.
	DBRole bool
}

// KeyAuth authenticates as an SSH key.
func KeyAuth(signer ssh.Signer, principal string) Auth {
	return Auth{Signer: signer, Principal: principal}
}

// DBRoleAuth authenticates as the PostgreSQL session's role.
func DBRoleAuth() Auth { return Auth{DBRole: true} }

func (a Auth) publicKey() ssh.PublicKey {
	if a.Key != nil {
		return a.Key
	}
	if a.Signer != nil {
		return a.Signer.PublicKey()
	}
	return nil
}

// actor finds who a is under policy p: "ssh:PRINCIPAL" or "db:ROLE".
func (s *Store) actor(ctx context.Context, a Auth, p *Policy) (string, error) {
	if a.DBRole {
		if s.engine != Postgres {
			return "", &AccessError{Action: "change the store", Detail: "a SQLite store has no database roles: sign the change with an SSH key (--key)"}
		}
		var who string
		if err := s.db.QueryRowContext(ctx, "SELECT session_user").Scan(&who); err != nil {
			return "", s.wrap(err)
		}
		return "db:" + who, nil
	}
	key := a.publicKey()
	if key == nil {
		return "", &AccessError{Action: "change the store", Detail: "no identity: sign with an SSH key of the store's allowed signers, or (PostgreSQL) use the database role"}
	}
	fp := ssh.FingerprintSHA256(key)
	if a.Principal != "" {
		if !slices.ContainsFunc(p.keysOf(a.Principal), func(e sign.Signer) bool { return bytes.Equal(e.Key.Marshal(), key.Marshal()) }) {
			return "", &AccessError{Actor: "ssh:" + a.Principal, Action: "sign", Detail: fmt.Sprintf("the store's allowed signers do not list key %s for %s (namespace %s)", fp, a.Principal, Namespace)}
		}
		return "ssh:" + a.Principal, nil
	}
	var names []string
	for _, e := range p.signers.Lookup(key) {
		if len(e.Namespaces) > 0 && !slices.Contains(e.Namespaces, Namespace) {
			continue
		}
		for _, pr := range e.Principals {
			if !strings.ContainsAny(pr, "*?!") && !slices.Contains(names, pr) {
				names = append(names, pr)
			}
		}
	}
	switch len(names) {
	case 0:
		return "", &AccessError{Action: "sign", Detail: fmt.Sprintf("key %s is not among the store's allowed signers (for namespace %s)", fp, Namespace)}
	case 1:
		return "ssh:" + names[0], nil
	}
	return "", &AccessError{Action: "sign", Detail: fmt.Sprintf("key %s is listed for %s: say which with --as", fp, strings.Join(names, ", "))}
}

// signStatement signs st as a, returning the signature ("" for a
// database role).
func signStatement(a Auth, st *Statement) (string, error) {
	if a.DBRole {
		return "", nil
	}
	msg := st.Marshal()
	if a.Sign != nil {
		sig, err := a.Sign(msg)
		if err != nil {
			return "", fmt.Errorf("signing the statement: %w", err)
		}
		return string(sig), nil
	}
	sig, err := sshsig.Sign(bytes.NewReader(msg), a.Signer, sshsig.HashSHA512, Namespace)
	if err != nil {
		return "", fmt.Errorf("signing the statement: %w", err)
	}
	return string(sshsig.Armor(sig)), nil
}

// verifyStatement checks that signature is an SSHSIG over msg in the
// lifecycle namespace by a key the policy's allowed signers list for
// the statement's maker at its time.
func verifyStatement(p *Policy, msg []byte, signature string) (*Statement, error) {
	st, err := ParseStatement(msg)
	if err != nil {
		return nil, err
	}
	kind, principal, _ := strings.Cut(st.By, ":")
	if kind == "db" {
		if signature != "" {
			return nil, errors.New("a statement by a database role carries a signature")
		}
		return st, nil
	}
	if kind != "ssh" {
		return nil, fmt.Errorf("statement by %q: not ssh:PRINCIPAL or db:ROLE", st.By)
	}
	sig, err := sshsig.Unarmor([]byte(signature))
	if err != nil {
		return nil, &AccessError{Actor: st.By, Action: st.Action, Detail: fmt.Sprintf("the signature cannot be read: %v", err)}
	}
	if sig.Namespace != Namespace {
		return nil, &AccessError{Actor: st.By, Action: st.Action, Detail: fmt.Sprintf("signed for namespace %q, not %q: made for another purpose", sig.Namespace, Namespace)}
	}
	fp := ssh.FingerprintSHA256(sig.PublicKey)
	at := st.time()
	allowed := false
	for _, e := range p.keysOf(principal) {
		if bytes.Equal(e.Key.Marshal(), sig.PublicKey.Marshal()) && e.Allows(principal, Namespace, at) {
			allowed = true
		}
	}
	if !allowed {
		return nil, &AccessError{Actor: st.By, Action: st.Action, Detail: fmt.Sprintf("key %s is not an allowed signer of %s at %s", fp, principal, st.At)}
	}
	if err := sshsig.Verify(bytes.NewReader(msg), sig, sig.PublicKey, sig.HashAlgorithm, Namespace); err != nil {
		return nil, &AccessError{Actor: st.By, Action: st.Action, Detail: fmt.Sprintf("the signature by %s does not match the statement: %v", fp, err)}
	}
	return st, nil
}

// Actor is who a authenticates as under the store's policy in force:
// ssh:PRINCIPAL or db:ROLE.
func (s *Store) Actor(ctx context.Context, a Auth) (string, error) {
	pv, err := s.currentPolicy(ctx, s.db)
	if err != nil {
		return "", err
	}
	return s.actor(ctx, a, pv.P)
}
