package report

import (
	"crypto/ed25519"
	"crypto/rand"
	"io"
	"os"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

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
// verify` and `sat report` with /usr/bin/time); SEAM_HOUR_SIGNED=1 signs
// it (a seal every minute and at every case end) with a new key.
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
		var opt reporttest.Options
		if os.Getenv("SEAM_HOUR_SIGNED") != "" {
			_, priv, err := ed25519.GenerateKey(rand.Reader)
			if err != nil {
				b.Fatal(err)
			}
			if opt.Signer, err = ssh.NewSignerFromKey(priv); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := reporttest.Write(dir, p, raw, opt); err != nil {
			b.Fatal(err)
		}
		b.Logf("wrote %s in %s", dir, time.Since(t))
	}
	benchReport(b, dir)
}
