package satcmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/compile"
	"github.com/seamdc/seam/internal/grade"
	"github.com/seamdc/seam/internal/plan"
	"github.com/seamdc/seam/internal/results"
)

// gridPlan compiles the example's IST for the whole site, holds capped
// (the sweep reduced to the declared period), and writes it.
func gridPlan(t *testing.T, dir string) string {
	t.Helper()
	p, diags, err := compile.Dir(dir, compile.Options{Level: plan.IST, MaxHold: 5 * time.Second})
	require.NoError(t, err)
	require.NotNil(t, p, "%v", diags)
	raw, err := plan.Encode(p)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "ist.json")
	require.NoError(t, os.WriteFile(path, raw, 0o644))
	return path
}

func checkOf(res *results.Results, caseID, check string) results.Check {
	for _, c := range res.Cases {
		if c.ID != caseID {
			continue
		}
		for _, k := range c.Checks {
			if k.Check == check {
				return k
			}
		}
	}
	return results.Check{}
}

// TestGridCasesOnTheSimulatedSite: the example's grid cases at the
// point-of-interconnection meter of the simulated site. With the
// contract's smoothing in the fleet the steady training passes, and
// without it (the profile never applied) the iteration's line stands
// above the utility's limit; a dip of the ride-through curve passes
// with UPSs set outside the curve, and with p1's set inside it the
// site's power falls by ma's load and stays down.
func TestGridCasesOnTheSimulatedSite(t *testing.T) {
	p := gridPlan(t, exampleDir)
	osc, dip := "ist.u1-site.grid.oscillation-1000ms", "ist.u1-site.grid.voltage-dip-2"
	run := func(defect string, cases ...string) *results.Results {
		extra := []string{"--time-scale", "max"}
		for _, c := range cases {
			extra = append(extra, "--case", c)
		}
		if defect != "" {
			extra = append(extra, "--defect", defect)
		}
		_, res, _ := simRun(t, p, filepath.Join(t.TempDir(), "ev"), extra...)
		return res
	}

	ok := run("", osc, dip)
	got := outcomes(ok)
	assert.Equal(t, grade.Pass, got[osc])
	assert.Equal(t, grade.Pass, got[dip])
	line := checkOf(ok, osc, "line")
	require.NotNil(t, line.Measured)
	assert.Less(t, *line.Measured, 65.0)

	bare := run("grid-no-smoothing", osc)
	assert.Equal(t, grade.Fail, outcomes(bare)[osc])
	line = checkOf(bare, osc, "line")
	require.Equal(t, grade.Fail, line.Outcome)
	// the square wave's fundamental: (2ΔP/π)·sin(πD) of the site's swing
	assert.Greater(t, *line.Measured, 1000.0, line.Detail)
	assert.Contains(t, line.Detail, "at 1 Hz")

	ups := run("p1-ups-transfer-inside-curve", dip)
	restored := checkOf(ups, dip, "restored")
	require.Equal(t, grade.Fail, restored.Outcome)
	// a third of the load (ma's) off the grid, for longer than the check watches
	assert.InDelta(t, 66.7, 100**restored.Measured/(*restored.Limit/0.9), 2, restored.Detail)
	assert.Contains(t, restored.Detail, "200 of 200 samples below")
}

// TestGridSweepAboveTheLoadBanksLimit: a plan whose training pattern
// the load banks drive faster than their profile can switch is refused
// at preflight, the limit named, and nothing is energised.
func TestGridSweepAboveTheLoadBanksLimit(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, os.DirFS(exampleDir)))
	edit := func(file string, pairs ...string) {
		b, err := os.ReadFile(filepath.Join(dir, file))
		require.NoError(t, err)
		s := string(b)
		for i := 0; i < len(pairs); i += 2 {
			require.Contains(t, s, pairs[i])
			s = strings.ReplaceAll(s, pairs[i], pairs[i+1])
		}
		require.NoError(t, os.WriteFile(filepath.Join(dir, file), []byte(s), 0o644))
	}
	// no answer in the racks and a utility that allows the bare site;
	// load banks that claim 2 Hz where their profile says 0.5 Hz
	edit("grid.cue", "site: modules: (c.it): grid_response: smoothing: _smoothing", "",
		`"1 MW/s"`, `"10 MW/s"`, `"5 MW/min"`, `"50 MW/min"`, `swing: {max: "20 %"`, `swing: {max: "90 %"`,
		`line: "1 %", rms: "1 %"`, `line: "40 %", rms: "40 %"`)
	edit("site.cue", `switching: "0.5 Hz"`, `switching: "2 Hz"`)
	p := gridPlan(t, dir)
	out := filepath.Join(t.TempDir(), "ev")
	code, stdout, stderr := sat(t, "run", p, "--sim", "--contracts", dir, "--fixtures", fixturesDir, "--time-scale", "max",
		"--case", "ist.u1-site.grid.oscillation-1000ms", "--out", out)
	require.NotEqual(t, 0, code, stdout)
	assert.Contains(t, stdout+stderr, "case ist.u1-site.grid.oscillation-1000ms step warm switches load bank lb-ma with a period of 1 s (1 Hz), "+
		"faster than its profile generic-loadbank's switching limit of 2 s (0.5 Hz)")
}
