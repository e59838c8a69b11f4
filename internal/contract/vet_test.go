package contract_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/diag"
)

var update = flag.Bool("update", false, "rewrite golden files")

const example = "../../contracts/examples/threemodule"

func TestExampleVetsClean(t *testing.T) {
	_, diags, err := contract.Vet(example)
	require.NoError(t, err)
	require.Empty(t, diags, "the worked example must vet clean")
}

// TestVetCases seeds one defect per case into a copy of testdata/vet/base
// and compares vet's text output with the case's golden file. A case's
// name starts with the rule it must trigger.
//
// A case is a txtar archive. Its comment holds a description and
// directives: "replace FILE: OLD => NEW" (OLD must occur; \n and \t are
// unescaped), "delete FILE", "empty" (remove every file). Its files are
// written over the base.
func TestVetCases(t *testing.T) {
	cases, err := filepath.Glob("testdata/vet/cases/*.txtar")
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(cases), 30)
	covered := map[string]bool{}
	for _, file := range cases {
		name := strings.TrimSuffix(filepath.Base(file), ".txtar")
		rule := name[:strings.Index(name, "-")]
		covered[rule] = true
		t.Run(name, func(t *testing.T) {
			dir := seed(t, file)
			_, diags, err := contract.Vet(dir)
			require.NoError(t, err)
			require.True(t, hasRule(diags, rule), "want a %s diagnostic, got:\n%s", rule, render(diags))
			for _, d := range diags {
				require.NotEmpty(t, d.Pos.File, "%s has no position", d.Message)
				if d.Rule != "LOAD001" {
					require.Positive(t, d.Pos.Line, "%s has no line", d.Message)
				}
				require.Contains(t, contract.Rules, d.Rule, "rule %s is not documented in contract.Rules", d.Rule)
			}
			golden(t, strings.TrimSuffix(file, ".txtar")+".golden", strings.ReplaceAll(render(diags), dir, "$DIR"))
		})
	}
	var missing []string
	for rule := range contract.Rules {
		if !covered[rule] {
			missing = append(missing, rule)
		}
	}
	sort.Strings(missing)
	require.Empty(t, missing, "rules without a failing example in testdata/vet/cases")
}

func hasRule(l diag.List, rule string) bool {
	for _, d := range l {
		if d.Rule == rule {
			return true
		}
	}
	return false
}

func render(l diag.List) string {
	var b bytes.Buffer
	_ = diag.Text(&b, l)
	return b.String()
}

func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "missing golden file; run go test -update")
	require.Equal(t, string(want), got)
}

// seed copies the base into a temporary directory and applies the case.
func seed(t *testing.T, file string) string {
	t.Helper()
	ar, err := txtar.ParseFile(file)
	require.NoError(t, err)
	dir := t.TempDir()
	copyDir(t, "testdata/vet/base", dir)
	for _, line := range strings.Split(string(ar.Comment), "\n") {
		switch {
		case line == "empty":
			entries, _ := os.ReadDir(dir)
			for _, e := range entries {
				require.NoError(t, os.RemoveAll(filepath.Join(dir, e.Name())))
			}
		case strings.HasPrefix(line, "delete "):
			require.NoError(t, os.Remove(filepath.Join(dir, strings.TrimPrefix(line, "delete "))))
		case strings.HasPrefix(line, "replace "):
			target, rest, ok := strings.Cut(strings.TrimPrefix(line, "replace "), ": ")
			require.True(t, ok, "bad directive %q", line)
			old, new, ok := strings.Cut(rest, " => ")
			require.True(t, ok, "bad directive %q", line)
			unescape := strings.NewReplacer(`\n`, "\n", `\t`, "\t").Replace
			path := filepath.Join(dir, target)
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			require.Contains(t, string(b), unescape(old), "%s: %q does not occur in %s", file, old, target)
			require.NoError(t, os.WriteFile(path, []byte(strings.ReplaceAll(string(b), unescape(old), unescape(new))), 0o644))
		}
	}
	for _, f := range ar.Files {
		path := filepath.Join(dir, f.Name)
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, f.Data, 0o644))
	}
	return dir
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	require.NoError(t, filepath.WalkDir(from, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), b, 0o644)
	}))
}

func TestDocsDescribeEveryRule(t *testing.T) {
	doc, err := os.ReadFile("../../docs/contracts.md")
	require.NoError(t, err)
	for rule := range contract.Rules {
		require.Contains(t, string(doc), "### "+rule, "docs/contracts.md has no section for %s", rule)
	}
}
