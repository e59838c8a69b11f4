package lifecycle

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/seamdc/seam/internal/hold"
)

// ledgerLock is the PostgreSQL advisory lock a ledger session holds: one
// session at a time across every client of the store, as SQLite's write
// lock (BEGIN IMMEDIATE) gives on one file.
const ledgerLock = 7395060315082512462

// Ledger is the store as the one ledger of holds (a hold.Backend): the
// holds, what the ledger knows of each node's scheduler state, and its
// fence. A session is one transaction holding the ledger's lock; every
// hold placed or released is a change signed as a (or made as its
// database role), checked against the access policy (holds; releasing
// another's hold needs release-any-hold; the state machine's holds are
// released only by moves), and in the history of each node it touches.
// Nodes are named as system names them ("slurm" or "kubernetes": the
// scheduler's names; a key works too).
func (s *Store) Ledger(a Auth, system string) hold.Backend {
	if system == "" {
		system = "slurm"
	}
	return &storeLedger{s: s, a: a, system: system}
}

type storeLedger struct {
	s      *Store
	a      Auth
	system string
}

// Begin starts a transaction holding the ledger's lock (a dry run's
// store reads without one, and writes nothing).
func (l *storeLedger) Begin(ctx context.Context) (hold.Session, error) {
	ls := &ledgerSession{l: l, s: l.s, ctx: ctx}
	if l.s.dry.Active() {
		ls.q = l.s.db
		return ls, nil
	}
	tx, err := l.s.beginWrite(ctx)
	if err != nil {
		return nil, err
	}
	ls.tx, ls.q = tx, tx
	return ls, nil
}

type ledgerSession struct {
	ctx  context.Context // for the seal at Commit
	l    *storeLedger
	s    *Store
	tx   *sql.Tx // nil: a dry run's, which only reads
	q    querier
	done bool
}

func (ls *ledgerSession) writable() error {
	if ls.tx == nil {
		return errors.New("lifecycle store: a dry run writes nothing")
	}
	return nil
}

// keys maps node names (or keys) to element keys, in names' order; a
// name the store does not know is an error naming it.
func (ls *ledgerSession) keys(ctx context.Context, names []string) ([]string, error) {
	found := map[string]string{}
	for chunk := range chunks(names, 500) {
		args := append([]any{ls.l.system}, anySlice(chunk)...)
		rows, err := ls.q.QueryContext(ctx, ls.s.q("SELECT name, element FROM names WHERE system = ? AND name IN ("+placeholders(len(chunk))+")"), args...)
		if err != nil {
			return nil, ls.s.wrap(err)
		}
		for rows.Next() {
			var n, k string
			if err := rows.Scan(&n, &k); err != nil {
				rows.Close()
				return nil, ls.s.wrap(err)
			}
			found[n] = k
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, ls.s.wrap(err)
		}
	}
	out := make([]string, len(names))
	var unknown []string
	for i, n := range names {
		if k, ok := found[n]; ok {
			out[i] = k
			continue
		}
		el, err := ls.s.element(ctx, ls.q, n)
		if err != nil {
			return nil, err
		}
		if el == nil {
			unknown = append(unknown, n)
			continue
		}
		out[i] = el.Key
	}
	if len(unknown) > 0 {
		more := ""
		if len(unknown) > 5 {
			unknown, more = unknown[:5], fmt.Sprintf(" and %d more", len(unknown)-5)
		}
		return nil, fmt.Errorf("lifecycle store %s has no node named %s%s (as %s names it): import the as-built inventory (sat lifecycle import)", ls.s.name, strings.Join(unknown, ", "), more, ls.l.system)
	}
	return out, nil
}

// names maps element keys to node names (a key without a name of the
// system stays a key).
func (ls *ledgerSession) names(ctx context.Context, keys []string) (map[string]string, error) {
	return ls.s.nodeNames(ctx, ls.q, keys, ls.l.system)
}

// NodeNames are the names system ("slurm", "kubernetes") gives the
// nodes of keys, in their order (a key without one stays a key).
func (s *Store) NodeNames(ctx context.Context, keys []string, system string) ([]string, error) {
	m, err := s.nodeNames(ctx, s.db, keys, system)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = m[k]
	}
	return out, nil
}

func (s *Store) nodeNames(ctx context.Context, q querier, keys []string, system string) (map[string]string, error) {
	out := make(map[string]string, len(keys))
	for _, k := range keys {
		out[k] = k
	}
	for chunk := range chunks(keys, 500) {
		args := append([]any{system}, anySlice(chunk)...)
		rows, err := q.QueryContext(ctx, s.q("SELECT element, name FROM names WHERE system = ? AND element IN ("+placeholders(len(chunk))+")"), args...)
		if err != nil {
			return nil, s.wrap(err)
		}
		for rows.Next() {
			var k, n string
			if err := rows.Scan(&k, &n); err != nil {
				rows.Close()
				return nil, s.wrap(err)
			}
			out[k] = n
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, s.wrap(err)
		}
	}
	return out, nil
}

// asHolds joins the rows of owners into holds, nodes by name.
func (ls *ledgerSession) asHolds(ctx context.Context, rows []Hold) ([]hold.Hold, error) {
	keys := make([]string, 0, len(rows))
	for _, r := range rows {
		keys = append(keys, r.Node)
	}
	names, err := ls.names(ctx, keys)
	if err != nil {
		return nil, err
	}
	by := map[hold.Owner]*hold.Hold{}
	var order []hold.Owner
	for _, r := range rows {
		h := by[r.Owner]
		if h == nil {
			h = &hold.Hold{Owner: r.Owner, Domain: r.Domain, Why: r.Reason, Placed: r.Since, By: r.By, Reservation: r.Reservation}
			by[r.Owner] = h
			order = append(order, r.Owner)
		}
		if r.Since.Before(h.Placed) {
			h.Placed, h.Why, h.By = r.Since, r.Reason, r.By
		}
		h.Nodes = append(h.Nodes, names[r.Node])
	}
	slices.Sort(order)
	out := make([]hold.Hold, 0, len(order))
	for _, o := range order {
		h := by[o]
		slices.Sort(h.Nodes)
		h.Nodes = slices.Compact(h.Nodes)
		out = append(out, *h)
	}
	return out, nil
}

func (ls *ledgerSession) Hold(ctx context.Context, owner hold.Owner) (*hold.Hold, error) {
	rows, err := ls.s.holdsWhere(ctx, ls.q, "owner = ?", string(owner))
	if err != nil || len(rows) == 0 {
		return nil, err
	}
	hs, err := ls.asHolds(ctx, rows)
	if err != nil {
		return nil, err
	}
	return &hs[0], nil
}

// modules are the modules of the elements of keys, sorted.
func (ls *ledgerSession) modules(ctx context.Context, keys []string) ([]string, *Element, error) {
	set := map[string]bool{}
	var first *Element
	for _, k := range keys {
		el, err := ls.s.element(ctx, ls.q, k)
		if err != nil {
			return nil, nil, err
		}
		if el == nil {
			return nil, nil, &NotFoundError{Name: k}
		}
		if el.Kind != "compute" {
			return nil, nil, fmt.Errorf("%s is a %s, not a node: holds are on nodes (compute trays)", k, el.Kind)
		}
		if first == nil {
			first = el
		}
		set[el.Module] = true
	}
	mods := make([]string, 0, len(set))
	for m := range set {
		mods = append(mods, m)
	}
	sort.Strings(mods)
	return mods, first, nil
}

// prepare signs a hold change on keys, checked against the policy for
// every module they are in.
func (ls *ledgerSession) prepare(ctx context.Context, action string, owner hold.Owner, keys []string, reason, perm string) (*prepared, error) {
	mods, first, err := ls.modules(ctx, keys)
	if err != nil {
		return nil, err
	}
	pv, err := ls.s.currentPolicy(ctx, ls.q)
	if err != nil {
		return nil, err
	}
	st := &Statement{Action: action, Element: first.Key, Version: first.Version, Hold: &HoldRef{Kind: owner.Kind(), Owner: string(owner)}, Reason: reason}
	if len(keys) > 1 {
		st.Nodes = keys
	}
	p, err := ls.s.sign(ctx, ls.l.a, pv, st, perm, mods[0])
	if err != nil {
		return nil, err
	}
	for _, m := range mods[1:] {
		if err := pv.P.may(p.actor, perm, m); err != nil {
			return nil, err
		}
	}
	return p, nil
}

func (ls *ledgerSession) Place(ctx context.Context, h hold.Hold) ([]string, error) {
	keys, err := ls.keys(ctx, h.Nodes)
	if err != nil {
		return nil, err
	}
	have, err := ls.s.holdsWhere(ctx, ls.q, "owner = ?", string(h.Owner))
	if err != nil {
		return nil, err
	}
	var add []string
	var added []string
	for i, k := range keys {
		if !slices.ContainsFunc(have, func(x Hold) bool { return x.Node == k }) && !slices.Contains(add, k) {
			add = append(add, k)
			added = append(added, h.Nodes[i])
		}
	}
	if len(add) == 0 {
		return nil, nil
	}
	if err := ls.writable(); err != nil {
		return nil, err
	}
	reason := strings.TrimSpace(h.Why)
	if reason == "" {
		reason = "held by " + string(h.Owner)
	}
	p, err := ls.prepare(ctx, ActHoldSet, h.Owner, add, reason, MayHolds)
	if err != nil {
		return nil, err
	}
	if h.By != "" && "ssh:"+h.By != p.actor && "db:"+h.By != p.actor && h.By != p.actor {
		reason = "for " + h.By + ": " + reason // the person a daemon acts for
	}
	rows := make([]Hold, len(add))
	for i, k := range add {
		rows[i] = Hold{Node: k, Owner: h.Owner, Kind: h.Owner.Kind(), Reason: reason, Since: p.at, By: p.actor, Domain: h.Domain, Reservation: h.Reservation}
	}
	if err := ls.s.holdEvents(ctx, ls.tx, p, EvHoldSet, rows, 0); err != nil {
		return nil, err
	}
	return added, nil
}

func (ls *ledgerSession) Release(ctx context.Context, owner hold.Owner, names []string, by, why string) ([]string, error) {
	have, err := ls.s.holdsWhere(ctx, ls.q, "owner = ?", string(owner))
	if err != nil || len(have) == 0 {
		return nil, err
	}
	if names != nil {
		keys, err := ls.keys(ctx, names)
		if err != nil {
			return nil, err
		}
		have = slices.DeleteFunc(have, func(h Hold) bool { return !slices.Contains(keys, h.Node) })
		if len(have) == 0 {
			return nil, nil
		}
	}
	if err := ls.writable(); err != nil {
		return nil, err
	}
	pv, err := ls.s.currentPolicy(ctx, ls.q)
	if err != nil {
		return nil, err
	}
	actor, err := ls.s.actor(ctx, ls.l.a, pv.P)
	if err != nil {
		return nil, err
	}
	perm := MayHolds
	for _, h := range have {
		switch {
		case h.By == StateOwner:
			return nil, &AccessError{Actor: actor, Action: "release " + string(owner), Detail: fmt.Sprintf("the %s hold on %s follows its state: move it instead (%s)", owner, h.Node, stateReleaseHint(owner))}
		case h.By != actor:
			perm = MayReleaseAnyHold
		}
	}
	reason := strings.TrimSpace(why)
	if reason == "" {
		reason = "released"
	}
	if by != "" && "ssh:"+by != actor && "db:"+by != actor && by != actor {
		reason = "for " + by + ": " + reason
	}
	keys := make([]string, len(have))
	for i, h := range have {
		keys[i] = h.Node
		have[i].Reason = reason
	}
	p, err := ls.prepare(ctx, ActHoldRelease, owner, keys, reason, perm)
	if err != nil {
		return nil, err
	}
	if err := ls.s.holdEvents(ctx, ls.tx, p, EvHoldReleased, have, 0); err != nil {
		return nil, err
	}
	nm, err := ls.names(ctx, keys)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = nm[k]
	}
	slices.Sort(out)
	return out, nil
}

func stateReleaseHint(o hold.Owner) string {
	if o == hold.Swap {
		return "provision the swapped part on a baseline of the node taken after the swap: sat lifecycle move PART provisioned --baseline FILE"
	}
	return "sat lifecycle move ELEMENT operating"
}

func (ls *ledgerSession) On(ctx context.Context, names []string) (map[string][]hold.Hold, error) {
	out := map[string][]hold.Hold{}
	if len(names) == 0 {
		return out, nil
	}
	keys, err := ls.keys(ctx, names)
	if err != nil {
		return nil, err
	}
	nameOf := make(map[string]string, len(keys))
	for i, k := range keys {
		nameOf[k] = names[i]
	}
	for chunk := range chunks(keys, 500) {
		rows, err := ls.s.holdsWhere(ctx, ls.q, "node IN ("+placeholders(len(chunk))+")", anySlice(chunk)...)
		if err != nil {
			return nil, err
		}
		for _, r := range rows {
			n := nameOf[r.Node]
			out[n] = append(out[n], hold.Hold{Owner: r.Owner, Domain: r.Domain, Nodes: []string{n}, Why: r.Reason, Placed: r.Since, By: r.By, Reservation: r.Reservation})
		}
	}
	return out, nil
}

func (ls *ledgerSession) All(ctx context.Context) ([]hold.Hold, error) {
	rows, err := ls.s.holdsOf(ctx, ls.q, "")
	if err != nil {
		return nil, err
	}
	return ls.asHolds(ctx, rows)
}

func (ls *ledgerSession) Records(ctx context.Context, names []string) (map[string]*hold.Record, error) {
	out := map[string]*hold.Record{}
	read := func(query string, args ...any) error {
		rows, err := ls.q.QueryContext(ctx, ls.s.q(query), args...)
		if err != nil {
			return ls.s.wrap(err)
		}
		defer rows.Close()
		for rows.Next() {
			var n, doc string
			if err := rows.Scan(&n, &doc); err != nil {
				return ls.s.wrap(err)
			}
			var r hold.Record
			if err := json.Unmarshal([]byte(doc), &r); err != nil {
				return fmt.Errorf("lifecycle store %s: the ledger's record of %s: %w", ls.s.name, n, err)
			}
			out[n] = &r
		}
		return ls.s.wrap(rows.Err())
	}
	if names == nil {
		return out, read("SELECT node, record FROM ledger_nodes")
	}
	for chunk := range chunks(names, 500) {
		if err := read("SELECT node, record FROM ledger_nodes WHERE node IN ("+placeholders(len(chunk))+")", anySlice(chunk)...); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (ls *ledgerSession) SetRecords(ctx context.Context, recs map[string]*hold.Record) error {
	if len(recs) == 0 {
		return nil
	}
	if err := ls.writable(); err != nil {
		return err
	}
	names := make([]string, 0, len(recs))
	for n := range recs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		r := recs[n]
		var err error
		if r.Empty() {
			_, err = ls.tx.ExecContext(ctx, ls.s.q("DELETE FROM ledger_nodes WHERE node = ?"), n)
		} else {
			doc, _ := json.Marshal(r)
			_, err = ls.tx.ExecContext(ctx, ls.s.q("INSERT INTO ledger_nodes (node, record) VALUES (?, ?) ON CONFLICT (node) DO UPDATE SET record = excluded.record"), n, string(doc))
		}
		if err != nil {
			return ls.s.wrap(err)
		}
	}
	return nil
}

// Fence refuses an epoch older than the newest that wrote the ledger,
// and records a newer one.
func (ls *ledgerSession) Fence(ctx context.Context, epoch int64, leader string) error {
	if epoch == 0 {
		return nil
	}
	var have int64
	var who string
	err := ls.q.QueryRowContext(ctx, "SELECT epoch, leader FROM ledger_fence WHERE id = 1").Scan(&have, &who)
	switch {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return ls.s.wrap(err)
	case have > epoch:
		return fmt.Errorf("lifecycle store %s: the ledger was written by %s at epoch %d, this writer's is %d: %w", ls.s.name, who, have, epoch, hold.ErrFenced)
	case have == epoch:
		return nil
	}
	if ls.tx == nil {
		return nil
	}
	_, err = ls.tx.ExecContext(ctx, ls.s.q("INSERT INTO ledger_fence (id, epoch, leader) VALUES (1, ?, ?) ON CONFLICT (id) DO UPDATE SET epoch = excluded.epoch, leader = excluded.leader"), epoch, leader)
	return ls.s.wrap(err)
}

func (ls *ledgerSession) Commit() error {
	if ls.done {
		return errors.New("lifecycle: ledger session ended")
	}
	ls.done = true
	if ls.tx == nil {
		return nil
	}
	if err := ls.s.seal(ls.ctx, ls.tx, ls.l.a); err != nil {
		ls.tx.Rollback()
		return err
	}
	if ls.s.hook != nil {
		ls.s.hook("ledger")
	}
	if err := ls.tx.Commit(); err != nil {
		return ls.s.wrap(err)
	}
	ls.s.stampSoon()
	return nil
}

func (ls *ledgerSession) Rollback() {
	if ls.done {
		return
	}
	ls.done = true
	if ls.tx != nil {
		ls.tx.Rollback()
	}
}

func anySlice(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// SetHold places owner's hold on one node (a key or a node name) as a,
// in the store only: the scheduler is brought in line by whoever runs
// the ledger (sat lifecycle hold with a scheduler, facilityd's
// reconcile). A hold set already is left as it is.
func (s *Store) SetHold(ctx context.Context, a Auth, node string, owner hold.Owner, reason string) error {
	return s.holdOne(ctx, a, func(ss hold.Session) error {
		_, err := ss.Place(ctx, hold.Hold{Owner: owner, Nodes: []string{node}, Why: reason})
		return err
	})
}

// ReleaseHold releases owner's hold on one node as a, in the store
// only. Releasing a hold that is not set is not an error.
func (s *Store) ReleaseHold(ctx context.Context, a Auth, node string, owner hold.Owner, reason string) error {
	return s.holdOne(ctx, a, func(ss hold.Session) error {
		_, err := ss.Release(ctx, owner, []string{node}, "", reason)
		return err
	})
}

func (s *Store) holdOne(ctx context.Context, a Auth, f func(hold.Session) error) error {
	ss, err := s.Ledger(a, "").Begin(ctx)
	if err != nil {
		return err
	}
	defer ss.Rollback()
	if err := f(ss); err != nil {
		return err
	}
	return ss.Commit()
}
