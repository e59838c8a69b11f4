package lifecycle_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/contractc"
	"github.com/seamdc/seam/internal/inventory"
	"github.com/seamdc/seam/internal/lifecycle"
	"github.com/seamdc/seam/internal/peer/pgtest"
	"github.com/seamdc/seam/internal/satcmd"
)

const exampleDir = "../../contracts/examples/threemodule"

var handoverFile = filepath.Join(exampleDir, "inventory", "racks.json")

// fixtures are made once per test process and removed at its end.
var fixtureDir string

func TestMain(m *testing.M) {
	switch os.Getenv("SEAM_LC_EXEC") {
	case "sat":
		os.Exit(satcmd.Main(os.Args[1:], os.Stdout, os.Stderr))
	case "contractc":
		os.Exit(contractc.Main(os.Args[1:], os.Stdout, os.Stderr))
	}
	if os.Getenv("SEAM_LC_CHILD") != "" {
		os.Exit(child())
	}
	dir, err := os.MkdirTemp("", "seam-lifecycle-test-")
	if err != nil {
		panic(err)
	}
	fixtureDir = dir
	code := m.Run()
	if bundleStart {
		<-bundleDone
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// people are the example's team: one key each.
type person struct {
	name   string
	signer ssh.Signer
	pub    ssh.PublicKey
	file   string // the private key, OpenSSH format
}

var (
	peopleOnce sync.Once
	people     map[string]*person
)

// team returns the test team's keys: ops (admin), odm (vendor),
// integrator, cx (commissioning), operator, facilityd, discover, mbonly
// (a vendor of module mb only), rig (a test rig: signs evidence only)
// and stranger (in no file).
func team(t testing.TB) map[string]*person {
	peopleOnce.Do(func() {
		people = map[string]*person{}
		for _, n := range []string{"ops", "odm", "integrator", "cx", "operator", "facilityd", "discover", "mbonly", "rig", "stranger"} {
			pub, priv, err := ed25519.GenerateKey(rand.Reader)
			if err != nil {
				panic(err)
			}
			signer, err := ssh.NewSignerFromKey(priv)
			if err != nil {
				panic(err)
			}
			block, err := ssh.MarshalPrivateKey(priv, n)
			if err != nil {
				panic(err)
			}
			file := filepath.Join(fixtureDir, "key-"+n)
			if err := os.WriteFile(file, pem.EncodeToMemory(block), 0o600); err != nil {
				panic(err)
			}
			sp, _ := ssh.NewPublicKey(pub)
			if err := os.WriteFile(file+".pub", ssh.MarshalAuthorizedKey(sp), 0o644); err != nil {
				panic(err)
			}
			people[n] = &person{name: n, signer: signer, pub: sp, file: file}
		}
	})
	return people
}

func as(t testing.TB, name string) lifecycle.Auth {
	return lifecycle.KeyAuth(team(t)[name].signer, "")
}

// policy is the example's access policy.
func policy(t testing.TB, extra map[string]lifecycle.Member) *lifecycle.Policy {
	tm := team(t)
	var signers strings.Builder
	for _, n := range []string{"ops", "odm", "integrator", "cx", "operator", "facilityd", "discover", "mbonly"} {
		fmt.Fprintf(&signers, "%s namespaces=\"seam-lifecycle\" %s", n, ssh.MarshalAuthorizedKey(tm[n].pub))
	}
	p := &lifecycle.Policy{
		Format:         lifecycle.PolicyFormat,
		AllowedSigners: signers.String(),
		EvidenceKeys:   string(ssh.MarshalAuthorizedKey(tm["rig"].pub)),
		Roles: map[string]lifecycle.Role{
			"admin":         {May: []string{lifecycle.MayAccess, lifecycle.MayReleaseAnyHold}},
			"vendor":        {Transitions: []string{"design>built"}},
			"integrator":    {Transitions: []string{"built>integrated", "integrated>shipped", "shipped>installed"}, May: []string{lifecycle.MayAsBuilt}},
			"commissioning": {Transitions: []string{"installed>commissioned", "commissioned>provisioned", "rma>commissioned"}, May: []string{lifecycle.MayIssues}},
			"acceptance":    {May: []string{lifecycle.MayWaive}},
			"operator":      {Transitions: []string{"provisioned>operating", "operating>maintenance", "maintenance>operating", "*>rma", "*>decommissioned"}, May: []string{lifecycle.MayHolds}},
			"facility":      {May: []string{lifecycle.MayHolds}},
			"discovery":     {May: []string{lifecycle.MayReconcile}},
		},
		Members: map[string]lifecycle.Member{
			"ssh:ops":        {Roles: []string{"admin", "vendor", "integrator", "commissioning", "operator", "acceptance"}},
			"ssh:odm":        {Roles: []string{"vendor"}},
			"ssh:integrator": {Roles: []string{"integrator"}},
			"ssh:cx":         {Roles: []string{"commissioning"}},
			"ssh:operator":   {Roles: []string{"operator"}},
			"ssh:facilityd":  {Roles: []string{"facility"}},
			"ssh:discover":   {Roles: []string{"discovery"}},
			"ssh:mbonly":     {Roles: []string{"vendor"}, Modules: []string{"mb"}},
		},
	}
	for k, v := range extra {
		p.Members[k] = v
	}
	require.NoError(t, p.Validate())
	return p
}

var (
	graphOnce sync.Once
	graph     *inventory.Graph
	graphErr  error
)

// exampleGraph is the example's design: its contracts without the
// as-built.
func exampleGraph(t testing.TB) *inventory.Graph {
	graphOnce.Do(func() {
		c, diags, err := contract.Load(exampleDir)
		if err == nil && len(diags) > 0 {
			err = fmt.Errorf("%d diagnostics loading the example", len(diags))
		}
		if err != nil {
			graphErr = err
			return
		}
		g, gd := c.Graph()
		if len(gd) > 0 {
			graphErr = fmt.Errorf("%d diagnostics building the graph", len(gd))
		}
		graph = g
	})
	require.NoError(t, graphErr)
	return graph
}

// clock is a test clock: each reading a millisecond after the last, or
// set.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 10, 1, 8, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Millisecond)
	return c.t
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// engine makes stores of one engine.
type engine struct {
	name  string
	pg    *pgtest.Server
	snaps map[string]*snapshot
}

// engines are SQLite and a real PostgreSQL, started for the test.
func engines(t *testing.T) []*engine {
	return []*engine{{name: lifecycle.SQLite}, {name: lifecycle.Postgres}}
}

// start makes the engine ready (PostgreSQL: a server for the test that
// calls it).
func (e *engine) start(t testing.TB) {
	if e.name == lifecycle.Postgres && e.pg == nil {
		e.pg = pgStart(t)
	}
}

const pwEnv = "SEAM_LC_TEST_PG_PASSWORD"

// config is a new, empty store's configuration.
func (e *engine) config(t testing.TB, clk *clock) lifecycle.Config {
	if e.name == lifecycle.SQLite {
		return lifecycle.Config{Store: filepath.Join(t.TempDir(), "lifecycle.db"), Now: clk.Now}
	}
	return e.pgConfig(e.pg.CreateDatabase(t), clk)
}

// pgConfig is the configuration of PostgreSQL database db, as the
// server's superuser, its password by reference.
func (e *engine) pgConfig(db string, clk *clock) lifecycle.Config {
	cfg := lifecycle.Config{Now: clk.Now, Store: e.pg.URL(db, e.pg.User), Password: "env:" + pwEnv}
	pw := e.pg.Password
	cfg.LookupEnv = func(k string) (string, bool) {
		if k == pwEnv {
			return pw, true
		}
		return os.LookupEnv(k)
	}
	return cfg
}

// newStore is a store of the example, initialised by ops: a clone of
// the engine's fresh store, or (with extra members in its policy) one
// made anew.
func newStore(t *testing.T, e *engine, clk *clock, extra map[string]lifecycle.Member) (*lifecycle.Store, lifecycle.Config) {
	t.Helper()
	if extra == nil {
		return stageCfg(t, e, clk, "design")
	}
	cfg := e.config(t, clk)
	s, err := lifecycle.Init(context.Background(), cfg, as(t, "ops"), exampleGraph(t), policy(t, extra))
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s, cfg
}

// snapshot is a prepared store of an engine (a SQLite file, or a
// PostgreSQL database to clone as a template) and the test clock's
// time after it was made: the tests that need a store at some stage of
// the example's life clone it instead of making it again.
type snapshot struct {
	file, db string
	at       time.Time
}

// stage is a new store at a stage of the example's life (design,
// asbuilt, installed, commissioned, operating), cloned from the engine's
// snapshot of it; clk is set to the time after the snapshot.
func stage(t *testing.T, e *engine, clk *clock, name string) *lifecycle.Store {
	s, _ := stageCfg(t, e, clk, name)
	return s
}

func stageCfg(t *testing.T, e *engine, clk *clock, name string) (*lifecycle.Store, lifecycle.Config) {
	t.Helper()
	snap := e.snapshot(t, name)
	clk.Set(snap.at)
	dest := filepath.Join(t.TempDir(), "lifecycle.db")
	if e.name == lifecycle.Postgres {
		dest = "t_" + randomHex(t)
	}
	cfg := e.clone(t, snap, dest, clk)
	s, err := lifecycle.Open(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s, cfg
}

// installed is a store of the example with its as-built imported,
// module ma installed, and rack mb/r01 installed too.
func installed(t *testing.T, e *engine, clk *clock) *lifecycle.Store {
	return stage(t, e, clk, "installed")
}

// commissioned is installed, with ma commissioned on its SAT bundle.
func commissioned(t *testing.T, e *engine, clk *clock) *lifecycle.Store {
	return stage(t, e, clk, "commissioned")
}

// operating is commissioned with gpu-a-r01-n01 and -n03 provisioned on
// their baselines and in service.
func operating(t *testing.T, e *engine, clk *clock) *lifecycle.Store {
	return stage(t, e, clk, "operating")
}

// snapshot is the engine's snapshot of a stage, made the first time a
// test asks for it.
func (e *engine) snapshot(t *testing.T, name string) *snapshot {
	t.Helper()
	if snap, ok := e.snaps[name]; ok {
		return snap
	}
	ctx := context.Background()
	clk := newClock()
	dest := filepath.Join(fixtureDir, e.name+"-"+name+".db")
	if e.name == lifecycle.Postgres {
		dest = "snap_" + name
	}
	var s *lifecycle.Store
	var err error
	switch name {
	case "design":
		s, err = lifecycle.Init(ctx, e.empty(t, dest, clk), as(t, "ops"), exampleGraph(t), policy(t, nil))
		require.NoError(t, err)
	case "asbuilt":
		s = e.from(t, "design", dest, clk)
		raw, err := os.ReadFile(handoverFile)
		require.NoError(t, err)
		im, err := s.Import(ctx, as(t, "integrator"), handoverFile, raw, "")
		require.NoError(t, err)
		require.Equal(t, 15792, im.Changed, "the example's as-built gives every tray and part its serial")
	case "installed":
		s = e.from(t, "asbuilt", dest, clk)
		for _, el := range []string{"ma", "mb/r01"} {
			for _, step := range []struct {
				who string
				to  lifecycle.State
			}{{"odm", lifecycle.Built}, {"integrator", lifecycle.Integrated}, {"integrator", lifecycle.Shipped}, {"integrator", lifecycle.Installed}} {
				_, err := s.Transition(ctx, as(t, step.who), lifecycle.Move{Element: el, To: step.to, Reason: "the example's " + el + ": " + string(step.to)})
				require.NoError(t, err, "%s → %s", el, step.to)
			}
		}
	case "commissioned":
		s = e.from(t, "installed", dest, clk)
		_, err = s.Transition(ctx, as(t, "cx"), lifecycle.Move{Element: "ma", To: lifecycle.Commissioned, SAT: satBundles(t).passing, Reason: "SAT of ma passed"})
		require.NoError(t, err)
	case "operating":
		s = e.from(t, "commissioned", dest, clk)
		for _, n := range []string{"01", "03"} {
			b := baseline(t, "gpu-a-r01-n"+n, "SN-COMPUTE-00000"+n, clk.Now(), true)
			_, err := s.Transition(ctx, as(t, "cx"), lifecycle.Move{Element: "gpu-a-r01-n" + n, To: lifecycle.Provisioned, Baselines: []string{b}, Reason: "burned in"})
			require.NoError(t, err)
			_, err = s.Transition(ctx, as(t, "operator"), lifecycle.Move{Element: "gpu-a-r01-n" + n, To: lifecycle.Operating, Reason: "in service"})
			require.NoError(t, err)
		}
	default:
		t.Fatalf("no stage %q", name)
	}
	if e.name == lifecycle.SQLite {
		_, err = s.DB().ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)")
		require.NoError(t, err)
	}
	require.NoError(t, s.Close())
	snap := &snapshot{at: clk.Now()}
	if e.name == lifecycle.SQLite {
		snap.file = dest
	} else {
		snap.db = dest
	}
	if e.snaps == nil {
		e.snaps = map[string]*snapshot{}
	}
	e.snaps[name] = snap
	return snap
}

// from opens a clone of the snapshot of stage at dest, the clock set to
// its time.
func (e *engine) from(t *testing.T, stage, dest string, clk *clock) *lifecycle.Store {
	t.Helper()
	snap := e.snapshot(t, stage)
	clk.Set(snap.at)
	s, err := lifecycle.Open(context.Background(), e.clone(t, snap, dest, clk))
	require.NoError(t, err)
	return s
}

// clone copies a snapshot to dest (a SQLite file, a PostgreSQL
// database's name) and returns the clone's configuration.
func (e *engine) clone(t *testing.T, snap *snapshot, dest string, clk *clock) lifecycle.Config {
	t.Helper()
	if e.name == lifecycle.SQLite {
		raw, err := os.ReadFile(snap.file)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(dest, raw, 0o644))
		return lifecycle.Config{Store: dest, Now: clk.Now}
	}
	e.pg.Exec("postgres", fmt.Sprintf("CREATE DATABASE %s TEMPLATE %s", dest, snap.db))
	return e.pgConfig(dest, clk)
}

// empty is the configuration of a new, empty store at dest.
func (e *engine) empty(t *testing.T, dest string, clk *clock) lifecycle.Config {
	if e.name == lifecycle.SQLite {
		return lifecycle.Config{Store: dest, Now: clk.Now}
	}
	e.pg.Exec("postgres", "CREATE DATABASE "+dest)
	return e.pgConfig(dest, clk)
}

func randomHex(t testing.TB) string {
	b := make([]byte, 6)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return hex.EncodeToString(b)
}

// bundles are SAT evidence of the example, made once per test process
// with the real commands (contractc compile, sat run --sim: this test
// binary runs them as its children): a run of module ma signed by rig's
// key, one of ma with a defect that fails, signed too, and one
// unsigned. They are made in the background while the tests that need
// none run (prefetchBundles).
type bundles struct {
	passing, failing, unsigned string
}

var (
	bundleOnce  sync.Once
	bundleDone  = make(chan struct{})
	bundleSet   bundles
	bundleErr   error
	bundleStart bool
)

// prefetchBundles starts making the bundles; TestMain waits for them
// before it removes their directory.
func prefetchBundles(t testing.TB) {
	keys := team(t)
	bundleOnce.Do(func() {
		bundleStart = true
		go func() {
			defer close(bundleDone)
			bundleSet, bundleErr = makeBundles(keys["rig"].file)
		}()
	})
}

func satBundles(t testing.TB) bundles {
	prefetchBundles(t)
	<-bundleDone
	require.NoError(t, bundleErr)
	return bundleSet
}

func makeBundles(rigKey string) (bundles, error) {
	root, err := filepath.Abs("../..")
	if err != nil {
		return bundles{}, err
	}
	contracts := filepath.Join(root, "contracts", "examples", "threemodule")
	plan := filepath.Join(fixtureDir, "plan-ma.json")
	if out, err := self("contractc", "compile", contracts, "--level", "sat", "--module", "ma", "--max-hold", "1s", "-o", plan); err != nil {
		return bundles{}, fmt.Errorf("contractc compile: %w\n%s", err, out)
	}
	var b bundles
	runs := []struct {
		into       *string
		name       string
		args       []string
		wantFailed bool
	}{
		{&b.passing, "ma", []string{"--sign-key", rigKey}, false},
		{&b.failing, "ma-failing", []string{"--sign-key", rigKey, "--defect", "p1-slow-recovery"}, true},
		{&b.unsigned, "ma-unsigned", nil, false},
	}
	errs := make([]error, len(runs))
	var wg sync.WaitGroup
	for i, r := range runs {
		*r.into = filepath.Join(fixtureDir, "bundle-"+r.name)
		wg.Add(1)
		go func() {
			defer wg.Done()
			args := append([]string{"run", plan, "--sim", "--time-scale", "max", "--contracts", contracts,
				"--fixtures", filepath.Join(root, "fixtures"), "--out", *r.into}, r.args...)
			out, err := self("sat", args...)
			var exit *exec.ExitError
			if r.wantFailed && errors.As(err, &exit) && exit.ExitCode() == 2 {
				err = nil
			} else if r.wantFailed && err == nil {
				err = errors.New("passed: the defect should make it fail")
			}
			if err != nil {
				errs[i] = fmt.Errorf("sat run (%s): %w\n%s", r.name, err, out)
			}
		}()
	}
	wg.Wait()
	return b, errors.Join(errs...)
}

// self runs this test binary as sat or contractc (TestMain sends it to
// their Main), within three minutes.
func self(program string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = append(os.Environ(), "SEAM_LC_EXEC="+program)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// baseline writes a node's baseline into the test's directory.
func baseline(t *testing.T, node, serial string, taken time.Time, passed bool) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), strings.ReplaceAll(node, "/", "_")+".baseline.json")
	require.NoError(t, lifecycle.WriteBaseline(p, &lifecycle.Baseline{Node: node, Serial: serial, Taken: taken, Tool: "test", Passed: passed,
		Metrics: map[string]float64{"gpu_count": 4, "nccl_allreduce_busbw_gbps": 812.4}}))
	return p
}

// pgStart starts a PostgreSQL for the test (TLS on; statements slower
// than a second are logged, and shown if the test fails).
func pgStart(t testing.TB) *pgtest.Server {
	return pgtest.Start(t, pgtest.Options{TLS: true, Settings: []string{"log_min_duration_statement=1000"}})
}
