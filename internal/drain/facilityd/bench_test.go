package facilityd_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seamdc/seam/internal/alarm"
	"github.com/seamdc/seam/internal/clock"
	"github.com/seamdc/seam/internal/drain/facilityd"
	"github.com/seamdc/seam/internal/peer/slurmtest"
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

// The figure under a storm with a real slurmctld draining
// (Debian's 22.05, the example's 864 nodes defined without slurmd): 500
// alerts, ten for each of the site's racks, arrive as ten deliveries of
// fifty, every rack's first alert raising a leak that drains its nodes.
// The answers' p50 and p99 over four rounds; the drains run behind
// them (each round waits for all, checks them in Slurm, and undrains).
// Goal: p99 under 1 s.
func BenchmarkWebhookStormSlurm(b *testing.B) {
	cfg0, err := facilityd.LoadConfig(demoConfig(b, ""))
	if err != nil {
		b.Fatal(err)
	}
	ix, err := facilityd.New(cfg0, facilityd.Options{DryRun: true, Out: io.Discard})
	if err != nil {
		b.Fatal(err)
	}
	site := alarm.Domain{Kind: alarm.Site, Value: ix.Index.Site()}
	all := ix.Index.Nodes(site)
	var racks []alarm.Domain
	for _, d := range ix.Index.Domains() {
		if d.Kind == alarm.Rack && len(ix.Index.Nodes(d)) > 0 {
			racks = append(racks, d)
		}
	}
	ix.Close()
	var nodes []slurmtest.Node
	for _, n := range all {
		nodes = append(nodes, slurmtest.Node{Name: n})
	}
	c := slurmtest.Start(b, slurmtest.Config{Nodes: nodes, Within: 180 * time.Second})
	s := c.Slurm()
	s.Timeout = 2 * time.Minute
	var lat []time.Duration
	for b.Loop() {
		for round := range 4 {
			b.StopTimer()
			cfg, err := facilityd.LoadConfig(demoConfig(b, fmt.Sprintf(`, "storm": {"max_nodes": %d}`, len(all))))
			if err != nil {
				b.Fatal(err)
			}
			d, err := facilityd.New(cfg, facilityd.Options{Scheduler: s, Out: io.Discard})
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
			alerts := stormAlerts(round, racks, 500)
			for i := 0; i < len(alerts); i += 50 {
				body := `{"version":"4","groupKey":"storm","status":"firing","receiver":"facilityd","alerts":[` + strings.Join(alerts[i:i+50], ",") + `]}`
				start := time.Now()
				resp, err := http.Post(srv.URL+"/v1/alertmanager", "application/json", strings.NewReader(body))
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				lat = append(lat, time.Since(start))
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("delivery %d: %s", i/50, resp.Status)
				}
			}
			b.StopTimer()
			deadline := time.Now().Add(3 * time.Minute)
			for {
				st, err := s.Status(context.Background(), all)
				if err != nil {
					b.Fatal(err)
				}
				drained := 0
				for _, n := range all {
					if st.Nodes[n].Drained {
						drained++
					}
				}
				if drained == len(all) {
					break
				}
				if time.Now().After(deadline) {
					b.Fatalf("round %d: %d of %d nodes drained after 3 minutes", round, drained, len(all))
				}
				time.Sleep(100 * time.Millisecond)
			}
			cancel()
			<-done
			srv.Close()
			d.Close()
			if err := s.Undrain(context.Background(), all); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
	}
	slices.Sort(lat)
	b.ReportMetric(lat[len(lat)/2].Seconds()*1000, "p50-ms")
	b.ReportMetric(lat[(len(lat)*99)/100].Seconds()*1000, "p99-ms")
	b.ReportMetric(float64(len(racks)), "racks")
}

// stormAlerts are n firing leak alerts spread over the racks, in an
// order that mixes them.
func stormAlerts(round int, racks []alarm.Domain, n int) []string {
	out := make([]string, n)
	for i := range n {
		r := racks[i%len(racks)]
		out[i] = fmt.Sprintf(`{"status":"firing","labels":{"alertname":"SeamLeakDetected","domain":%q,"sensor":"s%d"},"startsAt":"2026-12-05T10:00:00Z","fingerprint":"r%d-%04d"}`,
			r.String(), i, round, i)
	}
	return out
}

// The memory figure: 1,000,000 distinct alerts over ten hours
// of facilityd's clock (1,000 deliveries of 1,000 new alerts, 36 s
// apart, each alert resolved 100 deliveries after it fired: 100,000
// firing at once), spread over the site's racks. RSS and heap after,
// the garbage collected. Goal: RSS under 200 MB.
func BenchmarkWebhookMillionAlerts(b *testing.B) {
	var rss, heap float64
	var remembered int
	for b.Loop() {
		b.StopTimer()
		cfg, err := facilityd.LoadConfig(demoConfig(b, `, "actions": {"leak_detected": "notify"}`))
		if err != nil {
			b.Fatal(err)
		}
		clk := clock.NewFake(time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC))
		d, err := facilityd.New(cfg, facilityd.Options{Out: io.Discard, Clock: clk})
		if err != nil {
			b.Fatal(err)
		}
		var racks []alarm.Domain
		for _, dom := range d.Index.Domains() {
			if dom.Kind == alarm.Rack {
				racks = append(racks, dom)
			}
		}
		h := d.Handler()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { _ = d.Run(ctx); close(done) }()
		for !d.Ready() {
			time.Sleep(time.Millisecond)
		}
		b.StartTimer()
		post := func(status string, batch int) {
			var sb strings.Builder
			sb.WriteString(`{"version":"4","groupKey":"million","status":"firing","receiver":"facilityd","alerts":[`)
			for i := range 1000 {
				if i > 0 {
					sb.WriteByte(',')
				}
				n := batch*1000 + i
				fmt.Fprintf(&sb, `{"status":%q,"labels":{"alertname":"SeamLeakDetected","domain":%q,"sensor":"s%d"},"startsAt":"2026-12-05T00:00:00Z","fingerprint":"%07d"}`,
					status, racks[n%len(racks)].String(), n, n)
			}
			sb.WriteString(`]}`)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/alertmanager", strings.NewReader(sb.String())))
			if rec.Code != http.StatusOK {
				b.Fatalf("batch %d %s: %d %s", batch, status, rec.Code, rec.Body)
			}
		}
		for batch := range 1000 {
			post("firing", batch)
			if batch >= 100 {
				post("resolved", batch-100)
			}
			clk.Advance(36 * time.Second)
		}
		b.StopTimer()
		remembered = d.Webhook.Remembered()
		runtime.GC()
		debug.FreeOSMemory()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		heap = float64(ms.HeapInuse) / (1 << 20)
		rss = vmRSS() / 1024
		cancel()
		<-done
		d.Close()
		b.StartTimer()
	}
	b.ReportMetric(rss, "RSS-MB")
	b.ReportMetric(heap, "heap-MB")
	b.ReportMetric(float64(remembered), "remembered")
}

// vmRSS is this process's resident set in kB (/proc/self/status).
func vmRSS() float64 {
	b, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			f, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return f
		}
	}
	return 0
}
