package satcmd

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/capping"
	"github.com/seamdc/seam/internal/capping/apply"
)

// sat run --site with no binding there names the binding first: before
// the missing plan, the missing key, or any other flag.
func TestRunSiteMissingFirst(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	require.NoError(t, os.Mkdir(empty, 0o755))
	file := filepath.Join(dir, "binding.cue")
	require.NoError(t, os.WriteFile(file, []byte("package site\n"), 0o644))
	for _, tc := range []struct{ site, want string }{
		{filepath.Join(dir, "MISSING"), "sat run: --site " + filepath.Join(dir, "MISSING") + ": no binding directory there"},
		{empty, "sat run: --site " + empty + " holds no binding: no .cue files in it"},
		{file, "sat run: --site " + file + " is a file: give the binding's directory"},
	} {
		var stdout, stderr bytes.Buffer
		// no plan file, no --sign-key, --out and --resume both: all later
		code := Main([]string{"run", filepath.Join(dir, "nothing.json"), "--site", tc.site, "--out", filepath.Join(dir, "o"), "--resume", dir}, &stdout, &stderr)
		assert.Equal(t, 1, code)
		first, _, _ := strings.Cut(stderr.String(), "\n")
		assert.True(t, strings.HasPrefix(first, tc.want), "first line %q, want %q", first, tc.want)
		assert.NotContains(t, stderr.String(), "nothing.json")
		assert.NotContains(t, stderr.String(), "sign-key KEY (a key file")
	}
}

// sat cap check heads its table with its own name, not the operation
// underneath (read).
func TestCapCheckHeader(t *testing.T) {
	caps := &capping.File{Site: "threemodule", Target: "ma/r01"}
	for op, want := range map[apply.Op]string{apply.Read: "sat cap check: ", apply.Apply: "sat cap apply: ", apply.Clear: "sat cap clear: "} {
		var b bytes.Buffer
		writeCapResults(&b, op, caps, nil, "")
		assert.True(t, strings.HasPrefix(b.String(), want+"threemodule, target ma/r01: 0 BMCs"), b.String())
	}
}

// sat cap -h and sat burnin -h list their subcommands with summaries,
// aligned, and point to each one's flags; a subcommand's usage line
// says its name once.
func TestNestedHelp(t *testing.T) {
	for args, subs := range map[string][]string{
		"cap -h":       {"apply", "clear", "check"},
		"burnin -h":    {"run", "grade", "compare"},
		"sim-tools -h": {"install", "run"},
	} {
		var stdout, stderr bytes.Buffer
		require.Equal(t, 0, Main(strings.Fields(args), &stdout, &stderr), args)
		out := stderr.String()
		name, _, _ := strings.Cut(args, " ")
		assert.Contains(t, out, "Run 'sat "+name+" <command> -h' for a command's flags.", args)
		col := -1
		for _, s := range subs {
			c := program.Lookup(name + " " + s)
			require.NotNil(t, c, s)
			i := strings.Index(out, "\n  "+s+" ")
			require.GreaterOrEqual(t, i, 0, "%s does not list %s:\n%s", args, s, out)
			line, _, _ := strings.Cut(out[i+1:], "\n")
			at := strings.Index(line, c.Summary)
			require.Greater(t, at, 0, "%s: %q has not its summary", args, line)
			if col >= 0 {
				assert.Equal(t, col, at, "%s: summaries not aligned: %q", args, line)
			}
			col = at
		}
	}
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, Main([]string{"burnin", "run", "-h"}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), "\nusage: sat burnin run --contracts DIR --module M --out DIR [flags]\n")
}
