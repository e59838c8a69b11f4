package profile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/diag"
)

// copyShipped copies the shipped profiles into a directory a test may
// break.
func copyShipped(t *testing.T, names ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join("../../fixtures/profiles", n+".cue"))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, n+".cue"), b, 0o644))
	}
	return dir
}

func breakFile(t *testing.T, dir, name, old, new string) {
	t.Helper()
	path := filepath.Join(dir, name+".cue")
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Contains(t, string(b), old)
	require.NoError(t, os.WriteFile(path, []byte(strings.Replace(string(b), old, new, 1)), 0o644))
}

// Three mistakes in two profiles are reported in one run, and the
// profile without a mistake still loads: a binding that uses it does not
// see "no profile" for a profile that is fine.
func TestEveryMistakeAtOnceAndTheRestLoads(t *testing.T) {
	dir := copyShipped(t, "generic-cdu-int16", "generic-loadbank", "apc-rpdu2")
	breakFile(t, dir, "generic-cdu-int16", `update_period: "1 s"`, `update_priod: "1 s"`)
	breakFile(t, dir, "generic-cdu-int16", `type: "int16"`, `type: "Unsigned32"`)
	breakFile(t, dir, "generic-loadbank", `table: "holding", address: 0`, `table: "holdng", address: 0`)
	set, diags, err := Load(dir)
	require.NoError(t, err)
	assert.Equal(t, []string{"apc-rpdu2"}, set.Names())
	require.Equal(t, 3, diags.Count(diag.Error), "%v", diags)
	var msgs []string
	for _, d := range diags {
		msgs = append(msgs, d.Message+" | "+d.Hint)
	}
	joined := strings.Join(msgs, "\n")
	assert.Contains(t, joined, `profiles."generic-cdu-int16".update_priod: field not allowed | did you mean "update_period"?`)
	assert.Contains(t, joined, "internal/profile/profile.cue", "the hint names the profile schema, not the contract's")
	assert.NotContains(t, joined, "contracts/schema")
	assert.Contains(t, joined, `"Unsigned32" is not allowed here`)
	assert.Contains(t, joined, `"holdng" is not allowed here`)
}

// A file that does not parse drops its own profiles only.
func TestABrokenFileDropsOnlyItself(t *testing.T) {
	dir := copyShipped(t, "apc-rpdu2", "ietf-ups")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "zz-new.cue"), []byte("package profiles\n\nprofiles: \"new\": {\n"), 0o644))
	set, diags, err := Load(dir)
	require.NoError(t, err)
	assert.Equal(t, []string{"apc-rpdu2", "ietf-ups"}, set.Names())
	require.Equal(t, 1, diags.Count(diag.Error), "%v", diags)
	assert.Equal(t, "zz-new.cue", diags[0].Pos.Resolved().File)
	for _, p := range set.Profiles {
		assert.Equal(t, dir, p.Dir, "a profile loaded apart still names its directory")
	}
}

// SNMP's Unsigned32 is Gauge32 (RFC 2578): the docs name it, the loader
// takes it.
func TestUnsigned32IsGauge32(t *testing.T) {
	dir := copyShipped(t, "ietf-ups")
	breakFile(t, dir, "ietf-ups", `type: "Gauge32"`, `type: "Unsigned32"`)
	set, diags, err := Load(dir)
	require.NoError(t, err)
	require.Empty(t, diags)
	found := false
	for _, pt := range set.Profiles[0].Points {
		found = found || pt.Type == Gauge32
	}
	assert.True(t, found)
}

// A float32 read in the wrong word order can land near zero inside the
// plausible range: 26.4 degC written CDAB and read ABCD is 4.2e-08 degC.
// The decoder names the order that reads it right.
func TestFloat32WrongWordOrderNearZero(t *testing.T) {
	p := shipped(t).Get("generic-cdu-float32")
	pt := p.Point("secondary-supply-temp")
	require.NotNil(t, pt)
	require.Equal(t, CDAB, pt.Order)
	regs, err := pt.EncodeRegisters(26.4)
	require.NoError(t, err)
	v, err := pt.DecodeRegisters(regs)
	require.NoError(t, err)
	assert.InDelta(t, 26.4, v, 1e-5, "in its own order it reads right")

	wrong := *pt
	wrong.Order = ABCD
	got, err := wrong.DecodeRegisters(regs)
	require.Error(t, err, "read ABCD it decodes to %g", got)
	assert.Contains(t, err.Error(), "in word order ABCD, below any sensor's resolution; in word order CDAB they read 26.4 degC: check the profile's word order")
}
