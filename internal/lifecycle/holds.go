package lifecycle

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/seamdc/seam/internal/hold"
)

// StateOwner places and releases the holds the state machine sets: a
// node that enters maintenance or rma gets the hold maintenance:lifecycle
// or rma:lifecycle, released when nothing of it is in that state any
// more; a node a part of which comes back from rma (a replacement
// fitted) gets burnin:swap, released when nothing of it is commissioned
// any more, that is once it is provisioned on a baseline taken after
// the swap. Nobody releases these by hand.
const StateOwner = "lifecycle"

// Hold is one owner's hold on one node, as the store keeps it. A node
// is in the pool only when it has none. Owners are the ledger's
// (internal/hold): kind:name.
type Hold struct {
	Node   string     `json:"node"` // the node's key
	Owner  hold.Owner `json:"owner"`
	Kind   string     `json:"kind"` // the owner's kind
	Reason string     `json:"reason"`
	Since  time.Time  `json:"since"`
	// By is who placed it: ssh:NAME, db:ROLE, or lifecycle.
	By          string `json:"by"`
	Domain      string `json:"domain,omitempty"`
	Reservation string `json:"reservation,omitempty"`
}

// legacyKinds are the hold kinds of stores before the ledger (schema 2),
// as the ledger names them.
var legacyKinds = map[string]string{"facility-alarm": hold.Facility, "burn-in": hold.Burnin}

// normalize reads a hold written before the ledger (its owner the
// identity that set it, its kind of the old vocabulary) as the ledger
// names it, as migration 0003 moved the held ones: the history keeps
// the events as they were written.
func (h Hold) normalize() Hold {
	if h.By != "" {
		return h
	}
	kind := h.Kind
	if k, ok := legacyKinds[kind]; ok {
		kind = k
	}
	who := string(h.Owner)
	name := who
	if who != StateOwner {
		_, name, _ = strings.Cut(who, ":")
	}
	return Hold{Node: h.Node, Owner: hold.Of(kind, name), Kind: kind, Reason: h.Reason, Since: h.Since, By: who}
}

// Holds lists the holds on node (a key or a node name; "" every node),
// by node and owner.
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

const holdCols = "node, owner, kind, domain, reservation, reason, since, placed_by"

func scanHolds(rows *sql.Rows) ([]Hold, error) {
	defer rows.Close()
	var out []Hold
	for rows.Next() {
		var h Hold
		var since int64
		if err := rows.Scan(&h.Node, &h.Owner, &h.Kind, &h.Domain, &h.Reservation, &h.Reason, &since, &h.By); err != nil {
			return nil, err
		}
		h.Since = fromMicros(since)
		out = append(out, h)
	}
	return out, rows.Err()
}

func (s *Store) holdsOf(ctx context.Context, q querier, node string) ([]Hold, error) {
	query, args := "SELECT "+holdCols+" FROM holds ORDER BY node, owner", []any(nil)
	if node != "" {
		query, args = s.q("SELECT "+holdCols+" FROM holds WHERE node = ? ORDER BY owner"), []any{node}
	}
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, s.wrap(err)
	}
	hs, err := scanHolds(rows)
	return hs, s.wrap(err)
}

// holdsWhere reads the holds a condition selects (with its arguments).
func (s *Store) holdsWhere(ctx context.Context, q querier, where string, args ...any) ([]Hold, error) {
	rows, err := q.QueryContext(ctx, s.q("SELECT "+holdCols+" FROM holds WHERE "+where+" ORDER BY node, owner"), args...)
	if err != nil {
		return nil, s.wrap(err)
	}
	hs, err := scanHolds(rows)
	return hs, s.wrap(err)
}

// holdEvents writes the events of holds set or released on nodes
// (keys), the first carrying the change's signed statement unless the
// change is a cascade of cause, the others following it; held rows are
// written or deleted with them.
func (s *Store) holdEvents(ctx context.Context, tx *sql.Tx, p *prepared, kind string, hs []Hold, cause int64) error {
	for _, h := range hs {
		el, err := s.element(ctx, tx, h.Node)
		if err != nil {
			return err
		}
		if el == nil {
			return &NotFoundError{Name: h.Node}
		}
		if el.LastAt.After(p.at) {
			return &ClockError{Element: h.Node, At: p.at, Last: el.LastAt, LastActor: s.lastActor(ctx, tx, h.Node)}
		}
		data, _ := json.Marshal(h)
		row := eventRow{at: p.at, element: h.Node, kind: kind, prevState: el.State, state: el.State, since: el.Since, prevSerial: el.Serial, serial: el.Serial,
			actor: p.actor, reason: h.Reason, cause: cause, policy: p.policy, data: string(data)}
		if cause == 0 {
			row.statement, row.signature = p.statement, p.signature
		}
		seq, err := s.insertEvent(ctx, tx, row)
		if err != nil {
			return err
		}
		if cause == 0 {
			cause = seq
		}
		if kind == EvHoldSet {
			_, err = tx.ExecContext(ctx, s.q("INSERT INTO holds (node, owner, kind, domain, reservation, reason, since, placed_by, event) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"),
				h.Node, string(h.Owner), h.Kind, h.Domain, h.Reservation, h.Reason, micros(h.Since), h.By, seq)
		} else {
			_, err = tx.ExecContext(ctx, s.q("DELETE FROM holds WHERE node = ? AND owner = ?"), h.Node, string(h.Owner))
		}
		if err != nil {
			return s.wrap(err)
		}
		if _, err := tx.ExecContext(ctx, s.q("UPDATE elements SET last_at = ? WHERE key = ?"), micros(p.at), h.Node); err != nil {
			return s.wrap(err)
		}
	}
	return nil
}

// stateHolds keeps the state machine's holds of the nodes the elements
// of set are or sit in (StateOwner says which), as the transition tr
// moves them.
func (s *Store) stateHolds(ctx context.Context, tx *sql.Tx, p *prepared, tr Transition, set []*Element, cause int64) ([]string, error) {
	type rule struct {
		owner hold.Owner
		in    State // the hold stays while something of the node is in
		set   func(Transition) bool
	}
	rules := []rule{
		{hold.Of(hold.Maintenance, StateOwner), Maintenance, func(t Transition) bool { return t.To == Maintenance }},
		{hold.Of(hold.RMA, StateOwner), RMA, func(t Transition) bool { return t.To == RMA }},
		{hold.Swap, Commissioned, func(t Transition) bool { return t.From == RMA && t.To == Commissioned }},
	}
	var touched []rule
	for _, r := range rules {
		if tr.From == r.in || r.set(tr) {
			touched = append(touched, r)
		}
	}
	if len(touched) == 0 {
		return nil, nil
	}
	nodes, err := s.nodesOf(ctx, tx, set)
	if err != nil {
		return nil, err
	}
	var changed []string
	touch := func(node string) {
		if !slices.Contains(changed, node) {
			changed = append(changed, node)
		}
	}
	for _, node := range nodes {
		have, err := s.holdsOf(ctx, tx, node)
		if err != nil {
			return nil, err
		}
		for _, r := range touched {
			i := slices.IndexFunc(have, func(h Hold) bool { return h.Owner == r.owner })
			switch {
			case r.set(tr) && i < 0:
				h := Hold{Node: node, Owner: r.owner, Kind: r.owner.Kind(), Reason: stateReason(r.owner, p), Since: p.at, By: StateOwner}
				if err := s.holdEvents(ctx, tx, p, EvHoldSet, []Hold{h}, cause); err != nil {
					return nil, err
				}
				touch(node)
			case !r.set(tr) && i >= 0:
				var left int
				if err := tx.QueryRowContext(ctx, s.q("SELECT count(*) FROM elements WHERE (key = ? OR parent = ?) AND state = ?"), node, node, string(r.in)).Scan(&left); err != nil {
					return nil, s.wrap(err)
				}
				if left > 0 {
					continue
				}
				h := have[i]
				h.Reason = fmt.Sprintf("nothing of %s is %s any more: %s", node, r.in, p.st.Reason)
				if err := s.holdEvents(ctx, tx, p, EvHoldReleased, []Hold{h}, cause); err != nil {
					return nil, err
				}
				touch(node)
			}
		}
	}
	return changed, nil
}

func stateReason(o hold.Owner, p *prepared) string {
	if o == hold.Swap {
		return fmt.Sprintf("a part swapped under RMA (by %s: %s): burn it in again; a baseline taken after the swap provisions it", p.actor, p.st.Reason)
	}
	return fmt.Sprintf("%s by %s: %s", o.Kind(), p.actor, p.st.Reason)
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
// checking its policy again if it changed meanwhile; a dry run records
// the change instead.
func (s *Store) write(ctx context.Context, p *prepared, action, module string, f func(tx *sql.Tx) error) error {
	if s.dry.Active() {
		s.wouldWrite(p)
		return nil
	}
	tx, err := s.beginWrite(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := s.recheckPolicy(ctx, tx, p, action, module); err != nil {
		return err
	}
	if err := f(tx); err != nil {
		return err
	}
	if err := s.seal(ctx, tx, p.auth); err != nil {
		return err
	}
	if s.hook != nil {
		s.hook(p.st.Action)
	}
	if err := tx.Commit(); err != nil {
		return s.wrap(err)
	}
	s.stampSoon()
	return nil
}

// lastActor is who made an element's last event ("?" unknown).
func (s *Store) lastActor(ctx context.Context, q querier, key string) string {
	if last, err := s.lastEvent(ctx, q, key); err == nil && last != nil {
		return last.Actor
	}
	return "?"
}

// Hold is the hold a hold_set or hold_released event is of, as the
// ledger names it (events written before the ledger read as migrated).
func (e *Event) Hold() (Hold, bool) {
	if e.Kind != EvHoldSet && e.Kind != EvHoldReleased {
		return Hold{}, false
	}
	var h Hold
	if err := json.Unmarshal(e.Data, &h); err != nil {
		return Hold{}, false
	}
	return h.normalize(), true
}
