package evidence

import (
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/seamdc/seam/internal/clock"
)

func scanAll(in string) ([]Sample, []int64, error) {
	sc := newSampleScanner(strings.NewReader(in), "x.csv", 0, int64(len(in)))
	var out []Sample
	var at []int64
	for {
		s, off, err := sc.next()
		if errors.Is(err, io.EOF) {
			return out, at, nil
		}
		if err != nil {
			return out, at, err
		}
		out = append(out, s)
		at = append(at, off)
	}
}

func TestScanSamples(t *testing.T) {
	in := "channel,time,value,quality\n" +
		"p1/ma/feed-a/voltage,2026-11-29T12:00:00.1Z,415.5,good\n" +
		"l1/ma/flow,2026-11-29T12:00:00.2Z,3400,stale\n" +
		"p1/ma/feed-a/voltage,2026-11-29T12:00:00.3Z,-1e-3,good\n"
	got, offsets, err := scanAll(in)
	require.NoError(t, err)
	assert.Equal(t, []int64{27, 82, 127}, offsets, "byte offsets of the rows")
	require.Len(t, got, 3)
	assert.Equal(t, Sample{Channel: "p1/ma/feed-a/voltage", Time: t0.Add(100 * time.Millisecond), Value: 415.5, Quality: "good"}, got[0])
	assert.Equal(t, "stale", got[1].Quality)
	assert.Equal(t, -0.001, got[2].Value)
}

func TestScanSamplesBadInput(t *testing.T) {
	const h = "channel,time,value,quality\n"
	tests := []struct{ name, in, want string }{
		{"wrong header", "a,b,c,d\n", `x.csv line 1: header "a,b,c,d"`},
		{"few fields", h + "c,2026-11-29T12:00:00Z\n", "x.csv line 2: 2 fields, want 4"},
		{"shifted fields", h + "c,2026-11-29T12:00:00Z,1,good,x\n", `x.csv line 2: channel c,2026-11-29T12:00:00Z: time "1": not RFC 3339`},
		{"bad time", h + "ok,2026-11-29T12:00:00Z,1,good\nc,yesterday,1,good\n", `x.csv line 3: channel c: time "yesterday": not RFC 3339`},
		{"31 February", h + "c,2026-02-31T12:00:00Z,1,good\n", `x.csv line 2: channel c: time "2026-02-31T12:00:00Z": not RFC 3339`},
		{"bad value", h + "c,2026-11-29T12:00:00Z,4l5,good\n", `x.csv line 2: channel c: value "4l5": not a number`},
		{"bad quality", h + "c,2026-11-29T12:00:00Z,1,fine\n", `x.csv line 2: channel c: quality "fine": want good, stale or error`},
		{"empty channel", h + ",2026-11-29T12:00:00Z,1,good\n", "x.csv line 2: empty channel"},
		{"half a row", h + "c,2026-11-29T12:00:00Z,1,go", "x.csv: ends at byte 54, inside a row"},
		{"a huge row", h + strings.Repeat("c", 70<<10) + ",2026-11-29T12:00:00Z,1,good\n", "x.csv row at byte 27 is longer than 64 KiB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := scanAll(tt.in)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
	_, at, err := scanAll(h + "c,2026-11-29T12:00:00.123456789Z,1,good\nc,2026-11-29T12:00:00+01:00,2,error\n")
	require.NoError(t, err, "RFC 3339 with an offset reads too")
	assert.Len(t, at, 2)
}

func TestJournalLinesAreBounded(t *testing.T) {
	dir := t.TempDir()
	run(t, dir, clock.NewFake(t0), false, nil)
	f, err := os.OpenFile(filepath.Join(dir, JournalFile), os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(strings.Repeat("x", MaxRecord+10) + "\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	rep, err := Verify(dir, nil)
	require.NoError(t, err)
	assert.Contains(t, strings.Join(rep.Problems, "\n"), "journal.jsonl line 11: the line is longer than 4 MiB: not a record sat wrote")
}

// A FIFO, a link or a directory where a file belongs is named and never
// opened: a reader must not block on a FIFO.
func TestOnlyRegularFilesAreRead(t *testing.T) {
	dir := t.TempDir()
	run(t, dir, clock.NewFake(t0), true, nil)
	require.NoError(t, os.Remove(filepath.Join(dir, "notes.txt")))
	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "notes.txt"), 0o644))
	require.NoError(t, os.Symlink("/etc/passwd", filepath.Join(dir, "extra")))
	done := make(chan *Report)
	go func() {
		rep, err := Verify(dir, nil)
		assert.NoError(t, err)
		done <- rep
	}()
	select {
	case rep := <-done:
		all := strings.Join(rep.Problems, "\n")
		assert.Contains(t, all, "notes.txt is not a regular file (a FIFO): a bundle holds regular files only")
		assert.Contains(t, all, "extra is not a regular file (a symbolic link)")
	case <-time.After(10 * time.Second):
		t.Fatal("verify blocked on a FIFO")
	}
	_, _, err := openRegular(dir, "notes.txt")
	var nr *NotRegularError
	assert.ErrorAs(t, err, &nr)
}

func testSigner(t testing.TB) (ssh.Signer, ssh.PublicKey) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	s, err := ssh.NewSignerFromKey(priv)
	require.NoError(t, err)
	k, err := ssh.NewPublicKey(pub)
	require.NoError(t, err)
	return s, k
}

// A signed bundle is sealed at least every minute of site time; one cut
// short is signed up to its last seal, and resumes from there, the
// unsigned tail cut.
func TestSealsEveryMinuteAndResumeFromTheLast(t *testing.T) {
	s, pub := testSigner(t)
	c := clock.NewFake(t0)
	dir := t.TempDir()
	b, err := Create(dir, c, Options{Signer: SSHSigner(s), By: "engineer"})
	require.NoError(t, err)
	for i := range 150 { // 150 s of samples, synced every second as a runner does
		c.Advance(time.Second)
		require.NoError(t, b.Sample(Sample{Channel: "x", Time: c.Now(), Value: float64(i), Quality: Good}))
		require.NoError(t, b.Sync())
	}
	_, err = b.Append("case_start", "A", nil) // after the last seal
	require.NoError(t, err)
	require.NoError(t, b.jw.Flush())
	rep, err := Verify(dir, []ssh.PublicKey{pub})
	require.NoError(t, err)
	seals := 0
	for _, sig := range rep.Signatures {
		if sig.Role == RoleRun {
			seals++
		}
	}
	assert.Equal(t, 3, seals, "at the start, after 60 s and after 120 s")
	assert.Equal(t, 31, rep.Uncovered, "the 30 checkpoints and the case_start after the last seal")
	assert.Contains(t, strings.Join(rep.Problems, "\n"), "31 record(s) after record ")
	assert.Contains(t, rep.Describe(), "signed by SHA256:")
	assert.Contains(t, rep.Describe(), "(engineer) up to record ")

	b2, st, err := Resume(dir, c, Options{Signer: SSHSigner(s), By: "engineer"}, nil)
	require.NoError(t, err)
	assert.Equal(t, 31, st.DroppedRecords, "the case_start and the unsealed checkpoints after the last seal")
	require.NoError(t, b2.Close())
	rep, err = Verify(dir, nil)
	require.NoError(t, err)
	assert.True(t, rep.OK(), rep.All())

	_, _, err = Resume(dir, c, Options{}, nil)
	assert.ErrorContains(t, err, "it is signed (by SHA256:")
}

// BenchmarkSeal: a seal (a checkpoint, its signature with an ed25519
// key file, the seal record, two fsyncs) of a bundle with new samples.
func BenchmarkSeal(b *testing.B) {
	s, _ := testSigner(b)
	c := clock.NewFake(t0)
	bd, err := Create(b.TempDir(), c, Options{Signer: SSHSigner(s)})
	require.NoError(b, err)
	var sign time.Duration
	for b.Loop() {
		require.NoError(b, bd.Sample(Sample{Channel: "x", Time: c.Now(), Value: 1, Quality: Good}))
		t := time.Now()
		_, _, err := sign2(bd)
		require.NoError(b, err)
		sign += time.Since(t)
		require.NoError(b, bd.Seal())
	}
	b.ReportMetric(float64(sign.Microseconds())/float64(b.N)/1000, "ms-sign/op")
}

// sign2 signs a statement as a seal does, for timing the signature alone.
func sign2(b *Bundle) (SealData, ssh.PublicKey, error) {
	return sign(b.opt.Signer, Statement{Type: StatementType, Bundle: b.id, Seq: 1, Head: Genesis, Role: RoleRun, At: t0})
}
