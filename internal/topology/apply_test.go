package topology

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/clock"
	"github.com/seamdc/seam/internal/scheduler"
)

// fakeSlurm is a hand-written Reconfigurer: it "runs" the topology.conf
// it last reconfigured with, and fails where told.
type fakeSlurm struct {
	t       *testing.T
	file    string
	running []byte
	nodes   []string
	// failures
	reconfigure error // every reconfigure fails
	down        bool  // the controller stopped
	mangle      func([]byte) []byte
}

func (f *fakeSlurm) TopologyFile(context.Context) (string, error) { return f.file, nil }

func (f *fakeSlurm) Reconfigure(context.Context) error {
	if f.reconfigure != nil {
		return f.reconfigure
	}
	b, err := os.ReadFile(f.file)
	require.NoError(f.t, err)
	if f.mangle != nil {
		b = f.mangle(b)
	}
	f.running = b
	return nil
}

func (f *fakeSlurm) Up(context.Context) error {
	if f.down {
		return errors.New("scontrol ping: Slurmctld(primary) at x is DOWN")
	}
	return nil
}

func (f *fakeSlurm) Read(context.Context) (*scheduler.State, error) {
	if f.down {
		return nil, errors.New("slurm_load_topo error: Unable to contact slurm controller")
	}
	c, err := ParseConf("running", f.running)
	require.NoError(f.t, err)
	st, err := scheduler.ParseTopology("scontrol", []byte(scontrolShow(c.Switches)))
	require.NoError(f.t, err)
	for _, n := range f.nodes {
		st.Nodes = append(st.Nodes, scheduler.Node{Name: n})
	}
	return st, nil
}

func newFake(t *testing.T, running []byte, top *Topology) *fakeSlurm {
	dir := t.TempDir()
	file := filepath.Join(dir, "topology.conf")
	require.NoError(t, os.WriteFile(file, running, 0o640))
	f := &fakeSlurm{t: t, file: file, running: running}
	for _, n := range top.Nodes() {
		f.nodes = append(f.nodes, n.Slurm)
	}
	return f
}

var fixed = clock.NewFake(time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC))

func TestApplyFake(t *testing.T) {
	top := small(t)
	recs := smallRecords(t)
	recs[0].Rack, recs[1].Rack = "a-r02", "a-r02" // what runs first: rack a-r01's nodes under a-r02
	old, err := FromRecords("small", recs, RecordOptions{})
	require.NoError(t, err)
	oldFile, newFile := treeFile(t, old), treeFile(t, top)
	ctx := context.Background()

	t.Run("applied", func(t *testing.T) {
		f := newFake(t, oldFile, top)
		res := ApplySlurm(ctx, f, newFile, ApplyOptions{Clock: fixed})
		require.NoError(t, res.Err)
		assert.Equal(t, ResultApplied, res.Result)
		assert.Equal(t, f.file+".seam-20261201T080000.000Z", res.Backup)
		st, err := os.Stat(f.file)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o640), st.Mode().Perm(), "the file keeps its mode")
		recs := auditRecords(t, AuditFile(f.file))
		require.Len(t, recs, 1)
		assert.Equal(t, "2026-12-01T08:00:00Z", recs[0].Time)
		assert.Equal(t, digest(oldFile), recs[0].OldSHA256)
		assert.Equal(t, digest(newFile), recs[0].NewSHA256)
	})
	t.Run("read back differs", func(t *testing.T) {
		f := newFake(t, oldFile, top)
		f.mangle = func(b []byte) []byte {
			if string(b) == string(newFile) {
				return oldFile // slurmctld keeps running the old tree
			}
			return b
		}
		res := ApplySlurm(ctx, f, newFile, ApplyOptions{Clock: fixed})
		assert.Equal(t, ResultRolledBack, res.Result)
		assert.ErrorContains(t, res.Err, "slurm runs another topology than the one written")
		b, _ := os.ReadFile(f.file)
		assert.Equal(t, string(oldFile), string(b))
	})
	t.Run("controller stopped, no restart", func(t *testing.T) {
		f := newFake(t, oldFile, top)
		f.reconfigure = errors.New("scontrol reconfigure: exit status 1: Zero Bytes were transmitted or received")
		res := ApplySlurm(ctx, f, newFile, ApplyOptions{Clock: fixed, Force: true})
		assert.Equal(t, ResultRollbackFailed, res.Result)
		assert.ErrorContains(t, res.Err, "the old topology.conf is back, but reconfiguring with it failed")
		f.down = true
		res = ApplySlurm(ctx, f, newFile, ApplyOptions{Clock: fixed})
		assert.Equal(t, ResultRefused, res.Result, "a controller that does not answer: nothing is written")
		b, _ := os.ReadFile(f.file)
		assert.Equal(t, string(oldFile), string(b))
	})
	t.Run("restart fails", func(t *testing.T) {
		f := newFake(t, oldFile, top)
		f.reconfigure = errors.New("Zero Bytes were transmitted or received")
		f.mangle = nil
		calls := 0
		res := ApplySlurm(ctx, &downAfterReconfigure{f}, newFile, ApplyOptions{Clock: fixed, Restart: func(context.Context) error {
			calls++
			return errors.New("systemctl restart slurmctld: exit status 1")
		}})
		assert.Equal(t, 1, calls)
		assert.Equal(t, ResultRollbackFailed, res.Result)
		assert.ErrorContains(t, res.Err, "the old topology.conf is back, but restarting slurmctld failed: systemctl restart slurmctld: exit status 1")
		b, _ := os.ReadFile(f.file)
		assert.Equal(t, string(oldFile), string(b), "the running configuration is never left broken: the old file is in place")
	})
	t.Run("topology.yaml", func(t *testing.T) {
		f := newFake(t, oldFile, top)
		require.NoError(t, os.WriteFile(filepath.Join(filepath.Dir(f.file), "topology.yaml"), nil, 0o644))
		res := ApplySlurm(ctx, f, newFile, ApplyOptions{Clock: fixed})
		assert.Equal(t, ResultRefused, res.Result)
		assert.ErrorContains(t, res.Err, "topology.yaml exists: Slurm 25.05 and later read it and ignore topology.conf")
	})
	t.Run("not a topology.conf", func(t *testing.T) {
		f := newFake(t, oldFile, top)
		res := ApplySlurm(ctx, f, []byte("NodeName=x\n"), ApplyOptions{Clock: fixed})
		assert.Equal(t, ResultRefused, res.Result)
		assert.ErrorContains(t, res.Err, "the new topology.conf:1: NodeName= starts no line")
		assert.NoFileExists(t, AuditFile(f.file), "nothing known about the file yet")
	})
}

// downAfterReconfigure is a controller that exits on the reconfigure.
type downAfterReconfigure struct{ *fakeSlurm }

func (d *downAfterReconfigure) Reconfigure(ctx context.Context) error {
	err := d.fakeSlurm.Reconfigure(ctx)
	d.down = true
	return err
}
