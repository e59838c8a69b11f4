package report

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	stdhtml "html"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/seamdc/seam/internal/clock"
	"github.com/seamdc/seam/internal/evidence"
	"github.com/seamdc/seam/internal/report/reporttest"
)

// An unsigned run with a sign-off signed by a named key: the report
// says what each part is signed by, and never that nothing is signed
// next to the signed sign-off.
func TestReportSaysWhatEachPartIsSignedBy(t *testing.T) {
	dir := writeBundle(t, "sat", "ma", reporttest.Options{})
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	key, err := ssh.NewSignerFromKey(priv)
	require.NoError(t, err)
	fp := ssh.FingerprintSHA256(key.PublicKey())
	a, err := evidence.Amend(dir, evidence.SSHSigner(key), evidence.Amendment{Purpose: evidence.PurposeSignOff, Role: evidence.RoleAcceptance, By: "Jane Roe"}, clock.Real{})
	require.NoError(t, err)
	require.NoError(t, a.Close())

	r, err := Load(dir, Options{})
	require.NoError(t, err)
	require.True(t, r.OK(), r.Integrity)

	var html bytes.Buffer
	require.NoError(t, HTML(&html, r))
	var md bytes.Buffer
	require.NoError(t, Markdown(&md, r))
	for name, out := range map[string]string{"trust": r.Trust, "html": stdhtml.UnescapeString(html.String()), "markdown": md.String()} {
		assert.NotContains(t, out, "nothing in this bundle is signed", name)
		assert.Contains(t, out, fp, name)
	}
	assert.Contains(t, r.Trust, "UNSIGNED run: the run itself is not signed")
	assert.Contains(t, r.Trust, "; amendment 1 (sign-off as acceptance, records ")
	assert.Contains(t, r.Trust, "): signed by "+fp+" (Jane Roe)")
	assert.Contains(t, html.String(), "<tr><th>signed</th><td>UNSIGNED run: the run itself is not signed;")
	assert.Contains(t, html.String(), "the manifest's digests and every signature.", "the sign-off's signature was checked")
	integrity := md.String()
	assert.Contains(t, integrity, "Evidence verifies (the run is not signed: its hashes detect accidents, not a deliberate edit; each amendment below says who signed it)")
	assert.Contains(t, integrity, "- sign-off by Jane Roe (acceptance), `"+fp+"`")
}
