// Package lifecyclecmd is sat lifecycle: the lifecycle store from the
// command line, one function per subcommand (show, list, move, history,
// holds, the as-built, the access policy, check). sat registers it as
// its lifecycle command.
package lifecyclecmd

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/seamdc/seam/internal/cli"
	"github.com/seamdc/seam/internal/dryrun"
	"github.com/seamdc/seam/internal/lifecycle"
	"github.com/seamdc/seam/internal/sign"
)

// Summary is the line sat's usage shows.
const Summary = "the lifecycle store: states, history, as-built, holds (sat lifecycle help)"

// ExitConflict is a change that lost a race: look again and retry.
const ExitConflict = 3

var program = &cli.Program{
	Name:  "sat lifecycle",
	About: "sat lifecycle keeps every module, node and part's state, history and evidence in one store (SQLite, or PostgreSQL shared by a team).",
	Exits: "0 done, 1 failed or refused (the error says why), 2 check found problems, 3 a conflict: the element changed meanwhile, look again and retry.",
	// only init evaluates CUE (the contracts)
	NoBudget: map[string]bool{"import": true, "export": true, "show": true, "list": true, "move": true, "history": true,
		"hold": true, "access": true, "check": true, "head": true, "info": true, "offer": true, "reconcile": true, "chem": true},
}

// Main runs sat lifecycle with args (after "lifecycle").
func Main(args []string, stdout, stderr io.Writer) int { return program.Main(args, stdout, stderr) }

func register(name, summary string, run func(args []string, stdout, stderr io.Writer) int) *cli.Command {
	return program.Register(name, summary, run)
}

// Environment defaults of the common flags.
const (
	EnvStore    = "SEAM_LIFECYCLE_STORE"
	EnvPassword = "SEAM_LIFECYCLE_DB_PASSWORD"
	EnvKey      = "SEAM_LIFECYCLE_KEY"
	EnvAs       = "SEAM_LIFECYCLE_AS"
)

// common are the flags every subcommand has: the store, and who makes
// a change.
type common struct {
	fs                      *flag.FlagSet
	store, password         string
	key, principal, passEnv string
	dbRole                  bool
	format                  string
	lookupEnv               func(string) (string, bool)
	now                     func() time.Time
	// dryRun: the change is prepared, checked and signed, and recorded
	// in rec instead of written (withAuth adds --dry-run).
	dryRun bool
	rec    *dryrun.Recorder
	// the scheduler a hold change applies to in the same call
	// (withScheduler)
	sched schedFlags
}

func newCommon(usage string) *common {
	c := &common{fs: flag.NewFlagSet(usage, flag.ContinueOnError), lookupEnv: os.LookupEnv}
	c.fs.StringVar(&c.store, "store", envOr(EnvStore, "lifecycle.db"), "the store: a SQLite file, or postgres://USER@HOST:PORT/DB?sslmode=… ($"+EnvStore+")")
	c.fs.StringVar(&c.password, "db-password", os.Getenv(EnvPassword), "PostgreSQL's password by reference: env:NAME or file:PATH ($"+EnvPassword+")")
	return c
}

// withAuth adds the flags of who makes a change.
func (c *common) withAuth() *common {
	c.fs.StringVar(&c.key, "key", os.Getenv(EnvKey), "the SSH key that signs the change: a private key file, or KEY.pub held by ssh-agent ($"+EnvKey+")")
	c.fs.StringVar(&c.principal, "as", os.Getenv(EnvAs), "the key's principal in the store's allowed signers, when it has several ($"+EnvAs+")")
	c.fs.StringVar(&c.passEnv, "passphrase-env", "", "environment variable holding the key's passphrase")
	c.fs.BoolVar(&c.dbRole, "db-role", false, "make the change as the PostgreSQL session's role, not a key")
	c.fs.BoolVar(&c.dryRun, "dry-run", false, "prepare, check and sign the change, print what it would write, and write nothing (the store is opened read only)")
	return c
}

// dry starts a dry run's recorder on out when --dry-run was given.
func (c *common) dry(out io.Writer) {
	if c.dryRun {
		c.rec = dryrun.New(out, nil)
	}
}

// withFormat adds --format text|json.
func (c *common) withFormat() *common {
	c.fs.StringVar(&c.format, "format", "text", "text or json")
	return c
}

func envOr(k, dflt string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return dflt
}

func (c *common) parse(args []string, want int, what string) ([]string, error) {
	pos, err := cli.Parse(c.fs, args)
	if err != nil {
		return nil, err
	}
	if want >= 0 && len(pos) != want {
		return nil, cli.Usagef("want %s, got %d argument(s)", what, len(pos))
	}
	if c.format != "" && c.format != "text" && c.format != "json" {
		return nil, cli.Usagef("--format is text or json (got %q)", c.format)
	}
	return pos, nil
}

func (c *common) config() lifecycle.Config {
	return lifecycle.Config{Store: c.store, Password: c.password, LookupEnv: c.lookupEnv, Now: c.now, DryRun: c.rec}
}

// open opens the store.
func (c *common) open(ctx context.Context) (*lifecycle.Store, error) {
	return lifecycle.Open(ctx, c.config())
}

// auth is who makes a change: --key, or --db-role.
func (c *common) auth() (lifecycle.Auth, error) {
	switch {
	case c.dbRole && c.key != "":
		return lifecycle.Auth{}, cli.Usagef("give --key or --db-role, not both")
	case c.dbRole:
		return lifecycle.DBRoleAuth(), nil
	case c.key == "":
		return lifecycle.Auth{}, cli.Usagef("who makes the change? --key KEY (an SSH key of the store's allowed signers) or --db-role (PostgreSQL)")
	}
	raw, err := os.ReadFile(c.key)
	if err != nil {
		return lifecycle.Auth{}, fmt.Errorf("signing key: %w", err)
	}
	if pub, _, _, _, err := ssh.ParseAuthorizedKey(raw); err == nil {
		s, err := sign.AgentSigner(pub, c.lookupEnv)
		if err != nil {
			return lifecycle.Auth{}, fmt.Errorf("signing key %s is a public key, so ssh-agent must hold its private key: %w", c.key, err)
		}
		return lifecycle.KeyAuth(s, c.principal), nil
	}
	var pass []byte
	if c.passEnv != "" {
		v, ok := c.lookupEnv(c.passEnv)
		if !ok {
			return lifecycle.Auth{}, fmt.Errorf("--passphrase-env: %s is not set", c.passEnv)
		}
		pass = []byte(v)
	}
	s, err := sign.LoadSigner(c.key, pass)
	if err != nil {
		return lifecycle.Auth{}, err
	}
	return lifecycle.KeyAuth(s, c.principal), nil
}

// fail prints err and returns its exit code.
func fail(stderr io.Writer, name string, c *common, err error) int {
	var fs *flag.FlagSet
	if c != nil {
		fs = c.fs
	}
	code := program.Fail(stderr, name, fs, err)
	if lifecycle.IsConflict(err) {
		return ExitConflict
	}
	return code
}

// emit writes v as JSON, or the text render gives.
func emit(w io.Writer, format string, v any, text func(io.Writer)) {
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		_ = enc.Encode(v)
		return
	}
	text(w)
}

// parseTime reads --as-of: RFC 3339, to the minute or the day (UTC).
func parseTime(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04Z07:00", "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, cli.Usagef("--as-of %q: write a time such as 2026-11-01T00:00Z or 2026-11-01", s)
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02T15:04:05Z")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
