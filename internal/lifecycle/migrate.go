package lifecycle

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/seamdc/seam/internal/version"
)

// Migrations are SQL files, one directory per engine, each named
// NNNN_what.sql; both engines have the same versions. They only go
// forward: there is no down. seam_schema records each one applied, with
// the seam that applied it.
//
//go:embed migrations
var migrationFS embed.FS

type migration struct {
	Version int
	Name    string
	SQL     string
}

// migrations lists an engine's migrations in order.
func migrations(engine string) ([]migration, error) {
	dir := path.Join("migrations", engine)
	entries, err := migrationFS.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, e := range entries {
		num, name, ok := strings.Cut(strings.TrimSuffix(e.Name(), ".sql"), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || !strings.HasSuffix(e.Name(), ".sql") {
			return nil, fmt.Errorf("migration %s: want NNNN_name.sql", e.Name())
		}
		b, err := migrationFS.ReadFile(path.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		out = append(out, migration{Version: v, Name: name, SQL: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	for i, m := range out {
		if m.Version != i+1 {
			return nil, fmt.Errorf("migrations of %s: version %d where %d belongs", engine, m.Version, i+1)
		}
	}
	return out, nil
}

// SchemaVersion is the schema version this seam writes.
func SchemaVersion() int {
	ms, _ := migrations(SQLite)
	return len(ms)
}

const schemaTable = `CREATE TABLE IF NOT EXISTS seam_schema (
  version    INTEGER PRIMARY KEY,
  name       TEXT NOT NULL,
  applied_at BIGINT NOT NULL,
  tool       TEXT NOT NULL
)`

// migrate refuses a store of a newer schema and applies the migrations
// it lacks, all in one transaction that holds the engine's write lock
// (SQLite: BEGIN IMMEDIATE; PostgreSQL: an advisory lock): two clients
// opening an old store at once migrate it once, and a migration that
// fails leaves the store as it was.
func (s *Store) migrate(ctx context.Context) error {
	ms, err := migrations(s.engine)
	if err != nil {
		return err
	}
	latest := len(ms)
	cur, tool, err := s.schemaVersion(ctx)
	if err != nil {
		return err
	}
	if err := s.refuseNewer(cur, tool, latest); err != nil || cur == latest {
		return err
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return s.wrap(err)
	}
	defer tx.Rollback()
	if s.engine == Postgres {
		if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(7395060315082512461)"); err != nil {
			return s.wrap(err)
		}
	}
	if _, err := tx.ExecContext(ctx, schemaTable); err != nil {
		return s.migrateError(err, cur, latest)
	}
	if err := tx.QueryRowContext(ctx, "SELECT coalesce(max(version), 0), coalesce(max(tool), '') FROM seam_schema").Scan(&cur, &tool); err != nil {
		return s.wrap(err)
	}
	if err := s.refuseNewer(cur, tool, latest); err != nil {
		return err
	}
	for _, m := range ms[cur:] {
		if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
			return s.migrateError(fmt.Errorf("migration %04d_%s: %w", m.Version, m.Name, err), cur, latest)
		}
		if _, err := tx.ExecContext(ctx, s.q("INSERT INTO seam_schema (version, name, applied_at, tool) VALUES (?, ?, ?, ?)"),
			m.Version, m.Name, micros(s.clock()), "seam "+version.Version); err != nil {
			return s.wrap(err)
		}
	}
	return s.wrap(tx.Commit())
}

// schemaVersion reads the store's schema version (0: none yet) and the
// seam that wrote its latest migration.
func (s *Store) schemaVersion(ctx context.Context) (int, string, error) {
	var exists bool
	var err error
	if s.engine == Postgres {
		err = s.db.QueryRowContext(ctx, "SELECT to_regclass('seam_schema') IS NOT NULL").Scan(&exists)
	} else {
		var n int
		err = s.db.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'seam_schema'").Scan(&n)
		exists = n > 0
	}
	if err != nil {
		return 0, "", s.openError(err)
	}
	if !exists {
		return 0, "", s.emptyOrForeign(ctx)
	}
	var v int
	var tool string
	err = s.db.QueryRowContext(ctx, "SELECT version, tool FROM seam_schema ORDER BY version DESC LIMIT 1").Scan(&v, &tool)
	if err == sql.ErrNoRows {
		return 0, "", nil
	}
	if err != nil {
		return 0, "", s.wrap(err)
	}
	return v, tool, nil
}

// emptyOrForeign refuses a database that has tables but no seam_schema:
// it is something else, not a lifecycle store to migrate into.
func (s *Store) emptyOrForeign(ctx context.Context) error {
	var n int
	q := "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
	if s.engine == Postgres {
		q = "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()"
	}
	if err := s.db.QueryRowContext(ctx, q).Scan(&n); err != nil {
		return s.openError(err)
	}
	if n > 0 {
		return &StoreError{Store: s.name, Kind: StoreSchema, Err: fmt.Errorf("the database has %d table(s) but no seam_schema: it is not a lifecycle store (give an empty database, or another file)", n)}
	}
	return nil
}

func (s *Store) refuseNewer(cur int, tool string, latest int) error {
	if cur <= latest {
		return nil
	}
	return &StoreError{Store: s.name, Kind: StoreNewer, Err: fmt.Errorf(
		"the store is at schema version %d (written by %s); this seam (%s) knows versions up to %d: use that seam or a newer one — a store is never migrated back, and an older seam must not write a newer schema",
		cur, tool, version.Version, latest)}
}

// migrateError says what to do when the session may not migrate.
func (s *Store) migrateError(err error, cur, latest int) error {
	w := s.wrap(err)
	if _, denied := w.(*AccessError); denied {
		return &StoreError{Store: s.name, Kind: StoreSchema, Err: fmt.Errorf("the store is at schema version %d and this seam needs %d, but this session's role may not change the schema: open it once as the store's owner (%v)", cur, latest, err)}
	}
	return w
}

// openError is the first error a store gives: it cannot be reached or
// read at all.
func (s *Store) openError(err error) error {
	w := s.wrap(err)
	if se, ok := w.(*StoreError); ok && se.Kind == StoreGone {
		return &StoreError{Store: s.name, Kind: StoreOpen, Err: fmt.Errorf("cannot reach it: %v", err)}
	}
	return w
}

// checkSchema is a dry run's migrate: it reads the schema version and
// refuses a store this seam would have to migrate (a dry run changes
// nothing) or cannot read.
func (s *Store) checkSchema(ctx context.Context) error {
	ms, err := migrations(s.engine)
	if err != nil {
		return err
	}
	cur, tool, err := s.schemaVersion(ctx)
	if err != nil {
		return err
	}
	if err := s.refuseNewer(cur, tool, len(ms)); err != nil {
		return err
	}
	if cur < len(ms) {
		return &StoreError{Store: s.name, Kind: StoreSchema, Err: fmt.Errorf("the store is at schema version %d and this seam migrates it to %d when it opens it: a dry run changes nothing, so run one command without --dry-run first", cur, len(ms))}
	}
	return nil
}
