package burnin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/seamdc/seam/internal/clock"
	"github.com/seamdc/seam/internal/gputools"
	"github.com/seamdc/seam/internal/scheduler"
	"github.com/seamdc/seam/internal/topology/hostlist"
)

// Tools runs the simulated GPU tools (internal/gputools) in process,
// with the nodes' state from Nodes: no scheduler in between. It proves
// the ladder and the analysis at a size no test can start slurmds for;
// it does not prove Slurm placement, reservations or timeouts (Slurm
// does).
type Tools struct {
	Nodes func(names ...string) ([]*gputools.Node, error)
}

// Describe names it.
func (Tools) Describe() string { return "the simulated tools, in process" }

// Run runs the job's command as the tool would run on its first node
// (rank 0: it prints for the job).
func (t Tools) Run(ctx context.Context, j Job) Output {
	if err := ctx.Err(); err != nil {
		return Output{Err: err}
	}
	env := gputools.Env{Node: j.Nodes[0], Nodes: t.Nodes}
	if len(j.Nodes) > 1 {
		env.JobNodes = j.Nodes
	}
	var out, errb bytes.Buffer
	code := gputools.Run(j.Command[0], j.Command[1:], env, &out, &errb)
	o := Output{Stdout: out.Bytes(), Exit: code}
	if code != 0 && errb.Len() > 0 {
		o.Err = errors.New(strings.TrimSpace(errb.String()))
	}
	return o
}

// Slurm runs jobs with srun inside a reservation that holds the nodes
// under burn-in away from users (a drained node takes no srun -w; a
// reserved one takes the reservation's jobs only). It reaches Slurm
// through the one Slurm client.
type Slurm struct {
	Client *scheduler.Slurm
	// Reservation is the reservation's name (Reserve sets it).
	Reservation string
	// Partition, when set, is passed to srun (a dedicated burn-in
	// partition instead of, or with, the reservation).
	Partition string
	// Env is added to the jobs' environment (PATH to the tools).
	Env []string
	// Settle is how long a node Slurm shows only NOT_RESPONDING is asked
	// again before it counts as unavailable (default 20 s): Slurm 22.05
	// flags a node it has just been told to undrain NOT_RESPONDING until
	// its next ping, seconds later (checked), and a burn-in's hold
	// returns nodes from a drain to the burn-in's reservation. Clock
	// times the asks (default the wall clock).
	Settle time.Duration
	Clock  clock.Clock
	seq    atomic.Int64
}

// Describe names the scheduler and the reservation.
func (s *Slurm) Describe() string {
	if s.Reservation != "" {
		return "Slurm (reservation " + s.Reservation + ")"
	}
	return "Slurm"
}

func (s *Slurm) cmd(ctx context.Context, prog string, args ...string) *exec.Cmd {
	c := exec.CommandContext(ctx, s.Client.Path(prog), args...)
	c.Env = append(append(os.Environ(), s.Env...), s.Client.Env()...)
	c.WaitDelay = 5 * time.Second
	return c
}

// Reserve creates the reservation name over nodes for user, starting
// now, with flags MAINT (the nodes show as in maintenance) and
// IGNORE_JOBS (a running job does not block it; burn-in starts on
// nodes that run nothing).
func (s *Slurm) Reserve(ctx context.Context, name, user string, nodes []string) error {
	if err := s.Client.Reserve(ctx, name, user, nodes, "MAINT,IGNORE_JOBS"); err != nil {
		return err
	}
	s.Reservation = name
	return nil
}

// Release deletes the reservation: the nodes return to the scheduler
// (those that failed stay out through their hold, not the reservation).
func (s *Slurm) Release(ctx context.Context) error {
	if s.Reservation == "" {
		return nil
	}
	if err := s.Client.Unreserve(ctx, s.Reservation); err != nil {
		return err
	}
	s.Reservation = ""
	return nil
}

// Unavailable asks scontrol for the nodes' states and returns those
// that cannot run a job, with their state: DOWN, UNKNOWN (no slurmd has
// registered for it), FUTURE, or flagged DRAIN, FAIL, NOT_RESPONDING or
// POWERED_DOWN. (sinfo shows a node in a MAINT reservation as "maint",
// whatever else it is: scontrol keeps the flags.)
func (s *Slurm) Unavailable(ctx context.Context, nodes []string) (map[string]string, error) {
	settle, clk := s.Settle, s.Clock
	if settle <= 0 {
		settle = 20 * time.Second
	}
	if clk == nil {
		clk = clock.Real{}
	}
	end := clk.Now().Add(settle)
	for {
		states, err := s.Client.Nodes(ctx, nodes)
		if err != nil {
			return nil, fmt.Errorf("scontrol show node: %w", err)
		}
		if !onlyNotResponding(states) || !clk.Now().Before(end) {
			return unavailable(states, nodes), nil
		}
		if err := clk.Sleep(ctx, time.Second); err != nil {
			return nil, err
		}
	}
}

// onlyNotResponding reports whether some node is flagged
// NOT_RESPONDING and nothing else keeps it from a job.
func onlyNotResponding(states map[string]scheduler.NodeState) bool {
	for _, st := range states {
		if strings.Contains(st.State, "+NOT_RESPONDING") && cannotRun(strings.Replace(st.State, "+NOT_RESPONDING", "", 1)) == "" {
			return true
		}
	}
	return false
}

// unavailable names the nodes of states that cannot run a job, and why;
// a node of nodes that states lacks is unknown to Slurm.
func unavailable(states map[string]scheduler.NodeState, nodes []string) map[string]string {
	bad := map[string]string{}
	for name, st := range states {
		if why := cannotRun(st.State); why != "" {
			bad[name] = why
		}
	}
	for _, n := range nodes {
		if _, ok := states[n]; !ok {
			bad[n] = "Slurm does not know it (scontrol show node lists no such node): add it to slurm.conf"
		}
	}
	return bad
}

// cannotRun says why a node in state (scontrol's, flags and all) cannot
// run a job, or "".
func cannotRun(state string) string {
	parts := strings.Split(state, "+")
	switch base := strings.TrimRight(parts[0], "*"); {
	case base == "UNKNOWN":
		return "Slurm reports it " + state + ": no slurmd has registered for it (not responding)"
	case slices.Contains([]string{"DOWN", "FUTURE"}, base):
		return "Slurm reports it " + state + ": it cannot run a job"
	}
	for _, p := range parts[1:] {
		if slices.Contains([]string{"DRAIN", "FAIL", "NOT_RESPONDING", "POWERED_DOWN", "POWERING_DOWN"}, p) {
			return "Slurm reports it " + state + ": it cannot run a job"
		}
	}
	return ""
}

// Run runs the job with srun -w NODES -N n --ntasks-per-node=1 in the
// reservation; a job that outlives ctx is cancelled by its name.
func (s *Slurm) Run(ctx context.Context, j Job) Output {
	name := fmt.Sprintf("seam-burnin-%s-%d", j.Step, s.seq.Add(1))
	args := []string{"--job-name=" + name, "-w", hostlist.Compress(j.Nodes), "-N", strconv.Itoa(len(j.Nodes)), "--ntasks-per-node=1", "--quiet"}
	if dl, ok := ctx.Deadline(); ok {
		args = append(args, "--time="+strconv.Itoa(max(1, int(time.Until(dl).Minutes()+0.999))))
	}
	if s.Reservation != "" {
		args = append(args, "--reservation="+s.Reservation)
	}
	if s.Partition != "" {
		args = append(args, "--partition="+s.Partition)
	}
	args = append(args, j.Command...)
	c := s.cmd(ctx, "srun", args...)
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	err := c.Run()
	o := Output{Stdout: stdout.Bytes()}
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		o.Err = fmt.Errorf("srun %s on %s: %w", j.Command[0], hostlist.Compress(j.Nodes), ctx.Err())
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		_ = s.cmd(cctx, "scancel", "--name="+name).Run()
		cancel()
	case errors.As(err, &ee):
		o.Exit = ee.ExitCode()
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			o.Err = fmt.Errorf("srun %s on %s: exit %d: %s", j.Command[0], hostlist.Compress(j.Nodes), o.Exit, lastLine(msg))
		}
	case err != nil:
		o.Err = fmt.Errorf("srun: %w", err)
	}
	return o
}

func lastLine(s string) string {
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}
