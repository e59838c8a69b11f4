package lifecycle_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/seamdc/seam/internal/lifecycle"
	"github.com/seamdc/seam/internal/tsa"
	"github.com/seamdc/seam/internal/tsa/tsatest"
)

// unguard drops the append-only guards of events and seals, as the
// holder of a SQLite file or a PostgreSQL administrator can.
func unguard(t *testing.T, e *engine, s *lifecycle.Store) {
	t.Helper()
	qs := []string{"DROP TRIGGER events_no_update", "DROP TRIGGER events_no_delete", "DROP TRIGGER seals_no_update", "DROP TRIGGER seals_no_delete"}
	if e.name == lifecycle.Postgres {
		qs = []string{"ALTER TABLE events DISABLE TRIGGER USER", "ALTER TABLE seals DISABLE TRIGGER USER"}
	}
	for _, q := range qs {
		_, err := s.DB().ExecContext(context.Background(), q)
		require.NoError(t, err, q)
	}
}

// sqlExec runs a query with ? placeholders on either engine.
func sqlExec(t *testing.T, e *engine, s *lifecycle.Store, query string, args ...any) {
	t.Helper()
	if e.name == lifecycle.Postgres {
		n := 0
		q := []byte{}
		for _, c := range []byte(query) {
			if c == '?' {
				n++
				q = append(q, fmt.Sprintf("$%d", n)...)
				continue
			}
			q = append(q, c)
		}
		query = string(q)
	}
	_, err := s.DB().ExecContext(context.Background(), query, args...)
	require.NoError(t, err, query)
}

func problems(t *testing.T, s *lifecycle.Store, anchor *lifecycle.Anchor) []string {
	t.Helper()
	r, err := s.Check(context.Background(), anchor)
	require.NoError(t, err)
	return r.Problems
}

// A policy edited in place (a member and a signer added, who then moves
// a module) is not the policy the signed statement set.
func testPolicyEdited(t *testing.T, e *engine) {
	ctx := context.Background()
	s, cfg := newStore(t, e, newClock(), nil)
	checkOK(t, s)
	p := policy(t, nil)
	p.Members["ssh:stranger"] = lifecycle.Member{Roles: []string{"vendor"}}
	p.AllowedSigners += fmt.Sprintf("stranger namespaces=\"seam-lifecycle\" %s", ssh.MarshalAuthorizedKey(team(t)["stranger"].pub))
	_, err := lifecycle.ParsePolicy(p.Marshal())
	require.NoError(t, err)
	sqlExec(t, e, s, "UPDATE policies SET doc = ? WHERE version = 1", string(p.Marshal()))
	again, err := lifecycle.Open(ctx, cfg)
	require.NoError(t, err)
	defer again.Close()
	_, err = again.Transition(ctx, as(t, "stranger"), lifecycle.Move{Element: "ma", To: lifecycle.Built, Reason: "the new member"})
	require.NoError(t, err, "the edited policy lets the stranger write: check must find it")
	got := problems(t, again, nil)
	require.NotEmpty(t, got)
	assert.Contains(t, got[0], "policy version 1 is not the policy its statement (event 1) signed")
}

// A signed event's reason edited: its statement says otherwise, and
// the chain breaks there.
func testReasonEdited(t *testing.T, e *engine) {
	ctx := context.Background()
	s, _ := newStore(t, e, newClock(), nil)
	_, err := s.Transition(ctx, as(t, "odm"), lifecycle.Move{Element: "ma/r01", To: lifecycle.Built, Reason: "built at the ODM"})
	require.NoError(t, err)
	checkOK(t, s)
	unguard(t, e, s)
	sqlExec(t, e, s, "UPDATE events SET reason = 'built, and tested' WHERE kind = 'transition' AND cause = 0")
	got := problems(t, s, nil)
	require.Len(t, got, 2, "%q", got)
	assert.Regexp(t, `^event \d+ \(transition of ma/r01 by ssh:odm\): its reason "built, and tested" is not the signed one, "built at the ODM"$`, got[0])
	assert.Regexp(t, `^event \d+ \(transition of ma/r01 by ssh:odm\) is not what the chain says was written`, got[1])
}

// A derived (unsigned) event edited together with its element, and the
// chain recomputed after it: only the seal, signed by a key, shows it.
func testDerivedEdited(t *testing.T, e *engine) {
	ctx := context.Background()
	s, _ := newStore(t, e, newClock(), nil)
	_, err := s.Transition(ctx, as(t, "odm"), lifecycle.Move{Element: "ma/r01", To: lifecycle.Built, Reason: "built"})
	require.NoError(t, err)
	checkOK(t, s)
	unguard(t, e, s)
	sqlExec(t, e, s, "UPDATE events SET state = 'commissioned', reason = 'SAT passed' WHERE element = 'ma/r01/compute-03' AND cause <> 0 AND state = 'built'")
	sqlExec(t, e, s, "UPDATE elements SET state = 'commissioned' WHERE key = 'ma/r01/compute-03'")
	got := problems(t, s, nil)
	require.Len(t, got, 1, "%q", got)
	assert.Regexp(t, `^event \d+ \(transition of ma/r01/compute-03 by ssh:odm\) is not what the chain says was written`, got[0])

	require.NoError(t, lifecycle.Rechain(ctx, s))
	got = problems(t, s, nil)
	require.Len(t, got, 1, "%q", got)
	assert.Regexp(t, `^seal of event \d+ by ssh:odm: the history up to event \d+ is not what was sealed`, got[0])
}

// The tail of the history cut off, with its seals, and the elements,
// versions and sequence put back as they were: the store reads as
// consistent, and only a head kept outside finds it.
func testRollback(t *testing.T, e *engine) {
	ctx := context.Background()
	s, _ := newStore(t, e, newClock(), nil)
	_, err := s.Transition(ctx, as(t, "odm"), lifecycle.Move{Element: "ma/r01", To: lifecycle.Built, Reason: "built"})
	require.NoError(t, err)
	before, err := s.Head(ctx)
	require.NoError(t, err)
	type row struct {
		key, state       string
		since, last, ver int64
	}
	var saved []row // what the second move changes
	rows, err := s.DB().QueryContext(ctx, "SELECT key, state, since, last_at, version FROM elements WHERE key = 'ma/r02' OR key LIKE 'ma/r02/%'")
	require.NoError(t, err)
	for rows.Next() {
		var r row
		require.NoError(t, rows.Scan(&r.key, &r.state, &r.since, &r.last, &r.ver))
		saved = append(saved, r)
	}
	rows.Close()
	_, err = s.Transition(ctx, as(t, "odm"), lifecycle.Move{Element: "ma/r02", To: lifecycle.Built, Reason: "built"})
	require.NoError(t, err)
	head, err := s.Head(ctx)
	require.NoError(t, err)
	anchor := filepath.Join(t.TempDir(), "head.json")
	require.NoError(t, lifecycle.WriteAnchor(anchor, head))
	kept, err := lifecycle.ReadAnchor(anchor)
	require.NoError(t, err)
	checkOK(t, s)

	unguard(t, e, s)
	sqlExec(t, e, s, "DELETE FROM events WHERE seq > ?", before.Head)
	sqlExec(t, e, s, "DELETE FROM seals WHERE head > ?", before.Head)
	for _, r := range saved {
		sqlExec(t, e, s, "UPDATE elements SET state = ?, since = ?, last_at = ?, version = ? WHERE key = ?", r.state, r.since, r.last, r.ver, r.key)
	}
	if e.name == lifecycle.Postgres {
		sqlExec(t, e, s, "SELECT setval('events_seq_seq', ?)", before.Head)
	} else {
		sqlExec(t, e, s, "UPDATE sqlite_sequence SET seq = ? WHERE name = 'events'", before.Head)
	}
	r, err := s.Check(ctx, nil)
	require.NoError(t, err)
	assert.Empty(t, r.Problems, "without an anchor a rollback to a sealed head cannot be seen")
	assert.False(t, r.Anchored)
	assert.Equal(t, before.Head, r.SealedHead, "check says up to where it can prove")
	got := problems(t, s, kept)
	require.Len(t, got, 1, "%q", got)
	assert.Equal(t, fmt.Sprintf("the store no longer holds event %d, the head anchored at %s by ssh:odm: its history was cut back (a rollback)", head.Head, head.At), got[0])

	// a head of another store is refused, not compared
	other, _ := newStore(t, e, newClock(), map[string]lifecycle.Member{}) // made anew: its own identity
	got = problems(t, other, kept)
	require.Len(t, got, 1)
	assert.Contains(t, got[0], "the anchor is of store "+head.Store)
}

// With an authority in the policy every seal is time-stamped after its
// write, offline-verifiable against the authority's root; an outage
// blocks no change and check names the span no stamp covers; a token
// from an authority the site does not trust is refused.
func testTimeStamps(t *testing.T, e *engine) {
	ctx := context.Background()
	ours, theirs := tsatest.Start(t, "site authority"), tsatest.Start(t, "another authority")
	p := policy(t, nil)
	p.TimeStampURL, p.TimeStampRoots = ours.URL, string(ours.RootPEM)
	p, err := lifecycle.ParsePolicy(p.Marshal())
	require.NoError(t, err)
	clk := newClock()
	s, err := lifecycle.Init(ctx, e.config(t, clk), as(t, "ops"), exampleGraph(t), p)
	require.NoError(t, err)
	defer s.Close()
	_, err = s.Transition(ctx, as(t, "odm"), lifecycle.Move{Element: "ma/r01", To: lifecycle.Built, Reason: "built"})
	require.NoError(t, err)
	require.NoError(t, s.Stamp(ctx))
	r, err := s.Check(ctx, nil)
	require.NoError(t, err)
	require.Empty(t, r.Problems)
	assert.Equal(t, r.SealedHead, r.StampedHead, "every seal stamped")
	assert.Contains(t, r.StampedBy, "site authority")
	assert.Positive(t, ours.Requests.Load())

	// the anchor carries the stamp; check verifies it offline
	head, err := s.Head(ctx)
	require.NoError(t, err)
	require.NotEmpty(t, head.TimeStamp)
	r, err = s.Check(ctx, head)
	require.NoError(t, err)
	require.Empty(t, r.Problems)
	assert.Contains(t, strings.Join(r.Notes, "\n"), fmt.Sprintf("the anchored head (event %d) existed by ", head.Head))

	// the authority is down: the change goes through, check says what is unstamped
	ours.Down.Store(true)
	_, err = s.Transition(ctx, as(t, "odm"), lifecycle.Move{Element: "ma/r02", To: lifecycle.Built, Reason: "built"})
	require.NoError(t, err)
	assert.ErrorContains(t, s.Stamp(ctx), "503 Service Unavailable")
	r, err = s.Check(ctx, nil)
	require.NoError(t, err)
	require.Empty(t, r.Problems)
	assert.Less(t, r.StampedHead, r.SealedHead)
	assert.Contains(t, strings.Join(r.Notes, "\n"), fmt.Sprintf("events %d–%d have no time-stamp from %s yet", r.StampedHead+1, r.SealedHead, ours.URL))

	// a stamp from an authority the site does not trust, put in the store
	newest, err := s.Head(ctx)
	require.NoError(t, err)
	theirRoots, err := tsa.ParseRoots("theirs", theirs.RootPEM)
	require.NoError(t, err)
	forged, err := (&tsa.Authority{URL: theirs.URL, Roots: theirRoots}).Stamp(ctx, []byte(newest.Statement))
	require.NoError(t, err)
	sqlExec(t, e, s, "INSERT INTO stamps (head, at, token) VALUES (?, ?, ?)", newest.Head, forged.Time.UnixMicro(), base64.StdEncoding.EncodeToString(forged.Token))
	got := problems(t, s, nil)
	require.Len(t, got, 1, "%q", got)
	assert.Contains(t, got[0], fmt.Sprintf(`the time-stamp of event %d: the stamp is signed by "CN=another authority time-stamping,O=seam tests", which is not an authority the site trusts`, newest.Head))
}
