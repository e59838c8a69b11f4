package binding

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func bmcDir(t *testing.T, body string) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "b.cue"), []byte("package b\n\nprofiles: []\ndevices: {}\n"+body), 0o644))
	return dir
}

// A binding's bmcs section: read with its defaults, accepted by Load
// beside the devices, written back by MarshalBMCs to an equal section.
func TestBMCs(t *testing.T) {
	dir := bmcDir(t, `bmcs: {
	user: "admin"
	password: "env:SEAM_BMC_PASSWORD"
	scheme: "http"
	endpoints: {"bmc-a-r01-n03": "127.0.0.1:40123", "bmc-a-r01-n01": "127.0.0.1:40121"}
}
`)
	b, diags, err := LoadBMCs(dir)
	require.NoError(t, err)
	require.Empty(t, diags)
	require.NotNil(t, b)
	assert.Equal(t, "admin", b.User)
	assert.Equal(t, "env:SEAM_BMC_PASSWORD", b.Password.Ref)
	assert.Equal(t, "http", b.Scheme)
	assert.Equal(t, "session", b.Auth)
	assert.Equal(t, 10*time.Second, b.Timeout)
	assert.Equal(t, 64, b.Parallel)
	assert.Equal(t, 1, b.PerBMC)
	require.Len(t, b.Endpoints, 2)
	assert.Equal(t, "bmc-a-r01-n01", b.Endpoints[0].Name)
	pw, err := b.Password.Resolve(func(string) (string, bool) { return "s3cret", true })
	require.NoError(t, err)
	assert.Equal(t, "s3cret", pw)

	_, ld, err := Load(dir)
	require.NoError(t, err)
	assert.Empty(t, ld, "Load takes a binding with a bmcs section")

	again := t.TempDir()
	b.PerBMC, b.Parallel = 2, 200
	require.NoError(t, os.WriteFile(filepath.Join(again, "b.cue"), []byte("package b\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(again, "bmcs.cue"), MarshalBMCs(b, "b"), 0o644))
	back, diags, err := LoadBMCs(again)
	require.NoError(t, err)
	require.Empty(t, diags)
	assert.Equal(t, b.Endpoints[1].Address, back.Endpoints[1].Address)
	assert.Equal(t, 2, back.PerBMC)
	assert.Equal(t, 200, back.Parallel)

	none, diags, err := LoadBMCs(bmcDir(t, ""))
	require.NoError(t, err)
	assert.Empty(t, diags)
	assert.Nil(t, none)
}

func TestBMCsErrors(t *testing.T) {
	for _, c := range []struct{ body, rule, msg string }{
		{`bmcs: {user: "admin", password: "hunter2"}`, RuleBMCSecret, "written inline"},
		{`bmcs: {user: "admin", password: "env:P", endpoints: {"x": "10.1.1.7"}}`, RuleBMCAddress, `"10.1.1.7" is not host:port`},
		{`bmcs: {user: "admin", password: "env:P", per_bmc: 3}`, "", "per_bmc"},
		{`bmcs: {password: "env:P"}`, RuleBMCAccount, "no account: give user and password, or a secrets file"},
		{`bmcs: {scheme: "http"}`, RuleBMCAccount, "no account"},
		{`bmcs: {user: "admin", password: "env:P", secrets: "bmc-secrets.json"}`, RuleBMCAccount, "both a secrets file and a user and password"},
		{`bmcs: {secrets: ""}`, RuleBMCAccount, "bmcs.secrets is empty"},
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

// A bmcs section that names a secrets file: its path relative to the
// binding, no user or password; written back as it was.
func TestBMCsSecretsFile(t *testing.T) {
	dir := bmcDir(t, `bmcs: {secrets: "bmc-secrets.json", scheme: "http", endpoints: {"bmc-1": "127.0.0.1:40121"}}
`)
	b, diags, err := LoadBMCs(dir)
	require.NoError(t, err)
	require.Empty(t, diags)
	assert.Equal(t, filepath.Join(dir, "bmc-secrets.json"), b.Secrets)
	assert.False(t, b.Password.IsSet())

	again := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(again, "b.cue"), []byte("package b\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(again, "bmcs.cue"), MarshalBMCs(b, "b"), 0o644))
	back, diags, err := LoadBMCs(again)
	require.NoError(t, err)
	require.Empty(t, diags)
	assert.Equal(t, b.Secrets, back.Secrets)
}
