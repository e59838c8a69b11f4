package bindreq

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/binding"
	"github.com/seamdc/seam/internal/diag"
)

// bindingDir writes a binding that reads the shipped profiles and must
// cover the example site.
func bindingDir(t *testing.T, body string) string {
	t.Helper()
	dir := t.TempDir()
	profiles, err := filepath.Abs("../../fixtures/profiles")
	require.NoError(t, err)
	contracts, err := filepath.Abs("../../contracts/examples/threemodule")
	require.NoError(t, err)
	src := "package b\n\nprofiles: [\"" + profiles + "\"]\ncontracts: \"" + contracts + "\"\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "b.cue"), []byte(src+body), 0o644))
	return dir
}

func find(diags diag.List, rule string) *diag.Diagnostic {
	for i := range diags {
		if diags[i].Rule == rule {
			return &diags[i]
		}
	}
	return nil
}

// The example binding covers the example site's channels; binding.Load
// alone does not read the contracts.
func TestExampleBindingCoversTheSite(t *testing.T) {
	b, diags, err := Load("../../fixtures/bindings/threemodule")
	require.NoError(t, err)
	require.Empty(t, diags)
	assert.Len(t, b.Channels, 49)
}

func TestCheckAgainstSite(t *testing.T) {
	example, err := os.ReadFile("../../fixtures/bindings/threemodule/binding.cue")
	require.NoError(t, err)
	body := string(example)
	body = body[strings.Index(body, "_cells:"):]
	// l2/mb/flow left out, l1/ma/dp bound to a temperature, a typo'd channel
	replace := func(old, new string) {
		require.Contains(t, body, old)
		body = strings.Replace(body, old, new, 1)
	}
	replace(`"l\(c.n)/\(c.it)/flow": {device: "cdu-l\(c.n)", point: "secondary-flow"}`,
		`if c.n != 2 {"l\(c.n)/\(c.it)/flow": {device: "cdu-l\(c.n)", point: "secondary-flow"}}`)
	replace(`"l\(c.n)/\(c.it)/dp": {device: "cdu-l\(c.n)", point: "secondary-dp"}`,
		`if c.n != 1 {"l\(c.n)/\(c.it)/dp": {device: "cdu-l\(c.n)", point: "secondary-dp"}}
		if c.n == 1 {"l\(c.n)/\(c.it)/dp": {device: "cdu-l\(c.n)", point: "primary-return-temp"}}`)
	body += "channels: \"l1/ma/supply-tmp\": {device: \"cdu-l1\", point: \"secondary-supply-temp\"}\n"
	b, diags, err := Load(bindingDir(t, body))
	require.NoError(t, err)
	require.NotNil(t, b)

	unbound := find(diags, binding.RuleUnbound)
	require.NotNil(t, unbound, "%v", diags)
	assert.Contains(t, unbound.Message, `channel "l2/mb/flow" (a flow) of site threemodule`)
	require.Len(t, unbound.Related, 1)
	assert.Contains(t, unbound.Related[0].Pos.File, "contracts/examples/threemodule/joints.cue")

	dim := find(diags, binding.RuleDimension)
	require.NotNil(t, dim, "%v", diags)
	assert.Contains(t, dim.Message, "channels.\"l1/ma/dp\": the channel is a pressure, but point primary-return-temp of profile generic-cdu-int16 is a temperature")
	assert.Equal(t, "b.cue", dim.Pos.File)

	unknown := find(diags, binding.RuleUnknownChannel)
	require.NotNil(t, unknown, "%v", diags)
	assert.Contains(t, unknown.Message, `has no channel "l1/ma/supply-tmp"`)
	assert.Equal(t, `did you mean "l1/ma/supply-temp"?`, unknown.Hint)
	assert.Len(t, diags, 3, "%v", diags)
}
