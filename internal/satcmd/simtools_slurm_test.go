package satcmd

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/peer"
	"github.com/seamdc/seam/internal/peer/slurmtest"
	"github.com/seamdc/seam/internal/sim"
	"github.com/seamdc/seam/internal/sim/fleet"
	"github.com/seamdc/seam/internal/topology"
)

// The simulated nodes' GPU tools run on the nodes through a real Slurm:
// slurmctld loads the example's topology.conf generated from the
// inventory (864 nodes named as in the handover), a slurmd -N runs for
// four nodes of rack a-r01 and one of a-r02, and srun -w runs sat
// sim-tools' nvidia-smi, dcgmi and all_reduce_perf there, found first on
// the job's PATH. Each prints its own node's state (SLURMD_NODENAME):
// the GPUs' serials and power at burn-in, a failed diagnostic's exit
// code through srun, a two-node all-reduce whose bus bandwidth falls
// with a slow scale-up link and leaves NVLink across racks.
func TestGPUToolsThroughSlurm(t *testing.T) {
	peer.Need(t, "srun")
	sat := peer.BuildGo(t, "./cmd/sat")
	o, control := startSim(t)

	bin := t.TempDir()
	out, err := peer.Run(time.Minute, sat, "sim-tools", "install", bin, "--control", control, "--sat", sat)
	require.NoError(t, err, out)

	// the topology issue's Slurm set-up, from the inventory
	c, _, err := contract.Load(exampleDir)
	require.NoError(t, err)
	_, err = c.ReadInventory(nil)
	require.NoError(t, err)
	g, _ := c.Graph()
	top, err := topology.FromGraph(g, topology.GraphOptions{RackNames: topology.RackNames(g, c.Handovers)})
	require.NoError(t, err)
	tree, err := topology.Render(top, topology.RenderOptions{Format: topology.FormatSlurmTree})
	require.NoError(t, err)
	run := map[string]bool{"gpu-a-r01-n01": true, "gpu-a-r01-n02": true, "gpu-a-r01-n03": true, "gpu-a-r01-n04": true, "gpu-a-r02-n01": true}
	var nodes []slurmtest.Node
	for _, n := range top.Nodes() {
		nodes = append(nodes, slurmtest.Node{Name: n.Slurm, Run: run[n.Slurm]})
	}
	cl := slurmtest.Start(t, slurmtest.Config{Nodes: nodes, Topology: tree.Text})

	_, err = o.SetNodes(sim.NodeRequest{Nodes: []string{"gpu-a-r01-n01", "gpu-a-r01-n02", "gpu-a-r01-n03", "gpu-a-r01-n04", "gpu-a-r02-n01"}, State: fleet.BurnIn})
	require.NoError(t, err)
	require.NoError(t, o.AddFleetDefect(fleet.Defect{Kind: fleet.FailedDiag, Target: "gpu-a-r01-n03", GPU: 2, Test: "GPU Memory"}))
	require.NoError(t, o.AddFleetDefect(fleet.Defect{Kind: fleet.SlowLink, Target: "gpu-a-r01-n04", Value: 0.5}))
	o.Site.Advance(2 * time.Second) // the nodes' draw follows in site time

	// the tools first on the PATH srun runs with, and so on the job's
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	srun := func(args ...string) (string, error) { return cl.Run("srun", args...) }
	out, err = srun("-w", "gpu-a-r01-n02", "nvidia-smi", "--query-gpu=index,serial,name,power.draw", "--format=csv,noheader,nounits")
	require.NoError(t, err)
	t.Logf("srun -w gpu-a-r01-n02 nvidia-smi:\n%s", out)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 4)
	for i, l := range lines {
		f := strings.Split(l, ", ")
		require.Len(t, f, 4, l)
		assert.Equal(t, strconv.Itoa(i), f[0])
		assert.Equal(t, "SN-GPU-000000"+strconv.Itoa(5+i), f[1], "the GPUs of the node srun ran on")
		assert.Equal(t, "NVIDIA GB300", f[2])
		assert.Equal(t, "1400.00", f[3], "at burn-in")
	}

	out, err = srun("-w", "gpu-a-r01-n03", "dcgmi", "diag", "-r", "2", "-j")
	require.Error(t, err, "a failed diagnostic is dcgmi's exit 226, which srun passes on")
	assert.Contains(t, err.Error(), "226")
	// srun's own error lines mix into the output: read it as text
	assert.Contains(t, out, `"DCGM Diagnostic": {`)
	assert.Contains(t, out, `"status": "Fail"`)
	assert.Contains(t, out, "GPU 2 failed the gpu memory test")

	bus := func(nodelist string) float64 {
		t.Helper()
		out, err := srun("-w", nodelist, "-N", "2", "--ntasks-per-node=1", "all_reduce_perf", "-b", "8G", "-e", "8G", "-g", "4")
		require.NoError(t, err, out)
		assert.Equal(t, 1, strings.Count(out, "# nThread"), "rank 0 alone prints:\n%s", out)
		assert.Equal(t, 8, strings.Count(out, "#  Rank"), out)
		for _, l := range strings.Split(out, "\n") {
			if f := strings.Fields(l); len(f) == 13 && f[0] == "8589934592" {
				v, err := strconv.ParseFloat(f[7], 64)
				require.NoError(t, err)
				return v
			}
		}
		t.Fatalf("no 8 GB row:\n%s", out)
		return 0
	}
	healthy, slow, across := bus("gpu-a-r01-n01,gpu-a-r01-n02"), bus("gpu-a-r01-n01,gpu-a-r01-n04"), bus("gpu-a-r01-n01,gpu-a-r02-n01")
	t.Logf("8 GB all-reduce busbw: %.1f GB/s in one rack, %.1f with a slow scale-up link, %.1f across two racks", healthy, slow, across)
	assert.InDelta(t, 840, healthy, 20)
	assert.InDelta(t, healthy/2, slow, 15)
	assert.Less(t, across, 420.0)
}
