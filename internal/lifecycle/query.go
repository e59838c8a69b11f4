package lifecycle

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/seamdc/seam/internal/hold"
)

// Show is an element as it is now (at the zero time) or as it was at a
// time: its state, since when, the serial in its slot, who moved it
// last, why and on what, its names and holds.
func (s *Store) Show(ctx context.Context, name string, asOf time.Time) (*Element, error) {
	key, err := s.resolveAsOf(ctx, name, asOf)
	if err != nil {
		return nil, err
	}
	el, err := s.element(ctx, s.db, key)
	if err != nil {
		return nil, err
	}
	if !asOf.IsZero() {
		last, err := s.eventAsOf(ctx, key, asOf)
		if err != nil {
			return nil, err
		}
		if last == nil {
			return nil, fmt.Errorf("%s was not in the store at %s (it entered it later)", key, fmtTime(asOf))
		}
		el.State, el.Since, el.Serial, el.LastAt = last.State, last.Since, last.Serial, last.At
		el.Record = nil
	}
	if err := s.describe(ctx, el, asOf); err != nil {
		return nil, err
	}
	return el, nil
}

// resolveAsOf resolves a name; a serial is looked up in the history
// too, so that a part sent away is still found.
func (s *Store) resolveAsOf(ctx context.Context, name string, asOf time.Time) (string, error) {
	key, err := s.Resolve(ctx, name)
	var nf *NotFoundError
	if !errors.As(err, &nf) {
		return key, err
	}
	bound := int64(1<<62 - 1)
	if !asOf.IsZero() {
		bound = micros(asOf)
	}
	err = s.db.QueryRowContext(ctx, s.q("SELECT element FROM events WHERE serial = ? AND at <= ? ORDER BY seq DESC LIMIT 1"), name, bound).Scan(&key)
	if err == nil {
		return key, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return "", s.wrap(err)
	}
	return "", &NotFoundError{Name: name}
}

// describe fills in an element's names, holds and its last move.
func (s *Store) describe(ctx context.Context, el *Element, asOf time.Time) error {
	rows, err := s.db.QueryContext(ctx, s.q("SELECT system, name FROM names WHERE element = ?"), el.Key)
	if err != nil {
		return s.wrap(err)
	}
	for rows.Next() {
		var sys, n string
		if err := rows.Scan(&sys, &n); err != nil {
			rows.Close()
			return s.wrap(err)
		}
		if el.Names == nil {
			el.Names = map[string]string{}
		}
		el.Names[sys] = n
	}
	rows.Close()
	if asOf.IsZero() {
		if el.Holds, err = s.holdsOf(ctx, s.db, el.Key); err != nil {
			return err
		}
	} else if el.Holds, err = s.holdsAsOf(ctx, el.Key, asOf); err != nil {
		return err
	}
	bound := int64(1<<62 - 1)
	if !asOf.IsZero() {
		bound = micros(asOf)
	}
	mv, err := scanEvent(s.db.QueryRowContext(ctx, s.q("SELECT "+eventCols+" FROM events WHERE element = ? AND kind IN ('created', 'transition') AND at <= ? ORDER BY at DESC, seq DESC LIMIT 1"), el.Key, bound))
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return s.wrap(err)
	}
	el.By, el.Reason, el.Evidence = mv.Actor, mv.Reason, mv.Evidence
	return nil
}

// eventAsOf is the element's last event at or before t (nil: none).
func (s *Store) eventAsOf(ctx context.Context, key string, t time.Time) (*Event, error) {
	e, err := scanEvent(s.db.QueryRowContext(ctx, s.q("SELECT "+eventCols+" FROM events WHERE element = ? AND at <= ? ORDER BY at DESC, seq DESC LIMIT 1"), key, micros(t)))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return e, s.wrap(err)
}

// StateAsOf is an element's state, since and serial at a time: one
// indexed lookup.
func (s *Store) StateAsOf(ctx context.Context, key string, t time.Time) (State, time.Time, string, error) {
	e, err := s.eventAsOf(ctx, key, t)
	if err != nil || e == nil {
		return "", time.Time{}, "", err
	}
	return e.State, e.Since, e.Serial, nil
}

// holdsAsOf replays the hold events of a node up to t.
func (s *Store) holdsAsOf(ctx context.Context, node string, t time.Time) ([]Hold, error) {
	rows, err := s.db.QueryContext(ctx, s.q("SELECT kind, data FROM events WHERE element = ? AND kind IN ('hold_set', 'hold_released') AND at <= ? ORDER BY seq"), node, micros(t))
	if err != nil {
		return nil, s.wrap(err)
	}
	defer rows.Close()
	type id struct{ owner hold.Owner }
	var order []id
	set := map[id]Hold{}
	for rows.Next() {
		var kind, data string
		if err := rows.Scan(&kind, &data); err != nil {
			return nil, s.wrap(err)
		}
		var h Hold
		if err := jsonUnmarshal(data, &h); err != nil {
			return nil, err
		}
		h = h.normalize()
		k := id{h.Owner}
		if kind == EvHoldSet {
			if _, ok := set[k]; !ok {
				order = append(order, k)
			}
			set[k] = h
		} else {
			delete(set, k)
		}
	}
	var out []Hold
	for _, k := range order {
		if h, ok := set[k]; ok {
			out = append(out, h)
		}
	}
	return out, s.wrap(rows.Err())
}

// Filter selects elements for List.
type Filter struct {
	State State  // "": any
	Kind  string // "": any
	Under string // a key: it and what it contains ("": everything)
	AsOf  time.Time
}

// List lists elements by key, as they are or were at f.AsOf.
func (s *Store) List(ctx context.Context, f Filter) ([]*Element, error) {
	if !f.AsOf.IsZero() {
		return s.listAsOf(ctx, f)
	}
	var where []string
	var args []any
	if f.State != "" {
		where, args = append(where, "state = ?"), append(args, string(f.State))
	}
	if f.Kind != "" {
		where, args = append(where, "kind = ?"), append(args, f.Kind)
	}
	if f.Under != "" {
		key, err := s.Resolve(ctx, f.Under)
		if err != nil {
			return nil, err
		}
		where, args = append(where, "(key = ? OR key IN (SELECT k FROM sub))"), append(args, key)
		args = append([]any{key}, args...)
	}
	q := "SELECT " + elementCols + " FROM elements"
	if f.Under != "" {
		q = "WITH RECURSIVE sub(k) AS (SELECT key FROM elements WHERE key = ? UNION ALL SELECT e.key FROM elements e JOIN sub ON e.parent = sub.k) " + q
	}
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	return s.query(ctx, q+" ORDER BY key", args...)
}

// AsOf is the whole inventory as it was at t: every element that was
// in the store then, with its state, since and serial. Each element's
// last event at or before t carries them.
func (s *Store) AsOf(ctx context.Context, t time.Time) ([]*Element, error) {
	return s.listAsOf(ctx, Filter{AsOf: t})
}

// listAsOf lists elements as they were at f.AsOf. An element whose
// last event is at or before then is as it is now: its row says so. The
// others (changed since) each take their last event at or before then:
// one probe of the events index each.
func (s *Store) listAsOf(ctx context.Context, f Filter) ([]*Element, error) {
	at := micros(f.AsOf)
	var where []string
	var args []any
	if f.State != "" {
		where, args = append(where, "state = ?"), append(args, string(f.State))
	}
	if f.Kind != "" {
		where, args = append(where, "kind = ?"), append(args, f.Kind)
	}
	sub := ""
	if f.Under != "" {
		key, err := s.Resolve(ctx, f.Under)
		if err != nil {
			return nil, err
		}
		els, err := s.subtree(ctx, s.db, key)
		if err != nil {
			return nil, err
		}
		// the subtree by key range (or everything, for the site)
		if len(els) > 0 && els[0].Kind != "site" {
			sub = " AND (key = ? OR (key > ? AND key < ?))"
		}
		if sub != "" {
			args = append(args, key, key+"/", key+"0")
		}
	}
	filter := ""
	if len(where) > 0 {
		filter = " AND " + strings.Join(where, " AND ")
	}
	// the same filter twice: the unchanged and the changed
	unchanged := "SELECT key, kind, parent, module, slot, state, since, last_at, serial FROM elements WHERE last_at <= ?" + filter + sub
	var changed string
	if s.engine == Postgres {
		changed = `SELECT key, kind, parent, module, slot, state, since, at, serial FROM (
			SELECT el.key, el.kind, el.parent, el.module, el.slot, ev.state, ev.since, ev.at, ev.serial FROM elements el
			CROSS JOIN LATERAL (SELECT state, since, at, serial FROM events WHERE element = el.key AND at <= ? ORDER BY at DESC, seq DESC LIMIT 1) ev
			WHERE el.last_at > ?` + prefixWhere(sub, "el.") + `) c WHERE true` + filter
	} else {
		changed = `SELECT key, kind, parent, module, slot, state, since, at, serial FROM (
			SELECT c.key, c.kind, c.parent, c.module, c.slot, ev.state, ev.since, ev.at, ev.serial FROM (
				SELECT el.key, el.kind, el.parent, el.module, el.slot,
					(SELECT seq FROM events WHERE element = el.key AND at <= ? ORDER BY at DESC, seq DESC LIMIT 1) AS seq
				FROM elements el WHERE el.last_at > ?` + prefixWhere(sub, "el.") + `) c JOIN events ev ON ev.seq = c.seq) x WHERE true` + filter
	}
	var all []any
	all = append(all, at)
	all = append(all, args[:len(where)]...)
	all = append(all, args[len(where):]...)
	all = append(all, at, at)
	all = append(all, args[len(where):]...)
	all = append(all, args[:len(where)]...)
	rows, err := s.db.QueryContext(ctx, s.q(unchanged+" UNION ALL "+changed+" ORDER BY key"), all...)
	if err != nil {
		return nil, s.wrap(err)
	}
	defer rows.Close()
	var out []*Element
	for rows.Next() {
		var e Element
		var since, last int64
		if err := rows.Scan(&e.Key, &e.Kind, &e.Parent, &e.Module, &e.Slot, &e.State, &since, &last, &e.Serial); err != nil {
			return nil, s.wrap(err)
		}
		e.Since, e.LastAt = fromMicros(since), fromMicros(last)
		out = append(out, &e)
	}
	return out, s.wrap(rows.Err())
}

// prefixWhere qualifies the key column of a subtree condition.
func prefixWhere(cond, p string) string { return strings.ReplaceAll(cond, "key", p+"key") }

// History is an element's events, oldest first, up to asOf (zero: all).
func (s *Store) History(ctx context.Context, name string, asOf time.Time) (string, []*Event, error) {
	key, err := s.resolveAsOf(ctx, name, asOf)
	if err != nil {
		return "", nil, err
	}
	evs, err := s.events(ctx, "element = ?", asOf, key)
	return key, evs, err
}

// SerialHistory is the history of a part wherever it went: every event
// while it sat in a slot, and the one that took it out, oldest first.
func (s *Store) SerialHistory(ctx context.Context, serial string, asOf time.Time) ([]*Event, error) {
	evs, err := s.events(ctx, "(serial = ? OR prev_serial = ?)", asOf, serial, serial)
	if err == nil && len(evs) == 0 {
		return nil, &NotFoundError{Name: serial}
	}
	return evs, err
}

func (s *Store) events(ctx context.Context, where string, asOf time.Time, args ...any) ([]*Event, error) {
	q := "SELECT " + eventCols + " FROM events WHERE " + where
	if !asOf.IsZero() {
		q += " AND at <= ?"
		args = append(args, micros(asOf))
	}
	rows, err := s.db.QueryContext(ctx, s.q(q+" ORDER BY seq"), args...)
	if err != nil {
		return nil, s.wrap(err)
	}
	defer rows.Close()
	var out []*Event
	for rows.Next() {
		e, err := scanEvent(rows)
		if err != nil {
			return nil, s.wrap(err)
		}
		out = append(out, e)
	}
	return out, s.wrap(rows.Err())
}

// Tenure is a serial's time in a slot.
type Tenure struct {
	Serial    string    `json:"serial"`
	From      time.Time `json:"from"`
	To        time.Time `json:"to,omitempty"` // zero: it is there still
	Removed   string    `json:"removed,omitempty"`
	RemovedBy string    `json:"removed_by,omitempty"`
}

// SlotHistory lists the serials a slot held, oldest first.
func (s *Store) SlotHistory(ctx context.Context, name string) (string, []Tenure, error) {
	key, err := s.Resolve(ctx, name)
	if err != nil {
		return "", nil, err
	}
	evs, err := s.events(ctx, "element = ? AND serial <> prev_serial", time.Time{}, key)
	if err != nil {
		return "", nil, err
	}
	var out []Tenure
	for _, e := range evs {
		if n := len(out); n > 0 && out[n-1].To.IsZero() {
			out[n-1].To = e.At
			out[n-1].Removed, out[n-1].RemovedBy = e.Reason, e.Actor
		}
		if e.Serial != "" {
			out = append(out, Tenure{Serial: e.Serial, From: e.At})
		}
	}
	return key, out, nil
}
