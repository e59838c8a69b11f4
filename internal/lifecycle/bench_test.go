package lifecycle_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/inventory"
	"github.com/seamdc/seam/internal/lifecycle"
	"github.com/seamdc/seam/internal/plan"
)

// The figures of the lifecycle issue, on both engines: a store of
// 100,000 elements with 10 events each (a million events, spread over
// ten months); the state of one element as of a time (goal: p99 under
// 5 ms), of the whole inventory as of a time (goal: under 2 s), and
// transitions per second (one element each, signed, verified, written
// in its own transaction); sat lifecycle check of the whole store (goal:
// under 10 s).
//
//	go test -run '^$' -bench Store -benchtime 3x ./internal/lifecycle
func BenchmarkStore(b *testing.B) {
	for _, e := range []*engine{{name: lifecycle.SQLite}, {name: lifecycle.Postgres}} {
		b.Run(e.name, func(b *testing.B) {
			if e.name == lifecycle.Postgres {
				e.pg = pgStart(b)
			}
			s, leaves, t0 := benchStore(b, e)
			ctx := context.Background()
			rng := rand.New(rand.NewPCG(1, 2))
			b.Run("asof-element", func(b *testing.B) {
				var lat []time.Duration
				for b.Loop() {
					for range 1000 {
						key := leaves[rng.IntN(len(leaves))]
						at := t0.Add(time.Duration(rng.Int64N(int64(300 * 24 * time.Hour))))
						start := time.Now()
						st, _, _, err := s.StateAsOf(ctx, key, at)
						lat = append(lat, time.Since(start))
						if err != nil || st == "" {
							b.Fatalf("%s at %s: %q %v", key, at, st, err)
						}
					}
				}
				slices.Sort(lat)
				b.ReportMetric(ms(lat[len(lat)/2]), "p50-ms")
				b.ReportMetric(ms(lat[len(lat)*99/100]), "p99-ms")
			})
			b.Run("asof-inventory", func(b *testing.B) {
				n := 0
				for b.Loop() {
					els, err := s.AsOf(ctx, t0.Add(150*24*time.Hour))
					if err != nil {
						b.Fatal(err)
					}
					n = len(els)
				}
				b.ReportMetric(float64(n), "elements")
			})
			b.Run("check", func(b *testing.B) {
				var r *lifecycle.CheckReport
				for b.Loop() {
					var err error
					if r, err = s.Check(ctx, nil); err != nil {
						b.Fatal(err)
					}
				}
				if !r.OK() || r.Events < 1_000_000 {
					b.Fatalf("check of %d events: %q", r.Events, r.Problems)
				}
				b.ReportMetric(float64(r.Events), "events")
			})
			b.Run("transition", func(b *testing.B) {
				next, moved := 0, 0
				start := time.Now()
				for b.Loop() {
					for range 50 {
						key := leaves[next]
						next++
						if _, err := s.Transition(ctx, as(b, "operator"), lifecycle.Move{Element: key, To: lifecycle.Maintenance, Reason: "bench", Only: true}); err != nil {
							b.Fatal(err)
						}
						moved++
					}
				}
				b.ReportMetric(float64(moved)/time.Since(start).Seconds(), "transitions/s")
			})
		})
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// benchStore is a store of a synthetic site of 100,001 elements (1,000
// racks of 99 trays) with 10 events each, every element operating now;
// it returns the trays' keys and the time of the first events.
func benchStore(b *testing.B, e *engine) (*lifecycle.Store, []string, time.Time) {
	b.Helper()
	ctx := context.Background()
	clk := newClock()
	t0 := clk.Now()
	g := inventory.NewGraph(&inventory.Site{Name: "bench"}, 100_001)
	root, _ := g.Add(inventory.None, inventory.Element{Key: "bench", Kind: inventory.KindSite})
	var leaves []string
	for r := range 1000 {
		rack, _ := g.Add(root, inventory.Element{Key: fmt.Sprintf("r%04d", r), Kind: inventory.KindRack})
		for t := range 99 {
			key := fmt.Sprintf("r%04d/gpu-%02d", r, t+1)
			g.Add(rack, inventory.Element{Key: key, Kind: inventory.KindGPU, Slot: t + 1})
			leaves = append(leaves, key)
		}
	}
	g.Seal()
	start := time.Now()
	cfg := e.config(b, clk)
	s, err := lifecycle.Init(ctx, cfg, as(b, "ops"), g, policy(b, nil))
	require.NoError(b, err)
	b.Cleanup(func() { s.Close() })
	// nine more events per element, a month apart: the life of a part
	// up to operating, a maintenance and back
	life := []lifecycle.State{lifecycle.Built, lifecycle.Integrated, lifecycle.Shipped, lifecycle.Installed, lifecycle.Commissioned,
		lifecycle.Provisioned, lifecycle.Operating, lifecycle.Maintenance, lifecycle.Operating}
	keys := append([]string{"bench"}, leaves...)
	for r := range 1000 {
		keys = append(keys, fmt.Sprintf("r%04d", r))
	}
	slices.Sort(keys)
	db := s.DB()
	ph := placeholders(e.name)
	const per = 200 // 200 × 9 × 17 parameters: inside SQLite's 32,766
	var last time.Time
	for chunk := range slices.Chunk(keys, per) {
		var q strings.Builder
		q.WriteString("INSERT INTO events (at, element, kind, prev_state, state, since, prev_serial, serial, actor, db_user, reason, cause, policy, evidence, statement, signature, data) VALUES ")
		args := make([]any, 0, len(chunk)*len(life)*17)
		n := 0
		for i, k := range chunk {
			prev := lifecycle.Design
			for j, st := range life {
				at := t0.Add(time.Duration(j+1)*30*24*time.Hour + time.Duration(i)*time.Microsecond)
				if at.After(last) {
					last = at
				}
				if n > 0 {
					q.WriteString(", ")
				}
				q.WriteString(ph(17, len(args)))
				args = append(args, at.UnixMicro(), k, "transition", string(prev), string(st), at.UnixMicro(), "", "", "ssh:ops", "", "bench", 1, 1, "", "", "", "")
				prev = st
				n++
			}
		}
		_, err := db.ExecContext(ctx, q.String(), args...)
		require.NoError(b, err)
	}
	_, err = db.ExecContext(ctx, "UPDATE elements SET state = 'operating', since = (SELECT max(at) FROM events WHERE element = elements.key), last_at = (SELECT max(at) FROM events WHERE element = elements.key), version = 10")
	require.NoError(b, err)
	// the events as seam would have chained them, and a change to seal
	// them (as the holder of the store could not: a seal is signed)
	guard := []string{"ALTER TABLE events DISABLE TRIGGER events_no_update", "ALTER TABLE events ENABLE TRIGGER events_no_update"}
	if e.name != lifecycle.Postgres {
		guard = []string{"DROP TRIGGER events_no_update",
			"CREATE TRIGGER events_no_update BEFORE UPDATE ON events BEGIN SELECT RAISE(ABORT, 'lifecycle events are append-only'); END"}
	}
	_, err = db.ExecContext(ctx, guard[0])
	require.NoError(b, err)
	require.NoError(b, lifecycle.Rechain(ctx, s))
	_, err = db.ExecContext(ctx, guard[1])
	require.NoError(b, err)
	clk.Set(last.Add(time.Minute))
	_, err = s.Transition(ctx, as(b, "operator"), lifecycle.Move{Element: "r0999", To: lifecycle.Maintenance, Reason: "sealed", Only: true})
	require.NoError(b, err)
	if e.name == lifecycle.Postgres {
		_, err = db.ExecContext(ctx, "VACUUM ANALYZE")
	} else {
		_, err = db.ExecContext(ctx, "ANALYZE")
	}
	require.NoError(b, err)
	in, err := s.Info(ctx)
	require.NoError(b, err)
	b.Logf("%s: %d elements, %d events, loaded in %s", e.name, in.Elements, in.Events, time.Since(start).Round(time.Second))
	clk.Set(last.Add(time.Hour))
	rand.Shuffle(len(leaves), func(i, j int) { leaves[i], leaves[j] = leaves[j], leaves[i] })
	return s, leaves, t0
}

// placeholders writes one row's placeholders for the engine, after n
// arguments.
func placeholders(engine string) func(cols, n int) string {
	return func(cols, n int) string {
		ps := make([]string, cols)
		for i := range ps {
			if engine == lifecycle.Postgres {
				ps[i] = fmt.Sprintf("$%d", n+i+1)
			} else {
				ps[i] = "?"
			}
		}
		return "(" + strings.Join(ps, ", ") + ")"
	}
}

// The figure of the commissioning issue: sat gate over 100 modules
// with 10,000 recorded cases and 1,000 issues (goal: under 1 s), the
// log read from the store (SQLite) and every module's gate evaluated.
//
//	go test -run '^$' -bench Gate -benchtime 3x ./internal/lifecycle
func BenchmarkGate(b *testing.B) {
	ctx := context.Background()
	e := &engine{name: lifecycle.SQLite}
	g := inventory.NewGraph(&inventory.Site{Name: "bench"}, 101)
	root, _ := g.Add(inventory.None, inventory.Element{Key: "bench", Kind: inventory.KindSite})
	for m := range 100 {
		g.Add(root, inventory.Element{Key: fmt.Sprintf("m%03d", m), Kind: inventory.KindRack})
	}
	g.Seal()
	s, err := lifecycle.Init(ctx, e.config(b, newClock()), as(b, "ops"), g, policy(b, nil))
	require.NoError(b, err)
	b.Cleanup(func() { s.Close() })
	at := newClock().Now()
	for m := range 100 {
		module := fmt.Sprintf("m%03d", m)
		bd := lifecycle.CxBundle{Bundle: "b-" + module, Module: module, Level: plan.SAT, Rules: plan.DefaultCommissioning()}
		for c := range 100 {
			cx := lifecycle.CxCase{ID: fmt.Sprintf("sat.p-%s.transient.c%03d", module, c), Level: plan.L4, Kind: plan.Transient, Outcome: "PASS"}
			if c%10 == 0 {
				cx.Outcome = "FAIL"
				bd.Opened = append(bd.Opened, lifecycle.Issue{ID: fmt.Sprintf("%s-%d", module, c/10+1), Module: module, Level: plan.L4, Case: cx.ID,
					Kind: plan.Transient, Severity: plan.Major, Owner: "VoltSkid", Opened: at, Due: at.Add(7 * 24 * time.Hour)})
			}
			bd.Cases = append(bd.Cases, cx)
		}
		doc, err := json.Marshal(bd)
		require.NoError(b, err)
		_, err = s.DB().ExecContext(ctx, `INSERT INTO events (at, element, kind, prev_state, state, since, prev_serial, serial, actor, db_user, reason, cause, policy, evidence, statement, signature, data)
			VALUES (?, ?, 'commissioning', 'installed', 'installed', 0, '', '', 'ssh:cx', '', 'bench', 0, 1, '', '', '', ?)`, at.UnixMicro(), module, string(doc))
		require.NoError(b, err)
	}
	for b.Loop() {
		gates, err := s.Gates(ctx, plan.L4, nil)
		require.NoError(b, err)
		if len(gates) != 100 || gates[0].Pass() || gates[0].Cases != 100 || len(gates[0].Open[plan.Major]) != 10 {
			b.Fatalf("%d gates; the first: %+v", len(gates), gates[0])
		}
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "gate-ms")
}
