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
	"time"

	"github.com/seamdc/seam/internal/binding"
	"github.com/seamdc/seam/internal/bmcrotate"
	"github.com/seamdc/seam/internal/bmcsecret"
	"github.com/seamdc/seam/internal/cli"
	"github.com/seamdc/seam/internal/clock"
	"github.com/seamdc/seam/internal/diag"
	"github.com/seamdc/seam/internal/discover"
	"github.com/seamdc/seam/internal/dryrun"
	"github.com/seamdc/seam/internal/evidence"
	"github.com/seamdc/seam/internal/redfish/bmchttp"
	"github.com/seamdc/seam/internal/version"
)

func init() {
	register("bmc", "manage the site's BMCs: rotate their credentials through Redfish's AccountService, with evidence", runBMC).
		WithExample("sat bmc rotate --site /tmp/site --dry-run").
		Sub("rotate", "rotate every BMC's credentials, crash-safe, with evidence (--dry-run: say what it would do, write nothing)",
			"sat bmc rotate --site /tmp/site --racks a-r01 --evidence out/bmc-rotated")
}

const bmcHelp = `rotate gives every BMC of the site (of --racks) a new secret through
its Redfish AccountService and keeps the secrets file (the binding's
bmcs: secrets:) true at every moment: killed anywhere, every BMC still
accepts its active or its pending secret, and the next run finishes
the job (a rotation under way is recorded in the file, and the BMCs it
rotated are skipped; --restart rotates them all again). A BMC whose
entry names a standby account is rotated with two accounts (the
standby gets the new secret, is verified, becomes active, then the old
account's secret is replaced and it is disabled); the others with one
(new secret saved as pending, password changed, verified, made active).
The BMC's password policy is read and met. Only BMCs whose binding
declares Accounts writable (bmcs: writable: ["Accounts"]) are touched.
Every BMC's outcome is recorded in an evidence bundle (DIR, signed with
--sign-key): who, which BMC, when, which scheme, never a secret.
--dry-run logs in and reads every BMC, prints each write it would make
("would PATCH …", secrets shown as "(new secret)") and writes nothing:
no BMC, no secrets file, no evidence. docs/bmc-credentials.md.

Exit codes: 0 every BMC rotated (or skipped); 2 a BMC failed (its
step and the BMC's message named); 1 the tool failed.`

var bmcUsage = map[string]string{
	"rotate": "--site BINDING [--racks R,…] (--evidence DIR | --dry-run)",
}

type rotateFlags struct {
	site, contracts, racks, evidence, format, by string
	dryRun, restart                              bool
	keys                                         keyFlags
	bmc                                          bmcFlags
}

func runBMC(args []string, stdout, stderr io.Writer) int {
	return runBMCEnv(args, stdout, stderr, os.LookupEnv)
}

func runBMCEnv(args []string, stdout, stderr io.Writer, lookupEnv func(string) (string, bool)) int {
	if code, done := subcommand(args, stderr, "bmc", bmcHelp, "rotate"); done {
		return code
	}
	fs := flag.NewFlagSet(bmcUsage[args[0]], flag.ContinueOnError)
	var f rotateFlags
	fs.StringVar(&f.site, "site", "", "the site binding directory, with its bmcs section naming a secrets file (required)")
	fs.StringVar(&f.contracts, "contracts", "", "the contract directory of the declared inventory (default: the binding's)")
	fs.StringVar(&f.racks, "racks", "", "only these racks' BMCs, comma-separated (ma/r01 or a-r01)")
	fs.StringVar(&f.evidence, "evidence", "", "the evidence bundle to write (a new directory; required unless --dry-run)")
	fs.StringVar(&f.format, "format", "text", "output: text or json")
	fs.StringVar(&f.by, "by", "", "who rotates, for the evidence and the secrets file (default: $USER)")
	fs.BoolVar(&f.restart, "restart", false, "start a new rotation even if one is under way: rotate the BMCs it already rotated again")
	fs.BoolVar(&f.dryRun, "dry-run", false, "log in and read every BMC, print what would be written, write nothing (no BMC, no secrets file, no evidence)")
	f.bmc.add(fs, "BMCs rotated at once", "log each BMC to stderr")
	fs.StringVar(&f.keys.key, "sign-key", "", "sign the evidence with this SSH key (a private key, or a public key whose private key ssh-agent holds)")
	fs.StringVar(&f.keys.passEnv, "passphrase-env", "", "the environment variable holding the signing key's passphrase")
	pos, err := cli.Parse(fs, args[1:])
	switch {
	case err != nil:
	case len(pos) > 0:
		err = cli.Usagef("unexpected arguments %q", pos)
	case f.site == "":
		err = cli.Usagef("--site is required")
	case f.evidence == "" && !f.dryRun:
		err = cli.Usagef("--evidence DIR is required: every rotation is recorded")
	case f.dryRun && f.evidence != "":
		err = cli.Usagef("--dry-run writes no evidence: drop --evidence")
	case f.format != "text" && f.format != "json":
		err = cli.Usagef("unknown format %q (want text or json)", f.format)
	default:
		err = f.bmc.check()
	}
	if err != nil {
		return fail(stderr, "bmc rotate", fs, err)
	}
	if f.by == "" {
		f.by, _ = lookupEnv("USER")
	}
	if f.by == "" {
		f.by = "unknown"
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	results, err := rotate(ctx, f, stdout, stderr, lookupEnv)
	if err != nil {
		fmt.Fprintf(stderr, "sat bmc rotate: %v\n", err)
		return cli.ExitTool
	}
	for _, r := range results {
		if r.Outcome == bmcrotate.Failed {
			return cli.ExitFindings
		}
	}
	return cli.ExitOK
}

// rotate finds the BMCs, continues or starts the rotation in the
// secrets file, rotates every BMC with its evidence, and prints the
// results.
func rotate(ctx context.Context, f rotateFlags, stdout, stderr io.Writer, lookupEnv func(string) (string, bool)) ([]bmcrotate.Result, error) {
	sb, err := rotationBMCs(ctx, f, stderr, lookupEnv)
	if err != nil {
		return nil, err
	}
	f.bmc.apply(&sb.access, stderr)
	if sb.access.Secrets == nil {
		return nil, fmt.Errorf("the bmcs section of %s names one account for every BMC (user, password), which cannot be rotated BMC by BMC: name a secrets file instead (bmcs: secrets: \"bmc-secrets.json\"; docs/bmc-credentials.md)", f.site)
	}
	if len(sb.targets) == 0 {
		return nil, fmt.Errorf("no BMCs to rotate in %s", f.site)
	}
	if !f.dryRun {
		// one writer at a time, and the file read again under the lock:
		// a rotation that ended since it was read changed it
		unlock, err := bmcsecret.Lock(sb.access.Secrets.Path)
		if err != nil {
			return nil, err
		}
		defer unlock()
		if sb.access.Secrets, err = bmcsecret.Load(sb.access.Secrets.Path); err != nil {
			return nil, err
		}
	}
	clk := clock.Real{}
	store := bmcsecret.NewStore(sb.access.Secrets)
	opt := bmcrotate.Options{Access: sb.access, Store: store, Writable: sb.bmcs.Writable, By: f.by}
	if f.dryRun {
		opt.Dry = dryrun.New(stdout, nil)
	}
	started := clk.Now().UTC()
	if r := store.Rotation(); r != nil && !f.restart {
		started = r.Started
		fmt.Fprintf(stdout, "continuing the rotation %s started at %s: the BMCs it rotated are skipped (--restart rotates them again)\n", r.By, r.Started.Format(time.RFC3339))
	} else if opt.Dry.Active() {
		opt.Dry.Would(dryrun.File, "write %s: a rotation started at %s by %s", store.Path(), started.Format(time.RFC3339), f.by)
	} else if err := store.SetRotation(&bmcsecret.Rotation{Started: started, By: f.by}); err != nil {
		return nil, err
	}
	opt.Since = started
	var b *evidence.Bundle
	if !f.dryRun {
		if b, err = rotationBundle(f, clk, started, lookupEnv); err != nil {
			return nil, err
		}
		var recErr error
		opt.Record = func(r bmcrotate.Result) {
			if _, err := b.Append(KindBMCRotate, "", r); err != nil && recErr == nil {
				recErr = err
				fmt.Fprintf(stderr, "sat bmc rotate: evidence: %v\n", err)
			}
		}
	}
	targets := make([]bmcrotate.Target, len(sb.targets))
	for i, t := range sb.targets {
		targets[i] = bmcrotate.Target{Name: t.Name, URL: t.URL}
	}
	fmt.Fprintf(stdout, "rotating %d BMCs of %s, %d at once\n", len(targets), sb.site, sb.access.WithDefaults().Parallel)
	results := bmcrotate.Run(ctx, targets, opt)
	failed := 0
	for _, r := range results {
		if r.Outcome == bmcrotate.Failed {
			failed++
		}
	}
	if failed == 0 && !f.dryRun {
		if err := store.SetRotation(nil); err != nil {
			return results, err
		}
	}
	if b != nil {
		outcome := "passed"
		if failed > 0 {
			outcome = "failed"
		}
		digest := evidence.Digest([]byte(fmt.Sprint(targets)))
		if _, err := b.Finish(evidence.Meta{ToolVersion: "sat bmc rotate " + version.Version, PlanDigest: digest, Outcome: outcome}); err != nil {
			return results, fmt.Errorf("evidence: %w", err)
		}
	}
	if f.format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return results, enc.Encode(results)
	}
	writeRotation(stdout, results, store.Path(), f)
	return results, nil
}

// rotationBMCs are the BMCs to rotate: the binding's bmcs endpoints
// (the BMCs the site declares, the ones its secrets file names), read
// without the rest of the binding or the inventory; with --racks (or
// no endpoints) the site's BMCs as sat discover finds them, only those
// of the racks.
func rotationBMCs(ctx context.Context, f rotateFlags, stderr io.Writer, lookupEnv func(string) (string, bool)) (*siteBMCs, error) {
	if f.racks == "" && f.contracts == "" {
		bm, bd, err := binding.LoadBMCs(f.site)
		if err == nil && bd.Count(diag.Error) > 0 {
			diag.Text(stderr, bd)
			err = fmt.Errorf("the bmcs section of %s has %d error(s)", f.site, bd.Count(diag.Error))
		}
		if err == nil && bm == nil {
			err = fmt.Errorf("the binding in %s has no bmcs section: add one (secrets, endpoints, and writable: [%q])", f.site, binding.ControlAccounts)
		}
		if err != nil {
			return nil, err
		}
		if len(bm.Endpoints) > 0 {
			access, err := bmchttp.FromBinding(bm, lookupEnv)
			if err != nil {
				return nil, err
			}
			sb := &siteBMCs{site: f.site, access: access, bmcs: bm}
			for _, e := range bm.Endpoints {
				sb.targets = append(sb.targets, discover.Target{Name: e.Name, URL: bm.Scheme + "://" + e.Address})
			}
			return sb, nil
		}
	}
	return loadSiteBMCs(ctx, f.site, f.contracts, nil, splitList(f.racks), stderr, lookupEnv)
}

// KindBMCRotate is the evidence record of one BMC's rotation
// (bmcrotate.Result); KindBMCRotation the run's first, what it covers.
const (
	KindBMCRotate   = "bmc.rotate"
	KindBMCRotation = "bmc.rotation"
)

// rotationBundle starts the evidence bundle with its first record: who
// rotates, the rotation's start, the secrets file and the racks.
func rotationBundle(f rotateFlags, clk clock.Clock, started time.Time, lookupEnv func(string) (string, bool)) (*evidence.Bundle, error) {
	sg, fp, err := capSigner(f.keys, lookupEnv)
	if err != nil {
		return nil, err
	}
	by := f.by
	if fp != "" {
		by = f.by + " (" + fp + ")"
	}
	b, err := evidence.Create(f.evidence, clk, evidence.Options{Signer: sg, By: by})
	if err != nil {
		return nil, err
	}
	start := map[string]any{"by": f.by, "rotation_started": started, "site": f.site, "racks": splitList(f.racks), "restart": f.restart}
	if _, err := b.Append(KindBMCRotation, "", start); err != nil {
		_ = b.Close()
		return nil, fmt.Errorf("evidence: %w", err)
	}
	return b, nil
}

func writeRotation(w io.Writer, results []bmcrotate.Result, secrets string, f rotateFlags) {
	count := map[string]int{}
	for _, r := range results {
		count[r.Outcome]++
	}
	if f.dryRun {
		fmt.Fprintf(w, "sat bmc rotate (dry run): %d BMCs, %d would be rotated, %d skipped, %d failed\n", len(results), count[bmcrotate.Would], count[bmcrotate.Skipped], count[bmcrotate.Failed])
	} else {
		fmt.Fprintf(w, "sat bmc rotate: %d BMCs, %d rotated, %d finished, %d skipped, %d failed\n", len(results),
			count[bmcrotate.Rotated], count[bmcrotate.Finished], count[bmcrotate.Skipped], count[bmcrotate.Failed])
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "BMC\tscheme\taccount\toutcome\tdetail")
	for _, r := range results {
		detail := r.Note
		if r.Outcome == bmcrotate.Failed {
			detail = r.Step + ": " + r.Error
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.BMC, orDash(r.Scheme), orDash(r.Account), r.Outcome, detail)
	}
	_ = tw.Flush()
	switch {
	case f.dryRun:
		fmt.Fprintln(w, "dry run: no BMC, secrets file or evidence was written")
	case count[bmcrotate.Failed] > 0:
		fmt.Fprintf(w, "secrets file %s: every BMC keeps a secret it holds; run the same command again to finish (the rotation under way is kept)\nevidence %s\n", secrets, f.evidence)
	default:
		fmt.Fprintf(w, "secrets file %s; evidence %s\n", secrets, f.evidence)
	}
}
