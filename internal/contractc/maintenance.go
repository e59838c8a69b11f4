package contractc

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"github.com/seamdc/seam/internal/cli"
	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/dryrun"
	"github.com/seamdc/seam/internal/maintenance"
	"github.com/seamdc/seam/internal/scheduler"
)

func init() {
	register("maintenance", "planned maintenance: what each window stops, its Slurm maintenance reservation, the drain-ahead plan; maintenance apply", runMaintenance).
		WithExample("contractc maintenance contracts/examples/threemodule --tz UTC").
		Sub("apply", "set the windows as Slurm maintenance reservations and drain ahead of them (--dry-run: print the scontrol commands)",
			"contractc maintenance apply contracts/examples/threemodule --slurm-conf /etc/slurm/slurm.conf --dry-run")
}

const maintenanceExits = `Exit codes: 0 planned (apply: made or unchanged); 1 the tool failed: bad
arguments, a window that cannot be planned, Slurm refused or read back
otherwise; 2 a contract with errors, or (apply) running jobs that cross a
window: checkpoint and requeue them.`

func runMaintenance(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "apply" {
		return runMaintenanceApply(args[1:], stdout, stderr)
	}
	const name = "maintenance"
	fs := flag.NewFlagSet("DIR [--format text|json|slurm] [--tz ZONE] [--inventory FILE…]", flag.ContinueOnError)
	format := fs.String("format", "text", "output format: text, json, or slurm (the scontrol commands, one a line)")
	tz := tzFlag(fs)
	inv := inventoryFlag(fs)
	pos, err := cli.Parse(fs, args)
	switch {
	case err != nil:
	case len(pos) != 1:
		err = cli.Usagef("want one contract directory, got %d arguments", len(pos))
	case *format != "text" && *format != "json" && *format != "slurm":
		err = cli.Usagef("--format: unknown format %q (want text, json or slurm)", *format)
	}
	var loc *time.Location
	if err == nil {
		loc, err = location(*tz)
	}
	if err != nil {
		return failMaintenance(stderr, name, fs, err)
	}
	p, err := maintenancePlan(pos[0], inv.paths(), stderr)
	if err != nil {
		return failLoad(stderr, name, fs, err)
	}
	switch *format {
	case "json":
		err = writeJSON(stdout, p)
	case "slurm":
		err = maintenance.Commands(stdout, p, loc)
	default:
		err = maintenance.Text(stdout, p, loc)
	}
	if err != nil {
		return fail(stderr, name, fs, err)
	}
	return cli.ExitOK
}

func runMaintenanceApply(args []string, stdout, stderr io.Writer) int {
	const name = "maintenance apply"
	fs := flag.NewFlagSet("DIR (--slurm-conf PATH | --slurm) [--dry-run] [--tz ZONE] [--format text|json] [--inventory FILE…]", flag.ContinueOnError)
	slurmConf := fs.String("slurm-conf", "", "slurm.conf of the cluster (SLURM_CONF)")
	slurm := fs.Bool("slurm", false, "the Slurm that scontrol reaches (SLURM_CONF from the environment)")
	dryRun := fs.Bool("dry-run", false, "read Slurm and say what would change; change nothing")
	verbose := fs.Bool("v", false, "log each step")
	tz := tzFlag(fs)
	format := formatFlag(fs)
	inv := inventoryFlag(fs)
	pos, err := cli.Parse(fs, args)
	switch {
	case err != nil:
	case len(pos) != 1:
		err = cli.Usagef("want one contract directory, got %d arguments", len(pos))
	case !*slurm && *slurmConf == "":
		err = cli.Usagef("apply to which Slurm? give --slurm-conf PATH, or --slurm for the one scontrol reaches")
	default:
		err = checkFormat(*format)
	}
	var loc *time.Location
	if err == nil {
		loc, err = location(*tz)
	}
	if err != nil {
		return failMaintenance(stderr, name, fs, err)
	}
	p, err := maintenancePlan(pos[0], inv.paths(), stderr)
	if err != nil {
		return failLoad(stderr, name, fs, err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	log := logger(stderr, *verbose)
	s := &scheduler.Slurm{Conf: *slurmConf, Command: scheduler.Command{Log: log}}
	if *dryRun { // Apply reads Slurm and runs nothing; the client records anything that would
		s.Dry = dryrun.New(stdout, nil)
	}
	if err := s.Reachable(ctx); err != nil { // a dry run reads Slurm too
		return fail(stderr, name, fs, fmt.Errorf("%w; without Slurm, contractc maintenance %s --format slurm prints the scontrol commands", err, pos[0]))
	}
	res, err := maintenance.Apply(ctx, s, p, maintenance.ApplyOptions{Location: loc, DryRun: *dryRun, Log: log})
	if err != nil {
		return fail(stderr, name, fs, err)
	}
	if *format == "json" {
		err = writeJSON(stdout, res)
	} else {
		err = maintenance.ResultText(stdout, res)
	}
	if err != nil {
		return fail(stderr, name, fs, err)
	}
	if res.Crossing() > 0 {
		return cli.ExitFindings
	}
	return cli.ExitOK
}

func failMaintenance(stderr io.Writer, name string, fs *flag.FlagSet, err error) int {
	if errors.Is(err, flag.ErrHelp) {
		printFlags(stderr, name, fs)
		fmt.Fprintln(stderr, maintenanceExits)
		return cli.ExitOK
	}
	return fail(stderr, name, fs, err)
}

func tzFlag(fs *flag.FlagSet) *string {
	return fs.String("tz", "Local", "the Slurm controller's time zone, in which scontrol reads and writes times (an IANA name such as UTC or Europe/Berlin)")
}

func location(tz string) (*time.Location, error) {
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return nil, cli.Usagef("--tz %q: %v: give an IANA zone name such as UTC or Europe/Berlin", tz, err)
	}
	return loc, nil
}

// maintenancePlan loads the contract and plans its maintenance windows.
func maintenancePlan(dir string, inventories []string, stderr io.Writer) (maintenance.Plan, error) {
	_, g, op, err := loadOperate(dir, inventories, stderr)
	if err != nil {
		return maintenance.Plan{}, err
	}
	var windows []maintenance.Window
	for _, w := range op.Maintenance {
		windows = append(windows, window(w))
	}
	return maintenance.Build(g, windows)
}

func window(w *contract.Window) maintenance.Window {
	return maintenance.Window{ID: w.ID, Target: w.Target.To, Description: w.Description, Start: w.Start,
		Duration: dur(w.Duration), DrainAhead: dur(w.DrainAhead), Where: w.Pos.String()}
}
