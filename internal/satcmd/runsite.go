package satcmd

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/seamdc/seam/internal/binding"
	"github.com/seamdc/seam/internal/bindreq"
	"github.com/seamdc/seam/internal/cli"
	"github.com/seamdc/seam/internal/clock"
	"github.com/seamdc/seam/internal/diag"
	"github.com/seamdc/seam/internal/evidence"
	"github.com/seamdc/seam/internal/plan"
	"github.com/seamdc/seam/internal/probe"
	"github.com/seamdc/seam/internal/runner"
	"github.com/seamdc/seam/internal/sim"
	"github.com/seamdc/seam/internal/sim/fleet"
)

// siteEnv is an opened site: devices, clock, what to close.
type siteEnv struct {
	site      *runner.Site
	clk       clock.Clock
	contracts string
	closers   []func()
	sim       *sim.Opened
	lockstep  *clock.Lockstep
}

func (e *siteEnv) close() {
	for i := len(e.closers) - 1; i >= 0; i-- {
		e.closers[i]()
	}
}

// simStarted, when set (by tests), sees the in-process simulator of the
// run into dir once its devices serve.
var simStarted atomic.Pointer[func(dir string, o *sim.Opened)]

// report logs how the simulated run's clock went.
func (e *siteEnv) report(log *slog.Logger) {
	if e.lockstep != nil {
		turns, advances := e.lockstep.Stats()
		log.Info("the run and the simulator took turns", "turns", turns, "advances", advances, "speed_limit", e.site.TimeScale)
	}
}

// loadBinding loads a site binding and checks it covers the contracts it
// names (internal/bindreq reads them: the device layer does not), under
// the CUE budget.
func loadBinding(dir string) (*binding.Binding, diag.List, error) {
	stop, err := guardCUE(dir, os.LookupEnv)
	if err != nil {
		return nil, nil, err
	}
	defer stop()
	return bindreq.Load(dir)
}

// checkBindingDir says what is missing where --site names no binding: no
// directory, or one without its .cue files.
func checkBindingDir(dir string) error {
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("--site %s: no binding directory there (sat sim DIR --out BINDING writes one for the simulated site; docs/devices.md says how to write a site's): %w", dir, err)
	case err != nil:
		return fmt.Errorf("--site %s: %w", dir, err)
	case !st.IsDir():
		return fmt.Errorf("--site %s is a file: give the binding's directory, the one holding its .cue files", dir)
	}
	cue, err := filepath.Glob(filepath.Join(dir, "*.cue"))
	if err != nil {
		return fmt.Errorf("--site %s: %w", dir, err)
	}
	if len(cue) == 0 {
		return fmt.Errorf("--site %s holds no binding: no .cue files in it (sat sim DIR --out BINDING writes one for the simulated site; docs/devices.md)", dir)
	}
	return nil
}

// guardCUE bounds a CUE evaluation of dir by the budget (cli.Guard).
func guardCUE(dir string, lookupEnv func(string) (string, bool)) (func(), error) {
	b, err := cli.BudgetFromEnv(lookupEnv)
	if err != nil {
		return nil, err
	}
	return cli.Guard(os.Stderr, "sat", "the CUE in "+dir, b), nil
}

// siteInputs loads the binding of a real site and finds the contract
// directory the plan is checked against: --contracts, else the
// binding's, else contracts/examples/<site> for the simulated site.
func siteInputs(f runFlags, p *plan.Plan) (*binding.Binding, string, error) {
	if f.simulate {
		if f.contracts != "" {
			return nil, f.contracts, nil
		}
		return nil, filepath.Join("contracts", "examples", p.Header.Site), nil
	}
	b, diags, err := loadBinding(f.site)
	if err != nil {
		return nil, "", err
	}
	if n := diags.Count(diag.Error); n > 0 {
		first := diags.Sorted()[0]
		return nil, "", fmt.Errorf("binding %s has %d error(s); the first, at %s: %s (run sat probe --site %s)", f.site, n, first.Pos, first.Message, f.site)
	}
	contracts := f.contracts
	if contracts == "" {
		contracts = b.Contracts
	}
	if contracts == "" {
		return nil, "", fmt.Errorf("the binding %s names no contracts: pass --contracts DIR, so that sat can check the plan against them", f.site)
	}
	return b, contracts, nil
}

func openSite(ctx context.Context, f runFlags, p *plan.Plan, b *binding.Binding, dir string, lookupEnv func(string) (string, bool), log *slog.Logger) (*siteEnv, error) {
	if f.simulate {
		return openSim(f, p, dir, lookupEnv, log)
	}
	return openBinding(ctx, f, p, b, lookupEnv, log)
}

// openSim starts the simulated site in process, at the time scale, and
// opens its devices through the binding it describes.
func openSim(f runFlags, p *plan.Plan, dir string, lookupEnv func(string) (string, bool), log *slog.Logger) (*siteEnv, error) {
	_, contracts, _ := siteInputs(f, p)
	epoch := time.Now()
	if f.resume != "" || f.retry != "" {
		if last, err := evidence.LastTime(dir); err == nil && !last.Before(epoch) {
			epoch = last.Add(time.Second) // site time never goes back within a bundle
		}
	}
	secrets := sim.SecretsFrom(lookupEnv)
	stop, err := guardCUE(contracts, lookupEnv)
	if err != nil {
		return nil, err
	}
	o, diags, err := sim.Open(sim.Paths{Contracts: contracts, Fixtures: f.fixtures, Config: f.simConfig}, f.defect, secrets, epoch, log)
	stop()
	if err == nil && diags.Count(diag.Error) > 0 {
		err = fmt.Errorf("the simulator's inputs have %d error(s): %s", diags.Count(diag.Error), diags.Sorted()[0].Message)
	}
	if err != nil {
		return nil, fmt.Errorf("simulated site: %w", err)
	}
	env := &siteEnv{contracts: o.Paths.Contracts, sim: o}
	o.ServeBMCs(false) // a plan reads devices and load banks, not BMCs
	if err := o.Start(); err != nil {
		return nil, fmt.Errorf("simulated site: %w", err)
	}
	if hook := simStarted.Load(); hook != nil {
		(*hook)(dir, o)
	}
	env.closers = append(env.closers, o.Close)
	// the run's goroutines and the simulation take turns: site time
	// moves only when every goroutine of the run waits for it, so a busy
	// machine makes the run slower, never different; the time scale
	// only caps its speed
	lk := clock.NewLockstep(o.Site.Now(), o.Site, f.scale.k, log)
	env.closers = append(env.closers, lk.Close)
	env.lockstep, env.clk = lk, lk
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
	site, err := openDevices(p, b, lk, simLookup, log, env)
	if err != nil {
		env.close()
		return nil, err
	}
	site.Kind, site.Faults, site.TimeScale, site.Defect, site.Lockstep = runner.Simulated, simFaults{o.Site}, f.scale.k, f.defect, true
	site.Grid = simGrid{o.Site}
	site.BindingText = binding.Marshal(b, "binding")
	site.BindingDigest = runner.Digest(site.BindingText)
	env.site = site
	return env, nil
}

// openBinding opens a real site's devices through its binding. A
// binding that sat sim wrote names its simulator: the run performs
// manual and fault steps through its control interface and keeps its
// clock at the simulator's time scale.
func openBinding(ctx context.Context, f runFlags, p *plan.Plan, b *binding.Binding, lookupEnv func(string) (string, bool), log *slog.Logger) (*siteEnv, error) {
	control, scale, err := simulatorOf(f, b)
	if err != nil {
		return nil, err
	}
	env := &siteEnv{contracts: b.Contracts, clk: clock.Real{}}
	if scale != 1 {
		env.clk = runner.NewScaled(time.Now(), scale)
		if beat := time.Duration(float64(time.Second) / scale); beat < 100*time.Millisecond {
			log.Warn(fmt.Sprintf("at %g× site time the load banks' heartbeat of 1 s is %s of wall time: a busy machine can make it late enough to trip a watchdog; "+
				"sat run --sim runs the simulator in process, in lockstep, where it cannot", scale, beat))
		}
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
	site.TimeScale = scale
	if control != "" {
		client := &sim.Client{URL: strings.TrimRight(control, "/")}
		st, err := client.Status(ctx)
		if err != nil {
			env.close()
			return nil, fmt.Errorf("the simulator's control interface %s: %w (is sat sim still running?)", control, err)
		}
		site.Kind, site.Faults, site.Grid = runner.Simulated, clientFaults{client}, clientGrid{client}
		if st.Defect != nil {
			site.Defect = st.Defect.Name
		}
	}
	env.site = site
	return env, nil
}

// simulatorOf is the control URL and time scale of the simulator serving
// a binding's devices: the binding's own (sat sim writes them), which
// --sim-control and --time-scale may only repeat, or the flags alone.
func simulatorOf(f runFlags, b *binding.Binding) (string, float64, error) {
	sm := b.Simulator
	if sm == nil {
		if f.scale.set && f.scale.k != 1 && f.control == "" {
			return "", 0, errors.New("--time-scale needs --sim, or --sim-control with a simulator running at that scale")
		}
		if f.scale.set {
			return f.control, f.scale.k, nil
		}
		return f.control, 1, nil
	}
	if sm.Stepped {
		return "", 0, fmt.Errorf("%s: the simulator serving this binding is stepped (sat sim --stepped): its time moves only when a client advances it, and sat run does not; start sat sim without --stepped, or run sat run --sim", sm.Pos)
	}
	if f.scale.set && f.scale.k != sm.TimeScale {
		return "", 0, fmt.Errorf("%s: the simulator serving this binding runs at --time-scale %g, not %g: pass --time-scale %g, or leave it out",
			sm.Pos, sm.TimeScale, f.scale.k, sm.TimeScale)
	}
	control := sm.Control
	if f.control != "" && strings.TrimRight(f.control, "/") != strings.TrimRight(sm.Control, "/") {
		return "", 0, fmt.Errorf("%s: the simulator serving this binding is controlled at %s, not %s: leave --sim-control out", sm.Pos, sm.Control, f.control)
	}
	return control, sm.TimeScale, nil
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

// simGrid drives the in-process simulator's fleet and grid.
type simGrid struct{ s *sim.Site }

func (g simGrid) Train(_ context.Context, p runner.TrainPattern) error {
	return g.s.Train(fleet.Pattern(p))
}

// StopTraining makes the fleet idle: training nodes ramp down as their
// racks' smoothing declares, and nodes still off (a simulated site
// starts with every node off) are switched on, so that a grid case
// starts from the site as it stands between jobs.
func (g simGrid) StopTraining(context.Context) error {
	return g.s.WithFleet(func(f *fleet.Fleet) error {
		f.StopTraining()
		var off []*fleet.Node
		for _, n := range f.Nodes() {
			if n.State() == fleet.Off {
				off = append(off, n)
			}
		}
		return f.SetState(fleet.Idle, off...)
	})
}

func (g simGrid) Dip(_ context.Context, target string, pu float64, d time.Duration) error {
	return g.s.GridDip(target, pu, d.Seconds())
}

// clientGrid drives a running simulator's fleet and grid through its
// control interface.
type clientGrid struct{ c *sim.Client }

func (g clientGrid) Train(ctx context.Context, p runner.TrainPattern) error {
	return g.c.Train(ctx, fleet.Pattern(p))
}

// StopTraining makes the fleet idle, as simGrid's does.
func (g clientGrid) StopTraining(ctx context.Context) error {
	if err := g.c.StopTraining(ctx); err != nil {
		return err
	}
	nodes, err := g.c.Nodes(ctx)
	if err != nil {
		return err
	}
	var names []string
	for _, n := range nodes {
		if n.State == fleet.Off {
			names = append(names, n.Name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	_, err = g.c.SetNodes(ctx, sim.NodeRequest{Nodes: names, State: fleet.Idle})
	return err
}

func (g clientGrid) Dip(ctx context.Context, target string, pu float64, d time.Duration) error {
	return g.c.GridDip(ctx, target, pu, d.Seconds())
}
