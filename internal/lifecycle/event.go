package lifecycle

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Event kinds.
const (
	EvCreated      = "created"       // the element entered the store (state design)
	EvTransition   = "transition"    // a state change (with a swap, for an RMA)
	EvAsBuilt      = "asbuilt"       // its as-built record or serial changed
	EvHoldSet      = "hold_set"      // a hold on the node
	EvHoldReleased = "hold_released" // a hold released
	EvReconcile    = "reconcile"     // what sat discover found against the declared inventory
	EvAccess       = "access"        // the access policy changed (on the site's element)
)

// Event is one entry of the history. It carries the element's state,
// since and serial after it.
type Event struct {
	Seq        int64           `json:"seq"`
	At         time.Time       `json:"at"`
	Element    string          `json:"element"`
	Kind       string          `json:"kind"`
	PrevState  State           `json:"prev_state,omitempty"`
	State      State           `json:"state"`
	Since      time.Time       `json:"since"`
	PrevSerial string          `json:"prev_serial,omitempty"`
	Serial     string          `json:"serial,omitempty"`
	Actor      string          `json:"actor"`
	DBUser     string          `json:"db_user,omitempty"`
	Reason     string          `json:"reason,omitempty"`
	Cause      int64           `json:"cause,omitempty"` // the event a cascade started from
	Policy     int64           `json:"policy"`
	Evidence   []Evidence      `json:"evidence,omitempty"`
	Signed     bool            `json:"signed"`
	Data       json.RawMessage `json:"data,omitempty"`
	statement  string
	signature  string
}

// Evidence is what a transition was made on.
type Evidence struct {
	Kind Need `json:"kind"`
	// Ref is where it was: a bundle's directory, a file, as given.
	Ref string `json:"ref,omitempty"`
	// Digest: a bundle's manifest, a baseline file's bytes (sha256:…).
	Digest   string `json:"digest,omitempty"`
	Node     string `json:"node,omitempty"`   // baseline: the node
	Serial   string `json:"serial,omitempty"` // baseline: the node's serial; replacement: the serial fitted
	Removed  string `json:"removed,omitempty"`
	Module   string `json:"module,omitempty"`
	Bundle   string `json:"bundle,omitempty"`
	SignedBy string `json:"signed_by,omitempty"`
	Cases    int    `json:"cases,omitempty"`
	Taken    string `json:"taken,omitempty"`
}

// Element is an element as the store has it.
type Element struct {
	Key     string            `json:"key"`
	Kind    string            `json:"kind"`
	Parent  string            `json:"parent,omitempty"`
	Module  string            `json:"module,omitempty"`
	Slot    int               `json:"slot,omitempty"`
	State   State             `json:"state"`
	Since   time.Time         `json:"since"`
	LastAt  time.Time         `json:"last_at"`
	Version int64             `json:"version"`
	Serial  string            `json:"serial,omitempty"`
	Names   map[string]string `json:"names,omitempty"`
	Holds   []Hold            `json:"holds,omitempty"`
	// Record is a rack's or tray's as-built record (handover form).
	Record json.RawMessage `json:"record,omitempty"`
	// By is who made its last change of state, and on what.
	By       string     `json:"by,omitempty"`
	Reason   string     `json:"reason,omitempty"`
	Evidence []Evidence `json:"evidence,omitempty"`
	ord      int64
	attrs    string
}

const elementCols = "key, kind, parent, module, slot, state, since, last_at, version, serial, record, ord, attrs"

type scanner interface{ Scan(...any) error }

func scanElement(r scanner) (*Element, error) {
	var e Element
	var since, last int64
	var record string
	if err := r.Scan(&e.Key, &e.Kind, &e.Parent, &e.Module, &e.Slot, &e.State, &since, &last, &e.Version, &e.Serial, &record, &e.ord, &e.attrs); err != nil {
		return nil, err
	}
	e.Since, e.LastAt = fromMicros(since), fromMicros(last)
	if record != "" {
		e.Record = json.RawMessage(record)
	}
	return &e, nil
}

const eventCols = "seq, at, element, kind, prev_state, state, since, prev_serial, serial, actor, db_user, reason, cause, policy, evidence, statement, signature, data"

func scanEvent(r scanner) (*Event, error) {
	var e Event
	var at, since int64
	var ev, data string
	if err := r.Scan(&e.Seq, &at, &e.Element, &e.Kind, &e.PrevState, &e.State, &since, &e.PrevSerial, &e.Serial, &e.Actor, &e.DBUser,
		&e.Reason, &e.Cause, &e.Policy, &ev, &e.statement, &e.signature, &data); err != nil {
		return nil, err
	}
	e.At, e.Since = fromMicros(at), fromMicros(since)
	e.Signed = e.signature != ""
	if ev != "" {
		if err := json.Unmarshal([]byte(ev), &e.Evidence); err != nil {
			return nil, fmt.Errorf("event %d: evidence: %w", e.Seq, err)
		}
	}
	if data != "" {
		e.Data = json.RawMessage(data)
	}
	return &e, nil
}

// Statement is the signed statement an event was made on ("" for the
// events of a cascade, and of a database role's statement unsigned).
func (e *Event) Statement() (statement, signature string) { return e.statement, e.signature }

// eventRow is an event to write.
type eventRow struct {
	at                         time.Time
	element, kind              string
	prevState, state           State
	since                      time.Time
	prevSerial, serial         string
	actor, reason              string
	cause, policy              int64
	evidence                   []Evidence
	statement, signature, data string
	hash                       string // set by chain
}

func (r *eventRow) evidenceJSON() string {
	if len(r.evidence) == 0 {
		return ""
	}
	b, _ := json.Marshal(r.evidence)
	return string(b)
}

func (r *eventRow) args() []any {
	return []any{micros(r.at), r.element, r.kind, string(r.prevState), string(r.state), micros(r.since), r.prevSerial, r.serial,
		r.actor, "", r.reason, r.cause, r.policy, r.evidenceJSON(), r.statement, r.signature, r.data, r.hash}
}

const insertEventCols = "at, element, kind, prev_state, state, since, prev_serial, serial, actor, db_user, reason, cause, policy, evidence, statement, signature, data, hash"

// insertEvent appends one event to the chain and returns its seq.
func (s *Store) insertEvent(ctx context.Context, tx *sql.Tx, r eventRow) (int64, error) {
	rows := []eventRow{r}
	if err := s.chain(ctx, tx, rows); err != nil {
		return 0, err
	}
	var seq int64
	err := tx.QueryRowContext(ctx, s.q("INSERT INTO events ("+insertEventCols+") VALUES ("+placeholders(18)+") RETURNING seq"), rows[0].args()...).Scan(&seq)
	return seq, s.wrap(err)
}

// insertEvents appends events to the chain, in multi-row statements.
func (s *Store) insertEvents(ctx context.Context, tx *sql.Tx, rows []eventRow) error {
	if err := s.chain(ctx, tx, rows); err != nil {
		return err
	}
	const per = 400 // 18 columns: well inside both engines' parameter limits
	for len(rows) > 0 {
		n := min(per, len(rows))
		var b strings.Builder
		b.WriteString("INSERT INTO events (" + insertEventCols + ") VALUES ")
		args := make([]any, 0, n*18)
		for i, r := range rows[:n] {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString("(" + placeholders(18) + ")")
			args = append(args, r.args()...)
		}
		if _, err := tx.ExecContext(ctx, s.q(b.String()), args...); err != nil {
			return s.wrap(err)
		}
		rows = rows[n:]
	}
	return nil
}

// element reads one element by key (nil, nil: none).
func (s *Store) element(ctx context.Context, q querier, key string) (*Element, error) {
	e, err := scanElement(q.QueryRowContext(ctx, s.q("SELECT "+elementCols+" FROM elements WHERE key = ?"), key))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return e, s.wrap(err)
}

type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// Resolve finds what a person may call an element: its key, a node's
// Slurm, Kubernetes or BMC name, or the serial in its slot.
func (s *Store) Resolve(ctx context.Context, name string) (string, error) {
	name = strings.TrimSpace(name)
	var key string
	err := s.db.QueryRowContext(ctx, s.q("SELECT key FROM elements WHERE key = ?"), name).Scan(&key)
	if err == nil {
		return key, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return "", s.wrap(err)
	}
	err = s.db.QueryRowContext(ctx, s.q("SELECT element FROM names WHERE name = ?"), name).Scan(&key)
	if err == nil {
		return key, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return "", s.wrap(err)
	}
	err = s.db.QueryRowContext(ctx, s.q("SELECT key FROM elements WHERE serial = ? AND serial <> ''"), name).Scan(&key)
	if err == nil {
		return key, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return "", s.wrap(err)
	}
	return "", &NotFoundError{Name: name}
}

// subtree lists key and everything it contains, parents first. Keys
// are paths (ma/r01/compute-03/gpu-2): what an element contains is
// among the keys below its own, read by one range of the key index; the
// site contains everything. The parents are checked all the same.
func (s *Store) subtree(ctx context.Context, q querier, key string) ([]*Element, error) {
	root, err := s.element(ctx, q, key)
	if err != nil || root == nil {
		return nil, err
	}
	var cands []*Element
	if root.Kind == "site" {
		cands, err = s.queryOn(ctx, q, "SELECT "+elementCols+" FROM elements WHERE key <> ? ORDER BY key", key)
	} else {
		cands, err = s.queryOn(ctx, q, "SELECT "+elementCols+" FROM elements WHERE key > ? AND key < ? ORDER BY key", key+"/", key+"0")
	}
	if err != nil {
		return nil, err
	}
	in := map[string]bool{key: true}
	out := []*Element{root}
	// parents sort before their children by key ("a/b" < "a/b/c"), but
	// the site's direct children need not: pass until nothing joins
	for added := true; added; {
		added = false
		rest := cands[:0]
		for _, e := range cands {
			if in[e.Parent] {
				in[e.Key] = true
				out = append(out, e)
				added = true
			} else {
				rest = append(rest, e)
			}
		}
		cands = rest
	}
	return out, nil
}

// queryOn reads elements through q.
func (s *Store) queryOn(ctx context.Context, q querier, query string, args ...any) ([]*Element, error) {
	rows, err := q.QueryContext(ctx, s.q(query), args...)
	if err != nil {
		return nil, s.wrap(err)
	}
	defer rows.Close()
	var out []*Element
	for rows.Next() {
		e, err := scanElement(rows)
		if err != nil {
			return nil, s.wrap(err)
		}
		out = append(out, e)
	}
	return out, s.wrap(rows.Err())
}

// lastEvent is the element's latest event (nil: none).
func (s *Store) lastEvent(ctx context.Context, q querier, key string) (*Event, error) {
	e, err := scanEvent(q.QueryRowContext(ctx, s.q("SELECT "+eventCols+" FROM events WHERE element = ? ORDER BY at DESC, seq DESC LIMIT 1"), key))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return e, s.wrap(err)
}
