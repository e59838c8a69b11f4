package satcmd

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/evidence"
	"github.com/seamdc/seam/internal/plan"
)

// Tampering as an adversary who knows the format would try it, each
// against `sat verify` and `sat report` (which share one reader and
// re-grader, internal/evidence), each caught with its own message. The
// bundles are real: the example's SAT plan for module ma run against
// the simulated site, signed.

// signedBundles runs the SAT plan twice, signed with the same key, and
// returns the bundles, the key and its trust file.
func signedBundles(t *testing.T) (good, other, key, trust string) {
	t.Helper()
	key, trust = sshKey(t)
	p := examplePlan(t, plan.SAT)
	dirs := [2]string{filepath.Join(t.TempDir(), "good"), filepath.Join(t.TempDir(), "other")}
	errs := make(chan error, 2)
	for _, d := range dirs {
		go func() {
			code, _, stdout := simRun(t, p, d, "--sign-key", key)
			if code != 0 {
				errs <- fmt.Errorf("sat run exited %d: %s", code, stdout)
				return
			}
			errs <- nil
		}()
	}
	for range dirs {
		require.NoError(t, <-errs)
	}
	return dirs[0], dirs[1], key, trust
}

// journal reads a bundle's records.
func journal(t *testing.T, dir string) []evidence.Record {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, evidence.JournalFile))
	require.NoError(t, err)
	var out []evidence.Record
	for _, line := range bytes.Split(bytes.TrimSuffix(raw, []byte("\n")), []byte("\n")) {
		var r evidence.Record
		require.NoError(t, json.Unmarshal(line, &r))
		out = append(out, r)
	}
	return out
}

// rechain writes records as a valid chain, numbered from 1, with every
// checkpoint recomputed from samples.csv: what anyone can do, since the
// chain has no key. Seal records are kept as they are.
func rechain(t *testing.T, dir string, recs []evidence.Record) {
	t.Helper()
	samples, err := os.ReadFile(filepath.Join(dir, evidence.SamplesFile))
	require.NoError(t, err)
	var out []byte
	prev := evidence.Genesis
	for i := range recs {
		r := recs[i]
		r.Seq, r.Prev = int64(i+1), prev
		if r.Kind == evidence.KindCheckpoint {
			var cp evidence.Checkpoint
			require.NoError(t, json.Unmarshal(r.Data, &cp))
			cp.SamplesBytes = min(cp.SamplesBytes, int64(len(samples)))
			cp.SamplesDigest = fmt.Sprintf("sha256:%x", sha256.Sum256(samples[:cp.SamplesBytes]))
			r.Data, _ = json.Marshal(cp)
		}
		line, err := evidence.EncodeRecord(&r)
		require.NoError(t, err)
		out = append(out, line...)
		prev = r.Hash
		recs[i] = r
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, evidence.JournalFile), out, 0o644))
}

// remanifest recomputes manifest.json for the journal as it is now (the
// adversary cannot sign it).
func remanifest(t *testing.T, dir string, recs []evidence.Record) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, evidence.ManifestFile))
	require.NoError(t, err)
	var m evidence.Manifest
	require.NoError(t, json.Unmarshal(raw, &m))
	last := recs[len(recs)-1]
	m.Records, m.JournalHead = last.Seq, last.Hash
	st, err := os.Stat(filepath.Join(dir, evidence.JournalFile))
	require.NoError(t, err)
	m.JournalBytes = st.Size()
	for _, r := range recs {
		if r.Kind == evidence.KindCheckpoint {
			var cp evidence.Checkpoint
			require.NoError(t, json.Unmarshal(r.Data, &cp))
			m.SamplesBytes, m.SamplesDigest = cp.SamplesBytes, cp.SamplesDigest
		}
	}
	for name := range m.Files {
		b, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		m.Files[name] = fmt.Sprintf("sha256:%x", sha256.Sum256(b))
	}
	out, err := json.MarshalIndent(m, "", "  ")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, evidence.ManifestFile), append(out, '\n'), 0o644))
}

// cutAfterCase truncates the journal after the seal that follows the
// n-th case_end, as a crash right after it would leave it.
func cutAfterCase(t *testing.T, dir string, n int) []evidence.Record {
	t.Helper()
	recs := journal(t, dir)
	ends := 0
	for i, r := range recs {
		if r.Kind == evidence.KindCaseEnd {
			ends++
		}
		if ends == n && r.Kind == evidence.KindSeal {
			recs = recs[:i+1]
			break
		}
	}
	var out []byte
	for i := range recs {
		r := recs[i]
		line, err := evidence.EncodeRecord(&r)
		require.NoError(t, err)
		out = append(out, line...)
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, evidence.JournalFile), out, 0o644))
	return recs
}

func rm(t *testing.T, dir string, names ...string) {
	for _, n := range names {
		require.NoError(t, os.Remove(filepath.Join(dir, n)))
	}
}

func replaceIn(t *testing.T, dir, name, old, new string) {
	t.Helper()
	path := filepath.Join(dir, name)
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Contains(t, string(raw), old, name)
	require.NoError(t, os.WriteFile(path, bytes.Replace(raw, []byte(old), []byte(new), 1), 0o644))
}

func withoutSeals(recs []evidence.Record) []evidence.Record {
	var out []evidence.Record
	for _, r := range recs {
		if r.Kind != evidence.KindSeal {
			out = append(out, r)
		}
	}
	return out
}

// editSample changes the value of the first row of channel in
// samples.csv to value (the same length keeps every offset).
func editSample(t *testing.T, dir, channel, value string) {
	t.Helper()
	path := filepath.Join(dir, evidence.SamplesFile)
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	i := bytes.Index(raw, []byte("\n"+channel+","))
	require.Positive(t, i)
	line := raw[i+1 : i+1+bytes.IndexByte(raw[i+1:], '\n')]
	f := strings.Split(string(line), ",")
	f[2] = value
	require.NoError(t, os.WriteFile(path, bytes.Replace(raw, line, []byte(strings.Join(f, ",")), 1), 0o644))
}

type tampering struct {
	name  string
	trust bool // with --trust
	do    func(t *testing.T, dir, other string)
	want  string // in sat verify's and sat report's output
}

var tamperings = []tampering{
	{"manifest and its signature deleted", false, func(t *testing.T, dir, _ string) {
		rm(t, dir, evidence.ManifestFile, evidence.SignatureFile)
	}, "the journal has a run_end record (record "},
	{"journal cut after a case; manifest, signature and results deleted", true, func(t *testing.T, dir, _ string) {
		cutAfterCase(t, dir, 3)
		rm(t, dir, evidence.ManifestFile, evidence.SignatureFile, evidence.ResultsFile)
	}, "the run did not end: the signed part stops at record"},
	{"a sample edited; checkpoints, chain and manifest recomputed, seals kept", false, func(t *testing.T, dir, _ string) {
		editSample(t, dir, "lb-ma/applied", "9")
		recs := journal(t, dir)
		rechain(t, dir, recs)
		remanifest(t, dir, recs)
	}, "the journal was changed after it was signed (re-chained)"},
	{"the same, every seal and the manifest's signature removed", true, func(t *testing.T, dir, _ string) {
		editSample(t, dir, "lb-ma/applied", "9")
		recs := withoutSeals(journal(t, dir))
		rechain(t, dir, recs)
		remanifest(t, dir, recs)
		rm(t, dir, evidence.SignatureFile)
	}, "the bundle is not signed: nothing in it is covered by a trusted signature"},
	{"an interlock widened in plan.json of an unfinished bundle", false, func(t *testing.T, dir, _ string) {
		cutAfterCase(t, dir, 3)
		rm(t, dir, evidence.ManifestFile, evidence.SignatureFile, evidence.ResultsFile)
		replaceIn(t, dir, evidence.PlanFile, `"max": 36.5`, `"max": 46.5`)
	}, "plan.json: digest sha256:"},
	{"binding.cue edited in an unfinished bundle", false, func(t *testing.T, dir, _ string) {
		cutAfterCase(t, dir, 3)
		rm(t, dir, evidence.ManifestFile, evidence.SignatureFile, evidence.ResultsFile)
		replaceIn(t, dir, evidence.BindingFile, `profile:`, `profile: `)
	}, "binding.cue: digest sha256:"},
	{"a record with an added field, hashed and chained", false, func(t *testing.T, dir, _ string) {
		recs := journal(t, dir)
		forgeLine(t, dir, recs, 5, func(body []byte) []byte {
			return append(body[:len(body)-1], []byte(`,"note":"x"}`)...)
		})
	}, `journal.jsonl line 5: the record has a field sat does not write ("note"): it was edited`},
	{"a record's time in another format, hashed and chained", false, func(t *testing.T, dir, _ string) {
		recs := journal(t, dir)
		forgeLine(t, dir, recs, 5, func(body []byte) []byte {
			return bytes.Replace(body, []byte(`Z","kind"`), []byte(`+00:00","kind"`), 1)
		})
	}, "record 5 is not in the form sat writes"},
	{"results.json deleted", false, func(t *testing.T, dir, _ string) {
		rm(t, dir, evidence.ResultsFile)
	}, "results.json: recorded in the journal (record "},
	{"a FIFO in the bundle", false, func(t *testing.T, dir, _ string) {
		require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "notes"), 0o644))
	}, "notes is not a regular file (a FIFO): a bundle holds regular files only"},
	{"results.json replaced by a FIFO", false, func(t *testing.T, dir, _ string) {
		rm(t, dir, evidence.ResultsFile)
		require.NoError(t, syscall.Mkfifo(filepath.Join(dir, evidence.ResultsFile), 0o644))
	}, "results.json is not a regular file (a FIFO)"},
	{"the manifest and its signature from another bundle", false, func(t *testing.T, dir, other string) {
		for _, n := range []string{evidence.ManifestFile, evidence.SignatureFile} {
			b, err := os.ReadFile(filepath.Join(other, n))
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(dir, n), b, 0o644))
		}
	}, "manifest.json belongs to bundle "},
	{"a seal moved from another bundle, the journal chained again", false, func(t *testing.T, dir, other string) {
		mine, theirs := journal(t, dir), journal(t, other)
		i, j := lastSeal(mine), lastSeal(theirs)
		mine[i].Data = theirs[j].Data
		rechain(t, dir, mine)
		remanifest(t, dir, mine)
	}, "was made for bundle "},
	{"samples.csv truncated by 5 kB", false, func(t *testing.T, dir, _ string) {
		path := filepath.Join(dir, evidence.SamplesFile)
		st, err := os.Stat(path)
		require.NoError(t, err)
		require.NoError(t, os.Truncate(path, st.Size()-5000))
	}, "samples were removed (the file was truncated)"},
	{"a record appended after the run's end, chained", false, func(t *testing.T, dir, _ string) {
		recs := journal(t, dir)
		recs = append(recs, evidence.Record{Time: recs[len(recs)-1].Time, Kind: "operator", Data: json.RawMessage(`{"by":"someone"}`)})
		rechain(t, dir, recs)
	}, "(operator) was appended after the run's end outside a signed amendment"},
	{"a second run_end appended, chained", false, func(t *testing.T, dir, _ string) {
		recs := journal(t, dir)
		for _, r := range recs {
			if r.Kind == evidence.KindRunEnd {
				recs = append(recs, r)
				break
			}
		}
		rechain(t, dir, recs)
	}, "is a second run_end (the first is record "},
	{"a tail after the last seal of an unfinished bundle", true, func(t *testing.T, dir, _ string) {
		recs := cutAfterCase(t, dir, 3)
		rm(t, dir, evidence.ManifestFile, evidence.SignatureFile, evidence.ResultsFile)
		recs = append(recs, evidence.Record{Time: recs[len(recs)-1].Time, Kind: "case_start", Case: "sat.p1-ma.steady.frequency", Data: json.RawMessage(`{"index":4}`)})
		rechain(t, dir, recs)
	}, "record(s) after record "},
	{"a verdict edited in results.json", false, func(t *testing.T, dir, _ string) {
		replaceIn(t, dir, evidence.ResultsFile, `"outcome": "PASS"`, `"outcome": "FAIL"`)
	}, "the case is recorded FAIL, its re-graded checks make it PASS"},
	{"a verdict edited in its case_end record, chained, seals removed", false, func(t *testing.T, dir, _ string) {
		recs := withoutSeals(journal(t, dir))
		for i, r := range recs {
			if r.Kind != evidence.KindCaseEnd {
				continue
			}
			// the case's own outcome, its checks' left alone; written
			// back in the canonical form (keys sorted), as a reader needs
			var ce map[string]any
			require.NoError(t, json.Unmarshal(r.Data, &ce))
			if res := ce["result"].(map[string]any); res["outcome"] == "PASS" {
				res["outcome"] = "FAIL"
				var err error
				recs[i].Data, err = json.Marshal(ce)
				require.NoError(t, err)
				break
			}
		}
		rechain(t, dir, recs)
		remanifest(t, dir, recs)
		rm(t, dir, evidence.SignatureFile)
	}, "the case is recorded FAIL, its re-graded checks make it PASS"},
	{"a case_end outcome given twice, FAIL then PASS, chained, seals removed", false, func(t *testing.T, dir, _ string) {
		recs := withoutSeals(journal(t, dir))
		for i, r := range recs {
			if r.Kind == evidence.KindCaseEnd {
				// encoding/json reads the last of a key given twice: PASS
				j := bytes.LastIndex(r.Data, []byte(`"outcome":"PASS"`))
				require.Positive(t, j)
				recs[i].Data = append(append(r.Data[:j:j], `"outcome":"FAIL",`...), r.Data[j:]...)
				break
			}
		}
		rechain(t, dir, recs)
		remanifest(t, dir, recs)
		rm(t, dir, evidence.SignatureFile)
	}, `data is not in the form sat writes: key "outcome" twice in result`},
	{"an unsigned amendment after the end", false, func(t *testing.T, dir, _ string) {
		recs := journal(t, dir)
		recs = append(recs, evidence.Record{Time: recs[len(recs)-1].Time, Kind: evidence.KindAmend,
			Data: json.RawMessage(`{"by":"nobody","manifest":"sha256:x","purpose":"sign-off","role":"witness"}`)})
		rechain(t, dir, recs)
	}, "is not closed by a signature"},
	{"a file added", false, func(t *testing.T, dir, _ string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "extra.txt"), []byte("x"), 0o644))
	}, "extra.txt: neither the journal nor the manifest records it: it was added after the run"},
	{"the manifest's signature deleted", false, func(t *testing.T, dir, _ string) {
		rm(t, dir, evidence.SignatureFile)
	}, "but manifest.json.sig is missing: the manifest's signature was deleted"},
	{"the manifest's outcome edited", false, func(t *testing.T, dir, _ string) {
		replaceIn(t, dir, evidence.ManifestFile, `"outcome": "passed"`, `"outcome": "failed"`)
	}, "manifest.json: its run details differ from the journal's run_end record"},
	{"plan.json replaced by a symbolic link", false, func(t *testing.T, dir, _ string) {
		path := filepath.Join(dir, evidence.PlanFile)
		require.NoError(t, os.Rename(path, path+".orig"))
		require.NoError(t, os.Symlink(path+".orig", path))
	}, "plan.json is not a regular file (a symbolic link)"},
	{"a record removed from the middle", false, func(t *testing.T, dir, _ string) {
		path := filepath.Join(dir, evidence.JournalFile)
		raw, err := os.ReadFile(path)
		require.NoError(t, err)
		lines := bytes.SplitAfter(raw, []byte("\n"))
		require.NoError(t, os.WriteFile(path, bytes.Join(append(lines[:20:20], lines[21:]...), nil), 0o644))
	}, "does not follow the one before: a record was removed, inserted or reordered"},
	{"run.log edited", false, func(t *testing.T, dir, _ string) {
		f, err := os.OpenFile(filepath.Join(dir, evidence.LogFile), os.O_APPEND|os.O_WRONLY, 0)
		require.NoError(t, err)
		_, err = f.WriteString(`{"msg":"all fine"}` + "\n")
		require.NoError(t, err)
		require.NoError(t, f.Close())
	}, "run.log: digest sha256:"},
	{"a half-written record after the end", false, func(t *testing.T, dir, _ string) {
		f, err := os.OpenFile(filepath.Join(dir, evidence.JournalFile), os.O_APPEND|os.O_WRONLY, 0)
		require.NoError(t, err)
		_, err = f.WriteString(`{"seq":9999,"kind":"ca`)
		require.NoError(t, err)
		require.NoError(t, f.Close())
	}, "ends in a half-written record after the run finished"},
	{"samples appended after the end", false, func(t *testing.T, dir, _ string) {
		f, err := os.OpenFile(filepath.Join(dir, evidence.SamplesFile), os.O_APPEND|os.O_WRONLY, 0)
		require.NoError(t, err)
		_, err = f.WriteString("p1/ma/feed-a/voltage,2026-11-29T12:00:00Z,415,good\n")
		require.NoError(t, err)
		require.NoError(t, f.Close())
	}, "bytes after the run's last checkpoint"},
}

func lastSeal(recs []evidence.Record) int {
	for i := len(recs) - 1; i >= 0; i-- {
		if recs[i].Kind == evidence.KindSeal && i < len(recs)-1 {
			return i
		}
	}
	return -1
}

// forgeLine rewrites record n's line with edit applied to its body,
// hashes the new bytes and chains every later record to it.
func forgeLine(t *testing.T, dir string, recs []evidence.Record, n int, edit func(body []byte) []byte) {
	t.Helper()
	var out []byte
	prev := evidence.Genesis
	for i := range recs {
		r := recs[i]
		r.Prev = prev
		line, err := evidence.EncodeRecord(&r)
		require.NoError(t, err)
		if int(r.Seq) == n {
			body := line[:bytes.LastIndex(line, []byte(`,"hash":"`))]
			body = edit(append(body, '}'))
			sum := fmt.Sprintf("sha256:%x", sha256.Sum256(body))
			line = append(append(body[:len(body)-1:len(body)-1], []byte(`,"hash":"`+sum+`"}`)...), '\n')
			r.Hash = sum
		}
		out = append(out, line...)
		prev = r.Hash
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, evidence.JournalFile), out, 0o644))
}

func TestTamperingIsCaught(t *testing.T) {
	good, other, _, trust := signedBundles(t)
	code, out, _ := sat(t, "verify", good, "--trust", trust)
	require.Equal(t, 0, code, out)
	require.True(t, strings.HasPrefix(out, "signed by SHA256:"), out)
	for _, tt := range tamperings {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "ev")
			require.NoError(t, os.CopyFS(dir, os.DirFS(good)))
			tt.do(t, dir, other)
			args := []string{dir}
			if tt.trust {
				args = append(args, "--trust", trust)
			}
			code, vout, verr := satWithin(t, 20*time.Second, append([]string{"verify"}, args...)...)
			assert.Equal(t, 2, code, "sat verify:\n%s%s", vout, verr)
			assert.Contains(t, vout, tt.want, "sat verify")
			for _, line := range strings.Split(vout, "\n") {
				if strings.Contains(line, tt.want) {
					t.Logf("caught: %s", strings.TrimSpace(strings.ReplaceAll(line, dir, "DIR")))
					break
				}
			}
			code, rout, rerr := satWithin(t, 20*time.Second, append([]string{"report", "--format", "md", "--out", "-"}, args...)...)
			assert.Contains(t, []int{1, 2}, code, "sat report:\n%s", rerr)
			assert.Contains(t, rerr, tt.want, "sat report")
			_ = rout
		})
	}
}

// satWithin runs sat in process and fails the test if it does not
// return in time (a FIFO must not make a reader hang).
func satWithin(t *testing.T, limit time.Duration, args ...string) (int, string, string) {
	t.Helper()
	type result struct {
		code           int
		stdout, stderr string
	}
	done := make(chan result, 1)
	go func() {
		c, o, e := sat(t, args...)
		done <- result{c, o, e}
	}()
	select {
	case r := <-done:
		return r.code, r.stdout, r.stderr
	case <-time.After(limit):
		t.Fatalf("sat %s did not return within %s", strings.Join(args, " "), limit)
		return 0, "", ""
	}
}
