package lifecycle_test

import (
	"context"
	"errors"
	"net/url"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/lifecycle"
)

// What only PostgreSQL has: real database roles, TLS, a server that can
// go away in the middle of a transaction (last: it restarts the
// server); and the two engines' schemas agree. TestSuite runs them on
// its server.
var postgresOnly = []struct {
	name string
	run  func(t *testing.T, e *engine)
}{
	{"roles", testRoles},
	{"schemas agree", testSchemasAgree},
	{"gone", testGone},
}

// as is cfg for another login role of the same database.
func loginAs(cfg lifecycle.Config, role, password string) lifecycle.Config {
	u, _ := url.Parse(cfg.Store)
	u.User = url.User(role)
	cfg.Store = u.String()
	cfg.Password = "env:SEAM_LC_ROLE_PW"
	cfg.LookupEnv = func(k string) (string, bool) {
		if k == "SEAM_LC_ROLE_PW" {
			return password, true
		}
		return os.LookupEnv(k)
	}
	return cfg
}

// A member who is a database role changes the store as that role: the
// server records the role of the session, refuses an event that claims
// another, and a role granted only seam_read cannot write. The session
// is encrypted when the server offers TLS.
func testRoles(t *testing.T, e *engine) {
	ctx := context.Background()
	s, cfg := newStore(t, e, newClock(), map[string]lifecycle.Member{
		"db:alice": {Roles: []string{"vendor"}},
		"db:bob":   {Roles: []string{"vendor"}},
	})
	e.pg.Exec("postgres", "DROP ROLE IF EXISTS alice", "DROP ROLE IF EXISTS bob")
	e.pg.CreateRole("alice", "alice-secret", "seam_write")
	e.pg.CreateRole("bob", "bob-secret", "seam_read")

	alice, err := lifecycle.Open(ctx, loginAs(cfg, "alice", "alice-secret"))
	require.NoError(t, err)
	defer alice.Close()
	info, err := alice.Info(ctx)
	require.NoError(t, err)
	assert.True(t, info.TLS, "the server offers TLS: the session uses it")
	assert.Equal(t, "alice", info.DBUser)

	_, err = alice.Transition(ctx, lifecycle.DBRoleAuth(), lifecycle.Move{Element: "ma/r01", To: lifecycle.Built, Reason: "built, by alice's role"})
	require.NoError(t, err)
	_, hist, err := alice.History(ctx, "ma/r01", time.Time{})
	require.NoError(t, err)
	last := hist[len(hist)-1]
	assert.Equal(t, "db:alice", last.Actor)
	assert.Equal(t, "alice", last.DBUser)
	assert.False(t, last.Signed)

	// a key's change through alice's session: the key is the actor, the
	// session is recorded
	_, err = alice.Transition(ctx, as(t, "odm"), lifecycle.Move{Element: "ma/r02", To: lifecycle.Built, Reason: "built, signed by odm"})
	require.NoError(t, err)
	_, hist, err = alice.History(ctx, "ma/r02", time.Time{})
	require.NoError(t, err)
	last = hist[len(hist)-1]
	assert.Equal(t, "ssh:odm", last.Actor)
	assert.Equal(t, "alice", last.DBUser)
	assert.True(t, last.Signed)

	// the server refuses an event that claims another role, and any
	// rewrite of the history
	_, err = alice.DB().ExecContext(ctx, `INSERT INTO events (at, element, kind, prev_state, state, since, prev_serial, serial, actor, db_user, reason, cause, policy, evidence, statement, signature, data)
		VALUES (1, 'ma', 'transition', 'design', 'built', 1, '', '', 'db:bob', '', 'forged', 0, 1, '', '', '', '')`)
	assert.ErrorContains(t, err, "a database role writes only as itself")
	_, err = alice.DB().ExecContext(ctx, "UPDATE events SET reason = 'x'")
	assert.ErrorContains(t, err, "permission denied")
	_, err = alice.DB().ExecContext(ctx, "DELETE FROM events")
	assert.ErrorContains(t, err, "permission denied")

	bob, err := lifecycle.Open(ctx, loginAs(cfg, "bob", "bob-secret"))
	require.NoError(t, err)
	defer bob.Close()
	el, err := bob.Show(ctx, "ma/r01", time.Time{})
	require.NoError(t, err, "seam_read reads")
	assert.Equal(t, lifecycle.Built, el.State)
	_, err = bob.Transition(ctx, lifecycle.DBRoleAuth(), lifecycle.Move{Element: "ma/r03", To: lifecycle.Built, Reason: "x"})
	var ae *lifecycle.AccessError
	require.True(t, errors.As(err, &ae), "%v", err)
	assert.Contains(t, err.Error(), "permission denied")
	assert.Contains(t, err.Error(), "grant the role seam_write")

	// a role that is no member may not, even with write grants
	e.pg.Exec("postgres", "DROP ROLE IF EXISTS carol")
	e.pg.CreateRole("carol", "carol-secret", "seam_write")
	carol, err := lifecycle.Open(ctx, loginAs(cfg, "carol", "carol-secret"))
	require.NoError(t, err)
	defer carol.Close()
	_, err = carol.Transition(ctx, lifecycle.DBRoleAuth(), lifecycle.Move{Element: "ma/r03", To: lifecycle.Built, Reason: "x"})
	require.True(t, errors.As(err, &ae), "%v", err)
	assert.Contains(t, err.Error(), "db:carol may not design>built: not a member")

	// a password in the URL is refused: credentials go by reference
	bad := cfg
	bad.Store = strings.Replace(cfg.Store, "seam@", "seam:hunter2@", 1)
	_, err = lifecycle.Open(ctx, bad)
	assert.ErrorContains(t, err, "the URL carries a password: give it by reference")
	assert.NotContains(t, err.Error(), "hunter2")
	checkOK(t, s)
}

// The server goes away in the middle of a transaction: the change fails
// saying so, nothing of it is written, and the store serves again once
// the server is back.
func testGone(t *testing.T, e *engine) {
	ctx := context.Background()
	s, cfg := newStore(t, e, newClock(), nil)
	before, err := s.Info(ctx)
	require.NoError(t, err)
	s.SetHook(func(string) { e.pg.Kill() })
	_, err = s.Transition(ctx, as(t, "odm"), lifecycle.Move{Element: "ma", To: lifecycle.Built, Reason: "the server dies under it"})
	var se *lifecycle.StoreError
	require.True(t, errors.As(err, &se), "%v", err)
	assert.Equal(t, lifecycle.StoreGone, se.Kind)
	assert.Contains(t, err.Error(), "nothing of it was written")
	s.SetHook(nil)

	// a backend the killed server forked can answer a moment longer on a
	// connection the pool holds: ask until the server's death shows
	for range 100 {
		if _, err = s.Show(ctx, "ma", time.Time{}); err != nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	require.True(t, errors.As(err, &se), "%v", err)
	assert.Contains(t, []string{lifecycle.StoreGone, lifecycle.StoreOpen}, se.Kind, "%v", err)

	e.pg.Restart()
	again, err := lifecycle.Open(ctx, cfg)
	require.NoError(t, err)
	defer again.Close()
	r, err := again.Check(ctx, nil)
	require.NoError(t, err)
	assert.Empty(t, r.Problems)
	info, err := again.Info(ctx)
	require.NoError(t, err)
	assert.Equal(t, before.Events, info.Events)
	el, err := s.Show(ctx, "ma", time.Time{})
	require.NoError(t, err, "the first client reconnects")
	assert.Equal(t, lifecycle.Design, el.State)
}

// Both engines' migrations make the same tables, columns and indexes.
func testSchemasAgree(t *testing.T, e *engine) {
	ctx := context.Background()
	schema := func(s *lifecycle.Store, tables, columns, indexes string) map[string][]string {
		out := map[string][]string{}
		rows, err := s.DB().QueryContext(ctx, tables)
		require.NoError(t, err)
		var names []string
		for rows.Next() {
			var n string
			require.NoError(t, rows.Scan(&n))
			names = append(names, n)
		}
		rows.Close()
		for _, n := range names {
			rows, err := s.DB().QueryContext(ctx, strings.ReplaceAll(columns, "TABLE", n))
			require.NoError(t, err)
			for rows.Next() {
				var c string
				require.NoError(t, rows.Scan(&c))
				out[n] = append(out[n], c)
			}
			rows.Close()
			sort.Strings(out[n])
		}
		rows, err = s.DB().QueryContext(ctx, indexes)
		require.NoError(t, err)
		for rows.Next() {
			var n string
			require.NoError(t, rows.Scan(&n))
			out["index"] = append(out["index"], n)
		}
		rows.Close()
		sort.Strings(out["index"])
		return out
	}
	lite, err := lifecycle.Open(ctx, lifecycle.Config{Store: t.TempDir() + "/s.db", Create: true})
	require.NoError(t, err)
	defer lite.Close()
	pg, err := lifecycle.Open(ctx, e.config(t, newClock()))
	require.NoError(t, err)
	defer pg.Close()
	a := schema(lite, "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'",
		"SELECT name FROM pragma_table_info('TABLE')",
		"SELECT name FROM sqlite_master WHERE type = 'index' AND name NOT LIKE 'sqlite_autoindex_%'")
	b := schema(pg, "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()",
		"SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = 'TABLE'",
		"SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() AND indexname NOT LIKE '%_pkey'")
	assert.Equal(t, a, b)
	assert.Len(t, a["events"], 19)
	assert.Equal(t, 5, lifecycle.SchemaVersion())
}
