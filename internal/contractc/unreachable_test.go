package contractc

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/cli"
	"github.com/seamdc/seam/internal/peer"
	"github.com/seamdc/seam/internal/peer/slurmtest"
)

// Every command that talks to Slurm, with no slurmctld to answer
// (Debian's scontrol, a slurm.conf naming a closed loopback port, or no
// such file), says so in one line — what it tried, what to do — and
// exits 1; dry runs read Slurm, so they check too. Saved copies need no
// Slurm and are not checked.
func TestSlurmUnreachable(t *testing.T) {
	peer.Need(t, "scontrol")
	conf := slurmtest.Unreachable(t)
	missing := filepath.Join(t.TempDir(), "slurm.conf")
	for _, tc := range []struct {
		name, env string
		args      []string
		hint      string
	}{
		{"drift", "", []string{"topology", "drift", example, "--slurm", "--slurm-conf", conf}, "pass saved copies of its output with --scontrol and --sinfo"},
		{"drift, SLURM_CONF", conf, []string{"topology", "drift", example, "--slurm"}, "--scontrol and --sinfo"},
		{"apply", "", []string{"topology", "apply", example, "--slurm-conf", conf}, ""},
		{"apply --dry-run", conf, []string{"topology", "apply", example, "--slurm", "--dry-run"}, ""},
		{"maintenance apply", "", []string{"maintenance", "apply", example, "--slurm-conf", conf}, "--format slurm prints the scontrol commands"},
		{"maintenance apply --dry-run", conf, []string{"maintenance", "apply", example, "--slurm", "--dry-run"}, "--format slurm"},
		{"no such slurm.conf", missing, []string{"topology", "drift", example, "--slurm"}, "(no such file)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("SLURM_CONF", tc.env)
			var out, errb bytes.Buffer
			code := Main(tc.args, &out, &errb)
			require.Equal(t, cli.ExitTool, code, "%s%s", out.String(), errb.String())
			line := strings.TrimSuffix(errb.String(), "\n")
			require.NotContains(t, line, "\n", "one line")
			assert.Contains(t, line, "contractc "+strings.Join(tc.args[:2], " ")+": no slurmctld reachable with SLURM_CONF=")
			if tc.env != missing {
				assert.Contains(t, line, "SLURM_CONF="+conf+" (scontrol ping: Slurmctld(primary) at ")
				assert.Contains(t, line, " is DOWN)")
			}
			assert.Contains(t, line, "point at a running Slurm's slurm.conf with --slurm-conf or SLURM_CONF")
			assert.Contains(t, line, tc.hint)
			assert.Empty(t, out.String())
		})
	}

	// saved copies: no slurmctld needed, none checked for
	t.Setenv("SLURM_CONF", missing)
	var out, errb bytes.Buffer
	code := Main([]string{"topology", "drift", "--records", smallRecords, "--scontrol", "../scheduler/testdata/topology-tree-22.05.txt"}, &out, &errb)
	assert.NotEqual(t, cli.ExitTool, code, errb.String())
	assert.NotContains(t, errb.String(), "slurmctld")
}
