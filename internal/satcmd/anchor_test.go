package satcmd

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/seamdc/seam/internal/evidence"
)

// A failing capture attached to a signed run, by a trusted key, is cut
// off as an attacker would: the journal truncated back to before its
// amendment and its files removed. What is left verifies with --trust
// and passes (nothing inside a bundle can show its tail was removed);
// the head kept outside the bundle before the cut finds it. A head of
// another bundle, a rewritten one and a file that is no head are
// refused, and no head is kept of a bundle that does not verify.
func TestAnchorFindsATailCutOff(t *testing.T) {
	good, other, key, trust := signedBundles(t)
	dir := filepath.Join(t.TempDir(), "ev")
	require.NoError(t, os.CopyFS(dir, os.DirFS(good)))
	jpath := filepath.Join(dir, evidence.JournalFile)
	st, err := os.Stat(jpath)
	require.NoError(t, err)
	runEnd, runRecords := st.Size(), len(journal(t, dir))
	pub, _, _, _, err := ssh.ParseAuthorizedKey(mustRead(t, trust))
	require.NoError(t, err)
	fp := ssh.FingerprintSHA256(pub)

	drop := analyserCapture(t, firstEdge(t, dir, voltageCase, "excite"), 0, 0.1, t.TempDir())
	code, out, errOut := sat(t, "attach", dir, drop, "--case", voltageCase, "--channel", "VAB", "--key", key, "--by", "Jane Roe")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "keep the new head outside the bundle, so that sat verify --anchor finds a tail cut off: sat verify "+dir+" --head-out FILE\n")
	anchor := filepath.Join(t.TempDir(), "head.json")
	code, vout, _ := sat(t, "verify", dir, "--trust", trust, "--head-out", anchor)
	require.Equal(t, 0, code, vout)
	assert.Contains(t, vout, "results: failed with the failing captures of "+voltageCase)
	recs := journal(t, dir)
	last := recs[len(recs)-1]
	at := last.Time.UTC().Format("2006-01-02T15:04:05Z")
	id := bundleID(t, dir)
	assert.Contains(t, vout, fmt.Sprintf("head: record %d of bundle %s (%s) written to %s: keep it outside the bundle, and give it to sat verify --anchor\n", len(recs), id, last.Hash[:19]+"…", anchor))
	code, vout, _ = sat(t, "verify", dir, "--trust", trust, "--anchor", anchor)
	require.Equal(t, 0, code, vout)
	assert.Contains(t, vout, fmt.Sprintf("anchor: record %d, the head anchored at %s, is held as it was; 0 record(s) after it\n", len(recs), at))

	// the cut: the amendment and what it attached
	require.NoError(t, os.Truncate(jpath, runEnd))
	require.NoError(t, os.RemoveAll(filepath.Join(dir, evidence.AttachDir)))
	code, vout, _ = sat(t, "verify", dir, "--trust", trust)
	require.Equal(t, 0, code, "the documented limit: a tail cut off verifies without the anchor\n%s", vout)
	assert.NotContains(t, vout, "failing captures")
	assert.Contains(t, vout, fmt.Sprintf("anchor: none: anything after record %d (%s) could have been cut off unseen; keep the head outside the bundle (sat verify %s --head-out FILE) and give it with --anchor FILE\n",
		runRecords, recs[runRecords-1].Time.UTC().Format("2006-01-02T15:04:05Z"), dir))
	code, vout, _ = sat(t, "verify", dir, "--trust", trust, "--anchor", anchor, "--head-out", filepath.Join(t.TempDir(), "new.json"))
	assert.Equal(t, 2, code, vout)
	assert.Contains(t, vout, fmt.Sprintf("FAILED: 1 problem(s):\n  the bundle no longer holds record %d, its head anchored at %s (sealed by %s (Jane Roe)): it ends at record %d, its tail cut back after the anchor (an amendment dropped)\n",
		len(recs), at, fp, runRecords))
	assert.Contains(t, vout, "head: not written to ")
	assert.NotContains(t, vout, "anchor: none")

	// a head of another bundle
	code, vout, _ = sat(t, "verify", other, "--trust", trust, "--anchor", anchor)
	assert.Equal(t, 2, code, vout)
	assert.Contains(t, vout, fmt.Sprintf("  the anchor is of bundle %s, not this one (%s): give this bundle's anchor\n", id, bundleID(t, other)))

	// a head whose record the bundle holds with another hash
	var a map[string]any
	require.NoError(t, json.Unmarshal(mustRead(t, anchor), &a))
	a["records"], a["hash"] = runRecords, recs[0].Hash
	rewritten := filepath.Join(t.TempDir(), "rewritten.json")
	raw, err := json.Marshal(a)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(rewritten, raw, 0o644))
	code, vout, _ = sat(t, "verify", dir, "--anchor", rewritten)
	assert.Equal(t, 2, code, vout)
	assert.Contains(t, vout, fmt.Sprintf("  record %d is not the head anchored at %s (sealed by %s (Jane Roe)): the journal up to it was rewritten\n", runRecords, at, fp))

	// a file that is no bundle's head
	notHead := filepath.Join(t.TempDir(), "lifecycle-head.json")
	require.NoError(t, os.WriteFile(notHead, []byte(`{"format": "seam.lifecycle.anchor/v1"}`), 0o644))
	code, _, errOut = sat(t, "verify", dir, "--anchor", notHead)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, fmt.Sprintf(`anchor %s: format "seam.lifecycle.anchor/v1", want "seam.evidence.anchor/v1" (what sat verify --head-out writes)`, notHead))
}

// bundleID is the id record 1 of dir's journal gives the bundle.
func bundleID(t *testing.T, dir string) string {
	t.Helper()
	var br evidence.BundleRecord
	require.NoError(t, json.Unmarshal(journal(t, dir)[0].Data, &br))
	return br.ID
}
