package diff

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// toleranceCase widens the supplier's voltage tolerance: two ERR findings.
func toleranceCase(t *testing.T) Result {
	for _, tc := range goldenCases {
		if tc.name == "tolerance-changed-supplier" {
			return runCase(t, tc)
		}
	}
	t.Fatal("no tolerance-changed-supplier case")
	return Result{}
}

func TestRenderFormats(t *testing.T) {
	r := toleranceCase(t)
	for _, format := range []string{"json", "markdown", "github"} {
		var buf bytes.Buffer
		require.NoError(t, Render(&buf, format, r))
		golden(t, filepath.Join("testdata", "golden", "render."+format), buf.Bytes())
	}
	var buf bytes.Buffer
	require.ErrorContains(t, Render(&buf, "xml", r), `unknown format "xml"`)
}

func TestJSONRoundTrip(t *testing.T) {
	r := toleranceCase(t)
	var buf bytes.Buffer
	require.NoError(t, JSON(&buf, r))
	var back struct {
		Findings []struct {
			Rule     string `json:"rule"`
			Severity string `json:"severity"`
			Side     string `json:"side"`
			Breaks   []Party
			New      struct{ File string }
		}
		Summary map[string]int
	}
	require.NoError(t, json.Unmarshal(buf.Bytes(), &back))
	assert.Equal(t, 2, back.Summary["ERR"])
	assert.Equal(t, "ERR", back.Findings[1].Severity)
	assert.Equal(t, "supplier", back.Findings[1].Side)
	assert.Equal(t, []Party{{Role: "consumer", Module: "ma", Vendor: "GPUWorks"}}, back.Findings[1].Breaks)
	assert.Equal(t, "new/p1-ma.cue", back.Findings[1].New.File)
}

func TestOverrides(t *testing.T) {
	r := toleranceCase(t)
	cases := []struct {
		name, file string
		want       map[string]Severity // rule → severity; absent = dropped
	}{
		{"by rule", "DIFF014 WARN\n", map[string]Severity{"DIFF014": Warn, "DIFF050": Err}},
		{"by side", "DIFF014:consumer INFO\nDIFF014:supplier INFO\n", map[string]Severity{"DIFF014": Info, "DIFF050": Err}},
		{"other side", "DIFF014:consumer INFO\n", map[string]Severity{"DIFF014": Err, "DIFF050": Err}},
		{"by path", `DIFF050 OFF boundaries."p1-ma".steady` + "\n", map[string]Severity{"DIFF014": Err}},
		{"path elsewhere", `DIFF050 OFF boundaries."l1-ma"` + "\n", map[string]Severity{"DIFF014": Err, "DIFF050": Err}},
		{"later wins", "# comment\nDIFF014 OFF\nDIFF014 INFO # back\n", map[string]Severity{"DIFF014": Info, "DIFF050": Err}},
	}
	for _, tc := range cases {
		ov, err := ParseOverrides("ov", []byte(tc.file))
		require.NoError(t, err, tc.name)
		got := map[string]Severity{}
		for _, f := range ov.Apply(r).Findings {
			got[f.Rule] = f.Severity
		}
		assert.Equal(t, tc.want, got, tc.name)
	}
}

func TestOverrideErrorsNameTheLine(t *testing.T) {
	for in, want := range map[string]string{
		"DIFF014\n":             "ov:1: want RULE[:SIDE] SEVERITY",
		"\nDIFF999 ERR\n":       `ov:2: unknown rule "DIFF999"`,
		"DIFF014:vendor ERR\n":  `ov:1: unknown side "vendor"`,
		"DIFF014 FATAL\n":       `ov:1: unknown severity "FATAL" (want ERR, WARN or INFO), or OFF`,
		"DIFF014 ERR a b c d\n": "ov:1: want RULE[:SIDE] SEVERITY",
	} {
		_, err := ParseOverrides("ov", []byte(in))
		assert.ErrorContains(t, err, want, in)
	}
}

func TestRuleTableIsComplete(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range Rules {
		assert.False(t, seen[r.ID], "duplicate %s", r.ID)
		seen[r.ID] = true
		assert.NotEmpty(t, r.Name)
		assert.NotEmpty(t, r.Summary)
		assert.True(t, r.Supplier != "" || r.Consumer != "" || r.Joint != "", "%s has no verdict", r.ID)
	}
}
