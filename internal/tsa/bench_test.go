package tsa_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/seamdc/seam/internal/tsa"
	"github.com/seamdc/seam/internal/tsa/tsatest"
)

// A time-stamp from an authority on loopback (openssl ts behind the
// test responder: one openssl process a stamp), request to checked
// token. Goal: under 50 ms a stamp.
//
//	go test -run '^$' -bench Stamp ./internal/tsa
func BenchmarkStamp(b *testing.B) {
	srv := tsatest.Start(b, "bench")
	roots, err := tsa.ParseRoots("bench", srv.RootPEM)
	if err != nil {
		b.Fatal(err)
	}
	a := &tsa.Authority{URL: srv.URL, Roots: roots}
	ctx := context.Background()
	var lat []time.Duration
	for b.Loop() {
		for range 20 {
			start := time.Now()
			if _, err := a.Stamp(ctx, []byte("a seal's statement")); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(start))
		}
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}
