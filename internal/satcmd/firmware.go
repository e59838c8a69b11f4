package satcmd

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/seamdc/seam/internal/cli"
	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/diag"
	"github.com/seamdc/seam/internal/dryrun"
	"github.com/seamdc/seam/internal/firmware"
	"github.com/seamdc/seam/internal/hold"
	"github.com/seamdc/seam/internal/lifecycle"
	"github.com/seamdc/seam/internal/lifecycle/lifecyclecmd"
	"github.com/seamdc/seam/internal/sign"
	"github.com/seamdc/seam/internal/version"
)

func init() {
	register("firmware", "firmware baselines and rollouts by failure domain: vet a baseline, plan a rollout", runFirmware).
		WithExample("sat firmware plan --contracts contracts/examples/threemodule --discovery out/discovery.json --module ma").
		Sub("vet", "check the firmware baseline: its schema, its rules (FW001…) and the inventory it covers",
			"sat firmware vet --contracts contracts/examples/threemodule").
		Sub("plan", "what differs from the baseline, and the rollout's stages by failure domain under the site's policy (--what-if: each stage's blast radius)",
			"sat firmware plan --contracts contracts/examples/threemodule --discovery out/discovery.json --what-if").
		Sub("sign", "sign the firmware baseline as a party its policy names (signed_by), with an SSH key the contracts' allowed signers list",
			"sat firmware sign --contracts contracts/examples/threemodule --party GPUWorks --key ~/.ssh/id_ed25519").
		Sub("apply", "apply a plan stage by stage: holds and drains, updates through each BMC's UpdateService, burn-in holds after; journaled, resumable (--resume), --dry-run",
			"sat firmware apply --contracts contracts/examples/threemodule --plan plan.json --site /tmp/site --images images/ --evidence out/fw-1")
}

const firmwareHelp = `The firmware baseline is CUE beside the contracts (DIR/firmware, or
--baseline): for each tray model, each component's version, image
digest, Redfish Targets, apply time and reset, in update order; and the
site's rollout policy (docs/firmware.md).

vet checks it against its schema, its rules (FW001 mixed versions in a
scale-up domain, FW002 an image without a digest, FW003 a component
ordered before one it follows, FW004 a cycle, FW005 an unknown
component, FW006 an unknown model, FW007 an OnReset update without a
reset, FW008 a policy the inventory cannot meet, FW009 a policy that
limits nothing) and the contracts' inventory.

plan reads a discovery (sat discover --format json) and says what
differs, and the stages that bring the trays to the baseline: a canary
first, then whole racks (whole scale-up domains) by failure domain, no
stage beyond the policy, the holds already in the ledger counted (from
the lifecycle store, read only, or a file of sat lifecycle hold list
--format json): a node another owner holds is not updated. Each stage
lists its nodes, the holds it places (firmware:ROLLOUT-sNN), each
tray's updates in order, resets and checks; --what-if adds its blast
radius. The plan records the baseline's digest: apply refuses a
baseline changed since.

sign writes the party's statement of the baseline's canonical digest
and its SSH signature (the contract namespace) into the baseline's
signatures/: the key must be one the allowed signers (default
DIR/signatures/allowed_signers) list for the party. Every party the
policy's signed_by names must have signed the baseline as it is before
apply uses it.

apply runs a plan's stages in order. For each: the stage's nodes held in
the ledger by firmware:ROLLOUT-sNN (the lifecycle store's with
--lifecycle), which drains them through --scheduler; the jobs on them
waited for up to --jobs-deadline (never killed); every tray's updates
through its BMC (SimpleUpdate with a one-time URL on seam's own image
server, which serves only the plan's images from --images, checked by
sha256; or --push), each task followed to its end, the BMC's reboot
waited for, the resets sent, the versions read back; then the updated
nodes held by burnin:ROLLOUT (a passing sat burnin with the lifecycle
store releases them) and the others given back. A failed update
stops the rollout after its stage, naming the node, component and
step. Every step is journaled in a signed evidence bundle (--evidence);
--resume DIR continues after a crash at any moment without sending a
finished update again. Only BMCs and controls the binding declares
writable (firmware, reset) are written; --dry-run writes nothing.

Exit codes: vet: 0 clean, 2 errors; plan: 0 a plan written; apply: 0
every stage passed, 2 the rollout stopped at a stage (resume it); 1 the
tool failed or its input is bad (named with its file and line, or the
discovery's tray).`

var firmwareUsage = map[string]string{
	"vet":  "--contracts DIR [--baseline DIR] [--format text|json|github|sarif]",
	"plan": "--contracts DIR --discovery FILE [--baseline DIR] [--holds FILE | --lifecycle STORE] [--module M] [--format text|json] [--what-if] [-o FILE]",
	"sign": "--contracts DIR --party NAME --key KEY [--baseline DIR] [--allowed-signers FILE]",
	"apply": "--contracts DIR --plan FILE --site BINDING --images DIR (--evidence DIR | --resume DIR | --dry-run) [--stages 1,3-5] [--lifecycle STORE --lifecycle-key KEY] " +
		"[--scheduler slurm|kubernetes|none] [--jobs-deadline 1h] [--sign-key KEY] [--listen ADDR --tls-cert F --tls-key F]",
}

type firmwareFlags struct {
	contracts, baseline, discovery, holds, store, module, rollout, format, out string
	allowed, party                                                             string
	key                                                                        keyFlags
	whatIf                                                                     bool
	apply                                                                      applyFlags
}

func runFirmware(args []string, stdout, stderr io.Writer) int {
	return runFirmwareEnv(args, stdout, stderr, os.LookupEnv)
}

func runFirmwareEnv(args []string, stdout, stderr io.Writer, lookupEnv func(string) (string, bool)) int {
	if code, done := subcommand(args, stderr, "firmware", firmwareHelp, "vet", "plan", "sign", "apply"); done {
		return code
	}
	name := "firmware " + args[0]
	fs := flag.NewFlagSet(firmwareUsage[args[0]], flag.ContinueOnError)
	var f firmwareFlags
	fs.StringVar(&f.contracts, "contracts", "", "the contract directory: the inventory, its handover records and its services (required)")
	fs.StringVar(&f.baseline, "baseline", "", "the firmware baseline directory (default: the contract directory's firmware/)")
	switch args[0] {
	case "vet":
		fs.StringVar(&f.format, "format", "text", "diagnostics as text, json, github or sarif")
	case "apply":
		f.apply.add(fs)
		fs.StringVar(&f.allowed, "allowed-signers", "", "the allowed signers the baseline's signatures are checked against (default DIR/signatures/allowed_signers)")
	case "sign":
		fs.StringVar(&f.party, "party", "", "the party you sign as: one the baseline's policy names in signed_by (required)")
		fs.StringVar(&f.key.key, "key", "", "the SSH key to sign with: a private key, or a public key whose private key ssh-agent holds (required)")
		fs.StringVar(&f.key.passEnv, "passphrase-env", "", "the environment variable holding the key's passphrase")
		fs.StringVar(&f.allowed, "allowed-signers", "", "the allowed signers the key must be listed in for the party (default DIR/signatures/allowed_signers, if present)")
	default:
		fs.StringVar(&f.discovery, "discovery", "", "what the BMCs report: sat discover --format json's output (required)")
		fs.StringVar(&f.holds, "holds", "", "the holds already in the ledger: sat lifecycle hold list --format json's output")
		fs.StringVar(&f.store, "lifecycle", "", "read the holds from this lifecycle store, read only (a SQLite file or a postgres:// URL; its password from $"+lifecyclecmd.EnvPassword+")")
		fs.StringVar(&f.module, "module", "", "plan only this module's racks")
		fs.StringVar(&f.rollout, "rollout", "", "the rollout's name in its holds' owners, firmware:NAME-s01 (default: fw- and the baseline digest's first 8 hex digits)")
		fs.StringVar(&f.format, "format", "text", "the plan as text or json ("+firmware.Format+")")
		fs.BoolVar(&f.whatIf, "what-if", false, "add each stage's blast radius: what its updates stop and degrade")
		fs.StringVar(&f.out, "o", "", "write the plan to this file instead of stdout")
	}
	pos, err := cli.Parse(fs, args[1:])
	switch {
	case err != nil:
	case len(pos) > 0:
		err = cli.Usagef("unexpected arguments %q", pos)
	case f.contracts == "":
		err = cli.Usagef("--contracts is required")
	case args[0] == "vet" && !slices.Contains(diag.Formats, f.format):
		err = cli.Usagef("unknown format %q (want text, json, github or sarif)", f.format)
	case args[0] == "plan" && f.discovery == "":
		err = cli.Usagef("--discovery is required: sat discover --format json's output")
	case args[0] == "plan" && f.format != "text" && f.format != "json":
		err = cli.Usagef("unknown format %q (want text or json)", f.format)
	case f.holds != "" && f.store != "":
		err = cli.Usagef("give the holds as --holds FILE or --lifecycle STORE, not both")
	case args[0] == "apply":
		err = f.apply.check()
	case args[0] == "sign" && (f.party == "" || f.key.key == ""):
		err = cli.Usagef("--party and --key are required")
	}
	if err != nil {
		return fail(stderr, name, fs, err)
	}
	if f.baseline == "" {
		f.baseline = filepath.Join(f.contracts, firmware.Dir)
	}
	switch args[0] {
	case "vet":
		return firmwareVet(f, stdout, stderr)
	case "apply":
		return firmwareApply(f, stdout, stderr, lookupEnv)
	case "sign":
		return firmwareSign(f, stdout, stderr, lookupEnv)
	}
	return firmwarePlan(f, stdout, stderr, lookupEnv)
}

// firmwareInputs are what vet and plan read: the baseline with its
// diagnostics (positions from where the command runs), the inventory
// and the modules that hold a control plane's replica.
type firmwareInputs struct {
	set   *firmware.Set
	diags diag.List
	site  *firmware.Site
	cps   map[string][]string
}

// loadFirmware loads the baseline, then (if it loads) the contracts'
// inventory, and vets the one against the other.
func loadFirmware(f firmwareFlags, stderr io.Writer) (*firmwareInputs, error) {
	set, diags, err := firmware.Load(f.baseline)
	if err != nil {
		return nil, err
	}
	in := &firmwareInputs{set: set, diags: diags}
	if set != nil {
		if in.site, in.cps, err = firmwareSite(f.contracts, stderr); err != nil {
			return nil, err
		}
		in.diags = append(in.diags, firmware.Vet(set, in.site)...)
	}
	in.diags = in.diags.Sorted().Rebase(f.baseline)
	return in, nil
}

// firmwareSite reads the contract directory's inventory as a rollout
// sees it, and which modules hold a replica of a control-plane service.
func firmwareSite(dir string, stderr io.Writer) (*firmware.Site, map[string][]string, error) {
	c, diags, err := contract.Load(dir)
	if err == nil && c == nil {
		err = fmt.Errorf("%s: no contracts", dir)
	}
	if err == nil && diags.Count(diag.Error) > 0 {
		diag.Text(stderr, diags.Rebase(dir))
		err = fmt.Errorf("the contracts in %s have %d error(s)", dir, diags.Count(diag.Error))
	}
	if err != nil {
		return nil, nil, err
	}
	hd, err := c.ReadInventory(nil)
	if err == nil && hd.Count(diag.Error) > 0 {
		diag.Text(stderr, hd.Rebase(dir))
		err = fmt.Errorf("the handover inventory of %s has %d error(s)", dir, hd.Count(diag.Error))
	}
	if err != nil {
		return nil, nil, err
	}
	g, gd := c.Graph()
	if gd.Count(diag.Error) > 0 {
		diag.Text(stderr, gd.Rebase(dir))
		return nil, nil, fmt.Errorf("the inventory of %s has %d error(s)", dir, gd.Count(diag.Error))
	}
	op, _ := c.Operate()
	cps := map[string][]string{}
	for _, s := range op.Services {
		if s.Kind != contract.ControlPlane {
			continue
		}
		for _, r := range s.Replicas {
			if !slices.Contains(cps[r.To], s.ID) {
				cps[r.To] = append(cps[r.To], s.ID)
			}
		}
	}
	return firmware.NewSite(g), cps, nil
}

func firmwareVet(f firmwareFlags, stdout, stderr io.Writer) int {
	in, err := loadFirmware(f, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "sat firmware vet: %v\n", err)
		return cli.ExitTool
	}
	if err := diag.Render(stdout, f.format, in.diags, firmware.Rules); err != nil {
		fmt.Fprintf(stderr, "sat firmware vet: %v\n", err)
		return cli.ExitTool
	}
	if in.diags.Count(diag.Error) > 0 {
		return cli.ExitFindings
	}
	return cli.ExitOK
}

func firmwarePlan(f firmwareFlags, stdout, stderr io.Writer, lookupEnv func(string) (string, bool)) int {
	p, err := planFirmware(f, stderr, lookupEnv)
	if err == nil {
		err = writePlan(p, f, stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "sat firmware plan: %v\n", err)
		return cli.ExitTool
	}
	return cli.ExitOK
}

// planFirmware reads the baseline (refused with errors), the discovery,
// the inventory and the holds, and makes the plan.
func planFirmware(f firmwareFlags, stderr io.Writer, lookupEnv func(string) (string, bool)) (*firmware.Plan, error) {
	d, err := firmware.ReadDiscovery(f.discovery)
	if err != nil {
		return nil, err
	}
	in, err := loadFirmware(f, stderr)
	if err != nil {
		return nil, err
	}
	if len(in.diags) > 0 {
		diag.Text(stderr, in.diags)
	}
	if n := in.diags.Count(diag.Error); n > 0 {
		return nil, fmt.Errorf("the firmware baseline in %s has %d error(s)", f.baseline, n)
	}
	held, err := firmwareHolds(f, in.site, lookupEnv)
	if err != nil {
		return nil, err
	}
	return firmware.NewPlan(in.set, in.site, d, firmware.Options{Module: f.module, Rollout: f.rollout, ControlPlanes: in.cps, Held: held,
		WhatIf: f.whatIf, Tool: "sat " + version.Version, BaselinePath: filepath.ToSlash(f.baseline), DiscoveryPath: filepath.ToSlash(f.discovery)})
}

// firmwareHolds are the holds already in the ledger, by node key: from
// --holds (sat lifecycle hold list --format json) or the store of
// --lifecycle, opened read only.
func firmwareHolds(f firmwareFlags, s *firmware.Site, lookupEnv func(string) (string, bool)) (map[string][]hold.Owner, error) {
	var hs []lifecycle.Hold
	from := f.holds
	switch {
	case f.holds != "":
		b, err := os.ReadFile(f.holds)
		if err != nil {
			return nil, fmt.Errorf("--holds: %w", err)
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&hs); err != nil {
			return nil, fmt.Errorf("%s: not a list of holds (sat lifecycle hold list --format json): %w", f.holds, err)
		}
	case f.store != "":
		from = "the lifecycle store " + f.store
		password, _ := lookupEnv(lifecyclecmd.EnvPassword)
		st, err := lifecycle.Open(context.Background(), lifecycle.Config{Store: f.store, Password: password, LookupEnv: lookupEnv, DryRun: dryrun.New(nil, nil)})
		if err != nil {
			return nil, fmt.Errorf("--lifecycle %s: %w", f.store, err)
		}
		defer st.Close()
		if hs, err = st.Holds(context.Background(), ""); err != nil {
			return nil, fmt.Errorf("--lifecycle %s: %w", f.store, err)
		}
	default:
		return nil, nil
	}
	out := map[string][]hold.Owner{}
	for _, h := range hs {
		t := s.Node(h.Node)
		if t == nil {
			return nil, fmt.Errorf("%s: hold %s on %s: no node of the inventory has that key or name", from, h.Owner, h.Node)
		}
		if _, err := hold.Parse(string(h.Owner)); err != nil {
			return nil, fmt.Errorf("%s: node %s: %w", from, h.Node, err)
		}
		if !slices.Contains(out[t.Key], h.Owner) {
			out[t.Key] = append(out[t.Key], h.Owner)
			slices.Sort(out[t.Key])
		}
	}
	return out, nil
}

// writePlan writes the plan as --format says, to -o or stdout.
func writePlan(p *firmware.Plan, f firmwareFlags, stdout io.Writer) error {
	var b bytes.Buffer
	var err error
	if f.format == "json" {
		err = p.WriteJSON(&b)
	} else {
		err = p.WriteText(&b)
	}
	if err != nil {
		return err
	}
	if f.out == "" {
		_, err = stdout.Write(b.Bytes())
		return err
	}
	return os.WriteFile(f.out, b.Bytes(), 0o644)
}

// firmwareSign signs the baseline as --party, with --key, which the
// allowed signers must list for the party.
func firmwareSign(f firmwareFlags, stdout, stderr io.Writer, lookupEnv func(string) (string, bool)) int {
	err := func() error {
		set, diags, err := firmware.Load(f.baseline)
		if err != nil {
			return err
		}
		if n := diags.Count(diag.Error); n > 0 || set == nil {
			diag.Text(stderr, diags.Rebase(f.baseline))
			return fmt.Errorf("the firmware baseline in %s has %d error(s): fix them before signing it", f.baseline, n)
		}
		if !slices.Contains(set.Policy.SignedBy, f.party) {
			return fmt.Errorf("the baseline's policy names %q as signers, not %s: add the party to policy.signed_by first", set.Policy.SignedBy, f.party)
		}
		allowed, _, err := allowedSigners(f, false)
		if err != nil {
			return err
		}
		signer, err := loadSSHSigner(f.key, lookupEnv)
		if err != nil {
			return err
		}
		path, err := firmware.Sign(set, f.party, signer, allowed, time.Now(), "sat "+version.Version)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "signed the firmware baseline %s (%s) as %s with key %s: %s and %s.sig\n", f.baseline, set.Digest, f.party,
			ssh.FingerprintSHA256(signer.PublicKey()), path, path)
		return nil
	}()
	if err != nil {
		fmt.Fprintf(stderr, "sat firmware sign: %v\n", err)
		return cli.ExitTool
	}
	return cli.ExitOK
}

// allowedSigners reads --allowed-signers, else DIR/signatures/
// allowed_signers: nil when that default is missing and need is
// false.
func allowedSigners(f firmwareFlags, need bool) (*sign.AllowedSigners, string, error) {
	file := f.allowed
	if file == "" {
		file = filepath.Join(f.contracts, sign.SigDir, sign.AllowedSignersFile)
		if _, err := os.Stat(file); err != nil && !need {
			return nil, file, nil
		}
	}
	a, err := sign.ReadAllowedSigners(file)
	if err != nil {
		return nil, file, fmt.Errorf("allowed signers: %w", err)
	}
	return a, file, nil
}
