package satcmd

import (
	"fmt"
	"html"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/seamdc/seam/internal/cli"
	"github.com/seamdc/seam/internal/evidence"
	"github.com/seamdc/seam/internal/plan"
	"github.com/seamdc/seam/internal/record"
)

// recordedStore is a SQLite lifecycle store of the example whose issues
// log has recorded two signed SAT bundles of module ma, made with the
// real commands: one passing, one failing (the power skid's slow
// recovery), whose issue ma-1 is waived. Both bundles are in one
// directory, base. It returns the store, ops' key (every role), the
// bundles and a trust file of the rig's key (which signed the
// bundles) and ops' key.
func recordedStore(t *testing.T) (s recordedSite) {
	t.Helper()
	dir := t.TempDir()
	ops, opsPub := sshKey(t)
	rig, rigPub := sshKey(t)
	s.ops, s.opsPub = ops, opsPub
	pub := mustRead(t, opsPub)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "allowed_signers"), []byte(`ops namespaces="seam-lifecycle" `+string(pub)), 0o644))
	access := `{
  "format": "seam.lifecycle.access/v1",
  "allowed_signers_file": "allowed_signers",
  "evidence_keys_file": "` + rigPub + `",
  "roles": {"admin": {"may": ["access", "issues", "waive"]}},
  "members": {"ssh:ops": {"roles": ["admin"]}}
}`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "access.json"), []byte(access), 0o644))
	s.trust = filepath.Join(dir, "trusted")
	require.NoError(t, os.WriteFile(s.trust, append(mustRead(t, rigPub), pub...), 0o644))
	t.Setenv("SEAM_LIFECYCLE_STORE", filepath.Join(dir, "site.db"))
	must := func(args ...string) {
		t.Helper()
		code, stdout, stderr := sat(t, args...)
		require.Equal(t, 0, code, "sat %s:\n%s%s", strings.Join(args, " "), stdout, stderr)
	}
	must("lifecycle", "init", exampleDir, "--access", filepath.Join(dir, "access.json"), "--key", ops)

	s.base = filepath.Join(dir, "evidence")
	s.good, s.failing = filepath.Join(s.base, "sat-ma"), filepath.Join(s.base, "sat-ma-failing")
	p := examplePlan(t, plan.SAT)
	errs := make(chan error, 2)
	for _, r := range []struct {
		out  string
		want int
		args []string
	}{{s.good, cli.ExitOK, nil}, {s.failing, cli.ExitFindings, []string{"--defect", "p1-slow-recovery"}}} {
		go func() {
			code, _, stdout := simRun(t, p, r.out, append([]string{"--sign-key", rig}, r.args...)...)
			if code != r.want {
				errs <- fmt.Errorf("sat run --out %s exited %d, want %d: %s", r.out, code, r.want, stdout)
				return
			}
			errs <- nil
		}()
	}
	for range 2 {
		require.NoError(t, <-errs)
	}
	must("issues", "open", "--from", s.good, "--key", ops)
	must("issues", "open", "--from", s.failing, "--key", ops)
	must("issues", "waive", "ma-1", "--reason", "0.2 s over, accepted with VoltSkid", "--key", ops)
	return s
}

// recordedSite is what recordedStore made.
type recordedSite struct {
	ops, opsPub         string // ops' key, and its public key's file
	base, good, failing string // the bundles, in base
	trust               string // the rig's and ops' public keys
}

// manifestOf is a bundle's id and its manifest's digest, as the
// evidence reader finds them.
func manifestOf(t *testing.T, dir string) (string, string) {
	t.Helper()
	rep, err := evidence.Verify(dir, nil)
	require.NoError(t, err)
	require.True(t, rep.OK(), "%v", rep.All())
	return rep.Bundle, rep.ManifestDigest
}

func fingerprintOf(t *testing.T, pubFile string) string {
	t.Helper()
	k, _, _, _, err := ssh.ParseAuthorizedKey(mustRead(t, pubFile))
	require.NoError(t, err)
	return ssh.FingerprintSHA256(k)
}

// sat record writes the handover record of the example: both bundles
// by digest with their signatures, the issue and its waiver, the
// gates, the contracts; sat verify finds it intact, and finds a bundle
// swapped for the other, a record edited after it was signed, and a
// bundle moved away.
func TestRecordAndVerify(t *testing.T) {
	s := recordedStore(t)
	ops, base, good, failing, trust := s.ops, s.base, s.good, s.failing, s.trust
	goodID, goodManifest := manifestOf(t, good)
	failID, failManifest := manifestOf(t, failing)
	out := filepath.Join(t.TempDir(), "handover")

	code, _, stderr := sat(t, "record", "--out", out, "--site", "elsewhere")
	assert.Equal(t, cli.ExitTool, code)
	assert.Contains(t, stderr, `is of site "threemodule", not "elsewhere"`)

	code, stdout, stderr := sat(t, "record", "--out", out, "--site", "threemodule", "--sign-key", ops)
	require.Equal(t, cli.ExitOK, code, stdout+stderr)
	assert.Contains(t, stdout, "record of site threemodule: 2 bundle(s), 1 issue(s) (0 open, 1 waived) of 1 module(s)")
	assert.Contains(t, stdout, "module ma: gates L1 refuses, L2 refuses, L3 passes, L4 passes, L5 refuses", "the waiver lets L4 pass; no FAT, probe or IST is recorded")

	rec, _, err := record.Read(out)
	require.NoError(t, err)
	assert.Equal(t, "threemodule", rec.Site)
	assert.NotEmpty(t, rec.Store)
	require.Len(t, rec.Bundles, 2)
	byID := map[string]record.Bundle{}
	for _, b := range rec.Bundles {
		byID[b.ID] = b
	}
	assert.Equal(t, goodManifest, byID[goodID].Manifest)
	assert.Equal(t, good, byID[goodID].Dir)
	assert.Equal(t, "passed", byID[goodID].Outcome)
	assert.Equal(t, failManifest, byID[failID].Manifest)
	assert.Equal(t, "failed", byID[failID].Outcome)
	for _, b := range rec.Bundles {
		require.NotEmpty(t, b.Signatures, "bundle %s", b.ID)
		assert.Equal(t, b.SignedBy, b.Signatures[0].Key, "signed by the rig's key")
	}
	ma := rec.Modules[0]
	require.Len(t, ma.Waivers, 1)
	assert.Equal(t, "ma-1", ma.Waivers[0].Issue)
	assert.Equal(t, "0.2 s over, accepted with VoltSkid", ma.Waivers[0].Reason)
	l4 := ma.Levels[3]
	require.Len(t, l4.Issues, 1)
	assert.Equal(t, "waived", l4.Issues[0].Status)
	assert.Equal(t, failID, l4.Issues[0].Bundle)
	assert.Len(t, l4.Bundles, 2)
	require.NotEmpty(t, ma.Contracts)
	assert.NotEmpty(t, ma.Contracts[0].Signatures, "every party's signature state")

	page := html.UnescapeString(string(mustRead(t, filepath.Join(out, record.HTMLFile))))
	for _, want := range []string{goodID, failID, goodManifest, failManifest, "ma-1", "0.2 s over, accepted with VoltSkid", byID[goodID].SignedBy, "VoltSkid"} {
		assert.Contains(t, page, want)
	}

	// intact
	code, stdout, _ = sat(t, "verify", out, "--trust", trust)
	require.Equal(t, cli.ExitOK, code, stdout)
	opsFP := fingerprintOf(t, s.opsPub)
	assert.Contains(t, stdout, "record: signed by "+opsFP+", a trusted key")
	assert.Contains(t, stdout, fmt.Sprintf("bundle %s at %s: the one recorded", goodID, good))
	assert.Contains(t, stdout, "OK: "+out)
	code, stdout, _ = sat(t, "verify", filepath.Join(out, record.JSONFile), "--bundles-root", base)
	assert.Equal(t, cli.ExitOK, code, "record.json itself, the bundles found by name under --bundles-root: %s", stdout)

	// a bundle swapped for another
	require.NoError(t, os.Rename(good, good+".orig"))
	require.NoError(t, os.CopyFS(good, os.DirFS(failing)))
	code, stdout, _ = sat(t, "verify", out, "--trust", trust)
	assert.Equal(t, cli.ExitFindings, code, stdout)
	assert.Contains(t, stdout, fmt.Sprintf("bundle %s at %s: swapped: the directory holds bundle %s (manifest %s), not bundle %s (manifest %s) the record names",
		goodID, good, failID, failManifest, goodID, goodManifest))
	assert.Contains(t, stdout, "FAILED: 1 problem(s)")
	code, stdout, _ = sat(t, "record", "--out", filepath.Join(t.TempDir(), "again"))
	assert.Equal(t, cli.ExitFindings, code, "no record of a swapped bundle: %s", stdout)
	assert.Contains(t, stdout, "no record written")
	require.NoError(t, os.RemoveAll(good))
	require.NoError(t, os.Rename(good+".orig", good))

	// the record edited after it was signed
	raw := mustRead(t, filepath.Join(out, record.JSONFile))
	require.NoError(t, os.WriteFile(filepath.Join(out, record.JSONFile), []byte(strings.ReplaceAll(string(raw), goodManifest, failManifest)), 0o644))
	code, stdout, _ = sat(t, "verify", out, "--trust", trust)
	assert.Equal(t, cli.ExitFindings, code, stdout)
	assert.Contains(t, stdout, "the record was changed after it was signed")
	assert.Contains(t, stdout, fmt.Sprintf("bundle %s at %s: its manifest is %s, the record's %s", goodID, good, goodManifest, failManifest))
	require.NoError(t, os.WriteFile(filepath.Join(out, record.JSONFile), raw, 0o644))

	// moved away
	code, stdout, _ = sat(t, "verify", out, "--bundles-root", t.TempDir())
	assert.Equal(t, cli.ExitFindings, code, stdout)
	assert.Contains(t, stdout, fmt.Sprintf("bundle %s at %s (looked for at", goodID, good))
	assert.Contains(t, stdout, "missing: no such file or directory")
	assert.Contains(t, stdout, "FAILED: 2 problem(s)")

	// a bundle's flags are not a record's
	code, _, stderr = sat(t, "verify", out, "--head-out", filepath.Join(t.TempDir(), "head"))
	assert.Equal(t, cli.ExitTool, code)
	assert.Contains(t, stderr, "--anchor and --head-out are a bundle's")
}
