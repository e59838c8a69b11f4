package alarm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/alarm"
	"github.com/seamdc/seam/internal/alarm/amtest"
	"github.com/seamdc/seam/internal/clock"
)

type sink struct {
	mu       sync.Mutex
	got      []alarm.Observation
	rejected map[string]int
	watchdog int
	fail     error
}

func (s *sink) take(o alarm.Observation) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return s.fail
	}
	s.got = append(s.got, o)
	return nil
}

func (s *sink) reject(reason string, _ error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rejected == nil {
		s.rejected = map[string]int{}
	}
	s.rejected[reason]++
}

func (s *sink) snapshot() ([]alarm.Observation, map[string]int, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := map[string]int{}
	for k, v := range s.rejected {
		r[k] = v
	}
	return append([]alarm.Observation(nil), s.got...), r, s.watchdog
}

func newWebhook(t *testing.T, s *sink) *alarm.Webhook {
	_, ix := exampleIndex(t)
	return &alarm.Webhook{Domains: ix, Sink: s.take, Reject: s.reject,
		Watchdog: func(time.Time) { s.mu.Lock(); s.watchdog++; s.mu.Unlock() }}
}

const payload = `{"version":"4","groupKey":"{}:{alertname=\"SeamCoolingRedundancyLost\"}","status":"firing","receiver":"facilityd",
"groupLabels":{},"commonLabels":{},"commonAnnotations":{},"externalURL":"http://am","truncatedAlerts":0,
"alerts":[%s]}`

func alertJSON(status, fp string, labels map[string]string) string {
	l, _ := json.Marshal(labels)
	ends := "0001-01-01T00:00:00Z"
	if status == "resolved" {
		ends = "2026-12-01T08:05:00Z"
	}
	return fmt.Sprintf(`{"status":%q,"labels":%s,"annotations":{"summary":"l2 lost a pump"},"startsAt":"2026-12-01T08:00:00Z","endsAt":%q,"generatorURL":"","fingerprint":%q}`,
		status, l, ends, fp)
}

func post(t *testing.T, h http.Handler, body string) (int, string) {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/alertmanager", strings.NewReader(body)))
	return rec.Code, rec.Body.String()
}

// The webhook takes version 4 payloads, each alert once by fingerprint
// (Alertmanager resends whole groups), maps its type and domain through
// the vocabulary, answers 400 for a body it cannot read (Alertmanager
// does not retry 4xx) and 503 for a transient failure (it retries 5xx).
func TestWebhook(t *testing.T) {
	s := &sink{}
	w := newWebhook(t, s)
	firing := alertJSON("firing", "a1b2c3d4e5f60718", map[string]string{"alertname": "SeamCoolingRedundancyLost", "cooling_loop": "l2"})
	code, body := post(t, w, fmt.Sprintf(payload, firing))
	require.Equal(t, http.StatusOK, code, body)
	got, _, _ := s.snapshot()
	require.Len(t, got, 1)
	assert.Equal(t, alarm.CoolingRedundancyLost, got[0].Type)
	assert.Equal(t, "cooling_loop=l2", got[0].Domain.String())
	assert.True(t, got[0].Active)
	assert.Equal(t, "alertmanager:a1b2c3d4e5f60718", got[0].SourceID())

	// the group resent: nothing new
	code, body = post(t, w, fmt.Sprintf(payload, firing))
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, `"repeated":1`)
	got, _, _ = s.snapshot()
	assert.Len(t, got, 1)

	// resolved: a clear, once
	resolved := alertJSON("resolved", "a1b2c3d4e5f60718", map[string]string{"alertname": "SeamCoolingRedundancyLost", "cooling_loop": "l2"})
	post(t, w, fmt.Sprintf(payload, resolved))
	post(t, w, fmt.Sprintf(payload, resolved))
	got, _, _ = s.snapshot()
	require.Len(t, got, 2)
	assert.False(t, got[1].Active)

	// an alert for an unknown domain or type is refused and counted; the
	// rest of the group is taken; the answer is 200 (a resend cannot fix it)
	unknown := alertJSON("firing", "0000000000000001", map[string]string{"alertname": "SeamLeakDetected", "domain": "cooling_loop=l9"})
	foreign := alertJSON("firing", "0000000000000002", map[string]string{"alertname": "DiskFull", "instance": "x"})
	both := alertJSON("firing", "0000000000000003", map[string]string{"seam_alarm": "ups_on_battery", "power_block": "p1", "feed": "p1/a"})
	good := alertJSON("firing", "0000000000000004", map[string]string{"seam_alarm": "ups_on_battery", "domain": "power_block=p1"})
	code, body = post(t, w, fmt.Sprintf(payload, strings.Join([]string{unknown, foreign, both, good}, ",")))
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "unknown domain cooling_loop=l9")
	assert.Contains(t, body, `alert \"DiskFull\" has no seam_alarm label`)
	assert.Contains(t, body, "several domain labels (feed=p1/a, power_block=p1)")
	got, rejected, _ := s.snapshot()
	require.Len(t, got, 3)
	assert.Equal(t, "power_block=p1", got[2].Domain.String())
	assert.Equal(t, 3, rejected["unmapped"])

	// the Watchdog is the dead man's switch, not an alarm
	post(t, w, fmt.Sprintf(payload, alertJSON("firing", "ffffffffffffffff", map[string]string{"alertname": "Watchdog"})))
	_, _, wd := s.snapshot()
	assert.Equal(t, 1, wd)

	// malformed bodies: 400, counted, nothing observed
	for name, bad := range map[string]string{
		"not JSON":       `{"version":"4",`,
		"version 3":      `{"version":"3","alerts":[` + good + `]}`,
		"no alerts":      `{"version":"4","alerts":[]}`,
		"bad status":     fmt.Sprintf(payload, strings.Replace(good, `"firing"`, `"burning"`, 1)),
		"no fingerprint": fmt.Sprintf(payload, strings.Replace(good, `"0000000000000004"`, `""`, 1)),
	} {
		code, _ := post(t, w, bad)
		assert.Equal(t, http.StatusBadRequest, code, name)
	}
	got, rejected, _ = s.snapshot()
	assert.Len(t, got, 3)
	assert.Equal(t, 5, rejected["malformed"])
	rec := httptest.NewRecorder()
	w.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/alertmanager", nil))
	assert.Equal(t, http.StatusMethodNotAllowed, rec.Code)

	// a transient failure: 503, so Alertmanager retries, and the retry
	// is taken
	s.fail = fmt.Errorf("state not writable: %w", alarm.ErrTransient)
	retry := alertJSON("firing", "0000000000000005", map[string]string{"seam_alarm": "leak_detected", "domain": "cooling_loop=l3"})
	code, _ = post(t, w, fmt.Sprintf(payload, retry))
	assert.Equal(t, http.StatusServiceUnavailable, code)
	s.fail = nil
	code, _ = post(t, w, fmt.Sprintf(payload, retry))
	assert.Equal(t, http.StatusOK, code)
	got, _, _ = s.snapshot()
	require.Len(t, got, 4)
	assert.Equal(t, alarm.LeakDetected, got[3].Type)
}

// A real Alertmanager (Debian's) delivers an alert to the webhook with
// its fingerprint, resends the group without it being taken twice, and
// its silences suppress what they match.
func TestAlertmanagerDelivers(t *testing.T) {
	s := &sink{}
	w := newWebhook(t, s)
	var deliveries atomic.Int64 // requests the webhook has answered
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.ServeHTTP(rw, r)
		deliveries.Add(1)
	}))
	defer srv.Close()
	am := amtest.StartAlertmanager(t, fmt.Sprintf(`route:
  receiver: facilityd
  group_by: [alertname, domain]
  group_wait: 0s
  group_interval: 1s
  repeat_interval: 2s
receivers:
- name: facilityd
  webhook_configs:
  - url: %s/v1/alertmanager
    send_resolved: true
`, srv.URL))
	am.Post(t, amtest.Alert{Labels: map[string]string{"alertname": "SeamCoolingRedundancyLost", "seam_alarm": "cooling_redundancy_lost", "domain": "cooling_loop=l2"},
		Annotations: map[string]string{"summary": "l2 lost a pump"}})
	require.Eventually(t, func() bool { got, _, _ := s.snapshot(); return len(got) == 1 }, 20*time.Second, 50*time.Millisecond,
		"Alertmanager delivered no alert to the webhook within 20 s")
	// the group resent after its repeat interval (2 s), and answered
	require.Eventually(t, func() bool { return deliveries.Load() >= 2 }, 10*time.Second, 20*time.Millisecond,
		"Alertmanager did not resend the group within 10 s (repeat_interval 2s)")
	got, _, _ := s.snapshot()
	require.Len(t, got, 1, "a resent group is not taken twice")
	assert.Equal(t, "cooling_loop=l2", got[0].Domain.String())
	assert.Len(t, got[0].Source, 16, "Alertmanager's fingerprint")

	clk := clock.NewFake(time.Now())
	sil := &alarm.Silences{URL: am.URL, Cache: time.Second, Now: clk.Now}
	l2 := got[0].Domain
	m, err := sil.Matching(context.Background(), alarm.CoolingRedundancyLost, l2)
	require.NoError(t, err)
	assert.Nil(t, m)
	id := am.Silence(t, map[string]string{"domain": "cooling_loop=l2"}, time.Hour, "alice", "SAT of l2 running")
	m, err = sil.Matching(context.Background(), alarm.CoolingRedundancyLost, l2)
	require.NoError(t, err)
	assert.Nil(t, m, "answered from the cache, not yet a second old")
	clk.Advance(time.Second)
	m, err = sil.Matching(context.Background(), alarm.CoolingRedundancyLost, l2)
	require.NoError(t, err)
	require.NotNil(t, m)
	assert.Equal(t, id, m.ID)
	assert.Equal(t, "alice", m.By)
	m, err = sil.Matching(context.Background(), alarm.LeakDetected, alarm.Domain{Kind: alarm.CoolingLoop, Value: "l3"})
	require.NoError(t, err)
	assert.Nil(t, m, "the silence matches l2 only")

	dead := &alarm.Silences{URL: "http://" + strings.TrimPrefix(srv.URL, "http://") + "/nothing"}
	_, err = dead.Matching(context.Background(), alarm.LeakDetected, l2)
	assert.Error(t, err, "an Alertmanager that cannot be read is an error, never a silence")
}

// The webhook remembers an alert's taken transition while Alertmanager
// keeps delivering it, and forgets it a DedupTTL after the last
// delivery: 100,000 distinct alerts over time leave only those of the
// last TTL remembered.
func TestWebhookForgets(t *testing.T) {
	var s sink
	w := newWebhook(t, &s)
	now := t0
	w.Now = func() time.Time { return now }
	w.DedupTTL = time.Hour
	msg := func(fp string) *alarm.WebhookMessage {
		return &alarm.WebhookMessage{Version: "4", Alerts: []alarm.WebhookAlert{{Status: "firing", Fingerprint: fp, StartsAt: t0,
			Labels: map[string]string{"alertname": "SeamCoolingRedundancyLost", "domain": "cooling_loop=l2"}}}}
	}
	take := func(fp string) alarm.WebhookResult {
		res, err := w.Take(msg(fp))
		require.NoError(t, err)
		return res
	}
	require.Equal(t, 1, take("steady").Taken)
	for i := range 100000 {
		now = t0.Add(time.Duration(i) * 360 * time.Millisecond) // ten hours in all
		take(fmt.Sprintf("storm-%06d", i))
		if i%5000 == 0 {
			require.Equal(t, 1, take("steady").Repeated, "delivered every 30 minutes: remembered")
		}
	}
	assert.LessOrEqual(t, w.Remembered(), 11001, "an hour of alerts (10,000), a tenth more between sweeps, and the steady one; not 100,000")
	assert.Equal(t, 1, take("storm-000000").Taken, "forgotten after its TTL: taken again")
}
