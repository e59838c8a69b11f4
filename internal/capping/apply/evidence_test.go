package apply

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/seamdc/seam/internal/clock"
	"github.com/seamdc/seam/internal/evidence"
	"github.com/seamdc/seam/internal/redfish/bmc"
)

// A run's caps are an evidence bundle that evidence.Verify accepts:
// signed, the caps file in it, one record a BMC, the outcome failed
// when a BMC did not take its cap.
func TestEvidence(t *testing.T) {
	_, _, good := serve(t, bmc.Config{})
	_, _, low := serve(t, bmc.Config{})
	low.Watts = 1000
	rs := Run(context.Background(), Apply, []Target{good, low}, opts(&stepClock{}))
	require.NoError(t, rs[0].Err)
	require.Error(t, rs[1].Err)

	_, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	s, err := ssh.NewSignerFromKey(priv)
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "ev")
	m, err := Evidence(dir, clock.Real{}, evidence.SSHSigner(s), "ops", "sat cap test", Apply, []byte(`{"format": "seam.caps/v1"}`), rs)
	require.NoError(t, err)
	assert.Equal(t, "failed", m.Outcome)
	assert.Contains(t, m.Files, CapsFile)

	rep, err := evidence.Verify(dir, []ssh.PublicKey{s.PublicKey()})
	require.NoError(t, err)
	assert.True(t, rep.OK(), "%v", rep.Problems)
	assert.True(t, rep.Signed)
	assert.True(t, rep.Complete)
}
