package diff

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/contract"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// edit changes a copy of testdata/base: replace old by new in file; with
// old empty, append new; with both empty, delete the file.
type edit struct{ file, old, new string }

func del(file string) edit { return edit{file: file} }

type goldenCase struct {
	name     string
	want     []string // "RULE:side" that must be found; side "" for the joint or site
	old, new []edit
}

// ctlNoGuarantee leaves ctl-ma with the consumer's requirements only.
var ctlNoGuarantee = []edit{
	{"ctl-ma.cue", "\t\tguarantee: {max: \"2 s\"}\n", ""},
	{"ctl-ma.cue", "\t\tguarantee: {alarm: \"ctl/ma/alarm/controller-silent\", alarm_within: \"3 s\"}\n", ""},
}

var goldenCases = []goldenCase{
	{name: "module-added", want: []string{"DIFF001:"},
		new: []edit{{"site.cue", "\t\tctl: {", "\t\tmb: {kind: \"it\", vendor: \"GPUWorks\", failure_domain: \"fd-b\"}\n\t\tctl: {"}}},
	{name: "module-removed", want: []string{"DIFF002:", "DIFF004:supplier"},
		new: []edit{del("ctl-ma.cue"), {"site.cue", "\t\tctl: {\n\t\t\tkind:           \"controls\"\n\t\t\tvendor:         \"SiteOps\"\n\t\t\tfailure_domain: \"fd-site\"\n\t\t\tnetworks: net: {paths: 2, serves: [\"ma\"]}\n\t\t}\n", ""}}},
	{name: "boundary-added", want: []string{"DIFF003:"}, old: []edit{del("ctl-ma.cue")}},
	{name: "boundary-removed-supplier", want: []string{"DIFF004:supplier"}, new: []edit{del("ctl-ma.cue")}},
	{name: "boundary-removed-consumer", want: []string{"DIFF004:consumer"}, old: ctlNoGuarantee, new: []edit{del("ctl-ma.cue")}},
	{name: "clause-added-supplier", want: []string{"DIFF005:supplier"},
		new: []edit{{"ctl-ma.cue", "\tsteady: heartbeat: {", "\tsteady: jitter: {channel: \"ctl/ma/heartbeat-age\", guarantee: {max: \"1 s\"}}\n\tsteady: heartbeat: {"}}},
	{name: "clause-added-consumer", want: []string{"DIFF005:consumer"},
		new: []edit{{"ctl-ma.cue", "\tsteady: heartbeat: {", "\tsteady: jitter: {channel: \"ctl/ma/heartbeat-age\", require: {max: \"1 s\"}}\n\tsteady: heartbeat: {"}}},
	{name: "clause-removed-supplier", want: []string{"DIFF006:supplier"},
		new: []edit{{"ctl-ma.cue", "\tsteady: heartbeat: {\n\t\tchannel: \"ctl/ma/heartbeat-age\"\n\t\tguarantee: {max: \"2 s\"}\n\t\trequire: {max: \"5 s\"}\n\t}\n", ""}}},
	{name: "clause-removed-consumer", want: []string{"DIFF006:consumer"},
		old: []edit{{"ctl-ma.cue", "\tsteady: heartbeat: {", "\tsteady: jitter: {channel: \"ctl/ma/heartbeat-age\", require: {max: \"1 s\"}}\n\tsteady: heartbeat: {"}}},
	{name: "bound-tightened-supplier", want: []string{"DIFF010:supplier"},
		new: []edit{{"l1-ma.cue", `guarantee: {min: "400 L/min"}`, `guarantee: {min: "450 L/min"}`}}},
	{name: "bound-tightened-consumer", want: []string{"DIFF010:consumer"},
		new: []edit{{"l1-ma.cue", `require: {min: "300 L/min"}`, `require: {min: "350 L/min"}`}}},
	{name: "bound-loosened-supplier", want: []string{"DIFF011:supplier"},
		new: []edit{{"l1-ma.cue", `guarantee: {min: "400 L/min"}`, `guarantee: {min: "350 L/min"}`}}},
	{name: "bound-loosened-consumer", want: []string{"DIFF011:consumer"},
		new: []edit{{"l1-ma.cue", `max: "35 degC"`, `max: "40 degC"`}}},
	{name: "bound-shifted-supplier", want: []string{"DIFF012:supplier"},
		new: []edit{{"p1-ma.cue", `guarantee: {nominal: "50 Hz", tolerance: "0.5 %"}`, `guarantee: {min: "49.8 Hz", max: "50.3 Hz"}`}}},
	{name: "bound-shifted-consumer", want: []string{"DIFF012:consumer"},
		new: []edit{{"l1-ma.cue", `min: "20 degC"`, `min: "22 degC"`}, {"l1-ma.cue", `max: "35 degC"`, `max: "37 degC"`}}},
	{name: "nominal-moved-supplier", want: []string{"DIFF013:supplier"},
		new: []edit{{"p1-ma.cue", `guarantee: {nominal: "415 V", tolerance: "3 %"}`, `guarantee: {nominal: "420 V", tolerance: "3 %"}`}}},
	{name: "nominal-moved-consumer", want: []string{"DIFF013:consumer"},
		new: []edit{{"p1-ma.cue", `require: {nominal: "415 V", tolerance: "5 %"}`, `require: {nominal: "410 V", tolerance: "5 %"}`}}},
	{name: "tolerance-changed-supplier", want: []string{"DIFF014:supplier", "DIFF050:supplier"},
		new: []edit{{"p1-ma.cue", `guarantee: {nominal: "415 V", tolerance: "3 %"}`, `guarantee: {nominal: "415 V", tolerance: "6 %"}`}}},
	{name: "tolerance-changed-consumer", want: []string{"DIFF014:consumer"},
		new: []edit{{"p1-ma.cue", `require: {nominal: "415 V", tolerance: "5 %"}`, `require: {nominal: "415 V", tolerance: "4 %"}`}}},
	{name: "unit-changed-supplier", want: []string{"DIFF015:supplier"},
		new: []edit{{"l1-ma.cue", `guarantee: {min: "400 L/min"}`, `guarantee: {min: "24 m3/h"}`}}},
	{name: "unit-changed-consumer", want: []string{"DIFF015:consumer"},
		new: []edit{{"p1-ma.cue", `ride_through:    "2 min"`, `ride_through:    "120 s"`}}},
	{name: "unit-changed-site", want: []string{"DIFF015:"},
		new: []edit{{"site.cue", `design_power:    "100 kW"`, `design_power:    "100000 W"`}}},
	{name: "requiredness-supplier", want: []string{"DIFF016:supplier"},
		new: []edit{{"p1-ma.cue", "\t\t\t\trecovery:        \"10 s\"\n", ""}}},
	{name: "requiredness-consumer", want: []string{"DIFF016:consumer"},
		new: []edit{{"p1-ma.cue", "\t\t\t\talarm_within:    \"5 s\"\n", "\t\t\t\talarm_within:    \"5 s\"\n\t\t\t\trecovery:        \"20 s\"\n"}}},
	{name: "default-changed-consumer", want: []string{"DIFF017:consumer"},
		new: []edit{{"l1-ma.cue", `period:      "60 s"`, `period:      "60 s"` + "\n\t\t\tduty:        \"60 %\""}}},
	{name: "default-changed-site", want: []string{"DIFF017:", "DIFF020:consumer"},
		new: []edit{{"site.cue", "\t\t\t\t\tliquid_fraction: \"90 %\"\n", ""}}},
	{name: "excitation-raised-supplier", want: []string{"DIFF020:supplier"},
		new: []edit{{"p1-ma.cue", `rate:       "5 MW/s"`, `rate:       "8 MW/s"`}}},
	{name: "excitation-raised-consumer", want: []string{"DIFF020:consumer"},
		new: []edit{{"p1-ma.cue", `rate:        "2 MW/s"`, `rate:        "3 MW/s"`}}},
	{name: "excitation-lowered-supplier", want: []string{"DIFF021:supplier", "DIFF050:supplier"},
		new: []edit{{"p1-ma.cue", `step:       "300 kW"`, `step:       "100 kW"`}}},
	{name: "excitation-lowered-consumer", want: []string{"DIFF021:consumer"},
		new: []edit{{"p1-ma.cue", `period:      "4 s"`, `period:      "8 s"`}}},
	{name: "reference-changed-supplier", want: []string{"DIFF030:supplier", "DIFF050:supplier"},
		new: []edit{{"l1-ma.cue", "\t\t\t\talarm:        \"l1/ma/alarm/redundancy-lost\"\n\t\t\t\talarm_within: \"5 s\"", "\t\t\t\talarm:        \"l1/ma/alarm/leak\"\n\t\t\t\talarm_within: \"5 s\""}}},
	{name: "reference-changed-consumer", want: []string{"DIFF030:consumer", "DIFF050:consumer"},
		new: []edit{{"l1-ma.cue", "\t\t\t\talarm:        \"l1/ma/alarm/redundancy-lost\"\n\t\t\t\talarm_within: \"10 s\"", "\t\t\t\talarm:        \"l1/ma/alarm/leak\"\n\t\t\t\talarm_within: \"10 s\""}}},
	{name: "subject-changed", want: []string{"DIFF031:"},
		new: []edit{{"p1-ma.cue", "\t\t\ttarget:  \"p1/block/a\"\n\t\t\tchannel: \"p1/ma/feed-b/voltage\"", "\t\t\ttarget:  \"p1/block/b\"\n\t\t\tchannel: \"p1/ma/feed-b/voltage\""}}},
	{name: "boundary-reassigned", want: []string{"DIFF032:"},
		new: []edit{{"ctl-ma.cue", `parties: ["SiteOps", "GPUWorks"]`, `parties: ["SiteOps", "GPUWorks", "VoltSkid"]`}}},
	{name: "channel-added", want: []string{"DIFF040:"},
		new: []edit{{"l1-ma.cue", "\t\t\"l1/ma/flow\":", "\t\t\"l1/ma/dp\": {quantity: \"pressure\", at: \"l1/loop\"}\n\t\t\"l1/ma/flow\":"}}},
	{name: "channel-removed", want: []string{"DIFF041:"},
		new: []edit{{"l1-ma.cue", "\t\t\"l1/ma/return-temp\": {quantity: \"temperature\", at: \"l1/loop\"}\n", ""}}},
	{name: "channel-changed", want: []string{"DIFF042:"},
		new: []edit{{"p1-ma.cue", `"p1/ma/frequency": {quantity: "frequency", at: "p1/block"}`, `"p1/ma/frequency": {quantity: "frequency", at: "p1/block", safety: true}`}}},
	{name: "gap-opened-consumer", want: []string{"DIFF010:consumer", "DIFF050:consumer"},
		new: []edit{{"l1-ma.cue", `require: {min: "300 L/min"}`, `require: {min: "450 L/min"}`}}},
	{name: "gap-opened-both", want: []string{"DIFF014:supplier", "DIFF010:consumer", "DIFF050:"},
		new: []edit{{"p1-ma.cue", `guarantee: {nominal: "415 V", tolerance: "3 %"}`, `guarantee: {nominal: "415 V", tolerance: "4 %"}`},
			{"p1-ma.cue", `require: {nominal: "415 V", tolerance: "5 %"}`, `require: {min: "400 V", max: "430 V"}`}}},
	{name: "gap-closed", want: []string{"DIFF051:", "DIFF014:supplier"},
		old: []edit{{"p1-ma.cue", `guarantee: {nominal: "415 V", tolerance: "3 %"}`, `guarantee: {nominal: "415 V", tolerance: "6 %"}`}}},
	{name: "check-failed", want: []string{"DIFF052:", "DIFF090:"},
		new: []edit{{"site.cue", `a: {feed: "p1/block/a", breaker: "250 A"}`, `a: {feed: "p1/block/a", breaker: "100 A"}`}}},
	{name: "changed", want: []string{"DIFF090:"},
		new: []edit{{"site.cue", `generation:     "vs-1"`, `generation:     "vs-2"`}}},
	{name: "text-changed", want: []string{"DIFF091:"},
		new: []edit{{"site.cue", `description: "one cell for diff tests"`, `description: "one cell, for diff tests"`}}},
	{name: "reformatted", want: nil,
		new: []edit{{"site.cue", "package site", "package site\n\n// comments, order and formatting change nothing"},
			{"p1-ma.cue", "\tsupplier: \"p1\"\n\tconsumer: \"ma\"", "\tconsumer: \"ma\"\n\tsupplier:     \"p1\""}}},
}

// build writes testdata/base with edits applied into a temp directory.
func build(t *testing.T, edits []edit) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, os.DirFS("testdata/base")))
	for _, e := range edits {
		p := filepath.Join(dir, e.file)
		if e.old == "" && e.new == "" {
			require.NoError(t, os.Remove(p))
			continue
		}
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		s := string(b)
		if e.old == "" {
			s += e.new
		} else {
			require.Contains(t, s, e.old, "edit of %s", e.file)
			s = strings.Replace(s, e.old, e.new, 1)
		}
		require.NoError(t, os.WriteFile(p, []byte(s), 0o644))
	}
	return dir
}

func loadSide(t *testing.T, dir, label string) Side {
	t.Helper()
	c, diags, err := contract.Load(dir)
	require.NoError(t, err)
	require.NotNil(t, c)
	require.Zero(t, diags.Count(2), "%s does not load: %v", label, diags)
	return Side{C: c, Label: label}
}

func runCase(t *testing.T, tc goldenCase) Result {
	t.Helper()
	old := loadSide(t, build(t, tc.old), "old")
	new := loadSide(t, build(t, tc.new), "new")
	return Compare(old, new)
}

func TestGolden(t *testing.T) {
	for _, tc := range goldenCases {
		t.Run(tc.name, func(t *testing.T) {
			r := runCase(t, tc)
			for _, w := range tc.want {
				rule, side, _ := strings.Cut(w, ":")
				assert.True(t, hasFinding(r, rule, side), "want %s on side %q", rule, side)
			}
			if tc.want == nil {
				assert.Empty(t, r.Findings)
			}
			var buf bytes.Buffer
			require.NoError(t, Text(&buf, r))
			golden(t, filepath.Join("testdata", "golden", tc.name+".txt"), buf.Bytes())
		})
	}
}

func hasFinding(r Result, rule, side string) bool {
	for _, f := range r.Findings {
		if f.Rule == rule && f.Side == side {
			return true
		}
	}
	return false
}

func golden(t *testing.T, file string, got []byte) {
	t.Helper()
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(file), 0o755))
		require.NoError(t, os.WriteFile(file, got, 0o644))
		return
	}
	want, err := os.ReadFile(file)
	require.NoError(t, err, "run go test -update to create it")
	assert.Equal(t, string(want), string(got))
}

// TestEveryRuleInEveryDirection proves that the golden cases exercise
// each rule id on each side its documentation gives a verdict for.
func TestEveryRuleInEveryDirection(t *testing.T) {
	seen := map[string]bool{}
	for _, tc := range goldenCases {
		for _, f := range runCase(t, tc).Findings {
			seen[f.Rule+":"+f.Side] = true
		}
	}
	for _, r := range Rules {
		for side, verdict := range map[string]string{"supplier": r.Supplier, "consumer": r.Consumer, "": r.Joint} {
			if verdict != "" {
				assert.True(t, seen[r.ID+":"+side], "no golden case finds %s (%s) on side %q", r.ID, r.Name, side)
			}
		}
	}
}

// One edited line of a template changes every instance of it: the
// example's racks are a comprehension over 3 modules × 16 racks, and a
// change of their design power is one finding, not 48 (128 kW stays
// above the 126.3 kW their trays draw, so vet finds nothing new).
func TestTemplateChangeIsReportedOnce(t *testing.T) {
	const example = "../../contracts/examples/threemodule"
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, os.DirFS(example)))
	site := filepath.Join(dir, "site.cue")
	b, err := os.ReadFile(site)
	require.NoError(t, err)
	require.Contains(t, string(b), `design_power:    "130 kW"`)
	require.NoError(t, os.WriteFile(site, []byte(strings.Replace(string(b), `design_power:    "130 kW"`, `design_power:    "128 kW"`, 1)), 0o644))
	r := Compare(loadSide(t, example, "old"), loadSide(t, dir, "new"))
	var racks []Finding
	for _, f := range r.Findings {
		if strings.Contains(f.Path, ".racks.") {
			racks = append(racks, f)
		}
	}
	require.Len(t, racks, 1, "one finding for the one edited line")
	assert.Len(t, racks[0].Also, 47)
	assert.Contains(t, racks[0].Message, "(also at ")
	assert.Contains(t, racks[0].Message, "and 44 more)")
}
