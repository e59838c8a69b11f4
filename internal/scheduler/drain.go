package scheduler

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/seamdc/seam/internal/topology/hostlist"
)

// Drainer is a scheduler facilityd drains: it takes nodes out of new
// work with a reason, returns them, reads their state and reasons, and
// reaches the jobs on them — each by hostlist, in one call.
type Drainer interface {
	// Status reads the nodes' state and drain reason. Names the
	// scheduler does not know are returned in Unknown.
	Status(ctx context.Context, names []string) (Status, error)
	// Drain stops new work on the nodes: running jobs go on.
	Drain(ctx context.Context, names []string, reason string) error
	// Undrain clears the drain, leaving the base state (a node that is
	// down stays down).
	Undrain(ctx context.Context, names []string) error
	// Jobs lists the running jobs on the nodes.
	Jobs(ctx context.Context, names []string) ([]Job, error)
	// Signal sends sig to a job's batch shell (full: to every step as
	// well).
	Signal(ctx context.Context, job string, sig string, full bool) error
	// Commands are the commands each operation runs, for dry runs.
	Commands(op Op) []string
}

// Op is a drain operation, as a dry run shows it.
type Op struct {
	Kind   string // drain, undrain, signal
	Nodes  []string
	Reason string
	Job    string
	Signal string
	Full   bool
}

// NodeStatus is a node's state as the scheduler shows it.
type NodeStatus struct {
	Name string `json:"name"`
	// State is the scheduler's word: idle, allocated, mixed, drained,
	// draining, down, …; a trailing * (not responding) is dropped.
	State string `json:"state"`
	// Drained: the drain flag is set (drained, draining, fail).
	Drained bool   `json:"drained"`
	Reason  string `json:"reason,omitempty"`
	// ReasonBy and ReasonAt say who set the reason and when.
	ReasonBy string    `json:"reason_by,omitempty"`
	ReasonAt time.Time `json:"reason_at,omitzero"`
}

// Status is the state of a set of nodes.
type Status struct {
	Nodes   map[string]NodeStatus
	Unknown []string // asked for, not known to the scheduler
}

// Job is a running job.
type Job struct {
	ID      string   `json:"id"`
	Nodes   []string `json:"nodes"`
	Comment string   `json:"comment,omitempty"`
	QOS     string   `json:"qos,omitempty"`
}

// MaxReason bounds the reasons facilityd writes. Slurm 22.05 keeps a
// reason of 1,500 characters whole (checked), but sinfo -R shows 20 and
// reasons travel in every node record: facilityd keeps its own short
// and puts what matters first.
const MaxReason = 256

// The Slurm backend: scontrol update by hostlist for drain and undrain,
// sinfo for state and reasons, squeue for jobs, scancel for signals.

// Status runs sinfo -N -n HOSTLIST with a fixed format, the reason last.
func (s *Slurm) Status(ctx context.Context, names []string) (Status, error) {
	st := Status{Nodes: map[string]NodeStatus{}}
	if len(names) == 0 {
		return st, nil
	}
	out, err := s.run(ctx, s.env(), s.bin("sinfo"), "-h", "-N", "-n", hostlist.Compress(names), "-o", "%N|%T|%u|%H|%E")
	if err != nil {
		return st, err
	}
	for i, line := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		if line == "" {
			continue
		}
		n, err := parseStatusLine(line)
		if err != nil {
			return st, fmt.Errorf("sinfo line %d: %w: %q", i+1, err, line)
		}
		st.Nodes[n.Name] = n // a node listed once per partition: the same
	}
	for _, n := range names {
		if _, ok := st.Nodes[n]; !ok {
			st.Unknown = append(st.Unknown, n)
		}
	}
	return st, nil
}

func parseStatusLine(line string) (NodeStatus, error) {
	f := strings.SplitN(line, "|", 5)
	if len(f) != 5 {
		return NodeStatus{}, fmt.Errorf("want 5 fields (name|state|user|time|reason), got %d", len(f))
	}
	state := strings.TrimRight(strings.ToLower(f[1]), "*~#!%$@^-")
	n := NodeStatus{Name: f[0], State: state, Drained: drained(state)}
	if r := f[4]; r != "none" && r != "(null)" {
		n.Reason = r
	}
	if f[2] != "Unknown" && f[2] != "(null)" {
		n.ReasonBy = f[2]
	}
	if t, err := time.ParseInLocation("2006-01-02T15:04:05", f[3], time.Local); err == nil {
		n.ReasonAt = t
	}
	return n, nil
}

// drained reads the drain flag from sinfo's extended state: drained,
// draining (drng), and fail/failing (Slurm's FAIL sets DRAIN too).
func drained(state string) bool {
	for _, w := range strings.FieldsFunc(state, func(r rune) bool { return r == '+' }) {
		if strings.HasPrefix(w, "drain") || w == "drng" || strings.HasPrefix(w, "fail") {
			return true
		}
	}
	return false
}

func (s *Slurm) drainArgs(names []string, reason string) []string {
	return []string{"update", "nodename=" + hostlist.Compress(names), "state=drain", "reason=" + reason}
}

// Drain runs scontrol update nodename=HOSTLIST state=drain reason=R.
func (s *Slurm) Drain(ctx context.Context, names []string, reason string) error {
	if len(names) == 0 {
		return nil
	}
	if err := checkReason(reason); err != nil {
		return err
	}
	_, err := s.Scontrol(ctx, s.drainArgs(names, reason)...)
	return err
}

func checkReason(reason string) error {
	switch {
	case reason == "":
		return fmt.Errorf("a drain needs a reason")
	case len(reason) > MaxReason:
		return fmt.Errorf("drain reason of %d characters: at most %d", len(reason), MaxReason)
	case strings.ContainsAny(reason, "\n\r"):
		return fmt.Errorf("drain reason %q spans lines", reason)
	}
	return nil
}

// Undrain runs scontrol update nodename=HOSTLIST state=undrain, then
// reads the nodes back: Slurm 22.05 answers "Invalid node state
// specified" for a node that never registered (UNKNOWN) and yet clears
// its drain (checked), so the answer is what the nodes show, not the
// exit status.
func (s *Slurm) Undrain(ctx context.Context, names []string) error {
	if len(names) == 0 {
		return nil
	}
	_, err := s.Scontrol(ctx, "update", "nodename="+hostlist.Compress(names), "state=undrain")
	if err == nil {
		return nil
	}
	st, rerr := s.Status(ctx, names)
	if rerr != nil {
		return fmt.Errorf("%w; and reading the nodes back: %v", err, rerr)
	}
	var still []string
	for _, n := range names {
		if st.Nodes[n].Drained {
			still = append(still, n)
		}
	}
	if len(still) == 0 {
		if s.Log != nil {
			s.Log.Info("scontrol complained, but every node is undrained", "nodes", hostlist.Compress(names), "error", err)
		}
		return nil
	}
	return fmt.Errorf("%w: %d node(s) still drained: %s", err, len(still), hostlist.Compress(still))
}

// Jobs runs squeue -h -t R -w HOSTLIST.
func (s *Slurm) Jobs(ctx context.Context, names []string) ([]Job, error) {
	if len(names) == 0 {
		return nil, nil
	}
	out, err := s.run(ctx, s.env(), s.bin("squeue"), "-h", "-t", "R", "-w", hostlist.Compress(names), "-o", "%i|%q|%N|%k")
	if err != nil {
		return nil, err
	}
	var jobs []Job
	for i, line := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		if line == "" {
			continue
		}
		f := strings.SplitN(line, "|", 4)
		if len(f) != 4 {
			return nil, fmt.Errorf("squeue line %d: want id|qos|nodes|comment: %q", i+1, line)
		}
		nodes, err := hostlist.Expand(f[2])
		if err != nil {
			return nil, fmt.Errorf("squeue line %d: nodes: %w", i+1, err)
		}
		jobs = append(jobs, Job{ID: f[0], QOS: Null(f[1]), Nodes: nodes, Comment: Null(f[3])})
	}
	slices.SortFunc(jobs, func(a, b Job) int { return strings.Compare(a.ID, b.ID) })
	return jobs, nil
}

func (s *Slurm) signalArgs(job, sig string, full bool) []string {
	scope := "--batch"
	if full {
		scope = "--full"
	}
	return []string{"--signal=" + sig, scope, job}
}

// Signal runs scancel --signal=SIG --batch JOB (or --full). The job
// keeps running if, and only if, it traps the signal: USR1's default
// action ends a batch script (checked on Debian's 22.05).
func (s *Slurm) Signal(ctx context.Context, job, sig string, full bool) error {
	_, err := s.write(ctx, s.env(), s.bin("scancel"), s.signalArgs(job, sig, full)...)
	return err
}

// Commands shows what an operation runs.
func (s *Slurm) Commands(op Op) []string {
	switch op.Kind {
	case "drain":
		return []string{shellQuote(append([]string{"scontrol"}, s.drainArgs(op.Nodes, op.Reason)...))}
	case "undrain":
		return []string{"scontrol update nodename=" + hostlist.Compress(op.Nodes) + " state=undrain"}
	case "signal":
		return []string{shellQuote(append([]string{"scancel"}, s.signalArgs(op.Job, op.Signal, op.Full)...))}
	}
	return nil
}
