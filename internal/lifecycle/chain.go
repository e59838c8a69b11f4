package lifecycle

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"os"
	"strings"

	"github.com/seamdc/seam/internal/atomicfile"
)

// The history is a hash chain: each event's hash covers the hash of the
// event before it (by seq) and every column of its own but seq, so an
// event edited, removed from the middle or moved changes every hash
// after it. Anyone holding the file can recompute a chain, so each
// write ends with a seal: a statement signed by the writer's SSH key
// naming the newest event and its hash (Statement with Action seal,
// Version the head's seq, Digest its hash). A rewritten history needs
// the signers' keys. What a seal cannot show is a tail cut off with its
// seals: for that, the newest head is kept outside the store (an
// Anchor, sat lifecycle head) and given to Check.

// ActSeal is a seal's action.
const ActSeal = "seal"

// chainLock is the PostgreSQL advisory lock a transaction that may
// append events holds from its start to its commit, so that the chain
// grows in the order of seq; it is the ledger's lock (a ledger session
// is such a transaction). SQLite's write lock (BEGIN IMMEDIATE) does the
// same on one file.
const chainLock = ledgerLock

// chainGenesis is the "hash before" the first event.
var chainGenesis = sha256.Sum256([]byte("seam.lifecycle.chain/v1"))

// chainRow is what an event's hash covers, in the columns' order.
type chainRow struct {
	at                                        int64
	element, kind, prevState, state           string
	since                                     int64
	prevSerial, serial, actor, dbUser, reason string
	cause, policy                             int64
	evidence, statement, signature, data      string
}

// sum is the row's hash after prev: every field length-prefixed, so
// that no two rows share an encoding.
func (r *chainRow) sum(h hash.Hash, prev []byte) []byte {
	h.Reset()
	h.Write(prev)
	var buf [binary.MaxVarintLen64]byte
	num := func(v int64) { h.Write(buf[:binary.PutVarint(buf[:], v)]) }
	str := func(s string) {
		h.Write(buf[:binary.PutUvarint(buf[:], uint64(len(s)))])
		h.Write([]byte(s))
	}
	num(r.at)
	for _, s := range []string{r.element, r.kind, r.prevState, r.state} {
		str(s)
	}
	num(r.since)
	for _, s := range []string{r.prevSerial, r.serial, r.actor, r.dbUser, r.reason} {
		str(s)
	}
	num(r.cause)
	num(r.policy)
	for _, s := range []string{r.evidence, r.statement, r.signature, r.data} {
		str(s)
	}
	return h.Sum(nil)
}

// chainRow is what r will be once written by a session whose role is
// dbUser (PostgreSQL's trigger stamps it; SQLite's is "").
func (r *eventRow) chainRow(dbUser string) chainRow {
	return chainRow{at: micros(r.at), element: r.element, kind: r.kind, prevState: string(r.prevState), state: string(r.state), since: micros(r.since),
		prevSerial: r.prevSerial, serial: r.serial, actor: r.actor, dbUser: dbUser, reason: r.reason, cause: r.cause, policy: r.policy,
		evidence: r.evidenceJSON(), statement: r.statement, signature: r.signature, data: r.data}
}

// beginWrite starts a transaction that may append events: on
// PostgreSQL it takes the chain's lock first, before any row lock, so
// that writers queue in one order and never deadlock.
func (s *Store) beginWrite(ctx context.Context) (*sql.Tx, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, s.wrap(err)
	}
	if s.engine == Postgres {
		if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock($1)", int64(chainLock)); err != nil {
			tx.Rollback()
			return nil, s.wrap(err)
		}
	}
	return tx, nil
}

// chainHead returns the hash of the newest event: the one the next
// event follows (tx began with beginWrite). A store upgraded from
// before the chain has events without one: the chain through them is
// computed once, here.
func (s *Store) chainHead(ctx context.Context, tx *sql.Tx) ([]byte, error) {
	var stored string
	err := tx.QueryRowContext(ctx, "SELECT hash FROM events ORDER BY seq DESC LIMIT 1").Scan(&stored)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return chainGenesis[:], nil
	case err != nil:
		return nil, s.wrap(err)
	case stored != "":
		return hex.DecodeString(stored)
	}
	head := chainGenesis[:]
	err = s.eachChained(ctx, tx, func(_ int64, r *chainRow, got string) error {
		head = r.sum(sha256.New(), head)
		return nil
	})
	return head, err
}

// eachChained calls f with every event in seq order, as its hash
// covers it, and the hash stored with it.
func (s *Store) eachChained(ctx context.Context, q querier, f func(seq int64, r *chainRow, stored string) error) error {
	rows, err := q.QueryContext(ctx, "SELECT seq, at, element, kind, prev_state, state, since, prev_serial, serial, actor, db_user, reason, cause, policy, evidence, statement, signature, data, hash FROM events ORDER BY seq")
	if err != nil {
		return s.wrap(err)
	}
	defer rows.Close()
	var r chainRow
	var seq int64
	var stored string
	for rows.Next() {
		if err := rows.Scan(&seq, &r.at, &r.element, &r.kind, &r.prevState, &r.state, &r.since, &r.prevSerial, &r.serial, &r.actor, &r.dbUser,
			&r.reason, &r.cause, &r.policy, &r.evidence, &r.statement, &r.signature, &r.data, &stored); err != nil {
			return s.wrap(err)
		}
		if err := f(seq, &r, stored); err != nil {
			return err
		}
	}
	return s.wrap(rows.Err())
}

// chain sets the hashes of rows, to be appended in this order after
// the chain's head.
func (s *Store) chain(ctx context.Context, tx *sql.Tx, rows []eventRow) error {
	head, err := s.chainHead(ctx, tx)
	if err != nil {
		return err
	}
	user, err := s.sessionUser(ctx)
	if err != nil {
		return err
	}
	h := sha256.New()
	for i := range rows {
		cr := rows[i].chainRow(user)
		head = cr.sum(h, head)
		rows[i].hash = hex.EncodeToString(head)
	}
	return nil
}

// sessionUser is the role PostgreSQL's trigger stamps on every event
// this store writes ("" for SQLite).
func (s *Store) sessionUser(ctx context.Context) (string, error) {
	if s.engine != Postgres {
		return "", nil
	}
	s.mu.Lock()
	u := s.dbUser
	s.mu.Unlock()
	if u != "" {
		return u, nil
	}
	if err := s.db.QueryRowContext(ctx, "SELECT session_user").Scan(&u); err != nil {
		return "", s.wrap(err)
	}
	s.mu.Lock()
	s.dbUser = u
	s.mu.Unlock()
	return u, nil
}

// seal ends a write that appended events: a statement over the newest
// event's hash, signed as a (a database role's seal is unsigned: the
// role is recorded, but an administrator could rewrite it). A write
// that appended nothing seals nothing.
func (s *Store) seal(ctx context.Context, tx *sql.Tx, a Auth) error {
	var head int64
	var hash string
	err := tx.QueryRowContext(ctx, "SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1").Scan(&head, &hash)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return s.wrap(err)
	}
	var sealed int64
	if err := tx.QueryRowContext(ctx, "SELECT coalesce(max(head), 0) FROM seals").Scan(&sealed); err != nil {
		return s.wrap(err)
	}
	if sealed >= head {
		return nil
	}
	pv, err := s.currentPolicy(ctx, tx)
	if err != nil {
		return err
	}
	si, err := s.storeInfo(ctx)
	if err != nil {
		return err
	}
	actor, err := s.actor(ctx, a, pv.P)
	if err != nil {
		return err
	}
	at := s.clock()
	st := &Statement{Type: StatementType, Store: si.ID, Site: si.Site, Action: ActSeal, Element: si.Site, Version: head,
		Reason: fmt.Sprintf("events %d–%d", sealed+1, head), Digest: "sha256:" + hash, By: actor, At: stamp(at)}
	sig, err := signStatement(a, st)
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, s.q("INSERT INTO seals (head, at, actor, statement, signature) VALUES (?, ?, ?, ?, ?)"),
		head, micros(at), actor, string(st.Marshal()), sig)
	return s.wrap(err)
}

// checkChain recomputes the chain and checks every seal against it and
// against the policy of its time; with an anchor, that the store still
// holds the anchored head. It returns the newest sealed head.
func (s *Store) checkChain(ctx context.Context, r *CheckReport, policies map[int64]*Policy, anchor *Anchor, problem func(string, ...any)) error {
	hashes := map[int64]chained{} // the seals' heads (and the anchor's) as recomputed
	heads, err := s.sealHeads(ctx)
	if err != nil {
		return err
	}
	head := chainGenesis[:]
	h := sha256.New()
	var last, lastAt, lastHashed, unhashed int64
	err = s.eachChained(ctx, s.db, func(seq int64, row *chainRow, stored string) error {
		head = row.sum(h, head)
		got := hex.EncodeToString(head)
		switch {
		case stored == "" && lastHashed > 0:
			problem("event %d (%s of %s by %s) has no hash, yet follows events that have: it was written by something other than seam", seq, row.kind, row.element, row.actor)
		case stored == "":
			unhashed++
		case stored != got:
			problem("event %d (%s of %s by %s) is not what the chain says was written: it was edited, or an event before it removed or changed", seq, row.kind, row.element, row.actor)
			head, _ = hex.DecodeString(stored) // go on from what is there: find each edit once
			got = stored
		}
		if _, ok := heads[seq]; ok || (anchor != nil && seq == anchor.Head) {
			hashes[seq] = chained{hash: got, policy: row.policy}
		}
		if stored != "" {
			lastHashed = seq
		}
		last, lastAt = seq, row.at
		return nil
	})
	if err != nil {
		return err
	}
	if unhashed > 0 && lastHashed > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("%d event(s) were written before the store had a chain (schema 4); the seals after them cover them", unhashed))
	}
	var sealedHead, coveredHead int64 // the newest seal that holds; the newest of any
	rows, err := s.db.QueryContext(ctx, "SELECT head, at, actor, statement, signature FROM seals ORDER BY head")
	if err != nil {
		return s.wrap(err)
	}
	defer rows.Close()
	for rows.Next() {
		var sh, at int64
		var actor, stmt, sig string
		if err := rows.Scan(&sh, &at, &actor, &stmt, &sig); err != nil {
			return s.wrap(err)
		}
		r.Seals++
		coveredHead = max(coveredHead, sh)
		if err := s.checkSeal(sh, at, actor, stmt, sig, hashes, policies); err != nil {
			problem("seal of event %d by %s: %v", sh, actor, err)
			continue
		}
		if strings.HasPrefix(actor, "db:") {
			r.Notes = append(r.Notes, fmt.Sprintf("the write ending at event %d was made as the database role %s: no key seals it, and a database administrator could rewrite it", sh, actor))
		}
		sealedHead = sh
		r.SealedAt = fromMicros(at)
	}
	if err := rows.Err(); err != nil {
		return s.wrap(err)
	}
	r.Head, r.SealedHead = last, sealedHead
	switch {
	case last > coveredHead && lastHashed <= coveredHead:
		r.Notes = append(r.Notes, fmt.Sprintf("events %d–%d were written before the store had a chain, and no change since has sealed them: the next one will", coveredHead+1, last))
	case last > coveredHead:
		problem("events after %d (the newest at %s) are sealed by no one: written by something other than seam, or the seal removed", coveredHead, fmtTime(fromMicros(lastAt)))
	}
	if anchor != nil {
		s.checkAnchor(r, anchor, hashes, policies, problem)
	}
	return nil
}

// sealHeads lists the events seals name.
func (s *Store) sealHeads(ctx context.Context) (map[int64]struct{}, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT head FROM seals")
	if err != nil {
		return nil, s.wrap(err)
	}
	defer rows.Close()
	out := map[int64]struct{}{}
	for rows.Next() {
		var h int64
		if err := rows.Scan(&h); err != nil {
			return nil, s.wrap(err)
		}
		out[h] = struct{}{}
	}
	return out, s.wrap(rows.Err())
}

// checkSeal verifies one seal: its statement signed by a key the policy
// of its time allows (or a database role's, unsigned), naming this
// store, its head and the head's hash as recomputed.
func (s *Store) checkSeal(head, at int64, actor, stmt, sig string, hashes map[int64]chained, policies map[int64]*Policy) error {
	ev, ok := hashes[head]
	if !ok {
		return fmt.Errorf("event %d is not in the store: the history was cut", head)
	}
	p := policies[ev.policy]
	if p == nil {
		return fmt.Errorf("event %d names policy version %d, which the store does not have", head, ev.policy)
	}
	st, err := verifyStatement(p, []byte(stmt), sig)
	if err != nil {
		return err
	}
	si := s.info
	switch {
	case st.Action != ActSeal || st.Version != head || st.By != actor || st.At != stamp(fromMicros(at)):
		return fmt.Errorf("its statement (%s of event %d by %s at %s) is not this seal's", st.Action, st.Version, st.By, st.At)
	case si != nil && st.Store != si.ID:
		return fmt.Errorf("it seals store %s, not this one (%s)", st.Store, si.ID)
	case st.Digest != "sha256:"+ev.hash:
		return fmt.Errorf("the history up to event %d is not what was sealed: an event up to it was edited, added or removed", head)
	}
	return nil
}

// chained is an event as the recomputed chain has it.
type chained struct {
	hash   string
	policy int64 // the policy version in force when it was written
}

// Anchor is a sealed head kept outside the store (sat lifecycle head):
// with it, Check finds a history cut back to before it.
type Anchor struct {
	Format    string `json:"format"`
	Store     string `json:"store"`
	Site      string `json:"site"`
	Head      int64  `json:"head"`
	Hash      string `json:"hash"`
	At        string `json:"at"`
	By        string `json:"by"`
	Statement string `json:"statement"`
	Signature string `json:"signature,omitempty"`
	// TimeStamp is the authority's RFC 3161 token over the seal
	// (base64 DER), when it has one: proof the head existed by then.
	TimeStamp string `json:"time_stamp,omitempty"`
}

// AnchorFormat names the anchor's format.
const AnchorFormat = "seam.lifecycle.anchor/v1"

// Head is the store's newest seal, to keep outside it.
func (s *Store) Head(ctx context.Context) (*Anchor, error) {
	si, err := s.storeInfo(ctx)
	if err != nil {
		return nil, err
	}
	var head, at int64
	var actor, stmt, sig string
	err = s.db.QueryRowContext(ctx, "SELECT head, at, actor, statement, signature FROM seals ORDER BY head DESC LIMIT 1").Scan(&head, &at, &actor, &stmt, &sig)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, &StoreError{Store: s.name, Kind: StoreSchema, Err: errors.New("the store has no seal yet: make one change with this seam first")}
	}
	if err != nil {
		return nil, s.wrap(err)
	}
	st, err := ParseStatement([]byte(stmt))
	if err != nil {
		return nil, fmt.Errorf("lifecycle store %s: seal of event %d: %w", s.name, head, err)
	}
	var token string
	err = s.db.QueryRowContext(ctx, s.q("SELECT token FROM stamps WHERE head = ?"), head).Scan(&token)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, s.wrap(err)
	}
	return &Anchor{Format: AnchorFormat, Store: si.ID, Site: si.Site, Head: head, Hash: strings.TrimPrefix(st.Digest, "sha256:"),
		At: stamp(fromMicros(at)), By: actor, Statement: stmt, Signature: sig, TimeStamp: token}, nil
}

// checkAnchor: the store holds the anchored head, as it was.
func (s *Store) checkAnchor(r *CheckReport, a *Anchor, hashes map[int64]chained, policies map[int64]*Policy, problem func(string, ...any)) {
	r.Anchored = true
	if si := s.info; si != nil && a.Store != si.ID {
		problem("the anchor is of store %s (site %s), not this one (%s): give this store's anchor", a.Store, a.Site, si.ID)
		return
	}
	got, ok := hashes[a.Head]
	switch {
	case !ok:
		problem("the store no longer holds event %d, the head anchored at %s by %s: its history was cut back (a rollback)", a.Head, a.At, a.By)
		return
	case got.hash != a.Hash:
		problem("event %d is not the head anchored at %s by %s: the history up to it was rewritten", a.Head, a.At, a.By)
		return
	}
	if a.TimeStamp == "" {
		return
	}
	if sealed, err := ParseStatement([]byte(a.Statement)); err != nil || sealed.Version != a.Head || sealed.Digest != "sha256:"+a.Hash {
		problem("the anchor's statement is not the seal of its head (event %d)", a.Head)
		return
	}
	st, err := verifyStamp(a.TimeStamp, a.Statement, policies[got.policy])
	if err != nil {
		problem("the anchor's time-stamp: %v", err)
		return
	}
	r.Notes = append(r.Notes, fmt.Sprintf("the anchored head (event %d) existed by %s: time-stamped by %s", a.Head, fmtTime(st.Time), st.Authority))
}

// ReadAnchor reads an anchor file strictly.
func ReadAnchor(path string) (*Anchor, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("anchor: %w", err)
	}
	var a Anchor
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return nil, fmt.Errorf("anchor %s: %w (want what sat lifecycle head --out writes)", path, err)
	}
	if a.Format != AnchorFormat {
		return nil, fmt.Errorf("anchor %s: format %q, want %q (what sat lifecycle head --out writes)", path, a.Format, AnchorFormat)
	}
	if _, err := hex.DecodeString(a.Hash); err != nil || len(a.Hash) != 64 || a.Head <= 0 {
		return nil, fmt.Errorf("anchor %s: head %d with hash %q: not a sealed head", path, a.Head, a.Hash)
	}
	return &a, nil
}

// WriteAnchor writes a to path whole.
func WriteAnchor(path string, a *Anchor) error {
	b, err := json.MarshalIndent(a, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.Write(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("anchor: %w", err)
	}
	return nil
}
