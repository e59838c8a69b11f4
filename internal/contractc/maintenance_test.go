package contractc

import (
	"bytes"
	"cmp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/cli"
	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/inventory"
	"github.com/seamdc/seam/internal/peer/slurmtest"
)

const example = "../../contracts/examples/threemodule"

// contractc maintenance apply against a real Slurm with the example's
// 864 nodes (slurmd for one of mb's), where a job with no time limit
// runs on mb's node: the l2 window's reservation is made, and the job,
// which crosses the window, is named: exit 2. With the job gone,
// applying again leaves the reservation: exit 0.
func TestMaintenanceApplySlurm(t *testing.T) {
	c, diags, err := contract.Load(example)
	require.NoError(t, err)
	require.Empty(t, diags)
	_, err = c.ReadInventory(nil)
	require.NoError(t, err)
	g, _ := c.Graph()
	var nodes []slurmtest.Node
	for _, n := range g.OfKind(inventory.KindCompute) {
		name := g.El(n).Names.Slurm
		nodes = append(nodes, slurmtest.Node{Name: name, Run: name == "gpu-b-r01-n01"})
	}
	s := slurmtest.Start(t, slurmtest.Config{Nodes: nodes})
	apply := func() (int, string) {
		var out, errb bytes.Buffer
		code := Main([]string{"maintenance", "apply", example, "--slurm-conf", s.Conf}, &out, &errb)
		return code, out.String() + errb.String()
	}
	job := strings.TrimSpace(s.Must("sbatch", "--parsable", "--output=/dev/null", "-w", "gpu-b-r01-n01", "--time=UNLIMITED", "--wrap", "sleep 3600"))
	waitJob(t, s, job, "RUNNING")
	code, out := apply()
	require.Equal(t, cli.ExitFindings, code, out)
	assert.Contains(t, out, "seam-l2-cdu-service: created (window l2-cdu-service)\n")
	assert.Contains(t, out, "Flags=MAINT,IGNORE_JOBS,SPEC_NODES")
	assert.Contains(t, out, "  job "+job+" (wrap, root(0)) runs on gpu-b-r01-n01 until ")
	assert.Contains(t, out, "checkpoint it and requeue it (scontrol requeue "+job+")")
	assert.Contains(t, s.Must("scontrol", "show", "reservation"), "ReservationName=seam-l2-cdu-service")

	s.Must("scancel", job)
	waitJob(t, s, job, "")
	code, out = apply()
	require.Equal(t, cli.ExitOK, code, out)
	assert.Contains(t, out, "seam-l2-cdu-service: unchanged")
}

// waitJob waits, a minute at most, until squeue shows job in state ("":
// gone from the queue), asking every 200 ms.
func waitJob(t *testing.T, s *slurmtest.Cluster, job, state string) {
	t.Helper()
	const within = time.Minute
	deadline := time.After(within)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		got := strings.TrimSpace(s.Must("squeue", "-h", "-j", job, "-o", "%T"))
		if got == state {
			return
		}
		select {
		case <-deadline:
			t.Fatalf("job %s is still %q %s on: want %s", job, got, within, cmp.Or(state, "it gone from the queue"))
		case <-tick.C:
		}
	}
}
