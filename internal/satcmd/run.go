package satcmd

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/seamdc/seam/internal/cli"
	"github.com/seamdc/seam/internal/evidence"
	"github.com/seamdc/seam/internal/grade"
	"github.com/seamdc/seam/internal/plan"
	"github.com/seamdc/seam/internal/results"
	"github.com/seamdc/seam/internal/runner"
	"github.com/seamdc/seam/internal/tsa"
)

func init() {
	register("run", "run a test plan against a site or the simulated site, keeping evidence (--lifecycle: offer the transition it allows)", runWithLifecycle).
		WithExample("sat run sat-ma.json --sim --time-scale max --out out/run1")
}

const runHelp = `Runs a compiled plan (contractc compile) against a real site through its
binding (--site), or against the simulated site (--sim), and writes a
tamper-evident evidence bundle to --out: journal.jsonl (hash-chained),
samples.csv, results.json, the plan, the binding, run.log and
manifest.json.

A run on a site is signed: --sign-key KEY (an OpenSSH private key file,
or KEY.pub whose private key ssh-agent holds, a hardware key included)
seals the journal at every case end, at the run's end and at least
every minute, and signs the manifest; --unsigned is for a dry run, whose
bundle only shows it was not damaged by accident. A simulated run is
unsigned unless --sign-key is given.

Before anything is energised sat refuses a stale plan (checked by
hashing the contract files it names, without compiling), preflights every
channel and load bank, and needs explicit risk acceptance:
--accept-risk=energize, or a yes typed at a terminal (--sim implies it).
Interlocks abort the run on any safety channel out of limits or silent;
at a terminal, p and Enter pauses: the case stops, its load goes to 0
kW, and r and Enter runs it again from its start; the first Ctrl-C
zeroes every load bank gracefully (confirmed by
read-back), the second writes 0 at once and exits.

Resume an aborted or killed run with --resume DIR: the bundle is
verified first (a damaged, finished or foreign bundle is refused, with
the reason), cut back to its last (signed) checkpoint, and the run
continues after the last completed case, with the journal's chain
intact. A signed bundle resumes signed, an unsigned one unsigned.

Choose what a session runs: --case ID (repeatable) runs only those
cases, --from ID the cases from there on, and --until ID ends the
session after that case: a shift's end. A session that leaves cases not
run ends in a hand-over (load zeroed, exit code from the cases it ran)
and prints the next shift's --resume command. With --resume, --case runs
a completed case again: a new attempt, kept beside the first; the last
counts.

Retry a case after the run finished with --retry DIR --case ID: the
bundle is verified, the case runs again on the same site with the same
plan, and the attempt is added as an amendment signed with --sign-key.
Every attempt is kept and re-graded; the last counts, and sat verify and
sat report show them all. A retry killed half-way was never signed: the
next --retry cuts it back.

Follow the run in a browser with --ui 127.0.0.1:PORT: sat prints the
addresses to open (an operator's, which can pause, resume and abort
behind a confirmation, and a read-only one); --ui-token-file FILE gives
the tokens instead (lines "operator NAME TOKEN", "viewer NAME TOKEN"),
and is needed to serve beyond loopback.

Exit codes: 0 all passed, 2 a test failed, 3 aborted, 1 the tool failed
(including ERROR cases: a harness or device problem, not a product one).`

type runFlags struct {
	site, out, resume, contracts, fixtures string
	retry, from, until                     string
	cases                                  caseList
	simConfig                              string
	defect, accept, operator               string
	control                                string
	key                                    keyFlags
	simulate, verbose, unsigned            bool
	logFormat                              string
	scale                                  scaleFlag
	ui, uiTokens                           string // --ui ADDR, --ui-token-file FILE (ui.go)
	stampURL, stampRoots                   string // --time-stamp-url, --time-stamp-roots
}

// scaleFlag is --time-scale: site seconds per wall second, or "max"
// (as fast as the simulation allows, in process only). Unset is 0.
type scaleFlag struct {
	set bool
	k   float64 // 0 with set: max
}

func (s *scaleFlag) String() string {
	switch {
	case !s.set:
		return ""
	case s.k == 0:
		return "max"
	}
	return strconv.FormatFloat(s.k, 'g', -1, 64)
}

func (s *scaleFlag) Set(v string) error {
	if v == "max" {
		s.set, s.k = true, 0
		return nil
	}
	k, err := strconv.ParseFloat(v, 64)
	if err != nil || k <= 0 || math.IsInf(k, 0) {
		return fmt.Errorf("want a positive number of site seconds per wall second, or max (got %q)", v)
	}
	s.set, s.k = true, k
	return nil
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
	fs := flag.NewFlagSet("PLAN (--site BINDING (--sign-key KEY | --unsigned) | --sim [--defect NAME]) (--out DIR | --resume DIR) [--case ID… | --from ID] [--until ID] | --retry DIR --case ID --sign-key KEY", flag.ContinueOnError)
	var f runFlags
	fs.StringVar(&f.site, "site", "", "the site binding directory of a real site")
	fs.BoolVar(&f.simulate, "sim", false, "run against the simulated site, in process (implies risk acceptance)")
	fs.StringVar(&f.defect, "defect", "", "with --sim: a defect of the sim config that makes a module break its contract")
	fs.Var(&f.scale, "time-scale", "site seconds per wall second, at most (default 1; max: as fast as the machine allows, with --sim only); with --site, the scale of the simulator the binding names, if given")
	fs.StringVar(&f.control, "sim-control", "", "with --site: the control URL of a simulator (sat sim), which performs manual and fault steps")
	fs.StringVar(&f.out, "out", "", "the evidence directory (new or empty)")
	fs.StringVar(&f.resume, "resume", "", "continue the run in this evidence directory after its last completed case")
	fs.Var(&f.cases, "case", "run only this case (repeat the flag, or separate ids with commas); with --resume a completed case runs again, a new attempt that counts")
	fs.StringVar(&f.from, "from", "", "run the cases from this one on that have not completed")
	fs.StringVar(&f.until, "until", "", "end the session after this case, a shift's end: load zeroed, the bundle left for the next shift's --resume")
	fs.StringVar(&f.retry, "retry", "", "run the --case again in this finished evidence directory, as an amendment signed with --sign-key")
	fs.StringVar(&f.contracts, "contracts", "", "the contract directory the plan was compiled from (default: the binding's, or contracts/examples/<site> with --sim)")
	fs.StringVar(&f.fixtures, "fixtures", "fixtures", "with --sim: the fixtures directory (sim configs and profiles)")
	fs.StringVar(&f.simConfig, "sim-config", "", "with --sim: the sim config directory (default FIXTURES/sim/<site>)")
	fs.StringVar(&f.accept, "accept-risk", "", "energize: accept the risk of energising without an interactive yes")
	fs.StringVar(&f.operator, "operator", "", "who operates the run (default $USER)")
	fs.StringVar(&f.key.key, "sign-key", "", "sign the evidence with this SSH key: a private key file, or KEY.pub held by ssh-agent (required on a site, unless --unsigned)")
	fs.StringVar(&f.key.passEnv, "passphrase-env", "", "environment variable holding the signing key's passphrase")
	fs.BoolVar(&f.unsigned, "unsigned", false, "a dry run on a site: write an unsigned bundle (its hashes detect accidents, not a deliberate edit)")
	fs.BoolVar(&f.verbose, "v", false, "log to stderr at info level")
	fs.StringVar(&f.logFormat, "log-format", "text", cli.LogFormatUsage)
	fs.StringVar(&f.ui, "ui", "", "serve a live view of the run at this address (127.0.0.1:PORT; another host needs --ui-token-file)")
	fs.StringVar(&f.uiTokens, "ui-token-file", "", "with --ui: the live view's tokens, one a line: operator NAME TOKEN or viewer NAME TOKEN")
	fs.StringVar(&f.stampURL, "time-stamp-url", "", "time-stamp every seal at this RFC 3161 authority, in the background (with --time-stamp-roots)")
	fs.StringVar(&f.stampRoots, "time-stamp-roots", "", "with --time-stamp-url: the PEM root certificate(s) the authority's must chain to")
	pos, err := cli.Parse(fs, args)
	if err != nil {
		return f, "", fs, err
	}
	if f.logFormat != "text" && f.logFormat != "json" {
		return f, "", fs, cli.Usagef("--log-format is text or json (got %q)", f.logFormat)
	}
	// a missing binding is the first thing to fix: said before the plan,
	// the key or any other flag
	if f.site != "" {
		if err := checkBindingDir(f.site); err != nil {
			return f, "", fs, err
		}
	}
	planPath := ""
	switch {
	case len(pos) == 1:
		planPath = pos[0]
	case len(pos) == 0 && f.resume != "":
		planPath = evidence.PlanIn(f.resume)
	case len(pos) == 0 && f.retry != "":
		planPath = evidence.PlanIn(f.retry)
	default:
		return f, "", fs, cli.Usagef("want one plan file, got %d arguments", len(pos))
	}
	switch {
	case f.simulate == (f.site != ""):
		err = cli.Usagef("give exactly one of --site BINDING and --sim")
	case countSet(f.out, f.resume, f.retry) != 1:
		err = cli.Usagef("give exactly one of --out DIR, --resume DIR and --retry DIR")
	case f.retry != "" && len(f.cases) != 1:
		err = cli.Usagef("--retry DIR runs one case again: give it with --case ID")
	case f.retry != "" && (f.from != "" || f.until != ""):
		err = cli.Usagef("--retry runs one case: --from and --until do not apply")
	case f.retry != "" && f.key.key == "":
		err = cli.Usagef("a retry is a signed amendment of the bundle: give --sign-key KEY")
	case len(f.cases) > 0 && f.from != "":
		err = cli.Usagef("give --case or --from, not both")
	case f.accept != "" && f.accept != "energize":
		err = cli.Usagef("--accept-risk takes one value, energize (got %q)", f.accept)
	case !f.simulate && (f.defect != "" || f.simConfig != ""):
		err = cli.Usagef("--defect and --sim-config need --sim")
	case !f.simulate && f.scale.set && f.scale.k == 0:
		err = cli.Usagef("--time-scale max needs --sim: a simulator in another process runs at a time scale of its own")
	case f.simulate && f.control != "":
		err = cli.Usagef("--sim-control is for a simulator in another process, with --site")
	case f.uiTokens != "" && f.ui == "":
		err = cli.Usagef("--ui-token-file needs --ui ADDR")
	case f.stampURL != "" && f.stampRoots == "":
		err = cli.Usagef("--time-stamp-url needs --time-stamp-roots FILE, the authority's root certificate(s)")
	case f.stampRoots != "" && f.stampURL == "":
		err = cli.Usagef("--time-stamp-roots needs --time-stamp-url URL, the authority to ask")
	case f.stampURL != "" && f.key.key == "":
		err = cli.Usagef("--time-stamp-url stamps the bundle's seals: give --sign-key KEY")
	case f.unsigned && f.key.key != "":
		err = cli.Usagef("give one of --sign-key and --unsigned")
	case !f.simulate && !f.unsigned && f.key.key == "":
		err = cli.Usagef("a run on a site is signed: give --sign-key KEY (a key file, or KEY.pub held by ssh-agent), or --unsigned for a dry run")
	}
	if f.simulate && !f.scale.set {
		f.scale = scaleFlag{set: true, k: 1}
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
	log := stderrLog(stderr, f.verbose, f.logFormat)
	raw, err := os.ReadFile(planPath)
	if err != nil {
		if f.resume != "" && planPath == evidence.PlanIn(f.resume) && errors.Is(err, os.ErrNotExist) {
			err = fmt.Errorf("%s holds no copy of its plan yet (the run stopped before writing it): give the plan, sat run PLAN --resume %s: %w", f.resume, f.resume, err)
		}
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
	if f.retry != "" {
		dir = f.retry
	}
	// refuse a stale plan, and a key that does not load, before anything opens
	b, contracts, err := siteInputs(f, p)
	if err != nil {
		return fail(stderr, "run", fs, err)
	}
	contractsDigest, err := runner.CheckPlan(p, contracts)
	if err != nil {
		return fail(stderr, "run", fs, fmt.Errorf("%s: %w", planPath, err))
	}
	var signer evidence.Signer
	if f.key.key != "" {
		if signer, _, err = evidenceSigner(f.key, lookupEnv); err != nil {
			return fail(stderr, "run", fs, err)
		}
	}
	stamp, err := timeStampAuthority(f.stampURL, f.stampRoots)
	if err != nil {
		return fail(stderr, "run", fs, err)
	}
	env, err := openSite(ctx, f, p, b, dir, lookupEnv, log)
	if err != nil {
		return fail(stderr, "run", fs, err)
	}
	defer env.close()
	cfg := runner.Config{Plan: p, PlanBytes: raw, Site: env.site, Dir: dir, Resume: f.resume != "", Clock: env.clk, Log: log,
		Operator: operator(f, env, stdin, stderr, lookupEnv), Progress: stderr, Terminal: isTerminal(stderr), Signer: signer, TimeStamp: stamp,
		ContractsDigest: contractsDigest, Shortened: shortened(p, env.site),
		Cases: f.cases, From: f.from, Until: f.until, Retry: f.retry != ""}
	ui, err := startUI(ctx, f, &cfg, stderr, log)
	if err != nil {
		return fail(stderr, "run", fs, err)
	}
	defer ui.close()
	r, err := runner.New(cfg)
	if err != nil {
		return fail(stderr, "run", fs, err)
	}
	ui.bind(r)
	if file, ok := stdin.(*os.File); ok && isTerminal(file) {
		listenForPause(r, cfg.Operator, stdin, stderr)
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
	summarize(stdout, res, dir, f.retry != "")
	switch {
	case res.Abort != nil && f.retry != "":
		fmt.Fprintf(stdout, "the attempt is kept in the bundle, unfinished; fix the cause, then retry again:\n  %s\n", strings.Join(append([]string{"sat", "run"}, shellWords(args)...), " "))
	case res.Abort != nil && res.Abort.Cause == results.CauseHandover:
		fmt.Fprintf(stdout, "the next shift continues with:\n  %s\n", resumeCommand(args, dir))
	case res.Abort != nil:
		fmt.Fprintf(stdout, "fix the cause, then continue after the last completed case:\n  %s\n", resumeCommand(args, dir))
	case signer != nil:
		keepHead(stdout, dir)
	}
	return runner.ExitCode(res)
}

// listenForPause reads the terminal while the run runs: p and Enter
// pauses (the case stops, its load goes to 0 kW), r and Enter runs the
// case again from its start. A prompt of the run takes the lines typed
// while it waits.
func listenForPause(r *runner.Runner, op runner.Operator, stdin io.Reader, stderr io.Writer) {
	who := op.Who()
	onLine := func(line string) {
		var err error
		switch strings.ToLower(line) {
		case "p", "pause":
			err = r.Pause(who)
		case "r", "resume":
			err = r.Unpause(who)
		case "":
			return
		default:
			err = fmt.Errorf("%q: type p and Enter to pause, r and Enter to resume; Ctrl-C stops the run", line)
		}
		if err != nil {
			fmt.Fprintf(stderr, "sat run: %v\n", err)
		}
	}
	fmt.Fprintln(stderr, "sat run: type p and Enter to pause (the case stops, load to 0 kW; r and Enter runs it again), Ctrl-C to stop safely")
	if t, ok := op.(*runner.Terminal); ok {
		t.OnLine = onLine
		t.Listen()
		return
	}
	go func() {
		sc := bufio.NewScanner(stdin)
		for sc.Scan() {
			onLine(strings.TrimSpace(sc.Text()))
		}
	}()
}

// resumeCommand is the sat run command line that continues this run:
// its own arguments, with --out DIR replaced by --resume DIR.
func resumeCommand(args []string, dir string) string {
	cmd := []string{"sat", "run"}
	resumed := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		switch {
		case !strings.HasPrefix(a, "-"):
		case name == "out" || name == "case" || name == "from" || name == "until":
			// the next session runs the rest: the selection was this one's
			if !hasValue {
				i++
			}
			continue
		case a == "--resume" || a == "-resume" || strings.HasPrefix(a, "--resume=") || strings.HasPrefix(a, "-resume="):
			resumed = true
		}
		cmd = append(cmd, shellWord(a))
	}
	if !resumed {
		cmd = append(cmd, "--resume", shellWord(dir))
	}
	return strings.Join(cmd, " ")
}

func shellWords(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = shellWord(a)
	}
	return out
}

func countSet(xs ...string) int {
	n := 0
	for _, x := range xs {
		if x != "" {
			n++
		}
	}
	return n
}

// caseList is --case: case ids, from repeated flags or commas.
type caseList []string

func (c *caseList) String() string { return strings.Join(*c, ",") }

func (c *caseList) Set(v string) error {
	for id := range strings.SplitSeq(v, ",") {
		if id = strings.TrimSpace(id); id != "" {
			*c = append(*c, id)
		}
	}
	return nil
}

// shellWord quotes s for a POSIX shell when it needs it.
func shellWord(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"$`\\|&;<>()*?[]#~{}!") {
		return s
	}
	return shellQuote(s)
}

// stderrLog is the run's log on stderr, between the progress lines:
// warnings and errors (with -v, info too), for a person unless
// --log-format json. The bundle's run.log has every line as JSON.
func stderrLog(w io.Writer, verbose bool, format string) *slog.Logger {
	level := slog.LevelWarn
	if verbose {
		level = slog.LevelInfo
	}
	return cli.Logger(w, "sat run", format, level)
}

// shortened says what makes this run shorter than the real test.
func shortened(p *plan.Plan, site *runner.Site) string {
	var parts []string
	if h := p.Header.Options.MaxHoldS; h > 0 {
		parts = append(parts, fmt.Sprintf("holds and square-wave runs capped at %g s (contractc compile --max-hold)", h))
	}
	switch scale := site.TimeScale; {
	case site.Lockstep && scale == 0:
		parts = append(parts, "site time ran as fast as the simulator and the run allowed, in lockstep")
	case site.Lockstep && scale != 1:
		parts = append(parts, fmt.Sprintf("site time ran at most %g× wall time, in lockstep with the simulator", scale))
	case scale != 1:
		parts = append(parts, fmt.Sprintf("site time ran %g× wall time (the simulator's time scale)", scale))
	}
	return strings.Join(parts, "; ")
}

func operator(f runFlags, env *siteEnv, stdin io.Reader, stderr io.Writer, lookupEnv func(string) (string, bool)) runner.Operator {
	if env.site.Kind == runner.Simulated {
		return runner.Simulator{Clock: env.clk, Name: f.operator}
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
func summarize(w io.Writer, res *results.Results, dir string, retry bool) {
	c := res.Counts
	handover := res.Abort != nil && res.Abort.Cause == results.CauseHandover
	notYet := 0
	for _, cs := range res.Cases {
		if handover && cs.Outcome == grade.Skipped && strings.HasPrefix(cs.Reason, "not run yet") {
			notYet++
		}
	}
	switch {
	case handover:
		fmt.Fprintf(w, "shift ended: %d passed, %d failed, %d errors, %d skipped; %d not run yet\n", c.Pass, c.Fail, c.Error, c.Skipped-notYet, notYet)
	case retry:
		fmt.Fprintf(w, "with the retry, the run %s: %d passed, %d failed, %d errors, %d aborted, %d skipped\n", res.Outcome, c.Pass, c.Fail, c.Error, c.Aborted, c.Skipped)
	default:
		fmt.Fprintf(w, "%s: %d passed, %d failed, %d errors, %d aborted, %d skipped\n", res.Outcome, c.Pass, c.Fail, c.Error, c.Aborted, c.Skipped)
	}
	for _, cs := range res.Cases {
		if cs.Outcome == "PASS" || handover && cs.Outcome == grade.Skipped && strings.HasPrefix(cs.Reason, "not run yet") {
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
	switch {
	case handover:
		fmt.Fprintf(w, "hand-over: %s\n", res.Abort.Reason)
	case res.Abort != nil:
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

// timeStampAuthority is the authority --time-stamp-url and
// --time-stamp-roots name (nil: none).
func timeStampAuthority(url, rootsFile string) (*tsa.Authority, error) {
	if url == "" {
		return nil, nil
	}
	raw, err := os.ReadFile(rootsFile)
	if err != nil {
		return nil, fmt.Errorf("--time-stamp-roots: %w", err)
	}
	roots, err := tsa.ParseRoots("--time-stamp-roots "+rootsFile, raw)
	if err != nil {
		return nil, err
	}
	return &tsa.Authority{URL: url, Roots: roots}, nil
}
