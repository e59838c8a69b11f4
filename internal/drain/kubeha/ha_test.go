package kubeha_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"

	"github.com/seamdc/seam/internal/alarm"
	"github.com/seamdc/seam/internal/clock"
	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/drain"
	"github.com/seamdc/seam/internal/drain/kubeha"
	"github.com/seamdc/seam/internal/hold"
	"github.com/seamdc/seam/internal/peer/kubetest"
	kube "github.com/seamdc/seam/internal/scheduler/kubernetes"
)

const (
	example = "../../../contracts/examples/threemodule"
	ns      = "default"
)

var l2 = alarm.Domain{Kind: alarm.CoolingLoop, Value: "l2"}

func exampleIndex(t testing.TB) *alarm.Index {
	t.Helper()
	c, _, err := contract.Load(example)
	require.NoError(t, err)
	_, err = c.ReadInventory(nil)
	require.NoError(t, err)
	g, _ := c.Graph()
	return alarm.NewIndex(g)
}

// staticFence is what a paused leader believes: that it still leads,
// with the epoch it was elected with.
type staticFence struct {
	id    string
	epoch int64
}

func (f staticFence) Token() (string, int64, error) { return f.id, f.epoch, nil }

// replica is one facilityd replica: it campaigns on the Lease, and when
// it leads it claims the state, opens its journal and reconciles.
type replica struct {
	id      string
	client  k8s.Interface
	ix      *alarm.Index
	elector *kubeha.Elector

	mu       sync.Mutex
	ctl      *drain.Controller
	stream   *alarm.Stream
	epoch    int64
	led      chan int64 // the epoch, each time it leads
	paused   bool       // the fence is what it was elected with, for good: a process that pauses and believes it still leads
	patched  func(string)
	storeErr error
}

func newReplica(t *testing.T, c k8s.Interface, ix *alarm.Index, id string) *replica {
	r := &replica{id: id, client: c, ix: ix, led: make(chan int64, 4)}
	r.elector = &kubeha.Elector{Client: c, Namespace: ns, Identity: id,
		// short, for the test to run quickly; nothing asserts on them
		LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: 500 * time.Millisecond}
	return r
}

// run campaigns until ctx ends, like a pod restarted after each loss.
func (r *replica) run(ctx context.Context) {
	for ctx.Err() == nil {
		_ = r.elector.Run(ctx, r.lead)
	}
}

func (r *replica) lead(ctx context.Context, epoch int64) {
	store := &kubeha.Store{Client: r.client, Namespace: ns, Leader: r.id, Epoch: epoch}
	st, err := store.Claim(ctx, r.ix.Site())
	if err != nil {
		r.mu.Lock()
		r.storeErr = err
		r.mu.Unlock()
		return
	}
	var fence kube.Fence = r.elector
	if r.paused {
		fence = staticFence{r.id, epoch}
	}
	d := &kube.Drainer{Client: r.client, Fence: fence, Patched: r.patched}
	stream := alarm.NewStream()
	ctl := drain.New(drain.Config{}, drain.Deps{Index: r.ix, Scheduler: d, Stream: stream, StateStore: store, State: st, Clock: clock.Real{},
		Journal: &kubeha.Journal{Client: r.client, Namespace: ns, Leader: r.id, Epoch: epoch}})
	r.mu.Lock()
	r.ctl, r.stream, r.epoch = ctl, stream, epoch
	r.mu.Unlock()
	ctl.Start(ctx, map[string]any{"replica": r.id, "epoch": epoch})
	r.led <- epoch
	<-ctx.Done()
}

func (r *replica) controller() (*drain.Controller, *alarm.Stream) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ctl, r.stream
}

func createNodes(t *testing.T, e *kubetest.Env, names []string) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, len(names))
	sem := make(chan struct{}, 16)
	for _, n := range names {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			_, err := e.Client.CoreV1().Nodes().Create(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{})
			if err != nil {
				errs <- fmt.Errorf("node %s: %w", n, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func nodesByName(t *testing.T, c k8s.Interface) map[string]corev1.Node {
	t.Helper()
	list, err := c.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	out := map[string]corev1.Node{}
	for _, n := range list.Items {
		out[n.Name] = n
	}
	return out
}

// TestHAKillLeaderMidDrain: replica a leads and drains l2's 288 nodes;
// a third of the way through it stops (a pause: it keeps believing it
// leads, its lease lapses). Replica b takes the Lease, claims the state
// (the intent a committed first) and finishes the drain. Then a wakes
// and carries on: every write it tries is refused, on the nodes (a
// newer epoch wrote them) and on the state (its resourceVersion is
// stale). At the end every node is held once, by one hold, with b's
// reason; nothing was released; both journals verify.
func TestHAKillLeaderMidDrain(t *testing.T) {
	e := kubetest.Start(t)
	ix := exampleIndex(t)
	module := ix.Nodes(l2)
	require.Len(t, module, 288)
	createNodes(t, e, module)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	actx, killA := context.WithCancel(ctx)
	a := newReplica(t, e.Client, ix, "facilityd-a")
	a.paused = true
	var patched atomic.Int32
	paused, wake := make(chan struct{}), make(chan struct{})
	var pauseOnce sync.Once
	a.patched = func(string) {
		if patched.Add(1) >= 96 {
			pauseOnce.Do(func() { close(paused) })
			<-wake
		}
	}
	go a.run(actx)
	epochA := <-a.led
	ctlA, streamA := a.controller()

	b := newReplica(t, e.Client, ix, "facilityd-b")
	go b.run(ctx)

	// the alarm reaches a, the leader
	ev := streamA.Observe(alarm.Observation{Type: alarm.CoolingRedundancyLost, Domain: l2, Active: true, Kind: alarm.FromDevice, Source: "test", At: time.Now()})
	handled := make(chan struct{})
	go func() {
		defer close(handled)
		ctlA.Handle(context.Background(), ev)
	}()
	<-paused
	killA() // a stops renewing its Lease; it does not release it
	epochB := <-b.led
	require.Greater(t, epochB, epochA)
	waitHeld(t, e.Client, module, 288, 3*time.Minute)
	before := nodesByName(t, e.Client)

	close(wake) // a wakes up, still believing it leads
	<-handled
	require.ErrorIs(t, ctlA.Fenced(), drain.ErrFenced, "a's next commit of the state was refused")

	after := nodesByName(t, e.Client)
	owner := drain.FacilityOwner(alarm.CoolingRedundancyLost, l2)
	reason := hold.Reason([]drain.Owner{owner}, 256)
	want := kube.Taints(reason)
	var byA, byB int
	for _, n := range module {
		node := after[n]
		var ours []corev1.Taint
		for _, tt := range node.Spec.Taints {
			if kube.Ours(tt) {
				ours = append(ours, tt)
			}
			require.NotEqual(t, corev1.TaintEffectNoExecute, tt.Effect, "%s: facilityd never writes NoExecute", n)
		}
		require.Len(t, ours, len(want), "%s held once", n)
		require.Equal(t, want[0].Key, ours[0].Key, n)
		require.Equal(t, reason, node.Annotations[kube.AnnReason], n)
		ep, err := strconv.ParseInt(node.Annotations[kube.AnnEpoch], 10, 64)
		require.NoError(t, err, n)
		switch {
		case ep == epochA:
			byA++
		case ep >= epochB: // b, or b again after a lease it lost under load (a pod restarted)
			byB++
			require.Equal(t, before[n].ResourceVersion, node.ResourceVersion, "%s: written by b, then not again by a", n)
		default:
			t.Errorf("%s: epoch %d", n, ep)
		}
	}
	require.Positive(t, byB, "b finished the drain")
	require.GreaterOrEqual(t, byA, 96, "a drained a third before its pause")
	t.Logf("a drained %d nodes (epoch %d), b %d (epoch %d)", byA, epochA, byB, epochB)

	st, epoch, err := kubeha.Load(context.Background(), e.Client, ns, "facilityd-state", ix.Site())
	require.NoError(t, err)
	require.GreaterOrEqual(t, epoch, epochB)
	require.Len(t, st.Holds, 1, "one hold, not two")
	require.NotNil(t, st.Holds[owner])
	for _, n := range module {
		rec := st.Nodes[n]
		require.NotNil(t, rec, n)
		require.True(t, rec.Ours, "%s: %+v", n, rec)
	}
	journals, err := kubeha.VerifyJournal(context.Background(), e.Client, ns)
	require.NoError(t, err)
	for ep, recs := range journals {
		for _, r := range recs {
			require.NotContains(t, []string{drain.RecUndrain, drain.RecRelease}, r.Kind, "epoch %d released something", ep)
		}
	}
	require.Contains(t, kinds(journals[epochB]), drain.RecDrain, "b's journal records its drain")
	require.Contains(t, kinds(journals[epochA]), drain.RecHold, "a's journal records the hold it placed")
}

func kinds(rs []kubeha.JournalRecord) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Kind)
	}
	return out
}

// waitHeld waits until want of the nodes carry facilityd's taint. It
// waits on the API server's state, not on time: the deadline only ends
// a test that would otherwise hang.
func waitHeld(t *testing.T, c k8s.Interface, names []string, want int, deadline time.Duration) {
	t.Helper()
	end := time.Now().Add(deadline)
	for {
		nodes := nodesByName(t, c)
		held := 0
		for _, n := range names {
			if slices.ContainsFunc(nodes[n].Spec.Taints, kube.Ours) {
				held++
			}
		}
		if held >= want {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("%d of %d nodes held after %s", held, want, deadline)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestReleaseKeepsOperatorsCordon: with the cordon opt-in, a hold
// cordons the nodes that were not cordoned; its release (a person's
// approved request) lifts facilityd's taints and its own cordons, and an
// operator's own cordon survives it.
func TestReleaseKeepsOperatorsCordon(t *testing.T) {
	e := kubetest.Start(t)
	ix := exampleIndex(t)
	names := ix.Nodes(l2)[:3]
	createNodes(t, e, names)
	ctx := context.Background()
	op := nodesByName(t, e.Client)[names[1]]
	op.Spec.Unschedulable = true // the operator's own cordon
	_, err := e.Client.CoreV1().Nodes().Update(ctx, &op, metav1.UpdateOptions{})
	require.NoError(t, err)

	store := &kubeha.Store{Client: e.Client, Namespace: ns, Leader: "facilityd-0", Epoch: 0}
	st, err := store.Claim(ctx, ix.Site())
	require.NoError(t, err)
	ctl := drain.New(drain.Config{}, drain.Deps{Index: ix, Scheduler: &kube.Drainer{Client: e.Client, Cordon: true}, Stream: alarm.NewStream(),
		StateStore: store, State: st, Journal: &kubeha.Journal{Client: e.Client, Namespace: ns, Leader: "facilityd-0"}})
	ctl.Start(ctx, nil)
	req := func(action string) drain.Approval {
		r := drain.NewRequest(ix.Site(), action, "alice", time.Now())
		r.Owner, r.Nodes, r.Why = "maintenance:CHG-7", names[0]+","+names[1]+","+names[2], "test"
		return drain.Approval{Request: r, Key: "SHA256:test"}
	}
	_, err = ctl.Take(ctx, req(drain.ActHold))
	require.NoError(t, err)
	nodes := nodesByName(t, e.Client)
	for _, n := range names {
		require.True(t, nodes[n].Spec.Unschedulable, n)
		require.True(t, slices.ContainsFunc(nodes[n].Spec.Taints, kube.Ours), n)
	}
	res, err := ctl.Take(ctx, req(drain.ActRelease))
	require.NoError(t, err)
	require.Len(t, res.Returned, 3, res.Message)
	nodes = nodesByName(t, e.Client)
	for _, n := range names {
		require.False(t, slices.ContainsFunc(nodes[n].Spec.Taints, kube.Ours), n)
		require.Equal(t, n == names[1], nodes[n].Spec.Unschedulable, "%s: only the operator's cordon stays", n)
	}
	st2, _, err := kubeha.Load(ctx, e.Client, ns, "facilityd-state", ix.Site())
	require.NoError(t, err)
	require.Empty(t, st2.Holds)
	_, err = kubeha.VerifyJournal(ctx, e.Client, ns)
	require.NoError(t, err)
}

// TestStaleStateWriteRefused: once a newer epoch has claimed the state,
// the older one's save is drain.ErrFenced, and its claim too.
func TestStaleStateWriteRefused(t *testing.T) {
	e := kubetest.Start(t)
	ctx := context.Background()
	old := &kubeha.Store{Client: e.Client, Namespace: ns, Leader: "a", Epoch: 3}
	st, err := old.Claim(ctx, "s")
	require.NoError(t, err)
	require.NoError(t, old.Save(st))
	newer := &kubeha.Store{Client: e.Client, Namespace: ns, Leader: "b", Epoch: 4}
	st2, err := newer.Claim(ctx, "s")
	require.NoError(t, err)
	st2.Holds["person:bob"] = &hold.Hold{Owner: "person:bob", Nodes: []string{"n1"}}
	require.NoError(t, newer.Save(st2))
	require.ErrorIs(t, old.Save(st), drain.ErrFenced)
	again := &kubeha.Store{Client: e.Client, Namespace: ns, Leader: "a", Epoch: 3}
	_, err = again.Claim(ctx, "s")
	require.ErrorIs(t, err, drain.ErrFenced, "an older epoch cannot claim it back")
	got, epoch, err := kubeha.Load(ctx, e.Client, ns, "facilityd-state", "s")
	require.NoError(t, err)
	require.EqualValues(t, 4, epoch)
	require.Contains(t, got.Holds, drain.Owner("person:bob"))
	_, _, err = kubeha.Load(ctx, e.Client, ns, "facilityd-state", "other-site")
	require.ErrorContains(t, err, "other-site")
}

// TestJournalChain: records chain; an edited record breaks the chain.
func TestJournalChain(t *testing.T) {
	e := kubetest.Start(t)
	ctx := context.Background()
	j := &kubeha.Journal{Client: e.Client, Namespace: ns, Leader: "a", Epoch: 1}
	for i := range 5 {
		require.NoError(t, j.Record("hold", map[string]int{"i": i}))
	}
	recs, err := kubeha.VerifyJournal(ctx, e.Client, ns)
	require.NoError(t, err)
	require.Len(t, recs[1], 5)
	cm, err := e.Client.CoreV1().ConfigMaps(ns).Get(ctx, "facilityd-journal-1-1", metav1.GetOptions{})
	require.NoError(t, err)
	require.Contains(t, cm.Data["000003.json"], `"i":2`)
	cm.Data["000003.json"] = strings.Replace(cm.Data["000003.json"], `"i":2`, `"i":9`, 1)
	_, err = e.Client.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{})
	require.NoError(t, err)
	_, err = kubeha.VerifyJournal(ctx, e.Client, ns)
	require.ErrorContains(t, err, "000004.json does not chain")
	require.ErrorIs(t, j.Record("hold", 6), drain.ErrFenced, "a journal someone else wrote takes no more records")
}
