package ledger_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/dryrun"
	"github.com/seamdc/seam/internal/hold"
	"github.com/seamdc/seam/internal/ledger"
	"github.com/seamdc/seam/internal/scheduler"
	"github.com/seamdc/seam/internal/scheduler/schedtest"
)

var nodes = []string{"n1", "n2", "n3", "n4"}

func newLedger() (*ledger.Ledger, *schedtest.Fake, *hold.Book) {
	f := schedtest.New(nodes)
	b := hold.NewBook()
	return &ledger.Ledger{Backend: hold.NewMemory(&b, nil, nil), Sched: f}, f, &b
}

func place(t *testing.T, l *ledger.Ledger, owner hold.Owner, ns ...string) ledger.Result {
	t.Helper()
	r, err := l.Place(context.Background(), hold.Hold{Owner: owner, Nodes: ns, Why: "test", By: "tester"})
	require.NoError(t, err)
	return r
}

func release(t *testing.T, l *ledger.Ledger, owner hold.Owner, ns ...string) ledger.Result {
	t.Helper()
	var which []string
	if len(ns) > 0 {
		which = ns
	}
	r, err := l.Release(context.Background(), owner, which, "tester", "done")
	require.NoError(t, err)
	return r
}

// A node is in the pool only while no owner holds it: each hold drains
// in the same call, the reason lists every owner (facility first), and
// a release returns a node only when it was the last hold, naming who
// still holds the others.
func TestHoldsDrainAndRelease(t *testing.T) {
	l, f, _ := newLedger()
	r := place(t, l, "facility:leak_detected:cooling_loop=l2", "n1", "n2")
	assert.Equal(t, []string{"n1", "n2"}, r.Drained)
	assert.Equal(t, "facility:leak_detected:l2", f.Node("n1").Reason)
	r = place(t, l, "facility:leak_detected:cooling_loop=l2", "n1", "n2")
	assert.Empty(t, r.Changed, "placed again: nothing changes")
	assert.Len(t, f.Calls(), 1)

	place(t, l, "rma:CASE-7", "n2")
	assert.Equal(t, "facility:leak_detected:l2 rma:CASE-7", f.Node("n2").Reason)

	r = release(t, l, "facility:leak_detected:cooling_loop=l2")
	assert.Equal(t, []string{"n1"}, r.Returned)
	assert.Equal(t, map[string][]hold.Owner{"n2": {"rma:CASE-7"}}, r.Kept, "n2 stays: the RMA holds it")
	assert.True(t, f.Node("n2").Drained)
	assert.Equal(t, "rma:CASE-7", f.Node("n2").Reason, "its reason now names only who holds it")
	assert.False(t, f.Node("n1").Drained)
	assert.Contains(t, r.Describe(), "1 still held by rma:CASE-7 (1)")

	release(t, l, "rma:CASE-7")
	assert.Zero(t, f.DrainedCount())
}

// An operator's own drain is never overwritten or returned; an
// operator's undrain is respected until a new hold comes.
func TestOperatorsActionsStay(t *testing.T) {
	l, f, _ := newLedger()
	f.Operator("n3", true, "alice: bad DIMM")
	place(t, l, "maintenance:CHG-1", "n3", "n4")
	assert.Equal(t, "alice: bad DIMM", f.Node("n3").Reason)
	f.Operator("n4", false, "")
	res, err := l.Reconcile(context.Background())
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"n3", "n4"}, res.Left)
	assert.False(t, f.Node("n4").Drained, "the undrain stands")
	recs, err := l.Records(context.Background(), nil)
	require.NoError(t, err)
	assert.Equal(t, "undrained by an operator", recs["n4"].Override)

	place(t, l, "person:bob", "n4")
	assert.True(t, f.Node("n4").Drained, "a new hold is new information")
	r := release(t, l, "maintenance:CHG-1")
	assert.Contains(t, r.Left, "n3")
	assert.Equal(t, "alice: bad DIMM", f.Node("n3").Reason, "never returned")
}

// A burn-in's hold kept by its reservation does not drain (its jobs
// must run); it covers the node's other burn-in holds (a swap), not a
// facility alarm's.
func TestReservationKeepsItsKind(t *testing.T) {
	l, f, _ := newLedger()
	place(t, l, hold.Swap, "n1", "n2")
	assert.Equal(t, "burnin:swap", f.Node("n1").Reason)
	_, err := l.Place(context.Background(), hold.Hold{Owner: "burnin:seam-burnin-ma", Nodes: []string{"n1", "n2", "n3"}, By: "cx", Reservation: "seam-burnin-ma"})
	require.NoError(t, err)
	assert.Zero(t, f.DrainedCount(), "the reservation keeps them out: undrained for the burn-in's jobs")
	place(t, l, "facility:ups_on_battery:power_block=p1", "n3")
	assert.True(t, f.Node("n3").Drained, "a facility alarm drains a node under burn-in")
	on, err := l.On(context.Background(), []string{"n1"})
	require.NoError(t, err)
	assert.Len(t, on["n1"], 2, "both burn-in holds are still held")
}

// A node drained with exactly the reason the ledger would write, but
// not recorded (a crash between the drain and the record), is the
// ledger's: it is returned when released.
func TestAdoptsItsOwnDrain(t *testing.T) {
	l, f, book := newLedger()
	place(t, l, "person:bob", "n1")
	delete(book.Nodes, "n1") // the record was lost
	_, err := l.Reconcile(context.Background())
	require.NoError(t, err)
	assert.True(t, book.Nodes["n1"].Ours)
	r := release(t, l, "person:bob")
	assert.Equal(t, []string{"n1"}, r.Returned)
	assert.False(t, f.Node("n1").Drained)
}

// A dry run reads the real ledger and scheduler and writes neither: it
// records every write, reads back what it would have done (so it never
// takes its own drain for an operator's undrain), and says what a
// release would return.
func TestDryRunWritesNothing(t *testing.T) {
	l, f, book := newLedger()
	place(t, l, "person:bob", "n4")
	calls := len(f.Calls())
	var out bytes.Buffer
	rec := dryrun.New(&out, nil)
	cp, err := hold.Copy(context.Background(), l.Backend, rec)
	require.NoError(t, err)
	dry := &ledger.Ledger{Backend: cp, Sched: scheduler.DryRun(f, rec, ""), DryRun: true}
	r, err := dry.Place(context.Background(), hold.Hold{Owner: "facility:leak_detected:cooling_loop=l2", Nodes: []string{"n1", "n2"}, By: "facilityd"})
	require.NoError(t, err)
	assert.Equal(t, []string{"n1", "n2"}, r.Drained)
	_, err = dry.Reconcile(context.Background())
	require.NoError(t, err)
	r, err = dry.Release(context.Background(), "facility:leak_detected:cooling_loop=l2", nil, "alice", "checked")
	require.NoError(t, err)
	assert.Equal(t, []string{"n1", "n2"}, r.Returned, "the undrain a run would make, not an operator's")
	assert.Empty(t, r.Left)

	assert.Len(t, f.Calls(), calls, "the scheduler is untouched")
	assert.Zero(t, f.Node("n1").Reason)
	assert.Len(t, book.Holds, 1, "the real ledger is untouched")
	text := out.String()
	assert.Contains(t, text, "would write to the ledger: hold facility:leak_detected:cooling_loop=l2 on 2 node(s) n[1-2]\n")
	assert.Contains(t, text, "would run: scontrol update nodename=n[1-2] state=drain reason=facility:leak_detected:l2\n")
	assert.Contains(t, text, "would run: scontrol update nodename=n[1-2] state=undrain\n")
	for _, w := range rec.Writes() {
		assert.Contains(t, []string{dryrun.Store, dryrun.Scheduler}, w.Peer)
	}
}

// Writers placing and releasing holds at once never lose one: after
// them every node some owner holds is drained, and every other node is
// in the pool.
func TestConcurrentWritersLoseNothing(t *testing.T) {
	var ns []string
	for i := range 64 {
		ns = append(ns, fmt.Sprintf("c%02d", i))
	}
	f := schedtest.New(ns)
	b := hold.NewBook()
	l := &ledger.Ledger{Backend: hold.NewMemory(&b, nil, nil), Sched: f}
	var wg sync.WaitGroup
	for w, kind := range []string{hold.Facility, hold.Burnin} {
		wg.Go(func() {
			for i, n := range ns {
				o := hold.Of(kind, fmt.Sprintf("w%d-%s", w, n))
				if _, err := l.Place(context.Background(), hold.Hold{Owner: o, Nodes: []string{n}, By: "w"}); err != nil {
					t.Error(err)
				}
				if i%3 == 0 {
					if _, err := l.Release(context.Background(), o, nil, "w", "x"); err != nil {
						t.Error(err)
					}
				}
			}
		})
	}
	wg.Wait()
	holds, err := l.All(context.Background())
	require.NoError(t, err)
	held := map[string]bool{}
	for _, h := range holds {
		for _, n := range h.Nodes {
			held[n] = true
		}
	}
	require.Len(t, holds, 2*(64-22), "every hold not released is kept")
	for _, n := range ns {
		assert.Equal(t, held[n], f.Node(n).Drained, "%s: drained exactly while held (%q)", n, f.Node(n).Reason)
	}
}

// Bad holds are refused with what to do.
func TestBadHolds(t *testing.T) {
	l, _, _ := newLedger()
	_, err := l.Place(context.Background(), hold.Hold{Owner: "coffee:break", Nodes: []string{"n1"}, By: "x"})
	assert.ErrorContains(t, err, "want kind:name with kind one of facility, burnin, maintenance, rma, firmware, person")
	_, err = l.Place(context.Background(), hold.Hold{Owner: "person:alice", By: "x"})
	assert.ErrorContains(t, err, "would hold no nodes")
	_, err = l.Place(context.Background(), hold.Hold{Owner: "person:alice", Nodes: []string{"n1"}})
	assert.ErrorContains(t, err, "who places it")
	_, err = l.Place(context.Background(), hold.Hold{Owner: "person:al ice", Nodes: []string{"n1"}, By: "x"})
	assert.True(t, strings.Contains(err.Error(), "no spaces"), err.Error())
}
