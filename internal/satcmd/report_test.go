package satcmd

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/seamdc/seam/internal/compile"
	"github.com/seamdc/seam/internal/plan"
	"github.com/seamdc/seam/internal/report/reporttest"
)

// TestReportScripts runs `sat report` and `sat compare` on real
// evidence bundles (testdata/report/*.txtar). Commands:
//
//	sat ARGS...                                run sat in process; "[exit N]" goes to stderr
//	anyexit sat ARGS...                        run sat, whatever its exit code
//	plan LEVEL MODULE FILE                     write the example's plan (--max-hold 5s)
//	bundle LEVEL MODULE DIR [defect=D] [scale=S] [sign=KEY]
//	                                           write a bundle of the example's plan (compiled
//	                                           with --max-hold 5s) run on a model site
func TestReportScripts(t *testing.T) {
	example, err := filepath.Abs("../../contracts/examples/threemodule")
	if err != nil {
		t.Fatal(err)
	}
	fixtures, err := filepath.Abs("../../fixtures")
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir: "testdata/report",
		Setup: func(env *testscript.Env) error {
			env.Setenv("EXAMPLE", example)
			env.Setenv("FIXTURES", fixtures)
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"sat":    cmdSatInProcess,
			"bundle": cmdBundle,
			"plan":   cmdPlan,
			"anyexit": func(ts *testscript.TestScript, neg bool, args []string) {
				if len(args) == 0 || args[0] != "sat" || neg {
					ts.Fatalf("usage: anyexit sat ARGS...")
				}
				fmt.Fprintf(ts.Stderr(), "[exit %d]\n", Main(args[1:], ts.Stdout(), ts.Stderr()))
			},
		},
	})
}

func cmdSatInProcess(ts *testscript.TestScript, neg bool, args []string) {
	code := Main(args, ts.Stdout(), ts.Stderr())
	fmt.Fprintf(ts.Stderr(), "[exit %d]\n", code)
	if (code != 0) != neg {
		ts.Fatalf("sat exited %d", code)
	}
}

// cmdPlan compiles the example as contractc compile does (the runner
// refuses a plan that differs from what the compiler writes).
func cmdPlan(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 3 {
		ts.Fatalf("usage: plan LEVEL MODULE FILE")
	}
	p, diags, err := compile.Dir(ts.Getenv("EXAMPLE"), compile.Options{Level: args[0], Module: args[1], MaxHold: 5 * time.Second})
	if err != nil {
		ts.Fatalf("compile: %v %v", err, diags)
	}
	raw, err := plan.Encode(p)
	ts.Check(err)
	ts.Check(os.WriteFile(ts.MkAbs(args[2]), raw, 0o644))
}

func cmdBundle(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 3 {
		ts.Fatalf("usage: bundle LEVEL MODULE DIR [defect=D] [scale=S]")
	}
	var opt reporttest.Options
	for _, a := range args[3:] {
		k, v, _ := strings.Cut(a, "=")
		switch k {
		case "defect":
			opt.Defect = v
		case "scale":
			s, err := strconv.ParseFloat(v, 64)
			ts.Check(err)
			opt.Scale = s
		case "sign":
			raw, err := os.ReadFile(ts.MkAbs(v))
			ts.Check(err)
			opt.Signer, err = ssh.ParsePrivateKey(raw)
			ts.Check(err)
		default:
			ts.Fatalf("bundle: unknown option %s", a)
		}
	}
	p, diags, err := compile.Dir(ts.Getenv("EXAMPLE"), compile.Options{Level: args[0], Module: args[1], MaxHold: 5 * time.Second})
	if err != nil {
		ts.Fatalf("compile: %v %v", err, diags)
	}
	raw, err := plan.Encode(p)
	ts.Check(err)
	_, err = reporttest.Write(ts.MkAbs(args[2]), p, raw, opt)
	if (err != nil) != neg {
		ts.Fatalf("bundle: %v", err)
	}
}

// A PDF asked for on a machine without a headless Chromium is an error
// that says what to install; in the default formats it is left out.
func TestPDFWithoutABrowser(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	formats := fs.String("format", "html,pdf", "")
	require.NoError(t, fs.Parse(nil))
	list, browser, err := pdfAsked(fs, *formats, "")
	require.NoError(t, err)
	assert.Equal(t, "html", list)
	assert.Equal(t, noBrowser, browser)
	require.NoError(t, fs.Parse([]string{"--format", "pdf"}))
	_, _, err = pdfAsked(fs, *formats, "")
	assert.EqualError(t, err, "a PDF is printed by a headless Chromium, and none is on PATH (chromium, chromium-browser, google-chrome, google-chrome-stable): install it (Debian: apt-get install chromium) or leave pdf out of --format")
}
