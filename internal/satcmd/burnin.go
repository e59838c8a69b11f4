package satcmd

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/seamdc/seam/internal/burnin"
	"github.com/seamdc/seam/internal/cli"
	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/diag"
	"github.com/seamdc/seam/internal/dryrun"
	"github.com/seamdc/seam/internal/evidence"
	"github.com/seamdc/seam/internal/hold"
	"github.com/seamdc/seam/internal/ledger"
	"github.com/seamdc/seam/internal/lifecycle"
	"github.com/seamdc/seam/internal/scheduler"
	"github.com/seamdc/seam/internal/sign"
	"github.com/seamdc/seam/internal/topology"
	"github.com/seamdc/seam/internal/version"
)

const burninHelp = `GPU burn-in of a module's nodes through Slurm, Kubernetes or the simulated site
(docs/burnin.md):

  sat burnin run --contracts DIR --module M --out DIR [--slurm-conf FILE]
          [--tools DIR] [--nodes N1,N2…] [--sign-key KEY] [--timeout D]
          [--parallel N] [--size BYTES] [--baselines DIR] [--report DIR]
          [--site BINDING --plan SAT-PLAN]
      reserve the nodes (a Slurm reservation, Flags=MAINT,IGNORE_JOBS:
      users' jobs do not start on them), run the ladder with srun inside
      it (dcgmi diag -r 3 -j, nvidia-smi telemetry and a single-node
      all_reduce_perf per node; ring pairs; each rack; the module; low
      groups bisected to the node), release the reservation, and write
      the evidence bundle (sat verify checks it), each node's baseline
      and the report (burnin.csv, burnin.junit.xml, burnin.html); with
      --site and --plan, then the module-wide step: the nodes train in
      phase while the feeds, PDUs and CDUs are read through the binding
      and graded against the plan's transient cases of the module (a
      simulated site only yet: sat sim --stepped)
      --scheduler kubernetes --namespace NS --image IMAGE [--kubeconfig F]
          [--gpu-resource nvidia.com/gpu] [--pod-env NAME=VALUE]…
      the same on Kubernetes: the nodes carry a NoSchedule taint
      (burnin.seam.io/reservation=NAME) instead of a reservation, every
      job is pods pinned to its nodes that tolerate it
  sat burnin grade DIR --contracts DIR --module M --out DIR [--gpus 4]
          [--size BYTES] [--sign-key KEY] [--baselines DIR] [--report DIR]
          [--lifecycle STORE --lifecycle-key KEY] [--drain [--slurm-conf F]]
          [--reservation NAME] [--dry-run]
      grade a burn-in the site already ran from its recorded outputs
      (dcgmi diag -j, nvidia-smi CSV, all_reduce_perf per node and per
      group, listed in DIR/manifest.json) with the same analysis, and
      write the same evidence, baselines and report; the gate provisions
      what passed and holds what failed; a node a low group implicates
      that no recorded run narrows down is to re-test, not held; bad
      input is an error naming its file and line
      --scheduler sim --site BINDING [--plan SAT-PLAN]
      the same on a simulated site with no scheduler: the simulated
      tools run in process against the simulator the binding names
      (sat sim --stepped: site time is advanced while the nodes settle;
      else waited out at its time scale), no reservation (the ledger's
      holds keep the nodes); the module-wide step with --plan
  sat burnin compare FACTORY SITE
      compare two bundles' baselines.json (or two such files): every
      node's figure that got worse from the factory to the site

Exit codes: 0 every node passed (compare: nothing got worse), 2 some
node is held back or to re-test (compare: something got worse), 1 the
tool failed or its input did not read.`

func init() {
	register("burnin", "GPU burn-in through Slurm or Kubernetes: diagnostics, all-reduce ladder, baselines as evidence", runBurnin).
		WithExample("sat burnin run --scheduler sim --site /tmp/site --contracts contracts/examples/threemodule --module ma --out out/burnin-ma").
		Sub("run", "reserve the module's nodes, run the diagnostics and all-reduce ladder, grade them and write the evidence",
			"sat burnin run --scheduler sim --site /tmp/site --contracts contracts/examples/threemodule --module ma --out out/burnin-ma").
		Sub("grade", "grade a burn-in the site already ran from its recorded outputs, with the same evidence",
			"sat burnin grade recorded --contracts contracts/examples/threemodule --module ma --out out/burnin-graded").
		Sub("compare", "compare the factory's and the site's baselines: every node's figure that got worse",
			"sat burnin compare out/burnin-factory out/burnin-ma")
}

func runBurnin(args []string, stdout, stderr io.Writer) int {
	if code, done := subcommand(args, stderr, "burnin", burninHelp, "run", "grade", "compare"); done {
		return code
	}
	switch args[0] {
	case "run":
		return burninRun(args[1:], stdout, stderr, os.LookupEnv)
	case "grade":
		return burninGrade(args[1:], stdout, stderr, os.LookupEnv)
	default:
		return burninCompare(args[1:], stdout, stderr)
	}
}

type burninFlags struct {
	contracts, module, out, slurmConf, tools, nodes, baselines, report, reservation string
	lifecycle                                                                       string
	site, plan                                                                      string
	lifecycleKey                                                                    keyFlags
	key                                                                             keyFlags
	timeout                                                                         time.Duration
	parallel                                                                        int
	size                                                                            int64
	dryRun                                                                          bool
	kube                                                                            burninKubeFlags
}

func burninRun(args []string, stdout, stderr io.Writer, lookupEnv func(string) (string, bool)) int {
	fs := flag.NewFlagSet("--contracts DIR --module M --out DIR [flags]", flag.ContinueOnError)
	var f burninFlags
	fs.StringVar(&f.contracts, "contracts", "", "the site's contracts (their inventory names the nodes, racks and serials)")
	fs.StringVar(&f.module, "module", "", "the IT module to burn in")
	fs.StringVar(&f.out, "out", "", "the evidence directory to create")
	fs.StringVar(&f.slurmConf, "slurm-conf", "", "slurm.conf (default: $SLURM_CONF or Slurm's own)")
	fs.StringVar(&f.tools, "tools", "", "a directory put first on the jobs' PATH (sat sim-tools install writes the simulated tools there)")
	fs.StringVar(&f.nodes, "nodes", "", "only these nodes of the module, comma-separated")
	fs.StringVar(&f.baselines, "baselines", "", "where to write each node's baseline file (default OUT.baselines)")
	fs.StringVar(&f.report, "report", "", "where to write burnin.csv, burnin.junit.xml, burnin.html (default OUT.report)")
	fs.StringVar(&f.reservation, "reservation", "", "the reservation's name (default seam-burnin-MODULE)")
	fs.StringVar(&f.key.key, "sign-key", "", "sign the bundle with this OpenSSH key")
	fs.StringVar(&f.key.passEnv, "passphrase-env", "", "the environment variable holding the key's passphrase")
	fs.StringVar(&f.lifecycle, "lifecycle", "", "the lifecycle store, the site's ledger of holds: hold the nodes during burn-in, then provision those that pass and hold back the others")
	fs.StringVar(&f.lifecycleKey.key, "lifecycle-key", "", "the SSH key that signs the lifecycle changes (with --lifecycle)")
	fs.StringVar(&f.site, "site", "", "the site's binding: run the module-wide step, its training load graded against the transient clauses (with --plan)")
	fs.StringVar(&f.plan, "plan", "", "the site's compiled SAT plan whose transient cases the module-wide step grades (with --site)")
	fs.DurationVar(&f.timeout, "timeout", 10*time.Minute, "the longest one job may take")
	fs.IntVar(&f.parallel, "parallel", 8, "jobs running at once")
	fs.Int64Var(&f.size, "size", 8<<30, "the all-reduce's fixed size, bytes (at least 1 GiB)")
	fs.BoolVar(&f.dryRun, "dry-run", false, "read the scheduler and the ledger, print the reservation, the holds and the jobs it would make, and write nothing")
	f.kube.register(fs)
	pos, err := cli.Parse(fs, args)
	switch {
	case err != nil:
	case len(pos) != 0:
		err = cli.Usagef("unexpected arguments %s", strings.Join(pos, " "))
	case f.contracts == "" || f.module == "" || f.out == "":
		err = cli.Usagef("give --contracts, --module and --out")
	case (f.lifecycle == "") != (f.lifecycleKey.key == ""):
		err = cli.Usagef("give --lifecycle STORE and --lifecycle-key KEY together")
	case f.plan != "" && f.site == "":
		err = cli.Usagef("--plan needs --site BINDING: the module-wide step reads the site through the binding and grades the plan's transient cases")
	case f.site != "" && f.plan == "" && f.kube.scheduler != "sim":
		err = cli.Usagef("give --site BINDING and --plan PLAN together: the module-wide step reads the site through the binding and grades the plan's transient cases")
	default:
		err = f.kube.check(f)
	}
	if err != nil {
		return fail(stderr, "burnin run", fs, err)
	}
	code, err := burninDo(f, stdout, stderr, lookupEnv)
	if err != nil {
		fmt.Fprintf(stderr, "sat burnin: %v\n", err)
		return cli.ExitTool
	}
	return code
}

// burninNodes are the module's nodes from the contracts' inventory
// (all of them), and those of them --nodes names (all without it).
func burninNodes(f burninFlags) (module, chosen []burnin.Node, err error) {
	c, diags, err := contract.Load(f.contracts)
	if err != nil {
		return nil, nil, err
	}
	if c == nil || diags.Count(diag.Error) > 0 {
		return nil, nil, fmt.Errorf("the contracts in %s do not load: run contractc vet %s", f.contracts, f.contracts)
	}
	if _, err := c.ReadInventory(nil); err != nil {
		return nil, nil, err
	}
	g, _ := c.Graph()
	top, err := topology.FromGraph(g, topology.GraphOptions{RackNames: topology.RackNames(g, c.Handovers)})
	if err != nil {
		return nil, nil, err
	}
	module, err = burnin.NodesFrom(top, g, f.module)
	if err != nil {
		return nil, nil, fmt.Errorf("module %s in %s: %w", f.module, f.contracts, err)
	}
	if f.nodes == "" {
		return module, module, nil
	}
	want := map[string]bool{}
	for _, n := range strings.Split(f.nodes, ",") {
		want[strings.TrimSpace(n)] = true
	}
	for _, n := range module {
		if want[n.Name] {
			chosen = append(chosen, n)
			delete(want, n.Name)
		}
	}
	for _, n := range slices.Sorted(maps.Keys(want)) {
		return nil, nil, fmt.Errorf("--nodes: %s is not a node of module %s", n, f.module)
	}
	return module, chosen, nil
}

func burninDo(f burninFlags, stdout, stderr io.Writer, lookupEnv func(string) (string, bool)) (int, error) {
	module, nodes, err := burninNodes(f)
	if err != nil {
		return 0, err
	}
	opt := burnin.BundleOptions{Tool: "sat burnin " + version.Version}
	if f.key.key != "" {
		s, _, err := evidenceSigner(f.key, lookupEnv)
		if err != nil {
			return 0, err
		}
		opt.Evidence = evidence.Options{Signer: s, By: currentUser()}
	}
	if entries, err := os.ReadDir(f.out); err == nil && len(entries) > 0 {
		return 0, fmt.Errorf("evidence directory %s is not empty: choose a new --out", f.out)
	}
	var rec *dryrun.Recorder
	if f.dryRun {
		rec = dryrun.New(stdout, nil)
	}
	client := &scheduler.Slurm{Conf: f.slurmConf, Command: scheduler.Command{Dry: rec}}
	if f.kube.scheduler == "slurm" { // a dry run reads Slurm too
		if err := client.Reachable(context.Background()); err != nil {
			return 0, fmt.Errorf("%w, or burn in the simulated site with no scheduler (--scheduler sim --site DIR, DIR from sat sim --out)", err)
		}
	}
	ex := &burnin.Slurm{Client: client}
	if f.tools != "" {
		abs, err := filepath.Abs(f.tools)
		if err != nil {
			return 0, err
		}
		path, _ := lookupEnv("PATH")
		ex.Env = []string{"PATH=" + abs + ":" + path}
	}
	var sched burninReserver = ex
	var drainer scheduler.Drainer = client
	kx, kd, err := f.kube.executor(lookupEnv, 4) // 4: burnin.Config's GPUs per node
	if err != nil {
		return 0, err
	}
	if kx != nil {
		sched, drainer = kx, kd
	}
	var load func(context.Context, []string, bool) error
	if f.kube.scheduler == "sim" {
		sx, err := newSimBurnin(f.site)
		if err != nil {
			return 0, err
		}
		sched, drainer, load = sx, nil, sx.Load // no scheduler: the ledger's holds alone
	}
	if f.reservation == "" {
		f.reservation = "seam-burnin-" + f.module
	}
	names := make([]string, len(nodes))
	for i, n := range nodes {
		names[i] = n.Name
	}
	ctx := context.Background()
	gate, err := openGate(ctx, f, drainer, rec, lookupEnv)
	if err != nil {
		return 0, err
	}
	defer gate.close()
	why := "burn-in under way (" + f.kube.name() + " reservation " + f.reservation + ")"
	if f.dryRun {
		return burninDry(ctx, f, sched, gate, nodes, why, stdout)
	}
	if err := sched.Reserve(ctx, f.reservation, currentUser(), names); err != nil {
		return 0, err
	}
	defer func() {
		if err := sched.Release(context.WithoutCancel(ctx)); err != nil {
			fmt.Fprintf(stderr, "sat burnin: %v (end it by hand: %s)\n", err, f.kube.undo(f.reservation))
		}
	}()
	if err := burnin.Hold(ctx, gate.ledger, f.reservation, gate.by, why, nodes); err != nil {
		return 0, err
	}
	fmt.Fprintf(stderr, "sat burnin: %d nodes of %s reserved (%s) and held (%s, in %s)\n", len(nodes), f.module, f.reservation, burnin.Owner(f.reservation), gate.where)
	cfg := burnin.Config{Size: f.size, Parallel: f.parallel, Timeout: f.timeout, Progress: stderr, Load: load}
	if f.plan != "" {
		fac, closeSite, err := burninFacility(f, names, len(module), stderr, lookupEnv)
		if err != nil {
			return 0, err
		}
		defer closeSite()
		cfg.Facility = fac
	}
	res, err := burnin.Run(ctx, nodes, sched, cfg)
	if err != nil {
		return 0, err
	}
	if f.baselines == "" {
		f.baselines = filepath.Clean(f.out) + ".baselines"
	}
	opt.Baselines = f.baselines
	m, files, err := burnin.WriteBundle(f.out, res, opt)
	if err != nil {
		return 0, err
	}
	// while the nodes are still reserved
	var prov burnin.Provisioner
	if gate.store != nil {
		prov = gate.store
	}
	for _, a := range burnin.Gate(ctx, gate.ledger, prov, gate.auth, f.reservation, gate.by, res, files, m.Bundle) {
		if a.Err != "" {
			fmt.Fprintf(stdout, "ledger: %s: %s, but: %s\n", a.Node, a.Action, a.Err)
			continue
		}
		if a.Action != "passed" {
			fmt.Fprintf(stdout, "ledger: %s %s: %s\n", a.Node, a.Action, a.Reason)
		}
	}
	if f.report == "" {
		f.report = filepath.Clean(f.out) + ".report"
	}
	if err := writeBurninReport(f.report, res); err != nil {
		return 0, err
	}
	held, retest := res.Held(), res.Retests()
	fmt.Fprintf(stdout, "%d nodes burned in, %d passed, %d held back, %d to re-test; evidence %s (bundle %s), baselines %s, report %s\n",
		len(res.Nodes), len(res.Nodes)-len(held)-len(retest), len(held), len(retest), f.out, m.Bundle, f.baselines, f.report)
	for _, n := range held {
		fmt.Fprintf(stdout, "held %s (serial %s):\n", n.Name, n.Serial)
		for _, r := range n.Reasons() {
			fmt.Fprintf(stdout, "  %s\n", r)
		}
	}
	for _, n := range retest { // implicated, no partner known good to re-pair with: neither held nor provisioned
		fmt.Fprintf(stdout, "re-test %s (serial %s), not held:\n  %s\n", n.Name, n.Serial, strings.Join(n.Reasons(), "\n  "))
	}
	if res.Facility != nil {
		fmt.Fprintln(stdout, res.Facility)
	}
	if !res.Passed() {
		return cli.ExitFindings, nil
	}
	return cli.ExitOK, nil
}

// burninDry prints what a burn-in would do: the reservation and the
// hold as the scheduler's and the ledger's recording twins write them,
// the nodes that cannot run a job, the jobs and the files; it writes
// nothing.
func burninDry(ctx context.Context, f burninFlags, sched burninReserver, gate *burninGate, nodes []burnin.Node, why string, stdout io.Writer) (int, error) {
	names := make([]string, len(nodes))
	for i, n := range nodes {
		names[i] = n.Name
	}
	if err := sched.Reserve(ctx, f.reservation, currentUser(), names); err != nil {
		return 0, err
	}
	if err := burnin.Hold(ctx, gate.ledger, f.reservation, gate.by, why, nodes); err != nil {
		return 0, err
	}
	if c, ok := sched.(burnin.Checker); ok {
		down, err := c.Unavailable(ctx, names)
		if err != nil {
			return 0, err
		}
		for _, n := range slices.Sorted(maps.Keys(down)) {
			fmt.Fprintf(stdout, "%s cannot run a job: %s (it would fail its burn-in)\n", n, down[n])
		}
	}
	fmt.Fprintf(stdout, "would run the burn-in ladder on %d node(s) of %s through %s: per node dcgmi diag -r 3 -j, nvidia-smi telemetry and all_reduce_perf at %d bytes; ring pairs; each rack; the module; low groups bisected\n",
		len(nodes), f.module, sched.Describe(), f.size)
	fmt.Fprintf(stdout, "would write the evidence %s, the baselines and the report; then provision the nodes that pass (%s) and hold the others (%s, drained)\n",
		f.out, gate.where, burnin.Owner(f.reservation))
	fmt.Fprintln(stdout, "dry run: nothing was written")
	return cli.ExitOK, nil
}

// burninGate is the ledger the burn-in's holds go to, and the
// lifecycle store that provisions the nodes that pass (nil without
// --lifecycle).
type burninGate struct {
	ledger *ledger.Ledger
	store  *lifecycle.Store
	auth   lifecycle.Auth
	where  string // where the holds are kept, for messages
	by     string // who places the holds: the store's signer, or the user
}

func (g *burninGate) close() {
	if g.store != nil {
		g.store.Close()
	}
}

// openGate opens the ledger: the lifecycle store's with --lifecycle
// (its changes signed with --lifecycle-key), else one in this process
// only, which drains the nodes that fail and is forgotten after (no
// other tool sees its holds: docs/burnin.md). A dry run reads the
// ledger and records every write.
func openGate(ctx context.Context, f burninFlags, sched scheduler.Drainer, rec *dryrun.Recorder, lookupEnv func(string) (string, bool)) (*burninGate, error) {
	g := &burninGate{ledger: &ledger.Ledger{Sched: sched, DryRun: rec.Active()}, where: "this burn-in's own ledger, not kept", by: currentUser()}
	var backend hold.Backend = hold.NewMemory(&hold.Book{}, nil, nil)
	if f.lifecycle != "" {
		var pass []byte
		if f.key.passEnv != "" {
			v, _ := lookupEnv(f.key.passEnv)
			pass = []byte(v)
		}
		signer, err := sign.LoadSigner(f.lifecycleKey.key, pass)
		if err != nil {
			return nil, fmt.Errorf("--lifecycle-key: %w", err)
		}
		st, err := lifecycle.Open(ctx, lifecycle.Config{Store: f.lifecycle, LookupEnv: lookupEnv, DryRun: rec})
		if err != nil {
			return nil, fmt.Errorf("--lifecycle %s: %w", f.lifecycle, err)
		}
		g.store, g.auth, g.where = st, lifecycle.KeyAuth(signer, ""), "the lifecycle store "+f.lifecycle
		if g.by, err = st.Actor(ctx, g.auth); err != nil {
			g.close()
			return nil, fmt.Errorf("--lifecycle-key: %w", err)
		}
		backend = st.Ledger(g.auth, "slurm") // burn-in's nodes go by their Slurm names (burnin.NodesFrom)
	}
	var err error
	if g.ledger.Backend, g.ledger.Sched, err = recording(ctx, backend, sched, rec, f.kube.peer()); err != nil {
		g.close()
		return nil, err
	}
	return g, nil
}

// recording is a ledger's backend and scheduler as a dry run has them
// (rec active): a copy of the backend's holds that records each write,
// and the scheduler's recording twin (it reads, and records each write
// as peer's); else as they are.
func recording(ctx context.Context, backend hold.Backend, sched scheduler.Drainer, rec *dryrun.Recorder, peer string) (hold.Backend, scheduler.Drainer, error) {
	if !rec.Active() {
		return backend, sched, nil
	}
	cp, err := hold.Copy(ctx, backend, rec)
	if err != nil {
		return nil, nil, err
	}
	if sched != nil {
		sched = scheduler.DryRun(sched, rec, peer)
	}
	return cp, sched, nil
}

func writeBurninReport(dir string, res *burnin.Result) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for name, w := range map[string]func(io.Writer, *burnin.Result) error{
		"burnin.csv": burnin.WriteCSV, "burnin.junit.xml": burnin.WriteJUnit, "burnin.html": burnin.WriteHTML,
	} {
		fh, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		err = w(fh, res)
		if cerr := fh.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("report %s: %w", name, err)
		}
	}
	return nil
}

func currentUser() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return "root"
}

func burninCompare(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("FACTORY SITE", flag.ContinueOnError)
	pos, err := cli.Parse(fs, args)
	if err == nil && len(pos) != 2 {
		err = cli.Usagef("want the factory's and the site's baselines (bundles or baselines.json), got %d arguments", len(pos))
	}
	if err != nil {
		return fail(stderr, "burnin compare", fs, err)
	}
	var sets [2][]*lifecycle.Baseline
	for i, p := range pos {
		if sets[i], err = readBaselines(p); err != nil {
			fmt.Fprintf(stderr, "sat burnin compare: %v\n", err)
			return cli.ExitTool
		}
	}
	worse, notes := burnin.Compare(sets[0], sets[1])
	for _, n := range notes {
		fmt.Fprintf(stdout, "note: %s\n", n)
	}
	for _, w := range worse {
		fmt.Fprintf(stdout, "worse: %s\n", w)
	}
	fmt.Fprintf(stdout, "%d nodes compared, %d figures got worse\n", len(sets[0]), len(worse))
	if len(worse) > 0 {
		return cli.ExitFindings
	}
	return cli.ExitOK
}

// readBaselines reads a bundle's baselines.json, or such a file.
func readBaselines(p string) ([]*lifecycle.Baseline, error) {
	if st, err := os.Stat(p); err == nil && st.IsDir() {
		p = filepath.Join(p, burnin.BaselineFile)
	}
	raw, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(raw, &raws); err != nil {
		return nil, fmt.Errorf("%s: not a list of baselines: %w", p, err)
	}
	out := make([]*lifecycle.Baseline, 0, len(raws))
	for i, r := range raws {
		b, err := lifecycle.ParseBaseline(r)
		if err != nil {
			return nil, fmt.Errorf("%s: baseline %d: %w", p, i+1, err)
		}
		out = append(out, b)
	}
	return out, nil
}
