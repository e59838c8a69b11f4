package facilityd_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/seamdc/seam/internal/alarm"
	"github.com/seamdc/seam/internal/clock"
	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/drain/facilityd"
	"github.com/seamdc/seam/internal/lifecycle"
	"github.com/seamdc/seam/internal/peer"
)

// chemStore is a SQLite lifecycle store of the example with module l1
// (and its loop) installed; chemist may record samples.
func chemStore(t *testing.T, now func() time.Time) (*lifecycle.Store, string, lifecycle.Auth) {
	t.Helper()
	ctx := context.Background()
	keys := map[string]lifecycle.Auth{}
	signers := ""
	for _, n := range []string{"ops", "builder", "chemist"} {
		_, priv, err := ed25519.GenerateKey(rand.Reader)
		require.NoError(t, err)
		s, err := ssh.NewSignerFromKey(priv)
		require.NoError(t, err)
		keys[n] = lifecycle.KeyAuth(s, "")
		signers += fmt.Sprintf("%s namespaces=\"seam-lifecycle\" %s", n, ssh.MarshalAuthorizedKey(s.PublicKey()))
	}
	p := &lifecycle.Policy{Format: lifecycle.PolicyFormat, AllowedSigners: signers,
		Roles: map[string]lifecycle.Role{
			"admin":   {May: []string{lifecycle.MayAccess}},
			"builder": {Transitions: []string{"design>built", "built>integrated", "integrated>shipped", "shipped>installed"}},
			"lab":     {May: []string{lifecycle.MayChemistry}},
		},
		Members: map[string]lifecycle.Member{"ssh:ops": {Roles: []string{"admin"}}, "ssh:builder": {Roles: []string{"builder"}}, "ssh:chemist": {Roles: []string{"lab"}}},
	}
	c, diags, err := contract.Load(filepath.Join(peer.Root(t), "contracts/examples/threemodule"))
	require.NoError(t, err)
	require.Empty(t, diags)
	g, _ := c.Graph()
	file := filepath.Join(t.TempDir(), "lifecycle.db")
	s, err := lifecycle.Init(ctx, lifecycle.Config{Store: file, Now: now}, keys["ops"], g, p)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	for _, to := range []lifecycle.State{lifecycle.Built, lifecycle.Integrated, lifecycle.Shipped, lifecycle.Installed} {
		_, err := s.Transition(ctx, keys["builder"], lifecycle.Move{Element: "l1", To: to, Reason: "l1 " + string(to)})
		require.NoError(t, err)
	}
	return s, file, keys["chemist"]
}

// facilityd reads each sampled loop's chemistry from the lifecycle
// store: a loop never sampled is overdue; a sample with its glycol below
// its limits clears that and raises out-of-limits for the loop's domain;
// a good sample clears it. They are warnings: nothing is drained.
func TestChemistryAlarms(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(time.Date(2026, 11, 1, 8, 0, 0, 0, time.UTC))
	s, file, chemist := chemStore(t, clk.Now)
	limits := filepath.Join(t.TempDir(), "limits.json")
	require.NoError(t, os.WriteFile(limits, []byte(`{"format": "seam.chemistry.limits/v1", "default": {"interval_days": 14}}`), 0o644))
	cfg, err := facilityd.LoadConfig(demoConfig(t, `, "chemistry": {"store": "`+file+`", "limits": "`+limits+`"}`))
	require.NoError(t, err)
	d, err := facilityd.New(cfg, facilityd.Options{DryRun: true, Out: io.Discard, Clock: clk})
	require.NoError(t, err)
	defer d.Close()
	l1 := alarm.Domain{Kind: alarm.CoolingLoop, Value: "l1"}
	active := func(typ alarm.Type) (bool, string) {
		a, ok := d.Stream.Get(typ, l1)
		return ok && a.Active, a.Detail
	}

	require.NoError(t, d.CheckChemistry(ctx))
	on, detail := active(facilityd.ChemSampleOverdue)
	assert.True(t, on, "l1/loop was never sampled")
	assert.Contains(t, detail, "no water chemistry sample of l1/loop is recorded (one is due every 14 days)")
	_, ok := d.Stream.Get(facilityd.ChemSampleOverdue, alarm.Domain{Kind: alarm.CoolingLoop, Value: "l2"})
	assert.False(t, ok, "l2 is not installed: its loop is not sampled yet")

	clk.Advance(time.Hour)
	_, err = s.RecordSample(ctx, chemist, lifecycle.Sample{Loop: "l1/loop", SampleID: "LAB-7", Taken: clk.Now().Add(-time.Hour), Lab: "Acme",
		PH: ptr(9.1), Glycol: ptr(17.5)})
	require.NoError(t, err)
	require.NoError(t, d.CheckChemistry(ctx))
	on, _ = active(facilityd.ChemSampleOverdue)
	assert.False(t, on, "sampled: no longer overdue")
	on, detail = active(facilityd.ChemOutOfLimits)
	assert.True(t, on)
	assert.Contains(t, detail, "sample LAB-7 of l1/loop (Acme, 2026-11-01): glycol 17.5 % is below its minimum 22 %")
	assert.Empty(t, d.Ctl.HeldNodes(), "chemistry alarms; it does not drain")

	clk.Advance(time.Hour)
	_, err = s.RecordSample(ctx, chemist, lifecycle.Sample{Loop: "l1/loop", SampleID: "LAB-8", Taken: clk.Now(), Lab: "Acme", PH: ptr(9.1), Glycol: ptr(25)})
	require.NoError(t, err)
	require.NoError(t, d.CheckChemistry(ctx))
	on, _ = active(facilityd.ChemOutOfLimits)
	assert.False(t, on, "the latest sample is in its limits")

	clk.Advance(15 * 24 * time.Hour)
	require.NoError(t, d.CheckChemistry(ctx))
	on, detail = active(facilityd.ChemSampleOverdue)
	assert.True(t, on, "15 days since the last sample, one due every 14")
	assert.Contains(t, detail, "the last sample of l1/loop (LAB-8)")
	assert.Empty(t, d.Ctl.HeldNodes())

	_, err = facilityd.ParseConfig("f.json", []byte(`{"contracts": "x", "state_dir": "s", "scheduler": {"kind": "none"}, "chemistry": {"limits": "l.json"}}`))
	assert.ErrorContains(t, err, "chemistry.store: the lifecycle store that holds the loops' samples is needed")
}

func ptr(v float64) *float64 { return &v }
