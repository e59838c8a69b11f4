package satcmd

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/seamdc/seam/internal/burnin"
	"github.com/seamdc/seam/internal/burnin/recorded"
	"github.com/seamdc/seam/internal/cli"
	"github.com/seamdc/seam/internal/dryrun"
	"github.com/seamdc/seam/internal/evidence"
	"github.com/seamdc/seam/internal/scheduler"
	"github.com/seamdc/seam/internal/version"
)

// gradeFlags are sat burnin grade's flags beyond burnin run's.
type gradeFlags struct {
	gpus  int
	drain bool
}

// burninGrade is sat burnin grade DIR: a burn-in the site already ran,
// graded from its recorded outputs (internal/burnin/recorded) with
// burn-in's own analysis, evidence, baselines, report and gate.
func burninGrade(args []string, stdout, stderr io.Writer, lookupEnv func(string) (string, bool)) int {
	fs := flag.NewFlagSet("DIR --contracts DIR --module M --out DIR [flags]", flag.ContinueOnError)
	var f burninFlags
	var g gradeFlags
	fs.StringVar(&f.contracts, "contracts", "", "the site's contracts (their inventory names the nodes, racks and serials)")
	fs.StringVar(&f.module, "module", "", "the IT module whose nodes the outputs are of")
	fs.StringVar(&f.out, "out", "", "the evidence directory to create")
	fs.StringVar(&f.baselines, "baselines", "", "where to write each node's baseline file (default OUT.baselines)")
	fs.StringVar(&f.report, "report", "", "where to write burnin.csv, burnin.junit.xml, burnin.html (default OUT.report)")
	fs.StringVar(&f.reservation, "reservation", "", "the burn-in's name in the ledger: the nodes held are held by burnin:NAME (default seam-burnin-MODULE, as sat burnin run's)")
	fs.StringVar(&f.key.key, "sign-key", "", "sign the bundle with this OpenSSH key")
	fs.StringVar(&f.key.passEnv, "passphrase-env", "", "the environment variable holding the key's passphrase")
	fs.StringVar(&f.lifecycle, "lifecycle", "", "the lifecycle store, the site's ledger of holds: provision the nodes that pass and hold the nodes that fail")
	fs.StringVar(&f.lifecycleKey.key, "lifecycle-key", "", "the SSH key that signs the lifecycle changes (with --lifecycle)")
	fs.BoolVar(&g.drain, "drain", false, "drain the nodes held in Slurm now, through the ledger (default: no scheduler is written; the lifecycle store keeps the holds for facilityd)")
	fs.StringVar(&f.slurmConf, "slurm-conf", "", "with --drain: slurm.conf (default: $SLURM_CONF or Slurm's own)")
	fs.Int64Var(&f.size, "size", 8<<30, "the all-reduce's fixed size the outputs are graded at, bytes (at least 1 GiB; each table needs its row)")
	fs.IntVar(&g.gpus, "gpus", 4, "GPUs per node")
	fs.BoolVar(&f.dryRun, "dry-run", false, "grade, print what the gate would hold and provision, and write nothing")
	pos, err := cli.Parse(fs, args)
	switch {
	case err != nil:
	case len(pos) != 1:
		err = cli.Usagef("want the directory of recorded outputs (with its %s), got %d arguments", recorded.ManifestFile, len(pos))
	case f.contracts == "" || f.module == "" || f.out == "":
		err = cli.Usagef("give --contracts, --module and --out")
	case (f.lifecycle == "") != (f.lifecycleKey.key == ""):
		err = cli.Usagef("give --lifecycle STORE and --lifecycle-key KEY together")
	case f.slurmConf != "" && !g.drain:
		err = cli.Usagef("--slurm-conf is for --drain")
	}
	if err != nil {
		return fail(stderr, "burnin grade", fs, err)
	}
	code, err := gradeDo(pos[0], f, g, stdout, stderr, lookupEnv)
	if err != nil {
		fmt.Fprintf(stderr, "sat burnin grade: %v\n", err)
		return cli.ExitTool
	}
	return code
}

func gradeDo(dir string, f burninFlags, g gradeFlags, stdout, stderr io.Writer, lookupEnv func(string) (string, bool)) (int, error) {
	inventory, _, err := burninNodes(f)
	if err != nil {
		return 0, err
	}
	if entries, err := os.ReadDir(f.out); err == nil && len(entries) > 0 {
		return 0, fmt.Errorf("evidence directory %s is not empty: choose a new --out", f.out)
	}
	ctx := context.Background()
	if g.drain { // before grading: the held nodes are drained through it
		if err := (&scheduler.Slurm{Conf: f.slurmConf}).Reachable(ctx); err != nil {
			return 0, fmt.Errorf("--drain: %w", err)
		}
	}
	fmt.Fprintf(stderr, "sat burnin: grading the burn-in recorded in %s (module %s)\n", dir, f.module)
	res, err := recorded.Grade(ctx, dir, inventory, burnin.Config{Size: f.size, GPUs: g.gpus})
	if err != nil {
		return 0, err
	}
	if f.baselines == "" {
		f.baselines = filepath.Clean(f.out) + ".baselines"
	}
	if f.report == "" {
		f.report = filepath.Clean(f.out) + ".report"
	}
	if f.reservation == "" {
		f.reservation = "seam-burnin-" + f.module
	}
	var rec *dryrun.Recorder
	written := f
	if f.dryRun {
		rec = dryrun.New(stdout, nil)
		scratch, err := os.MkdirTemp("", "seam-burnin-grade-")
		if err != nil {
			return 0, err
		}
		defer os.RemoveAll(scratch)
		written.out, written.baselines, written.report = filepath.Join(scratch, "out"), filepath.Join(scratch, "baselines"), filepath.Join(scratch, "report")
	}
	bundle, files, err := gradeWrite(written, res, lookupEnv)
	if err != nil {
		return 0, err
	}
	if err := gradeGate(ctx, f, g, rec, res, files, bundle, stdout, lookupEnv); err != nil {
		return 0, err
	}
	gradeSummary(stdout, f, res, bundle)
	if !res.Passed() {
		return cli.ExitFindings, nil
	}
	return cli.ExitOK, nil
}

// gradeWrite writes the evidence bundle, the baselines and the report
// where f says, and returns the bundle's id and the baseline files.
func gradeWrite(f burninFlags, res *burnin.Result, lookupEnv func(string) (string, bool)) (string, map[string]string, error) {
	opt := burnin.BundleOptions{Tool: "sat burnin " + version.Version, Baselines: f.baselines}
	if f.key.key != "" {
		s, _, err := evidenceSigner(f.key, lookupEnv)
		if err != nil {
			return "", nil, err
		}
		opt.Evidence = evidence.Options{Signer: s, By: currentUser()}
	}
	m, files, err := burnin.WriteBundle(f.out, res, opt)
	if err != nil {
		return "", nil, err
	}
	return m.Bundle, files, writeBurninReport(f.report, res)
}

// gradeGate provisions the nodes that passed and holds those that
// failed, in the lifecycle store (--lifecycle) and, with --drain, in
// Slurm; the nodes only implicated are neither. Without either there
// is nowhere to write, and it says so.
func gradeGate(ctx context.Context, f burninFlags, g gradeFlags, rec *dryrun.Recorder, res *burnin.Result, files map[string]string, bundle string,
	stdout io.Writer, lookupEnv func(string) (string, bool)) error {
	if f.lifecycle == "" && !g.drain {
		fmt.Fprintln(stdout, "no --lifecycle or --drain: no node is held or provisioned (the verdicts are in the evidence and the report)")
		return nil
	}
	var sched scheduler.Drainer
	if g.drain {
		sched = &scheduler.Slurm{Conf: f.slurmConf, Command: scheduler.Command{Dry: rec}}
	}
	gate, err := openGate(ctx, f, sched, rec, lookupEnv)
	if err != nil {
		return err
	}
	defer gate.close()
	if sched == nil {
		gate.ledger.Sched = nil // the holds are kept; facilityd applies them
	}
	var prov burnin.Provisioner
	if gate.store != nil {
		prov = gate.store
	}
	for _, a := range burnin.Gate(ctx, gate.ledger, prov, gate.auth, f.reservation, gate.by, res, files, bundle) {
		switch {
		case a.Err != "":
			fmt.Fprintf(stdout, "ledger: %s: %s, but: %s\n", a.Node, a.Action, a.Err)
		case a.Action == "held" || a.Action == "provisioned":
			fmt.Fprintf(stdout, "ledger: %s %s: %s\n", a.Node, a.Action, a.Reason)
		}
	}
	return nil
}

// gradeSummary prints the counts, where things went, and each node
// held back or to re-test with its reasons.
func gradeSummary(stdout io.Writer, f burninFlags, res *burnin.Result, bundle string) {
	held, retest := res.Held(), res.Retests()
	fmt.Fprintf(stdout, "%d nodes graded, %d passed, %d held back, %d to re-test", len(res.Nodes), len(res.Nodes)-len(held)-len(retest), len(held), len(retest))
	if f.dryRun {
		fmt.Fprintf(stdout, "\ndry run: nothing was written (evidence %s, baselines %s, report %s)\n", f.out, f.baselines, f.report)
	} else {
		fmt.Fprintf(stdout, "; evidence %s (bundle %s), baselines %s, report %s\n", f.out, bundle, f.baselines, f.report)
	}
	for _, n := range held {
		fmt.Fprintf(stdout, "held %s (serial %s):\n  %s\n", n.Name, n.Serial, strings.Join(n.Reasons(), "\n  "))
	}
	for _, n := range retest {
		fmt.Fprintf(stdout, "re-test %s (serial %s), not held:\n  %s\n", n.Name, n.Serial, strings.Join(n.Reasons(), "\n  "))
	}
}
