package lifecycle

import (
	"context"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	"github.com/seamdc/seam/internal/tsa"
)

// RFC 3161 time-stamps: when the access policy names an authority, the
// newest seal is stamped after each write, outside the write's
// transaction and in the background, so that an authority's outage never
// blocks a change (a drain, a commissioning): a stamp that fails is
// tried again after the next write, or by sat lifecycle head, and check
// names the span no stamp covers. A stamp of a seal covers every event
// before it, through the chain.

// stampTimeout bounds one request to the authority.
const stampTimeout = 5 * time.Second

// stampSoon stamps the newest seal in the background (one at a time;
// a write while one runs makes it go again).
func (s *Store) stampSoon() {
	s.mu.Lock()
	if s.policy == nil || s.policy.P.authority() == nil {
		s.mu.Unlock()
		return
	}
	if s.stamping {
		s.stampAgain = true
		s.mu.Unlock()
		return
	}
	s.stamping = true
	s.stampWG.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.stampWG.Done()
		for {
			err := s.Stamp(context.Background())
			s.mu.Lock()
			s.stampErr = err
			again := s.stampAgain
			s.stampAgain = false
			if !again {
				s.stamping = false
				s.mu.Unlock()
				return
			}
			s.mu.Unlock()
		}
	}()
}

// Stamp time-stamps the newest seal, if the access policy names an
// authority and it is not stamped yet; it returns what the authority
// said when it could not.
func (s *Store) Stamp(ctx context.Context) error {
	pv, err := s.currentPolicy(ctx, s.db)
	if err != nil {
		return err
	}
	a := pv.P.authority()
	if a == nil {
		return nil
	}
	var head int64
	var stmt string
	err = s.db.QueryRowContext(ctx, "SELECT head, statement FROM seals WHERE head > (SELECT coalesce(max(head), 0) FROM stamps) ORDER BY head DESC LIMIT 1").Scan(&head, &stmt)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return s.wrap(err)
	}
	ctx, cancel := context.WithTimeout(ctx, stampTimeout)
	defer cancel()
	st, err := a.Stamp(ctx, []byte(stmt))
	if err != nil {
		return fmt.Errorf("lifecycle store %s: the seal of event %d is not time-stamped: %w", s.name, head, err)
	}
	_, err = s.db.ExecContext(ctx, s.q("INSERT INTO stamps (head, at, token) VALUES (?, ?, ?) ON CONFLICT (head) DO NOTHING"),
		head, micros(st.Time), base64.StdEncoding.EncodeToString(st.Token))
	return s.wrap(err)
}

// StampError is what the last background stamp said (nil: it
// succeeded, or none was tried).
func (s *Store) StampError() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stampErr
}

// waitStamps waits for a background stamp to end (Close).
func (s *Store) waitStamps() { s.stampWG.Wait() }

// checkStamps verifies every stamp against its seal and the roots of
// the authority the policy of its time names; it notes how far the
// stamps reach.
func (s *Store) checkStamps(ctx context.Context, r *CheckReport, policies map[int64]*Policy, problem func(string, ...any)) error {
	rows, err := s.db.QueryContext(ctx, `SELECT st.head, st.at, st.token, coalesce(se.statement, ''), coalesce(ev.policy, 0)
		FROM stamps st LEFT JOIN seals se ON se.head = st.head LEFT JOIN events ev ON ev.seq = st.head ORDER BY st.head`)
	if err != nil {
		return s.wrap(err)
	}
	defer rows.Close()
	for rows.Next() {
		var head, at, pol int64
		var token, stmt string
		if err := rows.Scan(&head, &at, &token, &stmt, &pol); err != nil {
			return s.wrap(err)
		}
		st, err := verifyStamp(token, stmt, policies[pol])
		if err != nil {
			problem("the time-stamp of event %d: %v", head, err)
			continue
		}
		if micros(st.Time) != at {
			problem("the time-stamp of event %d says %s, the store %s", head, fmtTime(st.Time), fmtTime(fromMicros(at)))
			continue
		}
		r.StampedHead, r.StampedAt, r.StampedBy = head, st.Time, st.Authority
	}
	if err := rows.Err(); err != nil {
		return s.wrap(err)
	}
	pv, err := s.currentPolicy(ctx, s.db)
	if err != nil {
		return err
	}
	if pv.P.authority() != nil && r.SealedHead > r.StampedHead {
		r.Notes = append(r.Notes, fmt.Sprintf("events %d–%d have no time-stamp from %s yet (it was unreachable, or the next change stamps them; sat lifecycle head tries now)",
			r.StampedHead+1, r.SealedHead, pv.P.TimeStampURL))
	}
	return nil
}

// verifyStamp checks a kept token over a seal's statement against the
// authority p names.
func verifyStamp(token, statement string, p *Policy) (*tsa.Stamp, error) {
	if statement == "" {
		return nil, errors.New("no seal has its head")
	}
	if p.authority() == nil {
		return nil, errors.New("the access policy of its time names no time-stamping authority")
	}
	der, err := base64.StdEncoding.DecodeString(token)
	if err != nil {
		return nil, fmt.Errorf("not base64: %w", err)
	}
	return tsa.Verify(der, []byte(statement), p.tsaRoots)
}
