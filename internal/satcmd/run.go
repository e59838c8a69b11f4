package satcmd

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/seamdc/seam/internal/binding"
	"github.com/seamdc/seam/internal/cli"
	"github.com/seamdc/seam/internal/clock"
	"github.com/seamdc/seam/internal/diag"
	"github.com/seamdc/seam/internal/evidence"
	"github.com/seamdc/seam/internal/plan"
	"github.com/seamdc/seam/internal/probe"
	"github.com/seamdc/seam/internal/results"
	"github.com/seamdc/seam/internal/runner"
	"github.com/seamdc/seam/internal/sign"
	"github.com/seamdc/seam/internal/sim"
)

func init() {
	register("run", "run a test plan against a site or the simulated site, keeping evidence", runRun)
}

const runHelp = `Runs a compiled plan (contractc compile) against a real site through its
binding (--site), or against the simulated site (--sim), and writes a
tamper-evident evidence bundle to --out: journal.jsonl (hash-chained),
samples.csv, results.json, the plan, the binding, run.log and
manifest.json (optionally signed with --sign-key).

Before anything is energised sat refuses a stale plan, preflights every
channel and load bank, and needs explicit risk acceptance:
--accept-risk=energize, or a yes typed at a terminal (--sim implies it).
Interlocks abort the run on any safety channel out of limits or silent;
the first Ctrl-C zeroes every load bank gracefully (confirmed by
read-back), the second writes 0 at once and exits.

Resume an aborted or killed run with --resume DIR: it continues after the
last completed case, with the journal's chain intact.

Exit codes: 0 all passed, 2 a test failed, 3 aborted, 1 the tool failed
(including ERROR cases: a harness or device problem, not a product one).`

type runFlags struct {
	site, out, resume, contracts, fixtures string
	simConfig                              string
	defect, accept, operator, signKey      string
	control, passEnv                       string
	simulate, verbose                      bool
	scale                                  float64
}

func runRun(args []string, stdout, stderr io.Writer) int {
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	ctl := &control{interrupt: make(chan struct{}), kill: make(chan struct{})}
	go func() {
		<-sigs
		close(ctl.interrupt)
		<-sigs
		close(ctl.kill)
		<-ctl.killed
		os.Exit(cli.ExitAborted)
	}()
	return runCtx(ctx, args, stdout, stderr, os.Stdin, os.LookupEnv, ctl)
}

// control carries the interrupts from the signal handler (or a test).
type control struct {
	interrupt, kill chan struct{}
	killed          chan struct{}
}

func parseRun(args []string) (runFlags, string, *flag.FlagSet, error) {
	fs := flag.NewFlagSet("PLAN (--site BINDING | --sim [--defect NAME]) --out DIR | --resume DIR", flag.ContinueOnError)
	var f runFlags
	fs.StringVar(&f.site, "site", "", "the site binding directory of a real site")
	fs.BoolVar(&f.simulate, "sim", false, "run against the simulated site, in process (implies risk acceptance)")
	fs.StringVar(&f.defect, "defect", "", "with --sim: a defect of the sim config that makes a module break its contract")
	fs.Float64Var(&f.scale, "time-scale", 0, "with --sim: site seconds per wall second (default 1; the evidence records it)")
	fs.StringVar(&f.control, "sim-control", "", "with --site: the control URL of a simulator (sat sim), which performs manual and fault steps")
	fs.StringVar(&f.out, "out", "", "the evidence directory (new or empty)")
	fs.StringVar(&f.resume, "resume", "", "continue the run in this evidence directory after its last completed case")
	fs.StringVar(&f.contracts, "contracts", "", "the contract directory the plan was compiled from (default: the binding's, or contracts/examples/<site> with --sim)")
	fs.StringVar(&f.fixtures, "fixtures", "fixtures", "with --sim: the fixtures directory (sim configs and profiles)")
	fs.StringVar(&f.simConfig, "sim-config", "", "with --sim: the sim config directory (default FIXTURES/sim/<site>)")
	fs.StringVar(&f.accept, "accept-risk", "", "energize: accept the risk of energising without an interactive yes")
	fs.StringVar(&f.operator, "operator", "", "who operates the run (default $USER)")
	fs.StringVar(&f.signKey, "sign-key", "", "sign the manifest with this SSH private key")
	fs.StringVar(&f.passEnv, "passphrase-env", "", "environment variable holding the signing key's passphrase")
	fs.BoolVar(&f.verbose, "v", false, "log to stderr at info level")
	pos, err := cli.Parse(fs, args)
	if err != nil {
		return f, "", fs, err
	}
	planPath := ""
	switch {
	case len(pos) == 1:
		planPath = pos[0]
	case len(pos) == 0 && f.resume != "":
		planPath = filepath.Join(f.resume, runner.PlanFile)
	default:
		return f, "", fs, cli.Usagef("want one plan file, got %d arguments", len(pos))
	}
	switch {
	case f.simulate == (f.site != ""):
		err = cli.Usagef("give exactly one of --site BINDING and --sim")
	case (f.out == "") == (f.resume == ""):
		err = cli.Usagef("give exactly one of --out DIR and --resume DIR")
	case f.accept != "" && f.accept != "energize":
		err = cli.Usagef("--accept-risk takes one value, energize (got %q)", f.accept)
	case !f.simulate && (f.defect != "" || f.simConfig != ""):
		err = cli.Usagef("--defect and --sim-config need --sim")
	case f.scale < 0:
		err = cli.Usagef("--time-scale must be positive")
	case f.simulate && f.control != "":
		err = cli.Usagef("--sim-control is for a simulator in another process, with --site")
	}
	if f.scale == 0 {
		f.scale = 1
	}
	return f, planPath, fs, err
}

// runCtx is sat run with its inputs, for tests.
func runCtx(ctx context.Context, args []string, stdout, stderr io.Writer, stdin io.Reader, lookupEnv func(string) (string, bool), ctl *control) int {
	f, planPath, fs, err := parseRun(args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stderr, runHelp)
		}
		return fail(stderr, "run", fs, err)
	}
	log := stderrLog(stderr, f.verbose)
	raw, err := os.ReadFile(planPath)
	if err != nil {
		return fail(stderr, "run", fs, err)
	}
	p, err := plan.Decode(raw)
	if err != nil {
		return fail(stderr, "run", fs, fmt.Errorf("%s: %w", planPath, err))
	}
	dir := f.out
	if f.resume != "" {
		dir = f.resume
	}
	env, err := openSite(ctx, f, p, dir, lookupEnv, log)
	if err != nil {
		return fail(stderr, "run", fs, err)
	}
	defer env.close()
	contractsDigest, err := runner.CheckPlan(p, raw, env.contracts)
	if err != nil {
		return fail(stderr, "run", fs, fmt.Errorf("%s: %w", planPath, err))
	}
	var signer ssh.Signer
	if f.signKey != "" {
		var pass []byte
		if f.passEnv != "" {
			v, ok := lookupEnv(f.passEnv)
			if !ok {
				return fail(stderr, "run", fs, fmt.Errorf("--passphrase-env: %s is not set", f.passEnv))
			}
			pass = []byte(v)
		}
		if signer, err = sign.LoadSigner(f.signKey, pass); err != nil {
			return fail(stderr, "run", fs, err)
		}
	}
	cfg := runner.Config{Plan: p, PlanBytes: raw, Site: env.site, Dir: dir, Resume: f.resume != "", Clock: env.clk, Log: log,
		Operator: operator(f, env, stdin, stderr, lookupEnv), Progress: stderr, Terminal: isTerminal(stderr), Signer: signer,
		ContractsDigest: contractsDigest, Shortened: shortened(p, env.site.TimeScale)}
	r, err := runner.New(cfg)
	if err != nil {
		return fail(stderr, "run", fs, err)
	}
	go func() {
		select {
		case <-ctl.interrupt:
			fmt.Fprintln(stderr, "\nsat run: interrupted: zeroing every load bank (interrupt again to write 0 at once and exit)")
			r.Interrupt()
		case <-ctx.Done():
			return
		}
		select {
		case <-ctl.kill:
			r.Kill()
			if ctl.killed != nil {
				close(ctl.killed)
			}
		case <-ctx.Done():
		}
	}()
	res, err := r.Run(ctx)
	env.report(log)
	if err != nil {
		fmt.Fprintf(stderr, "sat run: %v\n", err)
		if res == nil || errors.Is(err, runner.ErrPreflight) {
			return cli.ExitTool
		}
	}
	summarize(stdout, res, dir)
	return runner.ExitCode(res)
}

func stderrLog(w io.Writer, verbose bool) *slog.Logger {
	level := slog.LevelWarn
	if verbose {
		level = slog.LevelInfo
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}

// shortened says what makes this run shorter than the real test.
func shortened(p *plan.Plan, scale float64) string {
	var parts []string
	if h := p.Header.Options.MaxHoldS; h > 0 {
		parts = append(parts, fmt.Sprintf("holds and square-wave runs capped at %g s (contractc compile --max-hold)", h))
	}
	if scale != 1 {
		parts = append(parts, fmt.Sprintf("site time ran %g× wall time (the simulator's time scale)", scale))
	}
	return strings.Join(parts, "; ")
}

func operator(f runFlags, env *siteEnv, stdin io.Reader, stderr io.Writer, lookupEnv func(string) (string, bool)) runner.Operator {
	if env.site.Kind == runner.Simulated {
		return runner.Simulator{Clock: env.clk}
	}
	name := f.operator
	if name == "" {
		name, _ = lookupEnv("USER")
	}
	if name == "" {
		name = "unknown operator"
	}
	if file, ok := stdin.(*os.File); ok && isTerminal(file) {
		return &runner.Terminal{Name: name, In: stdin, Out: stderr, Clock: env.clk, Accepted: f.accept == "energize"}
	}
	return runner.Unattended{Name: name, Accepted: f.accept == "energize"}
}

// summarize prints where the evidence is and how the run went.
func summarize(w io.Writer, res *results.Results, dir string) {
	c := res.Counts
	fmt.Fprintf(w, "%s: %d passed, %d failed, %d errors, %d aborted, %d skipped\n", res.Outcome, c.Pass, c.Fail, c.Error, c.Aborted, c.Skipped)
	for _, cs := range res.Cases {
		if cs.Outcome == "PASS" {
			continue
		}
		fmt.Fprintf(w, "  %-7s %s", cs.Outcome, cs.ID)
		if cs.Reason != "" {
			fmt.Fprintf(w, ": %s", firstLine(cs.Reason))
		}
		fmt.Fprintln(w)
		for _, k := range cs.Checks {
			if k.Outcome != "PASS" {
				fmt.Fprintf(w, "          %s %s: %s\n", k.Outcome, k.Check, k.Detail)
			}
		}
	}
	if res.Abort != nil {
		fmt.Fprintf(w, "aborted (%s): %s\n", res.Abort.Cause, res.Abort.Reason)
	}
	fmt.Fprintf(w, "evidence: %s\n", dir)
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}

// siteEnv is an opened site: devices, clock, what to close.
type siteEnv struct {
	site      *runner.Site
	clk       clock.Clock
	contracts string
	closers   []func()
	sim       *sim.Opened
	simClock  *runner.SimClock
}

func (e *siteEnv) close() {
	for i := len(e.closers) - 1; i >= 0; i-- {
		e.closers[i]()
	}
}

// simStarted, when set (by tests), sees the in-process simulator of the
// run into dir once its devices serve.
var simStarted atomic.Pointer[func(dir string, o *sim.Opened)]

// simLead is how far the run's clock may run ahead of the simulation
// between physics steps.
const simLead = 50 * time.Millisecond

// report logs how often the run's clock waited for the simulator.
func (e *siteEnv) report(log *slog.Logger) {
	if e.simClock != nil && e.simClock.Held() > 0 {
		log.Info("the run's clock waited for the simulator", "times", e.simClock.Held(), "time_scale", e.site.TimeScale)
	}
}

func openSite(ctx context.Context, f runFlags, p *plan.Plan, dir string, lookupEnv func(string) (string, bool), log *slog.Logger) (*siteEnv, error) {
	if f.simulate {
		return openSim(ctx, f, p, dir, lookupEnv, log)
	}
	return openBinding(ctx, f, p, lookupEnv, log)
}

// openSim starts the simulated site in process, at the time scale, and
// opens its devices through the binding it describes.
func openSim(ctx context.Context, f runFlags, p *plan.Plan, dir string, lookupEnv func(string) (string, bool), log *slog.Logger) (*siteEnv, error) {
	contracts := f.contracts
	if contracts == "" {
		contracts = filepath.Join("contracts", "examples", p.Header.Site)
	}
	epoch := time.Now()
	if f.resume != "" {
		if last, err := lastRecordTime(dir); err == nil && !last.Before(epoch) {
			epoch = last.Add(time.Second) // site time never goes back within a bundle
		}
	}
	secrets := sim.SecretsFrom(lookupEnv)
	o, diags, err := sim.Open(sim.Paths{Contracts: contracts, Fixtures: f.fixtures, Config: f.simConfig}, f.defect, secrets, epoch, log)
	if err == nil && diags.Count(diag.Error) > 0 {
		err = fmt.Errorf("the simulator's inputs have %d error(s): %s", diags.Count(diag.Error), diags.Sorted()[0].Message)
	}
	if err != nil {
		return nil, fmt.Errorf("simulated site: %w", err)
	}
	env := &siteEnv{contracts: o.Paths.Contracts, sim: o}
	if err := o.Start(); err != nil {
		return nil, fmt.Errorf("simulated site: %w", err)
	}
	if hook := simStarted.Load(); hook != nil {
		(*hook)(dir, o)
	}
	env.closers = append(env.closers, o.Close)
	// the simulator steps at the time scale in small steps of wall time;
	// the run's site time is the simulation's: it waits for the
	// simulator when it lags
	drive := runner.NewScaled(o.Site.Now(), f.scale)
	simCtx, stopSim := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = o.Site.Run(simCtx, drive, 1) }()
	clk := runner.NewSimClock(o.Site, f.scale, simLead)
	env.simClock = clk
	env.closers = append(env.closers, func() { stopSim(); <-done })
	env.clk = clk
	b := o.Binding(o.ProfileDirs, o.Paths.Contracts, sim.EnvRefs)
	simLookup := func(k string) (string, bool) {
		switch k {
		case sim.EnvCommunity:
			return secrets.Community, true
		case sim.EnvAuth:
			return secrets.AuthPass, true
		case sim.EnvPriv:
			return secrets.PrivPass, true
		}
		return lookupEnv(k)
	}
	site, err := openDevices(p, b, clk, simLookup, log, env)
	if err != nil {
		env.close()
		return nil, err
	}
	site.Kind, site.Faults, site.TimeScale, site.Defect = runner.Simulated, simFaults{o.Site}, f.scale, f.defect
	site.BindingText = binding.Marshal(b, "binding")
	site.BindingDigest = runner.Digest(site.BindingText)
	env.site = site
	return env, nil
}

// openBinding opens a real site's devices through its binding.
func openBinding(ctx context.Context, f runFlags, p *plan.Plan, lookupEnv func(string) (string, bool), log *slog.Logger) (*siteEnv, error) {
	b, diags, err := binding.Load(f.site)
	if err != nil {
		return nil, err
	}
	if n := diags.Count(diag.Error); n > 0 {
		first := diags.Sorted()[0]
		return nil, fmt.Errorf("binding %s has %d error(s); the first, at %s: %s (run sat probe --site %s)", f.site, n, first.Pos, first.Message, f.site)
	}
	env := &siteEnv{contracts: f.contracts, clk: clock.Real{}}
	if env.contracts == "" {
		env.contracts = b.Contracts
	}
	if env.contracts == "" {
		return nil, fmt.Errorf("the binding %s names no contracts: pass --contracts DIR, so that sat can check the plan against them", f.site)
	}
	if f.scale != 1 {
		if f.control == "" {
			return nil, errors.New("--time-scale needs --sim, or --sim-control with a simulator running at that scale")
		}
		env.clk = runner.NewScaled(time.Now(), f.scale)
	}
	site, err := openDevices(p, b, env.clk, lookupEnv, log, env)
	if err != nil {
		return nil, err
	}
	site.BindingText, err = bindingSource(b.Dir)
	if err != nil {
		env.close()
		return nil, err
	}
	site.BindingDigest = runner.Digest(site.BindingText)
	site.TimeScale = f.scale
	if f.control != "" {
		client := &sim.Client{URL: strings.TrimRight(f.control, "/")}
		st, err := client.Status(ctx)
		if err != nil {
			env.close()
			return nil, err
		}
		site.Kind, site.Faults = runner.Simulated, clientFaults{client}
		if st.Defect != nil {
			site.Defect = st.Defect.Name
		}
	}
	env.site = site
	return env, nil
}

func openDevices(p *plan.Plan, b *binding.Binding, clk clock.Clock, lookupEnv func(string) (string, bool), log *slog.Logger, env *siteEnv) (*runner.Site, error) {
	devs, err := probe.OpenSite(b, probe.Options{Clock: clk, Logger: log, LookupEnv: lookupEnv})
	if err != nil {
		return nil, err
	}
	env.closers = append(env.closers, func() { devs.Close() })
	byName := map[string]probe.Device{}
	for _, d := range devs.Devices {
		byName[d.Name()] = d
	}
	return runner.NewSite(p, b, byName, clk, log)
}

// bindingSource is the binding's CUE files, concatenated: credentials in
// a binding are references (binding.Load refuses inline secrets), so it
// is the binding without secrets.
func bindingSource(dir string) ([]byte, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".cue") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	var out []byte
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			return nil, err
		}
		out = append(out, fmt.Sprintf("// ---- %s\n", n)...)
		out = append(out, b...)
	}
	return out, nil
}

// lastRecordTime is the time of the last complete journal record.
func lastRecordTime(dir string) (time.Time, error) {
	f, err := os.Open(filepath.Join(dir, evidence.JournalFile))
	if err != nil {
		return time.Time{}, err
	}
	defer f.Close()
	var last time.Time
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var r evidence.Record
		if json.Unmarshal(sc.Bytes(), &r) == nil && r.Time.After(last) {
			last = r.Time
		}
	}
	return last, sc.Err()
}

type simFaults struct{ s *sim.Site }

func (f simFaults) Inject(_ context.Context, kind, target string) error {
	return f.s.Inject(sim.Fault{Kind: kind, Target: target})
}

func (f simFaults) Clear(_ context.Context, kind, target string) error {
	return f.s.Clear(kind, target)
}

type clientFaults struct{ c *sim.Client }

func (f clientFaults) Inject(ctx context.Context, kind, target string) error {
	return f.c.Inject(ctx, sim.Fault{Kind: kind, Target: target})
}

func (f clientFaults) Clear(ctx context.Context, kind, target string) error {
	return f.c.Clear(ctx, kind, target)
}
