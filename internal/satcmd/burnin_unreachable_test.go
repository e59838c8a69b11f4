package satcmd

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/cli"
	"github.com/seamdc/seam/internal/peer"
	"github.com/seamdc/seam/internal/peer/slurmtest"
)

// sat burnin run with no slurmctld to answer (Debian's scontrol, a
// slurm.conf naming a closed loopback port) says so in one line — what
// it tried, what to do — and exits 1, before it reserves anything; a
// dry run reads Slurm, so it checks too.
func TestBurninRunSlurmUnreachable(t *testing.T) {
	peer.Need(t, "scontrol")
	conf := slurmtest.Unreachable(t)
	for _, extra := range [][]string{{"--slurm-conf", conf}, {"--slurm-conf", conf, "--dry-run"}} {
		args := append([]string{"burnin", "run", "--contracts", exampleDir, "--module", "ma", "--nodes", "gpu-a-r01-n01",
			"--out", filepath.Join(t.TempDir(), "ev"), "--scheduler", "slurm"}, extra...)
		code, stdout, stderr := sat(t, args...)
		require.Equal(t, cli.ExitTool, code, stdout+stderr)
		line := strings.TrimSuffix(stderr, "\n")
		require.NotContains(t, line, "\n", "one line")
		assert.Contains(t, line, "sat burnin: no slurmctld reachable with SLURM_CONF="+conf+" (scontrol ping: Slurmctld(primary) at ")
		assert.Contains(t, line, "point at a running Slurm's slurm.conf with --slurm-conf or SLURM_CONF, or burn in the simulated site with no scheduler (--scheduler sim --site DIR, DIR from sat sim --out)")
		assert.Empty(t, stdout)
	}
}
