package satcmd

import (
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/clock"
	"github.com/seamdc/seam/internal/comtrade"
	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/evidence"
	"github.com/seamdc/seam/internal/grade"
)

const voltageCase = "sat.p1-ma.transient.training-voltage"

// analyserCapture writes what a power-quality analyser exports of the
// case's first commanded edge: 3 s of line-line voltage at 1 kHz, its
// clock 1.3 s behind the runner's, triggered at the edge; the RMS falls
// to level % of 415 V for dur seconds from the edge. It returns the
// .cfg's path.
func analyserCapture(t *testing.T, edge time.Time, level, dur float64, dir string) string {
	t.Helper()
	const rate, n = 1000.0, 3000
	trigger := edge.Add(-1300 * time.Millisecond)
	c := &comtrade.Capture{Config: comtrade.Config{Station: "site", Device: "PQ analyser 1", Revision: "2013", DataType: comtrade.Binary, LineHz: 50,
		Analogs: []comtrade.Analog{{ID: "VAB", Phase: "AB", Unit: "V", A: 0.05, Min: -32767, Max: 32767, Primary: 1, Secondary: 1, PS: "P"}},
		Rates:   []comtrade.Rate{{Hz: rate, EndSample: n}}, Start: trigger.Add(-time.Second), Trigger: trigger}}
	c.Analog = [][]float64{make([]float64, n)}
	for k := 0; k < n; k++ {
		ts := float64(k) / rate
		a := 1.0
		if ts >= 1 && ts < 1+dur {
			a = level / 100
		}
		c.Time = append(c.Time, ts)
		c.Analog[0][k] = 415 * math.Sqrt2 * a * math.Sin(2*math.Pi*50*ts)
	}
	cfg, err := os.Create(filepath.Join(dir, "pq1.cfg"))
	require.NoError(t, err)
	dat, err := os.Create(filepath.Join(dir, "pq1.dat"))
	require.NoError(t, err)
	require.NoError(t, comtrade.Write(cfg, dat, c))
	require.NoError(t, cfg.Close())
	require.NoError(t, dat.Close())
	return cfg.Name()
}

func firstEdge(t *testing.T, dir, caseID, step string) time.Time {
	t.Helper()
	rep, err := evidence.Audit(dir, evidence.AuditOptions{})
	require.NoError(t, err)
	ac := rep.Counting()[caseID]
	require.NotNil(t, ac, "case %s", caseID)
	edges := evidence.CaseEdges(*ac.End.Timeline, step)
	require.NotEmpty(t, edges)
	return edges[0]
}

// A 1 kHz capture with a 1.3 s clock offset is attached to the voltage
// transient case, aligned on its commanded edge and graded against
// ITIC; the report plots it and the coverage table takes the mask's
// reason away. A dropout of 100 ms fails; an edited dat does not verify.
func TestAttachCapture(t *testing.T) {
	good, _, key, _ := signedBundles(t)
	dir := filepath.Join(t.TempDir(), "ev")
	require.NoError(t, os.CopyFS(dir, os.DirFS(good)))
	edge := firstEdge(t, dir, voltageCase, "excite")

	sag := analyserCapture(t, edge, 85, 0.1, t.TempDir())
	code, out, errOut := sat(t, "attach", dir, sag, "--case", voltageCase, "--channel", "vab", "--step", "excite", "--key", key, "--by", "Jane Roe")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "capture pq1.cfg: "+voltageCase+", 1000 samples/s, 3000 samples, channel VAB (V), nominal 415, ITIC mask")
	assert.Contains(t, out, "PASS attachments/pq1.cfg: capture VAB ranged")
	assert.Contains(t, out, "offset +1.300 s")

	code, vout, _ := sat(t, "verify", dir)
	require.Equal(t, 0, code, vout)

	repDir := filepath.Join(t.TempDir(), "report")
	code, rout, rerr := sat(t, "report", dir, "--format", "html", "--out", repDir)
	require.Equal(t, 0, code, rout+rerr)
	html, err := os.ReadFile(filepath.Join(repDir, "report.html"))
	require.NoError(t, err)
	page := string(html)
	assert.Contains(t, page, "<h2>Waveform captures</h2>")
	assert.Contains(t, page, "+1.300 s")
	assert.Contains(t, page, "the ITIC mask, from capture pq1.cfg of "+voltageCase+" at 1000 samples/s (PASS)")
	assert.Contains(t, page, `id="capture-0"`)
	assert.Contains(t, page, "time since the capture")
	assert.NotContains(t, page[strings.Index(page, `<section id="coverage">`):strings.Index(page, `<section id="captures">`)], "require ITIC mask is not graded")

	// a dropout to 0 for 100 ms leaves the mask (ITIC allows 20 ms)
	drop := analyserCapture(t, edge, 0, 0.1, t.TempDir())
	require.NoError(t, os.Rename(drop, filepath.Join(filepath.Dir(drop), "pq2.cfg")))
	require.NoError(t, os.Rename(strings.TrimSuffix(drop, ".cfg")+".dat", filepath.Join(filepath.Dir(drop), "pq2.dat")))
	code, out, errOut = sat(t, "attach", dir, filepath.Join(filepath.Dir(drop), "pq2.cfg"), "--case", voltageCase, "--channel", "VAB", "--key", key, "--by", "Jane Roe")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "FAIL attachments/pq2.cfg: capture VAB was below 70 % of nominal for")
	assert.Contains(t, out, "the mask allows 20 ms")
	// the analyser saw what polling could not: the case fails in the
	// results the reader gives, results.json staying as signed
	code, vout, _ = sat(t, "verify", dir)
	require.Equal(t, 0, code, vout)
	assert.Contains(t, vout, "capture attachments/pq1.cfg of "+voltageCase+": PASS, the ITIC mask on VAB, the analyser's clock offset +1.300 s")
	assert.Contains(t, vout, "capture attachments/pq2.cfg of "+voltageCase+": FAIL, the ITIC mask on VAB")
	assert.Contains(t, vout, "results: failed with the failing captures of "+voltageCase+" (results.json, signed with the run, says passed)")
	failDir := filepath.Join(t.TempDir(), "report")
	code, rout, rerr = sat(t, "report", dir, "--format", "html", "--out", failDir)
	require.Equal(t, 0, code, rout+rerr)
	assert.Contains(t, rout, "9 cases, failed")
	html, err = os.ReadFile(filepath.Join(failDir, "report.html"))
	require.NoError(t, err)
	assert.Contains(t, string(html), "FAILED")
	assert.Contains(t, string(html), "the ITIC mask fails on the capture attachments/pq2.cfg")
	code, rout, rerr = sat(t, "report", dir, "--format", "md", "--out", failDir)
	require.Equal(t, 0, code, rout+rerr)
	md, err := os.ReadFile(filepath.Join(failDir, "summary.md"))
	require.NoError(t, err)
	assert.Contains(t, string(md), "| `"+voltageCase+"` | FAIL | | | | the ITIC mask fails on the capture attachments/pq2.cfg")
	assert.Contains(t, string(md), "| `pq1.cfg` | `"+voltageCase+"` | ITIC on VAB | PASS | +1.300 s |")
	assert.Contains(t, string(md), "| `pq2.cfg` | `"+voltageCase+"` | ITIC on VAB | FAIL |")
	code, rout, rerr = sat(t, "report", dir, "--format", "csv", "--out", failDir)
	require.Equal(t, 0, code, rout+rerr)
	checks, err := os.ReadFile(filepath.Join(failDir, "checks.csv"))
	require.NoError(t, err)
	assert.Regexp(t, `,`+regexp.QuoteMeta(voltageCase)+`,FAIL,[^\n]*,pq1.cfg,capture,,VAB,V,,,,PASS,"ITIC mask: capture VAB ranged [^\n]*offset \+1.300 s"`, string(checks))
	assert.Regexp(t, `,`+regexp.QuoteMeta(voltageCase)+`,FAIL,[^\n]*,pq2.cfg,capture,,VAB,V,,,,FAIL,"ITIC mask: capture VAB was below 70 % of nominal`, string(checks))
	rep, err := evidence.Audit(dir, evidence.AuditOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{voltageCase}, rep.FailedByCapture)
	for _, c := range rep.Results.Cases {
		if c.ID == voltageCase {
			assert.Equal(t, grade.Fail, c.Outcome)
			assert.Contains(t, c.Reason, "the ITIC mask fails on the capture attachments/pq2.cfg: capture VAB was below 70 % of nominal")
		}
	}

	// a capture record whose signed verdict and offset the audit does
	// not reproduce is a mismatch, as a re-graded case verdict is
	rep, err = evidence.Audit(dir, evidence.AuditOptions{})
	require.NoError(t, err)
	require.Len(t, rep.Captures, 2)
	require.NotNil(t, rep.Captures[0].OffsetS, "the offset is recorded in the evidence at attach")
	assert.InDelta(t, 1.3, *rep.Captures[0].OffsetS, 1e-5, "to the cfg's microsecond")
	assert.Equal(t, grade.Pass, rep.Captures[0].Verdict)
	signer, _, err := evidenceSigner(keyFlags{key: key}, os.LookupEnv)
	require.NoError(t, err)
	am, err := evidence.Amend(dir, signer, evidence.Amendment{Purpose: evidence.PurposeAttach, Role: evidence.RoleAttach, By: "Jane Roe"}, clock.Real{})
	require.NoError(t, err)
	wrong := rep.Captures[0].CaptureRecord
	wrong.Verdict = grade.Fail
	cfgB, err := os.ReadFile(filepath.Join(dir, evidence.AttachDir, "pq1.cfg"))
	require.NoError(t, err)
	datB, err := os.ReadFile(filepath.Join(dir, evidence.AttachDir, "pq1.dat"))
	require.NoError(t, err)
	require.NoError(t, am.AttachCapture(wrong, []string{"pq3.cfg", "pq3.dat"}, [][]byte{cfgB, datB}))
	require.NoError(t, am.Close())
	code, vout, verr := sat(t, "verify", dir)
	assert.NotEqual(t, 0, code, vout)
	assert.Contains(t, vout+verr, "capture VAB")

	// the capture's bytes are covered by the bundle's digests
	require.NoError(t, os.WriteFile(filepath.Join(dir, evidence.AttachDir, "pq1.dat"), []byte("edited"), 0o644))
	code, vout, _ = sat(t, "verify", dir)
	assert.NotEqual(t, 0, code, vout)
	assert.Contains(t, vout, "pq1.dat")
}

// Bad capture attachments say what is wrong and attach nothing.
func TestAttachCaptureErrors(t *testing.T) {
	good, _, key, _ := signedBundles(t)
	dir := filepath.Join(t.TempDir(), "ev")
	require.NoError(t, os.CopyFS(dir, os.DirFS(good)))
	edge := firstEdge(t, dir, voltageCase, "")
	capDir := t.TempDir()
	cfg := analyserCapture(t, edge, 85, 0.1, capDir)
	lone := filepath.Join(t.TempDir(), "lone.cfg")
	raw, err := os.ReadFile(cfg)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(lone, raw, 0o644))
	bad := filepath.Join(t.TempDir(), "bad.cfg")
	require.NoError(t, os.WriteFile(bad, []byte(strings.Replace(string(raw), "1,1A,0D", "1,1A,0X", 1)), 0o644))
	require.NoError(t, os.WriteFile(strings.TrimSuffix(bad, ".cfg")+".dat", nil, 0o644))
	slow := filepath.Join(t.TempDir(), "slow.cfg")
	require.NoError(t, os.WriteFile(slow, []byte(strings.Replace(string(raw), "\r\n1000,3000\r\n", "\r\n200,3000\r\n", 1)), 0o644))
	dat, err := os.ReadFile(strings.TrimSuffix(cfg, ".cfg") + ".dat")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(strings.TrimSuffix(slow, ".cfg")+".dat", dat, 0o644))
	tests := []struct {
		args []string
		want string
	}{
		{[]string{slow, "--case", voltageCase, "--channel", "VAB"}, "200 samples/s is 4.0 samples a 50 Hz cycle: an RMS per half cycle needs at least 8 (record at 1 kHz or more) (attach it without --case to keep it as a file)"},
		{[]string{cfg, "--case", voltageCase}, "--channel: which analog channel"},
		{[]string{cfg, "--case", voltageCase, "--channel", "VX"}, "has no analog channel \"VX\": it has VAB"},
		{[]string{cfg, "--case", "sat.nope", "--channel", "VAB"}, "--case sat.nope: the plan has no such case"},
		{[]string{cfg, "--case", voltageCase, "--channel", "VAB", "--step", "nope"}, "--step nope: case " + voltageCase + " has no such step"},
		{[]string{cfg, "--case", voltageCase, "--channel", "VAB", "--mask", "0.5:70-120,0.1:80-110"}, "point 2 lasts 0.1s, not longer than point 1"},
		{[]string{cfg, "--channel", "VAB"}, "give --case ID too"},
		{[]string{cfg, "--case", voltageCase, "--channel", "VAB", "--edge", "-1"}, "--edge -1: edges count from 1"},
		{[]string{lone, "--case", voltageCase, "--channel", "VAB"}, "no lone.dat beside it"},
		{[]string{bad, "--case", voltageCase, "--channel", "VAB"}, "bad.cfg:2: channel counts"},
	}
	for _, tt := range tests {
		code, _, errOut := sat(t, append(append([]string{"attach", dir}, tt.args...), "--key", key, "--by", "J")...)
		assert.Equal(t, 1, code, errOut)
		assert.Contains(t, errOut, tt.want)
	}
	rep, err := evidence.Audit(dir, evidence.AuditOptions{})
	require.NoError(t, err)
	assert.Empty(t, rep.Segments, "nothing was attached")
}

// The ITIC mask attach grades with is contract.ITIC, in seconds and %.
func TestITICMaskPoints(t *testing.T) {
	got, err := parseMask("itic")
	require.NoError(t, err)
	assert.Equal(t, []grade.MaskPoint{{DurationS: 0.02, MinPct: 0, MaxPct: 120}, {DurationS: 0.5, MinPct: 70, MaxPct: 120},
		{DurationS: 10, MinPct: 80, MaxPct: 110}, {DurationS: 1e9, MinPct: 90, MaxPct: 110}}, got)
	assert.Len(t, contract.ITIC, len(got))
	custom, err := parseMask("0.1:85-115, 1e9:95%-105%")
	require.NoError(t, err)
	assert.Equal(t, []grade.MaskPoint{{DurationS: 0.1, MinPct: 85, MaxPct: 115}, {DurationS: 1e9, MinPct: 95, MaxPct: 105}}, custom)
}

// simConfigWithCaptures is the example's sim config with the simulated
// analyser writing to dir, its clock offset from the site's.
func simConfigWithCaptures(t *testing.T, dir, offset string) string {
	t.Helper()
	cfgDir := simConfig(t)
	captures := "package sim\n\nsim: captures: {dir: \"" + dir + "\", offset: \"" + offset + "\", rate: \"1000 Hz\"}\n"
	require.NoError(t, os.WriteFile(filepath.Join(cfgDir, "captures.cue"), []byte(captures), 0o644))
	return cfgDir
}

// The end-to-end run: the simulated site writes 1 kHz COMTRADE
// captures of its transients with its analyser's clock 1.3 s ahead;
// sat run runs the SAT plan; the capture of the voltage case's first
// square-wave edge is attached; sat report grades the ITIC mask from it,
// finds the offset, plots it and marks the mask proved in the coverage.
func TestSimulatedCaptureEndToEnd(t *testing.T) {
	key, _ := sshKey(t)
	capDir := t.TempDir()
	cfg := simConfigWithCaptures(t, capDir, "1.3 s")
	out := filepath.Join(t.TempDir(), "ev")
	code, res, stdout := simRun(t, examplePlan(t, "sat"), out, "--sim-config", cfg, "--sign-key", key)
	require.Equal(t, 0, code, stdout)
	require.Equal(t, grade.Pass, outcomes(res)[voltageCase], stdout)

	edge := firstEdge(t, out, voltageCase, "excite")
	files, err := filepath.Glob(filepath.Join(capDir, "*.cfg"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "the simulated analyser wrote no capture")
	best, bestLag := "", time.Duration(math.MaxInt64)
	for _, f := range files {
		c, err := comtrade.Open(f)
		require.NoError(t, err, "the simulator's capture %s", f)
		assert.Equal(t, 1000.0, c.SampleRate())
		if lag := c.Trigger.Sub(edge.Add(1300 * time.Millisecond)).Abs(); lag < bestLag {
			best, bestLag = f, lag
		}
	}
	require.Less(t, bestLag, 100*time.Millisecond, "no capture triggered at the excite edge (+1.3 s): %v", files)

	code, aout, errOut := sat(t, "attach", out, best, "--case", voltageCase, "--step", "excite", "--channel", "p1/block/a", "--key", key, "--by", "Jane Roe")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, aout, "1000 samples/s")
	assert.Contains(t, aout, "nominal 415")
	assert.Contains(t, aout, "PASS attachments/"+filepath.Base(best))

	repDir := filepath.Join(t.TempDir(), "report")
	code, rout, rerr := sat(t, "report", out, "--format", "html", "--out", repDir)
	require.Equal(t, 0, code, rout+rerr)
	html, err := os.ReadFile(filepath.Join(repDir, "report.html"))
	require.NoError(t, err)
	page := string(html)
	assert.Contains(t, page, "<h2>Waveform captures</h2>")
	assert.Contains(t, page, filepath.Base(best))
	assert.Regexp(t, `<td class="num">-1\.3[0-2]\d s</td><td><span class="v v-PASS">PASS</span>`, page, "the offset found: the analyser reads 1.3 s ahead, and triggers within two physics steps of the edge")
	assert.Contains(t, page, "the ITIC mask, from capture "+filepath.Base(best))
	assert.Contains(t, page, `id="capture-0"`)
}
