package compile_test

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/compile"
	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/plan"
)

// TestExamplePlans recompiles the worked example at every level and
// compares the result byte for byte with the committed plans
// (go test ./internal/compile -run TestExamplePlans -update rewrites
// them).
func TestExamplePlans(t *testing.T) {
	for _, level := range compile.Levels {
		t.Run(level, func(t *testing.T) {
			p, b, diags := compileDir(t, example, compile.Options{Level: level})
			require.Empty(t, diags)
			require.Equal(t, plan.Generated, p.Header.Generated)
			path := filepath.Join(example, "plans", level+".json")
			if *update {
				require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
				require.NoError(t, os.WriteFile(path, b, 0o644))
			}
			want, err := os.ReadFile(path)
			require.NoError(t, err)
			require.Equal(t, string(want), string(b), "%s is stale: run go test ./internal/compile -run TestExamplePlans -update", path)
			_, err = plan.Read(path)
			require.NoError(t, err, "the committed plan must validate")
		})
	}
}

// TestExampleFullyCovered: every clause of the example is proved by a
// case of the all-level plan, in full or in part, never left out.
func TestExampleFullyCovered(t *testing.T) {
	c, _, err := contract.Vet(example)
	require.NoError(t, err)
	p, _, diags := compileDir(t, example, compile.Options{})
	require.Empty(t, diags)
	var want []string
	for _, b := range c.Boundaries {
		for _, s := range b.Steady {
			want = append(want, s.Path())
		}
		for _, tr := range b.Transient {
			want = append(want, tr.Path())
		}
		for _, f := range b.Failure {
			want = append(want, f.Path())
		}
		if g := b.Grid; g != nil {
			req := `boundaries."` + b.ID + `".grid.require.`
			want = append(want, req+"ramp", req+"swing", req+"oscillation", req+"voltage_ride_through", req+"frequency_ride_through")
		}
	}
	var got []string
	for _, cov := range p.Coverage {
		got = append(got, cov.Clause)
		if strings.HasSuffix(cov.Clause, ".grid.require.frequency_ride_through") {
			// a plan cannot drive the grid's frequency: untestable, and said so
			require.Equal(t, plan.Untestable, cov.Status)
			require.Contains(t, cov.Reasons[0], "grid simulator")
			continue
		}
		require.Contains(t, []string{plan.Full, plan.Partial}, cov.Status, "%s: %v", cov.Clause, cov.Reasons)
		require.NotEmpty(t, cov.Cases, cov.Clause)
		for _, id := range cov.Cases {
			require.True(t, strings.Contains(id, "."+boundaryOf(cov.Clause)+"."), "%s proves %s", id, cov.Clause)
		}
	}
	require.ElementsMatch(t, want, got)
	// each level proves what it should: SAT every steady and transient
	// clause, IST every failure clause
	for _, cov := range p.Coverage {
		level := plan.SAT
		if strings.Contains(cov.Clause, ".failure.") || strings.Contains(cov.Clause, ".grid.") {
			level = plan.IST
		}
		if cov.Status == plan.Untestable {
			continue
		}
		require.True(t, slices.ContainsFunc(cov.Cases, func(id string) bool { return strings.HasPrefix(id, level+".") }),
			"%s has no %s case", cov.Clause, level)
	}
}

func boundaryOf(clause string) string {
	s := strings.TrimPrefix(clause, "boundaries.")
	s = s[:strings.Index(s, ".")]
	return strings.Trim(s, `"`)
}

// TestRecompileIsByteIdentical: no timestamps, no map order, no
// absolute paths: the same contracts give the same bytes, wherever they
// are.
func TestRecompileIsByteIdentical(t *testing.T) {
	_, a, _ := compileDir(t, example, compile.Options{})
	_, b, _ := compileDir(t, example, compile.Options{})
	_, c, _ := compileDir(t, copyExample(t), compile.Options{})
	require.Equal(t, string(a), string(b))
	require.Equal(t, string(a), string(c))
}

// TestCasesOrderedSafely: FAT before SAT before IST; within a level
// steady before transient before failure, and the load they reach
// never falls; every case with a load bank starts at zero, climbs in
// steps of at most a quarter of the design load and ends at zero.
func TestCasesOrderedSafely(t *testing.T) {
	p, _, _ := compileDir(t, example, compile.Options{})
	rank := map[string]int{plan.FAT: 0, plan.SAT: 1, plan.IST: 2, plan.Steady: 0, plan.Transient: 1, plan.Failure: 2, plan.Grid: 3}
	prevLevel, prevKind, prevLoad := -1, -1, 0.0
	for _, c := range p.Cases {
		l, k, load := rank[c.Level], rank[c.Kind], peak(c)
		require.GreaterOrEqual(t, l, prevLevel, c.ID)
		if l == prevLevel {
			require.GreaterOrEqual(t, k, prevKind, c.ID)
			if k == prevKind {
				require.GreaterOrEqual(t, load, prevLoad, "%s raises less load than the case before it", c.ID)
			}
		}
		prevLevel, prevKind, prevLoad = l, k, load
		if load == 0 {
			continue
		}
		first, last := c.Steps[0], c.Steps[len(c.Steps)-1]
		require.Equal(t, plan.OpSetLoad, first.Op, c.ID)
		require.Zero(t, *first.KW, c.ID)
		require.Equal(t, plan.OpRamp, last.Op, c.ID)
		require.Zero(t, *last.KW, "%s must leave the load bank at zero", c.ID)
		for _, s := range c.Steps {
			if s.Op == plan.OpRamp && s.ID != "step-up" && *s.KW > *s.FromKW {
				require.LessOrEqual(t, *s.KW-*s.FromKW, 0.25*2080+5, "%s step %s climbs too far at once", c.ID, s.ID)
			}
		}
	}
}

func peak(c plan.Case) float64 {
	m := 0.0
	for _, s := range c.Steps {
		for _, kw := range []*float64{s.KW, s.HighKW} {
			if kw != nil {
				m = math.Max(m, *kw)
			}
		}
	}
	return m
}

// TestInterlocksNeverTighterThanChecks: an interlock must not abort a
// run that every check of the case would pass.
func TestInterlocksNeverTighterThanChecks(t *testing.T) {
	p, _, _ := compileDir(t, example, compile.Options{})
	locks := map[string]plan.Interlock{}
	for _, il := range p.Interlocks {
		locks[il.ID] = il
	}
	n := 0
	for _, c := range p.Cases {
		for _, id := range c.Interlocks {
			il := locks[id]
			for _, k := range c.Checks {
				if k.Channel != il.Channel {
					continue
				}
				lo, hi, _ := k.Accepted()
				if il.Min != nil && !math.IsInf(lo, -1) {
					require.Less(t, *il.Min, lo, "%s: interlock %s trips at %g inside check %s", c.ID, id, *il.Min, k.ID)
					n++
				}
				if il.Max != nil && !math.IsInf(hi, 1) {
					require.Greater(t, *il.Max, hi, "%s: interlock %s trips at %g inside check %s", c.ID, id, *il.Max, k.ID)
					n++
				}
			}
		}
	}
	require.Greater(t, n, 50, "the example should exercise this many interlock/check pairs")
}

// TestSamplingMeetsTimeLimits: a channel graded against a time limit is
// sampled at least 10 times within it, and every interlocked channel at
// least once a second.
func TestSamplingMeetsTimeLimits(t *testing.T) {
	p, _, _ := compileDir(t, example, compile.Options{})
	for _, c := range p.Cases {
		period := map[string]float64{}
		for _, s := range c.Sampling {
			period[s.Channel] = s.MaxPeriodS
		}
		for _, k := range c.Checks {
			require.Contains(t, period, k.Channel, "%s/%s", c.ID, k.ID)
			if k.WithinS > 0 {
				require.LessOrEqual(t, period[k.Channel]*10, k.WithinS*(1+1e-9), "%s/%s: %g s sampling for a %g s limit", c.ID, k.ID, period[k.Channel], k.WithinS)
			}
		}
	}
	for _, il := range p.Interlocks {
		require.LessOrEqual(t, il.MaxPeriodS, 1.0, il.ID)
		require.Greater(t, il.MaxSilenceS, il.MaxPeriodS, il.ID)
	}
}

// TestFailureCasesSuppressWhatTheyTrip: opening feed a must not trip the
// feed-a voltage interlock, a leak test must not trip on its own alarm,
// and a UPS on battery keeps feed a interlocked (the UPS holds it up).
func TestFailureCasesSuppressWhatTheyTrip(t *testing.T) {
	p, _, _ := compileDir(t, example, compile.Options{Level: plan.IST, Module: "ma"})
	byID := map[string]plan.Case{}
	for _, c := range p.Cases {
		byID[c.ID] = c
	}
	suppressed := func(id string) []string {
		var out []string
		for _, s := range byID[id].Suppressed {
			out = append(out, s.Channel)
		}
		return out
	}
	require.Equal(t, []string{"p1/ma/feed-a/voltage"}, suppressed("ist.p1-ma.failure.feed-a-loss"))
	require.Equal(t, []string{"l1/ma/alarm/leak"}, suppressed("ist.l1-ma.failure.leak"))
	require.Equal(t, []string{"ctl/ma/heartbeat-age"}, suppressed("ist.ctl-ma.failure.controller-silent"))
	require.Empty(t, suppressed("ist.p1-ma.failure.ups-on-battery"))
	require.Contains(t, byID["ist.p1-ma.failure.ups-on-battery"].Interlocks, "p1-ma-feed-a-voltage")
	// the pump trip is automatic, the breaker is opened by a person
	require.Equal(t, plan.OpInjectFault, stepNamed(byID["ist.l1-ma.failure.pump-trip"], "inject").Op)
	require.Equal(t, plan.OpOperator, stepNamed(byID["ist.p1-ma.failure.feed-a-loss"], "inject").Op)
}

func stepNamed(c plan.Case, id string) plan.Step {
	for _, s := range c.Steps {
		if s.ID == id {
			return s
		}
	}
	return plan.Step{}
}
