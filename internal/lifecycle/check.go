package lifecycle

import (
	"context"
	"fmt"
	"strings"
)

// CheckReport is what Check found.
type CheckReport struct {
	Elements   int
	Events     int64
	Statements int // signed (or database-role) statements checked
	Holds      int
	Problems   []string
}

// OK reports whether nothing is wrong.
func (r *CheckReport) OK() bool { return len(r.Problems) == 0 }

// Check reads the whole store and checks that it is consistent: every
// element is what its last event says (state, since, serial), its
// version counts its changes, the holds are what their events leave,
// every change was made on a statement that verifies against the access
// policy of its time, and every event of a cascade follows one that
// does. A store a crash interrupted is consistent: a transaction is all
// or nothing.
func (s *Store) Check(ctx context.Context) (*CheckReport, error) {
	r := &CheckReport{}
	problem := func(format string, args ...any) {
		if len(r.Problems) < 100 {
			r.Problems = append(r.Problems, fmt.Sprintf(format, args...))
		} else if len(r.Problems) == 100 {
			r.Problems = append(r.Problems, "… (more problems not listed)")
		}
	}
	if err := s.checkElements(ctx, r, problem); err != nil {
		return nil, err
	}
	if err := s.checkHolds(ctx, r, problem); err != nil {
		return nil, err
	}
	if err := s.checkStatements(ctx, r, problem); err != nil {
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

// checkStatements verifies every signed statement against the policy of
// its event, and that every unsigned event follows a signed one.
func (s *Store) checkStatements(ctx context.Context, r *CheckReport, problem func(string, ...any)) error {
	policies := map[int64]*Policy{}
	prow, err := s.db.QueryContext(ctx, "SELECT version, doc FROM policies")
	if err != nil {
		return s.wrap(err)
	}
	for prow.Next() {
		var v int64
		var doc string
		if err := prow.Scan(&v, &doc); err != nil {
			prow.Close()
			return s.wrap(err)
		}
		p, err := ParsePolicy([]byte(doc))
		if err != nil {
			problem("policy version %d: %v", v, err)
			continue
		}
		policies[v] = p
	}
	prow.Close()
	rows, err := s.db.QueryContext(ctx, "SELECT seq, at, element, kind, actor, db_user, cause, policy, statement, signature FROM events WHERE cause = 0 ORDER BY seq")
	if err != nil {
		return s.wrap(err)
	}
	defer rows.Close()
	for rows.Next() {
		var seq, at, cause, pol int64
		var el, kind, actor, dbUser, stmt, sig string
		if err := rows.Scan(&seq, &at, &el, &kind, &actor, &dbUser, &cause, &pol, &stmt, &sig); err != nil {
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
		if s.engine == Postgres && strings.HasPrefix(actor, "db:") && actor != "db:"+dbUser {
			problem("event %d by %s was written by the database role %s", seq, actor, dbUser)
		}
	}
	return s.wrap(rows.Err())
}
