package satcmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/burnin"
	"github.com/seamdc/seam/internal/cli"
	"github.com/seamdc/seam/internal/lifecycle"
	"github.com/seamdc/seam/internal/peer"
	"github.com/seamdc/seam/internal/peer/slurmtest"
	"github.com/seamdc/seam/internal/sim"
	"github.com/seamdc/seam/internal/sim/fleet"
)

func writeBaselines(t *testing.T, path string, busbw map[string]float64) {
	t.Helper()
	var bs []*lifecycle.Baseline
	for _, n := range []string{"gpu-a-r01-n01", "gpu-a-r01-n02"} {
		bs = append(bs, &lifecycle.Baseline{Format: lifecycle.BaselineFormat, Node: n, Serial: "SN-" + n, Taken: time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC),
			Tool: "sat burnin test", Passed: true, Metrics: map[string]float64{"gpu_count": 4, "nccl_allreduce_busbw_gbps": busbw[n]}})
	}
	raw, err := json.Marshal(bs)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, raw, 0o644))
}

// sat burnin compare flags the node whose bandwidth dropped between
// the factory's baselines and the site's, and exits 2.
func TestBurninCompareCommand(t *testing.T) {
	dir := t.TempDir()
	factory, site := filepath.Join(dir, "factory.json"), filepath.Join(dir, "site.json")
	writeBaselines(t, factory, map[string]float64{"gpu-a-r01-n01": 821, "gpu-a-r01-n02": 822})
	writeBaselines(t, site, map[string]float64{"gpu-a-r01-n01": 820, "gpu-a-r01-n02": 640})
	code, stdout, stderr := sat(t, "burnin", "compare", factory, site)
	assert.Equal(t, cli.ExitFindings, code, stderr)
	assert.Contains(t, stdout, "worse: gpu-a-r01-n02: nccl_allreduce_busbw_gbps 822 at the factory, 640 on site")
	assert.NotContains(t, stdout, "worse: gpu-a-r01-n01")
	code, stdout, _ = sat(t, "burnin", "compare", factory, factory)
	assert.Equal(t, cli.ExitOK, code)
	assert.Contains(t, stdout, "0 figures got worse")
	code, _, stderr = sat(t, "burnin", "compare", factory, filepath.Join(dir, "missing.json"))
	assert.Equal(t, cli.ExitTool, code)
	assert.Contains(t, stderr, "missing.json")
}

// commissionedStore is a SQLite lifecycle store of the example with
// module ma commissioned on its SAT evidence (sat run --sim, signed by
// the rig's key), made with the real commands; ops may do everything.
// It returns the store and ops' key.
func commissionedStore(t *testing.T) (string, string) {
	t.Helper()
	dir := t.TempDir()
	ops, opsPub := sshKey(t)
	rig, rigPub := sshKey(t)
	pub, err := os.ReadFile(opsPub)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "allowed_signers"), []byte(`ops namespaces="seam-lifecycle" `+string(pub)), 0o644))
	access := `{
  "format": "seam.lifecycle.access/v1",
  "allowed_signers_file": "allowed_signers",
  "evidence_keys_file": "` + rigPub + `",
  "roles": {
    "admin": {"may": ["access", "release-any-hold", "asbuilt", "holds", "issues"],
      "transitions": ["design>built", "built>integrated", "integrated>shipped", "shipped>installed", "installed>commissioned", "commissioned>provisioned"]}
  },
  "members": {"ssh:ops": {"roles": ["admin"]}}
}`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "access.json"), []byte(access), 0o644))
	store := filepath.Join(dir, "site.db")
	t.Setenv("SEAM_LIFECYCLE_STORE", store)
	must := func(args ...string) string {
		t.Helper()
		code, stdout, stderr := sat(t, args...)
		require.Equal(t, 0, code, "sat %s:\n%s%s", strings.Join(args, " "), stdout, stderr)
		return stdout
	}
	must("lifecycle", "init", exampleDir, "--access", filepath.Join(dir, "access.json"), "--key", ops)
	must("lifecycle", "import", filepath.Join(exampleDir, "inventory/racks.json"), "--key", ops)
	for _, st := range []string{"built", "integrated", "shipped", "installed"} {
		must("lifecycle", "move", "ma", st, "--reason", "to "+st, "--key", ops)
	}
	ev := filepath.Join(dir, "sat-ma")
	code, stdout, stderr := sat(t, "run", examplePlan(t, "sat"), "--sim", "--time-scale", "max", "--contracts", exampleDir, "--fixtures", fixturesDir,
		"--out", ev, "--sign-key", rig)
	require.Equal(t, 0, code, stdout+stderr)
	must("lifecycle", "move", "ma", "commissioned", "--evidence", ev, "--reason", "SAT of ma passed", "--key", ops)
	return store, ops
}

// sat burnin run, the real command, through a real Slurm and a real
// lifecycle store: four nodes of rack a-r01 with a slurmd each, the
// simulated tools installed on the jobs' PATH, one node's link slow,
// module ma commissioned. The nodes are held during the burn-in; the
// slow one stays held back with its reason (exit 2), the three others
// are provisioned on their baselines; the bundle verifies with sat
// verify, the report is written, the reservation is gone.
func TestBurninRunCommandThroughSlurm(t *testing.T) {
	peer.Need(t, "srun")
	store, opsKey := commissionedStore(t)
	satBin := peer.BuildGo(t, "./cmd/sat")
	o, control := startSim(t)
	bin := t.TempDir()
	out, err := peer.Run(time.Minute, satBin, "sim-tools", "install", bin, "--control", control, "--sat", satBin)
	require.NoError(t, err, out)
	nodes := []string{"gpu-a-r01-n01", "gpu-a-r01-n02", "gpu-a-r01-n03", "gpu-a-r01-n04"}
	var sl []slurmtest.Node
	for _, n := range nodes {
		sl = append(sl, slurmtest.Node{Name: n, Run: true})
	}
	cl := slurmtest.Start(t, slurmtest.Config{Nodes: sl})
	_, err = o.SetNodes(sim.NodeRequest{Nodes: nodes, State: fleet.BurnIn})
	require.NoError(t, err)
	require.NoError(t, o.AddFleetDefect(fleet.Defect{Kind: fleet.SlowLink, Target: "gpu-a-r01-n03", Value: 0.5}))
	o.Site.Advance(2 * time.Minute)

	key, trust := sshKey(t)
	dir := t.TempDir()
	// the module-wide step reads the in-process simulator's devices
	// through the binding sat sim --stepped would write, and moves its
	// time through the control interface: nothing else runs the site
	siteDir := filepath.Join(dir, "site")
	require.NoError(t, os.MkdirAll(siteDir, 0o755))
	require.NoError(t, o.WriteBinding(siteDir, control, 1, true, func(string) (string, bool) { return "", false }))
	before := o.Site.Now()
	ev := filepath.Join(dir, "burnin")
	cmdOut, err := peer.Run(5*time.Minute, "env", "SLURM_CONF="+cl.Conf, "PATH="+cl.Slurm().Bin+":"+os.Getenv("PATH"),
		satBin, "burnin", "run", "--contracts", exampleDir, "--module", "ma", "--nodes", strings.Join(nodes, ","), "--out", ev,
		"--tools", bin, "--sign-key", key, "--timeout", "2m", "--parallel", "4", "--lifecycle", store, "--lifecycle-key", opsKey,
		"--site", siteDir, "--plan", exampleDir+"/plans/sat.json")
	require.Error(t, err, "a node held back is exit 2:\n%s", cmdOut)
	assert.Contains(t, err.Error(), "exit status 2")
	assert.Contains(t, cmdOut, "4 nodes burned in, 3 passed, 1 held back")
	assert.Contains(t, cmdOut, "the module-wide step trains 4 of module ma's 288 nodes")
	assert.Regexp(t, `module ma under its training load \(30 cycles of 4 s\): every transient clause held \(\d+ cases\)`, cmdOut)
	assert.GreaterOrEqual(t, o.Site.Now().Sub(before), 2*time.Minute, "the step advanced the stepped site through the training's cycles")
	st, err := o.NodeStatus(nodes[0])
	require.NoError(t, err)
	assert.Equal(t, fleet.Idle, st[0].State, "the training load is stopped after the step")
	code, _, runErr := sat(t, "run", exampleDir+"/plans/sat.json", "--site", siteDir, "--unsigned", "--out", filepath.Join(dir, "run"))
	assert.Equal(t, cli.ExitTool, code)
	assert.Contains(t, runErr, "is stepped (sat sim --stepped)", "sat run does not drive a stepped simulator's time")
	assert.Contains(t, cmdOut, "held gpu-a-r01-n03")
	assert.Contains(t, cmdOut, "burnin: [1/")
	assert.Contains(t, cmdOut, "ledger: gpu-a-r01-n01 provisioned: burn-in passed")
	assert.Regexp(t, `ledger: gpu-a-r01-n03 held: burn-in failed \(evidence \w+\): gpu-a-r01-n03: single busbw_gbps`, cmdOut)
	code, show, _ := sat(t, "lifecycle", "show", "gpu-a-r01-n01")
	require.Equal(t, 0, code)
	assert.Regexp(t, `state +provisioned`, show)
	assert.Regexp(t, `holds +none: in the pool`, show)
	code, show, _ = sat(t, "lifecycle", "show", "gpu-a-r01-n03")
	require.Equal(t, 0, code)
	assert.Regexp(t, `state +commissioned`, show)
	assert.Contains(t, show, "burn-in")
	assert.Contains(t, show, "busbw")
	for _, f := range []string{"burnin.csv", "burnin.junit.xml", "burnin.html"} {
		assert.FileExists(t, filepath.Join(ev+".report", f))
	}
	for _, n := range nodes {
		_, _, err := lifecycle.ReadBaseline(filepath.Join(ev+".baselines", n+".json"))
		assert.NoError(t, err)
	}
	code, stdout, stderr := sat(t, "verify", ev, "--trust", trust)
	assert.Equal(t, cli.ExitOK, code, stdout+stderr)
	res := cl.Must("scontrol", "show", "reservation")
	assert.NotContains(t, res, "seam-burnin-ma")
	// the ledger applied the holds to Slurm: the node held back is
	// drained with the burn-in's owner, the others are in the pool
	drained := cl.Must("sinfo", "-h", "-N", "-o", "%N %T %E", "-n", strings.Join(nodes, ","))
	assert.Regexp(t, `gpu-a-r01-n03 drained\S* burnin:seam-burnin-ma`, drained)
	for _, n := range []string{nodes[0], nodes[1], nodes[3]} {
		assert.Regexp(t, n+` idle `, drained)
	}
	var r burnin.Result
	raw, err := os.ReadFile(filepath.Join(ev, burnin.ResultFile))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &r))
	assert.Len(t, r.Nodes, 4)
}
