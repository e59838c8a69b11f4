package alarm_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/seamdc/seam/internal/alarm"
)

// BenchmarkIngest: alarms ingested per second through the webhook (a
// version 4 payload of one new alert per domain, 80, parsed, mapped through the
// vocabulary and the inventory, deduplicated by fingerprint and merged
// into the stream) and through the stream alone (observations from
// polled points, most of them repeats).
func BenchmarkIngest(b *testing.B) {
	_, ix := exampleIndex(b)
	domains := ix.Domains()
	b.Run("webhook", func(b *testing.B) {
		s := alarm.NewStream()
		w := &alarm.Webhook{Domains: ix, Sink: func(o alarm.Observation) error { s.Observe(o); return nil }}
		n := 0
		b.ResetTimer()
		for i := range b.N {
			// one alert per domain, each a new state (firing, then
			// resolved): Alertmanager's fingerprints are per label set
			status := [2]string{"firing", "resolved"}[i%2]
			var alerts []string
			for j, d := range domains {
				alerts = append(alerts, alertJSON(status, fmt.Sprintf("%016x", j), map[string]string{"seam_alarm": "leak_detected", "domain": d.String()}))
			}
			msg, err := alarm.ParseWebhook([]byte(fmt.Sprintf(payload, strings.Join(alerts, ","))))
			if err != nil {
				b.Fatal(err)
			}
			res, err := w.Take(msg)
			if err != nil || len(res.Refused) > 0 {
				b.Fatal(err, res.Refused)
			}
			n += res.Taken
		}
		b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "alarms/s")
	})
	b.Run("stream", func(b *testing.B) {
		s := alarm.NewStream()
		at := time.Now()
		b.ResetTimer()
		for i := range b.N {
			d := domains[i%len(domains)]
			s.Observe(alarm.Observation{Type: alarm.CoolingRedundancyLost, Domain: d, Active: i%7 == 0, Kind: alarm.FromDevice, Source: "dev/" + d.Value, At: at})
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "alarms/s")
	})
}
