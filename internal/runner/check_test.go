package runner

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/compile"
	"github.com/seamdc/seam/internal/plan"
)

const example = "../../contracts/examples/threemodule"

func examplePlan(t *testing.T, dir string) (*plan.Plan, []byte) {
	t.Helper()
	p, _, err := compile.Dir(dir, compile.Options{Level: plan.SAT, Module: "ma", MaxHold: 2 * time.Second})
	require.NoError(t, err)
	require.NotNil(t, p)
	raw, err := plan.Encode(p)
	require.NoError(t, err)
	return p, raw
}

// copyDir copies the example, so a test can change it.
func copyDir(t *testing.T, from string) string {
	t.Helper()
	to := t.TempDir()
	require.NoError(t, os.CopyFS(to, os.DirFS(from)))
	return to
}

func TestCheckPlan(t *testing.T) {
	p, raw := examplePlan(t, example)
	digest, err := CheckPlan(p, example)
	require.NoError(t, err)
	assert.Equal(t, p.Header.Inputs.Contracts, digest)

	t.Run("another compiler version", func(t *testing.T) {
		old := *p
		old.Header.Tool.Version = "0.0.1"
		_, err := plan.Encode(&old)
		require.NoError(t, err)
		_, err = CheckPlan(&old, example)
		var stale *StaleError
		require.ErrorAs(t, err, &stale)
		assert.Contains(t, err.Error(), "it was compiled by contractc 0.0.1, and this is sat")
	})

	t.Run("an edited plan", func(t *testing.T) {
		edited := bytes.Replace(raw, []byte(`"max": 427.45`), []byte(`"max": 440`), 1)
		require.NotEqual(t, raw, edited)
		ep, err := plan.Decode(edited)
		require.NoError(t, err)
		_, err = CheckPlan(ep, example)
		assert.ErrorContains(t, err, "the plan was edited after contractc wrote it")
	})

	t.Run("changed contracts", func(t *testing.T) {
		dir := copyDir(t, example)
		path := filepath.Join(dir, "power.cue")
		src, err := os.ReadFile(path)
		require.NoError(t, err)
		changed := strings.Replace(string(src), `tolerance: "3 %"}}`, `tolerance: "2 %"}}`, 1)
		require.NotEqual(t, string(src), changed)
		require.NoError(t, os.WriteFile(path, []byte(changed), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "extra.cue"), []byte("package threemodule\n"), 0o644))
		require.NoError(t, os.Remove(filepath.Join(dir, "controls.cue")))
		_, err = CheckPlan(p, dir)
		require.Error(t, err)
		msg := err.Error()
		assert.Contains(t, msg, "its contracts in "+dir+" changed since it was compiled from them (sha256:")
		assert.Contains(t, msg, "contract file power.cue changed since the plan was compiled (sha256:")
		assert.Contains(t, msg, "contract file extra.cue is new since the plan was compiled")
		assert.Contains(t, msg, "contract file controls.cue was removed since the plan was compiled")
		assert.NotContains(t, msg, "contract file it.cue")
		assert.Contains(t, msg, "recompile it: contractc compile "+dir+" --level sat --module ma --max-hold 2s -o PLAN")
	})

	t.Run("the module file", func(t *testing.T) {
		dir := copyDir(t, example)
		path := filepath.Join(dir, "cue.mod", "module.cue")
		src, err := os.ReadFile(path)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(path, append(src, []byte("// changed\n")...), 0o644))
		_, err = CheckPlan(p, dir)
		assert.ErrorContains(t, err, "contract file cue.mod/module.cue changed since the plan was compiled")
	})
}
