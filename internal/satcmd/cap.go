package satcmd

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"text/tabwriter"

	"github.com/seamdc/seam/internal/capping"
	"github.com/seamdc/seam/internal/capping/apply"
	"github.com/seamdc/seam/internal/cli"
	"github.com/seamdc/seam/internal/clock"
	"github.com/seamdc/seam/internal/dryrun"
	"github.com/seamdc/seam/internal/evidence"
	"github.com/seamdc/seam/internal/version"
)

func init() {
	register("cap", "apply, clear or check power caps through the nodes' BMCs (Redfish PowerLimit), with evidence", runCap).
		WithExample("sat cap apply --site /tmp/site --dry-run caps.json").
		Sub("apply", "write each node's cap to its BMC and read it back, with evidence (--dry-run: print the PATCH, write nothing)",
			"sat cap apply --site /tmp/site --evidence out/caps-applied caps.json").
		Sub("clear", "write each BMC's maximum back, with evidence",
			"sat cap clear --site /tmp/site --evidence out/caps-cleared caps.json").
		Sub("check", "read each BMC's cap and compare it with the caps file (exit 2 on drift)",
			"sat cap check --site /tmp/site caps.json")
}

// capHelp is what sat cap -h says after its subcommands.
const capHelp = `Writes the caps of CAPS (the file contractc budget --cap --caps-out
writes; docs/capping.md) to each node's BMC over Redfish: its
Controls/PowerLimit SetPoint (in W, kW or % of the node's maximum), or
the legacy Power.PowerControl[0].PowerLimit.LimitInWatts where the BMC
has only that; reads each back. clear writes each BMC's maximum back;
check only reads and compares. Only a control the binding's bmcs
section declares writable (writable: ["PowerLimit"], or writable_on per
BMC) is written: a BMC without it is refused (BIND032) and nothing is
sent to it. A session per BMC, DELETEd after; one or two requests in
flight to a BMC; a busy BMC's Retry-After honoured. apply and clear
record every BMC's before, written and read-back caps in an evidence
bundle (DIR, signed with --sign-key). --dry-run reads every BMC as for
the write, prints the PATCH it would send ("would PATCH …"), and writes
nothing: no BMC, no evidence.

Exit codes: 0 every BMC took (or, for check, has) its cap; 2 a BMC
refused, failed or drifted; 1 the tool failed.`

// capUsage is each subcommand's usage line after its name.
var capUsage = map[string]string{
	"apply": "--site BINDING (--evidence DIR | --dry-run) CAPS",
	"clear": "--site BINDING (--evidence DIR | --dry-run) CAPS",
	"check": "--site BINDING CAPS",
}

type capFlags struct {
	site, evidence, format string
	dryRun                 bool
	keys                   keyFlags
	bmc                    bmcFlags
}

func runCap(args []string, stdout, stderr io.Writer) int {
	return runCapEnv(args, stdout, stderr, os.LookupEnv)
}

func runCapEnv(args []string, stdout, stderr io.Writer, lookupEnv func(string) (string, bool)) int {
	if code, done := subcommand(args, stderr, "cap", capHelp, "apply", "clear", "check"); done {
		return code
	}
	op := map[string]apply.Op{"apply": apply.Apply, "clear": apply.Clear, "check": apply.Read}[args[0]]
	name := "cap " + args[0]
	fs := flag.NewFlagSet(capUsage[args[0]], flag.ContinueOnError)
	var f capFlags
	fs.StringVar(&f.site, "site", "", "the site binding directory, with its bmcs section (required)")
	fs.StringVar(&f.evidence, "evidence", "", "the evidence bundle to write (a new directory; required for apply and clear)")
	fs.StringVar(&f.format, "format", "text", "output: text or json")
	fs.BoolVar(&f.dryRun, "dry-run", false, "apply and clear: read each BMC, print the PATCH it would send, write nothing (no BMC, no evidence)")
	f.bmc.add(fs, "BMCs at once", "log each BMC to stderr")
	fs.StringVar(&f.keys.key, "sign-key", "", "sign the evidence with this SSH key (a private key, or a public key whose private key ssh-agent holds)")
	fs.StringVar(&f.keys.passEnv, "passphrase-env", "", "the environment variable holding the signing key's passphrase")
	pos, err := cli.Parse(fs, args[1:])
	switch {
	case err != nil:
	case len(pos) != 1:
		err = cli.Usagef("want one caps file, got %d arguments", len(pos))
	case f.site == "":
		err = cli.Usagef("--site is required")
	case op != apply.Read && f.evidence == "" && !f.dryRun:
		err = cli.Usagef("--evidence DIR is required: every cap written is recorded")
	case f.dryRun && (op == apply.Read || f.evidence != ""):
		err = cli.Usagef("--dry-run is for apply and clear, and writes no evidence: drop --evidence")
	case f.format != "text" && f.format != "json":
		err = cli.Usagef("unknown format %q (want text or json)", f.format)
	default:
		err = f.bmc.check()
	}
	if err != nil {
		return fail(stderr, name, fs, err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	results, err := capRun(ctx, op, pos[0], f, stdout, stderr, lookupEnv)
	if err != nil {
		fmt.Fprintf(stderr, "sat %s: %v\n", name, err)
		return cli.ExitTool
	}
	for _, r := range results {
		if r.Err != nil {
			return cli.ExitFindings
		}
	}
	return cli.ExitOK
}

// capRun reads the caps and the binding's BMCs, runs op at every BMC,
// records the evidence and prints the results.
func capRun(ctx context.Context, op apply.Op, capsPath string, f capFlags, stdout, stderr io.Writer, lookupEnv func(string) (string, bool)) ([]apply.Result, error) {
	raw, err := os.ReadFile(capsPath)
	if err != nil {
		return nil, err
	}
	caps, err := capping.Parse(capsPath, raw)
	if err != nil {
		return nil, err
	}
	targets, opt, err := apply.Targets(f.site, caps, lookupEnv, stderr)
	if err != nil {
		return nil, err
	}
	f.bmc.apply(&opt.Access, stderr)
	if f.dryRun {
		opt.Dry = dryrun.New(stdout, nil)
	}
	results := apply.Run(ctx, op, targets, opt)
	if op != apply.Read && !f.dryRun {
		sg, by, err := capSigner(f.keys, lookupEnv)
		if err != nil {
			return nil, err
		}
		if _, err := apply.Evidence(f.evidence, clock.Real{}, sg, by, "sat cap "+version.Version, op, raw, results); err != nil {
			return nil, fmt.Errorf("evidence: %w", err)
		}
	}
	if op == apply.Read {
		for i := range results {
			r := &results[i]
			if apply.Drifted(*r, targets[i]) {
				err := fmt.Errorf("%s: has %.0f W, the caps file says %.0f W: the cap drifted (a BMC reset or a firmware update?): run sat cap apply", r.Control, r.ReadBackW, targets[i].Watts)
				r.Err = fmt.Errorf("BMC %s (node %s): %w", r.BMC, r.Node, err)
				r.Error = r.Err.Error()
			}
		}
	}
	if f.format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return results, enc.Encode(results)
	}
	writeCapResults(stdout, op, caps, results, f.evidence)
	if f.dryRun {
		fmt.Fprintln(stdout, "dry run: no BMC was written, no evidence recorded")
	}
	return results, nil
}

func capSigner(k keyFlags, lookupEnv func(string) (string, bool)) (evidence.Signer, string, error) {
	if k.key == "" {
		return nil, "", nil
	}
	s, fp, err := evidenceSigner(k, lookupEnv)
	return s, fp, err
}

func writeCapResults(w io.Writer, op apply.Op, caps *capping.File, results []apply.Result, evidenceDir string) {
	failed := 0
	for _, r := range results {
		if r.Err != nil {
			failed++
		}
	}
	fmt.Fprintf(w, "sat cap %s: %s, target %s: %d BMCs, %d ok, %d failed\n", capVerb(op), caps.Site, caps.Target, len(results), len(results)-failed, failed)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "node\tBMC\tcontrol\tunits\tbefore\twanted\tread back\tstatus")
	for i, r := range results {
		st := "ok"
		switch {
		case r.Err != nil:
			st = "FAILED"
		case r.Would:
			st = "would write"
		}
		want := r.WantW
		if op == apply.Read {
			want = caps.Caps[i].Watts
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.0f W\t%.0f W\t%.0f W\t%s\n", r.Node, r.BMC, orDash(r.Control), orDash(r.Units), r.BeforeW, want, r.ReadBackW, st)
	}
	tw.Flush()
	for _, r := range results {
		if r.Err != nil {
			fmt.Fprintf(w, "  %s\n", r.Error)
		}
	}
	if evidenceDir != "" && op != apply.Read {
		fmt.Fprintf(w, "evidence: %s\n", evidenceDir)
	}
}

// capVerb is the subcommand that runs op: check reads (apply.Read).
func capVerb(op apply.Op) string {
	if op == apply.Read {
		return "check"
	}
	return fmt.Sprint(op)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
