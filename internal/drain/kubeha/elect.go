package kubeha

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// Default lease timings: client-go's recommended ones (a dead leader's
// lease lapses within LeaseDuration, then the other replica takes it
// within a RetryPeriod).
const (
	LeaseDuration = 15 * time.Second
	RenewDeadline = 10 * time.Second
	RetryPeriod   = 2 * time.Second
)

// ErrNotLeader: this replica does not lead (any longer).
var ErrNotLeader = errors.New("not the leader")

// Elector runs leader election on a Lease and tells the leader its
// epoch: the Lease's leaderTransitions when it took it.
type Elector struct {
	Client    k8s.Interface
	Namespace string
	Name      string // the Lease (default facilityd)
	Identity  string // this replica (the pod's name)
	// Lease timings (default LeaseDuration, RenewDeadline, RetryPeriod).
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	Log                                       *slog.Logger

	mu     sync.Mutex
	epoch  int64
	leader bool
}

// Token is the fence of this replica: its identity and epoch while it
// leads, ErrNotLeader otherwise.
func (e *Elector) Token() (string, int64, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.leader {
		return "", 0, fmt.Errorf("%s: %w", e.Identity, ErrNotLeader)
	}
	return e.Identity, e.epoch, nil
}

// Run campaigns until ctx ends. When this replica leads, lead runs with
// a context that ends when leadership is lost, and its epoch; Run
// returns after lead has returned and leadership has ended (a lost
// lease is not campaigned for again: the process exits and restarts as
// a follower). The lease is not released when ctx ends: a replica that
// dies mid-drain is indistinguishable from one killed, and the other
// waits for the lease to lapse.
func (e *Elector) Run(ctx context.Context, lead func(ctx context.Context, epoch int64)) error {
	log := e.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	name := e.Name
	if name == "" {
		name = "facilityd"
	}
	lock := &resourcelock.LeaseLock{Client: e.Client.CoordinationV1(), LeaseMeta: metav1ObjectMeta(e.Namespace, name),
		LockConfig: resourcelock.ResourceLockConfig{Identity: e.Identity}}
	dur := func(d, def time.Duration) time.Duration {
		if d <= 0 {
			return def
		}
		return d
	}
	started, done := make(chan struct{}), make(chan struct{})
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:          lock,
		LeaseDuration: dur(e.LeaseDuration, LeaseDuration),
		RenewDeadline: dur(e.RenewDeadline, RenewDeadline),
		RetryPeriod:   dur(e.RetryPeriod, RetryPeriod),
		Name:          name,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(lctx context.Context) {
				close(started)
				defer close(done)
				// read the Lease ourselves: the lock is the elector's, not
				// safe to share across goroutines
				l, err := e.Client.CoordinationV1().Leases(e.Namespace).Get(lctx, name, metav1.GetOptions{})
				if err != nil || l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != e.Identity {
					log.Error("elected, but the Lease does not read back as ours", "error", err)
					return
				}
				epoch := int64(0)
				if l.Spec.LeaseTransitions != nil {
					epoch = int64(*l.Spec.LeaseTransitions)
				}
				e.mu.Lock()
				e.epoch, e.leader = epoch, true
				e.mu.Unlock()
				log.Info("leading", "identity", e.Identity, "epoch", epoch)
				lead(lctx, epoch)
			},
			OnStoppedLeading: func() {
				e.mu.Lock()
				was := e.leader
				e.leader = false
				e.mu.Unlock()
				if was {
					log.Warn("leadership lost", "identity", e.Identity)
				}
			},
			OnNewLeader: func(id string) {
				if id != e.Identity {
					log.Info("following", "leader", id)
				}
			},
		},
	})
	if err != nil {
		return fmt.Errorf("leader election: %w", err)
	}
	le.Run(ctx) // returns when ctx ends or leadership is lost
	e.mu.Lock()
	e.leader = false
	e.mu.Unlock()
	select { // lead's context has ended: wait for it to return
	case <-started:
		<-done
	case <-time.After(100 * time.Millisecond):
	}
	return ctx.Err()
}
