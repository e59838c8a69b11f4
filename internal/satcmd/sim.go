package satcmd

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/seamdc/seam/internal/cli"
	"github.com/seamdc/seam/internal/clock"
	"github.com/seamdc/seam/internal/diag"
	"github.com/seamdc/seam/internal/sim"
	"github.com/seamdc/seam/internal/sim/fleet"
)

func init() {
	register("sim", "run the simulated site and print its devices as a site binding", runSim).
		WithExample("sat sim contracts/examples/threemodule --out /tmp/site")
}

const simHelp = `Runs the simulated site of a contract directory: its load banks, floor
PDUs, UPSes, rack PDUs, CDUs and controls links as Modbus TCP servers and
SNMP agents on loopback, driven by the site's physics. Prints the site
binding of the running devices (write it to a directory and give it to
sat probe --site or sat run --site), writes it to --out with the SNMP
credentials beside it, and serves a control interface (faults, scripts,
manual steps) whose URL it prints to stderr. Runs until interrupted, or
for --for.

The sim config defaults to fixtures/sim/<site name>; SNMP credentials
come from SEAM_SNMP_COMMUNITY, SEAM_SNMP_AUTH and SEAM_SNMP_PRIV, or are
loopback defaults.`

type simFlags struct {
	config, profiles, fixtures string
	defect, script, out        string
	control                    string
	scale                      float64
	duration                   time.Duration
	listDefects, verbose       bool
	stepped                    bool
	fleet                      string
}

func runSim(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return runSimCtx(ctx, args, stdout, stderr, os.LookupEnv)
}

// runSimCtx is runSim with its context and environment, for tests.
func runSimCtx(ctx context.Context, args []string, stdout, stderr io.Writer, lookupEnv func(string) (string, bool)) int {
	fs := flag.NewFlagSet("SITE [--defect NAME] [--time-scale K] [--out DIR]", flag.ContinueOnError)
	var f simFlags
	fs.StringVar(&f.config, "config", "", "sim config directory (default fixtures/sim/<site name>)")
	fs.StringVar(&f.profiles, "profiles", "", "shipped device profiles (default fixtures/profiles)")
	fs.StringVar(&f.fixtures, "fixtures", "fixtures", "the fixtures directory the defaults are in")
	fs.StringVar(&f.defect, "defect", "", "run with a defect of the sim config (see --list-defects)")
	fs.StringVar(&f.script, "script", "", "play a fault script of the sim config from the start")
	fs.StringVar(&f.out, "out", "", "directory for binding.cue and the SNMP credentials (default: a new temporary directory)")
	fs.StringVar(&f.control, "control", "127.0.0.1:0", "address of the control interface")
	fs.Float64Var(&f.scale, "time-scale", 1, "sim seconds per wall second")
	fs.BoolVar(&f.stepped, "stepped", false, "site time moves only when a client advances it (POST /v1/advance; sat burnin run's facility step does)")
	fs.DurationVar(&f.duration, "for", 0, "stop after this long (wall time); 0: until interrupted")
	fs.BoolVar(&f.listDefects, "list-defects", false, "list the defects and the clauses they violate, and exit")
	fs.BoolVar(&f.verbose, "v", false, "log faults, device faults and refused writes to stderr")
	fs.StringVar(&f.fleet, "fleet", "", `the compute nodes' state at the start: idle (powered, waiting for work) or off (the load banks alone, as in a SAT before the IT is in service) (default: the sim config's fleet_start, else idle)`)
	pos, err := cli.Parse(fs, args)
	switch {
	case err != nil:
	case len(pos) != 1:
		err = cli.Usagef("want one contract directory, got %d arguments", len(pos))
	case f.scale <= 0:
		err = cli.Usagef("--time-scale must be positive, got %v", f.scale)
	case f.stepped && f.scale != 1:
		err = cli.Usagef("--stepped and --time-scale: a stepped site's time moves only when it is advanced; leave --time-scale out")
	case f.fleet != "" && f.fleet != string(fleet.Idle) && f.fleet != string(fleet.Off):
		err = cli.Usagef("--fleet must be idle or off, got %q", f.fleet)
	}
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stderr, simHelp)
		}
		return fail(stderr, "sim", fs, err)
	}
	level := slog.LevelWarn
	if f.verbose {
		level = slog.LevelInfo
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	o, diags, err := sim.Open(sim.Paths{Contracts: pos[0], Config: f.config, Profiles: f.profiles, Fixtures: f.fixtures},
		f.defect, sim.SecretsFrom(lookupEnv), time.Time{}, log)
	if err != nil || diags.Count(diag.Error) > 0 {
		if len(diags) > 0 {
			diag.Text(stderr, diags)
		}
		if err == nil {
			err = fmt.Errorf("%d error(s) in the inputs", diags.Count(diag.Error))
		}
		fmt.Fprintf(stderr, "sat sim: %v\n", err)
		return cli.ExitTool
	}
	if f.listDefects {
		listDefects(stdout, o)
		return cli.ExitOK
	}
	return serveSim(ctx, o, f, stdout, stderr, lookupEnv)
}

func listDefects(w io.Writer, o *sim.Opened) {
	cfg := o.Site.Config()
	for _, name := range cfg.DefectNames() {
		df := cfg.Defects[name]
		fmt.Fprintf(w, "%s\n  violates %s\n  %s\n", name, df.Violates, df.Description)
	}
}

func serveSim(ctx context.Context, o *sim.Opened, f simFlags, stdout, stderr io.Writer, lookupEnv func(string) (string, bool)) int {
	out, err := outDir(f.out)
	if err == nil {
		err = startFleet(o, f.fleet)
	}
	if err == nil {
		err = o.Start()
	}
	if err != nil {
		fmt.Fprintf(stderr, "sat sim: %v\n", err)
		return cli.ExitTool
	}
	defer o.Close()
	cs, err := o.ServeControl(f.control)
	if err != nil {
		fmt.Fprintf(stderr, "sat sim: %v\n", err)
		return cli.ExitTool
	}
	defer cs.Close()
	err = o.WriteBinding(out, cs.URL(), f.scale, f.stepped, lookupEnv)
	if err != nil {
		fmt.Fprintf(stderr, "sat sim: %v\n", err)
		return cli.ExitTool
	}
	if f.script != "" {
		if err := o.Site.Play(f.script); err != nil {
			fmt.Fprintf(stderr, "sat sim: %v\n", err)
			return cli.ExitTool
		}
	}
	fmt.Fprintf(stdout, "sat sim: %d devices serving on loopback; binding in %s; control interface %s\n"+
		"  read them: sat probe --site %s\n  run a plan: sat run PLAN --site %s --unsigned --out EVIDENCE\n",
		len(o.Devices()), filepath.Join(out, "binding.cue"), cs.URL(), out, out)
	if o.Site.HasFleet() {
		st, _ := o.NodeStatus()
		state := "?"
		if len(st) > 0 {
			state = string(st[0].State)
		}
		fmt.Fprintf(stdout, "  the fleet: %d nodes %s (--fleet); %d BMCs in bmcs.cue, their accounts in %s\n",
			len(st), state, len(o.BMCs()), filepath.Join(out, "bmc-secrets.json"))
	}
	if f.duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, f.duration)
		defer cancel()
	}
	if f.stepped {
		<-ctx.Done()
	} else if err := o.Site.Run(ctx, clock.Real{}, f.scale); err != nil {
		fmt.Fprintf(stderr, "sat sim: %v\n", err)
		return cli.ExitTool
	}
	fmt.Fprintf(stderr, "sat sim: stopped after %s of sim time\n", o.Site.Time().Round(time.Millisecond))
	return cli.ExitOK
}

// startFleet puts the compute nodes in their starting state: the flag's,
// else the sim config's fleet_start, else idle.
func startFleet(o *sim.Opened, flagged string) error {
	if !o.Site.HasFleet() {
		return nil
	}
	state := cmp.Or(flagged, o.Site.Config().FleetStart, string(fleet.Idle))
	_, err := o.SetNodes(sim.NodeRequest{All: true, State: fleet.State(state)})
	return err
}

func outDir(dir string) (string, error) {
	if dir == "" {
		return os.MkdirTemp("", "seam-sim-")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	return filepath.Abs(dir)
}
