package report

import (
	"bytes"
	"crypto/sha256"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/evidence"
	"github.com/seamdc/seam/internal/report/reporttest"
	"github.com/seamdc/seam/internal/results"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// redact hides what changes between runs of the same bundle: times,
// durations and the bundle's directory.
func redact(s, dir string) string {
	s = strings.ReplaceAll(s, dir, "<bundle>")
	s = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z?`).ReplaceAllString(s, "<time>")
	s = regexp.MustCompile(`(time|timestamp)="[^"]*"`).ReplaceAllString(s, `$1="<redacted>"`)
	return s
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test -update to create %s", path)
	assert.Equal(t, string(want), got, "%s differs; if the change is intended, run go test ./internal/report -update", path)
}

func render(t *testing.T, r *Run, write func(*bytes.Buffer, *Run) error) string {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, write(&buf, r))
	return buf.String()
}

func junitOf(b *bytes.Buffer, r *Run) error    { return JUnit(b, r) }
func markdownOf(b *bytes.Buffer, r *Run) error { return Markdown(b, r) }
func csvOf(b *bytes.Buffer, r *Run) error      { return CSV(b, r) }

// TestGoldenReports renders JUnit, markdown and CSV from real bundles:
// the example's SAT of module ma on a site whose square-wave edges dip
// past the envelope, and its IST with alarms that come late.
func TestGoldenReports(t *testing.T) {
	for _, tt := range []struct{ name, level, defect string }{
		{"sat-dip", "sat", reporttest.Dip},
		{"ist-late-alarm", "ist", reporttest.LateAlarm},
		{"sat-healthy", "sat", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeBundle(t, tt.level, "ma", reporttest.Options{Defect: tt.defect})
			r, err := Load(dir, Options{})
			require.NoError(t, err)
			require.True(t, r.OK(), "integrity %v, mismatches %v", r.Integrity, r.Mismatches)
			golden(t, tt.name+".junit.xml", redact(render(t, r, junitOf), dir))
			golden(t, tt.name+".md", redact(render(t, r, markdownOf), dir))
			golden(t, tt.name+".csv", redact(render(t, r, csvOf), dir))
		})
	}
}

func TestDefectsFailTheirCases(t *testing.T) {
	dir := writeBundle(t, "sat", "ma", reporttest.Options{Defect: reporttest.Dip})
	r, err := Load(dir, Options{})
	require.NoError(t, err)
	var failed []string
	for _, c := range r.Cases {
		if c.Verdict != Pass {
			failed = append(failed, c.ID)
		}
	}
	// the dip is at the first edge of a square wave: the two transient
	// cases with a square wave fail, nothing else
	assert.Equal(t, []string{"sat.l1-ma.transient.training-heat", "sat.p1-ma.transient.training-voltage"}, failed)
	assert.Equal(t, "failed", r.Outcome)
	manifest, err := os.ReadFile(filepath.Join(dir, evidence.ManifestFile))
	require.NoError(t, err)
	assert.Equal(t, fmt.Sprintf("sha256:%x", sha256.Sum256(manifest)), r.ManifestDigest, "the paper report names the manifest it reports on")
	var junit bytes.Buffer
	require.NoError(t, JUnit(&junit, r))
	assert.Contains(t, junit.String(), `<failure message="guarantee-max-deviation p1/ma/feed-a/voltage: measured 62.28 V, limit 33.2 V (margin -29.08 V)`)
}

func TestAlteredVerdictIsCaught(t *testing.T) {
	dir := writeBundle(t, "sat", "ma", reporttest.Options{})
	path := filepath.Join(dir, evidence.ResultsFile)
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	// the first case's first check: PASS recorded as FAIL, and its case too
	altered := strings.Replace(string(raw), `"outcome": "PASS"`, `"outcome": "FAIL"`, 2)
	require.NotEqual(t, string(raw), altered)
	require.NoError(t, os.WriteFile(path, []byte(altered), 0o644))

	r, err := Load(dir, Options{Plots: true})
	require.NoError(t, err)
	require.False(t, r.OK())
	require.Len(t, r.Mismatches, 2, "%v", r.Mismatches)
	m := r.Mismatches[0]
	assert.Equal(t, "sat.ctl-ma.steady.heartbeat", m.Case)
	assert.Equal(t, "guarantee-in-band", m.Check)
	assert.Equal(t, "FAIL", m.Recorded)
	assert.Equal(t, "PASS", m.Regrade)
	assert.Contains(t, m.Detail, "outcome FAIL, re-graded PASS")
	assert.Equal(t, Mismatch{Case: "sat.ctl-ma.steady.heartbeat", Recorded: "FAIL", Regrade: "PASS",
		Detail: "results.json: the case is recorded FAIL, its re-graded checks make it PASS"}, r.Mismatches[1])
	// and evidence.Verify says results.json changed after the manifest
	require.NotEmpty(t, r.Integrity)
	assert.Contains(t, strings.Join(r.Integrity, "\n"), "results.json: digest")

	var junit, md, html bytes.Buffer
	require.NoError(t, JUnit(&junit, r))
	require.NoError(t, Markdown(&md, r))
	require.NoError(t, HTML(&html, r))
	assert.Contains(t, junit.String(), `<testcase name="regrade sat.ctl-ma.steady.heartbeat guarantee-in-band" classname="evidence"`)
	assert.Contains(t, junit.String(), `results.json: digest`)
	assert.Contains(t, md.String(), "> - re-grade: sat.ctl-ma.steady.heartbeat guarantee-in-band recorded FAIL, the raw samples give PASS")
	assert.Contains(t, html.String(), "This report cannot be trusted as it stands.")
	assert.Equal(t, Pass, r.Cases[0].Verdict, "the report shows the re-graded verdict")
	assert.Equal(t, "passed", r.Outcome)
	// the headline is the integrity verdict: a tampered bundle never reads PASSED
	assert.Equal(t, "NOT TRUSTED", r.Verdict())
	assert.Contains(t, html.String(), "Verdict: <strong>NOT TRUSTED</strong>")
	assert.NotContains(t, html.String(), "<strong>PASSED</strong>")
	assert.NotContains(t, html.String(), `class="outcome good"`)
	assert.Contains(t, strings.SplitN(md.String(), "\n", 2)[0], ": NOT TRUSTED")
}

// The sign-off names who the evidence knows: the operator, and the
// witness and accepting engineer with their keys when they signed.
func TestSignersNameWhoTheEvidenceKnows(t *testing.T) {
	r := &Run{Operator: "A. Engineer", Witnesses: []Witness{{By: "A. Engineer"}, {By: "B. Fitter"}, {By: "B. Fitter"}}}
	assert.Equal(t, []Signer{
		{Role: "operator", Name: "A. Engineer"},
		{Role: "witness", Name: "B. Fitter"},
		{Role: "accepting engineer"},
		{Role: "owner"}, {Role: "supplier's vendor"}, {Role: "consumer's vendor"},
	}, r.Signers())
	r.SignOffs = []SignOff{{Purpose: "sign-off", Role: "witness", By: "Jane Roe", Key: "SHA256:w"},
		{Purpose: "attach", By: "A. Engineer", Key: "SHA256:a"},
		{Purpose: "sign-off", Role: "acceptance", By: "Max Mustermann", Key: "SHA256:m"}}
	got := r.Signers()
	assert.Equal(t, Signer{Role: "witness", Name: "Jane Roe", Key: "SHA256:w"}, got[1], "a signed witness replaces the names from the manual steps")
	assert.Equal(t, Signer{Role: "accepting engineer", Name: "Max Mustermann", Key: "SHA256:m"}, got[2])
	assert.Len(t, got, 6)
}

func TestAlteredCaseOutcomeIsCaught(t *testing.T) {
	dir := writeBundle(t, "ist", "ma", reporttest.Options{})
	path := filepath.Join(dir, evidence.ResultsFile)
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	// the first case's outcome only; its checks still say PASS
	altered := strings.Replace(string(raw), `"outcome": "PASS"`, `"outcome": "ERROR", "reason": "load bank lb-ma did not read back 0 kW"`, 1)
	require.NoError(t, os.WriteFile(path, []byte(altered), 0o644))
	r, err := Load(dir, Options{})
	require.NoError(t, err)
	assert.Empty(t, r.Mismatches, "an ERROR may stand over passing checks: the harness can fail")
	assert.Equal(t, Error, r.Cases[0].Verdict)
	assert.NotEmpty(t, r.Integrity, "but the manifest catches the edit")

	altered = strings.Replace(string(raw), `"outcome": "PASS"`, `"outcome": "FAIL"`, 1)
	require.NoError(t, os.WriteFile(path, []byte(altered), 0o644))
	r, err = Load(dir, Options{})
	require.NoError(t, err)
	require.Len(t, r.Mismatches, 1)
	assert.Equal(t, "results.json: the case is recorded FAIL, its re-graded checks make it PASS", r.Mismatches[0].Detail)
}

func TestAlteredMeasuredValueIsCaught(t *testing.T) {
	dir := writeBundle(t, "sat", "ma", reporttest.Options{})
	path := filepath.Join(dir, evidence.ResultsFile)
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	// a nicer margin, the outcome left alone
	re := regexp.MustCompile(`"margin": [0-9.e+-]+`)
	loc := re.FindIndex(raw)
	require.NotNil(t, loc)
	altered := string(raw[:loc[0]]) + `"margin": 99` + string(raw[loc[1]:])
	require.NoError(t, os.WriteFile(path, []byte(altered), 0o644))
	r, err := Load(dir, Options{})
	require.NoError(t, err)
	require.Len(t, r.Mismatches, 1)
	assert.Contains(t, r.Mismatches[0].Detail, "margin 99 s, re-graded")
	assert.Equal(t, "PASS", r.Mismatches[0].Regrade)
}

func TestAlteredSampleIsCaught(t *testing.T) {
	dir := writeBundle(t, "sat", "ma", reporttest.Options{})
	path := filepath.Join(dir, evidence.SamplesFile)
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	// push one heartbeat-age reading far above both limits
	i := bytes.Index(raw, []byte("ctl/ma/heartbeat-age,"))
	require.Positive(t, i)
	line := raw[i : i+bytes.IndexByte(raw[i:], '\n')]
	fields := strings.Split(string(line), ",")
	fields[2] = "60"
	altered := bytes.Replace(raw, line, []byte(strings.Join(fields, ",")), 1)
	require.NoError(t, os.WriteFile(path, altered, 0o644))
	r, err := Load(dir, Options{})
	require.NoError(t, err)
	require.Len(t, r.Mismatches, 3, "both sides' in-band checks of the heartbeat now fail, and so the case")
	assert.Equal(t, "PASS", r.Mismatches[0].Recorded)
	assert.Equal(t, "FAIL", r.Mismatches[0].Regrade)
	assert.Contains(t, strings.Join(r.Integrity, "\n"), "samples were altered")
	assert.Equal(t, Fail, r.Cases[0].Verdict)
	assert.Equal(t, "failed", r.Outcome, "the outcome follows the re-graded cases, not results.json")
}

// What cannot be read is an integrity problem the report shows (as sat
// verify does), not an error; without its plan there is nothing to
// re-grade with, and that is an error.
func TestLoadReportsWhatItCannotRead(t *testing.T) {
	good := writeBundle(t, "sat", "ma", reporttest.Options{})
	tests := []struct {
		name   string
		break_ func(dir string)
		want   string
	}{
		{"no results", func(dir string) { os.Remove(filepath.Join(dir, "results.json")) }, "results.json: recorded in the journal \\(record \\d+\\) but missing: it was deleted"},
		{"bad results", func(dir string) { os.WriteFile(filepath.Join(dir, "results.json"), []byte("{"), 0o644) }, "results.json: results: unexpected end of JSON input"},
		{"bad sample", func(dir string) {
			f, _ := os.OpenFile(filepath.Join(dir, "samples.csv"), os.O_APPEND|os.O_WRONLY, 0)
			f.WriteString("p1/ma/feed-a/voltage,2026-11-29T12:00:00Z,four hundred,good\n")
			f.Close()
		}, `samples.csv has \d+ bytes after the run's last checkpoint \(record \d+\): they were appended after the run`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "b")
			require.NoError(t, os.CopyFS(dir, os.DirFS(good)))
			tt.break_(dir)
			r, err := Load(dir, Options{})
			require.NoError(t, err)
			require.False(t, r.OK())
			assert.Regexp(t, tt.want, strings.Join(r.Integrity, "\n"))
		})
	}
	dir := filepath.Join(t.TempDir(), "b")
	require.NoError(t, os.CopyFS(dir, os.DirFS(good)))
	require.NoError(t, os.Remove(filepath.Join(dir, "plan.json")))
	_, err := Load(dir, Options{})
	assert.ErrorContains(t, err, "the plan that ran (plan.json) is needed to re-grade")
	_, err = Load(filepath.Join(t.TempDir(), "missing"), Options{})
	assert.ErrorContains(t, err, "missing is not an evidence bundle: not a directory")
}

func TestUnfinishedRunSaysSo(t *testing.T) {
	dir := writeBundle(t, "sat", "ma", reporttest.Options{Unfinished: true})
	r, err := Load(dir, Options{})
	require.NoError(t, err)
	assert.True(t, r.OK(), "%v %v", r.Integrity, r.Mismatches)
	assert.False(t, r.Complete)
	var md, html bytes.Buffer
	require.NoError(t, Markdown(&md, r))
	require.NoError(t, HTML(&html, r))
	assert.Contains(t, md.String(), "the run did not finish: no manifest; verified up to its last checkpoint")
	assert.Contains(t, html.String(), "The run did not finish: the bundle has no manifest.")
}

// The report lists the binding's instruments, marks one overdue at the
// run, and heads an unfinished run (a hand-over) as UNFINISHED.
func TestInstrumentsAndHandoverInTheHTML(t *testing.T) {
	r := &Run{Site: "threemodule", Level: "sat", Outcome: Unfinished, Operator: "A. Engineer",
		Handover: "the shift ended after case sat.p1-ma.steady.voltage-b (--until); 3 case(s) not run yet",
		Instruments: []results.Instrument{{Device: "pdu-p1-a", Make: "Fluke", Model: "1738", Serial: "FL-0042", Calibrated: "2025-01-10", Due: "2026-01-10", Overdue: true},
			{Device: "lb-ma", Serial: "AV-0007", Calibrated: "2026-06-01", Due: "2027-06-01", Certificate: "cal/av-0007.pdf"}}}
	var b strings.Builder
	require.NoError(t, HTML(&b, r))
	page := b.String()
	assert.Equal(t, "UNFINISHED", r.Verdict())
	assert.Contains(t, page, "Verdict: <strong>UNFINISHED</strong>")
	assert.Contains(t, page, "Stopped for a hand-over between shifts: the shift ended after case")
	assert.Contains(t, page, `<tr class="FAIL"><td>pdu-p1-a</td><td>Fluke 1738</td><td>FL-0042</td><td>2025-01-10</td><td>2026-01-10 <strong class="overdue">OVERDUE at the run</strong></td>`)
	assert.Contains(t, page, "<td>lb-ma</td><td> </td><td>AV-0007</td><td>2026-06-01</td><td>2027-06-01</td><td>cal/av-0007.pdf</td>")
}

// A case's ambient conditions are printed under its title, and one not
// read says why.
func TestAmbientInTheHTML(t *testing.T) {
	v := 23.46
	r := &Run{Site: "threemodule", Level: "sat", Outcome: results.Passed, Cases: []Case{{ID: "sat.p1-ma.steady.voltage-a", Verdict: Pass,
		Ambient: []results.Ambient{{Channel: "site/air-temp", Value: &v, Unit: "degC"}, {Channel: "site/humidity", Problem: "device amb point rh: error"}}}}}
	var b strings.Builder
	require.NoError(t, HTML(&b, r))
	assert.Contains(t, b.String(), `<p class="meta">ambient at the start: site/air-temp 23.46 degC; site/humidity not read (device amb point rh: error)</p>`)
}
