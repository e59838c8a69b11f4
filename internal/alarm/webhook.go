package alarm

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"
)

// WebhookMessage is Alertmanager's webhook payload, version 4
// (prometheus/alertmanager notify/webhook: Message embedding
// template.Data).
type WebhookMessage struct {
	Version           string            `json:"version"`
	GroupKey          string            `json:"groupKey"`
	TruncatedAlerts   uint64            `json:"truncatedAlerts"`
	Receiver          string            `json:"receiver"`
	Status            string            `json:"status"`
	Alerts            []WebhookAlert    `json:"alerts"`
	GroupLabels       map[string]string `json:"groupLabels"`
	CommonLabels      map[string]string `json:"commonLabels"`
	CommonAnnotations map[string]string `json:"commonAnnotations"`
	ExternalURL       string            `json:"externalURL"`
}

// WebhookAlert is one alert of a webhook message.
type WebhookAlert struct {
	Status       string            `json:"status"` // firing | resolved
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations"`
	StartsAt     time.Time         `json:"startsAt"`
	EndsAt       time.Time         `json:"endsAt"`
	GeneratorURL string            `json:"generatorURL"`
	Fingerprint  string            `json:"fingerprint"`
}

// Resolver turns a written domain into a canonical one (an Index).
type Resolver interface {
	Resolve(s string) (Domain, error)
}

// ErrTransient marks an intake error Alertmanager should retry: the
// webhook answers 503 for it (Alertmanager retries 5xx, never 4xx).
var ErrTransient = errors.New("transient")

// Webhook receives Alertmanager's webhook. Each alert becomes an
// observation, once: Alertmanager resends whole groups at every
// group_interval and repeat_interval, so an alert already taken with
// the same fingerprint, status and start is skipped. The Watchdog alert
// is not an alarm: it feeds Watchdog, the dead man's switch.
type Webhook struct {
	Domains Resolver
	// Sink takes each new observation; an error wrapping ErrTransient
	// makes the answer 503 (Alertmanager retries), any other is counted
	// and the alert dropped.
	Sink func(Observation) error
	// Taken, when set, is called once a delivery's alerts are all
	// sunk, before the answer: the sink's owner makes them durable.
	Taken func()
	// Watchdog is called for every delivery of the Watchdog alert.
	Watchdog func(at time.Time)
	// Reject is called for each alert or payload refused, with why.
	Reject func(reason string, err error)
	Now    func() time.Time
	Log    *slog.Logger
	// MaxBody bounds a payload (default 4 MiB).
	MaxBody int64
	// DedupTTL is how long an alert's taken transition is remembered
	// after it was last delivered (default DefaultDedupTTL): at least
	// Alertmanager's repeat_interval, as a firing alert carries no
	// endsAt and is sent again each repeat_interval while it fires.
	DedupTTL time.Duration

	mu    sync.Mutex
	seen  map[string]seenAlert // by fingerprint
	swept time.Time
}

// DefaultDedupTTL outlasts Alertmanager's default repeat_interval (4h).
const DefaultDedupTTL = 6 * time.Hour

// seenAlert is an alert's transition taken (a hash of status@startsAt)
// and when it was last delivered (Unix ns): 16 bytes, as a storm's
// alerts of the last TTL are remembered, hundreds of thousands.
type seenAlert struct {
	mark uint64
	last int64
}

func markOf(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}

// WebhookResult is the webhook's answer body.
type WebhookResult struct {
	Taken    int      `json:"taken"`
	Repeated int      `json:"repeated"`
	Refused  []string `json:"refused,omitempty"`
}

func (w *Webhook) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.refuse(rw, http.StatusMethodNotAllowed, "method", fmt.Errorf("%s: the webhook takes POST", r.Method))
		return
	}
	limit := w.MaxBody
	if limit <= 0 {
		limit = 4 << 20
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		w.refuse(rw, http.StatusBadRequest, "read", fmt.Errorf("reading the webhook body: %w", err))
		return
	}
	if int64(len(body)) > limit {
		w.refuse(rw, http.StatusRequestEntityTooLarge, "too_large", fmt.Errorf("webhook body over %d bytes", limit))
		return
	}
	msg, err := ParseWebhook(body)
	if err != nil {
		w.refuse(rw, http.StatusBadRequest, "malformed", err)
		return
	}
	res, err := w.Take(msg)
	if err != nil {
		w.refuse(rw, http.StatusServiceUnavailable, "transient", err)
		return
	}
	rw.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(rw).Encode(res)
}

func (w *Webhook) refuse(rw http.ResponseWriter, code int, reason string, err error) {
	w.log().Warn("webhook refused", "reason", reason, "status", code, "error", err)
	if w.Reject != nil {
		w.Reject(reason, err)
	}
	http.Error(rw, err.Error(), code)
}

func (w *Webhook) log() *slog.Logger {
	if w.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return w.Log
}

// ParseWebhook reads a payload strictly enough to act on: version 4,
// alerts with a status, labels and a fingerprint.
func ParseWebhook(body []byte) (*WebhookMessage, error) {
	var msg WebhookMessage
	if err := json.Unmarshal(body, &msg); err != nil {
		return nil, fmt.Errorf("webhook body is not Alertmanager's JSON: %w", err)
	}
	if msg.Version != "4" {
		return nil, fmt.Errorf("webhook payload version %q: facilityd reads version 4 (Alertmanager 0.x)", msg.Version)
	}
	if len(msg.Alerts) == 0 {
		return nil, errors.New("webhook payload without alerts")
	}
	for i, a := range msg.Alerts {
		switch {
		case a.Status != "firing" && a.Status != "resolved":
			return nil, fmt.Errorf("alerts[%d]: status %q, want firing or resolved", i, a.Status)
		case a.Fingerprint == "":
			return nil, fmt.Errorf("alerts[%d]: no fingerprint", i)
		case len(a.Labels) == 0:
			return nil, fmt.Errorf("alerts[%d]: no labels", i)
		}
	}
	return &msg, nil
}

// Take turns a message's alerts into observations. It returns an error
// only for a transient failure of the sink (the whole delivery is then
// retried; alerts already taken are skipped on the retry).
func (w *Webhook) Take(msg *WebhookMessage) (WebhookResult, error) {
	var res WebhookResult
	if w.Taken != nil {
		defer w.Taken()
	}
	if msg.TruncatedAlerts > 0 {
		w.log().Warn("Alertmanager truncated the group: raise max_alerts on facilityd's receiver", "truncated_alerts", msg.TruncatedAlerts, "group_key", msg.GroupKey)
	}
	now := time.Now
	if w.Now != nil {
		now = w.Now
	}
	for _, a := range msg.Alerts {
		if a.Labels["alertname"] == WatchdogAlert {
			// a resolved Watchdog is the path dying (Prometheus stopped
			// sending it): only a firing one is a beat
			if w.Watchdog != nil && a.Status == "firing" {
				w.Watchdog(now())
			}
			res.Taken++
			continue
		}
		mark := a.Status + "@" + a.StartsAt.UTC().Format(time.RFC3339Nano)
		if w.taken(a.Fingerprint, mark, now()) {
			res.Repeated++
			continue
		}
		o, err := w.observation(a, now())
		if err != nil {
			w.log().Warn("webhook alert refused", "fingerprint", a.Fingerprint, "alertname", a.Labels["alertname"], "error", err)
			if w.Reject != nil {
				w.Reject("unmapped", err)
			}
			res.Refused = append(res.Refused, fmt.Sprintf("%s (%s): %v", a.Labels["alertname"], a.Fingerprint, err))
			w.remember(a.Fingerprint, mark, now()) // a resend cannot fix it
			continue
		}
		if err := w.Sink(o); err != nil {
			if errors.Is(err, ErrTransient) {
				return res, err
			}
			res.Refused = append(res.Refused, fmt.Sprintf("%s (%s): %v", a.Labels["alertname"], a.Fingerprint, err))
			if w.Reject != nil {
				w.Reject("refused", err)
			}
		}
		w.remember(a.Fingerprint, mark, now())
		res.Taken++
	}
	return res, nil
}

// taken reports whether the alert's transition was taken, and notes
// that it was delivered again.
func (w *Webhook) taken(fp, mark string, now time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	s, ok := w.seen[fp]
	if !ok || s.mark != markOf(mark) || now.UnixNano()-s.last > int64(w.ttl()) {
		return false
	}
	w.seen[fp] = seenAlert{s.mark, now.UnixNano()}
	return true
}

func (w *Webhook) remember(fp, mark string, now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.seen == nil {
		w.seen = map[string]seenAlert{}
	}
	w.seen[fp] = seenAlert{markOf(mark), now.UnixNano()}
	// forget what was not delivered for a TTL, a sweep each tenth of
	// it: the memory is the alerts of the last TTL, not of all time
	if now.Sub(w.swept) >= w.ttl()/10 {
		for k, s := range w.seen {
			if now.UnixNano()-s.last > int64(w.ttl()) {
				delete(w.seen, k)
			}
		}
		w.swept = now
	}
}

func (w *Webhook) ttl() time.Duration {
	if w.DedupTTL > 0 {
		return w.DedupTTL
	}
	return DefaultDedupTTL
}

// Remembered is how many alerts' transitions the webhook remembers.
func (w *Webhook) Remembered() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.seen)
}

// observation maps an alert: its type from seam_alarm or its alertname,
// its domain from the domain label or a label named by a domain kind
// (cooling_loop="l2").
func (w *Webhook) observation(a WebhookAlert, now time.Time) (Observation, error) {
	def, err := ForAlert(a.Labels)
	if err != nil {
		return Observation{}, err
	}
	written, err := domainLabel(a.Labels)
	if err != nil {
		return Observation{}, err
	}
	d, err := w.Domains.Resolve(written)
	if err != nil {
		return Observation{}, err
	}
	at := a.StartsAt
	if a.Status == "resolved" && !a.EndsAt.IsZero() {
		at = a.EndsAt
	}
	if at.IsZero() {
		at = now
	}
	return Observation{Type: def.Type, Domain: d, Active: a.Status == "firing", Kind: FromAlertmanager, Source: a.Fingerprint, At: at,
		Detail: a.Annotations["summary"]}, nil
}

func domainLabel(labels map[string]string) (string, error) {
	if d := labels[LabelDomain]; d != "" {
		return d, nil
	}
	var found []string
	for _, k := range Kinds {
		if v := labels[string(k)]; v != "" {
			found = append(found, string(k)+"="+v)
		}
	}
	sort.Strings(found)
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return "", fmt.Errorf("no %s label, and no label named by a domain kind (%s)", LabelDomain, kindList())
	}
	return "", fmt.Errorf("no %s label, and several domain labels (%s): say which with %s", LabelDomain, strings.Join(found, ", "), LabelDomain)
}
