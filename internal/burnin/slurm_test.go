package burnin

import (
	"context"
	"os"
	"os/user"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/peer"
	"github.com/seamdc/seam/internal/peer/slurmtest"
	"github.com/seamdc/seam/internal/sim"
	"github.com/seamdc/seam/internal/sim/fleet"
)

// Burn-in through a real Slurm: slurmctld and one slurmd -N per node
// for the 36 nodes of racks a-r01 and a-r02 (Debian's slurmd serves one
// node name each: 288 slurmds, one module, are more than a shared
// 2-core CI machine carries; TestModuleOf288ThreeDefects runs the full
// module in process), plus a-r03-n01, which Slurm knows but no slurmd
// serves (sinfo says it is not responding: it is not tried), and
// a-r02-n05, whose tools hang: a node that never answers, cancelled
// after the job timeout, its other steps not tried. The nodes are reserved
// (Flags=MAINT,IGNORE_JOBS) for the user running the burn-in, and
// every job is srun -w … --reservation inside it; a job outside the
// reservation does not start on them. The GPU tools are sat sim-tools'
// wrappers, first on the jobs' PATH, printing the simulated nodes'
// state; one node runs DCGM 3.x (the other JSON shape). Exactly the
// slow link, the hot GPU, the failed diagnostic, the silent and the
// hanging node are held back, each with its reason; the reservation is
// gone after.
func TestBurninThroughSlurm(t *testing.T) {
	peer.Need(t, "srun")
	sat := peer.BuildGo(t, "./cmd/sat")
	s := openSite(t, "ma")
	require.NoError(t, s.o.Start())
	t.Cleanup(s.o.Close)
	cs, err := s.o.ServeControl("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { cs.Close() })
	bin := t.TempDir()
	out, err := peer.Run(time.Minute, sat, "sim-tools", "install", bin, "--control", cs.URL(), "--sat", sat)
	require.NoError(t, err, out)

	var nodes []Node
	var sl []slurmtest.Node
	for _, n := range s.nodes {
		if n.Rack == "a-r01" || n.Rack == "a-r02" || n.Name == "gpu-a-r03-n01" {
			nodes = append(nodes, n)
			sl = append(sl, slurmtest.Node{Name: n.Name, Run: n.Name != "gpu-a-r03-n01"})
		}
	}
	require.Len(t, nodes, 37)
	cl := slurmtest.Start(t, slurmtest.Config{Nodes: sl, Within: 3 * time.Minute})

	slow, hot, diag, silent, hang := "gpu-a-r01-n07", "gpu-a-r02-n11", "gpu-a-r01-n15", "gpu-a-r03-n01", "gpu-a-r02-n05"
	// the hanging node's tools: wrappers first on the PATH that never
	// return on that node
	hangBin := t.TempDir()
	for _, tool := range []string{"nvidia-smi", "dcgmi", "all_reduce_perf"} {
		script := "#!/bin/sh\nif [ \"$SLURMD_NODENAME\" = " + hang + " ]; then exec sleep 3600; fi\nexec " + bin + "/" + tool + " \"$@\"\n"
		require.NoError(t, os.WriteFile(hangBin+"/"+tool, []byte(script), 0o755))
	}
	require.NoError(t, s.o.AddFleetDefect(fleet.Defect{Kind: fleet.SlowLink, Target: slow, Value: 0.6}))
	require.NoError(t, s.o.AddFleetDefect(fleet.Defect{Kind: fleet.HotGPU, Target: hot, GPU: 2}))
	require.NoError(t, s.o.AddFleetDefect(fleet.Defect{Kind: fleet.FailedDiag, Target: diag, GPU: 0, Test: "Targeted Power"}))
	_, err = s.o.SetNodes(sim.NodeRequest{Nodes: []string{diag}, DCGM: "3.3.9"})
	require.NoError(t, err)

	me, err := user.Current()
	require.NoError(t, err)
	ex := &Slurm{Client: cl.Slurm(), Env: []string{"PATH=" + hangBin + ":" + bin + ":" + os.Getenv("PATH")}}
	names := make([]string, len(nodes))
	for i, n := range nodes {
		names[i] = n.Name
	}
	ctx := context.Background()
	require.NoError(t, ex.Reserve(ctx, "seam-burnin-test", me.Username, names))
	res := cl.Must("scontrol", "show", "reservation", "seam-burnin-test")
	assert.Contains(t, res, "Flags=MAINT,IGNORE_JOBS")
	_, err = cl.Run("srun", "--immediate=5", "-w", "gpu-a-r01-n01", "true")
	require.Error(t, err, "a job outside the reservation does not start on a node under burn-in")

	var progress strings.Builder
	r, err := Run(ctx, nodes, ex, Config{Load: s.load, Progress: &progress, Timeout: 30 * time.Second, Parallel: 6})
	require.NoError(t, err)
	t.Logf("progress:\n%s", tail(progress.String(), 12))
	require.NoError(t, ex.Release(ctx))
	out, _ = cl.Run("scontrol", "show", "reservation")
	assert.NotContains(t, out, "seam-burnin-test")

	want := []string{slow, hot, diag, silent, hang}
	sort.Strings(want)
	require.Equal(t, want, heldNames(r), reasons(r))
	assert.Contains(t, strings.Join(r.Node(silent).Reasons(), "\n"), "node "+silent+": Slurm reports it")
	assert.Contains(t, strings.Join(r.Node(silent).Reasons(), "\n"), "not responding")
	hr := strings.Join(r.Node(hang).Reasons(), "\n")
	assert.Contains(t, hr, "no answer within 30s from Slurm (reservation seam-burnin-test)")
	assert.Contains(t, hr, "did not answer in time: its other steps are not tried")
	out = cl.Must("squeue", "-h", "-o", "%j")
	assert.NotContains(t, out, "seam-burnin", "the hung job was cancelled")
	dg := strings.Join(r.Node(diag).Reasons(), "\n")
	assert.Contains(t, dg, "DCGM 3.3.9")
	assert.Contains(t, dg, "Targeted Power: Fail on GPU 0")
	assert.Equal(t, 3, r.Node(diag).Diag.Shape)
	assert.Contains(t, strings.Join(r.Node(slow).Reasons(), "\n"), "bisected from rack a-r01")
	assert.Contains(t, strings.Join(r.Node(hot).Reasons(), "\n"), "GPU 2")
	assert.Contains(t, progress.String(), "busbw")
}

func tail(s string, n int) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(l[max(0, len(l)-n):], "\n")
}

// The figure: a simulated burn-in of a module of 288 nodes
// through a real Slurm end to end (288 slurmd -N, one per node; srun in
// a reservation; the three defects held back). Heavy: it is a benchmark
// (make bench), not a test.
func BenchmarkBurnin288ThroughSlurm(b *testing.B) {
	peer.Need(b, "srun")
	sat := peer.BuildGo(b, "./cmd/sat")
	s := openSite(b, "ma")
	require.NoError(b, s.o.Start())
	b.Cleanup(s.o.Close)
	cs, err := s.o.ServeControl("127.0.0.1:0")
	require.NoError(b, err)
	b.Cleanup(func() { cs.Close() })
	bin := b.TempDir()
	out, err := peer.Run(time.Minute, sat, "sim-tools", "install", bin, "--control", cs.URL(), "--sat", sat)
	require.NoError(b, err, out)
	var sl []slurmtest.Node
	names := make([]string, len(s.nodes))
	for i, n := range s.nodes {
		sl = append(sl, slurmtest.Node{Name: n.Name, Run: true})
		names[i] = n.Name
	}
	start := time.Now()
	cl := slurmtest.Start(b, slurmtest.Config{Nodes: sl, Within: 10 * time.Minute})
	started := time.Since(start)
	slow, hot, diag := s.nodes[40].Name, s.nodes[101].Name, s.nodes[250].Name
	require.NoError(b, s.o.AddFleetDefect(fleet.Defect{Kind: fleet.SlowLink, Target: slow, Value: 0.5}))
	require.NoError(b, s.o.AddFleetDefect(fleet.Defect{Kind: fleet.HotGPU, Target: hot, GPU: 1}))
	require.NoError(b, s.o.AddFleetDefect(fleet.Defect{Kind: fleet.FailedDiag, Target: diag, GPU: 3, Test: "GPU Memory"}))
	me, err := user.Current()
	require.NoError(b, err)
	ex := &Slurm{Client: cl.Slurm(), Env: []string{"PATH=" + bin + ":" + os.Getenv("PATH")}}
	ctx := context.Background()
	require.NoError(b, ex.Reserve(ctx, "seam-burnin-bench", me.Username, names))
	b.Cleanup(func() { _ = ex.Release(ctx) })
	want := []string{slow, hot, diag}
	sort.Strings(want)
	for b.Loop() {
		r, err := Run(ctx, s.nodes, ex, Config{Load: s.load, Timeout: 5 * time.Minute, Parallel: 8})
		require.NoError(b, err)
		require.Equal(b, want, heldNames(r), reasons(r))
	}
	b.ReportMetric(started.Seconds(), "s-slurm-start")
}
