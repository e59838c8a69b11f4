package satcmd

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/evidence"
	"github.com/seamdc/seam/internal/plan"
	"github.com/seamdc/seam/internal/results"
)

// kill -9 at random moments of a signed run (the sat binary, the
// simulated site in its process, as fast as it goes), at least 20
// times: after every kill the partial bundle verifies, signed up to its
// last seal, and --resume continues it; the run that finishes verifies
// with --trust. A kill may land anywhere: before the bundle exists, in
// preflight, in a case, while a file or the manifest is written.
func TestKillNineAtRandomMoments(t *testing.T) {
	t.Parallel()
	bin := buildSat(t)
	key, trust := sshKey(t)
	p := examplePlan(t, plan.SAT)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 22))
	const want = 20
	kills, finished, bundles := 0, 0, 0
	out := ""
	for kills < want {
		if out == "" {
			bundles++
			out = filepath.Join(t.TempDir(), "ev")
		}
		args := []string{"run", p, "--sim", "--time-scale", "max", "--contracts", exampleDir, "--fixtures", fixturesDir, "--sign-key", key}
		if _, err := os.Stat(filepath.Join(out, evidence.JournalFile)); err == nil {
			args = append(args, "--resume", out)
		} else {
			args = append(args, "--out", out)
		}
		var stderr bytes.Buffer
		cmd := exec.Command(bin, args...)
		cmd.Stderr = &stderr
		require.NoError(t, cmd.Start())
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		delay := time.Duration(rng.Int64N(int64(1500 * time.Millisecond)))
		var err error
		killed := false
		select {
		case err = <-exited: // it finished (or refused) before the kill
		case <-time.After(delay):
			_ = cmd.Process.Kill() // SIGKILL
			err = <-exited
			killed = true
			kills++
		}
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatal(err)
		}
		if _, statErr := os.Stat(filepath.Join(out, evidence.JournalFile)); statErr != nil {
			continue // killed before the bundle had a journal: it starts again
		}
		rep, aerr := evidence.Audit(out, evidence.AuditOptions{})
		require.NoError(t, aerr)
		require.True(t, rep.OK(), "kill %d after %s (killed %v): the partial bundle does not verify:\n%s\n%s", kills, delay, killed, strings.Join(rep.All(), "\n"), stderr.String())
		if rep.Records > 3 {
			require.True(t, rep.Signed, "kill %d: the bundle is signed", kills)
			require.Positive(t, rep.SignedUpTo, "kill %d: signed up to its last seal", kills)
			assert.Regexp(t, `^signed by SHA256:\S+ \(\S+\) up to record \d+ of \d+`, rep.Describe())
		}
		if !killed && err != nil && !strings.Contains(stderr.String(), "the run finished") {
			t.Fatalf("sat run %s exited: %v\n%s", strings.Join(args, " "), err, stderr.String())
		}
		if rep.Complete {
			// finished, maybe just as it was killed: it verifies with the key
			// and resumes no more
			finished++
			code, vout, _ := sat(t, "verify", out, "--trust", trust)
			require.Equal(t, 0, code, vout)
			code, _, rerr := sat(t, "run", "--resume", out, "--sim", "--time-scale", "max", "--contracts", exampleDir, "--fixtures", fixturesDir, "--sign-key", key)
			require.Equal(t, 1, code)
			assert.Contains(t, rerr, "the run finished")
			out = ""
		}
	}
	if out != "" {
		// with the plan: a bundle killed before it wrote plan.json has
		// none; one killed before it had a journal starts again
		flag := "--resume"
		if _, err := os.Stat(filepath.Join(out, evidence.JournalFile)); err != nil {
			flag = "--out"
			require.NoError(t, os.RemoveAll(out))
		}
		code, stdout, stderr := sat(t, "run", p, flag, out, "--sim", "--time-scale", "max", "--contracts", exampleDir, "--fixtures", fixturesDir, "--sign-key", key)
		require.Contains(t, []int{0, 1}, code, "%s\n%s", stdout, stderr)
		if code == 1 {
			require.Contains(t, stderr, "the run finished", stdout)
		}
		code, vout, _ := sat(t, "verify", out, "--trust", trust)
		require.Equal(t, 0, code, vout)
		res, err := results.Read(filepath.Join(out, evidence.ResultsFile))
		require.NoError(t, err)
		assert.Equal(t, results.Passed, res.Outcome)
		finished++
	}
	t.Logf("%d kills over %d bundles, %d runs finished; every partial bundle verified and resumed", kills, bundles, finished)
}
