package report

import (
	"io"
	"os"
	"testing"
	"time"

	"github.com/seamdc/seam/internal/plan"
	"github.com/seamdc/seam/internal/report/reporttest"
)

// benchReport loads, re-grades and renders every format of the bundle.
func benchReport(b *testing.B, dir string) {
	b.Helper()
	var size int
	for b.Loop() {
		r, err := Load(dir, Options{Plots: true})
		if err != nil {
			b.Fatal(err)
		}
		if !r.OK() {
			b.Fatal(r.Integrity, r.Mismatches)
		}
		cw := &countWriter{}
		for _, f := range []func(io.Writer, *Run) error{HTML, JUnit, CSV, Markdown} {
			if err := f(cw, r); err != nil {
				b.Fatal(err)
			}
		}
		size = cw.n
	}
	b.ReportMetric(float64(size)/1024, "KiB-out")
}

type countWriter struct{ n int }

func (w *countWriter) Write(p []byte) (int, error) { w.n += len(p); return len(p), nil }

// BenchmarkReportExampleSAT: the example's SAT of all three modules
// (27 cases, holds capped at 5 s).
func BenchmarkReportExampleSAT(b *testing.B) {
	benchReport(b, writeBundle(b, "sat", "", reporttest.Options{}))
}

// BenchmarkReportHour100Channels: an hour of 100 channels at 10 Hz
// (3.6 M samples) in 12 cases of 5 min, 10 channels graded per case.
// SEAM_HOUR_BUNDLE=DIR keeps the bundle there (for measuring `sat
// report` with /usr/bin/time).
func BenchmarkReportHour100Channels(b *testing.B) {
	base, _ := examplePlan(b, "sat", "ma")
	p, err := reporttest.LongPlan(base, 100, 10, 3600, 300, 0.1)
	if err != nil {
		b.Fatal(err)
	}
	raw, err := plan.Encode(p)
	if err != nil {
		b.Fatal(err)
	}
	dir := os.Getenv("SEAM_HOUR_BUNDLE")
	if dir == "" {
		dir = b.TempDir() + "/hour"
	}
	if _, err := os.Stat(dir); err != nil {
		t := time.Now()
		if _, err := reporttest.Write(dir, p, raw, reporttest.Options{}); err != nil {
			b.Fatal(err)
		}
		b.Logf("wrote %s in %s", dir, time.Since(t))
	}
	benchReport(b, dir)
}
