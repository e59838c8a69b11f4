package record

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hiddeco/sshsig"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/seamdc/seam/internal/evidence"
)

func newSigner(t *testing.T) ssh.Signer {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	s, err := ssh.NewSignerFromKey(priv)
	require.NoError(t, err)
	return s
}

func fingerprint(s ssh.Signer) string { return ssh.FingerprintSHA256(s.PublicKey()) }

func mustRead(t *testing.T, dir, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	require.NoError(t, err)
	return b
}

func TestCheckSignature(t *testing.T) {
	raw := []byte(`{"format": "seam.record/v1"}`)
	s, other := newSigner(t), newSigner(t)
	sig, err := Sign(raw, s)
	require.NoError(t, err)
	evidenceSig, err := sshsig.Sign(bytes.NewReader(raw), s, sshsig.HashSHA512, evidence.Namespace)
	require.NoError(t, err)
	tests := []struct {
		name    string
		raw     []byte
		sig     []byte
		trusted []ssh.PublicKey
		want    string // "": it holds
	}{
		{"any key", raw, sig, nil, ""},
		{"a trusted key", raw, sig, []ssh.PublicKey{other.PublicKey(), s.PublicKey()}, ""},
		{"an untrusted key", raw, sig, []ssh.PublicKey{other.PublicKey()}, "which is not a trusted key"},
		{"the record changed", append([]byte(" "), raw...), sig, nil, "the record was changed after it was signed"},
		{"another namespace", raw, sshsig.Armor(evidenceSig), nil, `namespace "seam-evidence"`},
		{"not a signature", raw, []byte("hello"), nil, "not an SSH signature"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fp, err := CheckSignature(tt.raw, tt.sig, tt.trusted)
			if tt.want == "" {
				require.NoError(t, err)
				assert.Equal(t, fingerprint(s), fp)
				return
			}
			assert.ErrorContains(t, err, tt.want)
		})
	}
}

func TestLocate(t *testing.T) {
	tests := []struct{ dir, root, want string }{
		{"evidence/sat-ma", "", "evidence/sat-ma"},
		{"/srv/site/evidence/sat-ma", "", "/srv/site/evidence/sat-ma"},
		{"evidence/sat-ma", "/mnt/handover", "/mnt/handover/evidence/sat-ma"},
		{"/srv/site/evidence/sat-ma", "/mnt/handover", "/mnt/handover/sat-ma"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, Locate(tt.dir, tt.root), "Locate(%q, %q)", tt.dir, tt.root)
	}
}

func TestHoldsHead(t *testing.T) {
	dir := t.TempDir()
	journal := `{"seq":1,"kind":"bundle","prev":"sha256:0","hash":"sha256:aaa"}` + "\n" +
		`{"seq":2,"kind":"checkpoint","prev":"sha256:aaa","hash":"sha256:bbb"}` + "\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, evidence.JournalFile), []byte(journal), 0o644))
	assert.True(t, holdsHead(dir, "sha256:aaa"), "a record before the end")
	assert.True(t, holdsHead(dir, "sha256:bbb"), "the last record")
	assert.False(t, holdsHead(dir, "sha256:ccc"), "a record cut off")
	assert.False(t, holdsHead(dir, "sha256:0"), "a prev hash is not a record's")
	assert.False(t, holdsHead(t.TempDir(), "sha256:aaa"), "no journal")
}

func TestCheckBundleMissingOrNotABundle(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "empty"), 0o755))
	tests := []struct{ dir, want string }{
		{"gone", "bundle b-1 at gone (looked for at " + filepath.Join(root, "gone") + "): missing: no such file or directory"},
		{"empty", "bundle b-1 at empty (looked for at " + filepath.Join(root, "empty") + "): not an evidence bundle"},
	}
	for _, tt := range tests {
		res := CheckBundle(Bundle{ID: "b-1", Dir: tt.dir, Manifest: "sha256:m"}, Options{Root: root})
		require.False(t, res.OK())
		assert.True(t, strings.HasPrefix(res.Problems[0], tt.want), "%s", res.Problems[0])
	}
}
