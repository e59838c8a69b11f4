package facilityd_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/seamdc/seam/internal/drain/facilityd"
)

// The figures: one webhook POST of 8,000 alerts, and twenty
// such POSTs of new alerts each, every one answered in under 1 s; an
// alarm of 168,000 sources stays one alarm of bounded size. The alerts
// are Alertmanager's for one loop (one alarm, one hold), as a storm of
// per-rack rules would send; facilityd runs with scheduler none.
func BenchmarkWebhookStorm(b *testing.B) {
	var worst time.Duration
	var heap uint64
	var statusBytes int
	for b.Loop() {
		b.StopTimer()
		cfg, err := facilityd.LoadConfig(demoConfig(b, "")) // a fresh state each time
		if err != nil {
			b.Fatal(err)
		}
		d, err := facilityd.New(cfg, facilityd.Options{Out: io.Discard})
		if err != nil {
			b.Fatal(err)
		}
		srv := httptest.NewServer(d.Handler())
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { _ = d.Run(ctx); close(done) }()
		for !d.Ready() {
			time.Sleep(time.Millisecond)
		}
		b.StartTimer()
		for post := range 21 {
			start := time.Now()
			resp, err := http.Post(srv.URL+"/v1/alertmanager", "application/json", bytes.NewReader(stormPayload(post, 8000)))
			if err != nil {
				b.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"taken":8000`) {
				b.Fatalf("POST %d: %s: %s", post, resp.Status, body)
			}
			worst = max(worst, time.Since(start))
		}
		b.StopTimer()
		resp, err := http.Get(srv.URL + "/v1/status")
		if err != nil {
			b.Fatal(err)
		}
		st, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		statusBytes = len(st)
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		heap = ms.HeapAlloc
		cancel()
		<-done
		srv.Close()
		d.Close()
		b.StartTimer()
	}
	b.ReportMetric(worst.Seconds(), "worst-POST-s")
	b.ReportMetric(float64(heap)/(1<<20), "heap-MB")
	b.ReportMetric(float64(statusBytes)/1024, "status-KB")
}

// stormPayload is a webhook payload of n new firing alerts for loop l2.
func stormPayload(post, n int) []byte {
	var b strings.Builder
	b.WriteString(`{"version":"4","groupKey":"storm","status":"firing","receiver":"facilityd","alerts":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"status":"firing","labels":{"alertname":"SeamLeakDetected","domain":"cooling_loop=l2","rack":"r%d-%d"},"startsAt":"2026-12-05T10:00:00Z","fingerprint":"%02d%06d"}`, post, i, post, i)
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}
