package evidence

import (
	"crypto/ed25519"
	"crypto/rand"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/seamdc/seam/internal/clock"
)

// The head of a signed bundle with a sign-off, kept outside it, reads
// back as written and holds; the sign-off cut off is then a problem, and
// no head is kept of a bundle that does not verify.
func TestAnchorHoldsAndFindsTheCut(t *testing.T) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	key, err := ssh.NewSignerFromKey(priv)
	require.NoError(t, err)
	dir, c := t.TempDir(), clock.NewFake(t0)
	run(t, dir, c, true, key)
	rep, err := Verify(dir, nil)
	require.NoError(t, err)
	cut := rep.JournalBytes
	c.Advance(time.Hour)
	a, err := Amend(dir, SSHSigner(key), Amendment{Purpose: PurposeSignOff, Role: RoleAcceptance, By: "Jane Roe"}, c)
	require.NoError(t, err)
	require.NoError(t, a.Close())

	rep, err = Verify(dir, nil)
	require.NoError(t, err)
	head, err := rep.Head()
	require.NoError(t, err)
	assert.Equal(t, AnchorFormat, head.Format)
	assert.Equal(t, rep.Bundle, head.Bundle)
	assert.Equal(t, int64(rep.Records), head.Records)
	assert.Equal(t, "Jane Roe", head.By)
	assert.Equal(t, ssh.FingerprintSHA256(key.PublicKey()), head.Key)
	path := filepath.Join(t.TempDir(), "head.json")
	require.NoError(t, WriteAnchor(path, head))
	back, err := ReadAnchor(path)
	require.NoError(t, err)
	assert.Equal(t, head, back)

	rep, err = Audit(dir, AuditOptions{Anchor: back})
	require.NoError(t, err)
	assert.Empty(t, rep.Problems)
	assert.True(t, rep.Anchored)

	require.NoError(t, os.Truncate(filepath.Join(dir, JournalFile), cut))
	rep, err = Audit(dir, AuditOptions{Anchor: back})
	require.NoError(t, err)
	assert.Equal(t, []string{"the bundle no longer holds record " + itoa(head.Records) + ", its head anchored at " + head.When() +
		" (sealed by " + head.Key + " (Jane Roe)): it ends at record " + itoa(int64(rep.Records)) + ", its tail cut back after the anchor (an amendment dropped)"}, rep.Problems)
	_, err = rep.Head()
	assert.ErrorContains(t, err, "does not verify (1 problem(s)): no head is kept of it")
}

// An anchor file is read strictly and says what is expected of it.
func TestReadAnchorIsStrict(t *testing.T) {
	for name, body := range map[string]string{
		"not JSON":       `head`,
		"unknown field":  `{"format": "seam.evidence.anchor/v1", "store": "x"}`,
		"another format": `{"format": "seam.lifecycle.anchor/v1"}`,
		"no hash":        `{"format": "seam.evidence.anchor/v1", "bundle": "b", "records": 3, "hash": "abc"}`,
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "head.json")
			require.NoError(t, os.WriteFile(path, []byte(body), 0o644))
			_, err := ReadAnchor(path)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "anchor "+path+": ")
			assert.Contains(t, err.Error(), "what sat verify --head-out writes")
		})
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
