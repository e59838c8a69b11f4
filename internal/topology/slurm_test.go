package topology

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/peer/slurmtest"
	"github.com/seamdc/seam/internal/scheduler"
	"github.com/seamdc/seam/internal/topology/hostlist"
)

// slurmNodes are the topology's nodes for slurm.conf, with their
// generation's feature; run says which get a slurmd.
func slurmNodes(top *Topology, run func(*Node) bool) []slurmtest.Node {
	var out []slurmtest.Node
	for _, n := range top.Nodes() {
		sn := slurmtest.Node{Name: n.Slurm, Run: run(n)}
		if n.Generation != "" {
			sn.Features = []string{Feature(n.Generation)}
		}
		out = append(out, sn)
	}
	return out
}

func treeFile(t *testing.T, top *Topology) []byte {
	t.Helper()
	return render(t, top, RenderOptions{Format: FormatSlurmTree, Command: "contractc topology --format slurm-tree"}).Text
}

// readBack is what the running slurmctld says its topology is.
func readBack(t *testing.T, c *slurmtest.Cluster) *scheduler.State {
	t.Helper()
	st, err := c.Slurm().Read(context.Background())
	require.NoError(t, err)
	return st
}

// A real slurmctld with a slurmd per node (2 modules × 2 racks × 2
// nodes, on loopback) loads the generated topology.conf, and scontrol
// show topology reads back as the inventory, edge for edge. A job of
// two racks' worth of nodes lands under one module: with one node of
// module ma drained, Slurm's first free nodes span both modules, and
// the tree plugin picks module mb's four.
func TestSlurmRunsTheTree(t *testing.T) {
	top := small(t)
	c := slurmtest.Start(t, slurmtest.Config{Nodes: slurmNodes(top, func(*Node) bool { return true }), Topology: treeFile(t, top)})
	t.Logf("scontrol show topology:\n%s", c.Must("scontrol", "show", "topology"))
	st := readBack(t, c)
	assert.Equal(t, "22.05.8", st.Version)
	d := DiffEdges(LiveTree(st), top.Tree())
	assert.True(t, d.Empty(), "scontrol show topology equals the inventory:\n%s", FormatDiff(d, "inventory", "slurm"))
	r := Drift(top, st, nil, DriftOptions{Inventory: "small"})
	assert.Empty(t, r.Findings, "no drift against the live Slurm")

	c.Must("scontrol", "update", "nodename=gpu-a-r01-n01", "state=drain", "reason=seam-test")
	job := strings.TrimSpace(c.Must("sbatch", "--parsable", "--output=/dev/null", "--nodes=4", "--wrap", "sleep 120"))
	nodes := running(t, c, job)
	t.Logf("sbatch --nodes=4 with gpu-a-r01-n01 drained: job %s on %s", job, strings.Join(nodes, ","))
	for _, n := range nodes {
		assert.True(t, strings.HasPrefix(n, "gpu-b-"), "job %s on %v: all in module mb", job, nodes)
	}
	assert.Len(t, nodes, 4)
	cancel(t, c, job)

	// --switches counts leaf switches: two racks' worth in at most two
	job = strings.TrimSpace(c.Must("sbatch", "--parsable", "--output=/dev/null", "--nodes=4", "--switches=2", "--wrap", "sleep 120"))
	nodes = running(t, c, job)
	t.Logf("sbatch --nodes=4 --switches=2: job %s on %s", job, strings.Join(nodes, ","))
	racks := map[string]bool{}
	for _, n := range nodes {
		racks[n[:len("gpu-b-r01")]] = true
	}
	assert.Len(t, racks, 2, "job on %v", nodes)
	cancel(t, c, job)

	// the generation's feature keeps a job on one generation
	job = strings.TrimSpace(c.Must("sbatch", "--parsable", "--output=/dev/null", "--nodes=2", "--constraint="+Feature("gb300-nvl72"), "--wrap", "sleep 120"))
	assert.Len(t, running(t, c, job), 2)
	cancel(t, c, job)
}

// The control: without the topology, the same job on the same cluster
// takes the first free nodes, across both modules.
func TestSlurmWithoutTheTreeSpansModules(t *testing.T) {
	top := small(t)
	c := slurmtest.Start(t, slurmtest.Config{Nodes: slurmNodes(top, func(*Node) bool { return true })})
	c.Must("scontrol", "update", "nodename=gpu-a-r01-n01", "state=drain", "reason=seam-test")
	job := strings.TrimSpace(c.Must("sbatch", "--parsable", "--output=/dev/null", "--nodes=4", "--wrap", "sleep 120"))
	nodes := running(t, c, job)
	t.Logf("without topology.conf, sbatch --nodes=4 with gpu-a-r01-n01 drained: job %s on %s", job, strings.Join(nodes, ","))
	modules := map[string]bool{}
	for _, n := range nodes {
		modules[n[:len("gpu-a")]] = true
	}
	assert.Len(t, modules, 2, "job %s on %v spans modules", job, nodes)
	cancel(t, c, job)
}

// running waits for a job to run and returns its nodes.
func running(t *testing.T, c *slurmtest.Cluster, job string) []string {
	t.Helper()
	var last string
	for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		last = c.Must("squeue", "-h", "-j", job, "-o", "%T %N %r")
		if f := strings.Fields(last); len(f) >= 2 && f[0] == "RUNNING" {
			nodes, err := hostlist.Expand(f[1])
			require.NoError(t, err)
			return nodes
		}
	}
	t.Fatalf("job %s does not run: %s", job, last)
	return nil
}

// cancel cancels a job and waits until it has left its nodes (a busy
// machine's slurmd can take seconds to end it), so that the next job
// finds them free.
func cancel(t *testing.T, c *slurmtest.Cluster, job string) {
	t.Helper()
	c.Must("scancel", job)
	var last string
	for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		// squeue shows the job COMPLETING, then CANCELLED, then (after
		// MinJobAge) not at all: an unknown job id is an error
		out, err := c.Run("squeue", "-h", "-j", job, "-t", "all", "-o", "%T")
		last = strings.TrimSpace(out)
		if err != nil || last == "" || last == "CANCELLED" {
			return
		}
	}
	t.Fatalf("job %s did not end after scancel: %s", job, last)
}

// The example's whole topology.conf (864 nodes, 48 racks, 3 modules)
// in a controller whose nodes are defined but run no slurmd. Slurm first
// runs a hand-edited copy with rack a-r05 under module mb: drift against
// the live controller names the moved rack. Applying the inventory's
// file replaces it; scontrol show topology and sinfo --json then read
// back as the inventory (no drift, every node with its generation's
// feature).
func TestSlurmLoadsTheExample(t *testing.T) {
	top := exampleTopology(t)
	good := treeFile(t, top)
	moved := bytes.Replace(good, []byte("SwitchName=ma Switches=a-r[01-16]\n"), []byte("SwitchName=ma Switches=a-r[01-04,06-16]\n"), 1)
	moved = bytes.Replace(moved, []byte("SwitchName=mb Switches=b-r[01-16]\n"), []byte("SwitchName=mb Switches=a-r05,b-r[01-16]\n"), 1)
	require.NotEqual(t, good, moved)
	c := slurmtest.Start(t, slurmtest.Config{Nodes: slurmNodes(top, func(*Node) bool { return false }), Topology: moved})

	r := Drift(top, readBack(t, c), nil, DriftOptions{Inventory: "threemodule"})
	assert.Equal(t, []string{DriftSwitchMoved}, classes(r))
	assert.Contains(t, messages(r), "switch a-r05 is under mb in Slurm; the inventory puts it under ma")

	res := ApplySlurm(context.Background(), c.Slurm(), good, ApplyOptions{Force: true, Source: "contracts/examples/threemodule"})
	require.NoError(t, res.Err)
	assert.Equal(t, ResultApplied, res.Result)
	assert.Equal(t, "  + ma: a-r05 (added)\n  - mb: a-r05 (removed)\n", FormatDiff(res.Diff, "added", "removed"))

	st := readBack(t, c)
	assert.Len(t, st.Switches, 48+3+1)
	assert.Len(t, st.Nodes, 864)
	d := DiffEdges(LiveTree(st), top.Tree())
	assert.True(t, d.Empty(), "scontrol show topology equals the inventory:\n%s", FormatDiff(d, "inventory", "slurm"))
	r = Drift(top, st, nil, DriftOptions{Inventory: "threemodule"})
	assert.Empty(t, r.Findings, messages(r))
	spine := st.Switches[len(st.Switches)-1]
	assert.Equal(t, "spine", spine.Name)
	assert.Equal(t, 2, spine.Level)
	assert.Len(t, spine.Nodes, 864, "a parent lists every node below it, expanded")
}

// A rack moved to another module in the inventory is caught by drift
// against the live Slurm, as is a hand-typed Kubernetes label.
func TestSlurmDriftCatchesAMovedRack(t *testing.T) {
	top := small(t)
	c := slurmtest.Start(t, slurmtest.Config{Nodes: slurmNodes(top, func(n *Node) bool { return n.Rack == "a-r01" }), Topology: treeFile(t, top)})
	st := readBack(t, c)
	recs := smallRecords(t)
	for _, r := range recs {
		if r.Rack == "b-r02" {
			r.Module = "ma"
		}
	}
	moved, err := FromRecords("small", recs, RecordOptions{Generation: "gb300-nvl72"})
	require.NoError(t, err)
	r := Drift(moved, st, nil, DriftOptions{Inventory: "small, b-r02 moved"})
	require.NotEmpty(t, r.Findings)
	assert.Contains(t, classes(r), DriftSwitchMoved)
	assert.Contains(t, messages(r), "switch b-r02 is under mb in Slurm; the inventory puts it under ma (rack or domain b-r02 moved to module ma?)")
}

func classes(r *Report) []string {
	var out []string
	for _, f := range r.Findings {
		out = append(out, f.Class)
	}
	return out
}

func messages(r *Report) string {
	var b strings.Builder
	for _, f := range r.Findings {
		b.WriteString(f.Message + "\n")
	}
	return b.String()
}

func auditRecords(t *testing.T, path string) []AuditRecord {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var out []AuditRecord
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		var r AuditRecord
		require.NoError(t, json.Unmarshal(sc.Bytes(), &r))
		out = append(out, r)
	}
	return out
}

// Apply against a real Slurm: the inventory's new tree replaces the
// running one (backup, reconfigure, read back equal, audit record); a
// tree Slurm takes but runs otherwise (a node slurm.conf does not have)
// is rolled back; a tree slurmctld exits on (a child that is not a
// switch) is rolled back with a restart; a file seam did not write, or
// one edited by hand, is refused.
func TestSlurmApply(t *testing.T) {
	recs := smallRecords(t)
	for _, r := range recs {
		if r.Rack == "b-r02" {
			r.Module = "ma" // what Slurm runs at first: an old inventory
		}
	}
	old, err := FromRecords("small", recs, RecordOptions{Generation: "gb300-nvl72"})
	require.NoError(t, err)
	top := small(t)
	c := slurmtest.Start(t, slurmtest.Config{Nodes: slurmNodes(top, func(n *Node) bool { return n.Rack == "a-r01" }), Topology: treeFile(t, old)})
	file := filepath.Join(c.Dir, "topology.conf")
	ctx := context.Background()

	// a dry run changes nothing and shows the moved rack
	dry := ApplySlurm(ctx, c.Slurm(), treeFile(t, top), ApplyOptions{DryRun: true})
	require.NoError(t, dry.Err)
	assert.Equal(t, ResultDryRun, dry.Result)
	assert.Equal(t, "  + mb: b-r02 (new)\n  - ma: b-r02 (running now, dropped)\n", FormatDiff(dry.Diff, "new", "running now, dropped"))
	assert.NoFileExists(t, AuditFile(file))

	res := ApplySlurm(ctx, c.Slurm(), treeFile(t, top), ApplyOptions{Source: "small"})
	require.NoError(t, res.Err)
	assert.Equal(t, ResultApplied, res.Result)
	assert.FileExists(t, res.Backup)
	assert.True(t, DiffEdges(LiveTree(readBack(t, c)), top.Tree()).Empty(), "Slurm runs the new tree")
	again := ApplySlurm(ctx, c.Slurm(), treeFile(t, top), ApplyOptions{})
	assert.Equal(t, ResultUnchanged, again.Result)

	// Slurm takes a leaf with a node it does not have, and runs it
	// (leaf lines show the name as written): the check after reconfigure
	// catches it and the old file goes back
	applied, err := os.ReadFile(file)
	require.NoError(t, err)
	bad := bytes.Replace(applied, []byte("Nodes=gpu-a-r01-n[01-02]"), []byte("Nodes=gpu-a-r01-n[01-03]"), 1)
	res = ApplySlurm(ctx, c.Slurm(), bad, ApplyOptions{Unchecked: true, Force: true})
	assert.Equal(t, ResultRolledBack, res.Result, "%v", res.Err)
	assert.ErrorContains(t, res.Err, "leaf a-r01 lists node gpu-a-r01-n03, which Slurm does not have")
	now, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.Equal(t, string(applied), string(now), "the old topology.conf is back")
	assert.True(t, DiffEdges(LiveTree(readBack(t, c)), top.Tree()).Empty(), "Slurm runs the old tree again")

	// checked first, the same file is refused before anything is written
	res = ApplySlurm(ctx, c.Slurm(), bad, ApplyOptions{Force: true})
	assert.Equal(t, ResultRefused, res.Result)
	assert.ErrorContains(t, res.Err, "leaf a-r01 lists node gpu-a-r01-n03, which Slurm does not have (add it to slurm.conf first)")

	// slurmctld exits on a child that is not a switch ("invalid
	// child"): the old file goes back, slurmctld is started again and
	// runs the old tree
	fatal := bytes.Replace(applied, []byte("Switches=ma,mb"), []byte("Switches=ma,mb,zz"), 1)
	restarted := false
	res = ApplySlurm(ctx, c.Slurm(), fatal, ApplyOptions{Unchecked: true, Force: true, Restart: func(context.Context) error {
		restarted = true
		c.StartController()
		return nil
	}})
	assert.Equal(t, ResultRolledBack, res.Result, "%v", res.Err)
	assert.True(t, restarted)
	assert.ErrorContains(t, res.Err, "slurm rejected the new topology: scontrol reconfigure")
	assert.True(t, DiffEdges(LiveTree(readBack(t, c)), top.Tree()).Empty(), "Slurm runs the old tree again")

	// a hand edit, or a file from another tool, is refused
	require.NoError(t, os.WriteFile(file, append(applied, "SwitchName=extra Nodes=gpu-a-r01-n01\n"...), 0o644))
	res = ApplySlurm(ctx, c.Slurm(), treeFile(t, top), ApplyOptions{})
	assert.Equal(t, ResultRefused, res.Result)
	assert.ErrorContains(t, res.Err, "was edited by hand since seam wrote it")
	require.NoError(t, os.WriteFile(file, []byte("SwitchName=ib-leaf1 Nodes=gpu-[a-b]-r01-n[01-02]\n"), 0o644))
	res = ApplySlurm(ctx, c.Slurm(), treeFile(t, top), ApplyOptions{})
	assert.Equal(t, ResultRefused, res.Result)
	assert.ErrorContains(t, res.Err, "was not written by seam")
	res = ApplySlurm(ctx, c.Slurm(), treeFile(t, top), ApplyOptions{Force: true})
	assert.Equal(t, ResultApplied, res.Result, "%v", res.Err)

	var results []string
	for _, r := range auditRecords(t, AuditFile(file)) {
		results = append(results, r.Result)
		assert.NotEmpty(t, r.Time)
		assert.Equal(t, file, r.File)
	}
	assert.Equal(t, []string{ResultApplied, ResultUnchanged, ResultRolledBack, ResultRefused, ResultRolledBack, ResultRefused, ResultRefused, ResultApplied}, results)
}
