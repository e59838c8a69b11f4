package satcmd

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/seamdc/seam/internal/peer"

	"github.com/rogpeppe/go-internal/testscript"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/seamdc/seam/internal/binding"
	"github.com/seamdc/seam/internal/clock"
	"github.com/seamdc/seam/internal/compile"
	"github.com/seamdc/seam/internal/evidence"
	"github.com/seamdc/seam/internal/grade"
	"github.com/seamdc/seam/internal/plan"
	"github.com/seamdc/seam/internal/results"
	"github.com/seamdc/seam/internal/sim"
	"github.com/seamdc/seam/internal/sim/simconfig"
)

// End-to-end runs against the simulated site, over real Modbus and SNMP
// on loopback: the example's SAT and IST plans for module ma (shortened
// by --max-hold 1s, in lockstep with the simulator as fast as it goes),
// each defect of the sim config, an interlock trip, kill -9 and resume,
// and tampering.

const (
	e2eScale = "max"
	e2eHold  = time.Second
)

var (
	exampleDir  = mustAbs("../../contracts/examples/threemodule")
	fixturesDir = mustAbs("../../fixtures")
)

func mustAbs(p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		panic(err)
	}
	return a
}

var plans sync.Map // level → path of a compiled plan

// examplePlan compiles the example for module ma at level, once.
func examplePlan(t testing.TB, level string) string {
	t.Helper()
	if p, ok := plans.Load(level); ok {
		return p.(string)
	}
	p, _, err := compile.Dir(exampleDir, compile.Options{Level: level, Module: "ma", MaxHold: e2eHold})
	require.NoError(t, err)
	require.NotNil(t, p)
	raw, err := plan.Encode(p)
	require.NoError(t, err)
	dir, err := os.MkdirTemp("", "seam-plan-")
	require.NoError(t, err)
	path := filepath.Join(dir, level+".json")
	require.NoError(t, os.WriteFile(path, raw, 0o644))
	got, _ := plans.LoadOrStore(level, path)
	return got.(string)
}

// TestRunScripts runs sat run and sat verify on real files
// (testdata/run/*.txtar), in process. Commands:
//
//	sat ARGS...               run sat
//	plan LEVEL MODULE FILE    compile the example (--max-hold 5s)
//	edit FILE OLD NEW         replace the first OLD with NEW in FILE
func TestRunScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: "testdata/run",
		Setup: func(env *testscript.Env) error {
			env.Setenv("EXAMPLE", exampleDir)
			env.Setenv("FIXTURES", fixturesDir)
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"sat":  cmdSatInProcess,
			"plan": cmdPlan,
			"edit": func(ts *testscript.TestScript, neg bool, args []string) {
				if len(args) != 3 {
					ts.Fatalf("usage: edit FILE OLD NEW")
				}
				path := ts.MkAbs(args[0])
				raw, err := os.ReadFile(path)
				ts.Check(err)
				if !bytes.Contains(raw, []byte(args[1])) {
					ts.Fatalf("%s has no %q", args[0], args[1])
				}
				ts.Check(os.WriteFile(path, bytes.Replace(raw, []byte(args[1]), []byte(args[2]), 1), 0o644))
			},
		},
	})
}

// sat runs sat in process and returns its exit code and output.
func sat(t testing.TB, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := -1
	if len(args) > 0 && args[0] == "run" {
		code = runCtx(context.Background(), args[1:], &stdout, &stderr, strings.NewReader(""), os.LookupEnv, &control{interrupt: make(chan struct{}), kill: make(chan struct{})})
	} else {
		code = Main(args, &stdout, &stderr)
	}
	return code, stdout.String(), stderr.String()
}

// simRun runs a plan against the in-process simulated site.
func simRun(t testing.TB, planPath, out string, extra ...string) (int, *results.Results, string) {
	t.Helper()
	args := append([]string{"run", planPath, "--sim", "--contracts", exampleDir, "--fixtures", fixturesDir,
		"--time-scale", e2eScale, "--out", out}, extra...)
	code, stdout, stderr := sat(t, args...)
	res, err := results.Read(filepath.Join(out, evidence.ResultsFile))
	require.NoError(t, err, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	return code, res, stdout
}

func outcomes(res *results.Results) map[string]grade.Outcome {
	out := map[string]grade.Outcome{}
	for _, c := range res.Cases {
		out[c.ID] = c.Outcome
	}
	return out
}

func TestSimulatedPlansPass(t *testing.T) {
	for _, level := range []string{plan.SAT, plan.IST} {
		t.Run(level, func(t *testing.T) {
			t.Parallel()
			p := examplePlan(t, level)
			out := filepath.Join(t.TempDir(), "ev")
			var extra []string
			var trusted, other string
			if level == plan.IST {
				var key string
				key, trusted = sshKey(t)
				_, other = sshKey(t)
				extra = []string{"--sign-key", key}
			}
			code, res, stdout := simRun(t, p, out, extra...)
			require.Equal(t, 0, code, stdout)
			assert.Equal(t, results.Passed, res.Outcome)
			for id, o := range outcomes(res) {
				assert.Equal(t, grade.Pass, o, id)
			}
			assert.Equal(t, "simulated", res.Run.Site)
			assert.Equal(t, 0.0, res.Run.TimeScale, "no speed limit")
			assert.True(t, res.Run.Lockstep)
			assert.Equal(t, "holds and square-wave runs capped at 1 s (contractc compile --max-hold); site time ran as fast as the simulator and the run allowed, in lockstep", res.Run.Shortened)
			assert.Contains(t, stdout, "evidence: "+out)

			code, vout, _ := sat(t, "verify", out)
			assert.Equal(t, 0, code, vout)
			assert.Contains(t, vout, "run: finished (manifest present)")
			assert.Contains(t, vout, "OK: "+out+" is intact")
			if level == plan.SAT {
				assert.Regexp(t, `(?m)^levels: L3 functional \d+ passed; L4 performance \d+ passed$`, vout, "verify speaks of levels")
				tamper(t, out)
				return
			}
			code, vout, _ = sat(t, "verify", out, "--trust", trusted)
			assert.Equal(t, 0, code, vout)
			assert.Regexp(t, `^signed by SHA256:\S+ \(simulator\) up to record (\d+) of \d+: the whole run, to its end\n`, vout)
			assert.Contains(t, vout, "signature: manifest.json.sig by SHA256:")
			code, vout, _ = sat(t, "verify", out, "--trust", other)
			assert.Equal(t, 2, code, vout)
			assert.Contains(t, vout, "which is not among the trusted keys")
		})
	}
}

// sshKey writes a new ed25519 key and returns the private key's path
// and a file holding its public key.
func sshKey(t testing.TB) (string, string) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	block, err := ssh.MarshalPrivateKey(priv, "")
	require.NoError(t, err)
	dir := t.TempDir()
	key := filepath.Join(dir, "id_ed25519")
	require.NoError(t, os.WriteFile(key, pem.EncodeToMemory(block), 0o600))
	sp, err := ssh.NewPublicKey(pub)
	require.NoError(t, err)
	trust := filepath.Join(dir, "trusted")
	require.NoError(t, os.WriteFile(trust, ssh.MarshalAuthorizedKey(sp), 0o644))
	return key, trust
}

// tamper changes bytes of every file of a finished bundle, one at a
// time, and wants sat verify to fail each time.
func tamper(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	files := 0
	for _, e := range entries {
		path := filepath.Join(dir, e.Name())
		orig, err := os.ReadFile(path)
		require.NoError(t, err)
		files++
		// the first and last byte and ten between
		for k := 0; k <= 11; k++ {
			i := k * (len(orig) - 1) / 11
			changed := bytes.Clone(orig)
			changed[i] ^= 0x01
			require.NoError(t, os.WriteFile(path, changed, 0o644))
			code, out, _ := sat(t, "verify", dir)
			require.Equal(t, 2, code, "changing byte %d of %s went unnoticed:\n%s", i, e.Name(), out)
			assert.Contains(t, out, "FAILED")
		}
		require.NoError(t, os.WriteFile(path, orig, 0o644))
	}
	assert.GreaterOrEqual(t, files, 7, "journal, samples, results, manifest, plan, binding, log")
	code, out, _ := sat(t, "verify", dir)
	require.Equal(t, 0, code, out)
}

// Each defect of the sim config makes a module break one clause: the
// run fails exactly the cases of that clause, with the measured value;
// a case whose precondition is a failed case is skipped.
func TestDefectsFailTheirClause(t *testing.T) {
	cfg := loadSimConfig(t)
	tests := []struct {
		defect, level string
		skipped       []string // cases skipped because a failed one gates them
	}{
		{"p1-slow-recovery", plan.SAT, nil},
		{"p1-pdu-wrong-scale", plan.SAT, []string{"sat.p1-ma.transient.training-frequency"}},
		{"l1-silent-redundancy", plan.IST, nil},
	}
	for _, tt := range tests {
		t.Run(tt.defect, func(t *testing.T) {
			t.Parallel()
			violates := cfg.Defects[tt.defect].Violates
			require.NotEmpty(t, violates)
			out := filepath.Join(t.TempDir(), "ev")
			code, res, stdout := simRun(t, examplePlan(t, tt.level), out, "--defect", tt.defect)
			assert.Equal(t, 2, code, stdout)
			assert.Equal(t, results.Failed, res.Outcome)
			assert.Equal(t, tt.defect, res.Run.Defect)
			failed := 0
			for _, c := range res.Cases {
				switch {
				case unquoted(c.Clause.Path) == unquoted(violates):
					failed++
					assert.Equal(t, grade.Fail, c.Outcome, "%s violates %s", tt.defect, c.ID)
					for _, k := range c.Checks {
						if k.Outcome == grade.Fail {
							assert.NotEmpty(t, k.Detail)
							require.NotNil(t, k.Limit, "%s %s", c.ID, k.Check)
						}
					}
				case slices.Contains(tt.skipped, c.ID):
					assert.Equal(t, grade.Skipped, c.Outcome, c.ID)
				default:
					assert.Equal(t, grade.Pass, c.Outcome, "%s should not be affected by %s: %s", c.ID, tt.defect, c.Reason)
				}
			}
			assert.Equal(t, 1, failed, "one case proves %s", violates)
			code, vout, _ := sat(t, "verify", out)
			assert.Equal(t, 0, code, vout)
		})
	}
}

// unquoted drops the quotes of a CUE path: the sim config quotes every
// label, the compiler only those that need it.
func unquoted(path string) string { return strings.ReplaceAll(path, `"`, "") }

func loadSimConfig(t *testing.T) *simconfig.Config {
	t.Helper()
	o, _, err := sim.Open(sim.Paths{Contracts: exampleDir, Fixtures: fixturesDir}, "", sim.Secrets{}, time.Time{}, nil)
	require.NoError(t, err)
	return o.Site.Config()
}

// The simulated loop reads hot once the load warms it: the interlock on
// the supply temperature trips, and the load bank's applied load (the
// simulator's own, not a read-back) reaches 0 within one sample period
// of the interlock channel, plus its device's update period and the
// command latency, after the reading crossed the limit.
func TestInterlockTripDropsTheLoad(t *testing.T) {
	t.Parallel()
	cfgDir := overheatConfig(t)
	out := filepath.Join(t.TempDir(), "ev")
	p := examplePlan(t, plan.SAT)
	watch := &tripWatch{}
	hook := func(dir string, o *sim.Opened) {
		if dir == out {
			watch.follow(o)
		}
	}
	simStarted.Store(&hook)
	defer simStarted.Store(nil)
	code, res, stdout := simRun(t, p, out, "--sim-config", cfgDir, "--defect", "l1-overheat")
	require.Equal(t, 3, code, stdout)
	require.NotNil(t, res.Abort)
	a := res.Abort
	assert.Equal(t, results.CauseInterlock, a.Cause)
	assert.Equal(t, "l1/ma/supply-temp", a.Channel)
	assert.Greater(t, *a.Value, 36.5)
	require.NotNil(t, a.ZeroedIn)

	pl, err := plan.Read(p)
	require.NoError(t, err)
	var period float64
	for _, il := range pl.Interlocks {
		if il.ID == a.Interlock {
			period = il.MaxPeriodS / 2 // the runner samples at half the plan's longest period
		}
	}
	require.Positive(t, period)
	crossed, zeroed := watch.result()
	require.False(t, crossed.IsZero(), "the simulated reading crossed 36.5 degC")
	require.False(t, zeroed.IsZero(), "the load reached 0")
	took := zeroed.Sub(crossed)
	// sample period, device update period, the bank's own ramp to 0 (at
	// 50 MW/s) and a physics step; a command takes no site time in lockstep
	limit := time.Duration((period + 0.1 + 0.1) * float64(time.Second))
	t.Logf("interlock: the reading crossed the limit at %s, the load was 0 kW %s later (limit %s; read back after %.3f s)",
		crossed.Format("15:04:05.000"), took, limit, *a.ZeroedIn)
	assert.LessOrEqual(t, took, limit)
	assert.Equal(t, grade.Aborted, outcomes(res)["sat.l1-ma.steady.flow"])
}

// simConfig is a directory holding the example's sim config with each
// old text replaced by its new one (pairs; each must be there), its
// profiles the fixture's own.
func simConfig(t *testing.T, oldNew ...string) string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(fixturesDir, "sim", "threemodule", "sim.cue"))
	require.NoError(t, err)
	dir := t.TempDir()
	rel, err := filepath.Rel(dir, filepath.Join(fixturesDir, "sim", "profiles"))
	require.NoError(t, err)
	text := string(src)
	oldNew = append([]string{`profile_dirs: ["../profiles"]`, fmt.Sprintf("profile_dirs: [%q]", rel)}, oldNew...)
	for i := 0; i+1 < len(oldNew); i += 2 {
		require.Contains(t, text, oldNew[i], "the example's sim config changed: update this test")
		text = strings.Replace(text, oldNew[i], oldNew[i+1], 1)
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sim.cue"), []byte(text), 0o644))
	return dir
}

// overheatConfig is the example's sim config with one more defect: the
// loop's supply-temperature sensor reads 20.5 % high, which crosses the
// 36.5 degC interlock once the load warms the loop a little.
func overheatConfig(t *testing.T) string {
	t.Helper()
	defect := `defects: {
		"l1-overheat": {
			violates:    #"boundaries."l1-ma".steady."supply-temp""#
			description: "test only: cdu-l1 reads its supply temperature 20.5 % high"
			devices: "cdu-l1": points: "supply-temp": factor: 1.205
		}`
	return simConfig(t, "defects: {", defect)
}

// tripWatch follows the simulation step by step: when the supply
// temperature as cdu-l1 reports it crossed 36.5 degC, and when lb-ma's
// applied load reached 0 after that.
type tripWatch struct {
	mu              sync.Mutex
	crossed, zeroed time.Time
}

// follow watches every physics step of the site (with its lock held).
func (w *tripWatch) follow(o *sim.Opened) {
	loop, bank := o.Site.Element("l1/loop"), o.Site.LoadBank("lb-ma")
	o.Site.Observe(func(now time.Time) {
		temp, _ := loop.Signal("supply-temp")
		applied := bank.Applied()
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.crossed.IsZero() && temp*1.205 > 36.5 {
			w.crossed = now
		}
		if !w.crossed.IsZero() && w.zeroed.IsZero() && applied == 0 {
			w.zeroed = now
		}
	})
}

func (w *tripWatch) result() (time.Time, time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.crossed, w.zeroed
}

// The l1-overshoot defect (900 s valve actuators) is meant to break the
// training-heat transient. The shortened plan climbs to full load in
// seconds rather than over five 300 s settles, and the slow valves let
// the supply temperature run past its interlock in the first liquid
// case: the run stops there, safely, before the transient.
func TestOvershootDefectTripsTheInterlock(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "ev")
	code, res, stdout := simRun(t, examplePlan(t, plan.SAT), out, "--defect", "l1-overshoot")
	require.Equal(t, 3, code, stdout)
	require.NotNil(t, res.Abort)
	assert.Contains(t, stdout, "fix the cause, then continue after the last completed case:\n  sat run ", "the abort says how to resume")
	assert.Contains(t, stdout, " --defect l1-overshoot --resume "+out+"\n")
	assert.Equal(t, results.CauseInterlock, res.Abort.Cause)
	assert.Equal(t, "l1-ma-supply-temp", res.Abort.Interlock)
	assert.Greater(t, *res.Abort.Value, 36.5)
	assert.Equal(t, grade.Aborted, outcomes(res)["sat.l1-ma.steady.flow"])
	assert.Equal(t, grade.Skipped, outcomes(res)["sat.l1-ma.transient.training-heat"])
}

// kill -9 of the runner, against a simulator in another process (this
// one) at 4× wall time: the load bank's watchdog drops the load, the
// bundle verifies up to the kill, and --resume finishes the run against
// the simulator in process. The runner takes the simulator's control
// interface and time scale from the binding sat sim writes.
func TestKillNineThenResume(t *testing.T) {
	t.Parallel()
	bin := buildSat(t)
	const scale = 4 // the 1 s heartbeat is 250 ms of wall time, the 3 s watchdog 750 ms
	o, bind := serveSimHere(t, scale)
	p := examplePlan(t, plan.SAT)
	out := filepath.Join(t.TempDir(), "ev")
	env := append(os.Environ(), "SEAM_SNMP_COMMUNITY=public", "SEAM_SNMP_AUTH=seam-sim-auth", "SEAM_SNMP_PRIV=seam-sim-priv")

	var killed atomic.Bool
	loaded, dropped := make(chan float64, 1), make(chan time.Time, 1)
	bank := o.Site.LoadBank("lb-ma")
	o.Site.Observe(func(now time.Time) {
		switch a := bank.Applied(); {
		case !killed.Load() && a >= 1000 && len(loaded) == 0:
			loaded <- a
		case killed.Load() && a == 0 && len(dropped) == 0:
			dropped <- now
		}
	})
	key, trust := sshKey(t)
	var stderr bytes.Buffer
	cmd := exec.Command(bin, "run", p, "--out", out, "--site", bind, "--accept-risk=energize", "--sign-key", key)
	cmd.Env, cmd.Stderr = env, &stderr
	require.NoError(t, cmd.Start())
	var load float64
	select {
	case load = <-loaded:
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Kill()
		t.Fatalf("the run never loaded lb-ma: %s", stderr.String())
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	killedAt := o.Site.Now()
	killed.Store(true)
	_ = cmd.Wait()
	var droppedAt time.Time
	select {
	case droppedAt = <-dropped:
	case <-time.After(time.Minute):
		t.Fatalf("the load bank kept its load after the runner died")
	}
	fault, err := o.Site.Signal("lb-ma", "fault")
	require.NoError(t, err)
	assert.Equal(t, float64(sim.FaultComms), fault, "the watchdog dropped it (H2 communication)")
	// the watchdog is 3 s of heartbeat silence; the runner beats every 1 s
	t.Logf("kill -9 at %.0f kW: the watchdog dropped the load %s (site time) after the kill", load, droppedAt.Sub(killedAt))
	assert.LessOrEqual(t, droppedAt.Sub(killedAt), 4*time.Second+200*time.Millisecond)

	code, vout, _ := sat(t, "verify", out)
	require.Equal(t, 0, code, vout)
	assert.Contains(t, vout, "run: not finished (no manifest): verified up to its last checkpoint")
	assert.Regexp(t, `^signed by SHA256:\S+ \(\S+\) up to record \d+ of \d+`, vout)

	code, rout, rerr := sat(t, "run", "--resume", out, "--sim", "--time-scale", "max", "--contracts", exampleDir, "--fixtures", fixturesDir, "--sign-key", key)
	require.Equal(t, 0, code, "%s\n%s", rout, rerr)
	assert.Contains(t, rout, "passed: 9 passed, 0 failed, 0 errors, 0 aborted, 0 skipped")
	res, err := results.Read(filepath.Join(out, evidence.ResultsFile))
	require.NoError(t, err)
	assert.Equal(t, 1, res.Run.Resumes)
	code, vout, _ = sat(t, "verify", out, "--trust", trust)
	require.Equal(t, 0, code, vout)
	assert.Contains(t, vout, "run: finished (manifest present)")
}

// buildSat builds the sat binary (once per test process).
func buildSat(t *testing.T) string { return peer.BuildGo(t, "./cmd/sat") }

// serveSimHere runs the simulated site in this process, as sat sim does:
// devices on loopback, the control interface, the binding (with its
// simulator's control URL and time scale) written to a directory it
// returns.
func serveSimHere(t *testing.T, scale float64) (*sim.Opened, string) {
	t.Helper()
	o, control := startSim(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = o.Site.Run(ctx, clock.Real{}, scale) }()
	t.Cleanup(func() { cancel(); <-done })
	dir := t.TempDir()
	b := o.Binding(o.ProfileDirs, o.Paths.Contracts, sim.EnvRefs)
	b.Simulator = &binding.Simulator{Control: control, TimeScale: scale}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "binding.cue"), binding.Marshal(b, "binding"), 0o644))
	return o, dir
}

// A load bank whose watchdog is shorter than its profile says (0.5 s,
// not 3 s) trips between the runner's 1 s heartbeats: every trip is a
// journalled, shown event that ends its case as an ERROR, naming how
// late the heartbeats were (not at all), and the bank is reset only
// after it read 0 kW and the operator (the simulator) confirmed.
func TestWatchdogTripIsAnEvent(t *testing.T) {
	t.Parallel()
	dir := simConfig(t, `loadbanks: {watchdog: "3 s", remote: true}`, `loadbanks: {watchdog: "0.5 s", remote: true}`)

	out := filepath.Join(t.TempDir(), "ev")
	args := []string{"run", examplePlan(t, plan.SAT), "--sim", "--contracts", exampleDir, "--fixtures", fixturesDir,
		"--sim-config", dir, "--time-scale", e2eScale, "--out", out}
	code, stdout, stderr := sat(t, args...)
	require.Equal(t, 1, code, "ERROR cases: the tool's or a device's failure\n%s", stdout)
	msg := "load bank lb-ma tripped its heartbeat watchdog: fault 3 (H2 communication); the runner's heartbeats arrived up to 0s late (the watchdog allows 3s)"
	assert.Contains(t, stderr, "WATCHDOG: "+msg)
	res, err := results.Read(filepath.Join(out, evidence.ResultsFile))
	require.NoError(t, err)
	tripped := 0
	for _, c := range res.Cases {
		if strings.HasPrefix(c.Reason, msg) {
			tripped++
			assert.Equal(t, grade.Error, c.Outcome, c.ID)
			require.NotEmpty(t, c.Operator, "the reset was confirmed")
		}
	}
	assert.Positive(t, tripped)
	journal, err := os.ReadFile(filepath.Join(out, evidence.JournalFile))
	require.NoError(t, err)
	assert.Contains(t, string(journal), `"kind":"watchdog","case":"sat.`)
	assert.Contains(t, string(journal), `"kind":"watchdog_reset"`)
	assert.Contains(t, string(journal), `"by":"simulator"`)
	code, vout, _ := sat(t, "verify", out)
	assert.Equal(t, 0, code, vout)
}

func TestResumeCommand(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"sat.json", "--site", "site", "--sign-key", "k", "--out", "ev"}, "sat run sat.json --site site --sign-key k --resume ev"},
		{[]string{"sat.json", "--sim", "--out=ev", "--operator", "A. Engineer"}, "sat run sat.json --sim --operator 'A. Engineer' --resume ev"},
		{[]string{"--resume", "ev", "--sim"}, "sat run --resume ev --sim"},
	} {
		assert.Equal(t, tt.want, resumeCommand(tt.args, "ev"), "%q", tt.args)
	}
}

// A bundle stopped before it wrote plan.json holds no plan: resuming it
// without the plan file says to give it, rather than failing to open a
// file the user never named.
func TestResumeWithoutPlanSaysToGiveIt(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ev")
	b, err := evidence.Create(dir, clock.Real{}, evidence.Options{})
	require.NoError(t, err)
	require.NoError(t, b.Close())
	code, _, stderr := sat(t, "run", "--resume", dir, "--sim")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, dir+" holds no copy of its plan yet")
	assert.Contains(t, stderr, "sat run PLAN --resume "+dir)
}
