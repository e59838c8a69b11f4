package evidence

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/seamdc/seam/internal/clock"
	"github.com/seamdc/seam/internal/grade"
	"github.com/seamdc/seam/internal/plan"
	"github.com/seamdc/seam/internal/results"
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

// asV2 forges dir, a finished unsigned bundle the current writer wrote,
// into the bundle an older sat would have written: record 1 and the
// manifest of format, the data of every case_end, file and run_end
// record in its Go struct's field order (as seam-evidence/v2 wrote it,
// keys unsorted), samples.csv edited by editSamples if not nil, and
// every checkpoint, hash, the chain and the manifest recomputed, as
// anyone who knows the format can. graded gives the bundle a plan
// (plan.json, recorded) whose cases SAT-001 and SAT-002 are renamed to,
// each with a timeline, its samples and its verdict as the writer
// graded them, so that the audit re-grades them from samples.csv.
func asV2(t *testing.T, dir, format string, editSamples func([]byte) []byte, graded bool) {
	t.Helper()
	spath := filepath.Join(dir, SamplesFile)
	samples, err := os.ReadFile(spath)
	require.NoError(t, err)
	recs := records(t, dir)
	ids := map[string]string{"SAT-001": "sat.p1-ma.steady.first", "SAT-002": "sat.p1-ma.steady.second"}
	ends := map[string]CaseEnd{} // each case's end as the writer graded it
	if graded {
		p, raw := twoCasePlan(t, ids["SAT-001"], ids["SAT-002"])
		require.NoError(t, os.WriteFile(filepath.Join(dir, PlanFile), raw, 0o644))
		from := t0
		for i, old := range []string{"SAT-001", "SAT-002"} {
			at := recs[lineOf(t, recs, KindCaseEnd, old)].Time
			tl := grade.Timeline{Start: from, End: at, Steps: []grade.Span{{Step: "hold", Start: from, End: at}}}
			vs, err := GradeCase(dir, &p.Cases[i], tl, 0, int64(len(samples)))
			require.NoError(t, err)
			require.Equal(t, grade.Pass, vs[0].Outcome, vs[0].Detail)
			ends[old] = CaseEnd{Result: results.Case{ID: ids[old], Outcome: grade.Pass,
				Checks: []results.Check{{Verdict: vs[0], Side: plan.Guarantee, Channel: p.Cases[i].Checks[0].Channel}}},
				Timeline: &tl, Samples: [2]int64{0, int64(len(samples))}}
			from = at
		}
		end := lineOf(t, recs, KindRunEnd, "")
		fr := Record{Time: recs[end].Time, Kind: KindFile, Data: must(json.Marshal(FileRecord{Name: PlanFile, Digest: fmt.Sprintf("sha256:%x", sha256.Sum256(raw))}))}
		recs = append(recs[:end], append([]Record{fr}, recs[end:]...)...)
	}
	if editSamples != nil {
		samples = editSamples(samples)
		require.NoError(t, os.WriteFile(spath, samples, 0o644))
	}
	structOrder := func(data json.RawMessage, v any) json.RawMessage {
		require.NoError(t, strictJSON(data, v))
		return must(json.Marshal(v))
	}
	var cp Checkpoint
	for i := range recs {
		recs[i].Seq = int64(i + 1)
		if ce, ok := ends[recs[i].Case]; ok && recs[i].Kind == KindCaseEnd {
			recs[i].Data = must(json.Marshal(ce))
		}
		if id, ok := ids[recs[i].Case]; ok && graded {
			recs[i].Case = id
		}
		switch recs[i].Kind {
		case KindBundle:
			recs[i].Data = structOrder(recs[i].Data, &BundleRecord{})
			recs[i].Data = bytes.Replace(recs[i].Data, []byte(FormatVersion), []byte(format), 1)
		case KindCaseEnd:
			recs[i].Data = structOrder(recs[i].Data, &CaseEnd{})
		case KindFile:
			recs[i].Data = structOrder(recs[i].Data, &FileRecord{})
		case KindRunEnd:
			recs[i].Data = structOrder(recs[i].Data, &Meta{})
		case KindCheckpoint:
			require.NoError(t, strictJSON(recs[i].Data, &cp))
			cp.SamplesDigest = fmt.Sprintf("sha256:%x", sha256.Sum256(samples[:cp.SamplesBytes]))
			recs[i].Data = must(json.Marshal(cp))
		}
	}
	rewrite(t, dir, recs)

	mpath := filepath.Join(dir, ManifestFile)
	raw, err := os.ReadFile(mpath)
	require.NoError(t, err)
	var m Manifest
	require.NoError(t, json.Unmarshal(raw, &m))
	st, err := os.Stat(filepath.Join(dir, JournalFile))
	require.NoError(t, err)
	last := recs[len(recs)-1]
	require.Equal(t, KindCheckpoint, last.Kind, "an unsigned run ends in the checkpoint after run_end")
	m.Format, m.Records, m.JournalHead, m.JournalBytes = format, last.Seq, last.Hash, st.Size()
	m.SamplesBytes, m.SamplesDigest = cp.SamplesBytes, cp.SamplesDigest
	if graded {
		d, err := fileDigest(dir, PlanFile)
		require.NoError(t, err)
		m.Files[PlanFile] = d
	}
	require.NoError(t, os.WriteFile(mpath, m.encode(), 0o644))
}

// twoCasePlan is a plan of two cases, each with one check that holds
// the voltage run writes in band.
func twoCasePlan(t *testing.T, ids ...string) (*plan.Plan, []byte) {
	t.Helper()
	sha := "sha256:" + strings.Repeat("a", 64)
	p := &plan.Plan{
		Header: plan.Header{Format: plan.Format, Generated: plan.Generated, Tool: plan.Tool{Name: "contractc", Version: "test"},
			Site: "tiny", Level: plan.All, Inputs: plan.Inputs{Boundaries: map[string]string{"p1-ma": sha}, Contracts: sha, Files: map[string]string{"tiny.cue": sha}, Schema: sha, SchemaVersion: "v1alpha1"}},
		Sources:   map[string]plan.Source{"v.min": {Pos: "joints.cue:1:1", Value: "400 V"}},
		LoadBanks: []plan.LoadBank{}, Interlocks: []plan.Interlock{}, Coverage: []plan.Coverage{},
	}
	for _, id := range ids {
		p.Cases = append(p.Cases, plan.Case{ID: id, Boundary: "p1-ma", Kind: plan.Steady, Level: plan.SAT, Module: "ma", Title: id,
			Clause: plan.ClauseRef{Path: `boundaries."p1-ma".steady.voltage`, Pos: "joints.cue:1:1", BoundaryDigest: sha}, Sides: []string{plan.Guarantee},
			Preconditions: []plan.Precondition{}, Interlocks: []string{},
			Steps:    []plan.Step{{ID: "hold", Op: plan.OpHold, DurationS: 1, EstimatedS: 1}},
			Sampling: []plan.Sampling{{Channel: "p1/ma/feed-a/voltage", MaxPeriodS: 1, Reason: "test"}},
			Checks: []plan.Check{{ID: "in-band", Kind: plan.InBand, Side: plan.Guarantee, Channel: "p1/ma/feed-a/voltage", Unit: "V",
				Min: plan.F(400), Max: plan.F(430), Steps: []string{"hold"}, Sources: []string{"v.min"}}}})
	}
	raw, err := plan.Encode(p)
	require.NoError(t, err)
	return p, raw
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// Bundles of seam-evidence/v2, written before a record's data had one
// form, are long-lived audit records: they are still read, every byte,
// hash, seal and sample checked as in v3, but their records' data in
// the writer's field order, with a note that says what that leaves
// undetected. The same data in a v3 bundle is an edit; a sample that is
// not a finite number is refused in every format; other formats are not
// read.
func TestV2BundleIsReadWithANote(t *testing.T) {
	const v2note = "bundle format seam-evidence/v2, written before a record's data had one form: its records' data is read as the writer wrote it, in its fields' order, so an edit that gives a record's data a key twice (read as its last) or reorders its keys is not detected in this bundle (a seam-evidence/v3 bundle refuses it)"
	nan := func(b []byte) []byte {
		out := bytes.Replace(b, []byte(",416,good\n"), []byte(",NaN,good\n"), 1)
		require.NotEqual(t, b, out)
		return out
	}
	tests := []struct {
		name     string
		format   string
		manifest string // when not format: the manifest says another
		samples  func([]byte) []byte
		want     string // "" when it must verify, with the note
	}{
		{name: "v2, data in field order", format: FormatV2},
		{name: "v3, the same data", format: FormatVersion,
			want: `journal.jsonl line 5: record 5's data is not in the form sat writes: key "level" after "title" in result: keys are sorted`},
		{name: "v2 with a NaN sample", format: FormatV2, samples: nan,
			want: `re-grading from the raw samples: samples.csv line 3: channel p1/ma/feed-a/voltage: value "NaN": not a finite number`},
		{name: "v2 journal, v3 manifest", format: FormatV2, manifest: FormatVersion,
			want: "manifest.json is of format seam-evidence/v3, but the journal's record 1 says seam-evidence/v2"},
		{name: "v1", format: "seam-evidence/v1", want: `bundle format "seam-evidence/v1": this sat reads "seam-evidence/v3" (and "seam-evidence/v2")`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			run(t, dir, clock.NewFake(t0), true, nil)
			asV2(t, dir, tt.format, tt.samples, true)
			ce := records(t, dir)[lineOf(t, records(t, dir), KindCaseEnd, "sat.p1-ma.steady.first")]
			require.ErrorContains(t, checkData(ce.Data), "keys are sorted", "the forged data is in v2's field order")
			if tt.manifest != "" {
				raw, err := os.ReadFile(filepath.Join(dir, ManifestFile))
				require.NoError(t, err)
				raw = bytes.Replace(raw, []byte(`"format": "`+tt.format+`"`), []byte(`"format": "`+tt.manifest+`"`), 1)
				require.NoError(t, os.WriteFile(filepath.Join(dir, ManifestFile), raw, 0o644))
			}
			rep, err := Verify(dir, nil)
			require.NoError(t, err)
			if tt.want != "" {
				assert.False(t, rep.OK(), "accepted; notes: %v", rep.Notes)
				assert.Contains(t, strings.Join(rep.All(), "\n"), tt.want)
				return
			}
			assert.Empty(t, rep.All())
			assert.Contains(t, rep.Notes, v2note)
			assert.Equal(t, FormatV2, rep.Format)
			assert.True(t, rep.Complete)
			assert.Equal(t, 2, rep.Cases)
			assert.Equal(t, 2, rep.Regraded, "its cases are re-graded from its samples")
			assert.Equal(t, int64(len(records(t, dir))), rep.Manifest.Records)
		})
	}
}

// A v2 bundle is read, never written: neither resumed (as before v2 was
// read at all) nor amended, since a journal of both would hold records'
// data in two forms.
func TestV2BundleIsNotWritten(t *testing.T) {
	runKey, _ := testSigner(t)
	dir := t.TempDir()
	run(t, dir, clock.NewFake(t0), true, nil)
	asV2(t, dir, FormatV2, nil, false)
	before, err := os.ReadFile(filepath.Join(dir, JournalFile))
	require.NoError(t, err)

	_, err = Amend(dir, SSHSigner(runKey), Amendment{Purpose: PurposeSignOff, Role: RoleAcceptance, By: "Jane Roe"}, clock.NewFake(t0))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "it is a seam-evidence/v2 bundle: this sat reads it but writes only seam-evidence/v3 records")

	// cut back to before its end, as a crash would have left it
	recs := records(t, dir)
	end := lineOf(t, recs, KindRunEnd, "")
	require.NoError(t, os.Remove(filepath.Join(dir, ManifestFile)))
	require.NoError(t, os.Truncate(filepath.Join(dir, JournalFile), int64(len(bytes.Join(bytesLines(before)[:end], nil)))))
	rep, err := Verify(dir, nil)
	require.NoError(t, err)
	require.Empty(t, rep.Problems, "the cut v2 bundle verifies")
	_, _, err = Resume(dir, clock.NewFake(t0), Options{}, nil)
	var re *ResumeError
	require.ErrorAs(t, err, &re)
	assert.Contains(t, err.Error(), "it is a seam-evidence/v2 bundle: this sat reads it but writes only seam-evidence/v3 records")
}

// bytesLines splits b into its lines, each with its newline.
func bytesLines(b []byte) [][]byte {
	return bytes.SplitAfter(bytes.TrimSuffix(b, []byte("\n")), []byte("\n"))
}
