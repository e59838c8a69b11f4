package lifecycle_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/hold"
	"github.com/seamdc/seam/internal/ledger"
	"github.com/seamdc/seam/internal/lifecycle"
	"github.com/seamdc/seam/internal/scheduler/schedtest"
)

// writers are two handles on one store, as facilityd and sat burnin
// each have their own, with the identities they place holds as.
type writers struct {
	stores [2]*lifecycle.Store
	who    [2]string
	kinds  [2]string
}

// contend has both writers place holds on the same nodes at once, one
// node each, per holds each, every third released again; each applies
// its holds to sched in the same call. It returns the holds that must
// be left.
func contend(tb testing.TB, w writers, nodes []string, per int, sched *schedtest.Fake) map[hold.Owner]string {
	tb.Helper()
	var mu sync.Mutex
	want := map[hold.Owner]string{}
	var wg sync.WaitGroup
	for i := range 2 {
		l := &ledger.Ledger{Backend: w.stores[i].Ledger(as(tb, w.who[i]), "slurm"), Sched: sched}
		wg.Go(func() {
			ctx := context.Background()
			for j := range per {
				n := nodes[(j*7+i*3)%len(nodes)]
				o := hold.Of(w.kinds[i], fmt.Sprintf("w%d-%d", i, j))
				if _, err := l.Place(ctx, hold.Hold{Owner: o, Nodes: []string{n}, Why: "contention", By: w.who[i]}); err != nil {
					tb.Errorf("writer %d: %v", i, err)
					return
				}
				if j%3 == 0 {
					if _, err := l.Release(ctx, o, nil, w.who[i], "done"); err != nil {
						tb.Errorf("writer %d: %v", i, err)
						return
					}
					continue
				}
				mu.Lock()
				want[o] = n
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return want
}

// checkLedger: exactly the holds want in the store, every node held is
// drained in the scheduler and every other node is not.
func checkLedger(tb testing.TB, s *lifecycle.Store, nodes []string, want map[hold.Owner]string, sched *schedtest.Fake) {
	tb.Helper()
	ss, err := s.Ledger(as(tb, "ops"), "slurm").Begin(context.Background())
	require.NoError(tb, err)
	all, err := ss.All(context.Background())
	ss.Rollback()
	require.NoError(tb, err)
	got := map[hold.Owner]string{}
	held := map[string]bool{}
	for _, h := range all {
		require.Len(tb, h.Nodes, 1, "%s", h.Owner)
		got[h.Owner] = h.Nodes[0]
		held[h.Nodes[0]] = true
	}
	assert.Equal(tb, want, got, "every hold placed and not released is there, and no other")
	for _, n := range nodes {
		assert.Equal(tb, held[n], sched.Node(n).Drained, "%s: drained exactly while held (%q)", n, sched.Node(n).Reason)
	}
}

// facilityd and sat burnin placing and releasing holds in one store at
// once never lose one, and the scheduler follows the holds.
func testLedgerWriters(t *testing.T, e *engine) {
	s, cfg := stageCfg(t, e, newClock(), "operating")
	other, err := lifecycle.Open(context.Background(), cfg)
	require.NoError(t, err)
	defer other.Close()
	nodes := []string{"gpu-a-r01-n01", "gpu-a-r01-n02", "gpu-a-r01-n03", "gpu-a-r01-n04", "gpu-a-r01-n05"}
	sched := schedtest.New(nodes)
	w := writers{stores: [2]*lifecycle.Store{s, other}, who: [2]string{"facilityd", "operator"}, kinds: [2]string{hold.Facility, hold.Burnin}}
	want := contend(t, w, nodes, 30, sched)
	checkLedger(t, s, nodes, want, sched)
	checkOK(t, s)
}

// The ledger's contention figure (issue 32): 10,000 holds placed by two
// writers at once (5,000 each, every third released again), each a
// signed change in its own transaction applied to a scheduler in
// memory; none lost.
//
//	go test -run '^$' -bench LedgerContention -benchtime 1x ./internal/lifecycle
func BenchmarkLedgerContention(b *testing.B) {
	for _, e := range []*engine{{name: lifecycle.SQLite}, {name: lifecycle.Postgres}} {
		b.Run(e.name, func(b *testing.B) {
			if e.name == lifecycle.Postgres {
				e.pg = pgStart(b)
			}
			s, cfg := benchLedgerStore(b, e)
			other, err := lifecycle.Open(context.Background(), cfg)
			require.NoError(b, err)
			defer other.Close()
			var nodes []string
			for r := 1; r <= 16; r++ {
				for n := 1; n <= 18; n++ {
					nodes = append(nodes, fmt.Sprintf("gpu-a-r%02d-n%02d", r, n))
				}
			}
			w := writers{stores: [2]*lifecycle.Store{s, other}, who: [2]string{"facilityd", "operator"}, kinds: [2]string{hold.Facility, hold.Burnin}}
			for b.Loop() {
				sched := schedtest.New(nodes)
				start := time.Now()
				want := contend(b, w, nodes, 5000, sched)
				d := time.Since(start)
				checkLedger(b, s, nodes, want, sched)
				b.ReportMetric(d.Seconds(), "s/10k-holds")
				b.ReportMetric(10000/d.Seconds(), "holds/s")
				b.ReportMetric(0, "lost")
				// release what is left for the next round
				l := &ledger.Ledger{Backend: s.Ledger(as(b, "ops"), "slurm")}
				for o := range want {
					if _, err := l.Release(context.Background(), o, nil, "ops", "next round"); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// benchLedgerStore is a store of the example with its as-built (the
// nodes' names), made for a benchmark.
func benchLedgerStore(b *testing.B, e *engine) (*lifecycle.Store, lifecycle.Config) {
	ctx := context.Background()
	cfg := e.config(b, newClock())
	cfg.Now = nil // the wall clock: one machine's, read inside each writer's lock
	s, err := lifecycle.Init(ctx, cfg, as(b, "ops"), exampleGraph(b), policy(b, nil))
	require.NoError(b, err)
	b.Cleanup(func() { s.Close() })
	raw, err := os.ReadFile(handoverFile)
	require.NoError(b, err)
	_, err = s.Import(ctx, as(b, "integrator"), handoverFile, raw, "")
	require.NoError(b, err)
	return s, cfg
}
