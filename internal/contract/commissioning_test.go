package contract_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/cueload"
	"github.com/seamdc/seam/internal/plan"
)

// withFile is a copy of the vet base with one more file.
func withFile(t *testing.T, name, content string) string {
	t.Helper()
	dir := t.TempDir()
	copyDir(t, "testdata/vet/base", dir)
	require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
	return dir
}

// A site that states nothing gets the defaults; what it states is
// merged onto them, one field at a time.
func TestCommissioningRulesMergeOntoTheDefaults(t *testing.T) {
	c, diags, err := contract.Vet("testdata/vet/base")
	require.NoError(t, err)
	require.Empty(t, diags)
	require.Nil(t, c.Commissioning)
	require.Equal(t, plan.DefaultCommissioning(), c.CommissioningRules())

	dir := withFile(t, "commissioning.cue", `package site

site: commissioning: {
	levels: {
		L4: {name: "transient", colour: "#B45309"}
		L2: colour: "#000000"
	}
	map: {"sat.failure": "L5", sat: "L3"}
	severity: steady: "major"
	gates: {
		L3: max_open: minor: 3
		L5: all_cases: false
	}
	commissioned: ["L3", "L4", "L5"]
}
`)
	c, diags, err = contract.Vet(dir)
	require.NoError(t, err)
	require.Empty(t, diags)
	want := plan.DefaultCommissioning()
	want.Levels[3] = plan.CxLevel{ID: plan.L4, Name: "transient", Colour: "#B45309"}
	want.Levels[1].Colour = "#000000"
	want.Map["sat.failure"], want.Map["sat"] = plan.L5, plan.L3
	delete(want.Map, "sat.steady") // the whole level's entry, not the default's, where the site states no kind
	delete(want.Map, "sat.transient")
	want.Severity[plan.Steady] = plan.Major
	want.Gates[plan.L3] = plan.Gate{AllCases: true, MaxOpen: map[string]int{plan.Minor: 3}}
	want.Gates[plan.L5] = plan.Gate{AllCases: false, MaxOpen: map[string]int{plan.Critical: 0, plan.Major: 0}}
	want.Commissioned = []string{plan.L3, plan.L4, plan.L5}
	require.Equal(t, want, c.CommissioningRules())
}

// The schema refuses what no rule could read: a colour that is not
// #rrggbb, an unknown severity, a negative limit, a level id that is not
// L and a digit, a field it does not know; each at its line.
func TestCommissioningSchema(t *testing.T) {
	for _, tt := range []struct{ name, cue, rule string }{
		{"colour", `site: commissioning: levels: L1: colour: "grey"`, cueload.RuleSchema},
		{"severity", `site: commissioning: severity: failure: "urgent"`, cueload.RuleSchema},
		{"negative", `site: commissioning: gates: L3: max_open: minor: -1`, cueload.RuleSchema},
		{"level id", `site: commissioning: commissioned: ["level 3"]`, cueload.RuleSchema},
		{"map value", `site: commissioning: map: fat: "one"`, cueload.RuleSchema},
		{"unknown field", `site: commissioning: owner: "me"`, cueload.RuleNotAllowed},
		{"unknown gate field", `site: commissioning: gates: L3: max_open: blocker: 0`, cueload.RuleNotAllowed},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := withFile(t, "commissioning.cue", "package site\n\n"+tt.cue+"\n")
			_, diags, err := contract.Vet(dir)
			require.NoError(t, err)
			require.True(t, hasRule(diags, tt.rule), "want %s, got:\n%s", tt.rule, render(diags))
			for _, d := range diags {
				if d.Rule == tt.rule {
					require.Equal(t, "commissioning.cue", d.Pos.File, render(diags))
					require.Equal(t, 3, d.Pos.Line, render(diags))
				}
			}
		})
	}
}
