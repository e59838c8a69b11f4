package lifecycle

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
)

// Reconcile is what a discovery (sat discover: the BMCs' Redfish trees)
// found against the declared inventory. Recording it changes nothing
// of the as-built: it is history, one event per element with findings
// and one for the whole run on the site's element. Correct the as-built
// with an import.
//
// Its JSON is the file sat discover --event writes (internal/discover's
// ReconcileEvent): ParseReconcile reads it as it is.
type Reconcile struct {
	// Source names what discovered: "sat discover 0.2.0".
	Source string `json:"source"`
	// At is when the discovery ran (zero: now).
	At time.Time `json:"at"`
	// Scope is what was discovered: keys (a module, racks); empty: the
	// site.
	Scope    []string  `json:"scope,omitempty"`
	Checked  int       `json:"checked"` // elements compared
	Findings []Finding `json:"findings"`
	// Type is ReconcileEventType in a file ("" in Go).
	Type string `json:"type,omitempty"`
	// Site, if set, must be the store's site.
	Site string `json:"site,omitempty"`
	// BMCs were walked, Answered of them without an error; Errors say
	// what some left unseen (a discovery with errors saw less: its
	// "missing" may be a BMC that did not answer).
	BMCs     int              `json:"bmcs,omitempty"`
	Answered int              `json:"answered,omitempty"`
	Errors   []ReconcileError `json:"errors,omitempty"`
}

// ReconcileEventType is the type of sat discover's reconcile event.
const ReconcileEventType = "inventory.reconcile"

// ReconcileError is a BMC, or a resource of one, a discovery could not
// read.
type ReconcileError struct {
	BMC   string `json:"bmc"`
	URL   string `json:"url,omitempty"`
	URI   string `json:"uri,omitempty"`
	Error string `json:"error"`
}

// ParseReconcile reads a reconcile report strictly: the file sat
// discover --event writes, or one of the same form.
func ParseReconcile(raw []byte) (*Reconcile, error) {
	var r Reconcile
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("not a reconcile report (sat discover --event writes one): %w", err)
	}
	switch {
	case r.Type != "" && r.Type != ReconcileEventType:
		return nil, fmt.Errorf("type %q, want %q", r.Type, ReconcileEventType)
	case strings.TrimSpace(r.Source) == "":
		return nil, errors.New("no source: a reconcile report names what discovered (such as sat discover 0.2.0)")
	}
	for i, f := range r.Findings {
		if f.Element == "" || f.Kind == "" {
			return nil, fmt.Errorf("finding %d: no element or no kind", i+1)
		}
	}
	return &r, nil
}

// Finding kinds.
const (
	FindMissing    = "missing"    // declared, not discovered
	FindUnexpected = "unexpected" // discovered, not declared (Element: where it was found)
	FindSerial     = "serial"     // the serial differs
	FindFirmware   = "firmware"   // a firmware version differs
	FindNames      = "names"      // a name differs (host name, BMC address)
	FindOther      = "other"
)

// Finding is one difference.
type Finding struct {
	Element    string `json:"element"` // a key of the store
	Kind       string `json:"kind"`
	Field      string `json:"field,omitempty"` // "serial", "firmware.bios", "bmc.address"
	Declared   string `json:"declared,omitempty"`
	Discovered string `json:"discovered,omitempty"`
	Detail     string `json:"detail,omitempty"`
}

// Reconciled is what recording did.
type Reconciled struct {
	Seq      int64 `json:"seq"`      // the site's event
	Elements int   `json:"elements"` // elements with findings
}

// RecordReconcile records a discovery's findings as events, as the
// identity a (which needs the reconcile permission).
func (s *Store) RecordReconcile(ctx context.Context, a Auth, r Reconcile) (*Reconciled, error) {
	si, err := s.storeInfo(ctx)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(r.Source) == "" {
		return nil, fmt.Errorf("a reconcile report names its source (such as sat discover 0.2.0)")
	}
	if r.Site != "" && r.Site != si.Site {
		return nil, fmt.Errorf("the reconcile report is of site %q, not of this store's site %q", r.Site, si.Site)
	}
	byEl := map[string][]Finding{}
	for i, f := range r.Findings {
		key, err := s.Resolve(ctx, f.Element)
		if err != nil {
			return nil, fmt.Errorf("finding %d: %w", i+1, err)
		}
		f.Element = key
		byEl[key] = append(byEl[key], f)
	}
	doc, _ := json.Marshal(r)
	sum := sha256.Sum256(doc)
	pv, err := s.currentPolicy(ctx, s.db)
	if err != nil {
		return nil, err
	}
	root, err := s.element(ctx, s.db, si.Site)
	if err != nil {
		return nil, err
	}
	reason := fmt.Sprintf("%s: %d finding(s) on %d element(s) of %d checked", r.Source, len(r.Findings), len(byEl), r.Checked)
	if len(r.Errors) > 0 {
		reason += fmt.Sprintf("; %d of %d BMC(s) answered, %d error(s): what they hold was not seen", r.Answered, r.BMCs, len(r.Errors))
	}
	p, err := s.sign(ctx, a, pv, &Statement{Action: ActReconcile, Element: si.Site, Version: root.Version, Reason: reason, Digest: "sha256:" + hex.EncodeToString(sum[:])}, MayReconcile, "")
	if err != nil {
		return nil, err
	}
	out := &Reconciled{Elements: len(byEl)}
	err = s.write(ctx, p, MayReconcile, "", func(tx *sql.Tx) error {
		summary, _ := json.Marshal(struct {
			Source   string           `json:"source"`
			At       time.Time        `json:"at"`
			Scope    []string         `json:"scope,omitempty"`
			Checked  int              `json:"checked"`
			Findings int              `json:"findings"`
			BMCs     int              `json:"bmcs,omitempty"`
			Answered int              `json:"answered,omitempty"`
			Errors   []ReconcileError `json:"errors,omitempty"`
			Digest   string           `json:"digest"`
		}{r.Source, r.At, r.Scope, r.Checked, len(r.Findings), r.BMCs, r.Answered, r.Errors, p.st.Digest})
		seq, err := s.eventOn(ctx, tx, p, si.Site, EvReconcile, reason, 0, string(summary), true)
		if err != nil {
			return err
		}
		out.Seq = seq
		keys := make([]string, 0, len(byEl))
		for k := range byEl {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			data, _ := json.Marshal(byEl[k])
			if _, err := s.eventOn(ctx, tx, p, k, EvReconcile, fmt.Sprintf("%s: %d finding(s)", r.Source, len(byEl[k])), seq, string(data), false); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// eventOn writes an event that changes nothing of the element but its
// last event time.
func (s *Store) eventOn(ctx context.Context, tx *sql.Tx, p *prepared, key, kind, reason string, cause int64, data string, signed bool) (int64, error) {
	el, err := s.element(ctx, tx, key)
	if err != nil {
		return 0, err
	}
	if el.LastAt.After(p.at) {
		return 0, &ClockError{Element: key, At: p.at, Last: el.LastAt, LastActor: s.lastActor(ctx, tx, key)}
	}
	row := eventRow{at: p.at, element: key, kind: kind, prevState: el.State, state: el.State, since: el.Since, prevSerial: el.Serial, serial: el.Serial,
		actor: p.actor, reason: reason, cause: cause, policy: p.policy, data: data}
	if signed {
		row.statement, row.signature = p.statement, p.signature
	}
	seq, err := s.insertEvent(ctx, tx, row)
	if err != nil {
		return 0, err
	}
	_, err = tx.ExecContext(ctx, s.q("UPDATE elements SET last_at = ? WHERE key = ?"), micros(p.at), key)
	return seq, s.wrap(err)
}

// SetPolicy replaces the store's access policy, as the identity a
// (which the policy in force must let change it; the new one must too,
// so that nobody locks the store's owners out by mistake).
func (s *Store) SetPolicy(ctx context.Context, a Auth, p *Policy, reason string) (int64, error) {
	si, err := s.storeInfo(ctx)
	if err != nil {
		return 0, err
	}
	pv, err := s.currentPolicy(ctx, s.db)
	if err != nil {
		return 0, err
	}
	doc := p.Marshal()
	sum := sha256.Sum256(doc)
	if strings.TrimSpace(reason) == "" {
		reason = "access policy changed"
	}
	root, err := s.element(ctx, s.db, si.Site)
	if err != nil {
		return 0, err
	}
	pr, err := s.sign(ctx, a, pv, &Statement{Action: ActAccess, Element: si.Site, Version: root.Version, Reason: reason, Digest: "sha256:" + hex.EncodeToString(sum[:])}, MayAccess, "")
	if err != nil {
		return 0, err
	}
	if err := p.may(pr.actor, MayAccess, ""); err != nil {
		return 0, fmt.Errorf("the new policy would not let %s change it again: %w", pr.actor, err)
	}
	var version int64
	err = s.write(ctx, pr, MayAccess, "", func(tx *sql.Tx) error {
		if err := tx.QueryRowContext(ctx, "SELECT coalesce(max(version), 0) + 1 FROM policies").Scan(&version); err != nil {
			return s.wrap(err)
		}
		data, _ := json.Marshal(map[string]any{"version": version, "digest": pr.st.Digest})
		seq, err := s.eventOn(ctx, tx, pr, si.Site, EvAccess, reason, 0, string(data), true)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, s.q("INSERT INTO policies (version, at, actor, event, doc) VALUES (?, ?, ?, ?, ?)"), version, micros(pr.at), pr.actor, seq, string(doc))
		if uniqueViolation(err) {
			return &ConflictError{Element: si.Site, Expected: root.State, Version: pv.Version}
		}
		return s.wrap(err)
	})
	return version, err
}

// Policy is the access policy in force, and its version.
func (s *Store) Policy(ctx context.Context) (*Policy, int64, error) {
	pv, err := s.currentPolicy(ctx, s.db)
	if err != nil {
		return nil, 0, err
	}
	return pv.P, pv.Version, nil
}

func jsonUnmarshal(data string, v any) error {
	if err := json.Unmarshal([]byte(data), v); err != nil {
		return fmt.Errorf("an event's data: %w", err)
	}
	return nil
}
