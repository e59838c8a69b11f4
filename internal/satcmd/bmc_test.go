package satcmd

import (
	"errors"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/binding"
	"github.com/seamdc/seam/internal/bmcsecret"
	"github.com/seamdc/seam/internal/evidence"
	"github.com/seamdc/seam/internal/sim"
)

// sat bmc rotate (the binary, the simulated site in this process)
// killed with SIGKILL at 20 seeded random moments of its rotation of a
// rack's 35 BMCs (--parallel 8, so a kill lands with BMCs half-way in
// both schemes): after every kill each BMC accepts the active or the
// pending secret the secrets file holds, no BMC has locked an account
// out, and the partial evidence bundle verifies; a run that is not
// killed then finishes the rotation under way. Every byte the runs
// printed or logged, and every evidence file, is searched for every
// secret the file has held: none is there. SEAM_TEST_SEED replays a
// seed the test printed.
func TestBMCRotateKilledAtRandomMoments(t *testing.T) {
	t.Parallel()
	bin := buildSat(t)
	key, trust := sshKey(t)
	o, site := rackBMCs(t, "a-r01")
	seed := uint64(time.Now().UnixNano())
	if s, ok := os.LookupEnv("SEAM_TEST_SEED"); ok {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (SEAM_TEST_SEED=%d replays it)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 40))
	secretsPath := filepath.Join(site, "bmc-secrets.json")
	secrets := map[string]bool{}
	var printed strings.Builder
	var bundles []string
	// rotate runs sat bmc rotate; kill, when set, is how long after the
	// start (early) or after it said it is rotating to kill it. It
	// returns the exit, how long after it was killed (0: not killed),
	// and how long the rotation itself took.
	rotate := func(kill func(rotating <-chan struct{}) time.Duration) (exit error, killedAfter, took time.Duration) {
		ev := filepath.Join(t.TempDir(), "ev")
		bundles = append(bundles, ev)
		p := startSat(t, bin, "rotating ", "bmc", "rotate", "--site", site, "--parallel", "8", "--evidence", ev,
			"--sign-key", key, "--by", "test", "-v")
		if kill != nil {
			wait := kill(p.ready)
			var killed bool
			if killed, exit = p.killAfter(wait); killed {
				killedAfter = wait
			}
		} else {
			exit = <-p.exited
			took = time.Since(p.readyAt)
		}
		printed.WriteString(p.output())
		for _, s := range fileSecrets(t, secretsPath) {
			secrets[s] = true
		}
		return exit, killedAfter, took
	}

	// a whole run, to learn how long the rotation takes here
	err, _, took := rotate(nil)
	require.NoError(t, err, printed.String())
	bmcsReachable(t, o, secretsPath, "after a whole run")

	kills := 0
	for try := 0; kills < 20 && try < 100; try++ { // a run that finishes before its kill is tried again
		early := rng.IntN(10) == 0 // now and then before the rotation begins
		wait := time.Duration(rng.Int64N(int64(took)))
		exit, killed, _ := rotate(func(rotating <-chan struct{}) time.Duration {
			if !early {
				<-rotating
			}
			return wait
		})
		var ee *exec.ExitError
		if exit != nil && !errors.As(exit, &ee) {
			t.Fatal(exit)
		}
		if killed > 0 {
			kills++
		}
		bmcsReachable(t, o, secretsPath, "kill "+strconv.Itoa(kills)+" after "+killed.String())
		ev := bundles[len(bundles)-1]
		if _, err := os.Stat(filepath.Join(ev, evidence.JournalFile)); err == nil {
			rep, err := evidence.Audit(ev, evidence.AuditOptions{})
			require.NoError(t, err)
			require.True(t, rep.OK(), "kill %d: the partial bundle does not verify: %s", kills, strings.Join(rep.All(), "\n"))
		}
	}
	require.Equal(t, 20, kills, "20 kills landed")

	err, _, _ = rotate(nil)
	require.NoError(t, err, "a run after the kills finishes: %s", printed.String())
	f := bmcsReachable(t, o, secretsPath, "after the last run")
	assert.Nil(t, f.Rotation, "no rotation under way")
	for name, e := range f.BMCs {
		if name != bmcsecret.Any {
			assert.Empty(t, e.Pending, "BMC %s", name)
			assert.False(t, e.Rotated.IsZero(), "BMC %s rotated", name)
		}
	}
	out, err := exec.Command(bin, "verify", bundles[len(bundles)-1], "--trust", trust).CombinedOutput()
	require.NoError(t, err, string(out))

	// a second rotation while one runs is refused, and touches nothing
	unlock, err := bmcsecret.Lock(secretsPath)
	require.NoError(t, err)
	before, err := os.ReadFile(secretsPath)
	require.NoError(t, err)
	out, err = exec.Command(bin, "bmc", "rotate", "--site", site, "--evidence", filepath.Join(t.TempDir(), "ev")).CombinedOutput()
	unlock()
	require.Error(t, err)
	assert.Contains(t, string(out), "is being written by another rotation (process ")
	after, err := os.ReadFile(secretsPath)
	require.NoError(t, err)
	assert.Equal(t, string(before), string(after))

	secrets[sim.SecretsFrom(func(string) (string, bool) { return "", false }).BMCPassword] = true
	for _, ev := range bundles {
		_ = filepath.WalkDir(ev, func(path string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				b, rerr := os.ReadFile(path)
				require.NoError(t, rerr)
				printed.Write(b)
			}
			return nil
		})
	}
	all := printed.String()
	require.Greater(t, len(secrets), 35, "the secrets held")
	for s := range secrets {
		if strings.Contains(all, s) {
			t.Errorf("a secret appears in the output, the logs or the evidence (seed %d)", seed)
			break
		}
	}
}

// startSim starts the example's simulated site in this process, and
// its control interface, whose URL it returns.
func startSim(t *testing.T) (*sim.Opened, string) {
	t.Helper()
	o, diags, err := sim.Open(sim.Paths{Contracts: exampleDir, Fixtures: fixturesDir}, "", sim.SecretsFrom(func(string) (string, bool) { return "", false }), time.Time{}, nil)
	require.NoError(t, err)
	require.Empty(t, diags)
	require.NoError(t, o.Start())
	t.Cleanup(o.Close)
	cs, err := o.ServeControl("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { cs.Close() })
	return o, cs.URL()
}

// rackBMCs is the simulated site in this process, and a binding
// directory that holds only a bmcs section (as sat sim writes it) of
// one rack's BMCs and their secrets file: a rotation that reads neither
// the rest of the binding nor the inventory.
func rackBMCs(t *testing.T, rack string) (*sim.Opened, string) {
	t.Helper()
	o, _ := startSim(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "bmc-secrets.json")
	bm := o.BMCBinding(path)
	bm.WritableControls = []string{binding.ControlAccounts}
	f := &bmcsecret.File{Path: path, Mode: 0o600, BMCs: map[string]bmcsecret.Entry{}}
	account := sim.SecretsFrom(func(string) (string, bool) { return "", false })
	var eps []binding.BMCEndpoint
	for _, e := range bm.Endpoints {
		if strings.Contains(e.Name, "-"+rack+"-") || strings.Contains(e.Name, "-m"+rack+"-") {
			eps = append(eps, e)
			entry := bmcsecret.Entry{User: account.BMCUser, Active: account.BMCPassword}
			if strings.Contains(e.Name, "-n") {
				entry.Standby = sim.StandbyUser(entry.User)
			}
			f.BMCs[e.Name] = entry
		}
	}
	require.Len(t, eps, 35, "rack %s's BMCs", rack)
	bm.Endpoints = eps
	require.NoError(t, f.Save())
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bmcs.cue"), binding.MarshalBMCs(bm, "binding"), 0o644))
	return o, dir
}

// fileSecrets are the secrets the file holds now.
func fileSecrets(t *testing.T, path string) []string {
	f, err := bmcsecret.Load(path)
	require.NoError(t, err)
	var out []string
	for _, e := range f.BMCs {
		out = append(out, e.Active)
		if e.Pending != "" {
			out = append(out, e.Pending)
		}
	}
	return out
}

// bmcsReachable asserts that every BMC the secrets file names accepts
// its active or its pending secret, and that none has locked an
// account out.
func bmcsReachable(t *testing.T, o *sim.Opened, path, when string) *bmcsecret.File {
	t.Helper()
	f, err := bmcsecret.Load(path)
	require.NoError(t, err, when)
	for name, e := range f.BMCs {
		if name == bmcsecret.Any {
			continue
		}
		b := o.BMC(name)
		require.NotNil(t, b, name)
		ok := b.PasswordIs(e.User, e.Active) || e.Pending != "" && b.PasswordIs(e.User, e.Pending)
		require.True(t, ok, "%s: BMC %s accepts none of the file's secrets for %s", when, name, e.User)
		require.Zero(t, b.Stats().Lockouts, "%s: BMC %s locked an account out", when, name)
	}
	return f
}

// A command with subcommands names the one it does not have and lists
// them; help lists them with exit 0.
func TestSubcommandsNamed(t *testing.T) {
	for _, tc := range []struct{ cmd, want string }{
		{"cap", "(apply, clear or check)"},
		{"bmc", "(rotate)"},
		{"burnin", "(run, grade or compare)"},
		{"sim-tools", "(install or run)"},
	} {
		var stdout, stderr strings.Builder
		assert.Equal(t, 1, Main([]string{tc.cmd, "nope"}, &stdout, &stderr), tc.cmd)
		assert.Contains(t, stderr.String(), "sat "+tc.cmd+`: unknown subcommand "nope" `+tc.want)
		stderr.Reset()
		assert.Equal(t, 0, Main([]string{tc.cmd, "help"}, &stdout, &stderr), tc.cmd)
		assert.Contains(t, stderr.String(), "sat "+tc.cmd)
		assert.Equal(t, 1, Main([]string{tc.cmd}, &stdout, &stderr), tc.cmd)
	}
}
