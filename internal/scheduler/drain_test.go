package scheduler_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/peer/slurmtest"
	"github.com/seamdc/seam/internal/scheduler"
)

func jobState(t *testing.T, c *slurmtest.Cluster, id string) string {
	out, _ := c.Run("squeue", "-h", "-j", id, "-o", "%T")
	if s := strings.TrimSpace(out); s != "" {
		return s
	}
	out, _ = c.Run("scontrol", "-o", "show", "job", id)
	for _, f := range strings.Fields(out) {
		if v, ok := strings.CutPrefix(f, "JobState="); ok {
			return v
		}
	}
	return "GONE"
}

func submit(t *testing.T, c *slurmtest.Cluster, args ...string) string {
	out := c.Must("sbatch", append([]string{"--parsable"}, args...)...)
	return strings.TrimSpace(strings.Split(out, ";")[0])
}

func waitRunning(t *testing.T, c *slurmtest.Cluster, ids ...string) {
	t.Helper()
	require.Eventually(t, func() bool {
		for _, id := range ids {
			if jobState(t, c, id) != "RUNNING" {
				return false
			}
		}
		return true
	}, 60*time.Second, 200*time.Millisecond, "jobs %v not running", ids)
}

// The drain backend against a real slurmctld (Debian's 22.05, several
// slurmd -N on loopback, nodes defined without a slurmd): drain and
// undrain by hostlist in one call each, state and reasons read back, a
// running job keeps running on a draining node, an UNKNOWN node is
// undrained although scontrol complains, names Slurm lacks are named.
func TestSlurmDrainBackend(t *testing.T) {
	c := slurmtest.Start(t, slurmtest.Config{Nodes: []slurmtest.Node{
		{Name: "gpu-b-r01-n01", Run: true}, {Name: "gpu-b-r01-n02", Run: true}, {Name: "gpu-b-r01-n03"}, {Name: "gpu-b-r01-n04"},
		{Name: "gpu-a-r01-n01", Run: true},
	}})
	s := c.Slurm()
	s.Timeout = 30 * time.Second
	ctx := context.Background()
	b := []string{"gpu-b-r01-n01", "gpu-b-r01-n02", "gpu-b-r01-n03", "gpu-b-r01-n04"}

	dir := t.TempDir()
	require.NoError(t, os.Chmod(dir, 0o777))
	job := submit(t, c, "-w", "gpu-b-r01-n01", "-o", filepath.Join(dir, "out"), "--wrap", "sleep 600")
	waitRunning(t, c, job)

	st, err := s.Status(ctx, append(b, "gpu-x-n99"))
	require.NoError(t, err)
	assert.Equal(t, []string{"gpu-x-n99"}, st.Unknown)
	assert.False(t, st.Nodes["gpu-b-r01-n02"].Drained)

	require.NoError(t, s.Drain(ctx, b, "facility:cooling_redundancy_lost:l2"))
	st, err = s.Status(ctx, append(b, "gpu-a-r01-n01"))
	require.NoError(t, err)
	for _, n := range b {
		assert.True(t, st.Nodes[n].Drained, n)
		assert.Equal(t, "facility:cooling_redundancy_lost:l2", st.Nodes[n].Reason, n)
		assert.Equal(t, "root", st.Nodes[n].ReasonBy)
		assert.WithinDuration(t, time.Now(), st.Nodes[n].ReasonAt, time.Minute)
	}
	assert.Equal(t, "draining", st.Nodes["gpu-b-r01-n01"].State, "the job's node drains")
	assert.Equal(t, "drained", st.Nodes["gpu-b-r01-n02"].State)
	assert.False(t, st.Nodes["gpu-a-r01-n01"].Drained)
	assert.Equal(t, "RUNNING", jobState(t, c, job), "drain, never kill")

	jobs, err := s.Jobs(ctx, b)
	require.NoError(t, err)
	require.Len(t, jobs, 1)
	assert.Equal(t, job, jobs[0].ID)
	assert.Equal(t, []string{"gpu-b-r01-n01"}, jobs[0].Nodes)

	// gpu-b-r01-n03 and -n04 never registered (UNKNOWN): scontrol says
	// "Invalid node state specified" and clears their drain anyway
	require.NoError(t, s.Undrain(ctx, b))
	st, err = s.Status(ctx, b)
	require.NoError(t, err)
	for _, n := range b {
		assert.False(t, st.Nodes[n].Drained, n)
		assert.Empty(t, st.Nodes[n].Reason, n)
	}
	assert.Equal(t, "RUNNING", jobState(t, c, job))

	for _, bad := range []string{"", strings.Repeat("x", scheduler.MaxReason+1), "two\nlines"} {
		assert.Error(t, s.Drain(ctx, b, bad))
	}
	err = s.Drain(ctx, []string{"gpu-x-n99"}, "facility:x")
	require.ErrorContains(t, err, "Invalid node name specified", "Slurm refuses a name it does not know")
	c.Must("scancel", job)
}

// checkpoint_now is opt-in: scancel --signal=USR1 --batch reaches the
// batch shell, which keeps running only if it traps the signal; an
// untrapped USR1 ends the job (checked here on Debian's Slurm 22.05).
func TestSlurmCheckpointSignal(t *testing.T) {
	c := slurmtest.Start(t, slurmtest.Config{Nodes: []slurmtest.Node{{Name: "gpu-b-r01-n01", Run: true}, {Name: "gpu-b-r01-n02", Run: true}}})
	s := c.Slurm()
	ctx := context.Background()
	dir := t.TempDir()
	require.NoError(t, os.Chmod(dir, 0o777))
	script := filepath.Join(dir, "train.sh")
	require.NoError(t, os.WriteFile(script, []byte("#!/bin/bash\ntrap 'echo checkpoint >> "+dir+"/signals' USR1\ntouch "+dir+"/trapped\nwhile true; do sleep 0.2 & wait; echo tick >> "+dir+"/ticks; done\n"), 0o755))
	trapping := submit(t, c, "-w", "gpu-b-r01-n01", "--comment=seam:checkpoint_now", "-o", filepath.Join(dir, "t.out"), script)
	plain := submit(t, c, "-w", "gpu-b-r01-n02", "-o", filepath.Join(dir, "p.out"), "--wrap", "sleep 600")
	waitRunning(t, c, trapping, plain)

	jobs, err := s.Jobs(ctx, []string{"gpu-b-r01-n01", "gpu-b-r01-n02"})
	require.NoError(t, err)
	require.Len(t, jobs, 2)
	assert.Equal(t, "seam:checkpoint_now", jobs[0].Comment)
	assert.Empty(t, jobs[1].Comment)

	// a job that has not reached its trap yet dies of the signal too: the
	// test waits until the script says it has set it
	require.Eventually(t, func() bool { _, err := os.Stat(filepath.Join(dir, "trapped")); return err == nil }, 20*time.Second, 50*time.Millisecond)
	require.NoError(t, s.Signal(ctx, trapping, "USR1", false))
	require.Eventually(t, func() bool {
		b, _ := os.ReadFile(filepath.Join(dir, "signals"))
		return strings.Count(string(b), "checkpoint") == 1
	}, 20*time.Second, 100*time.Millisecond)
	require.NoError(t, s.Signal(ctx, trapping, "USR1", true))
	require.Eventually(t, func() bool {
		b, _ := os.ReadFile(filepath.Join(dir, "signals"))
		return strings.Count(string(b), "checkpoint") == 2
	}, 20*time.Second, 100*time.Millisecond, "--full reaches the batch shell too")
	ticks := func() int { b, _ := os.ReadFile(filepath.Join(dir, "ticks")); return strings.Count(string(b), "tick") }
	after := ticks()
	require.Eventually(t, func() bool { return ticks() >= after+3 }, 20*time.Second, 100*time.Millisecond, "the batch shell goes on after both signals")
	assert.Equal(t, "RUNNING", jobState(t, c, trapping), "a job that traps USR1 keeps running")

	// the fact that makes it opt-in: the same signal ends a job that does
	// not trap it
	require.NoError(t, s.Signal(ctx, plain, "USR1", false))
	require.Eventually(t, func() bool { st := jobState(t, c, plain); return st != "RUNNING" && st != "COMPLETING" }, 30*time.Second, 200*time.Millisecond)
	assert.Contains(t, []string{"FAILED", "GONE", "CANCELLED"}, jobState(t, c, plain))
	c.Must("scancel", trapping)
}

// A scheduler that does not answer in time is an error saying so.
func TestSlurmTimeout(t *testing.T) {
	s := &scheduler.Slurm{Command: scheduler.Command{Timeout: 50 * time.Millisecond, Exec: func(ctx context.Context, _ []string, _ string, _ ...string) ([]byte, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}}}
	err := s.Drain(context.Background(), []string{"gpu-b-r01-n01"}, "facility:x")
	require.ErrorContains(t, err, "scontrol update nodename=gpu-b-r01-n01 state=drain reason=facility:x: timed out after 50ms")
	_, err = s.Status(context.Background(), []string{"gpu-b-r01-n01"})
	require.ErrorContains(t, err, "timed out after 50ms")
	assert.Equal(t, []string{"scontrol update nodename=gpu-b-r01-n01,gpu-b-r02-n01 state=drain 'reason=a b'"},
		s.Commands(scheduler.Op{Kind: "drain", Nodes: []string{"gpu-b-r01-n01", "gpu-b-r02-n01"}, Reason: "a b"}))
}
