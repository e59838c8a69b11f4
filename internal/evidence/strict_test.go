package evidence

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/seamdc/seam/internal/clock"
)

// records reads a bundle's journal as records, line by line.
func records(t *testing.T, dir string) []Record {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, JournalFile))
	require.NoError(t, err)
	var out []Record
	for _, line := range bytes.Split(bytes.TrimSuffix(raw, []byte("\n")), []byte("\n")) {
		var r Record
		require.NoError(t, json.Unmarshal(line, &r))
		out = append(out, r)
	}
	return out
}

// rewrite writes recs as a chain that holds, as anyone who knows the
// format can: the chain has no key.
func rewrite(t *testing.T, dir string, recs []Record) {
	t.Helper()
	var out []byte
	prev := Genesis
	for i := range recs {
		recs[i].Prev = prev
		line, err := EncodeRecord(&recs[i])
		require.NoError(t, err)
		out = append(out, line...)
		prev = recs[i].Hash
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, JournalFile), out, 0o644))
}

// lineOf is the journal line of the first record of kind for caseID.
func lineOf(t *testing.T, recs []Record, kind, caseID string) int {
	t.Helper()
	for i, r := range recs {
		if r.Kind == kind && r.Case == caseID {
			return i
		}
	}
	t.Fatalf("no %s record of %s", kind, caseID)
	return 0
}

// A record's data is held to one form, as the rest of its line is: the
// canonical JSON (internal/canon/canonjson) sat writes. Otherwise an edit that
// recomputes the chain could make the same bytes mean two things, or
// one reader see FAIL where another sees PASS.
func TestJournalDataMustBeCanonical(t *testing.T) {
	tests := []struct {
		name string
		kind string
		id   string
		edit func(data string) string
		want string // "" when the edit is canonical and must verify
	}{
		{"canonical number", "case_start", "SAT-002", func(string) string { return `{"n":0.8}` }, ""},
		{"exponent for 0.8", "case_start", "SAT-002", func(string) string { return `{"n":8e-1}` },
			`journal.jsonl line 7: record 7's data is not in the form sat writes: number 8e-1 at n is 0.8 in canonical form`},
		{"trailing zero", "case_start", "SAT-002", func(string) string { return `{"n":1.0}` },
			`number 1.0 at n is 1 in canonical form`},
		{"keys reordered", "case_start", "SAT-002", func(string) string { return `{"n":1,"m":2}` },
			`journal.jsonl line 7: record 7's data is not in the form sat writes: key "m" after "n": keys are sorted`},
		{"duplicate key", "case_start", "SAT-002", func(string) string { return `{"n":1,"n":2}` },
			`journal.jsonl line 7: record 7's data is not in the form sat writes: key "n" twice`},
		{"an escape sat does not write", "case_start", "SAT-002", func(string) string { return `{"n":"\u0041"}` },
			`journal.jsonl line 7: record 7's data is not in the form sat writes`},
		{"FAIL and PASS in one case_end", KindCaseEnd, "SAT-001", func(data string) string {
			return strings.Replace(data, `"outcome":"PASS"`, `"outcome":"FAIL","outcome":"PASS"`, 1)
		}, `journal.jsonl line 5: record 5's data is not in the form sat writes: key "outcome" twice in result`},
		{"case_end keys reordered", KindCaseEnd, "SAT-001", func(data string) string {
			var m map[string]json.RawMessage
			require.NoError(t, json.Unmarshal([]byte(data), &m))
			return `{"samples":` + string(m["samples"]) + `,"result":` + string(m["result"]) + `}`
		}, `key "result" after "samples": keys are sorted`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			run(t, dir, clock.NewFake(t0), false, nil)
			rep, err := Verify(dir, nil)
			require.NoError(t, err)
			require.True(t, rep.OK(), "as written: %v", rep.Problems)

			recs := records(t, dir)
			i := lineOf(t, recs, tt.kind, tt.id)
			recs[i].Data = json.RawMessage(tt.edit(string(recs[i].Data)))
			rewrite(t, dir, recs)
			rep, err = Verify(dir, nil)
			require.NoError(t, err)
			if tt.want == "" {
				assert.True(t, rep.OK(), "a canonical edit of an unsigned bundle verifies: %v", rep.Problems)
				return
			}
			assert.False(t, rep.OK(), "the edited record was accepted")
			assert.Contains(t, strings.Join(rep.Problems, "\n"), tt.want)
		})
	}
}

// The writer writes a record's data in the canonical form whatever the
// Go value's field order, and refuses a number it cannot write there
// exactly rather than change it.
func TestWriterWritesCanonicalData(t *testing.T) {
	dir := t.TempDir()
	b, err := Create(dir, clock.NewFake(t0), Options{})
	require.NoError(t, err)
	type unsorted struct {
		Z float64 `json:"z"`
		A string  `json:"a"`
		M int64   `json:"m"`
	}
	r, err := b.Append("step", "A", unsorted{Z: 0.8, A: "x<y", M: 1 << 53})
	require.NoError(t, err)
	assert.Equal(t, `{"a":"x\u003cy","m":9007199254740992,"z":0.8}`, string(r.Data))

	_, err = b.Append("step", "A", unsorted{M: 1<<53 + 1})
	require.ErrorContains(t, err, "step record: number 9007199254740993 at m cannot be written exactly")
	require.NoError(t, b.Sync())

	rep, err := Verify(dir, nil)
	require.NoError(t, err)
	assert.True(t, rep.OK(), rep.Problems)
	var kinds []string
	for _, r := range records(t, dir) {
		kinds = append(kinds, r.Kind)
	}
	assert.Equal(t, []string{KindBundle, KindCheckpoint, "step", KindCheckpoint}, kinds, "the refused record is not written")
}

// Samples are finite numbers: the reader refuses NaN and infinities with
// the file, the line and the channel, and the writer never writes one.
func TestSamplesAreFinite(t *testing.T) {
	const h = "channel,time,value,quality\n"
	for _, v := range []string{"NaN", "nan", "+Inf", "-Inf", "infinity"} {
		t.Run(v, func(t *testing.T) {
			_, _, err := scanAll(h + "c,2026-11-29T12:00:00Z,1,good\np1/ma/voltage,2026-11-29T12:00:01Z," + v + ",good\n")
			require.Error(t, err)
			assert.Contains(t, err.Error(), `x.csv line 3: channel p1/ma/voltage: value "`+v+`": not a finite number`)
		})
	}

	dir := t.TempDir()
	c := clock.NewFake(t0)
	b, err := Create(dir, c, Options{})
	require.NoError(t, err)
	for _, v := range []struct {
		v    float64
		text string
	}{{math.NaN(), "NaN"}, {math.Inf(1), "+Inf"}, {math.Inf(-1), "-Inf"}} {
		before := b.SamplesSize()
		err := b.Sample(Sample{Channel: "ok", Time: c.Now(), Value: 1, Quality: Good}, Sample{Channel: "p1/ma/voltage", Time: c.Now(), Value: v.v, Quality: Good})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "samples.csv: p1/ma/voltage at 2026-11-29T12:00:00Z: value "+v.text+" is not a finite number")
		assert.Equal(t, before, b.SamplesSize(), "nothing of the batch is written")
	}
	require.NoError(t, b.Sample(Sample{Channel: "ok", Time: c.Now(), Value: 1, Quality: Good}), "the bundle goes on")
	require.NoError(t, b.Sync())
	rep, err := Verify(dir, nil)
	require.NoError(t, err)
	assert.True(t, rep.OK(), rep.Problems)
}

// The first line of sat verify (and the report's "signed" row) says
// part by part what is signed: the run, then each amendment, each by
// whom or UNSIGNED. An unsigned run under a signed sign-off is not a
// bundle in which "nothing is signed".
func TestDescribeSaysWhatEachPartIsSignedBy(t *testing.T) {
	runKey, runPub := testSigner(t)
	jane, janePub := testSigner(t)
	runFP, janeFP := ssh.FingerprintSHA256(runPub), ssh.FingerprintSHA256(janePub)
	tests := []struct {
		name      string
		runSigned bool
		amend     bool
		dropSeal  bool // the amendment's seal is removed, as an edit would
		trusted   []ssh.PublicKey
		want      []string
		not       []string
	}{
		{name: "nothing signed", want: []string{"UNSIGNED: nothing in this bundle is signed; its hashes detect accidental damage only"}},
		{name: "unsigned run, signed sign-off", amend: true,
			want: []string{"UNSIGNED run: the run itself is not signed; its hashes detect accidental damage only",
				"; amendment 1 (sign-off as acceptance, records 15–17): signed by " + janeFP + " (Jane Roe)"},
			not: []string{"nothing in this bundle is signed"}},
		{name: "unsigned run, the sign-off's seal removed", amend: true, dropSeal: true,
			want: []string{"UNSIGNED: nothing in this bundle is signed", "; amendment 1 (sign-off as acceptance, records 15–16): UNSIGNED: no seal closes it"},
			not:  []string{janeFP}},
		{name: "signed run, signed sign-off", runSigned: true, amend: true,
			want: []string{"signed by " + runFP + " (engineer) up to record ", ": the whole run, to its end; amendment 1 (sign-off as acceptance, records ",
				"): signed by " + janeFP + " (Jane Roe)"},
			not: []string{"UNSIGNED"}},
		{name: "signed run, sign-off by a key not trusted", runSigned: true, amend: true, trusted: []ssh.PublicKey{runPub},
			want: []string{"signed by " + runFP, "): signed by " + janeFP + " (Jane Roe), which is not a trusted key"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			c := clock.NewFake(t0)
			var s ssh.Signer
			if tt.runSigned {
				s = runKey
			}
			run(t, dir, c, true, s)
			if tt.amend {
				a, err := Amend(dir, SSHSigner(jane), Amendment{Purpose: PurposeSignOff, Role: RoleAcceptance, By: "Jane Roe"}, c)
				require.NoError(t, err)
				require.NoError(t, a.Close())
			}
			if tt.dropSeal {
				recs := records(t, dir)
				require.Equal(t, KindSeal, recs[len(recs)-1].Kind)
				rewrite(t, dir, recs[:len(recs)-1])
			}
			rep, err := Verify(dir, tt.trusted)
			require.NoError(t, err)
			got := rep.Describe()
			for _, w := range tt.want {
				assert.Contains(t, got, w)
			}
			for _, n := range tt.not {
				assert.NotContains(t, got, n)
			}
		})
	}
}
