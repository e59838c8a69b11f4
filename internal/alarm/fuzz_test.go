package alarm_test

import (
	"fmt"
	"testing"

	"github.com/seamdc/seam/internal/alarm"
)

// Whatever Alertmanager (or anyone) posts, the webhook neither panics
// nor observes an alarm of a type or domain outside the vocabulary and
// the inventory.
func FuzzWebhook(f *testing.F) {
	_, ix := exampleIndex(f)
	f.Add([]byte(fmt.Sprintf(payload, alertJSON("firing", "00000000000000a1", map[string]string{"alertname": "SeamCoolingRedundancyLost", "domain": "cooling_loop=l2"}))))
	f.Add([]byte(fmt.Sprintf(payload, alertJSON("resolved", "00000000000000a2", map[string]string{"seam_alarm": "leak_detected", "domain": "loop=l9"}))))
	f.Add([]byte(fmt.Sprintf(payload, alertJSON("firing", "00000000000000a3", map[string]string{"alertname": "Watchdog"}))))
	f.Add([]byte(`{"version":"4","alerts":[`))
	f.Add([]byte(`{"version":"3","alerts":[]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		msg, err := alarm.ParseWebhook(body)
		if err != nil {
			return
		}
		w := &alarm.Webhook{Domains: ix, Sink: func(o alarm.Observation) error {
			if _, ok := alarm.Lookup(o.Type); !ok {
				t.Fatalf("observed unknown type %q", o.Type)
			}
			if _, err := ix.Resolve(o.Domain.String()); err != nil {
				t.Fatalf("observed unknown domain %s: %v", o.Domain, err)
			}
			return nil
		}}
		_, _ = w.Take(msg)
	})
}
