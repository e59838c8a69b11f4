package pgtest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/peer"
)

// A server is ready when it answers, serves TLS when asked to, takes
// roles and databases, survives a kill (it recovers on restart), and is
// gone when the test that started it ends.
func TestServer(t *testing.T) {
	var pid int
	t.Run("server", func(t *testing.T) {
		s := Start(t, Options{TLS: true})
		pid = s.proc.Pid()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		db := s.CreateDatabase(t)
		s.Exec(db, "CREATE TABLE t (v int)", "INSERT INTO t VALUES (1)")
		s.CreateRole("alice", "secret")

		cfg, err := pgx.ParseConfig(s.URL(db, "alice"))
		require.NoError(t, err)
		assert.NotContains(t, s.URL(db, "alice"), "secret", "a URL never carries a password")
		cfg.Password = "secret"
		c, err := pgx.ConnectConfig(ctx, cfg)
		require.NoError(t, err)
		var ssl bool
		require.NoError(t, c.QueryRow(ctx, "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()").Scan(&ssl))
		assert.True(t, ssl, "the client preferred TLS and the server offers it")
		var who string
		require.NoError(t, c.QueryRow(ctx, "SELECT session_user").Scan(&who))
		assert.Equal(t, "alice", who)
		_, err = c.Exec(ctx, "INSERT INTO t VALUES (2)")
		assert.ErrorContains(t, err, "permission denied", "a role without grants cannot write")
		c.Close(ctx)

		s.Kill()
		_, err = s.Connect(ctx, db)
		assert.Error(t, err, "a killed server is gone")
		s.Restart()
		c, err = s.Connect(ctx, db)
		require.NoError(t, err)
		var n int
		require.NoError(t, c.QueryRow(ctx, "SELECT count(*) FROM t").Scan(&n))
		assert.Equal(t, 1, n, "committed data survives the kill")
		c.Close(ctx)
		pid = s.proc.Pid()
	})
	assert.Error(t, syscall.Kill(pid, 0), "the server is stopped with its test")
}

// .ci/packages lists the package the harness names, by the file that
// shows it installed.
func TestPackageListed(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(peer.Root(t), ".ci", "packages"))
	require.NoError(t, err)
	found := false
	for _, line := range strings.Split(string(raw), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == Package {
			found = true
			for _, probe := range f[1:] {
				assert.True(t, strings.HasPrefix(probe, "file:/usr/lib/postgresql/") || probe == "setpriv", probe)
			}
		}
	}
	assert.True(t, found, ".ci/packages lists %s", Package)
}

// liveInGroup sees every process of a group until it has exited, the
// wait a Kill needs before postgres can start on the same data again.
func TestLiveInGroup(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 60 & sleep 60 & wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, cmd.Start())
	pid := cmd.Process.Pid
	t.Cleanup(func() { _ = syscall.Kill(-pid, syscall.SIGKILL) })
	require.Eventually(t, func() bool { return len(liveInGroup(pid)) == 3 }, 30*time.Second, 10*time.Millisecond,
		"liveInGroup does not see sh and its two sleeps within 30 s")
	require.NoError(t, syscall.Kill(-pid, syscall.SIGKILL))
	_ = cmd.Wait()
	assert.Eventually(t, func() bool { return len(liveInGroup(pid)) == 0 }, 30*time.Second, 10*time.Millisecond,
		"liveInGroup still sees processes of the group 30 s after SIGKILL")
}
