package slurmtest

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A cluster of two running nodes and one defined only: ready when the
// running ones are idle, the other known but down, and nothing of it
// left running when the test ends.
func TestCluster(t *testing.T) {
	var dir string
	t.Run("cluster", func(t *testing.T) {
		c := Start(t, Config{
			Nodes:    []Node{{Name: "n1", Run: true, Features: []string{"gen_x"}}, {Name: "n2", Run: true}, {Name: "n3"}},
			Topology: []byte("SwitchName=s1 Nodes=n[1-3]\n"),
		})
		dir = c.Dir
		out := c.Must("sinfo", "-h", "-N", "-o", "%N %t %f")
		assert.Contains(t, out, "n1 idle gen_x")
		assert.Contains(t, out, "n2 idle")
		assert.Regexp(t, `n3 (down|unk)`, out)
		assert.Equal(t, "SwitchName=s1 Level=0 LinkSpeed=1 Nodes=n[1-3]", strings.TrimSpace(c.Must("scontrol", "show", "topology")))
		_, err := c.Run("scontrol", "show", "node", "nosuch")
		assert.ErrorContains(t, err, "scontrol show node nosuch")
	})
	require.NotEmpty(t, dir)
	out, _ := exec.Command("pgrep", "-f", dir).Output()
	assert.Empty(t, strings.TrimSpace(string(out)), "no daemon of the cluster is left")
}
