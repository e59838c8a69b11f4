package lifecycle

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Hold kinds: why a node is out of the pool.
const (
	HoldFacilityAlarm = "facility-alarm" // an alarm on its power or cooling domain (facilityd)
	HoldBurnIn        = "burn-in"        // being burned in (sat burnin)
	HoldMaintenance   = "maintenance"    // in maintenance
	HoldRMA           = "rma"            // a part of it is under RMA
	HoldPerson        = "person"         // a person's, with their reason
)

// HoldKinds lists the hold kinds.
var HoldKinds = []string{HoldFacilityAlarm, HoldBurnIn, HoldMaintenance, HoldRMA, HoldPerson}

// StateOwner owns the holds the state machine sets: a node that enters
// maintenance or rma gets a hold of that kind owned by "lifecycle",
// released when it leaves the state.
const StateOwner = "lifecycle"

// Hold keeps a node out of the pool while it is set. A node is in the
// pool only when it has none. A hold is known by its node, kind and
// owner; only its owner releases it (or a member who may
// release-any-hold), so facilityd never undoes a hold it did not set.
type Hold struct {
	Node   string    `json:"node"`  // the node's key
	Owner  string    `json:"owner"` // who set it: ssh:NAME, db:ROLE, or lifecycle
	Kind   string    `json:"kind"`
	Reason string    `json:"reason"`
	Since  time.Time `json:"since"`
}

// Holder is the holds API facilityd and sat burnin use; *Store
// implements it, and a fake may in their tests.
type Holder interface {
	SetHold(ctx context.Context, a Auth, node, kind, reason string) (Hold, error)
	ReleaseHold(ctx context.Context, a Auth, node, kind, owner, reason string) error
	Holds(ctx context.Context, node string) ([]Hold, error)
}

var _ Holder = (*Store)(nil)

// SetHold sets a hold of kind on node (a key or a node name), owned by
// the identity a authenticates. Setting a hold that is set already
// returns it as it is: a controller may set it again after a restart.
func (s *Store) SetHold(ctx context.Context, a Auth, node, kind, reason string) (Hold, error) {
	if !slices.Contains(HoldKinds, kind) {
		return Hold{}, fmt.Errorf("hold kind %q: the kinds are %s", kind, strings.Join(HoldKinds, ", "))
	}
	if strings.TrimSpace(reason) == "" {
		return Hold{}, errors.New("a hold needs a reason")
	}
	el, pv, err := s.holdTarget(ctx, node)
	if err != nil {
		return Hold{}, err
	}
	p, err := s.sign(ctx, a, pv, &Statement{Action: ActHoldSet, Element: el.Key, Version: el.Version, Hold: &HoldRef{Kind: kind}, Reason: reason}, MayHolds, el.Module)
	if err != nil {
		return Hold{}, err
	}
	h := Hold{Node: el.Key, Owner: p.actor, Kind: kind, Reason: reason, Since: p.at}
	err = s.write(ctx, p, MayHolds, el.Module, func(tx *sql.Tx) error {
		existing, err := s.holdsOf(ctx, tx, el.Key)
		if err != nil {
			return err
		}
		for _, x := range existing {
			if x.Kind == kind && x.Owner == p.actor {
				h = x
				return nil
			}
		}
		return s.setHold(ctx, tx, p, el.Key, h, 0)
	})
	return h, err
}

// ReleaseHold releases the hold of kind on node set by owner ("": the
// identity a authenticates). Releasing a hold that is not set is not an
// error: it is released.
func (s *Store) ReleaseHold(ctx context.Context, a Auth, node, kind, owner, reason string) error {
	el, pv, err := s.holdTarget(ctx, node)
	if err != nil {
		return err
	}
	actor, err := s.actor(ctx, a, pv.P)
	if err != nil {
		return err
	}
	if owner == "" {
		owner = actor
	}
	perm := MayHolds
	if owner != actor {
		perm = MayReleaseAnyHold
	}
	if owner == StateOwner {
		return &AccessError{Actor: actor, Action: "release a hold of " + StateOwner, Detail: fmt.Sprintf("the %s hold on %s follows its state: move it out of %s instead", kind, el.Key, kind)}
	}
	if strings.TrimSpace(reason) == "" {
		reason = "released"
	}
	p, err := s.sign(ctx, a, pv, &Statement{Action: ActHoldRelease, Element: el.Key, Version: el.Version, Hold: &HoldRef{Kind: kind, Owner: owner}, Reason: reason}, perm, el.Module)
	if err != nil {
		return err
	}
	return s.write(ctx, p, perm, el.Module, func(tx *sql.Tx) error {
		return s.releaseHold(ctx, tx, p, el.Key, kind, owner, 0)
	})
}

// Holds lists the holds on node (a key or a node name; "" every node),
// by node, kind and owner.
func (s *Store) Holds(ctx context.Context, node string) ([]Hold, error) {
	if node == "" {
		return s.holdsOf(ctx, s.db, "")
	}
	key, err := s.Resolve(ctx, node)
	if err != nil {
		return nil, err
	}
	return s.holdsOf(ctx, s.db, key)
}

func (s *Store) holdTarget(ctx context.Context, node string) (*Element, *policyVersion, error) {
	key, err := s.Resolve(ctx, node)
	if err != nil {
		return nil, nil, err
	}
	el, err := s.element(ctx, s.db, key)
	if err != nil {
		return nil, nil, err
	}
	if el.Kind != "compute" {
		return nil, nil, fmt.Errorf("%s is a %s, not a node: holds are on nodes (compute trays)", key, el.Kind)
	}
	pv, err := s.currentPolicy(ctx, s.db)
	return el, pv, err
}

func (s *Store) holdsOf(ctx context.Context, q querier, node string) ([]Hold, error) {
	query, args := "SELECT node, kind, owner, reason, since FROM holds ORDER BY node, kind, owner", []any(nil)
	if node != "" {
		query, args = s.q("SELECT node, kind, owner, reason, since FROM holds WHERE node = ? ORDER BY kind, owner"), []any{node}
	}
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, s.wrap(err)
	}
	defer rows.Close()
	var out []Hold
	for rows.Next() {
		var h Hold
		var since int64
		if err := rows.Scan(&h.Node, &h.Kind, &h.Owner, &h.Reason, &since); err != nil {
			return nil, s.wrap(err)
		}
		h.Since = fromMicros(since)
		out = append(out, h)
	}
	return out, s.wrap(rows.Err())
}

// setHold writes a hold and its event (caused by cause, 0 none).
func (s *Store) setHold(ctx context.Context, tx *sql.Tx, p *prepared, node string, h Hold, cause int64) error {
	el, err := s.element(ctx, tx, node)
	if err != nil {
		return err
	}
	if el.LastAt.After(p.at) {
		return &ClockError{Element: node, At: p.at, Last: el.LastAt, LastActor: s.lastActor(ctx, tx, node)}
	}
	data, _ := json.Marshal(h)
	row := eventRow{at: p.at, element: node, kind: EvHoldSet, prevState: el.State, state: el.State, since: el.Since, prevSerial: el.Serial, serial: el.Serial,
		actor: p.actor, reason: h.Reason, cause: cause, policy: p.policy, data: string(data)}
	if cause == 0 {
		row.statement, row.signature = p.statement, p.signature
	}
	seq, err := s.insertEvent(ctx, tx, row)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, s.q("INSERT INTO holds (node, kind, owner, reason, since, event) VALUES (?, ?, ?, ?, ?, ?)"),
		node, h.Kind, h.Owner, h.Reason, micros(h.Since), seq); err != nil {
		return s.wrap(err)
	}
	_, err = tx.ExecContext(ctx, s.q("UPDATE elements SET last_at = ? WHERE key = ?"), micros(p.at), node)
	return s.wrap(err)
}

// releaseHold deletes a hold, with its event; nothing when it is not
// set.
func (s *Store) releaseHold(ctx context.Context, tx *sql.Tx, p *prepared, node, kind, owner string, cause int64) error {
	hs, err := s.holdsOf(ctx, tx, node)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(hs, func(h Hold) bool { return h.Kind == kind && h.Owner == owner })
	if i < 0 {
		return nil
	}
	el, err := s.element(ctx, tx, node)
	if err != nil {
		return err
	}
	if el.LastAt.After(p.at) {
		return &ClockError{Element: node, At: p.at, Last: el.LastAt, LastActor: s.lastActor(ctx, tx, node)}
	}
	data, _ := json.Marshal(hs[i])
	row := eventRow{at: p.at, element: node, kind: EvHoldReleased, prevState: el.State, state: el.State, since: el.Since, prevSerial: el.Serial, serial: el.Serial,
		actor: p.actor, reason: p.st.Reason, cause: cause, policy: p.policy, data: string(data)}
	if cause == 0 {
		row.statement, row.signature = p.statement, p.signature
	}
	if _, err := s.insertEvent(ctx, tx, row); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, s.q("DELETE FROM holds WHERE node = ? AND kind = ? AND owner = ?"), node, kind, owner); err != nil {
		return s.wrap(err)
	}
	_, err = tx.ExecContext(ctx, s.q("UPDATE elements SET last_at = ? WHERE key = ?"), micros(p.at), node)
	return s.wrap(err)
}

// stateHolds sets the hold of the state an element enters (maintenance,
// rma) on its node (the element itself, or the node it is a part of),
// owned by the state machine, and releases the hold of the state it
// leaves once nothing of the node is in that state any more: a GPU sent
// for RMA holds its node until its replacement is in.
func (s *Store) stateHolds(ctx context.Context, tx *sql.Tx, p *prepared, tr Transition, set []*Element, cause int64) error {
	held := func(st State) bool { return st == Maintenance || st == RMA }
	if !held(tr.From) && !held(tr.To) {
		return nil
	}
	nodes, err := s.nodesOf(ctx, tx, set)
	if err != nil {
		return err
	}
	for _, node := range nodes {
		if held(tr.From) {
			var left int
			if err := tx.QueryRowContext(ctx, s.q("SELECT count(*) FROM elements WHERE (key = ? OR parent = ?) AND state = ?"), node, node, string(tr.From)).Scan(&left); err != nil {
				return s.wrap(err)
			}
			if left == 0 {
				if err := s.releaseHold(ctx, tx, p, node, string(tr.From), StateOwner, cause); err != nil {
					return err
				}
			}
		}
		if held(tr.To) {
			hs, err := s.holdsOf(ctx, tx, node)
			if err != nil {
				return err
			}
			if slices.ContainsFunc(hs, func(h Hold) bool { return h.Kind == string(tr.To) && h.Owner == StateOwner }) {
				continue
			}
			h := Hold{Node: node, Owner: StateOwner, Kind: string(tr.To), Reason: fmt.Sprintf("%s by %s: %s", tr.To, p.actor, p.st.Reason), Since: p.at}
			if err := s.setHold(ctx, tx, p, node, h, cause); err != nil {
				return err
			}
		}
	}
	return nil
}

// nodesOf lists the nodes the elements of set are or sit in, once each,
// in set's order.
func (s *Store) nodesOf(ctx context.Context, q querier, set []*Element) ([]string, error) {
	kind := map[string]string{}
	for _, e := range set {
		kind[e.Key] = e.Kind
	}
	var out []string
	seen := map[string]bool{}
	for _, e := range set {
		node := ""
		switch {
		case e.Kind == "compute":
			node = e.Key
		case e.Parent != "":
			k, ok := kind[e.Parent]
			if !ok {
				pe, err := s.element(ctx, q, e.Parent)
				if err != nil {
					return nil, err
				}
				if pe != nil {
					k = pe.Kind
				}
				kind[e.Parent] = k
			}
			if k == "compute" {
				node = e.Parent
			}
		}
		if node != "" && !seen[node] {
			seen[node] = true
			out = append(out, node)
		}
	}
	return out, nil
}

// write runs a prepared change's writes in one transaction, after
// checking its policy again if it changed meanwhile.
func (s *Store) write(ctx context.Context, p *prepared, action, module string, f func(tx *sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return s.wrap(err)
	}
	defer tx.Rollback()
	if err := s.recheckPolicy(ctx, tx, p, action, module); err != nil {
		return err
	}
	if err := f(tx); err != nil {
		return err
	}
	if s.hook != nil {
		s.hook(p.st.Action)
	}
	return s.wrap(tx.Commit())
}

// lastActor is who made an element's last event ("?" unknown).
func (s *Store) lastActor(ctx context.Context, q querier, key string) string {
	if last, err := s.lastEvent(ctx, q, key); err == nil && last != nil {
		return last.Actor
	}
	return "?"
}
