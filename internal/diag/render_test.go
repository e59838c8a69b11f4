package diag

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite golden files")

func sample() List {
	return List{
		{Rule: "JOINT001", Severity: Error, Pos: Pos{File: "power.cue", Line: 11, Col: 65}, Path: "boundaries.p1-ma.steady.v",
			Message: "gap: 100% sure, with a, comma: and colon", Hint: "narrow it\nor widen it",
			Related: []Related{{Pos: Pos{File: "it.cue", Line: 10, Col: 18}, Message: "the required band"}}},
		{Rule: "CLAUSE002", Severity: Warning, Pos: Pos{File: "controls.cue", Line: 8, Col: 12}, Message: "one-sided"},
		{Rule: "LOAD001", Severity: Error, Pos: Pos{File: "empty"}, Message: "no .cue files"},
	}
}

func TestRenderGolden(t *testing.T) {
	for _, format := range Formats {
		t.Run(format, func(t *testing.T) {
			var b bytes.Buffer
			require.NoError(t, Render(&b, format, sample(), map[string]string{"JOINT001": "steady gap", "CLAUSE002": "one-sided", "LOAD001": "empty"}))
			path := filepath.Join("testdata", "sample."+format)
			if *update {
				require.NoError(t, os.WriteFile(path, b.Bytes(), 0o644))
			}
			want, err := os.ReadFile(path)
			require.NoError(t, err)
			require.Equal(t, string(want), b.String())
		})
	}
	require.Error(t, Render(&bytes.Buffer{}, "xml", nil, nil))
}

func TestGitHubEscapesAndLevels(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, GitHub(&b, sample()[:2]))
	lines := bytes.Split(bytes.TrimSpace(b.Bytes()), []byte("\n"))
	require.Len(t, lines, 2, "a message with newlines stays on one line")
	require.Contains(t, string(lines[0]), "::error file=power.cue,line=11,col=65,title=JOINT001::")
	require.Contains(t, string(lines[0]), "100%25 sure")
	require.Contains(t, string(lines[0]), "%0Afix: narrow it%0Aor widen it")
	require.Contains(t, string(lines[1]), "::warning ")
}

func TestSARIFShape(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, SARIF(&b, sample(), map[string]string{"JOINT001": "steady gap"}))
	var log struct {
		Version string `json:"version"`
		Runs    []struct {
			Tool struct {
				Driver struct {
					Name  string                `json:"name"`
					Rules []struct{ ID string } `json:"rules"`
				} `json:"driver"`
			} `json:"tool"`
			Results []struct {
				RuleID    string `json:"ruleId"`
				Level     string `json:"level"`
				Locations []struct {
					PhysicalLocation struct {
						ArtifactLocation struct{ URI string } `json:"artifactLocation"`
						Region           *struct {
							StartLine, StartColumn int
						} `json:"region"`
					} `json:"physicalLocation"`
				} `json:"locations"`
				RelatedLocations []json.RawMessage `json:"relatedLocations"`
			} `json:"results"`
		} `json:"runs"`
	}
	require.NoError(t, json.Unmarshal(b.Bytes(), &log))
	require.Equal(t, "2.1.0", log.Version)
	r := log.Runs[0].Results
	require.Len(t, r, 3)
	require.Equal(t, "error", r[0].Level)
	require.Equal(t, "warning", r[1].Level)
	require.Equal(t, 11, r[0].Locations[0].PhysicalLocation.Region.StartLine)
	require.Len(t, r[0].RelatedLocations, 1)
	require.Nil(t, r[2].Locations[0].PhysicalLocation.Region, "a file without a line has no region")
}

func TestSortedAndFold(t *testing.T) {
	l := List{
		{Rule: "U", Pos: Pos{File: "b.cue", Line: 2}, Path: "x.r2.p", Message: "x.r2.p: bad"},
		{Rule: "U", Pos: Pos{File: "b.cue", Line: 2}, Path: "x.r1.p", Message: "x.r1.p: bad"},
		{Rule: "U", Pos: Pos{File: "a.cue", Line: 9}, Path: "y", Message: "y: bad"},
		{Rule: "U", Pos: Pos{File: "a.cue", Line: 9}, Path: "y", Message: "y: bad"},
	}
	s := l.Sorted()
	require.Len(t, s, 3, "exact duplicates dropped")
	require.Equal(t, "a.cue", s[0].Pos.File)
	f := s.Fold()
	require.Len(t, f, 2)
	require.Equal(t, "x.r1.p: bad (also at x.r2.p)", f[1].Message)
	require.Equal(t, 4, l.Count(Info))
	require.Equal(t, 0, l.Count(Warning))
}
