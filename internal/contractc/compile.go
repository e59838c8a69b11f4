package contractc

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/seamdc/seam/internal/cli"
	"github.com/seamdc/seam/internal/compile"
	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/diag"
	"github.com/seamdc/seam/internal/plan"
	"github.com/seamdc/seam/internal/sign"
)

func init() {
	register("compile", "compile contracts into a FAT, SAT or IST test plan", runCompile).
		WithExample("contractc compile contracts/examples/threemodule --level sat -o sat.json")
}

func runCompile(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("DIR [--level fat|sat|ist|all] [--module M] [--max-hold 30s] [--allowed-signers FILE] [-o plan.json]", flag.ContinueOnError)
	level := fs.String("level", plan.All, "plan level: "+strings.Join(compile.Levels, ", "))
	module := fs.String("module", "", "only the cases that involve this module")
	maxHold := fs.Duration("max-hold", 0, "cap soak holds and square-wave runs, e.g. 30s for demos (0: no cap); recorded in the plan")
	out := fs.String("o", "-", "write the plan to this file; - is stdout")
	format := fs.String("format", "text", "diagnostics format: "+strings.Join(diag.Formats, ", "))
	allowedFile := fs.String("allowed-signers", "", "allowed-signers file the boundaries' signatures are verified against, for the plan to record (default DIR/signatures/allowed_signers; without one every party is recorded as missing)")
	pos, err := cli.Parse(fs, args)
	if err == nil && len(pos) != 1 {
		err = cli.Usagef("want one contract directory, got %d arguments", len(pos))
	}
	if err == nil && !slices.Contains(diag.Formats, *format) {
		err = cli.Usagef("unknown format %q (want one of %s)", *format, strings.Join(diag.Formats, ", "))
	}
	if err != nil {
		return fail(stderr, "compile", fs, err)
	}
	p, diags, err := compileDir(pos[0], compile.Options{Level: *level, Module: *module, MaxHold: *maxHold}, *allowedFile, stderr)
	if err != nil {
		return fail(stderr, "compile", fs, err)
	}
	rules := maps.Clone(contract.Rules)
	maps.Copy(rules, compile.Rules)
	if p == nil {
		diag.Render(stderr, *format, diags, rules)
		fmt.Fprintf(stderr, "contractc compile: %s has errors: no plan written (run contractc vet %s)\n", pos[0], pos[0])
		return cli.ExitFindings
	}
	b, err := plan.Encode(p)
	if err == nil {
		err = writeOut(*out, b, stdout)
	}
	if err != nil {
		return fail(stderr, "compile", fs, err)
	}
	if len(diags) > 0 {
		diag.Render(stderr, *format, diags, rules)
	}
	fmt.Fprintf(stderr, "%s: %s\n", where(*out), summary(p))
	fmt.Fprintln(stderr, signatureSummary(p))
	if n := untestable(diags); n > 0 {
		fmt.Fprintf(stderr, "contractc compile: %d clause(s) cannot be tested at some level: the plan leaves those cases out, and its coverage table says why\n", n)
		return cli.ExitFindings
	}
	return cli.ExitOK
}

// writeOut writes b to path through a temporary file renamed into
// place, so a failed compile never leaves half a plan behind. A path
// that is not a regular file (/dev/null, a pipe) is written directly:
// renaming over it would replace the device.
func writeOut(path string, b []byte, stdout io.Writer) error {
	if path == "-" {
		_, err := stdout.Write(b)
		return err
	}
	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() {
		if st.IsDir() {
			return fmt.Errorf("-o %s is a directory", path)
		}
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		if _, err := f.Write(b); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".plan-*.json")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

func where(out string) string {
	if out == "-" {
		return "plan"
	}
	return "wrote " + out
}

// summary is one line about a plan: cases, duration, coverage.
func summary(p *plan.Plan) string {
	count := map[string]int{}
	for _, c := range p.Coverage {
		count[c.Status]++
	}
	return fmt.Sprintf("%d cases, estimated %s; %d clauses: %d full, %d partial, %d untestable, %d at another level",
		len(p.Cases), duration(p.Header.EstimatedS), len(p.Coverage), count[plan.Full], count[plan.Partial],
		count[plan.Untestable], count[plan.NotAtLevel])
}

// compileDir vets dir, verifies every party's signature on its
// boundaries and compiles the plan, which records them. A nil plan with
// diagnostics: the contracts have errors.
func compileDir(dir string, opt compile.Options, allowedFile string, stderr io.Writer) (*plan.Plan, diag.List, error) {
	c, errs, err := compile.Vet(dir)
	if c == nil {
		return nil, errs, err
	}
	if opt.Signatures, err = planSignatures(c, dir, allowedFile, stderr); err != nil {
		return nil, nil, err
	}
	return compile.Compile(c, opt)
}

// planSignatures verifies the signatures as contractc verify does, with
// the allowed-signers file at allowedPath(dir, flagValue), for the plan
// to record. When no file was named and the default is absent, nothing
// can be verified: every party is recorded as missing, and where the
// directory has signatures, a note says so.
func planSignatures(c *contract.Contracts, dir, flagValue string, stderr io.Writer) (map[string][]plan.Signature, error) {
	file := allowedPath(dir, flagValue)
	allowed, err := sign.ReadAllowedSigners(file)
	if errors.Is(err, os.ErrNotExist) && flagValue == "" {
		if _, err := os.Stat(filepath.Join(dir, sign.SigDir)); err == nil {
			fmt.Fprintf(stderr, "note: %s does not exist: the plan records every party's signature as missing (--allowed-signers FILE verifies them)\n", file)
		}
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	r, err := sign.Verify(c, allowed, "", now.Now())
	if err != nil {
		return nil, fmt.Errorf("signatures: %w", err)
	}
	out := map[string][]plan.Signature{}
	for _, b := range r.Boundaries {
		for _, p := range b.Parties {
			out[b.Boundary] = append(out[b.Boundary], plan.Signature{Party: p.Party, Status: string(p.Status), Key: p.Key, SignedAt: p.SignedAt})
		}
	}
	return out, nil
}

// signatureSummary counts the parties' signatures the plan records on
// the boundaries it tests.
func signatureSummary(p *plan.Plan) string {
	count := map[string]int{}
	for _, b := range p.Boundaries {
		for _, s := range b.Signatures {
			count[s.Status]++
		}
	}
	return fmt.Sprintf("signatures on the %d boundaries it tests: %d signed, %d missing, %d stale, %d invalid", len(p.Boundaries),
		count[string(sign.StatusSigned)], count[string(sign.StatusMissing)], count[string(sign.StatusStale)], count[string(sign.StatusInvalid)])
}

// untestable counts the clauses with an error diagnostic.
func untestable(diags diag.List) int {
	paths := map[string]bool{}
	for _, d := range diags {
		if d.Severity == diag.Error {
			paths[d.Path] = true
		}
	}
	return len(paths)
}
