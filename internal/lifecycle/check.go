package lifecycle

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"
)

// CheckReport is what Check found.
type CheckReport struct {
	Elements   int
	Events     int64
	Statements int // signed (or database-role) statements checked
	Seals      int
	Holds      int
	// Head is the newest event; SealedHead the newest a seal covers,
	// sealed at SealedAt; StampedHead the newest an authority's
	// time-stamp covers, at StampedAt, by StampedBy.
	Head, SealedHead, StampedHead int64
	SealedAt, StampedAt           time.Time
	StampedBy                     string
	// Anchored: the check was given an anchor, so a history cut back to
	// before it is found; without one, what came after the last sealed
	// head could have been removed unseen.
	Anchored bool
	Problems []string
	// Notes are what is true but not wrong: events from before the
	// chain, writes no key sealed.
	Notes []string
}

// collect appends problems to list, at most 100 and a line that says
// there are more.
func collect(list *[]string) func(string, ...any) {
	return func(format string, args ...any) {
		if len(*list) < 100 {
			*list = append(*list, fmt.Sprintf(format, args...))
		} else if len(*list) == 100 {
			*list = append(*list, "… (more problems not listed)")
		}
	}
}

// checkRows checks the elements, holds and statements (everything but
// the chain).
func (s *Store) checkRows(ctx context.Context, r *CheckReport, policies map[int64]*Policy, digests map[int64]policyDoc, problem func(string, ...any)) error {
	if err := s.checkElements(ctx, r, problem); err != nil {
		return err
	}
	if err := s.checkHolds(ctx, r, problem); err != nil {
		return err
	}
	return s.checkStatements(ctx, r, policies, digests, problem)
}

// OK reports whether nothing is wrong.
func (r *CheckReport) OK() bool { return len(r.Problems) == 0 }

// Check reads the whole store and checks that it is consistent: every
// element is what its last event says (state, since, serial), its
// version counts its changes, the holds are what their events leave,
// every change was made on a statement that verifies against the access
// policy of its time, and every event of a cascade follows one that
// does; every statement says what its event holds (its reason, its
// policy's digest); the hash chain over every event recomputes, and
// each seal's signature holds over it (chain.go). With an anchor (a
// head kept outside the store), a history cut back is found too. A
// store a crash interrupted is consistent: a transaction is all or
// nothing.
func (s *Store) Check(ctx context.Context, anchor *Anchor) (*CheckReport, error) {
	r := &CheckReport{}
	if _, err := s.storeInfo(ctx); err != nil {
		return nil, err
	}
	problem := collect(&r.Problems)
	policies, digests, err := s.loadPolicies(ctx, problem)
	if err != nil {
		return nil, err
	}
	// the chain is one pass over every event's every column, the rest
	// other passes: on two cores they take turns less when apart (SQLite
	// reads on two connections at once in WAL mode; so does PostgreSQL)
	var chainProblems []string
	chainDone := make(chan error, 1)
	go func() { chainDone <- s.checkChain(ctx, r, policies, anchor, collect(&chainProblems)) }()
	err = s.checkRows(ctx, r, policies, digests, problem)
	if chainErr := <-chainDone; err == nil {
		err = chainErr
	}
	if err != nil {
		return nil, err
	}
	for _, p := range chainProblems {
		problem("%s", p)
	}
	if err := s.checkStamps(ctx, r, policies, problem); err != nil {
		return nil, err
	}
	if err := s.checkIssues(ctx, problem); err != nil {
		return nil, err
	}
	if err := s.checkSamples(ctx, problem); err != nil {
		return nil, err
	}
	return r, nil
}

func (s *Store) checkElements(ctx context.Context, r *CheckReport, problem func(string, ...any)) error {
	rows, err := s.db.QueryContext(ctx, `SELECT el.key, el.state, el.since, el.serial, el.version, el.last_at, a.n, a.changes, a.last, ev.seq, ev.state, ev.since, ev.serial
		FROM elements el
		LEFT JOIN (SELECT element, max(seq) AS seq, count(*) AS n, sum(CASE WHEN kind IN ('created', 'transition', 'asbuilt') THEN 1 ELSE 0 END) AS changes, max(at) AS last
			FROM events GROUP BY element) a ON a.element = el.key
		LEFT JOIN events ev ON ev.seq = a.seq`)
	if err != nil {
		return s.wrap(err)
	}
	defer rows.Close()
	for rows.Next() {
		var key, state, serial string
		var since, version, lastAt int64
		var n, changes, last, seq, evSince *int64
		var evState, evSerial *string
		if err := rows.Scan(&key, &state, &since, &serial, &version, &lastAt, &n, &changes, &last, &seq, &evState, &evSince, &evSerial); err != nil {
			return s.wrap(err)
		}
		r.Elements++
		if seq == nil {
			problem("%s has no events", key)
			continue
		}
		r.Events += *n
		if *evState != state || *evSince != since || *evSerial != serial {
			problem("%s is %s since %s with serial %q, but its last event (%d) says %s since %s with serial %q",
				key, state, fmtTime(fromMicros(since)), serial, *seq, *evState, fmtTime(fromMicros(*evSince)), *evSerial)
		}
		if *changes != version {
			problem("%s is at version %d, but has %d change events", key, version, *changes)
		}
		if *last != lastAt {
			problem("%s: its last event is at %s, but it says %s", key, fmtTime(fromMicros(*last)), fmtTime(fromMicros(lastAt)))
		}
	}
	if err := rows.Err(); err != nil {
		return s.wrap(err)
	}
	var total int64
	if err := s.db.QueryRowContext(ctx, "SELECT count(*) FROM events").Scan(&total); err != nil {
		return s.wrap(err)
	}
	if total != r.Events {
		problem("%d event(s) are of no element", total-r.Events)
		r.Events = total
	}
	return nil
}

func (s *Store) checkHolds(ctx context.Context, r *CheckReport, problem func(string, ...any)) error {
	rows, err := s.db.QueryContext(ctx, "SELECT seq, element, kind, data FROM events WHERE kind IN ('hold_set', 'hold_released') ORDER BY seq")
	if err != nil {
		return s.wrap(err)
	}
	want := map[string]Hold{}
	for rows.Next() {
		var seq int64
		var el, kind, data string
		if err := rows.Scan(&seq, &el, &kind, &data); err != nil {
			rows.Close()
			return s.wrap(err)
		}
		var h Hold
		if err := jsonUnmarshal(data, &h); err != nil {
			problem("event %d: %v", seq, err)
			continue
		}
		h = h.normalize()
		id := h.Node + "\x00" + string(h.Owner)
		if kind == EvHoldSet {
			want[id] = h
		} else {
			delete(want, id)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return s.wrap(err)
	}
	have, err := s.holdsOf(ctx, s.db, "")
	if err != nil {
		return err
	}
	r.Holds = len(have)
	for _, h := range have {
		id := h.Node + "\x00" + string(h.Owner)
		if _, ok := want[id]; !ok {
			problem("hold %s on %s (by %s) has no event that set it", h.Owner, h.Node, h.By)
		}
		delete(want, id)
	}
	for _, h := range want {
		problem("hold %s on %s (by %s) was set and never released, but is not held", h.Owner, h.Node, h.By)
	}
	return nil
}

// policyDoc is a stored policy's digest and the event that set it.
type policyDoc struct {
	digest string
	event  int64
}

// loadPolicies reads every version of the access policy, with its
// digest and the event that set it.
func (s *Store) loadPolicies(ctx context.Context, problem func(string, ...any)) (map[int64]*Policy, map[int64]policyDoc, error) {
	policies, digests := map[int64]*Policy{}, map[int64]policyDoc{}
	rows, err := s.db.QueryContext(ctx, "SELECT version, event, doc FROM policies")
	if err != nil {
		return nil, nil, s.wrap(err)
	}
	defer rows.Close()
	for rows.Next() {
		var v, ev int64
		var doc string
		if err := rows.Scan(&v, &ev, &doc); err != nil {
			return nil, nil, s.wrap(err)
		}
		sum := sha256.Sum256([]byte(doc))
		digests[v] = policyDoc{digest: "sha256:" + hex.EncodeToString(sum[:]), event: ev}
		p, err := ParsePolicy([]byte(doc))
		if err != nil {
			problem("policy version %d: %v", v, err)
			continue
		}
		policies[v] = p
	}
	return policies, digests, s.wrap(rows.Err())
}

// checkStatements verifies every signed statement against the policy of
// its event, that it says what its event holds, that every policy is the
// one a statement set, and that every unsigned event follows a signed
// one.
func (s *Store) checkStatements(ctx context.Context, r *CheckReport, policies map[int64]*Policy, digests map[int64]policyDoc, problem func(string, ...any)) error {
	setBy := map[int64]string{} // event seq → the policy digest its statement carries
	defer func() {
		for v, d := range digests {
			if got, ok := setBy[d.event]; !ok {
				problem("policy version %d was set by event %d, which is no signed init or access change", v, d.event)
			} else if got != d.digest {
				problem("policy version %d is not the policy its statement (event %d) signed: its digest is %s, the statement's %s", v, d.event, d.digest, got)
			}
		}
	}()
	rows, err := s.db.QueryContext(ctx, "SELECT seq, at, element, kind, actor, db_user, reason, cause, policy, statement, signature FROM events WHERE cause = 0 ORDER BY seq")
	if err != nil {
		return s.wrap(err)
	}
	defer rows.Close()
	for rows.Next() {
		var seq, at, cause, pol int64
		var el, kind, actor, dbUser, reason, stmt, sig string
		if err := rows.Scan(&seq, &at, &el, &kind, &actor, &dbUser, &reason, &cause, &pol, &stmt, &sig); err != nil {
			return s.wrap(err)
		}
		if stmt == "" {
			problem("event %d (%s of %s by %s) has no statement and follows none", seq, kind, el, actor)
			continue
		}
		r.Statements++
		p := policies[pol]
		if p == nil {
			problem("event %d names policy version %d, which the store does not have", seq, pol)
			continue
		}
		st, err := verifyStatement(p, []byte(stmt), sig)
		if err != nil {
			problem("event %d (%s of %s by %s): %v", seq, kind, el, actor, err)
			continue
		}
		if st.By != actor || st.Element != el || st.At != stamp(fromMicros(at)) {
			problem("event %d is not what its statement says (by %s, of %s, at %s)", seq, st.By, st.Element, st.At)
		}
		if st.Reason != reason {
			problem("event %d (%s of %s by %s): its reason %q is not the signed one, %q", seq, kind, el, actor, reason, st.Reason)
		}
		if st.Action == ActInit || st.Action == ActAccess {
			setBy[seq] = st.Digest
		}
		if s.engine == Postgres && strings.HasPrefix(actor, "db:") && actor != "db:"+dbUser {
			problem("event %d by %s was written by the database role %s", seq, actor, dbUser)
		}
	}
	return s.wrap(rows.Err())
}
