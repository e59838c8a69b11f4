package lifecycle

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
)

// Move is a transition to make.
type Move struct {
	// Element is a key, a node's name or a serial.
	Element string
	To      State
	// Reason says why: it is recorded, and signed.
	Reason string
	// SAT is an evidence bundle to record in the issues log before
	// installed → commissioned evaluates the module's gates (optional:
	// bundles recorded before count too).
	SAT string
	// Baselines are the burn-in baseline files commissioned →
	// provisioned needs: one per node that moves.
	Baselines []string
	// Replacement is the serial fitted in place of the one sent back
	// (→ rma).
	Replacement string
	// Only moves the element alone; otherwise everything it contains
	// that is in the same state moves with it (a module and its racks,
	// nodes and parts).
	Only bool

	recorded []Recorded // what recording SAT did (a dry run's, to evaluate the gate on)
}

// Moved is what a transition did.
type Moved struct {
	Element  string
	From, To State
	Seq      int64 // the transition's event
	Count    int   // elements moved, the element included
	At       time.Time
	By       string
	Evidence []Evidence
	// Nodes are the nodes (keys) whose holds the move changed (a dry
	// run: the nodes it touches): their scheduler state follows.
	Nodes []string
}

// policyVersion is a version of the access policy.
type policyVersion struct {
	Version int64
	P       *Policy
}

// currentPolicy reads the policy in force (through q, inside a
// transaction when it must be consistent with a write).
func (s *Store) currentPolicy(ctx context.Context, q querier) (*policyVersion, error) {
	var v int64
	if err := q.QueryRowContext(ctx, "SELECT coalesce(max(version), 0) FROM policies").Scan(&v); err != nil {
		return nil, s.wrap(err)
	}
	s.mu.Lock()
	cached := s.policy
	s.mu.Unlock()
	if cached != nil && cached.Version == v {
		return cached, nil
	}
	if v == 0 {
		return nil, &StoreError{Store: s.name, Kind: StoreSchema, Err: errors.New("the store has no access policy: initialise it with sat lifecycle init")}
	}
	var doc string
	if err := q.QueryRowContext(ctx, s.q("SELECT doc FROM policies WHERE version = ?"), v).Scan(&doc); err != nil {
		return nil, s.wrap(err)
	}
	p, err := ParsePolicy([]byte(doc))
	if err != nil {
		return nil, fmt.Errorf("lifecycle store %s: policy version %d: %w", s.name, v, err)
	}
	pv := &policyVersion{Version: v, P: p}
	s.mu.Lock()
	s.policy = pv
	s.mu.Unlock()
	return pv, nil
}

// prepared is a change ready to write: its statement signed and
// checked, its evidence verified.
type prepared struct {
	st        *Statement
	statement string
	signature string
	actor     string
	policy    int64
	at        time.Time
	auth      Auth // who seals the write
}

// sign builds, signs and checks the statement of a change.
func (s *Store) sign(ctx context.Context, a Auth, pv *policyVersion, st *Statement, action, module string) (*prepared, error) {
	si, err := s.storeInfo(ctx)
	if err != nil {
		return nil, err
	}
	actor, err := s.actor(ctx, a, pv.P)
	if err != nil {
		return nil, err
	}
	if err := pv.P.may(actor, action, module); err != nil {
		return nil, err
	}
	at := s.clock()
	st.Type, st.Store, st.Site, st.By, st.At = StatementType, si.ID, si.Site, actor, stamp(at)
	msg := st.Marshal()
	sig, err := signStatement(a, st)
	if err != nil {
		return nil, err
	}
	if _, err := verifyStatement(pv.P, msg, sig); err != nil {
		return nil, err
	}
	return &prepared{st: st, statement: string(msg), signature: sig, actor: actor, policy: pv.Version, at: at, auth: a}, nil
}

// Transition moves an element (and, unless Only, everything it
// contains in the same state) to another state, on the evidence the
// transition needs, as the identity a authenticates. It is all or
// nothing: a conflict, a refusal or a failure writes nothing.
func (s *Store) Transition(ctx context.Context, a Auth, m Move) (*Moved, error) {
	key, err := s.Resolve(ctx, m.Element)
	if err != nil {
		return nil, err
	}
	el, err := s.element(ctx, s.db, key)
	if err != nil {
		return nil, err
	}
	tr, err := Allowed(el.State, m.To)
	if err != nil {
		var na *NotAllowedError
		if errors.As(err, &na) {
			na.Element = key
		}
		return nil, err
	}
	if strings.TrimSpace(m.Reason) == "" {
		return nil, fmt.Errorf("%s → %s: give a reason (it is recorded and signed)", key, m.To)
	}
	pv, err := s.currentPolicy(ctx, s.db)
	if err != nil {
		return nil, err
	}
	set := []*Element{el}
	if !m.Only {
		sub, err := s.subtree(ctx, s.db, key)
		if err != nil {
			return nil, err
		}
		set = set[:0]
		for _, e := range sub {
			if e.State == el.State {
				set = append(set, e)
			}
		}
	}
	now := s.clock()
	if err := s.checkClock(ctx, set, now); err != nil {
		return nil, err
	}
	if m.SAT != "" && tr.Requires(NeedSAT) {
		// the bundle goes into the issues log first: its failures are
		// issues whatever the gate then says
		if m.recorded, err = s.RecordBundle(ctx, a, m.SAT); err != nil {
			return nil, err
		}
	}
	ev, perNode, err := s.evidenceFor(ctx, tr, el, set, m, pv.P, now)
	if err != nil {
		return nil, err
	}
	st := &Statement{Action: ActTransition, Element: key, Version: el.Version, From: tr.From, To: tr.To, Only: m.Only,
		Replacement: m.Replacement, Reason: m.Reason, Evidence: ev}
	p, err := s.sign(ctx, a, pv, st, tr.Name(), el.Module)
	if err != nil {
		return nil, err
	}
	if s.dry.Active() {
		s.wouldWrite(p)
		nodes, err := s.nodesOf(ctx, s.db, set)
		if err != nil {
			return nil, err
		}
		return &Moved{Element: key, From: tr.From, To: tr.To, Count: len(set), At: p.at, By: p.actor, Evidence: ev, Nodes: nodes}, nil
	}
	seq, held, err := s.applyTransition(ctx, p, tr, el, set, ev, perNode)
	if err != nil {
		return nil, err
	}
	return &Moved{Element: key, From: tr.From, To: tr.To, Seq: seq, Count: len(set), At: p.at, By: p.actor, Evidence: ev, Nodes: held}, nil
}

// checkClock refuses a change timed before the last event of what it
// moves.
func (s *Store) checkClock(ctx context.Context, set []*Element, now time.Time) error {
	var late *Element
	for _, e := range set {
		if e.LastAt.After(now) && (late == nil || e.LastAt.After(late.LastAt)) {
			late = e
		}
	}
	if late == nil {
		return nil
	}
	who := "?"
	if last, err := s.lastEvent(ctx, s.db, late.Key); err == nil && last != nil {
		who = last.Actor
	}
	return &ClockError{Element: late.Key, At: now, Last: late.LastAt, LastActor: who}
}

// evidenceFor verifies the evidence the transition needs, and refuses
// evidence it does not. perNode maps each moving node to its baseline.
func (s *Store) evidenceFor(ctx context.Context, tr Transition, el *Element, set []*Element, m Move, p *Policy, now time.Time) ([]Evidence, map[string]Evidence, error) {
	refuse := func(n Need, format string, args ...any) error {
		return &EvidenceError{Element: el.Key, Need: n, Detail: fmt.Sprintf(format, args...)}
	}
	switch {
	case m.SAT != "" && !tr.Requires(NeedSAT):
		return nil, nil, refuse(NeedSAT, "%s → %s needs no SAT bundle: it is installed → commissioned that does", tr.From, tr.To)
	case len(m.Baselines) > 0 && !tr.Requires(NeedBaseline):
		return nil, nil, refuse(NeedBaseline, "%s → %s needs no baseline: it is commissioned → provisioned that does", tr.From, tr.To)
	case m.Replacement != "" && !tr.Requires(NeedReplacement):
		return nil, nil, refuse(NeedReplacement, "%s → %s swaps nothing: a replacement serial goes with → rma", tr.From, tr.To)
	}
	var out []Evidence
	var perNode map[string]Evidence
	if tr.Requires(NeedSAT) {
		ev, err := s.gateEvidence(ctx, el, set, m.recorded)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, ev...)
	}
	if tr.Requires(NeedBaseline) {
		var err error
		perNode, err = s.baselinesFor(ctx, el, set, m.Baselines, now)
		if err != nil {
			return nil, nil, err
		}
		for _, k := range sortedKeys(perNode) {
			out = append(out, perNode[k])
		}
	}
	if tr.Requires(NeedReplacement) {
		if err := s.checkReplacement(ctx, el, m.Replacement); err != nil {
			return nil, nil, err
		}
		out = append(out, Evidence{Kind: NeedReplacement, Serial: m.Replacement, Removed: el.Serial})
	}
	return out, perNode, nil
}

func (s *Store) checkReplacement(ctx context.Context, el *Element, serial string) error {
	refuse := func(format string, args ...any) error {
		return &EvidenceError{Element: el.Key, Need: NeedReplacement, Detail: fmt.Sprintf(format, args...)}
	}
	switch {
	case strings.TrimSpace(serial) == "":
		return refuse("→ rma needs the serial of the replacement fitted in its place (--replacement SERIAL)")
	case serial == el.Serial:
		return refuse("the replacement's serial %s is the serial already in the slot", serial)
	}
	var at string
	err := s.db.QueryRowContext(ctx, s.q("SELECT key FROM elements WHERE serial = ?"), serial).Scan(&at)
	if err == nil {
		return refuse("serial %s is fitted at %s: a part is in one slot at a time (move it out of there first)", serial, at)
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return s.wrap(err)
	}
	return nil
}

// nodeOf is the node (compute tray) an element is or sits in, among
// the elements known by key; "" none.
func nodeOf(e *Element, byKey map[string]*Element, parentKind func(string) string) string {
	if e.Kind == "compute" {
		return e.Key
	}
	if e.Parent != "" && parentKind(e.Parent) == "compute" {
		return e.Parent
	}
	return ""
}

// baselinesFor checks that every node that moves (itself, or a part of
// it) has a baseline among files, of its serial now, taken after its
// last swap and not after now; a baseline of a node that does not move
// is refused too.
func (s *Store) baselinesFor(ctx context.Context, el *Element, set []*Element, files []string, now time.Time) (map[string]Evidence, error) {
	refuse := func(format string, args ...any) error {
		return &EvidenceError{Element: el.Key, Need: NeedBaseline, Detail: fmt.Sprintf(format, args...)}
	}
	byKey := map[string]*Element{}
	for _, e := range set {
		byKey[e.Key] = e
	}
	kinds := map[string]string{}
	parentKind := func(k string) string {
		if e, ok := byKey[k]; ok {
			return e.Kind
		}
		if kind, ok := kinds[k]; ok {
			return kind
		}
		pe, _ := s.element(ctx, s.db, k)
		if pe != nil {
			kinds[k] = pe.Kind
		}
		return kinds[k]
	}
	need := map[string]bool{}
	for _, e := range set {
		if n := nodeOf(e, byKey, parentKind); n != "" {
			need[n] = true
		}
	}
	given := map[string]Evidence{}
	for _, f := range files {
		b, digest, err := ReadBaseline(f)
		if err != nil {
			return nil, refuse("%v", err)
		}
		key, err := s.Resolve(ctx, b.Node)
		if err != nil {
			return nil, refuse("baseline %s: node %q: %v", f, b.Node, err)
		}
		if _, dup := given[key]; dup {
			return nil, refuse("two baselines of %s", key)
		}
		if !need[key] {
			return nil, refuse("baseline %s is of %s, which does not move with %s", f, key, el.Key)
		}
		node, err := s.element(ctx, s.db, key)
		if err != nil {
			return nil, err
		}
		swapped, err := s.lastSwap(ctx, key)
		if err != nil {
			return nil, err
		}
		switch {
		case !b.Passed:
			return nil, refuse("the baseline of %s (%s) did not pass", key, f)
		case node.Serial == "":
			return nil, refuse("the store has no serial for %s: import the as-built inventory first (sat lifecycle import)", key)
		case b.Serial != node.Serial:
			return nil, refuse("the baseline of %s (%s) was taken on serial %s, but %s holds %s now", key, f, b.Serial, key, node.Serial)
		case b.Taken.After(now):
			return nil, refuse("the baseline of %s (%s) was taken at %s, after now (%s)", key, f, fmtTime(b.Taken), fmtTime(now))
		case b.Taken.Before(swapped):
			return nil, refuse("the baseline of %s (%s) was taken at %s, before its last swap (%s): burn it in again", key, f, fmtTime(b.Taken), fmtTime(swapped))
		}
		given[key] = Evidence{Kind: NeedBaseline, Ref: f, Digest: digest, Node: key, Serial: b.Serial, Taken: stamp(b.Taken)}
	}
	var missing []string
	for n := range need {
		if _, ok := given[n]; !ok {
			missing = append(missing, n)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		list := missing
		more := ""
		if len(list) > 5 {
			list, more = list[:5], fmt.Sprintf(" and %d more", len(missing)-5)
		}
		return nil, refuse("commissioned → provisioned needs the burn-in baseline of each node that moves (--baseline FILE): none for %s%s", strings.Join(list, ", "), more)
	}
	return given, nil
}

// lastSwap is when a serial last changed in the node or its parts.
func (s *Store) lastSwap(ctx context.Context, node string) (time.Time, error) {
	var at sql.NullInt64
	err := s.db.QueryRowContext(ctx, s.q(`SELECT max(at) FROM events WHERE (element = ? OR element IN (SELECT key FROM elements WHERE parent = ?))
		AND serial <> prev_serial AND kind IN ('asbuilt', 'transition')`), node, node).Scan(&at)
	if err != nil {
		return time.Time{}, s.wrap(err)
	}
	return fromMicros(at.Int64), nil
}

// applyTransition writes a prepared transition in one transaction: the
// element only if it is still at the version it was prepared against,
// what moves with it only if none of it changed meanwhile.
func (s *Store) applyTransition(ctx context.Context, p *prepared, tr Transition, el *Element, set []*Element, ev []Evidence, perNode map[string]Evidence) (int64, []string, error) {
	tx, err := s.beginWrite(ctx)
	if err != nil {
		return 0, nil, err
	}
	defer tx.Rollback()
	if err := s.recheckPolicy(ctx, tx, p, tr.Name(), el.Module); err != nil {
		return 0, nil, err
	}
	if err := s.lockUnchanged(ctx, tx, el, set, tr.From); err != nil {
		return 0, nil, err
	}
	serial := el.Serial
	if tr.Requires(NeedReplacement) {
		serial = p.st.Replacement
	}
	res, err := tx.ExecContext(ctx, s.q("UPDATE elements SET state = ?, since = ?, last_at = ?, version = version + 1, serial = ? WHERE key = ? AND version = ? AND state = ?"),
		string(tr.To), micros(p.at), micros(p.at), serial, el.Key, el.Version, string(tr.From))
	if err != nil {
		if uniqueViolation(err) {
			return 0, nil, &EvidenceError{Element: el.Key, Need: NeedReplacement, Detail: fmt.Sprintf("serial %s was fitted elsewhere meanwhile", serial)}
		}
		return 0, nil, s.wrap(err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return 0, nil, s.conflict(ctx, tx, el)
	}
	if tr.Requires(NeedReplacement) {
		if err := s.recordSwap(ctx, tx, el, serial); err != nil {
			return 0, nil, err
		}
	}
	seq, err := s.insertEvent(ctx, tx, eventRow{at: p.at, element: el.Key, kind: EvTransition, prevState: tr.From, state: tr.To, since: p.at,
		prevSerial: el.Serial, serial: serial, actor: p.actor, reason: p.st.Reason, policy: p.policy, evidence: ev, statement: p.statement, signature: p.signature})
	if err != nil {
		return 0, nil, err
	}
	rest := set[1:]
	if err := s.moveRest(ctx, tx, p, tr, rest, seq, ev, perNode); err != nil {
		return 0, nil, err
	}
	held, err := s.stateHolds(ctx, tx, p, tr, set, seq)
	if err != nil {
		return 0, nil, err
	}
	if err := s.seal(ctx, tx, p.auth); err != nil {
		return 0, nil, err
	}
	if s.hook != nil {
		s.hook("transition")
	}
	if err := tx.Commit(); err != nil {
		return 0, nil, s.wrap(err)
	}
	s.stampSoon()
	return seq, held, nil
}

// recheckPolicy checks the change again inside its transaction when the
// policy changed after it was prepared.
func (s *Store) recheckPolicy(ctx context.Context, tx *sql.Tx, p *prepared, action, module string) error {
	pv, err := s.currentPolicy(ctx, tx)
	if err != nil {
		return err
	}
	if pv.Version == p.policy {
		return nil
	}
	if _, err := verifyStatement(pv.P, []byte(p.statement), p.signature); err != nil {
		return err
	}
	if err := pv.P.may(p.actor, action, module); err != nil {
		return err
	}
	p.policy = pv.Version
	return nil
}

// lockUnchanged locks what a change writes (PostgreSQL: row locks;
// SQLite's transaction holds the write lock already) and checks that
// none of it changed since the change was prepared (and, from not "",
// that it is all still in state from).
func (s *Store) lockUnchanged(ctx context.Context, tx *sql.Tx, el *Element, set []*Element, from State) error {
	lock := ""
	if s.engine == Postgres {
		lock = " FOR UPDATE"
	}
	for chunk := range chunks(set, 500) {
		keys := make([]any, len(chunk))
		want := map[string]*Element{}
		for i, e := range chunk {
			keys[i] = e.Key
			want[e.Key] = e
		}
		rows, err := tx.QueryContext(ctx, s.q("SELECT key, version, state FROM elements WHERE key IN ("+placeholders(len(keys))+")"+lock), keys...)
		if err != nil {
			return s.wrap(err)
		}
		changed := ""
		for rows.Next() {
			var k, st string
			var v int64
			if err := rows.Scan(&k, &v, &st); err != nil {
				rows.Close()
				return s.wrap(err)
			}
			if w := want[k]; w.Version != v || (from != "" && State(st) != from) {
				if changed == "" || k == el.Key {
					changed = k
				}
			}
			delete(want, k)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return s.wrap(err)
		}
		if changed == "" {
			for k := range want {
				changed = k // gone: cannot happen, elements are never deleted
			}
		}
		if changed != "" {
			e := el
			for _, c := range chunk {
				if c.Key == changed {
					e = c
				}
			}
			return s.conflict(ctx, tx, e)
		}
	}
	return nil
}

// conflict explains a lost race on e.
func (s *Store) conflict(ctx context.Context, tx *sql.Tx, e *Element) error {
	now, err := s.element(ctx, tx, e.Key)
	if err != nil || now == nil {
		return &ConflictError{Element: e.Key, Expected: e.State, Version: e.Version}
	}
	by := "?"
	if last, err := s.lastEvent(ctx, tx, e.Key); err == nil && last != nil {
		by = last.Actor
	}
	return &ConflictError{Element: e.Key, Expected: e.State, Version: e.Version, Now: now.State, NowVersion: now.Version, Since: now.LastAt, By: by}
}

// moveRest moves what moves with the element, in chunks: the rows, then
// their events (caused by the transition's event seq).
func (s *Store) moveRest(ctx context.Context, tx *sql.Tx, p *prepared, tr Transition, rest []*Element, seq int64, ev []Evidence, perNode map[string]Evidence) error {
	var shared []Evidence
	for _, e := range ev {
		if e.Kind != NeedBaseline {
			shared = append(shared, e)
		}
	}
	parentKind := map[string]string{}
	for _, e := range rest {
		parentKind[e.Key] = e.Kind
	}
	for chunk := range chunks(rest, 400) {
		keys := make([]any, 0, len(chunk)+5)
		keys = append(keys, string(tr.To), micros(p.at), micros(p.at))
		for _, e := range chunk {
			keys = append(keys, e.Key)
		}
		keys = append(keys, string(tr.From))
		res, err := tx.ExecContext(ctx, s.q("UPDATE elements SET state = ?, since = ?, last_at = ?, version = version + 1 WHERE key IN ("+placeholders(len(chunk))+") AND state = ?"), keys...)
		if err != nil {
			return s.wrap(err)
		}
		if n, _ := res.RowsAffected(); n != int64(len(chunk)) {
			return &ConflictError{Element: chunk[0].Key, Expected: tr.From}
		}
		rows := make([]eventRow, len(chunk))
		for i, e := range chunk {
			evs := shared
			node := ""
			if e.Kind == "compute" {
				node = e.Key
			} else if parentKind[e.Parent] == "compute" || (e.Parent != "" && perNode[e.Parent].Node != "") {
				node = e.Parent
			}
			if b, ok := perNode[node]; ok {
				evs = append(append([]Evidence(nil), shared...), b)
			}
			rows[i] = eventRow{at: p.at, element: e.Key, kind: EvTransition, prevState: tr.From, state: tr.To, since: p.at, prevSerial: e.Serial, serial: e.Serial,
				actor: p.actor, reason: p.st.Reason, cause: seq, policy: p.policy, evidence: evs}
		}
		if err := s.insertEvents(ctx, tx, rows); err != nil {
			return err
		}
	}
	return nil
}

func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

// chunks yields s in pieces of at most n.
func chunks[T any](s []T, n int) func(func([]T) bool) {
	return func(yield func([]T) bool) {
		for len(s) > 0 {
			k := min(n, len(s))
			if !yield(s[:k]) {
				return
			}
			s = s[k:]
		}
	}
}
