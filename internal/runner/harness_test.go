package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/binding"
	"github.com/seamdc/seam/internal/clock"
	"github.com/seamdc/seam/internal/evidence"
	"github.com/seamdc/seam/internal/plan"
	"github.com/seamdc/seam/internal/probe"
	"github.com/seamdc/seam/internal/profile"
	"github.com/seamdc/seam/internal/results"
	"github.com/seamdc/seam/internal/version"
)

// The harness is a tiny site: a meter for a feed voltage (415 V less a
// droop per kW of load), a CDU leak alarm, and a load bank whose applied
// load follows its setpoint at its fastest rate. Tests run it inside a
// testing/synctest bubble, where the runner's real clock is virtual and
// moves only when every goroutine waits: timing is exact and a run of
// minutes of site time takes milliseconds. The simulated site's
// end-to-end tests, over real protocols, are in internal/satcmd.

const sha = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

var (
	profOnce sync.Once
	profs    *profile.Set
	profErr  error
)

func loadbankProfile(t testing.TB) *profile.Profile {
	t.Helper()
	profOnce.Do(func() { profs, profErr = profile.MustLoad("../../fixtures/profiles") })
	require.NoError(t, profErr)
	return profs.Get("generic-loadbank")
}

// tinyPlan has a steady case, a transient case that depends on it, and a
// failure case with an injected leak and an alarm check.
func tinyPlan(t testing.TB) (*plan.Plan, []byte) {
	t.Helper()
	src := func(paths ...string) []string { return paths }
	vol := func(steps ...plan.Step) []plan.Step { return steps }
	ramp := func(id string, from, to, rate float64) plan.Step {
		return plan.Step{ID: id, Op: plan.OpRamp, LoadBank: "lb-ma", FromKW: plan.F(from), KW: plan.F(to), RateKWPerS: rate, EstimatedS: 1}
	}
	hold := func(id string, d float64) plan.Step {
		return plan.Step{ID: id, Op: plan.OpHold, DurationS: d, EstimatedS: d}
	}
	set0 := plan.Step{ID: "start", Op: plan.OpSetLoad, LoadBank: "lb-ma", KW: plan.F(0), EstimatedS: 0}
	idle := plan.Precondition{Kind: plan.PreLoadBankIdle, LoadBank: "lb-ma", Text: "lb-ma at 0 kW"}
	state := plan.Precondition{Kind: plan.PreState, Text: "p1 and ma connected"}
	vsamp := func(p float64) plan.Sampling {
		return plan.Sampling{Channel: "p1/ma/voltage", MaxPeriodS: p, Reason: "test"}
	}
	p := &plan.Plan{
		Header: plan.Header{Format: plan.Format, Generated: plan.Generated, Tool: plan.Tool{Name: "contractc", Version: version.Version},
			Site: "tiny", Level: plan.All, Inputs: plan.Inputs{Boundaries: map[string]string{"p1-ma": sha, "l1-ma": sha}, Contracts: sha, Files: map[string]string{"tiny.cue": sha}, Schema: sha, SchemaVersion: "v1alpha1"}},
		LoadBanks: []plan.LoadBank{{ID: "lb-ma", Module: "ma", Kind: "resistive", RatingKW: 2500, ResolutionKW: 5, MaxRateKWPerS: 50000}},
		Sources: map[string]plan.Source{
			"v.min": {Pos: "joints.cue:1:1", Value: "400 V"}, "v.max": {Pos: "joints.cue:1:2", Value: "430 V"},
			"v.dev": {Pos: "joints.cue:2:1", Value: "30 V"}, "v.rec": {Pos: "joints.cue:2:2", Value: "1 s"},
			"leak.within": {Pos: "joints.cue:3:1", Value: "2 s"}, "v.safety": {Pos: "joints.cue:4:1", Value: "true"},
		},
		Interlocks: []plan.Interlock{
			{ID: "p1-ma-voltage", Channel: "p1/ma/voltage", Min: plan.F(350), Max: plan.F(480), MaxPeriodS: 1, MaxSilenceS: 5, Reason: "the band", Sources: src("v.safety"), Unit: "V"},
			{ID: "l1-ma-leak", Channel: "l1/ma/leak", Max: plan.F(0.5), MaxPeriodS: 1, MaxSilenceS: 5, Reason: "the alarm is raised", Sources: src("v.safety")},
		},
		Cases: []plan.Case{
			{ID: "sat.p1-ma.steady.voltage", Boundary: "p1-ma", Kind: plan.Steady, Level: plan.SAT, Module: "ma", Title: "steady voltage",
				Clause: plan.ClauseRef{Path: `boundaries."p1-ma".steady.voltage`, Pos: "joints.cue:1:1", BoundaryDigest: sha}, Sides: []string{plan.Guarantee},
				Preconditions: []plan.Precondition{state, idle}, Interlocks: []string{"p1-ma-voltage", "l1-ma-leak"}, Sampling: []plan.Sampling{vsamp(1)},
				Steps: vol(set0, ramp("ramp-load", 0, 1000, 100), hold("hold", 10), ramp("ramp-zero", 1000, 0, 100)),
				Checks: []plan.Check{{ID: "guarantee-in-band", Kind: plan.InBand, Side: plan.Guarantee, Channel: "p1/ma/voltage", Unit: "V",
					Min: plan.F(400), Max: plan.F(430), Steps: []string{"hold"}, Sources: src("v.min", "v.max")}}},
			{ID: "sat.p1-ma.transient.step", Boundary: "p1-ma", Kind: plan.Transient, Level: plan.SAT, Module: "ma", Title: "load step",
				Clause: plan.ClauseRef{Path: `boundaries."p1-ma".transient.step`, Pos: "joints.cue:2:1", BoundaryDigest: sha}, Sides: []string{plan.Guarantee},
				Preconditions: []plan.Precondition{{Kind: plan.PreCasePassed, Case: "sat.p1-ma.steady.voltage", Text: "steady passed"}, idle},
				Interlocks:    []string{"p1-ma-voltage", "l1-ma-leak"}, Sampling: []plan.Sampling{vsamp(0.1)},
				Steps: vol(set0, ramp("ramp-load", 0, 200, 100), ramp("step-up", 200, 1200, 20000), hold("hold-high", 3),
					ramp("step-down", 1200, 200, 20000), hold("hold-low", 3), ramp("ramp-zero", 200, 0, 100)),
				Checks: []plan.Check{
					{ID: "guarantee-max-deviation", Kind: plan.MaxDeviation, Side: plan.Guarantee, Channel: "p1/ma/voltage", Unit: "V",
						Reference: plan.F(415), MaxDeviation: plan.F(30), Steps: []string{"step-up", "hold-high", "step-down", "hold-low"}, Sources: src("v.dev")},
					{ID: "guarantee-recovery-time", Kind: plan.RecoveryTime, Side: plan.Guarantee, Channel: "p1/ma/voltage", Unit: "V",
						Min: plan.F(400), Max: plan.F(430), WithinS: 1, Steps: []string{"step-up", "step-down"}, Sources: src("v.rec", "v.min", "v.max")}}},
			{ID: "ist.l1-ma.failure.leak", Boundary: "l1-ma", Kind: plan.Failure, Level: plan.IST, Module: "ma", Title: "leak",
				Clause: plan.ClauseRef{Path: `boundaries."l1-ma".failure.leak`, Pos: "joints.cue:3:1", BoundaryDigest: sha}, Sides: []string{plan.Guarantee},
				Preconditions: []plan.Precondition{idle}, Interlocks: []string{"p1-ma-voltage"},
				Suppressed: []plan.Suppressed{{Channel: "l1/ma/leak", Reason: "the case raises it"}},
				Sampling:   []plan.Sampling{{Channel: "l1/ma/leak", MaxPeriodS: 0.2, Reason: "alarm delay"}},
				Steps: vol(set0, ramp("ramp-load", 0, 500, 100), hold("baseline", 2),
					plan.Step{ID: "inject", Op: plan.OpOperator, Event: "leak", Target: "l1/loop/cdu-2", Action: "Wet the leak sensor", Expect: "leak alarm", EstimatedS: 120},
					plan.Step{ID: "await-leak", Op: plan.OpAwaitAlarm, Channel: "l1/ma/leak", TimeoutS: 4, EstimatedS: 2}, hold("observe", 3),
					plan.Step{ID: "restore", Op: plan.OpOperator, Event: "leak", Target: "l1/loop/cdu-2", Action: "Dry the sensor", Expect: "normal", EstimatedS: 120},
					ramp("ramp-zero", 500, 0, 100)),
				Checks: []plan.Check{{ID: "guarantee-alarm-within", Kind: plan.AlarmWithin, Side: plan.Guarantee, Channel: "l1/ma/leak", WithinS: 2, From: "inject", Sources: src("leak.within")}}},
		},
	}
	for i, c := range p.Cases {
		p.Coverage = append(p.Coverage, plan.Coverage{Clause: c.Clause.Path, Pos: c.Clause.Pos, Status: plan.Full, Cases: []string{c.ID}})
		for _, st := range c.Steps { // the estimates the progress counts down
			p.Cases[i].EstimatedS += st.EstimatedS
		}
	}
	raw, err := plan.Encode(p)
	require.NoError(t, err)
	back, err := plan.Decode(raw)
	require.NoError(t, err)
	return back, raw
}

// world is the fake site's physics, on the fake clock.
type world struct {
	mu       sync.Mutex
	clk      clock.Clock
	droop    float64 // V per kW
	leakAt   time.Time
	leakLag  time.Duration
	silent   map[string]bool // devices that answer with errors
	hung     map[string]bool // devices whose reads never come back
	bank     *fakeBank
	faultLog []string
}

func (w *world) voltage() float64 {
	w.mu.Lock()
	d := w.droop
	w.mu.Unlock()
	return 415 - d*w.bank.appliedNow()
}

func (w *world) leak() float64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.leakAt.IsZero() && !w.clk.Now().Before(w.leakAt.Add(w.leakLag)) {
		return 1
	}
	return 0
}

func (w *world) isHung(dev string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.hung[dev]
}

func (w *world) isSilent(dev string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.silent[dev]
}

// Inject and Clear are the simulator's control interface.
func (w *world) Inject(_ context.Context, kind, target string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.faultLog = append(w.faultLog, "inject "+kind+" "+target)
	if kind == "leak" {
		w.leakAt = w.clk.Now()
	}
	return nil
}

func (w *world) Clear(_ context.Context, kind, target string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.faultLog = append(w.faultLog, "clear "+kind+" "+target)
	if kind == "leak" {
		w.leakAt = time.Time{}
	}
	return nil
}

// meter is a read-only device whose points the world computes.
type meter struct {
	name   string
	w      *world
	p      *profile.Profile
	values map[string]func() float64
}

func newMeter(name string, w *world, values map[string]func() float64) *meter {
	p := &profile.Profile{Name: "fake-meter", Protocol: profile.Modbus, UpdatePeriod: 100 * time.Millisecond, StaleAfter: 300 * time.Millisecond}
	for n := range values {
		p.Points = append(p.Points, &profile.Point{Name: n})
	}
	sort.Slice(p.Points, func(i, j int) bool { return p.Points[i].Name < p.Points[j].Name })
	return &meter{name: name, w: w, p: p, values: values}
}

func (m *meter) Name() string              { return m.name }
func (m *meter) Profile() *profile.Profile { return m.p }
func (m *meter) Requests() int64           { return 0 }
func (m *meter) Close() error              { return nil }
func (m *meter) Write(context.Context, string, float64) error {
	return probe.ErrNotWritable
}

func (m *meter) Read(ctx context.Context) ([]probe.Reading, error) {
	if m.w.isHung(m.name) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	now := m.w.clk.Now()
	var out []probe.Reading
	var err error
	for _, pt := range m.p.Points {
		r := probe.Reading{Device: m.name, Point: pt.Name, Received: now}
		if m.w.isSilent(m.name) {
			r.Quality, r.Err = probe.Bad, errors.New("timed out after 1s")
			err = r.Err
		} else {
			r.Value = m.values[pt.Name]()
			r.Raw = r.Value
		}
		out = append(out, r)
	}
	return out, err
}

// fakeBank is a load bank behind probe.Device: applied follows the
// setpoint at maxRate while enabled, remote and not faulted.
type fakeBank struct {
	p   *profile.Profile
	clk clock.Clock

	mu                    sync.Mutex
	enable, remote        bool
	setpoint, applied, hb float64
	fault                 int
	last                  time.Time
	maxRate               float64
	writes                []string
	times                 []time.Time // of writes
	failBeats             bool
	limit                 float64 // the most it can apply (0: its setpoint)
}

func (f *fakeBank) Name() string              { return "lb-ma" }
func (f *fakeBank) Profile() *profile.Profile { return f.p }
func (f *fakeBank) Requests() int64           { return 0 }
func (f *fakeBank) Close() error              { return nil }

func (f *fakeBank) step() {
	now := f.clk.Now()
	target := 0.0
	if f.enable && f.fault == 0 {
		target = f.setpoint
	}
	if f.limit > 0 {
		target = min(target, f.limit)
	}
	move := f.maxRate * now.Sub(f.last).Seconds()
	if math.Abs(target-f.applied) <= move {
		f.applied = target
	} else {
		f.applied += math.Copysign(move, target-f.applied)
	}
	f.last = now
}

func (f *fakeBank) appliedNow() float64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.step()
	return f.applied
}

func (f *fakeBank) Read(ctx context.Context) ([]probe.Reading, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.step()
	b2f := func(b bool) float64 {
		if b {
			return 1
		}
		return 0
	}
	vals := map[string]float64{"enable": b2f(f.enable), "setpoint": f.setpoint, "applied": f.applied, "remote": b2f(f.remote),
		"fault": float64(f.fault), "status": 0, "heartbeat": f.hb}
	var out []probe.Reading
	for _, pt := range f.p.Points {
		v := vals[pt.Name]
		out = append(out, probe.Reading{Device: "lb-ma", Point: pt.Name, Value: v, Raw: v, State: pt.StateName(int64(v)), Received: f.clk.Now()})
	}
	return out, nil
}

func (f *fakeBank) Write(ctx context.Context, point string, v float64) error {
	if pt := f.p.Point(point); pt == nil || !pt.Writable() {
		return probe.ErrNotWritable
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.step()
	if !f.remote {
		return errors.New("local control")
	}
	if point == "heartbeat" && f.failBeats {
		return errors.New("timed out after 1s")
	}
	f.writes = append(f.writes, fmt.Sprintf("%s=%g", point, v))
	f.times = append(f.times, f.clk.Now())
	switch point {
	case "enable":
		f.enable = v != 0 && f.fault == 0
	case "setpoint":
		f.setpoint = v
	case "heartbeat":
		f.hb = v
	case "fault-reset":
		f.fault = 0
	}
	return nil
}

// setpoints are the setpoint writes and when they were made.
func (f *fakeBank) setpoints() ([]float64, []time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var vs []float64
	var ts []time.Time
	for i, w := range f.writes {
		var v float64
		if _, err := fmt.Sscanf(w, "setpoint=%g", &v); err == nil {
			vs, ts = append(vs, v), append(ts, f.times[i])
		}
	}
	return vs, ts
}

// wrote lists the writes to point, or all writes for "".
func (f *fakeBank) wrote(point string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, w := range f.writes {
		if point == "" || strings.HasPrefix(w, point+"=") {
			out = append(out, w)
		}
	}
	return out
}

// rig is a run under test. Make it inside synctest.Test.
type rig struct {
	t    *testing.T
	clk  clock.Clock
	t0   time.Time
	w    *world
	p    *plan.Plan
	raw  []byte
	dir  string
	site *Site
	r    *Runner
	op   Operator
}

func newRig(t *testing.T) *rig {
	clk := clock.Real{}
	start := clk.Now()
	w := &world{clk: clk, droop: 0.005, leakLag: 500 * time.Millisecond, silent: map[string]bool{}, hung: map[string]bool{}}
	w.bank = &fakeBank{p: loadbankProfile(t), clk: clk, remote: true, maxRate: 50000, last: start}
	p, raw := tinyPlan(t)
	pdu := newMeter("pdu-p1", w, map[string]func() float64{"feed-voltage": w.voltage})
	cdu := newMeter("cdu-l1", w, map[string]func() float64{"leak": w.leak})
	b := &binding.Binding{Dir: "fake",
		Devices:   []*binding.Device{{Name: "cdu-l1"}, {Name: "lb-ma"}, {Name: "pdu-p1"}},
		Channels:  []*binding.Channel{{Name: "l1/ma/leak", DeviceName: "cdu-l1", PointName: "leak"}, {Name: "p1/ma/voltage", DeviceName: "pdu-p1", PointName: "feed-voltage"}},
		LoadBanks: []*binding.LoadBank{{Name: "lb-ma", DeviceName: "lb-ma", Roles: map[string]string{}}}}
	devs := map[string]probe.Device{"pdu-p1": pdu, "cdu-l1": cdu, "lb-ma": w.bank}
	site, err := NewSite(p, b, devs, clk, nil)
	require.NoError(t, err)
	site.Kind, site.Faults, site.TimeScale = Simulated, w, 1
	site.BindingText = []byte("// fake binding\n")
	site.BindingDigest = Digest(site.BindingText)
	return &rig{t: t, clk: clk, t0: start, w: w, p: p, raw: raw, dir: filepath.Join(t.TempDir(), "ev"), site: site, op: Simulator{Clock: clk}}
}

func (g *rig) config() Config {
	return Config{Plan: g.p, PlanBytes: g.raw, Site: g.site, Dir: g.dir, Clock: g.clk, Operator: g.op, ContractsDigest: sha}
}

// run runs the plan to its end.
func (g *rig) run(cfg Config) (*results.Results, error) {
	g.t.Helper()
	r, err := New(cfg)
	require.NoError(g.t, err)
	g.r = r
	return r.Run(context.Background())
}

// at is the site time d after the rig was made.
func (g *rig) at(d time.Duration) time.Time { return g.t0.Add(d) }

// records returns the journal's records of kind.
func (g *rig) records(kind string) []evidence.Record {
	g.t.Helper()
	rep, err := evidence.Verify(g.dir, nil)
	require.NoError(g.t, err)
	require.Empty(g.t, rep.Problems)
	var out []evidence.Record
	for _, r := range readRecords(g.t, g.dir) {
		if r.Kind == kind {
			out = append(out, r)
		}
	}
	return out
}

func readRecords(t *testing.T, dir string) []evidence.Record {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, evidence.JournalFile))
	require.NoError(t, err)
	var out []evidence.Record
	for _, line := range bytes.Split(bytes.TrimSpace(raw), []byte("\n")) {
		var r evidence.Record
		require.NoError(t, json.Unmarshal(line, &r))
		out = append(out, r)
	}
	return out
}
