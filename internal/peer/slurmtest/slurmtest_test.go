package slurmtest

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A cluster of two running nodes and one defined only: ready when the
// running ones are idle, the other known but down, and nothing of it
// left running when the test ends, not even a job still running (its
// slurmstepd outlives slurmd).
func TestCluster(t *testing.T) {
	var dir, conf string
	t.Run("cluster", func(t *testing.T) {
		c := Start(t, Config{
			Nodes:    []Node{{Name: "n1", Run: true, Features: []string{"gen_x"}}, {Name: "n2", Run: true}, {Name: "n3"}},
			Topology: []byte("SwitchName=s1 Nodes=n[1-3]\n"),
		})
		dir, conf = c.Dir, c.Conf
		out := c.Must("sinfo", "-h", "-N", "-o", "%N %t %f")
		assert.Contains(t, out, "n1 idle gen_x")
		assert.Contains(t, out, "n2 idle")
		assert.Regexp(t, `n3 (down|unk)`, out)
		assert.Equal(t, "SwitchName=s1 Level=0 LinkSpeed=1 Nodes=n[1-3]", strings.TrimSpace(c.Must("scontrol", "show", "topology")))
		_, err := c.Run("scontrol", "show", "node", "nosuch")
		assert.ErrorContains(t, err, "scontrol show node nosuch")
		job := strings.TrimSpace(c.Must("sbatch", "--parsable", "--output=/dev/null", "-w", "n1", "--wrap", "sleep 600"))
		for deadline := time.Now().Add(time.Minute); strings.TrimSpace(c.Must("squeue", "-h", "-j", job, "-o", "%T")) != "RUNNING"; {
			require.True(t, time.Now().Before(deadline), "job %s never ran", job)
			time.Sleep(100 * time.Millisecond)
		}
		for deadline := time.Now().Add(time.Minute); len(jobProcesses(c.Conf)) < 3; {
			require.True(t, time.Now().Before(deadline), "the job's processes: %v", jobProcesses(c.Conf))
			time.Sleep(100 * time.Millisecond)
		}
	})
	require.NotEmpty(t, dir)
	out, _ := exec.Command("pgrep", "-f", dir).Output()
	assert.Empty(t, strings.TrimSpace(string(out)), "no daemon of the cluster is left")
	assert.Empty(t, jobProcesses(conf), "no process of its job is left")
}
