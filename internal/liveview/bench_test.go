package liveview

import (
	"slices"
	"testing"
	"time"
)

// BenchmarkSampleToPage is the live view's latency from a sample the
// runner hands over (Observe) to an SSE client that has read and
// decoded it, over loopback HTTP (issue 25: goal under 250 ms); an
// operation is 100 samples, one after the other. The runner's queue in
// front of Observe is one channel send more; the page redraws at most
// every 100 ms.
func BenchmarkSampleToPage(b *testing.B) {
	const perOp = 100
	s, hs, _ := newServer(b, 0)
	st := openStream(b, hs.URL, opTok.Value)
	st.next(b) // hello
	lat := make([]time.Duration, 0, b.N*perOp)
	seq := int64(0)
	b.ResetTimer()
	for range b.N {
		for range perOp {
			seq++
			start := time.Now()
			s.Observe(sampleEvent(seq, float64(seq)))
			st.next(b)
			lat = append(lat, time.Since(start))
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(lat[len(lat)/2]), "p50-ms")
	b.ReportMetric(ms(lat[len(lat)*99/100]), "p99-ms")
	b.ReportMetric(ms(lat[len(lat)-1]), "max-ms")
}
