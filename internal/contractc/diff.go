package contractc

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/seamdc/seam/internal/cli"
	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/diag"
	"github.com/seamdc/seam/internal/diff"
	"github.com/seamdc/seam/internal/diff/gitside"
)

func init() {
	register("diff", "classify contract changes and who they break (CI gate)", runDiff).
		WithExample("contractc diff --git main..HEAD contracts/examples/threemodule")
}

func runDiff(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("[--git REV|A..B|A...B] OLD NEW | DIR", flag.ContinueOnError)
	gitRange := fs.String("git", "", "read the old side (and with A..B the new side) from git: REV, A..B, or A...B (merge base)")
	format := fs.String("format", "text", "output format: "+strings.Join(diff.Formats, ", "))
	failOn := fs.String("fail-on", "ERR", "exit 2 when a finding is at or above: ERR, WARN or INFO")
	overrides := fs.String("overrides", "", "severity override file: lines of RULE[:SIDE] SEVERITY [PATH-PREFIX]")
	pos, err := cli.Parse(fs, args)
	if err != nil {
		return fail(stderr, "diff", fs, err)
	}
	level, err := diff.ParseSeverity(*failOn)
	if err != nil {
		return fail(stderr, "diff", fs, cli.Usagef("--fail-on: %v", err))
	}
	if !contains(diff.Formats, *format) {
		return fail(stderr, "diff", fs, cli.Usagef("--format: unknown format %q (want one of %s)", *format, strings.Join(diff.Formats, ", ")))
	}
	var ov diff.Overrides
	if *overrides != "" {
		if ov, err = diff.ReadOverrides(*overrides); err != nil {
			return fail(stderr, "diff", fs, err)
		}
	}
	old, new, cleanup, err := diffSides(*gitRange, pos)
	defer cleanup()
	if err != nil {
		return fail(stderr, "diff", fs, err)
	}
	r := ov.Apply(diff.Compare(old, new))
	if err := diff.Render(stdout, *format, r); err != nil {
		return fail(stderr, "diff", fs, err)
	}
	if r.Count(level) > 0 {
		return cli.ExitFindings
	}
	return cli.ExitOK
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// diffSides loads both sides from directories or from git.
func diffSides(gitRange string, pos []string) (old, new diff.Side, cleanup func(), err error) {
	cleanup = func() {}
	if gitRange == "" {
		if len(pos) != 2 {
			return old, new, cleanup, cli.Usagef("want OLD and NEW contract directories (or --git REV DIR), got %d arguments", len(pos))
		}
		if old, err = loadSide("old", pos[0], label(pos[0])); err != nil {
			return old, new, cleanup, err
		}
		new, err = loadSide("new", pos[1], label(pos[1]))
		return old, new, cleanup, err
	}
	if len(pos) != 1 {
		return old, new, cleanup, cli.Usagef("with --git, want one contract directory, got %d arguments", len(pos))
	}
	tmp, err := os.MkdirTemp("", "contractc-diff-")
	if err != nil {
		return old, new, cleanup, err
	}
	cleanup = func() { os.RemoveAll(tmp) }
	old, new, err = gitSides(gitRange, pos[0], tmp)
	return old, new, cleanup, err
}

func gitSides(gitRange, dir, tmp string) (old, new diff.Side, err error) {
	ctx := context.Background()
	top, rel, err := gitside.Locate(ctx, dir)
	if err != nil {
		return old, new, err
	}
	rng, err := gitside.ParseRange(ctx, top, gitRange)
	if err != nil {
		return old, new, err
	}
	oldDir, err := gitside.Export(ctx, top, rel, rng.Old, filepath.Join(tmp, "old"))
	if err != nil {
		return old, new, err
	}
	if old, err = loadSide("old", oldDir, rng.Old+":"+rel); err != nil {
		return old, new, err
	}
	newDir := dir
	if rng.New != "" {
		if newDir, err = gitside.Export(ctx, top, rel, rng.New, filepath.Join(tmp, "new")); err != nil {
			return old, new, err
		}
	}
	new, err = loadSide("new", newDir, rel)
	return old, new, err
}

func label(dir string) string { return filepath.ToSlash(filepath.Clean(dir)) }

// loadSide loads one side; a side that does not load is an error that
// carries its diagnostics.
func loadSide(which, dir, lbl string) (diff.Side, error) {
	c, diags, err := contract.Load(dir)
	if err != nil {
		return diff.Side{}, fmt.Errorf("%s side %s: %w", which, lbl, err)
	}
	if c == nil || diags.Count(diag.Error) > 0 {
		var b strings.Builder
		for _, d := range diags.Sorted() {
			if d.Severity == diag.Error {
				p := d.Pos.Resolved()
				if p.IsValid() {
					p.File = filepath.ToSlash(filepath.Join(lbl, p.File))
				}
				fmt.Fprintf(&b, "\n  %s: %s: %s", p, d.Rule, d.Message)
			}
		}
		return diff.Side{}, fmt.Errorf("%s side %s does not load (%d error(s)); fix it with contractc vet:%s", which, lbl, diags.Count(diag.Error), b.String())
	}
	return diff.Side{C: c, Label: lbl}, nil
}
