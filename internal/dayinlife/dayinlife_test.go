// Package dayinlife runs seam as one system, as its users do: one day
// in the life of a site, from the vendors' contract to a GPU's RMA
// (hack/day-in-the-life.sh, the script make demo runs), through a real
// slurmctld, the simulated site, a SQLite lifecycle store, and
// Debian's Prometheus and Alertmanager; and then every command that
// writes outside its own output, run with --dry-run against the same
// peers and a real kube-apiserver, which are checked to be untouched.
// One slurmctld serves the package.
package dayinlife

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/alarm"
	"github.com/seamdc/seam/internal/alarm/amtest"
	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/peer"
	"github.com/seamdc/seam/internal/peer/slurmtest"
)

// site is everything a test of the package reaches.
type site struct {
	root, bin string
	nodes     []string // every node of the example
	slurm     *slurmtest.Cluster
	work      string // the day's directory: its site, keys, store, caps
}

// TestSeamAsOneSystem: the day in the life, then the dry runs on what
// the day left.
func TestSeamAsOneSystem(t *testing.T) {
	s := &site{root: peer.Root(t)}
	s.bin = filepath.Dir(peer.BuildGo(t, "./cmd/sat"))
	peer.BuildGo(t, "./cmd/contractc")
	peer.BuildGo(t, "./cmd/facilityd")
	s.nodes = exampleNodes(t, filepath.Join(s.root, "contracts/examples/threemodule"))
	s.startSlurm(t)
	s.work = t.TempDir() // the day's, which the dry runs go on from
	if !t.Run("a day in the life", s.dayInTheLife) {
		return
	}
	t.Run("dry runs write nothing", s.dryRuns)
}

func exampleNodes(t *testing.T, dir string) []string {
	c, _, err := contract.Load(dir)
	require.NoError(t, err)
	_, err = c.ReadInventory(nil)
	require.NoError(t, err)
	g, _ := c.Graph()
	return alarm.NewIndex(g).Nodes(alarm.Domain{Kind: alarm.Site, Value: "threemodule"})
}

// startSlurm starts the site's Slurm: every node of the example, its
// generated topology, a slurmd for the four nodes the burn-ins run on.
func (s *site) startSlurm(t *testing.T) {
	topo := filepath.Join(t.TempDir(), "topology.conf")
	s.must(t, "", nil, "contractc", "topology", filepath.Join(s.root, "contracts/examples/threemodule"), "-o", topo)
	raw, err := os.ReadFile(topo)
	require.NoError(t, err)
	run := map[string]bool{"gpu-a-r01-n01": true, "gpu-a-r01-n02": true, "gpu-a-r01-n03": true, "gpu-a-r01-n04": true}
	var nodes []slurmtest.Node
	for _, n := range s.nodes {
		nodes = append(nodes, slurmtest.Node{Name: n, Run: run[n]})
	}
	// TreeWidth: slurmctld reaches each slurmd itself; forwarded through
	// the four that run, its pings of the 860 without a slurmd mark those
	// four not responding now and then, and a burn-in's srun fails
	s.slurm = slurmtest.Start(t, slurmtest.Config{Nodes: nodes, Topology: raw, Within: 2 * time.Minute, Extra: []string{"TreeWidth=65533"}})
}

// env is the environment the commands run in: Slurm's, and its
// programs on PATH after seam's.
func (s *site) env(extra ...string) []string {
	env := os.Environ()
	path := s.bin + ":" + os.Getenv("PATH")
	if s.slurm != nil {
		env = append(env, s.slurm.Env()...)
		path = s.bin + ":" + s.slurm.Slurm().Bin + ":" + os.Getenv("PATH")
	}
	env = append(env, "PATH="+path)
	return append(env, extra...)
}

// run runs one of seam's commands (or any program) in dir and returns
// its exit code and outputs.
func (s *site) run(t *testing.T, dir string, env []string, name string, args ...string) (int, string, string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(s.bin, name)); err == nil {
		name = filepath.Join(s.bin, name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	if env == nil {
		env = s.env()
	}
	cmd.Env = env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := cmd.ProcessState.ExitCode()
	if err != nil && code == 0 {
		t.Fatalf("%s %s: %v", name, strings.Join(args, " "), err)
	}
	return code, out.String(), errb.String()
}

func (s *site) must(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	code, out, errb := s.run(t, dir, env, name, args...)
	require.Equal(t, 0, code, "%s %s:\n%s%s", name, strings.Join(args, " "), out, errb)
	return out
}

// dayInTheLife runs hack/day-in-the-life.sh as make demo does, with the
// site's Slurm, facilityd's pump trip reaching it through its poller
// and through Prometheus (the rules contractc alerts writes) and
// Alertmanager, and checks the story it tells.
func (s *site) dayInTheLife(t *testing.T) {
	fdAddr := peer.ListenTCP(t) // bound by facilityd long after Alertmanager is told it
	am := amtest.StartAlertmanager(t, fmt.Sprintf(`route:
  receiver: none
  group_by: [alertname, domain]
  group_wait: 0s
  group_interval: 1s
  repeat_interval: 1h
  routes:
  - matchers: ['receiver="facilityd"']
    receiver: facilityd
receivers:
- name: none
- name: facilityd
  webhook_configs:
  - url: http://%s/v1/alertmanager
    send_resolved: true
`, fdAddr))
	rules := filepath.Join(t.TempDir(), "rules.yml")
	s.must(t, "", nil, "contractc", "alerts", filepath.Join(s.root, "contracts/examples/threemodule"), "--out", rules)
	raw, err := os.ReadFile(rules)
	require.NoError(t, err)
	amtest.StartPrometheus(t, fmt.Sprintf(`global: {scrape_interval: 1s, evaluation_interval: 1s}
alerting:
  alertmanagers: [{static_configs: [{targets: [%q]}]}]
rule_files: [rules.yml]
scrape_configs:
- job_name: facilityd
  static_configs: [{targets: [%q]}]
`, strings.TrimPrefix(am.URL, "http://"), fdAddr), map[string]string{"rules.yml": string(raw)})

	start := time.Now()
	code, out, errb := s.run(t, s.work, s.env("SEAM="+s.root, "BIN="+s.bin, "WORK="+s.work, "FACILITYD_LISTEN="+fdAddr, "ALERTMANAGER="+am.URL),
		"bash", filepath.Join(s.root, "hack/day-in-the-life.sh"))
	t.Logf("the day in the life took %s", time.Since(start).Round(time.Second))
	if code != 0 {
		for _, log := range []string{"facilityd/log", "sim.log"} {
			b, _ := os.ReadFile(filepath.Join(s.work, log))
			t.Logf("%s:\n%s", log, tail(string(b), 4000))
		}
		t.Fatalf("hack/day-in-the-life.sh: exit %d\n%s\n%s", code, tail(out, 20000), tail(errb, 8000))
	}
	t.Logf("the story:\n%s", tail(out, 12000))

	assert.Contains(t, out, "a day in the life of site threemodule in "+s.work+" (scheduler: slurm)")
	assert.Regexp(t, `4 nodes burned in, 4 passed, 0 held back`, out)
	assert.Regexp(t, `(?m)^gpu-a-r01-n03 drained\S* facility:cooling_redundancy_lost:l1$`, out, "facilityd drained the loop's nodes in Slurm")
	assert.Contains(t, out, "released facility:cooling_redundancy_lost:cooling_loop=l1, approved by alice: 287 node(s) returned, 1 still held by burnin:swap (1)",
		"the release returns every node but the one burn-in holds, and names its owner")
	assert.Contains(t, out, "kept: gpu-a-r01-n03, held by burnin:swap")
	assert.Regexp(t, `(?m)^gpu-a-r01-n03 drained\S* burnin:swap$`, out, "the node with the new GPU stays out of the pool")
	// back in the pool: schedulable, whatever Slurm has it doing (idle,
	// or planned for a pending job by the backfill scheduler)
	assert.Regexp(t, `(?m)^gpu-a-r01-n03 (idle|planned|mixed|allocated)\S* `, out, "burned in again after the swap: back in the pool")
	assert.Contains(t, out, "ledger: gpu-a-r01-n03 provisioned: burn-in passed", "the baseline after the swap provisions the new GPU")

	// commissioning through the gate: the slow recovery an issue of the
	// power vendor's, the gate refusing on it, the retry closing it
	assert.Regexp(t, `opened ma-1 \[L4 major\] owner VoltSkid \(supplier\): .*guarantee-recovery-time \(recovery_time, guarantee\)`, out)
	assert.Contains(t, out, "gate L4 (performance) of ma REFUSES")
	assert.Contains(t, out, "missing: 1 open major issue(s), at most 0 allowed: ma-1")
	assert.Regexp(t, `closed ma-1: case sat\.p1-ma\.transient\.\S+ passed in retry amendment 1 of bundle`, out)
	assert.Contains(t, out, "gate L4 (performance) of ma PASSES")
	export, err := os.ReadFile(filepath.Join(s.work, "issues.csv"))
	require.NoError(t, err)
	assert.Regexp(t, `(?m)^id,level,system,description,owner,severity,status,created,due,closed,closed_by,evidence\nma-1,L4,ma / p1-ma,.*,VoltSkid,major,closed,`, string(export))

	// the node's history tells the day in order
	story := []string{"installed → commissioned", "burnin:seam-burnin-ma: burn-in under way", "commissioned → provisioned", "burnin:seam-burnin-ma: burn-in ended",
		"provisioned → operating", "facility:cooling_redundancy_lost:cooling_loop=l1: ", "rma:lifecycle: rma by ssh:operator: XID 79", "burnin:swap: a part swapped under RMA",
		"facility:cooling_redundancy_lost:cooling_loop=l1: for alice: pump 1 of cdu-1 replaced", "burnin:seam-burnin-ma: burn-in under way",
		"burnin:swap: nothing of ma/r01/compute-03 is commissioned any more: burn-in passed", "burnin:seam-burnin-ma: burn-in ended"}
	hist := out[strings.Index(out, "== the story of gpu-a-r01-n03"):]
	last := 0
	for _, step := range story {
		i := strings.Index(hist[last:], step)
		require.GreaterOrEqual(t, i, 0, "the history tells %q after what came before:\n%s", step, hist)
		last += i
	}
	assert.Contains(t, out, "OK: sat-ma is intact")
	assert.Contains(t, out, "OK: burnin-2 is intact")
	assert.Regexp(t, `OK: \S+site.db: 16095 elements`, out, "sat lifecycle check")
	assert.Contains(t, out, "facilityd heard the pump trip from its poller and from Alertmanager: one alarm, two sources")
	st := s.slurm.Must("sinfo", "-h", "-N", "-o", "%N %T", "-n", "gpu-a-r[01-16]-n[01-18]")
	assert.NotContains(t, st, "drain", "every node of ma is back in the pool")
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
