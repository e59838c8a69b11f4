package compile_test

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/compile"
	"github.com/seamdc/seam/internal/diag"
	"github.com/seamdc/seam/internal/plan"
)

var update = flag.Bool("update", false, "rewrite the example's committed plans")

const example = "../../contracts/examples/threemodule"

// copyExample copies the worked example's contracts into a temporary
// directory, so a test can change them.
func copyExample(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	names, err := filepath.Glob(filepath.Join(example, "*.cue"))
	require.NoError(t, err)
	for i := range names {
		names[i] = filepath.Base(names[i])
	}
	for _, name := range append(names, "cue.mod/module.cue") {
		b, err := os.ReadFile(filepath.Join(example, name))
		require.NoError(t, err)
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), b, 0o644))
	}
	return dir
}

// edit replaces old, which must occur exactly once, in dir/file.
func edit(t *testing.T, dir, file, old, new string) {
	t.Helper()
	path := filepath.Join(dir, file)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, 1, strings.Count(string(b), old), "%q must occur once in %s", old, file)
	require.NoError(t, os.WriteFile(path, []byte(strings.Replace(string(b), old, new, 1)), 0o644))
}

// compileDir compiles dir and requires a plan that encodes and that a
// reader decodes: schema, strict fields and digest (Encode itself checks
// only Validate).
func compileDir(t *testing.T, dir string, opt compile.Options) (*plan.Plan, []byte, diag.List) {
	t.Helper()
	if opt.Level == "" {
		opt.Level = plan.All
	}
	p, diags, err := compile.Dir(dir, opt)
	require.NoError(t, err)
	require.NotNil(t, p, "no plan: %v", diags)
	b, err := plan.Encode(p)
	require.NoError(t, err)
	back, err := plan.Decode(b)
	require.NoError(t, err, "the compiled plan does not read back")
	require.NoError(t, plan.CheckDigest(back))
	return p, b, diags
}
