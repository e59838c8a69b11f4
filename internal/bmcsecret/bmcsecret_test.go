package bmcsecret

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func write(t *testing.T, body string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "bmc-secrets.json")
	require.NoError(t, os.WriteFile(p, []byte(body), mode))
	require.NoError(t, os.Chmod(p, mode))
	return p
}

func TestLoadRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		mode       os.FileMode
		want       string
	}{
		{"others can read", `{"format": "seam.bmc-secrets/v1", "bmcs": {"*": {"user": "a", "active": "b"}}}`, 0o644, "mode 0644 lets others than its owner read it: chmod 600"},
		{"bad JSON", "{\"format\": \"seam.bmc-secrets/v1\",\n \"bmcs\": {\n  \"x\": {\"user\": \"a\" \"active\": \"b\"}}}", 0o600, "bmc-secrets.json:3: not a secrets file"},
		{"a number for a secret", "{\"format\": \"seam.bmc-secrets/v1\",\n \"bmcs\": {\"x\": {\"user\": \"a\", \"active\": 7}}}", 0o600, "bmc-secrets.json:2: not a secrets file"},
		{"unknown field", `{"format": "seam.bmc-secrets/v1", "bmcs": {"x": {"user": "a", "active": "b", "password": "sEcReT-9"}}}`, 0o600, `unknown field "password"`},
		{"wrong format", `{"format": "seam.bmc-secrets/v9", "bmcs": {"x": {"user": "a", "active": "b"}}}`, 0o600, `format is "seam.bmc-secrets/v9", want "seam.bmc-secrets/v1"`},
		{"no BMCs", `{"format": "seam.bmc-secrets/v1"}`, 0o600, "no BMCs"},
		{"no active secret", `{"format": "seam.bmc-secrets/v1", "bmcs": {"bmc-1": {"user": "a", "pending": "b"}}}`, 0o600, "BMC bmc-1: give its user and active secret"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := write(t, tc.body, tc.mode)
			_, err := Load(p)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.Contains(t, err.Error(), p, "the message names the file")
			assert.NotContains(t, err.Error(), "sEcReT-9", "no secret in a message")
		})
	}
}

func TestForTriesActiveThenPending(t *testing.T) {
	p := write(t, `{"format": "seam.bmc-secrets/v1", "bmcs": {
		"bmc-1": {"user": "svc", "active": "old", "pending": "new"},
		"*":     {"user": "admin", "active": "default"}}}`, 0o600)
	f, err := Load(p)
	require.NoError(t, err)
	got, err := f.For("bmc-1")
	require.NoError(t, err)
	assert.Equal(t, []Credential{{"svc", "old", Active}, {"svc", "new", Pending}}, got)
	got, err = f.For("bmc-2")
	require.NoError(t, err)
	assert.Equal(t, []Credential{{"admin", "default", Active}}, got, "a BMC the file does not name takes the * entry")

	delete(f.BMCs, Any)
	_, err = f.For("bmc-2")
	assert.ErrorContains(t, err, "BMC bmc-2 has no entry in the secrets file "+p)
}

func TestCredentialPrintsWithoutItsSecret(t *testing.T) {
	c := Credential{User: "svc", Secret: "hunter2", Which: Pending}
	for _, s := range []string{fmt.Sprint(c), fmt.Sprintf("%v %+v %#v %s", c, c, c, c), fmt.Sprint([]Credential{c})} {
		assert.NotContains(t, s, "hunter2")
		assert.Contains(t, s, "svc (pending secret)")
	}
}

func TestSaveIsWholeAndKeepsTheMode(t *testing.T) {
	p := write(t, `{"format": "seam.bmc-secrets/v1", "bmcs": {"bmc-1": {"user": "svc", "active": "old"}}}`, 0o400)
	f, err := Load(p)
	require.NoError(t, err)
	require.NoError(t, os.Chmod(filepath.Dir(p), 0o700))
	f.BMCs["bmc-1"] = Entry{User: "svc", Active: "old", Pending: "new"}
	require.NoError(t, f.Save())
	info, err := os.Stat(p)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o400), info.Mode().Perm())
	again, err := Load(p)
	require.NoError(t, err)
	assert.Equal(t, f.BMCs, again.BMCs)
	left, err := filepath.Glob(filepath.Join(filepath.Dir(p), ".*"))
	require.NoError(t, err)
	assert.Empty(t, left, "no temporary file left behind")
}

func TestLockIsExclusive(t *testing.T) {
	p := write(t, `{"format": "seam.bmc-secrets/v1", "bmcs": {"*": {"user": "a", "active": "b"}}}`, 0o600)
	unlock, err := Lock(p)
	require.NoError(t, err)
	_, err = Lock(p)
	require.Error(t, err, "a second writer is refused")
	assert.Contains(t, err.Error(), "is being written by another rotation (process ")
	unlock()
	unlock2, err := Lock(p)
	require.NoError(t, err, "free again once released")
	unlock2()
}
