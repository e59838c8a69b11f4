package recorded_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/seamdc/seam/internal/burnin"
	"github.com/seamdc/seam/internal/burnin/recorded"
	"github.com/seamdc/seam/internal/burnin/recorded/recordedtest"
	"github.com/seamdc/seam/internal/hold"
	"github.com/seamdc/seam/internal/ledger"
	"github.com/seamdc/seam/internal/lifecycle"
)

// The figure: sat burnin grade of 10,000 nodes' recorded
// outputs, goal under 5 s (make bench). 2,500 racks of four 8-GPU H100
// nodes in modules of 288, every hundredth node slow; 42,535 files
// (each node's diagnostic, telemetry and single-node all-reduce, 10,000
// ring pairs, 2,500 racks, 35 modules) built from the real samples
// before the clock starts. Timed: what the command does after loading
// the contracts — read and check every file, the ladder and analysis,
// the signed-less evidence bundle, 10,000 baselines, the report, and the
// gate on a ledger in memory.
func BenchmarkGradeRecorded10k(b *testing.B) {
	nodes := recordedtest.Inventory(2500, 4, 72)
	slow := map[string]float64{}
	for i := 7; i < len(nodes); i += 100 {
		slow[nodes[i].Name] = 0.6
	}
	dir := filepath.Join(b.TempDir(), "recorded")
	recordedtest.Write(b, samples, dir, nodes, recordedtest.Options{Slow: slow, Size: 8 << 30})
	b.ReportAllocs()
	var held, retest int
	var cpu time.Duration
	for b.Loop() {
		out := filepath.Join(b.TempDir(), "ev")
		start := cpuTime()
		res := gradeCommand(b, dir, out, nodes)
		cpu += cpuTime() - start
		held, retest = len(res.Held()), len(res.Retests())
		b.StopTimer()
		_ = os.RemoveAll(filepath.Dir(out))
		b.StartTimer()
	}
	if held != len(slow) || retest != 0 {
		b.Fatalf("%d held, %d to re-test; want the %d slow nodes held", held, retest, len(slow))
	}
	b.ReportMetric(float64(held), "held")
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
}

// cpuTime is the process's CPU time, user and system: on a busy
// machine the wall time says little.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// gradeCommand does what sat burnin grade does once it has the
// inventory: grade, the bundle, the baselines, the report, the gate.
func gradeCommand(tb testing.TB, dir, out string, nodes []burnin.Node) *burnin.Result {
	tb.Helper()
	ctx := context.Background()
	res, err := recorded.Grade(ctx, dir, nodes, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	m, files, err := burnin.WriteBundle(out, res, burnin.BundleOptions{Tool: "sat burnin bench", Baselines: out + ".baselines"})
	if err != nil {
		tb.Fatal(err)
	}
	for _, w := range []func(io.Writer, *burnin.Result) error{burnin.WriteCSV, burnin.WriteJUnit, burnin.WriteHTML} {
		if err := w(io.Discard, res); err != nil {
			tb.Fatal(err)
		}
	}
	l := &ledger.Ledger{Backend: hold.NewMemory(&hold.Book{}, nil, nil)}
	burnin.Gate(ctx, l, nil, lifecycle.Auth{}, "seam-burnin-bench", "bench", res, files, m.Bundle)
	return res
}
