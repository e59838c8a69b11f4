package firmware

import (
	"crypto/ed25519"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/seamdc/seam/internal/sign"
)

func testSigner(t *testing.T) ssh.Signer {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(nil)
	require.NoError(t, err)
	s, err := ssh.NewSignerFromKey(priv)
	require.NoError(t, err)
	return s
}

// A baseline's signatures: each party the policy names, missing until it
// signs, signed as it is, stale once the baseline changes, invalid by a
// key the allowed signers do not list for the party or with a signature
// that does not match; a key not listed for the party may not sign.
func TestSignatures(t *testing.T) {
	dir := writeFiles(t, map[string]string{"baseline.cue": readFile(t, filepath.Join(exampleDir, Dir, "baseline.cue"))})
	set, diags, err := Load(dir)
	require.NoError(t, err)
	require.Empty(t, diags)
	vendor, other := testSigner(t), testSigner(t)
	line := func(p string, k ssh.Signer) string {
		return p + ` namespaces="seam-contract" ` + string(ssh.MarshalAuthorizedKey(k.PublicKey()))
	}
	allowed, err := sign.ParseAllowedSigners("allowed_signers", []byte(line("GPUWorks", vendor)+line("CoolFlow", other)))
	require.NoError(t, err)
	now := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	state := func() Signature {
		sigs := Signatures(set, allowed, now)
		require.Len(t, sigs, 1)
		return sigs[0]
	}

	assert.Equal(t, Missing, state().State)
	_, err = Sign(set, "GPUWorks", other, allowed, now, "test")
	require.ErrorContains(t, err, "refusing to sign as GPUWorks")
	path, err := Sign(set, "GPUWorks", vendor, allowed, now, "test")
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, "signatures", "GPUWorks.json"), path)
	got := state()
	assert.Equal(t, Signed, got.State, got.Why)
	assert.Equal(t, ssh.FingerprintSHA256(vendor.PublicKey()), got.Key)

	// the baseline changed since
	changed := *set
	changed.Digest = "sha256:" + strings.Repeat("0", 64)
	sigs := Signatures(&changed, allowed, now)
	assert.Equal(t, Stale, sigs[0].State)
	assert.Contains(t, sigs[0].Why, "the baseline changed since GPUWorks signed it")

	// a statement edited after signing
	body, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, []byte(strings.Replace(string(body), `"tool": "test"`, `"tool": "tset"`, 1)), 0o644))
	got = state()
	assert.Equal(t, Invalid, got.State)
	assert.Contains(t, got.Why, "does not match the statement")

	// signed by a key listed for another party only
	unlisted, err := sign.ParseAllowedSigners("allowed_signers", []byte(line("CoolFlow", vendor)))
	require.NoError(t, err)
	_, err = Sign(set, "GPUWorks", vendor, nil, now, "test")
	require.NoError(t, err)
	sigs = Signatures(set, unlisted, now)
	assert.Equal(t, Invalid, sigs[0].State)
	assert.Contains(t, sigs[0].Why, "not by a key of GPUWorks")
}
