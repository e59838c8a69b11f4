package binding

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The allow-list of BMC controls: nothing is writable unless declared,
// for every BMC or per BMC; written back by MarshalBMCs.
func TestBMCWritable(t *testing.T) {
	none, diags, err := LoadBMCs(bmcDir(t, `bmcs: {user: "admin", password: "env:P"}`))
	require.NoError(t, err)
	require.Empty(t, diags)
	err = none.Writable("bmc-a", ControlPowerLimit)
	require.Error(t, err, "undeclared: not writable")
	assert.Contains(t, err.Error(), RuleBMCWritable+": BMC bmc-a: control PowerLimit is not declared writable")
	assert.Contains(t, err.Error(), `writable: ["PowerLimit"]`)
	require.Error(t, (*BMCs)(nil).Writable("bmc-a", ControlPowerLimit), "no bmcs section: nothing writable")

	dir := bmcDir(t, `bmcs: {user: "admin", password: "env:P"
	writable: ["PowerLimit"]
	writable_on: {"bmc-b": []}
	endpoints: {"bmc-a": "127.0.0.1:1", "bmc-b": "127.0.0.1:2"}
}
`)
	b, diags, err := LoadBMCs(dir)
	require.NoError(t, err)
	require.Empty(t, diags)
	assert.NoError(t, b.Writable("bmc-a", ControlPowerLimit))
	assert.Error(t, b.Writable("bmc-b", ControlPowerLimit), "bmc-b's own list is empty")
	assert.Error(t, b.Writable("bmc-a", ControlReset), "only what is declared")

	// a firmware rollout's controls: updates everywhere, resets on one BMC
	fw, diags, err := LoadBMCs(bmcDir(t, `bmcs: {user: "admin", password: "env:P"
	writable: ["Firmware"]
	writable_on: {"bmc-b": ["Firmware", "Reset"]}
	endpoints: {"bmc-a": "127.0.0.1:1", "bmc-b": "127.0.0.1:2"}
}
`))
	require.NoError(t, err)
	require.Empty(t, diags)
	assert.NoError(t, fw.Writable("bmc-a", ControlFirmware))
	assert.Error(t, fw.Writable("bmc-a", ControlReset), "bmc-a may be updated, not reset")
	assert.Error(t, fw.Writable("bmc-a", ControlPowerLimit), "declaring Firmware declares nothing else")
	assert.NoError(t, fw.Writable("bmc-b", ControlReset))

	again := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(again, "b.cue"), []byte("package b\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(again, "bmcs.cue"), MarshalBMCs(b, "b"), 0o644))
	back, diags, err := LoadBMCs(again)
	require.NoError(t, err)
	require.Empty(t, diags)
	assert.Equal(t, b.WritableControls, back.WritableControls)
	assert.Equal(t, b.WritableOn, back.WritableOn)
}

func TestBMCWritableErrors(t *testing.T) {
	for _, c := range []struct{ body, rule, msg string }{
		{`bmcs: {user: "admin", password: "env:P", writable: ["Fans"]}`, "", "writable"},
		{`bmcs: {user: "admin", password: "env:P", writable: ["reset"]}`, "", "writable"},
		{`bmcs: {user: "admin", password: "env:P", writable_on: {"bmc-z": ["PowerLimit"]}, endpoints: {"bmc-a": "127.0.0.1:1"}}`,
			RuleBMCWritableOn, `bmcs.writable_on."bmc-z": no BMC "bmc-z" among the endpoints`},
	} {
		_, diags, err := LoadBMCs(bmcDir(t, c.body))
		require.NoError(t, err)
		require.NotEmpty(t, diags, c.body)
		if c.rule != "" {
			assert.Equal(t, c.rule, diags[0].Rule, c.body)
		}
		assert.Contains(t, diags[0].Message+diags[0].Path, c.msg, c.body)
	}
}
