package satcmd

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	htmlpkg "html"
	"image"
	"image/color"
	pngenc "image/png"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"

	"github.com/seamdc/seam/internal/evidence"
	"github.com/seamdc/seam/internal/peer"
	"github.com/seamdc/seam/internal/plan"
)

// A witness and the accepting engineer sign a finished run with their
// own keys, one of them in two steps with ssh-keygen; a photo is
// attached. Each is a signed amendment after run_end; verify lists who
// signed what, --trust needs every signer, and nothing the run wrote
// changed.
func TestSignOffAndAttach(t *testing.T) {
	good, _, _, runTrust := signedBundles(t)
	dir := filepath.Join(t.TempDir(), "ev")
	require.NoError(t, os.CopyFS(dir, os.DirFS(good)))
	manifest, err := os.ReadFile(filepath.Join(dir, evidence.ManifestFile))
	require.NoError(t, err)
	witnessKey, witnessTrust := sshKey(t)

	code, out, errOut := sat(t, "sign-off", dir, "--role", "witness", "--key", witnessKey, "--by", "Jane Roe", "--note", "witnessed every manual step")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "sign-off: amendment 1 (sign-off, witness by Jane Roe) added to "+dir)

	// the accepting engineer's key is a hardware key: prepare, sign with
	// ssh-keygen, add
	accKey := filepath.Join(t.TempDir(), "acc")
	keygen := peer.Need(t, "ssh-keygen")
	require.NoError(t, exec.Command(keygen, "-q", "-t", "ed25519", "-N", "", "-C", "acceptance", "-f", accKey).Run())
	stmt := filepath.Join(t.TempDir(), "statement")
	code, out, errOut = sat(t, "sign-off", dir, "--role", "acceptance", "--by", "Ann Lee", "--prepare", stmt)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "ssh-keygen -Y sign -f KEY -n seam-evidence "+stmt)
	code, vout, _ := sat(t, "verify", dir)
	require.Equal(t, 0, code, vout)
	assert.NotContains(t, vout, "amendment 2", "preparing changes nothing")
	sign := exec.Command(keygen, "-Y", "sign", "-f", accKey, "-n", evidence.Namespace, stmt)
	msg, err := sign.CombinedOutput()
	require.NoError(t, err, "%s", msg)
	code, _, errOut = sat(t, "sign-off", dir, "--role", "witness", "--by", "Ann Lee", "--statement", stmt)
	require.Equal(t, 1, code)
	assert.Contains(t, errOut, "was prepared for sign-off (acceptance by Ann Lee), not sign-off (witness by Ann Lee): give the same flags")
	code, out, errOut = sat(t, "sign-off", dir, "--role", "acceptance", "--by", "Ann Lee", "--statement", stmt)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "amendment 2 (sign-off, acceptance by Ann Lee)")

	photo := filepath.Join(t.TempDir(), "skid-nameplate.jpg")
	require.NoError(t, os.WriteFile(photo, []byte("\xff\xd8 a photo"), 0o644))
	code, _, errOut = sat(t, "attach", dir, photo, "--key", witnessKey, "--by", "Jane Roe")
	require.Equal(t, 0, code, errOut)

	var png bytes.Buffer
	img := image.NewRGBA(image.Rect(0, 0, 4, 4))
	img.Set(1, 1, color.RGBA{R: 200, A: 255})
	require.NoError(t, pngenc.Encode(&png, img))
	meter := filepath.Join(t.TempDir(), "meter-display.png")
	require.NoError(t, os.WriteFile(meter, png.Bytes(), 0o644))
	code, _, errOut = sat(t, "attach", dir, meter, "--key", witnessKey, "--by", "Jane Roe", "--note", "the analyser's display at the step")
	require.Equal(t, 0, code, errOut)

	// the report shows the photo, names the file it cannot show, and who
	// signed what
	rep := filepath.Join(t.TempDir(), "rep")
	code, _, errOut = sat(t, "report", dir, "--format", "html", "--out", rep)
	require.Equal(t, 0, code, errOut)
	raw, err := os.ReadFile(filepath.Join(rep, "report.html"))
	require.NoError(t, err)
	page := htmlpkg.UnescapeString(string(raw))
	for _, want := range []string{
		`<img src="data:image/png;base64,` + base64.StdEncoding.EncodeToString(png.Bytes()) + `"`,
		"attachments/meter-display.png · " + strconv.Itoa(png.Len()) + " bytes · attached by Jane Roe: the analyser's display at the step",
		"attachments/skid-nameplate.jpg · 10 bytes · attached by Jane Roe<br>",
	} {
		assert.True(t, strings.Contains(page, want), "the report has no %q", want)
	}
	assert.Equal(t, 1, strings.Count(page, "<img "), "the JPEG that is not one is named, not shown")

	code, vout, _ = sat(t, "verify", dir)
	require.Equal(t, 0, code, vout)
	assert.Regexp(t, `amendment 1 \(records \d+–\d+\): sign-off \(witness\) by Jane Roe, key SHA256:\S+, \S+: "witnessed every manual step"; signs manifest sha256:`, vout)
	assert.Contains(t, vout, "amendment 2 (records")
	assert.Contains(t, vout, "sign-off (acceptance) by Ann Lee, key SHA256:")
	assert.Contains(t, vout, "amendment 3 (records")
	assert.Contains(t, vout, "attach (attach) by Jane Roe")
	assert.Contains(t, vout, "; adds attachments/skid-nameplate.jpg")
	// the first line says who signed each part: the run, then each amendment
	assert.Regexp(t, `^signed by SHA256:\S+ \(\S+\) up to record \d+ of \d+: the whole run, to its end`+
		`; amendment 1 \(sign-off as witness, records \d+–\d+\): signed by SHA256:\S+ \(Jane Roe\)`+
		`; amendment 2 \(sign-off as acceptance, records \d+–\d+\): signed by SHA256:\S+ \(Ann Lee\)`+
		`; amendment 3 \(attach as attach, records \d+–\d+\): signed by SHA256:\S+ \(Jane Roe\)`+
		`; amendment 4 \(attach as attach, records \d+–\d+\): signed by SHA256:\S+ \(Jane Roe\)\n`, vout)
	after, err := os.ReadFile(filepath.Join(dir, evidence.ManifestFile))
	require.NoError(t, err)
	assert.Equal(t, manifest, after, "the manifest never changes")

	// --trust: every signer must be trusted
	code, vout, _ = sat(t, "verify", dir, "--trust", runTrust)
	assert.Equal(t, 2, code, vout)
	assert.Contains(t, vout, "amendment 1 (sign-off by Jane Roe) is signed by SHA256:")
	all := filepath.Join(t.TempDir(), "all")
	var keys []byte
	for _, f := range []string{runTrust, witnessTrust, accKey + ".pub"} {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		keys = append(keys, b...)
	}
	require.NoError(t, os.WriteFile(all, keys, 0o644))
	code, vout, _ = sat(t, "verify", dir, "--trust", all)
	require.Equal(t, 0, code, vout)
	code, rout, rerr := sat(t, "report", dir, "--trust", all, "--format", "md", "--out", "-")
	require.Equal(t, 0, code, rerr)
	assert.Contains(t, rout, "- sign-off by Jane Roe (witness), `SHA256:")

	// an attachment changed after it was signed
	require.NoError(t, os.WriteFile(filepath.Join(dir, "attachments", "skid-nameplate.jpg"), []byte("another photo"), 0o644))
	code, vout, _ = sat(t, "verify", dir)
	assert.Equal(t, 2, code, vout)
	assert.Contains(t, vout, "attachments/skid-nameplate.jpg: digest sha256:")

	// an unfinished run cannot be signed off: it resumes
	cut := filepath.Join(t.TempDir(), "cut")
	require.NoError(t, os.CopyFS(cut, os.DirFS(good)))
	cutAfterCase(t, cut, 2)
	rm(t, cut, evidence.ManifestFile, evidence.SignatureFile, evidence.ResultsFile)
	code, _, errOut = sat(t, "sign-off", cut, "--role", "witness", "--key", witnessKey, "--by", "Jane Roe")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "the run has not finished: it has no run_end and manifest (resume it with sat run --resume)")
}

// --resume verifies first, and refuses a damaged, finished or foreign
// bundle with the reason, changing nothing.
func TestResumeRefusesWhatDoesNotVerify(t *testing.T) {
	good, _, key, _ := signedBundles(t)
	resume := func(dir string, extra ...string) (int, string) {
		args := append([]string{"run", "--resume", dir, "--sim", "--time-scale", "max", "--contracts", exampleDir, "--fixtures", fixturesDir}, extra...)
		code, _, stderr := sat(t, args...)
		return code, stderr
	}
	copyOf := func() string {
		dir := filepath.Join(t.TempDir(), "ev")
		require.NoError(t, os.CopyFS(dir, os.DirFS(good)))
		return dir
	}
	unfinished := func() string {
		dir := copyOf()
		cutAfterCase(t, dir, 3)
		rm(t, dir, evidence.ManifestFile, evidence.SignatureFile, evidence.ResultsFile)
		return dir
	}
	t.Run("samples truncated by 5 kB", func(t *testing.T) {
		dir := unfinished()
		path := filepath.Join(dir, evidence.SamplesFile)
		// 5 kB less than the last checkpoint covers
		var last int64
		for _, r := range journal(t, dir) {
			if r.Kind == evidence.KindCheckpoint {
				var cp evidence.Checkpoint
				require.NoError(t, json.Unmarshal(r.Data, &cp))
				last = cp.SamplesBytes
			}
		}
		require.NoError(t, os.Truncate(path, last-5000))
		before, _ := os.ReadFile(path)
		code, stderr := resume(dir, "--sign-key", key)
		assert.Equal(t, 1, code)
		assert.Contains(t, stderr, "cannot resume "+dir+": it does not verify: samples.csv is ")
		assert.Contains(t, stderr, "samples were removed (the file was truncated)")
		after, _ := os.ReadFile(path)
		assert.Equal(t, before, after, "never extends a file")
	})
	t.Run("finished, its manifest deleted", func(t *testing.T) {
		dir := copyOf()
		rm(t, dir, evidence.ManifestFile, evidence.SignatureFile)
		code, stderr := resume(dir, "--sign-key", key)
		assert.Equal(t, 1, code)
		assert.Contains(t, stderr, "the run finished (run_end is record ")
		n := strings.Count(string(mustRead(t, filepath.Join(dir, evidence.JournalFile))), `"kind":"run_end"`)
		assert.Equal(t, 1, n, "no second run_end")
	})
	t.Run("signed, resumed unsigned", func(t *testing.T) {
		code, stderr := resume(unfinished())
		assert.Equal(t, 1, code)
		assert.Contains(t, stderr, "it is signed (by SHA256:")
		assert.Contains(t, stderr, "resume it signed, with --sign-key")
	})
	t.Run("another plan", func(t *testing.T) {
		dir := unfinished()
		other := examplePlan(t, plan.IST)
		code, _, stderr := sat(t, "run", other, "--resume", dir, "--sim", "--time-scale", "max", "--contracts", exampleDir, "--fixtures", fixturesDir, "--sign-key", key)
		assert.Equal(t, 1, code)
		assert.Contains(t, stderr, "it ran plan sha256:")
		assert.Contains(t, stderr, "not this plan")
	})
	t.Run("a plan widened in the bundle", func(t *testing.T) {
		dir := unfinished()
		replaceIn(t, dir, evidence.PlanFile, `"max": 36.5`, `"max": 46.5`)
		code, stderr := resume(dir, "--sign-key", key)
		assert.Equal(t, 1, code)
		assert.Contains(t, stderr, "the plan was edited after contractc wrote it")
		// and with the plan given, the bundle's edited copy does not verify
		code, _, stderr = sat(t, "run", examplePlan(t, plan.SAT), "--resume", dir, "--sim", "--time-scale", "max", "--contracts", exampleDir, "--fixtures", fixturesDir, "--sign-key", key)
		assert.Equal(t, 1, code)
		assert.Contains(t, stderr, "it does not verify: plan.json: digest sha256:")
	})
	t.Run("an unfinished bundle resumes", func(t *testing.T) {
		dir := unfinished()
		code, stderr := resume(dir, "--sign-key", key)
		require.Equal(t, 0, code, stderr)
		rep, err := evidence.Audit(dir, evidence.AuditOptions{})
		require.NoError(t, err)
		assert.True(t, rep.OK(), rep.All())
		assert.True(t, rep.Complete)
	})
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return b
}

// A key that ssh-agent holds signs as a key file does: --sign-key
// names its public key.
func TestSigningThroughSSHAgent(t *testing.T) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	keyring := agent.NewKeyring()
	require.NoError(t, keyring.Add(agent.AddedKey{PrivateKey: priv, Comment: "hardware"}))
	sock := filepath.Join(t.TempDir(), "agent.sock")
	l, err := net.Listen("unix", sock)
	require.NoError(t, err)
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() { _ = agent.ServeAgent(keyring, c); c.Close() }()
		}
	}()
	sp, err := ssh.NewPublicKey(pub)
	require.NoError(t, err)
	pubFile := filepath.Join(t.TempDir(), "key.pub")
	require.NoError(t, os.WriteFile(pubFile, ssh.MarshalAuthorizedKey(sp), 0o644))

	out := filepath.Join(t.TempDir(), "ev")
	env := func(k string) (string, bool) {
		if k == "SSH_AUTH_SOCK" {
			return sock, true
		}
		return os.LookupEnv(k)
	}
	var stdout, stderr bytes.Buffer
	code := runCtx(context.Background(), []string{examplePlan(t, plan.SAT), "--sim", "--contracts", exampleDir, "--fixtures", fixturesDir,
		"--time-scale", "max", "--out", out, "--sign-key", pubFile}, &stdout, &stderr, strings.NewReader(""), env,
		&control{interrupt: make(chan struct{}), kill: make(chan struct{})})
	require.Equal(t, 0, code, "%s\n%s", stdout.String(), stderr.String())
	code, vout, _ := sat(t, "verify", out, "--trust", pubFile)
	require.Equal(t, 0, code, vout)
	assert.Contains(t, vout, "signed by "+ssh.FingerprintSHA256(sp))

	empty := func(k string) (string, bool) { return "", false }
	_, _, err = evidenceSigner(keyFlags{key: pubFile}, empty)
	assert.ErrorContains(t, err, "is a public key, so ssh-agent must hold its private key: SSH_AUTH_SOCK is not set")
}

// Without a key nothing proves who wrote a bundle: a forgery that
// recomputes everything and drops every signature verifies without
// --trust (its first line says UNSIGNED) and fails with it.
func TestKeylessForgeryNeedsTrust(t *testing.T) {
	good, _, _, trust := signedBundles(t)
	dir := filepath.Join(t.TempDir(), "ev")
	require.NoError(t, os.CopyFS(dir, os.DirFS(good)))
	editSample(t, dir, "lb-ma/applied", "9")
	recs := withoutSeals(journal(t, dir))
	rechain(t, dir, recs)
	remanifest(t, dir, recs)
	rm(t, dir, evidence.SignatureFile)
	code, vout, _ := sat(t, "verify", dir)
	assert.Equal(t, 0, code, vout)
	assert.True(t, strings.HasPrefix(vout, "UNSIGNED: nothing in this bundle is signed"), vout)
	code, vout, _ = sat(t, "verify", dir, "--trust", trust)
	assert.Equal(t, 2, code, vout)
	_, stranger := sshKey(t)
	code, vout, _ = sat(t, "verify", good, "--trust", stranger)
	assert.Equal(t, 2, code, vout)
	assert.Contains(t, vout, "which is not among the trusted keys")
	assert.True(t, strings.HasPrefix(vout, "SIGNED, but by no trusted key"), vout)
}
