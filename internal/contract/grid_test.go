package contract_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/contract"
)

// The worked example passes the utility's clauses only with its power
// smoothing: without it vet names the ramp and the spectral line with
// their numbers and says what floor or storage would pass and its cost.
func TestGridExampleNeedsItsSmoothing(t *testing.T) {
	dir := t.TempDir()
	copyDir(t, example, dir)
	path := filepath.Join(dir, "grid.cue")
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	const answer = "\tsite: modules: (c.it): grid_response: smoothing: _smoothing\n"
	require.Contains(t, string(b), answer)
	require.NoError(t, os.WriteFile(path, []byte(strings.Replace(string(b), answer, "", 1)), 0o644))

	_, diags, err := contract.Vet(dir)
	require.NoError(t, err)
	byRule := map[string]string{}
	for _, d := range diags {
		byRule[d.Rule] += d.Message + "\n" + d.Hint + "\n"
	}
	assert.Contains(t, byRule[contract.RuleGridRamp], "ramp up per second after the job's start is 3.6288 MW, above the limit 1 MW")
	// a square wave's fundamental, (2ΔP/π)·sin(πD) with ΔP = 3,456 × 900 W
	// and D = 70 %, is 1.603 MW whatever its period
	assert.Regexp(t, `largest line at [0-9.]+ Hz is 1\.60[0-9]* MW, above the limit 65 kW`, byRule[contract.RuleGridLine])
	assert.Contains(t, byRule[contract.RuleGridSwing], "above the limit 1.3 MW")
	assert.Contains(t, byRule[contract.RuleGridBand], "band RMS")
	hint := byRule[contract.RuleGridLine]
	assert.Contains(t, hint, "power smoothing with ramp rates of 6.27 W/s per GPU")
	assert.Regexp(t, `storage of \d+ kW and [\d.]+ kWh per rack`, hint)
	assert.Regexp(t, `costs [\d.]+ MWh a day, [\d.]+ % of the job's energy`, hint)

	// the example's own declaration passes every clause
	c, diags, err := contract.Vet(example)
	require.NoError(t, err)
	require.Empty(t, diags)
	a, ad := contract.AssessGrid(c, c.GridBoundaries()[0])
	require.Empty(t, ad)
	require.Len(t, a.Figures, 7)
	for _, f := range a.Figures {
		assert.True(t, f.OK(), f.Text())
	}
	assert.Nil(t, a.Advice)
}

// A grid boundary's signatures cover the utility and every IT and power
// module: their racks and answers are what the grid sees.
func TestGridSignedModules(t *testing.T) {
	c, _, err := contract.Load(example)
	require.NoError(t, err)
	b := c.GridBoundaries()[0]
	assert.Equal(t, []string{"u1", "ma", "mb", "mc", "p1", "p2", "p3"}, c.SignedModules(b))
}
