package cli_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/cli"
	"github.com/seamdc/seam/internal/peer"
)

// doubling is a string doubled 40 times: 2^40 bytes, if it were ever
// finished; listRange a list of a hundred million numbers.
const (
	doubling = "package bomb\n\na0: \"xxxxxxxx\"\n" +
		"a1: a0+a0\na2: a1+a1\na3: a2+a2\na4: a3+a3\na5: a4+a4\na6: a5+a5\na7: a6+a6\na8: a7+a7\na9: a8+a8\na10: a9+a9\n" +
		"a11: a10+a10\na12: a11+a11\na13: a12+a12\na14: a13+a13\na15: a14+a14\na16: a15+a15\na17: a16+a16\na18: a17+a17\na19: a18+a18\na20: a19+a19\n" +
		"a21: a20+a20\na22: a21+a21\na23: a22+a22\na24: a23+a23\na25: a24+a24\na26: a25+a25\na27: a26+a26\na28: a27+a27\na29: a28+a28\na30: a29+a29\n" +
		"a31: a30+a30\na32: a31+a31\na33: a32+a32\na34: a33+a33\na35: a34+a34\na36: a35+a35\na37: a36+a36\na38: a37+a37\na39: a38+a38\na40: a39+a39\n"
	listRange = "package bomb\n\nimport \"list\"\n\nx: list.Range(0, 100000000, 1)\n"
)

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]uint64{"4GiB": 4 << 30, "512MiB": 512 << 20, "100MB": 100e6, "1000": 1000, "1.5GiB": 3 << 29} {
		got, err := cli.ParseBytes(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	_, err := cli.ParseBytes("lots")
	assert.Error(t, err)
	b, err := cli.BudgetFromEnv(func(k string) (string, bool) {
		return map[string]string{cli.EnvMemory: "1GiB", cli.EnvTime: "0"}[k], true
	})
	require.NoError(t, err)
	assert.Equal(t, cli.Budget{Memory: 1 << 30}, b)
}

// In a child process (the test binary run again) the watchdog stops a
// CUE evaluation that outgrows its budget.
func TestMain(m *testing.M) {
	switch os.Getenv("SEAM_BUDGET_CHILD") {
	case "memory": // a Guard, and inside it an evaluation that names itself
		stop := cli.Guard(os.Stderr, "child", "the CUE in bomb", cli.Budget{Memory: 256 << 20})
		inner := cli.GuardEval("package bomb in bomb (bomb.cue)")
		v := cuecontext.New().CompileString(doubling)
		_ = v.Validate(cue.Concrete(true))
		inner()
		stop()
		os.Exit(0)
	case "time": // an armed budget: only an evaluation is bounded
		defer cli.Arm(os.Stderr, "child", cli.Budget{Time: 300 * time.Millisecond})()
		time.Sleep(600 * time.Millisecond) // no evaluation yet: not stopped
		stop := cli.GuardEval("the CUE in slow")
		time.Sleep(time.Minute)
		stop()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func child(t *testing.T, kind string) (int, string, time.Duration) {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe, "-test.run", "^$")
	cmd.Env = append(os.Environ(), "SEAM_BUDGET_CHILD="+kind)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	err = cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return code, stderr.String(), time.Since(start)
}

func TestGuardStopsARunawayEvaluation(t *testing.T) {
	code, stderr, took := child(t, "memory")
	assert.Equal(t, cli.ExitTool, code, stderr)
	assert.Contains(t, stderr, "child: evaluating package bomb in bomb (bomb.cue) used more than 256 MiB of memory after ")
	assert.Contains(t, stderr, "raise the budget with SEAM_CUE_MEMORY=512MiB")
	assert.NotContains(t, stderr, "fatal error")
	t.Logf("stopped after %s", took)

	code, stderr, _ = child(t, "time")
	assert.Equal(t, cli.ExitTool, code, stderr)
	assert.Contains(t, stderr, "child: evaluating the CUE in slow took longer than 300ms")
	assert.Contains(t, stderr, "raise the budget with SEAM_CUE_TIME=600ms")
}

// contractc and sat refuse a contract or binding bomb with the message,
// exit 1, within seconds, instead of dying of a Go fatal out-of-memory.
func TestCommandsRefuseACUEBomb(t *testing.T) {
	contractc, sat := peer.BuildGo(t, "./cmd/contractc"), peer.BuildGo(t, "./cmd/sat")
	for _, tt := range []struct{ name, src string }{{"doubling", doubling}, {"list.Range", listRange}} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, "bomb.cue"), []byte(tt.src), 0o644))
			plan := filepath.Join(peer.Root(t), "contracts", "examples", "threemodule", "plans", "sat.json")
			for _, args := range [][]string{{contractc, "vet", dir}, {sat, "probe", "--site", dir}, {sat, "run", plan, "--site", dir, "--unsigned", "--out", filepath.Join(dir, "ev")}} {
				cmd := exec.Command(args[0], args[1:]...)
				cmd.Env = append(os.Environ(), cli.EnvMemory+"=256MiB")
				var stderr bytes.Buffer
				cmd.Stderr = &stderr
				start := time.Now()
				err := cmd.Run()
				ee, ok := err.(*exec.ExitError)
				require.True(t, ok, "%s: %v %s", strings.Join(args, " "), err, stderr.String())
				assert.Equal(t, cli.ExitTool, ee.ExitCode(), stderr.String())
				assert.Regexp(t, "evaluating (the CUE|package bomb) in "+regexp.QuoteMeta(dir)+"( \\(bomb.cue\\))? used more than 256 MiB of memory", stderr.String(), strings.Join(args, " "))
				assert.Contains(t, stderr.String(), "raise the budget with SEAM_CUE_MEMORY=512MiB", strings.Join(args, " "))
				t.Logf("%s %s: stopped after %s", filepath.Base(args[0]), args[1], time.Since(start).Round(time.Millisecond))
			}
		})
	}
}
