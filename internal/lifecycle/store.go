package lifecycle

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite" // the embedded engine, pure Go

	"github.com/seamdc/seam/internal/binding"
	"github.com/seamdc/seam/internal/dryrun"
)

// Engines.
const (
	SQLite   = "sqlite"
	Postgres = "postgres"
)

// Config says which store to open and how.
type Config struct {
	// Store is a SQLite file (PATH, or sqlite:PATH) or a PostgreSQL URL
	// (postgres://USER@HOST:PORT/DB?sslmode=…, without a password). A
	// PostgreSQL client prefers TLS: it gets it when the server offers
	// it (sslmode=prefer, libpq's default), and checks the server's
	// certificate with sslmode=verify-full and sslrootcert=FILE.
	Store string
	// Password is PostgreSQL's password by reference: env:NAME or
	// file:PATH (as in site bindings); "" none (a .pgpass, a
	// certificate, or trust).
	Password  string
	LookupEnv func(string) (string, bool) // default os.LookupEnv
	// Create makes a new SQLite file when there is none (Init does);
	// otherwise a missing file is an error, not an empty store.
	Create bool
	// BusyTimeout is how long a SQLite writer waits for another before
	// it reports the store locked (default 5 s); LockTimeout the same
	// for a PostgreSQL row or table lock (default 5 s).
	BusyTimeout time.Duration
	// Now is the clock (default time.Now); times are kept to the
	// microsecond.
	Now func() time.Time
	// DryRun opens the store read only (SQLite: no file written, not
	// even its -wal and -shm when no one has it open; PostgreSQL: a
	// read-only session) and without migrating it; every change is
	// prepared, checked and signed as it would be, then recorded here
	// ("would write to the lifecycle store …") instead of written.
	DryRun *dryrun.Recorder
}

// Store is an open lifecycle store.
type Store struct {
	db     *sql.DB
	engine string
	name   string // for messages: the file, or user@host:port/db
	now    func() time.Time
	// hook, if set, runs inside a write transaction after its writes
	// and before its commit (tests kill the process there).
	hook func(what string)
	// dry records a dry run's changes (nil: none, they are written).
	dry *dryrun.Recorder

	mu     sync.Mutex
	info   *storeInfo
	policy *policyVersion
	dbUser string // PostgreSQL's session_user, once read

	// the background time-stamp of the newest seal (stamp.go)
	stamping, stampAgain bool
	stampErr             error
	stampWG              sync.WaitGroup
}

type storeInfo struct {
	ID, Site string
	Created  time.Time
}

// Open opens a store and brings its schema up to this version of seam
// (forward only); a store of a newer version is refused.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	s := &Store{now: cfg.Now, dry: cfg.DryRun}
	if s.now == nil {
		s.now = time.Now
	}
	var err error
	switch engine, rest := parseStore(cfg.Store); engine {
	case SQLite:
		err = s.openSQLite(rest, cfg)
	default:
		err = s.openPostgres(rest, cfg)
	}
	if err != nil {
		return nil, err
	}
	if s.dry.Active() {
		if err := s.checkSchema(ctx); err != nil {
			s.db.Close()
			return nil, err
		}
		return s, nil
	}
	if err := s.migrate(ctx); err != nil {
		s.db.Close()
		return nil, err
	}
	return s, nil
}

// parseStore tells a PostgreSQL URL from a SQLite file.
func parseStore(store string) (engine, rest string) {
	switch {
	case strings.HasPrefix(store, "postgres://"), strings.HasPrefix(store, "postgresql://"):
		return Postgres, store
	case strings.HasPrefix(store, "sqlite:"):
		return SQLite, strings.TrimPrefix(store, "sqlite:")
	}
	return SQLite, store
}

func (s *Store) openSQLite(path string, cfg Config) error {
	if path == "" {
		return &StoreError{Store: "(none)", Kind: StoreOpen, Err: errors.New("no store given: a SQLite file or a postgres:// URL")}
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return &StoreError{Store: path, Kind: StoreOpen, Err: err}
	}
	s.engine, s.name = SQLite, path
	mode := "rw"
	if _, err := os.Stat(abs); err != nil {
		if !cfg.Create || cfg.DryRun.Active() {
			return &StoreError{Store: path, Kind: StoreOpen, Err: fmt.Errorf("no lifecycle store there (%v): make one with sat lifecycle init", errors.Unwrap(err))}
		}
		mode = "rwc"
	}
	if cfg.DryRun.Active() {
		// read only; immutable when no one has it open (no -wal), so
		// that not even the -wal and -shm files are made
		mode = "ro"
		if st, err := os.Stat(abs + "-wal"); err != nil || st.Size() == 0 {
			if _, err := os.Stat(abs + "-shm"); err != nil {
				mode = "ro&immutable=1"
			}
		}
	}
	busy := cfg.BusyTimeout
	if busy <= 0 {
		busy = 5 * time.Second
	}
	esc := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(abs)
	dsn := fmt.Sprintf("file:%s?mode=%s&_busy_timeout=%d&_journal_mode=WAL&_synchronous=FULL&_foreign_keys=1&_txlock=immediate",
		esc, mode, busy.Milliseconds())
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return &StoreError{Store: path, Kind: StoreOpen, Err: err}
	}
	s.db = db
	return nil
}

func (s *Store) openPostgres(raw string, cfg Config) error {
	u, err := url.Parse(raw)
	if err != nil {
		return &StoreError{Store: "postgres", Kind: StoreOpen, Err: fmt.Errorf("not a URL: %v", err)}
	}
	if _, has := u.User.Password(); has {
		u.User = url.User(u.User.Username())
		return &StoreError{Store: u.Redacted(), Kind: StoreOpen, Err: errors.New("the URL carries a password: give it by reference instead (--db-password env:NAME or file:PATH)")}
	}
	if u.Query().Has("password") {
		return &StoreError{Store: u.Host + u.Path, Kind: StoreOpen, Err: errors.New("the URL carries a password: give it by reference instead (--db-password env:NAME or file:PATH)")}
	}
	s.engine, s.name = Postgres, u.User.Username()+"@"+u.Host+u.Path
	pc, err := pgx.ParseConfig(raw)
	if err != nil {
		return &StoreError{Store: s.name, Kind: StoreOpen, Err: err}
	}
	if cfg.Password != "" {
		lookup := cfg.LookupEnv
		if lookup == nil {
			lookup = os.LookupEnv
		}
		pw, err := binding.Secret{Ref: cfg.Password, What: "password of " + s.name}.Resolve(lookup)
		if err != nil {
			return &StoreError{Store: s.name, Kind: StoreOpen, Err: err}
		}
		pc.Password = pw
	}
	lock := cfg.BusyTimeout
	if lock <= 0 {
		lock = 5 * time.Second
	}
	if pc.RuntimeParams == nil {
		pc.RuntimeParams = map[string]string{}
	}
	pc.RuntimeParams["lock_timeout"] = fmt.Sprintf("%dms", lock.Milliseconds())
	if cfg.DryRun.Active() {
		pc.RuntimeParams["default_transaction_read_only"] = "on" // the server refuses any write
	}
	pc.RuntimeParams["application_name"] = "seam-lifecycle"
	// the store's queries are short index probes: compiling them (JIT)
	// costs more than it saves, a third of an as-of of the inventory
	pc.RuntimeParams["jit"] = "off"
	if pc.ConnectTimeout == 0 {
		pc.ConnectTimeout = 10 * time.Second
	}
	s.db = stdlib.OpenDB(*pc)
	s.db.SetMaxOpenConns(8)
	return nil
}

// Close closes the store.
func (s *Store) Close() error {
	s.waitStamps()
	return s.db.Close()
}

// Engine is SQLite or Postgres.
func (s *Store) Engine() string { return s.engine }

// Name names the store in messages: its file, or user@host:port/db.
func (s *Store) Name() string { return s.name }

// DB is the store's database, for tests and tools that read it.
func (s *Store) DB() *sql.DB { return s.db }

// Info is what a store says about itself.
type Info struct {
	Engine, Name  string
	ID, Site      string
	Created       time.Time
	Schema        int    // the schema version
	TLS           bool   // PostgreSQL: the session is encrypted
	DBUser        string // PostgreSQL: the session's role
	Elements      int
	Events        int64
	Policy        int64 // the access policy's version
	ServerVersion string
}

// Info reads what the store says about itself.
func (s *Store) Info(ctx context.Context) (Info, error) {
	in := Info{Engine: s.engine, Name: s.name}
	si, err := s.storeInfo(ctx)
	if err != nil {
		return in, err
	}
	in.ID, in.Site, in.Created = si.ID, si.Site, si.Created
	if err := s.db.QueryRowContext(ctx, "SELECT max(version) FROM seam_schema").Scan(&in.Schema); err != nil {
		return in, s.wrap(err)
	}
	if err := s.db.QueryRowContext(ctx, "SELECT count(*) FROM elements").Scan(&in.Elements); err != nil {
		return in, s.wrap(err)
	}
	if err := s.db.QueryRowContext(ctx, "SELECT count(*) FROM events").Scan(&in.Events); err != nil {
		return in, s.wrap(err)
	}
	if err := s.db.QueryRowContext(ctx, "SELECT coalesce(max(version), 0) FROM policies").Scan(&in.Policy); err != nil {
		return in, s.wrap(err)
	}
	if s.engine == Postgres {
		err := s.db.QueryRowContext(ctx, `SELECT session_user, coalesce((SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()), false), current_setting('server_version')`).
			Scan(&in.DBUser, &in.TLS, &in.ServerVersion)
		if err != nil {
			return in, s.wrap(err)
		}
	} else {
		_ = s.db.QueryRowContext(ctx, "SELECT sqlite_version()").Scan(&in.ServerVersion)
	}
	return in, nil
}

// storeInfo reads the store's identity, once.
func (s *Store) storeInfo(ctx context.Context) (*storeInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.info != nil {
		return s.info, nil
	}
	var si storeInfo
	var created int64
	err := s.db.QueryRowContext(ctx, "SELECT store_id, site, created_at FROM store_info WHERE id = 1").Scan(&si.ID, &si.Site, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, &StoreError{Store: s.name, Kind: StoreSchema, Err: errors.New("the store is empty: initialise it with sat lifecycle init CONTRACTS")}
	}
	if err != nil {
		return nil, s.wrap(err)
	}
	si.Created = fromMicros(created)
	s.info = &si
	return s.info, nil
}

// q rewrites a query's ? placeholders for the engine ($1, $2, … for
// PostgreSQL). Queries here have no ? inside literals.
func (s *Store) q(query string) string {
	if s.engine != Postgres {
		return query
	}
	var b strings.Builder
	n := 0
	for i := 0; i < len(query); i++ {
		if query[i] == '?' {
			n++
			fmt.Fprintf(&b, "$%d", n)
			continue
		}
		b.WriteByte(query[i])
	}
	return b.String()
}

// now is the clock, to the microsecond.
func (s *Store) clock() time.Time { return s.now().UTC().Truncate(time.Microsecond) }

func micros(t time.Time) int64 { return t.UnixMicro() }

func fromMicros(us int64) time.Time {
	if us == 0 {
		return time.Time{}
	}
	return time.UnixMicro(us).UTC()
}

// SetHook runs f inside every write transaction after its writes and
// before its commit, with what the transaction does: the
// kill-in-the-middle tests stop the process there.
func (s *Store) SetHook(f func(what string)) { s.hook = f }

// DryRun reports whether the store records its changes instead of
// writing them.
func (s *Store) DryRun() bool { return s.dry.Active() }

// wouldWrite records a prepared change a dry run does not write.
func (s *Store) wouldWrite(p *prepared) {
	st := p.st
	what := st.Action + " of " + st.Element
	switch {
	case st.Action == ActTransition:
		what = fmt.Sprintf("move %s from %s to %s", st.Element, st.From, st.To)
		if st.Replacement != "" {
			what += ", replacement " + st.Replacement
		}
	case st.Hold != nil:
		n := max(1, len(st.Nodes))
		what = fmt.Sprintf("%s %s on %d node(s) from %s", st.Action, st.Hold.Owner, n, st.Element)
	}
	s.dry.Would(dryrun.Store, "write to the lifecycle store %s: %s, by %s: %s", s.name, what, p.actor, st.Reason)
}
