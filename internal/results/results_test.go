package results

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/grade"
)

var update = flag.Bool("update", false, "rewrite the golden files")

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func f(v float64) *float64 { return &v }

func tp(t time.Time) *time.Time { return &t }

const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func sample() *Results {
	r := &Results{Format: Format, Tool: Tool{"sat", "0.1.0-dev"},
		Plan: PlanRef{Digest: digest, Site: "threemodule", Level: "sat", Contracts: digest, MaxHoldS: 5, Compiler: Tool{"contractc", "0.1.0-dev"}},
		Run:  Run{Started: t0, Ended: tp(t0.Add(time.Hour)), Site: "simulated", TimeScale: 20, Shortened: "holds capped at 5 s; site time runs 20× wall time", Operator: "simulator"},
		Cases: []Case{{ID: "sat.p1-ma.steady.voltage-a", Title: "SAT p1-ma voltage-a", Level: "sat", Kind: "steady", Boundary: "p1-ma", Module: "ma",
			Clause:  Clause{Path: `boundaries."p1-ma".steady."voltage-a"`, Pos: "joints.cue:12:3", BoundaryDigest: digest},
			Outcome: grade.Pass, Started: tp(t0), Ended: tp(t0.Add(time.Minute)),
			Checks: []Check{{Verdict: grade.Verdict{Check: "guarantee-in-band", Kind: "in_band", Outcome: grade.Pass, Measured: f(405.1), Limit: f(402.55), Margin: f(2.55),
				Unit: "V", At: tp(t0.Add(3 * time.Second)), Samples: 120, Detail: "all 120 samples inside"},
				Side: "guarantee", Channel: "p1/ma/feed-a/voltage", Sources: []Source{{Path: `boundaries."p1-ma".steady."voltage-a".guarantee.nominal`, Pos: "joints.cue:13:5", Value: "415 V"}}}}},
			{ID: "sat.p1-ma.transient.training-voltage", Title: "SAT p1-ma training-voltage", Level: "sat", Kind: "transient", Boundary: "p1-ma", Module: "ma",
				Clause:  Clause{Path: `boundaries."p1-ma".transient."training-voltage"`, Pos: "joints.cue:30:3", BoundaryDigest: digest},
				Outcome: grade.Skipped, Reason: "precondition: case sat.p1-ma.steady.voltage-a did not pass", Checks: []Check{}}},
	}
	r.Summarize()
	return r
}

func TestEncodeGolden(t *testing.T) {
	b, err := Encode(sample())
	require.NoError(t, err)
	golden := filepath.Join("testdata", "results.golden.json")
	if *update {
		require.NoError(t, os.WriteFile(golden, b, 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err)
	assert.Equal(t, string(want), string(b))

	back, err := Decode(b)
	require.NoError(t, err)
	assert.Equal(t, sample(), back)
}

func TestSummarize(t *testing.T) {
	r := sample()
	assert.Equal(t, Counts{Pass: 1, Skipped: 1}, r.Counts)
	assert.Equal(t, Errored, r.Outcome, "a skipped case means the plan was not proved")
	r.Cases[1].Outcome = grade.Pass
	r.Summarize()
	assert.Equal(t, Passed, r.Outcome)
	r.Cases[1].Outcome = grade.Fail
	r.Summarize()
	assert.Equal(t, Failed, r.Outcome)
	r.Abort = &Abort{At: t0, Cause: CauseInterlock, Reason: "x"}
	r.Summarize()
	assert.Equal(t, Aborted, r.Outcome)
}

func TestSchemaRefuses(t *testing.T) {
	tests := []struct {
		name   string
		edit   func(*Results)
		reason string
	}{
		{"a pass with a negative margin", func(r *Results) { r.Cases[0].Checks[0].Margin = f(-1) }, "at /cases/0/checks/0/margin: must be >= 0"},
		{"a pass without a measured value", func(r *Results) { r.Cases[0].Checks[0].Measured = nil }, "missing properties: 'measured'"},
		{"a skip without a reason", func(r *Results) { r.Cases[1].Reason = "" }, "missing properties: 'reason'"},
		{"a passed case without checks", func(r *Results) { r.Cases[0].Checks = []Check{} }, "at /cases/0/checks: minimum 1 items required"},
		{"an unknown outcome", func(r *Results) { r.Cases[0].Outcome = "MAYBE" }, "at /cases/0/outcome"},
		{"a bad digest", func(r *Results) { r.Plan.Digest = "md5:x" }, "at /plan/digest: does not match pattern"},
		{"no operator", func(r *Results) { r.Run.Operator = "" }, "at /run/operator"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := sample()
			tt.edit(r)
			_, err := Encode(r)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.reason)
		})
	}
}

func TestDecodeRefuses(t *testing.T) {
	_, err := Decode([]byte(`{"format":"seam.results/v0"}`))
	assert.ErrorContains(t, err, "not seam.results/v1 results (format seam.results/v0)")
	_, err = Decode([]byte(`[]`))
	assert.ErrorContains(t, err, "format missing")
	b, err := Encode(sample())
	require.NoError(t, err)
	_, err = Decode([]byte(strings.Replace(string(b), `"format"`, `"extra": 1, "format"`, 1)))
	assert.ErrorContains(t, err, "additionalProperties 'extra' not allowed")
	_, err = Read(filepath.Join(t.TempDir(), "missing.json"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}
