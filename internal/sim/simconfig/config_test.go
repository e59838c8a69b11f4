package simconfig

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/diag"
)

func TestExampleConfigLoads(t *testing.T) {
	c, diags, err := Load("../../../fixtures/sim/threemodule")
	require.NoError(t, err)
	require.Empty(t, diags)
	assert.Equal(t, 100.0, c.Rate)
	p := c.Power("p1/block", nil)
	assert.InDelta(t, 0.15, p.Impedance, 1e-12, "15 % is stored per unit")
	assert.InDelta(t, 0.8, p.VoltageTau, 1e-12)
	assert.Equal(t, DefaultPower.BreakerPickup, p.BreakerPickup, "unset fields keep their default")
	slow := c.Power("p1/block", c.Defects["p1-slow-recovery"])
	assert.InDelta(t, 8, slow.VoltageTau, 1e-12, "a defect overrides the config")
	assert.InDelta(t, 0.8, c.Power("p2/block", c.Defects["p1-slow-recovery"]).VoltageTau, 1e-12, "only for its element")
	assert.False(t, c.Cooling("l1/loop", c.Defects["l1-silent-redundancy"]).RedundancyAlarm)
	assert.True(t, c.Cooling("l1/loop", nil).RedundancyAlarm)
	assert.InDelta(t, 3300, c.Cooling("l2/loop", nil).FlowSetpoint, 1e-9)
	assert.Len(t, c.Scripts["cell-1-failures"], 5)
	assert.Equal(t, 90.0, c.Scripts["cell-1-failures"][2].At)
	assert.Equal(t, []string{"grid-no-smoothing", "l1-overshoot", "l1-silent-redundancy", "p1-pdu-wrong-scale", "p1-slow-recovery", "p1-ups-transfer-inside-curve"}, c.DefectNames())
}

func write(t *testing.T, body string) string {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sim.cue"), []byte("package sim\n\n"+body), 0o644))
	return dir
}

const minimal = `
	serve: {}
	devices: {}
	channels: {}
`

func TestConfigErrorsArePositioned(t *testing.T) {
	for _, tc := range []struct{ name, body, rule, want string }{
		{"wrong unit", `sim: {power: voltage_tau: "0.8 V"` + minimal + `}`, RuleUnit, `sim.power.voltage_tau: "0.8 V" is a voltage, want a time such as "0.8 s"`},
		{"no unit", `sim: {cooling: facility_water: "26"` + minimal + `}`, RuleUnit, `has no unit`},
		{"unknown field", `sim: {power: voltage_tua: "0.8 s"` + minimal + `}`, "SCHEMA003", `voltage_tua`},
		{"event needs a kind", `sim: {scripts: s: [{at: "1 s", target: "x"}]` + minimal + `}`, "SCHEMA001", `either injects a fault or clears one`},
		{"unbound variable", `sim: {serve: {}, devices: {}, channels: "{p}/x": {device: "pdu-{q}", point: "v"}}`, RulePattern, `uses {q}`},
		{"nothing", `other: 1`, "SCHEMA002", `field is required but not present`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, diags, err := Load(write(t, tc.body))
			require.NoError(t, err)
			require.NotEmpty(t, diags)
			var found *diag.Diagnostic
			for i := range diags {
				if diags[i].Rule == tc.rule {
					found = &diags[i]
				}
			}
			require.NotNil(t, found, "%v", diags)
			assert.Contains(t, found.Message, tc.want)
			if tc.rule != "SCHEMA002" {
				assert.Equal(t, "sim.cue", found.Pos.File)
				assert.Greater(t, found.Pos.Line, 0)
			}
		})
	}
}

func TestChannelPatterns(t *testing.T) {
	ch := &Channel{Pattern: "{p}/{m}/feed-a/voltage"}
	vars, ok := ch.Match("p1/ma/feed-a/voltage")
	require.True(t, ok)
	assert.Equal(t, "pdu-p1", Expand("pdu-{p}", vars))
	_, ok = ch.Match("p1/ma/feed-b/voltage")
	assert.False(t, ok)
	_, ok = ch.Match("p1/ma/feed-a/voltage/x")
	assert.False(t, ok)
	same := &Channel{Pattern: "{x}/{x}"}
	_, ok = same.Match("a/b")
	assert.False(t, ok, "one variable binds one value")
}

func TestDeviceRules(t *testing.T) {
	d := &Device{Name: "pdu-{0}-{1}-{2}", Modules: []string{"ma"}, Match: []string{"*/r0*/a"}}
	assert.Equal(t, "pdu-ma-r01-a", d.DeviceName("ma/r01/a"))
	assert.True(t, d.Matches("ma/r01/a", "ma"))
	assert.False(t, d.Matches("ma/r01/b", "ma"))
	assert.False(t, d.Matches("mb/r01/a", "mb"))
}

// The grid defects: the fleet's smoothing off, a block's UPS transfer
// settings replaced.
func TestGridDefects(t *testing.T) {
	c, diags, err := Load("../../../fixtures/sim/threemodule")
	require.NoError(t, err)
	require.Empty(t, diags)
	assert.True(t, c.Defects["grid-no-smoothing"].NoSmoothing)
	assert.False(t, c.Defects["p1-slow-recovery"].NoSmoothing)
	p := c.Power("p1/block", c.Defects["p1-ups-transfer-inside-curve"])
	assert.InDelta(t, 0.85, p.UPSTransferPU, 1e-9)
	assert.InDelta(t, 0.02, p.UPSTransferAfter, 1e-9)
	assert.InDelta(t, 300, p.UPSBackAfter, 1e-9)
	assert.Zero(t, c.Power("p2/block", c.Defects["p1-ups-transfer-inside-curve"]).UPSTransferPU)
}
