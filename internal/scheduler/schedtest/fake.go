// Package schedtest is a hand-written scheduler for tests: nodes with a
// drain flag and a reason, every call recorded, failures on demand, and
// an operator who drains and undrains by hand. It proves the policy
// above the scheduler (the ledger, facilityd); the Slurm and Kubernetes
// backends are proved against a real slurmctld and kube-apiserver.
package schedtest

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/seamdc/seam/internal/scheduler"
)

// Fake is a scheduler in memory.
type Fake struct {
	mu      sync.Mutex
	known   map[string]bool
	nodes   map[string]scheduler.NodeStatus
	calls   []string
	drains  [][]string
	jobs    []scheduler.Job
	signals []string
	failOps map[string]error // op → error to return while set
}

// New knows names, every one idle.
func New(names []string) *Fake {
	f := &Fake{known: map[string]bool{}, nodes: map[string]scheduler.NodeStatus{}, failOps: map[string]error{}}
	for _, n := range names {
		f.known[n] = true
	}
	return f
}

var _ scheduler.Drainer = (*Fake)(nil)

// Status reads the nodes.
func (f *Fake) Status(_ context.Context, names []string) (scheduler.Status, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.failOps["status"]; err != nil {
		return scheduler.Status{}, err
	}
	st := scheduler.Status{Nodes: map[string]scheduler.NodeStatus{}}
	for _, n := range names {
		if !f.known[n] {
			st.Unknown = append(st.Unknown, n)
			continue
		}
		ns, ok := f.nodes[n]
		if !ok {
			ns = scheduler.NodeStatus{Name: n, State: "idle"}
		}
		st.Nodes[n] = ns
	}
	return st, nil
}

// Drain drains the nodes with reason, as root.
func (f *Fake) Drain(_ context.Context, names []string, reason string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fmt.Sprintf("drain %d %s", len(names), reason))
	if err := f.failOps["drain"]; err != nil {
		return err
	}
	f.drains = append(f.drains, slices.Clone(names))
	for _, n := range names {
		f.nodes[n] = scheduler.NodeStatus{Name: n, State: "drained", Drained: true, Reason: reason, ReasonBy: "root"}
	}
	return nil
}

// Undrain returns the nodes.
func (f *Fake) Undrain(_ context.Context, names []string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fmt.Sprintf("undrain %d", len(names)))
	if err := f.failOps["undrain"]; err != nil {
		return err
	}
	for _, n := range names {
		delete(f.nodes, n)
	}
	return nil
}

// Jobs lists the jobs set with SetJobs that run on names.
func (f *Fake) Jobs(_ context.Context, names []string) ([]scheduler.Job, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []scheduler.Job
	for _, j := range f.jobs {
		for _, n := range j.Nodes {
			if slices.Contains(names, n) {
				out = append(out, j)
				break
			}
		}
	}
	return out, nil
}

// Signal records the signal.
func (f *Fake) Signal(_ context.Context, job, sig string, full bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.signals = append(f.signals, fmt.Sprintf("%s %s full=%v", job, sig, full))
	return nil
}

// Commands are Slurm's.
func (f *Fake) Commands(op scheduler.Op) []string { return (&scheduler.Slurm{}).Commands(op) }

// SetJobs sets the running jobs.
func (f *Fake) SetJobs(jobs []scheduler.Job) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.jobs = jobs
}

// Operator drains (with reason) or undrains a node by hand, as alice.
func (f *Fake) Operator(n string, drained bool, reason string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !drained {
		delete(f.nodes, n)
		return
	}
	f.nodes[n] = scheduler.NodeStatus{Name: n, State: "drained", Drained: true, Reason: reason, ReasonBy: "alice"}
}

// Forget makes the scheduler know n no more (a node removed from
// slurm.conf).
func (f *Fake) Forget(n string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.known, n)
	delete(f.nodes, n)
}

// Node is n's state.
func (f *Fake) Node(n string) scheduler.NodeStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.nodes[n]
}

// DrainedCount counts the drained nodes.
func (f *Fake) DrainedCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, s := range f.nodes {
		if s.Drained {
			n++
		}
	}
	return n
}

// Calls lists the drains and undrains made, in order.
func (f *Fake) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// Drains lists the nodes of each drain made.
func (f *Fake) Drains() [][]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.drains)
}

// Signals lists the signals sent: "JOB SIG full=BOOL".
func (f *Fake) Signals() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.signals)
}

// Fail makes op (status, drain, undrain) fail with err until it is
// called again with nil.
func (f *Fake) Fail(op string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err == nil {
		delete(f.failOps, op)
	} else {
		f.failOps[op] = err
	}
}
