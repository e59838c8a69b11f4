// Package pgtest runs a real PostgreSQL for tests: Debian's initdb
// into the test's temporary directory, postgres on a free loopback port
// (TCP only, no socket outside that directory), ready when it accepts a
// connection and answers a query. As root it runs as Debian's postgres
// user (postgres refuses root), through setpriv, which execs the server
// itself so that stopping it stops the server. The server's output is
// attached to a failing test, and it is stopped when the test ends.
//
// The superuser is "seam" with a random password, given to clients
// apart from their URL (URL never carries it), as the lifecycle store
// takes credentials by reference.
package pgtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/seamdc/seam/internal/peer"
)

// Package is the Debian package that has PostgreSQL's server; it is
// listed in .ci/packages.
const Package = "postgresql"

// Options tune the server.
type Options struct {
	// TLS turns ssl on with a self-signed certificate (a client that
	// prefers TLS then gets it).
	TLS bool
	// Settings are more postgres -c settings: "max_connections=50".
	Settings []string
	// Within bounds the wait for the server (default 60 s).
	Within time.Duration
}

// Server is a running PostgreSQL.
type Server struct {
	Host     string // 127.0.0.1
	Port     int
	User     string // the superuser
	Password string
	Dir      string // the data directory
	t        testing.TB
	bin      string // the directory of postgres and initdb
	as       []string
	opt      Options
	proc     *peer.Peer
}

// Start initialises a cluster and starts its server, ready.
func Start(t testing.TB, opt Options) *Server {
	t.Helper()
	if opt.Within <= 0 {
		opt.Within = 60 * time.Second
	}
	s := &Server{Host: "127.0.0.1", User: "seam", Password: randomHex(t, 16), t: t, bin: binDir(t), opt: opt}
	s.as = asPostgres(t)
	root := t.TempDir()
	// the server runs as postgres: it must reach its directory through
	// the test's own temporary directories
	for _, d := range []string{filepath.Dir(root), root} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	s.Dir = filepath.Join(root, "data")
	pwfile := filepath.Join(root, "pwfile")
	if err := os.WriteFile(pwfile, []byte(s.Password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s.chown(root, pwfile)
	if out, err := peer.Run(2*time.Minute, s.cmd("initdb", "-D", s.Dir, "-U", s.User, "--pwfile="+pwfile, "-A", "scram-sha-256",
		"-E", "UTF8", "--locale=C", "--no-sync")...); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	if opt.TLS {
		s.writeCert()
	}
	_, p, _ := strings.Cut(peer.FreeTCP(t), ":")
	s.Port, _ = strconv.Atoi(p)
	s.start()
	return s
}

// binDir finds Debian's PostgreSQL programs (the highest version in
// /usr/lib/postgresql), or postgres on PATH; else the test fails naming
// the package.
func binDir(t testing.TB) string {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if executable(filepath.Join(d, "postgres")) && executable(filepath.Join(d, "initdb")) {
			return d
		}
	}
	if p, err := exec.LookPath("postgres"); err == nil && executable(filepath.Join(filepath.Dir(p), "initdb")) {
		return filepath.Dir(p)
	}
	t.Fatalf("PostgreSQL's postgres and initdb not found (in /usr/lib/postgresql/*/bin or on PATH): install the Debian package %s "+
		"(sudo apt-get install -y %s; make test and .ci/run install every package of .ci/packages)", Package, Package)
	return ""
}

func version(dir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return n
}

func executable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode()&0o111 != 0
}

// asPostgres is the prefix that runs a program as Debian's postgres
// user when the test runs as root (nothing otherwise).
func asPostgres(t testing.TB) []string {
	if os.Geteuid() != 0 {
		return nil
	}
	if _, err := user.Lookup("postgres"); err != nil {
		t.Fatalf("the tests run as root, and postgres refuses root, but there is no postgres user to run it as: install the Debian package %s, which creates it", Package)
	}
	return []string{peer.Need(t, "setpriv"), "--reuid=postgres", "--regid=postgres", "--init-groups", "--"}
}

// cmd is a PostgreSQL program's command line, as the postgres user.
func (s *Server) cmd(program string, args ...string) []string {
	return append(append(append([]string(nil), s.as...), filepath.Join(s.bin, program)), args...)
}

// chown gives paths to the postgres user when the server runs as it.
func (s *Server) chown(paths ...string) {
	if s.as == nil {
		return
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		s.t.Fatal(err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	for _, p := range paths {
		if err := os.Lchown(p, uid, gid); err != nil {
			s.t.Fatal(err)
		}
	}
}

func (s *Server) start() {
	t := s.t
	args := []string{"-D", s.Dir, "-h", s.Host, "-p", strconv.Itoa(s.Port), "-k", "",
		"-c", "fsync=off", "-c", "full_page_writes=off", "-c", "log_min_messages=warning", "-c", "log_min_error_statement=fatal", "-c", "max_connections=100"}
	if s.opt.TLS {
		args = append(args, "-c", "ssl=on", "-c", "ssl_cert_file=server.crt", "-c", "ssl_key_file=server.key")
	}
	for _, set := range s.opt.Settings {
		args = append(args, "-c", set)
	}
	s.proc = peer.Start(t, "postgres", peer.Spec{
		Args:   s.cmd("postgres", args...),
		Within: s.opt.Within,
		Stop:   10 * time.Second,
		Ready: func(ctx context.Context) error {
			c, err := s.Connect(ctx, "postgres")
			if err != nil {
				return err
			}
			defer c.Close(context.Background())
			return c.Ping(ctx)
		},
	})
}

// Connect connects as the superuser to database db.
func (s *Server) Connect(ctx context.Context, db string) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(s.URL(db, s.User) + "?sslmode=prefer")
	if err != nil {
		return nil, err
	}
	cfg.Password = s.Password
	return pgx.ConnectConfig(ctx, cfg)
}

// URL is the address of database db as user, without a password.
func (s *Server) URL(db, user string) string {
	u := url.URL{Scheme: "postgres", User: url.User(user), Host: net.JoinHostPort(s.Host, strconv.Itoa(s.Port)), Path: "/" + db}
	return u.String()
}

// Exec runs SQL as the superuser in database db.
func (s *Server) Exec(db string, sql ...string) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := s.Connect(ctx, db)
	if err != nil {
		s.t.Fatalf("postgres: connect to %s: %v", db, err)
	}
	defer c.Close(context.Background())
	for _, q := range sql {
		if _, err := c.Exec(ctx, q); err != nil {
			s.t.Fatalf("postgres: %s: %v", q, err)
		}
	}
}

// CreateDatabase creates a database of its own for a test, named after
// it, and returns its name.
func (s *Server) CreateDatabase(t testing.TB) string {
	t.Helper()
	name := "t_" + randomHex(t, 6)
	s.Exec("postgres", "CREATE DATABASE "+name)
	return name
}

// CreateRole creates a login role with password and the given group
// roles (which must exist).
func (s *Server) CreateRole(name, password string, groups ...string) {
	s.t.Helper()
	q := fmt.Sprintf("CREATE ROLE %s LOGIN PASSWORD '%s'", pgx.Identifier{name}.Sanitize(), strings.ReplaceAll(password, "'", "''"))
	if len(groups) > 0 {
		ids := make([]string, len(groups))
		for i, g := range groups {
			ids[i] = pgx.Identifier{g}.Sanitize()
		}
		q += " IN ROLE " + strings.Join(ids, ", ")
	}
	s.Exec("postgres", q)
}

// Kill kills the server and its backends at once (SIGKILL: a crash)
// and waits until they are gone. Start it again with Restart.
func (s *Server) Kill() {
	s.signal(syscall.SIGKILL)
	_ = syscall.Kill(-s.proc.Pid(), syscall.SIGKILL)
}

func (s *Server) signal(sig syscall.Signal) {
	s.t.Helper()
	pid := s.proc.Pid()
	_ = syscall.Kill(pid, sig)
	deadline := time.Now().Add(30 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			s.t.Fatalf("postgres (pid %d) did not exit within 30s of %v", pid, sig)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if sig == syscall.SIGKILL {
		// its backends are in its process group; the postmaster's lock
		// file stays, as after a crash, and postgres recovers on start.
		// A backend still exiting holds the shared memory segment, and a
		// postgres started then refuses to ("pre-existing shared memory
		// block … is still in use"): wait until the group is gone.
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		for live := liveInGroup(pid); len(live) > 0; live = liveInGroup(pid) {
			if time.Now().After(deadline) {
				s.t.Fatalf("postgres's processes %v were still running 30s after SIGKILL", live)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// liveInGroup lists the processes of process group pgid that have not
// exited (zombies have: they hold no memory).
func liveInGroup(pgid int) []int {
	entries, _ := os.ReadDir("/proc")
	var live []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // gone meanwhile
		}
		// pid (comm) state ppid pgrp …: comm may hold spaces and parentheses
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 3 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		if g, err := strconv.Atoi(f[2]); err == nil && g == pgid {
			live = append(live, pid)
		}
	}
	return live
}

// Restart starts the server again on the same port and data directory,
// ready (after a Kill, postgres recovers from its WAL first).
func (s *Server) Restart() {
	s.t.Helper()
	s.start()
}

// writeCert writes a self-signed certificate for 127.0.0.1 and its key
// into the data directory, owned by the server's user.
func (s *Server) writeCert() {
	crt, kf := peer.SelfSigned(s.t, s.Dir, "server")
	s.chown(crt, kf)
}

func randomHex(t testing.TB, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}
