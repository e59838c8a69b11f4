package facilityd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/seamdc/seam/internal/alarm"
	"github.com/seamdc/seam/internal/cli"
	"github.com/seamdc/seam/internal/cueload"
	"github.com/seamdc/seam/internal/drain"
	"github.com/seamdc/seam/internal/topology/hostlist"
	"github.com/seamdc/seam/internal/version"
)

func init() {
	register("run", "run the daemon; --dry-run prints what it would do instead", runRun).
		WithExample("facilityd run --config deploy/facilityd.demo.json --dry-run --once --raise cooling_redundancy_lost@cooling_loop=l2")
}

const runHelp = `Runs facilityd: polls the site's devices through its binding, listens for
SNMP traps and Alertmanager's webhook, watches controller heartbeats and
Alertmanager's Watchdog, and drains the nodes of a domain whose severe
alarm rises (never kills a job). A cleared alarm releases nothing: a
person approves each release with facilityd approve.

--dry-run writes nothing anywhere: not the scheduler, the ledger, the
BMCs' caps, its state or its journal; it reads them all, and prints
each write it would make ("would run: scontrol …", "would PATCH …").
--once (with --dry-run) takes the alarms of --raise, runs one turn of
the caps and chemistry reconcilers, prints what it would do, and exits:
a drill.`

type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

func runRun(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("--config FILE [--dry-run [--once --raise TYPE@DOMAIN ...]]", flag.ContinueOnError)
	var config, logFormat string
	var dryRun, once, verbose bool
	var raises stringList
	fs.StringVar(&config, "config", "", "facilityd's configuration (JSON)")
	fs.BoolVar(&dryRun, "dry-run", false, "print the scheduler commands instead of running them")
	fs.BoolVar(&once, "once", false, "with --dry-run: take the --raise alarms, print what would be done, exit")
	fs.Var(&raises, "raise", "raise an alarm at start, TYPE@DOMAIN (cooling_redundancy_lost@cooling_loop=l2); repeatable")
	fs.BoolVar(&verbose, "v", false, "debug logs")
	fs.StringVar(&logFormat, "log-format", "text", "text or json")
	var kubeconfig string
	fs.StringVar(&kubeconfig, "kubeconfig", "", "with scheduler.kind kubernetes: this kubeconfig instead of the configuration's (or the pod's service account)")
	pos, err := cli.Parse(fs, args)
	switch {
	case err != nil:
	case len(pos) > 0:
		err = cli.Usagef("run takes no arguments, got %q", pos)
	case config == "":
		err = cli.Usagef("--config is needed")
	case once && !dryRun:
		err = cli.Usagef("--once is a drill: it needs --dry-run")
	}
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stderr, runHelp)
		}
		return program.Fail(stderr, "run", fs, err)
	}
	cfg, err := LoadConfig(config)
	if err != nil {
		return program.Fail(stderr, "run", fs, err)
	}
	if kubeconfig != "" {
		if cfg.Scheduler.Kind != "kubernetes" {
			return program.Fail(stderr, "run", fs, cli.Usagef("--kubeconfig: %s has scheduler.kind %q, not kubernetes", config, cfg.Scheduler.Kind))
		}
		abs, err := filepath.Abs(kubeconfig)
		if err != nil {
			return program.Fail(stderr, "run", fs, err)
		}
		cfg.Scheduler.Kubernetes.Kubeconfig = abs
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return run(ctx, cfg, fs, runFlags{dryRun: dryRun, once: once, raises: raises}, stdout, stderr, logger(stderr, verbose, logFormat))
}

type runFlags struct {
	dryRun, once bool
	raises       []string
}

func run(ctx context.Context, cfg *Config, fs *flag.FlagSet, f runFlags, stdout, stderr io.Writer, log *slog.Logger) int {
	dryRun, once, raises := f.dryRun, f.once, f.raises
	opts := Options{DryRun: dryRun, Out: stdout, Log: log}
	if cfg.Scheduler.Kind == "kubernetes" {
		kd, code, done := runKubernetesArgs(ctx, cfg, fs, dryRun, raises, stdout, stderr, log)
		if done {
			return code
		}
		opts.Scheduler = kd
	}
	d, err := New(cfg, opts)
	if err != nil {
		return program.Fail(stderr, "run", fs, err)
	}
	defer d.Close()
	obs, err := d.parseRaises(raises)
	if err != nil {
		return program.Fail(stderr, "run", fs, err)
	}
	if once {
		return d.drill(ctx, obs, stdout)
	}
	srv, ln, err := Listen(cfg, d.Handler())
	if err != nil {
		return program.Fail(stderr, "run", fs, err)
	}
	go func() { _ = srv.Serve(ln) }()
	d.Log.Info("serving", "address", ln.Addr().String(), "version", version.Version)
	go func() {
		for !d.Ready() && ctx.Err() == nil {
			time.Sleep(10 * time.Millisecond)
		}
		for _, o := range obs {
			d.Observe(o)
		}
	}()
	if err := d.Run(ctx); err != nil {
		_ = srv.Close()
		return program.Fail(stderr, "run", fs, err)
	}
	shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(shut)
	d.Log.Info("stopped")
	return cli.ExitOK
}

// parseRaises reads --raise TYPE@DOMAIN.
func (d *Daemon) parseRaises(raises []string) ([]alarm.Observation, error) {
	var out []alarm.Observation
	for _, r := range raises {
		t, dom, ok := strings.Cut(r, "@")
		if !ok {
			return nil, cli.Usagef("--raise %q: want TYPE@DOMAIN, such as cooling_redundancy_lost@cooling_loop=l2", r)
		}
		if _, known := alarm.Lookup(alarm.Type(t)); !known {
			return nil, cli.Usagef("--raise %q: %q is no alarm type of the vocabulary: did you mean %q?", r, t, nearestAlarmType(t))
		}
		dm, err := d.Index.Resolve(dom)
		if err != nil {
			return nil, cli.Usagef("--raise %q: %v", r, err)
		}
		out = append(out, alarm.Observation{Type: alarm.Type(t), Domain: dm, Active: true, Kind: alarm.FromFacilityd, Source: "raise", At: d.Clock.Now(),
			Detail: "raised with --raise"})
	}
	return out, nil
}

// nearestAlarmType is the alarm type of the vocabulary nearest to t: one
// whose name holds t ("leak": leak_detected), else the fewest edits.
func nearestAlarmType(t string) alarm.Type {
	var best alarm.Type
	bestD := math.MaxInt
	for _, d := range alarm.Defs {
		n := cueload.EditDistance(t, string(d.Type))
		if t != "" && strings.Contains(string(d.Type), t) {
			n = -1 // a part of the name beats any edit
		}
		if n < bestD {
			best, bestD = d.Type, n
		}
	}
	return best
}

// drill takes the raised alarms and prints what facilityd would do.
func (d *Daemon) drill(ctx context.Context, obs []alarm.Observation, w io.Writer) int {
	d.ctx.Store(&ctx)
	d.Ctl.Start(ctx, map[string]any{"drill": true})
	d.ready.Store(true)
	for _, o := range obs {
		fmt.Fprintf(w, "alarm %s for %s (%d nodes)\n", o.Type, o.Domain, len(d.Index.Nodes(o.Domain)))
		d.Observe(o)
	}
	// one turn of each reconciler: what they would write is printed too
	if d.caps != nil {
		d.caps.check(ctx)
	}
	if d.chem != nil {
		if err := d.chem.check(ctx); err != nil {
			fmt.Fprintf(w, "problem: water chemistry not read: %v\n", err)
		}
	}
	snap := d.Ctl.Snapshot()
	for _, h := range snap.Holds {
		fmt.Fprintf(w, "hold %s: %d nodes %s\n", h.Owner, len(h.Nodes), hostlist.Fold(h.Nodes))
	}
	for _, r := range snap.Refused {
		fmt.Fprintf(w, "refused %s: %s\n  to drain them: %s\n", r.Owner, r.Why, drain.ApproveDrainCommand(r.Owner))
	}
	for o, why := range snap.Suppressed {
		fmt.Fprintf(w, "suppressed %s: %s\n", o, why)
	}
	for _, p := range d.Problems() {
		fmt.Fprintf(w, "problem: %s\n", p)
	}
	if len(snap.Holds) > 0 {
		fmt.Fprintln(w, "a cleared alarm releases nothing: a person approves each release (facilityd approve --action release --owner OWNER --by NAME --key ~/.ssh/id_ed25519 --why WHY)")
	}
	return cli.ExitOK
}
