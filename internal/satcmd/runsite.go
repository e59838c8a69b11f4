package satcmd

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/seamdc/seam/internal/binding"
	"github.com/seamdc/seam/internal/clock"
	"github.com/seamdc/seam/internal/diag"
	"github.com/seamdc/seam/internal/evidence"
	"github.com/seamdc/seam/internal/plan"
	"github.com/seamdc/seam/internal/probe"
	"github.com/seamdc/seam/internal/runner"
	"github.com/seamdc/seam/internal/sim"
)

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
	b, diags, err := binding.Load(f.site)
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
	// simulator when that lags, and the simulator waits for the run's
	// goroutines when they are late
	clk := runner.NewSimClock(o.Site, f.scale, simLead)
	simCtx, stopSim := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = o.Site.Run(simCtx, clk.Pace(), 1) }()
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
func openBinding(ctx context.Context, f runFlags, p *plan.Plan, b *binding.Binding, lookupEnv func(string) (string, bool), log *slog.Logger) (*siteEnv, error) {
	env := &siteEnv{contracts: b.Contracts, clk: clock.Real{}}
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
