package scheduler_test

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/dryrun"
	"github.com/seamdc/seam/internal/peer"
	"github.com/seamdc/seam/internal/peer/slurmtest"
	"github.com/seamdc/seam/internal/scheduler"
)

// Reachable is one scontrol ping, also in a dry run; when no slurmctld
// answers its error is one line: the slurm.conf tried, the line of
// scontrol's answer that says why, and what to do.
func TestReachableAnswers(t *testing.T) {
	t.Setenv("SLURM_CONF", "")
	down := "Slurmctld(primary) at ctl is DOWN\n*****************************************\n** RESTORE SLURMCTLD DAEMON TO SERVICE **\n*****************************************\n"
	srv := "exit status 1: scontrol: error: resolve_ctls_from_dns_srv: res_nsearch error: Unknown host\nscontrol: error: fetch_config: DNS SRV lookup failed\n" +
		"scontrol: error: _establish_config_source: failed to fetch config\nscontrol: fatal: Could not establish a configuration source"
	for _, tc := range []struct {
		name string
		out  string
		err  error
		want string // "": reachable
	}{
		{"up", "Slurmctld(primary) at ctl is UP\n", nil, ""},
		{"primary down, backup up", "Slurmctld(primary) at a is DOWN\nSlurmctld(backup) at b is UP\n", errors.New("exit status 1"), ""},
		{"down", down, errors.New("exit status 1"), "no slurmctld reachable with SLURM_CONF unset (scontrol ping: Slurmctld(primary) at ctl is DOWN): " + scheduler.SlurmHint},
		{"no slurm.conf", "", errors.New(srv), "(scontrol ping: no slurm.conf at Slurm's default path, and no DNS SRV record names a slurmctld)"},
		{"bad slurm.conf", "", errors.New("exit status 1: scontrol: error: ClusterName needs to be specified\nscontrol: fatal: Unable to process configuration file"), "(scontrol ping: Unable to process configuration file)"},
		{"no scontrol", "", fmt.Errorf("exec: \"scontrol\": %w", exec.ErrNotFound), "(scontrol ping: scontrol not found: install Slurm's client (Debian: slurm-client))"},
		{"timeout", "", context.DeadlineExceeded, "(scontrol ping: timed out after 10ms)"},
	} {
		var ran []string
		s := &scheduler.Slurm{Command: scheduler.Command{Timeout: 10 * time.Millisecond, Dry: dryrun.New(nil, nil), Exec: func(ctx context.Context, _ []string, name string, args ...string) ([]byte, error) {
			ran = append(ran, name+" "+strings.Join(args, " "))
			if tc.err == context.DeadlineExceeded {
				<-ctx.Done()
				return nil, ctx.Err()
			}
			return []byte(tc.out), tc.err
		}}}
		err := s.Reachable(context.Background())
		assert.Equal(t, []string{"scontrol ping"}, ran, "%s: one scontrol ping, in a dry run too", tc.name)
		if tc.want == "" {
			assert.NoError(t, err, tc.name)
			continue
		}
		var u *scheduler.UnreachableError
		require.ErrorAs(t, err, &u, tc.name)
		assert.NotContains(t, err.Error(), "\n", tc.name)
		assert.Contains(t, err.Error(), tc.want, tc.name)
		if tc.err != context.DeadlineExceeded {
			assert.ErrorIs(t, err, tc.err, "%s: the cause is kept", tc.name)
		}
	}

	// a slurm.conf that does not exist is not pinged (scontrol would
	// retry it for a minute); SLURM_CONF is the client's when Conf is ""
	missing := filepath.Join(t.TempDir(), "slurm.conf")
	t.Setenv("SLURM_CONF", missing)
	s := &scheduler.Slurm{Command: scheduler.Command{Exec: func(context.Context, []string, string, ...string) ([]byte, error) {
		t.Fatal("scontrol ran")
		return nil, nil
	}}}
	err := s.Reachable(context.Background())
	require.EqualError(t, err, "no slurmctld reachable with SLURM_CONF="+missing+" (no such file): "+scheduler.SlurmHint)
}

// Debian's scontrol against a slurm.conf whose controller port is closed.
func TestReachableRealScontrol(t *testing.T) {
	peer.Need(t, "scontrol")
	conf := slurmtest.Unreachable(t)
	err := (&scheduler.Slurm{Conf: conf}).Reachable(context.Background())
	require.Error(t, err)
	assert.Regexp(t, `^no slurmctld reachable with SLURM_CONF=\S+ \(scontrol ping: Slurmctld\(primary\) at \S+ is DOWN\): `, err.Error())
}
