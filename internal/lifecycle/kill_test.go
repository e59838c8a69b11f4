package lifecycle_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/lifecycle"
	"github.com/seamdc/seam/internal/sign"
)

// child is the test binary as a client of a store that is killed in the
// middle of a transaction: it moves ma (about 5,000 elements) to built
// and, with every row written but before the commit, says so and
// waits to be killed.
func child() int {
	ctx := context.Background()
	cfg := lifecycle.Config{Store: os.Getenv("SEAM_LC_STORE")}
	if os.Getenv("SEAM_LC_PASSWORD") != "" {
		cfg.Password = "env:SEAM_LC_PASSWORD"
	}
	s, err := lifecycle.Open(ctx, cfg)
	if err != nil {
		fmt.Println("open:", err)
		return 1
	}
	signer, err := sign.LoadSigner(os.Getenv("SEAM_LC_KEY"), nil)
	if err != nil {
		fmt.Println("key:", err)
		return 1
	}
	s.SetHook(func(what string) {
		fmt.Println("IN-TRANSACTION", what)
		time.Sleep(time.Hour)
	})
	_, err = s.Transition(ctx, lifecycle.KeyAuth(signer, ""), lifecycle.Move{Element: "ma", To: lifecycle.Built, Reason: "killed before the commit"})
	fmt.Println("done:", err)
	return 0
}

// A client killed (SIGKILL) in the middle of a transaction that has
// written thousands of rows leaves the store as it was: consistent,
// nothing of the transition in it, and no lock left behind.
func testKill(t *testing.T, e *engine) {
	ctx := context.Background()
	clk := newClock()
	s, cfg := newStore(t, e, clk, nil)
	before, err := s.Info(ctx)
	require.NoError(t, err)

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "SEAM_LC_CHILD=1", "SEAM_LC_STORE="+cfg.Store, "SEAM_LC_KEY="+team(t)["odm"].file)
	if e.pg != nil {
		cmd.Env = append(cmd.Env, "SEAM_LC_PASSWORD="+e.pg.Password)
	}
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	lines := make(chan string, 10)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	select {
	case l := <-lines:
		require.Equal(t, "IN-TRANSACTION transition", l, "the child should be inside its transaction")
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Kill()
		t.Fatal("the child did not reach its transaction")
	}
	// the child holds the write lock (SQLite) or its rows' (PostgreSQL):
	// another writer waits, then is told the store is locked
	impatient := cfg
	impatient.BusyTimeout = 300 * time.Millisecond
	other, err := lifecycle.Open(ctx, impatient)
	require.NoError(t, err)
	defer other.Close()
	err = other.SetHold(ctx, as(t, "operator"), "ma/r01/compute-01", "person:operator", "x")
	var se *lifecycle.StoreError
	require.True(t, errors.As(err, &se), "%v", err)
	assert.Equal(t, lifecycle.StoreLocked, se.Kind)
	assert.Contains(t, err.Error(), "locked by another writer")
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()

	after, err := lifecycle.Open(ctx, cfg)
	require.NoError(t, err)
	defer after.Close()
	r, err := after.Check(ctx, nil)
	require.NoError(t, err)
	assert.Empty(t, r.Problems, "consistent after the kill")
	info, err := after.Info(ctx)
	require.NoError(t, err)
	assert.Equal(t, before.Events, info.Events, "nothing of the transition")
	ma, err := after.Show(ctx, "ma/r07/compute-11/gpu-4", time.Time{})
	require.NoError(t, err)
	assert.Equal(t, lifecycle.Design, ma.State)
	mv, err := after.Transition(ctx, as(t, "odm"), lifecycle.Move{Element: "ma", To: lifecycle.Built, Reason: "after the kill"})
	require.NoError(t, err, "no lock is left behind")
	assert.Greater(t, mv.Count, 4000)
}
