package evidence

import (
	"crypto/ed25519"
	"crypto/rand"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/seamdc/seam/internal/peer"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/seamdc/seam/internal/clock"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// run writes a small bundle: two cases with samples, with time advancing.
func run(t *testing.T, dir string, c *clock.Fake, finish bool, signer ssh.Signer) *Bundle {
	t.Helper()
	b, err := Create(dir, c)
	require.NoError(t, err)
	for i, id := range []string{"SAT-001", "SAT-002"} {
		_, err := b.Append("case_start", id, map[string]int{"n": i})
		require.NoError(t, err)
		for k := 0; k < 5; k++ {
			c.Advance(300 * time.Millisecond)
			require.NoError(t, b.Sample(Sample{Channel: "p1/ma/feed-a/voltage", Time: c.Now(), Value: 415 + float64(k), Quality: "good"}))
		}
		_, err = b.Append("case_end", id, map[string]string{"verdict": "PASS"})
		require.NoError(t, err)
		require.NoError(t, b.Sync())
	}
	if finish {
		require.NoError(t, b.WriteFile(ResultsFile, []byte(`{"outcome":"passed"}`)))
		_, err := b.Finish(Meta{ToolVersion: "test", PlanDigest: "sha256:plan", Outcome: "passed"}, signer)
		require.NoError(t, err)
	}
	return b
}

func TestFinishedBundleVerifies(t *testing.T) {
	dir := t.TempDir()
	run(t, dir, clock.NewFake(t0), true, nil)
	rep, err := Verify(dir, nil)
	require.NoError(t, err)
	require.Empty(t, rep.Problems)
	require.True(t, rep.Complete)
	require.Equal(t, 2, rep.Cases)
	require.Zero(t, rep.Unverified)
}

// TestAnyChangedByteFails flips every byte of every file in turn.
func TestAnyChangedByteFails(t *testing.T) {
	dir := t.TempDir()
	run(t, dir, clock.NewFake(t0), true, nil)
	for _, name := range []string{JournalFile, SamplesFile, ResultsFile, ManifestFile} {
		path := filepath.Join(dir, name)
		orig, err := os.ReadFile(path)
		require.NoError(t, err)
		for i := range orig {
			changed := append([]byte(nil), orig...)
			changed[i] ^= 0x01
			require.NoError(t, os.WriteFile(path, changed, 0o644))
			rep, err := Verify(dir, nil)
			if err == nil && rep.OK() {
				t.Fatalf("flipping byte %d of %s went unnoticed", i, name)
			}
		}
		require.NoError(t, os.WriteFile(path, orig, 0o644))
	}
	rep, err := Verify(dir, nil)
	require.NoError(t, err)
	require.True(t, rep.OK(), rep.Problems)

	require.NoError(t, os.WriteFile(filepath.Join(dir, "extra.txt"), []byte("x"), 0o644))
	rep, _ = Verify(dir, nil)
	require.Contains(t, rep.Problems[0], "extra.txt: not listed in the manifest")
}

func TestSyncAtLeastEverySecond(t *testing.T) {
	c := clock.NewFake(t0)
	dir := t.TempDir()
	b, err := Create(dir, c)
	require.NoError(t, err)
	_, err = b.Append("case_start", "A", nil)
	require.NoError(t, err)
	onDisk := func() int64 {
		info, err := os.Stat(filepath.Join(dir, JournalFile))
		require.NoError(t, err)
		return info.Size()
	}
	require.Zero(t, onDisk(), "buffered until a second has passed")
	c.Advance(time.Second)
	require.NoError(t, b.Sample(Sample{Channel: "x", Time: c.Now(), Value: 1, Quality: "good"}))
	require.Positive(t, onDisk(), "a write a second after the last sync is durable")
	rep, err := Verify(dir, nil)
	require.NoError(t, err)
	require.True(t, rep.OK(), rep.Problems)
	require.False(t, rep.Complete)
}

func TestCrashThenResume(t *testing.T) {
	c := clock.NewFake(t0)
	dir := t.TempDir()
	b := run(t, dir, c, false, nil)
	// the crash: a third case half-way, its samples unsynced, then a
	// half-written journal line
	_, err := b.Append("case_start", "SAT-003", nil)
	require.NoError(t, err)
	require.NoError(t, b.Sync())
	require.NoError(t, b.Sample(Sample{Channel: "x", Time: c.Now(), Value: 1, Quality: "good"}))
	require.NoError(t, b.sw.Flush())
	f, err := os.OpenFile(filepath.Join(dir, JournalFile), os.O_APPEND|os.O_WRONLY, 0o644)
	require.NoError(t, err)
	_, err = f.WriteString(`{"seq":99,"kind":"ste`)
	require.NoError(t, err)
	require.NoError(t, f.Close())

	rep, err := Verify(dir, nil)
	require.NoError(t, err)
	require.True(t, rep.OK(), "an unfinished bundle verifies up to its last checkpoint: %v", rep.Problems)
	require.False(t, rep.Complete)
	require.Positive(t, rep.Unverified)

	b2, st, err := Resume(dir, c)
	require.NoError(t, err)
	require.Equal(t, []string{"SAT-001", "SAT-002"}, st.Completed)
	require.Positive(t, st.DroppedJournal)
	require.Positive(t, st.DroppedSamples)
	_, err = b2.Append("case_start", "SAT-003", nil)
	require.NoError(t, err)
	_, err = b2.Append("case_end", "SAT-003", nil)
	require.NoError(t, err)
	_, err = b2.Finish(Meta{ToolVersion: "test", Outcome: "passed"}, nil)
	require.NoError(t, err)
	rep, err = Verify(dir, nil)
	require.NoError(t, err)
	require.True(t, rep.OK(), rep.Problems)
	require.Equal(t, 3, rep.Cases)

	_, _, err = Resume(dir, c)
	require.ErrorContains(t, err, "the run finished")
}

func TestCreateRefusesUsedDirectory(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "x"), nil, 0o644))
	_, err := Create(dir, clock.NewFake(t0))
	require.ErrorContains(t, err, "is not empty")
}

func TestSignedManifestInteropWithSSHKeygen(t *testing.T) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	signer, err := ssh.NewSignerFromKey(priv)
	require.NoError(t, err)
	dir := t.TempDir()
	run(t, dir, clock.NewFake(t0), true, signer)

	sshPub, err := ssh.NewPublicKey(pub)
	require.NoError(t, err)
	rep, err := Verify(dir, []ssh.PublicKey{sshPub})
	require.NoError(t, err)
	require.True(t, rep.OK(), rep.Problems)
	require.True(t, rep.Signed)

	other, _, _ := ed25519.GenerateKey(rand.Reader)
	otherPub, _ := ssh.NewPublicKey(other)
	rep, _ = Verify(dir, []ssh.PublicKey{otherPub})
	require.Contains(t, rep.Problems[0], "not among the trusted keys")

	// OpenSSH accepts the signature as it is.
	allowed := filepath.Join(t.TempDir(), "allowed")
	require.NoError(t, os.WriteFile(allowed, []byte("engineer@site "+string(ssh.MarshalAuthorizedKey(sshPub))), 0o644))
	cmd := exec.Command(peer.Need(t, "ssh-keygen"), "-Y", "verify", "-f", allowed, "-I", "engineer@site", "-n", Namespace, "-s", filepath.Join(dir, SignatureFile))
	manifest, err := os.Open(filepath.Join(dir, ManifestFile))
	require.NoError(t, err)
	defer manifest.Close()
	cmd.Stdin = manifest
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "ssh-keygen -Y verify (Debian openssh-client): %s", out)
}
