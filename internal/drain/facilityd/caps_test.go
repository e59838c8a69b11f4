package facilityd_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/alarm"
	"github.com/seamdc/seam/internal/capping"
	"github.com/seamdc/seam/internal/capping/apply"
	"github.com/seamdc/seam/internal/clock"
	"github.com/seamdc/seam/internal/drain/facilityd"
	"github.com/seamdc/seam/internal/peer"
	"github.com/seamdc/seam/internal/sim"
	"github.com/seamdc/seam/internal/sim/fleet"
)

// The cap reconciler on the simulated fleet: a cap applied to two
// nodes' BMCs reads back and raises nothing; a BMC reset drops one cap,
// and facilityd names the drift (power_cap_drift of the node's rack),
// writes the cap back and clears the alarm once it reads back. It
// drains nothing. A dry run names the drift and writes nothing.
func TestCapReconciler(t *testing.T) {
	ctx := context.Background()
	root := peer.Root(t)
	o, diags, err := sim.Open(sim.Paths{Contracts: filepath.Join(root, "contracts/examples/threemodule"), Fixtures: filepath.Join(root, "fixtures")},
		"", sim.SecretsFrom(func(string) (string, bool) { return "", false }), time.Time{}, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	require.Empty(t, diags)
	require.NoError(t, o.Start())
	t.Cleanup(o.Close)

	dir := t.TempDir()
	bind := filepath.Join(dir, "binding")
	require.NoError(t, os.MkdirAll(bind, 0o755))
	// the binding as sat sim writes it: bmcs.cue, the accounts in its
	// secrets file, the power limit writable; taken as it is
	require.NoError(t, o.WriteBinding(bind, "http://127.0.0.1:1", 1, false, func(string) (string, bool) { return "", false }))
	caps := capping.File{Format: capping.Format, Site: "threemodule", Target: "ma/r01", Caps: []capping.Cap{
		{Node: "gpu-a-r01-n01", Key: "ma/r01/compute-01", BMC: "bmc-a-r01-n01", Watts: 4200, MinW: 2560, MaxW: 6400, DesignW: 6400},
		{Node: "gpu-a-r01-n02", Key: "ma/r01/compute-02", BMC: "bmc-a-r01-n02", Watts: 4200, MinW: 2560, MaxW: 6400, DesignW: 6400},
	}}
	capsFile := filepath.Join(dir, "caps.json")
	require.NoError(t, os.WriteFile(capsFile, caps.Marshal(), 0o644))

	targets, opt, err := apply.Targets(bind, &caps, os.LookupEnv, io.Discard)
	require.NoError(t, err)
	for _, r := range apply.Run(ctx, apply.Apply, targets, opt) {
		require.NoError(t, r.Err)
	}

	clk := clock.NewFake(time.Date(2026, 11, 1, 8, 0, 0, 0, time.UTC))
	cfg, err := facilityd.LoadConfig(demoConfig(t, `, "caps": {"file": "`+capsFile+`", "binding": "`+bind+`"}`))
	require.NoError(t, err)
	d, err := facilityd.New(cfg, facilityd.Options{Out: io.Discard, Clock: clk})
	require.NoError(t, err)
	defer d.Close()
	rack := alarm.Domain{Kind: alarm.Rack, Value: "ma/r01"}

	// a dry run sees the drift a reset makes and writes nothing back
	dry, err := facilityd.New(cfg, facilityd.Options{DryRun: true, Out: io.Discard, Clock: clk})
	require.NoError(t, err)
	defer dry.Close()
	require.NoError(t, o.AddFleetDefect(fleet.Defect{Kind: sim.DefectBMCReset, Target: "bmc-a-r01-n01"}))
	_, before := o.Writes()
	drifts, err := dry.ReconcileCaps(ctx)
	require.NoError(t, err)
	require.Len(t, drifts, 1)
	a, ok := dry.Stream.Get(facilityd.CapDrift, rack)
	require.True(t, ok)
	assert.True(t, a.Active, "a dry run writes nothing back: still drifted")
	_, after := o.Writes()
	assert.Equal(t, before, after, "the dry run sent no write to a BMC")
	for _, r := range apply.Run(ctx, apply.Apply, targets, opt) {
		require.NoError(t, r.Err)
	}

	drifts, err = d.ReconcileCaps(ctx)
	require.NoError(t, err)
	assert.Empty(t, drifts, "both caps read back")
	_, ok = d.Stream.Get(facilityd.CapDrift, rack)
	assert.False(t, ok)

	require.NoError(t, o.AddFleetDefect(fleet.Defect{Kind: sim.DefectBMCReset, Target: "bmc-a-r01-n01"}))
	back := apply.Run(ctx, apply.Read, targets, opt)
	require.NoError(t, back[0].Err)
	assert.Equal(t, 6400.0, back[0].ReadBackW, "the reset dropped the cap")

	drifts, err = d.ReconcileCaps(ctx)
	require.NoError(t, err)
	require.Len(t, drifts, 1)
	assert.Equal(t, "gpu-a-r01-n01", drifts[0].Node)
	assert.Equal(t, 6400.0, drifts[0].ReadBackW)
	a, ok = d.Stream.Get(facilityd.CapDrift, rack)
	require.True(t, ok, "the drift was raised")
	assert.False(t, a.Active, "written back, the alarm cleared")
	assert.False(t, a.FirstSeen.IsZero())
	back = apply.Run(ctx, apply.Read, targets, opt)
	for _, r := range back {
		require.NoError(t, r.Err)
		assert.Equal(t, 4200.0, r.ReadBackW, "%s: the reconciler wrote the cap back", r.Node)
	}
	assert.Empty(t, d.Ctl.HeldNodes(), "a cap drift drains nothing")

	// a BMC that refuses the write back: the drift stays raised, naming it
	require.NoError(t, o.AddFleetDefect(fleet.Defect{Kind: sim.DefectBMCReset, Target: "bmc-a-r01-n02"}))
	require.NoError(t, o.AddFleetDefect(fleet.Defect{Kind: sim.DefectBMCReadOnly, Target: "bmc-a-r01-n02"}))
	_, err = d.ReconcileCaps(ctx)
	require.NoError(t, err)
	a, ok = d.Stream.Get(facilityd.CapDrift, rack)
	require.True(t, ok)
	assert.True(t, a.Active, "not written back: still drifted")
	assert.Contains(t, a.Detail, "BMC bmc-a-r01-n02 (node gpu-a-r01-n02): Controls/PowerLimit: PATCH")
	assert.Contains(t, a.Detail, "403")

	_, err = facilityd.ParseConfig("f.json", []byte(`{"contracts": "x", "state_dir": "s", "scheduler": {"kind": "none"}, "caps": {"binding": "b"}}`))
	assert.ErrorContains(t, err, "caps.file: the caps file to keep applied is needed")
}
