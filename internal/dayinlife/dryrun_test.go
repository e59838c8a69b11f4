package dayinlife

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/seamdc/seam/internal/clock"
	"github.com/seamdc/seam/internal/peer/kubetest"
	"github.com/seamdc/seam/internal/sim"
	"github.com/seamdc/seam/internal/sim/fleet"
)

// peers is what a dry run must leave as it found it.
type peers struct {
	deviceWrites, bmcWrites int
	slurmNodes, slurmRes    string            // scontrol -o show node (state and reason) and reservation
	kube                    map[string]string // node → resourceVersion
	files                   map[string]string // the store and facilityd's state directory: path → sha256
}

// dryRuns runs every command that writes outside its own output with
// --dry-run, against the simulated site (in process, counting its
// devices' and BMCs' writes), the package's slurmctld, a real
// kube-apiserver, the day's SQLite store and facilityd's state
// directory, and checks each peer after: the counters are zero, Slurm's
// nodes, reasons and reservations are as they were, every node's
// resourceVersion is, and the store and the state directory are byte
// for byte. Then some of the same commands without --dry-run, which do
// write.
func (s *site) dryRuns(t *testing.T) {
	require.NotEmpty(t, s.work, "the day in the life ran first: its store, keys and caps")
	o, simDir := s.startSim(t)
	kube := kubetest.Start(t)
	// facilityd's drains go by the inventory's Slurm names, the topology's
	// labels by its Kubernetes names: the nodes of rack ma/r01 by both
	var r01 []string
	for _, n := range s.nodes {
		if strings.HasPrefix(n, "gpu-a-r01-") {
			r01 = append(r01, n, n+".cluster.example")
		}
	}
	kube.CreateNodes(t, r01...)
	fdState := filepath.Join(s.work, "facilityd")
	mustRun := func(args ...string) string { t.Helper(); return s.must(t, s.work, nil, args[0], args[1:]...) }

	// caps applied for real, and one of them lost to a BMC reset: the
	// reconciler has something to write back
	mustRun("sat", "cap", "apply", "--site", simDir, "--evidence", filepath.Join(t.TempDir(), "caps"), "caps.json")
	_, bmcWrites := o.Writes()
	require.Positive(t, bmcWrites, "sat cap apply writes the BMCs")
	require.NoError(t, o.AddFleetDefect(fleet.Defect{Kind: sim.DefectBMCReset, Target: "bmc-a-r01-n02"}))

	fd := s.facilitydConfig(t, simDir, map[string]any{"kind": "slurm"})
	fdKube := s.facilitydConfig(t, simDir, map[string]any{"kind": "kubernetes", "kubernetes": map[string]any{"kubeconfig": kube.Kubeconfig}})
	before := s.snapshot(t, o, kube, fdState)

	dry := []struct {
		name  string
		args  []string
		wants []string
	}{
		{"facilityd drill, Slurm", []string{"facilityd", "run", "--config", fd, "--dry-run", "--once", "--raise", "cooling_redundancy_lost@cooling_loop=l1"},
			[]string{"would run: scontrol update nodename=gpu-a-r01-n[01-18],", "state=drain reason=facility:cooling_redundancy_lost:l1",
				"would write to the ledger: hold facility:cooling_redundancy_lost:cooling_loop=l1 on 288 node(s)", "would PATCH http://127.0.0.1:"}},
		{"facilityd drill, Kubernetes", []string{"facilityd", "run", "--config", fdKube, "--dry-run", "--once", "--raise", "leak_detected@cooling_loop=l1"},
			[]string{"would run: kubectl taint nodes --overwrite gpu-a-r01-n01 ", "facility.hold.seam.io/leak_detected=l1:NoSchedule"}},
		{"sat cap apply", []string{"sat", "cap", "apply", "--site", simDir, "--dry-run", "caps.json"}, []string{"would PATCH http://127.0.0.1:", `"SetPoint":6006`}},
		{"sat cap clear", []string{"sat", "cap", "clear", "--site", simDir, "--dry-run", "caps.json"}, []string{"would PATCH http://127.0.0.1:", `"SetPoint":6400`}},
		{"contractc topology apply, Slurm", []string{"contractc", "topology", "apply", "site", "--slurm-conf", s.slurm.Conf, "--dry-run"}, []string{"dry-run"}},
		{"contractc topology apply, Kubernetes", []string{"contractc", "topology", "apply", "site", "--kubernetes", "--kubeconfig", kube.Kubeconfig, "--dry-run"},
			[]string{"kubernetes: dry-run"}},
		{"contractc maintenance apply", []string{"contractc", "maintenance", "apply", "site", "--slurm-conf", s.slurm.Conf, "--tz", "UTC", "--dry-run"}, []string{"would create"}},
		{"sat burnin run", []string{"sat", "burnin", "run", "--contracts", "site", "--module", "ma", "--nodes", "gpu-a-r01-n01,gpu-a-r01-n02", "--out", "burnin-dry",
			"--lifecycle", "site.db", "--lifecycle-key", "keys/cx", "--dry-run"},
			[]string{"would run: scontrol create reservation ReservationName=seam-burnin-ma", "would write to the ledger: hold burnin:seam-burnin-ma on 2 node(s)"}},
		{"sat lifecycle hold set", []string{"sat", "lifecycle", "hold", "set", "gpu-a-r01-n02", "--owner", "person:operator", "--reason", "reseat a cable",
			"--store", "site.db", "--key", "keys/operator", "--scheduler", "slurm", "--dry-run"},
			[]string{"would run: scontrol update nodename=gpu-a-r01-n02 state=drain reason=person:operator", "would write to the ledger: hold person:operator on 1 node(s)"}},
		{"sat lifecycle move", []string{"sat", "lifecycle", "move", "gpu-a-r01-n02", "maintenance", "--reason", "swap a NIC", "--store", "site.db", "--key", "keys/operator",
			"--scheduler", "slurm", "--dry-run"},
			[]string{"would write to the lifecycle store", "move ma/r01/compute-02 from operating to maintenance"}},
	}
	for _, c := range dry {
		code, out, errb := s.run(t, s.work, nil, c.args[0], c.args[1:]...)
		if !assert.Equal(t, 0, code, "%s:\n%s%s", c.name, out, errb) {
			continue
		}
		for _, w := range c.wants {
			assert.Contains(t, out, w, "%s prints what it would write", c.name)
		}
	}
	assert.NoDirExists(t, filepath.Join(s.work, "burnin-dry"), "a dry burn-in writes no evidence")
	after := s.snapshot(t, o, kube, fdState)
	assert.Equal(t, before.deviceWrites, after.deviceWrites, "no device was written")
	assert.Equal(t, before.bmcWrites, after.bmcWrites, "no BMC was written")
	assert.Equal(t, before.slurmNodes, after.slurmNodes, "Slurm's nodes and reasons are as they were")
	assert.Equal(t, before.slurmRes, after.slurmRes, "Slurm's reservations are as they were")
	assert.Equal(t, before.kube, after.kube, "no node's resourceVersion moved")
	assert.Equal(t, before.files, after.files, "the store and facilityd's state directory are byte for byte as they were")

	// the same commands without --dry-run write
	mustRun("sat", "cap", "clear", "--site", simDir, "--evidence", filepath.Join(t.TempDir(), "clear"), "caps.json")
	mustRun("sat", "lifecycle", "hold", "set", "gpu-a-r01-n02", "--owner", "person:operator", "--reason", "reseat a cable", "--store", "site.db", "--key", "keys/operator",
		"--scheduler", "slurm")
	mustRun("contractc", "maintenance", "apply", "site", "--slurm-conf", s.slurm.Conf, "--tz", "UTC")
	mustRun("contractc", "topology", "apply", "site", "--kubernetes", "--kubeconfig", kube.Kubeconfig)
	wrote := s.snapshot(t, o, kube, fdState)
	assert.Greater(t, wrote.bmcWrites, after.bmcWrites, "sat cap clear wrote the BMCs")
	assert.NotEqual(t, after.slurmNodes, wrote.slurmNodes, "the hold drained gpu-a-r01-n05")
	assert.Contains(t, wrote.slurmNodes, "NodeName=gpu-a-r01-n02 State=IDLE+DRAIN Reason=person:operator")
	assert.NotEqual(t, after.slurmRes, wrote.slurmRes, "the maintenance reservations were made")
	assert.NotEqual(t, after.kube, wrote.kube, "the labels were applied")
	assert.NotEqual(t, after.files, wrote.files, "the store took the hold")
	// and the ledger returns the node when its last hold goes
	mustRun("sat", "lifecycle", "hold", "release", "gpu-a-r01-n02", "--owner", "person:operator", "--store", "site.db", "--key", "keys/operator", "--scheduler", "slurm")
	// (Slurm 22.05 flags a node it undrains NOT_RESPONDING until its next ping)
	assert.Regexp(t, `NodeName=gpu-a-r01-n02 State=IDLE(\+NOT_RESPONDING)?\n`, s.snapshot(t, o, kube, fdState).slurmNodes)
}

// startSim runs the day's site in process, its binding written as sat
// sim writes it: the test counts its devices' and BMCs' writes.
func (s *site) startSim(t *testing.T) (*sim.Opened, string) {
	o, diags, err := sim.Open(sim.Paths{Contracts: filepath.Join(s.work, "site"), Fixtures: filepath.Join(s.root, "fixtures")}, "",
		sim.SecretsFrom(func(string) (string, bool) { return "", false }), time.Time{}, nil)
	require.NoError(t, err)
	require.Empty(t, diags)
	require.NoError(t, o.Start())
	t.Cleanup(o.Close)
	cs, err := o.ServeControl("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { cs.Close() })
	dir := t.TempDir()
	require.NoError(t, o.WriteBinding(dir, cs.URL(), 1, false, func(string) (string, bool) { return "", false }))
	_, err = o.SetNodes(sim.NodeRequest{Racks: []string{"ma/r01"}, State: fleet.Idle})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = o.Site.Run(ctx, clock.Real{}, 1) }()
	t.Cleanup(func() { cancel(); <-done })
	return o, dir
}

// facilitydConfig is the day's facilityd configuration for a drill:
// the simulated site of this test, the scheduler given, the caps, the
// ledger and the water chemistry in the day's store.
func (s *site) facilitydConfig(t *testing.T, simDir string, sched map[string]any) string {
	raw, err := os.ReadFile(filepath.Join(s.work, "facilityd.json"))
	require.NoError(t, err)
	var cfg map[string]any
	require.NoError(t, json.Unmarshal(raw, &cfg))
	cfg["binding"], cfg["scheduler"] = simDir, sched
	cfg["chemistry"] = map[string]any{"store": "site.db"}
	delete(cfg, "alertmanager")
	b, err := json.Marshal(cfg)
	require.NoError(t, err)
	f, err := os.CreateTemp(s.work, "facilityd-*.json")
	require.NoError(t, err)
	_, err = f.Write(b)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	return f.Name()
}

// snapshot reads every peer a dry run must not touch.
func (s *site) snapshot(t *testing.T, o *sim.Opened, kube *kubetest.Env, stateDir string) peers {
	t.Helper()
	var p peers
	p.deviceWrites, p.bmcWrites = o.Writes()
	var nodes []string
	for _, line := range strings.Split(s.slurm.Must("scontrol", "-o", "show", "node"), "\n") {
		var keep []string
		for _, f := range strings.Fields(line) {
			for _, k := range []string{"NodeName=", "State=", "Reason="} {
				if strings.HasPrefix(f, k) {
					// PLANNED is the backfill scheduler's mark for a
					// pending job (the day's burn-in steps), set and
					// cleared by Slurm itself: not a write
					keep = append(keep, strings.Replace(f, "+PLANNED", "", 1))
				}
			}
		}
		nodes = append(nodes, strings.Join(keep, " "))
	}
	p.slurmNodes = strings.Join(nodes, "\n")
	p.slurmRes = s.slurm.Must("scontrol", "-o", "show", "reservation")
	list, err := kube.Client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	p.kube = map[string]string{}
	for _, n := range list.Items {
		p.kube[n.Name] = n.ResourceVersion
	}
	p.files = map[string]string{}
	hash := func(path string) {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		sum := sha256.Sum256(b)
		p.files[path] = hex.EncodeToString(sum[:])
	}
	matches, err := filepath.Glob(filepath.Join(s.work, "site.db*"))
	require.NoError(t, err)
	sort.Strings(matches)
	for _, m := range matches {
		hash(m)
	}
	require.NoError(t, filepath.WalkDir(stateDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		p.files[path+"/"] = "" // a directory made shows too
		if !d.IsDir() {
			hash(path)
		}
		return nil
	}))
	return p
}
