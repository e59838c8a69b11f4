package scheduler

import (
	"context"
	"sync"

	"github.com/seamdc/seam/internal/dryrun"
)

// Recording is a Drainer's recording twin, the one every dry run uses:
// it reads through the scheduler, records each drain, undrain and
// signal as the command that would run (the drainer's Commands) instead
// of running it, and reads back what it recorded, so that what a dry
// run decides next is what a run would decide (a node it would have
// drained reads drained with that reason, not as undrained by an
// operator).
type Recording struct {
	Drainer Drainer
	Rec     *dryrun.Recorder
	// Peer is the kind of peer the writes go to (default
	// dryrun.Scheduler; dryrun.Kubernetes for the Kubernetes backend).
	Peer string

	mu    sync.Mutex
	nodes map[string]NodeStatus // what the recorded writes made of them
}

// DryRun is d's recording twin, recording to rec.
func DryRun(d Drainer, rec *dryrun.Recorder, peer string) *Recording {
	if peer == "" {
		peer = dryrun.Scheduler
	}
	return &Recording{Drainer: d, Rec: rec, Peer: peer, nodes: map[string]NodeStatus{}}
}

// Status reads the scheduler and lays what the dry run recorded over it.
func (r *Recording) Status(ctx context.Context, names []string) (Status, error) {
	st, err := r.Drainer.Status(ctx, names)
	if err != nil {
		return st, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, n := range names {
		if ns, ok := r.nodes[n]; ok {
			if _, known := st.Nodes[n]; known {
				st.Nodes[n] = ns
			}
		}
	}
	return st, nil
}

func (r *Recording) would(op Op) {
	for _, c := range r.Drainer.Commands(op) {
		r.Rec.Would(r.Peer, "run: %s", c)
	}
}

// Drain records the drain.
func (r *Recording) Drain(_ context.Context, names []string, reason string) error {
	if len(names) == 0 {
		return nil
	}
	if err := checkReason(reason); err != nil {
		return err
	}
	r.would(Op{Kind: "drain", Nodes: names, Reason: reason})
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, n := range names {
		r.nodes[n] = NodeStatus{Name: n, State: "drained", Drained: true, Reason: reason, ReasonBy: "seam (dry run)"}
	}
	return nil
}

// Undrain records the undrain.
func (r *Recording) Undrain(_ context.Context, names []string) error {
	if len(names) == 0 {
		return nil
	}
	r.would(Op{Kind: "undrain", Nodes: names})
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, n := range names {
		r.nodes[n] = NodeStatus{Name: n, State: "idle"}
	}
	return nil
}

// Jobs reads the scheduler.
func (r *Recording) Jobs(ctx context.Context, names []string) ([]Job, error) {
	return r.Drainer.Jobs(ctx, names)
}

// Signal records the signal.
func (r *Recording) Signal(_ context.Context, job, sig string, full bool) error {
	r.would(Op{Kind: "signal", Job: job, Signal: sig, Full: full})
	return nil
}

// Commands are the drainer's.
func (r *Recording) Commands(op Op) []string { return r.Drainer.Commands(op) }
