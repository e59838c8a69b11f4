package facilityd

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/seamdc/seam/internal/drain"
)

// Handler serves facilityd's HTTP interface:
//
//	GET  /metrics                Prometheus metrics
//	GET  /healthz                200 while the main loop turns
//	GET  /readyz                 200 once every source runs
//	GET  /v1/status              holds, nodes, alarms, refusals (JSON)
//	POST /v1/alertmanager        Alertmanager's webhook (payload version 4)
//	POST /v1/requests            a signed request (facilityd approve)
//	POST /v1/heartbeats/{name}   a controller's heartbeat
//
// The webhook takes the webhook token, a heartbeat its controller's
// token, /metrics and /v1/status the reader token (auth.go); a request
// is SSH-signed; /healthz and /readyz are open (probes).
func (d *Daemon) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", d.guard("metrics", d.doors.reader, promhttp.HandlerFor(d.Metrics.Registry, promhttp.HandlerOpts{})))
	mux.HandleFunc("GET /healthz", d.healthz)
	mux.HandleFunc("GET /readyz", d.readyz)
	mux.Handle("GET /v1/status", d.guard("status", d.doors.reader, http.HandlerFunc(d.status)))
	mux.Handle("/v1/alertmanager", d.guard("alertmanager", d.doors.webhook, d.Webhook))
	mux.HandleFunc("POST /v1/requests", d.request)
	mux.HandleFunc("POST /v1/heartbeats/{name}", d.heartbeat)
	return mux
}

func (d *Daemon) healthz(w http.ResponseWriter, r *http.Request) {
	at := d.loopAt.Load()
	if at == 0 {
		http.Error(w, "starting", http.StatusServiceUnavailable)
		return
	}
	if age := d.Clock.Now().Sub(time.Unix(0, at)); age > 10*time.Second {
		http.Error(w, fmt.Sprintf("the main loop has not turned for %s", age.Round(time.Second)), http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintln(w, "ok")
}

func (d *Daemon) readyz(w http.ResponseWriter, r *http.Request) {
	if !d.Ready() {
		http.Error(w, "starting: not taking alarms yet", http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintln(w, "ready")
}

// StatusDoc is /v1/status.
type StatusDoc struct {
	drain.Snapshot
	Problems  []string  `json:"problems,omitempty"`
	Journal   string    `json:"journal,omitempty"`
	Watchdog  time.Time `json:"watchdog_last,omitzero"`
	Heartbeat time.Time `json:"heartbeat"`
	// SchedulerUnreachable: the scheduler's controller did not answer
	// at the last check, for SchedulerError's reason.
	SchedulerUnreachable bool   `json:"scheduler_unreachable"`
	SchedulerError       string `json:"scheduler_error,omitempty"`
}

func (d *Daemon) status(w http.ResponseWriter, r *http.Request) {
	doc := StatusDoc{Snapshot: d.Ctl.Snapshot(), Problems: d.Problems(), Journal: d.journalAt, Watchdog: d.Beats.Last(WatchdogBeat),
		Heartbeat: time.Unix(0, d.loopAt.Load())}
	if why := d.schedDown.Load(); why != nil {
		doc.SchedulerUnreachable, doc.SchedulerError = true, *why
	}
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(doc)
}

// RequestAnswer is /v1/requests' answer.
type RequestAnswer struct {
	Result  *drain.Result `json:"result,omitempty"`
	Error   string        `json:"error,omitempty"`
	Reasons []string      `json:"reasons,omitempty"`
}

func (d *Daemon) request(w http.ResponseWriter, r *http.Request) {
	answer := func(code int, a RequestAnswer) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(a)
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		answer(http.StatusBadRequest, RequestAnswer{Error: err.Error()})
		return
	}
	var s drain.Signed
	if err := json.Unmarshal(body, &s); err != nil {
		d.Metrics.Refused("request", "malformed")
		answer(http.StatusBadRequest, RequestAnswer{Error: "not a signed request: " + err.Error()})
		return
	}
	appr, err := d.Verifier.Verify(s, d.Clock.Now())
	if err != nil {
		d.Metrics.Refused("request", "signature")
		d.Log.Warn("request not approved", "error", err)
		answer(http.StatusForbidden, RequestAnswer{Error: err.Error()})
		return
	}
	res, err := d.Ctl.Take(r.Context(), appr)
	var re *drain.RefusedError
	switch {
	case errors.As(err, &re):
		answer(http.StatusConflict, RequestAnswer{Error: err.Error(), Reasons: re.Reasons})
	case err != nil:
		answer(http.StatusInternalServerError, RequestAnswer{Error: err.Error()})
	default:
		answer(http.StatusOK, RequestAnswer{Result: &res})
	}
}

func (d *Daemon) heartbeat(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if point, ok := d.doors.counters[name]; ok {
		d.Metrics.Refused("heartbeat", "counter")
		http.Error(w, "facilityd: "+name+" beats by its device counter ("+point+"), not over HTTP", http.StatusForbidden)
		return
	}
	if t, ok := d.doors.beats[name]; ok && !t.allows(r) {
		// a controller's own token: another's beats for it alone
		d.Metrics.Refused("heartbeat", "token")
		d.Log.Warn("heartbeat refused: no or a wrong bearer token", "controller", name, "remote", r.RemoteAddr)
		w.Header().Set("WWW-Authenticate", `Bearer realm="facilityd"`)
		http.Error(w, "facilityd: the heartbeat of "+name+" needs its controller's bearer token", http.StatusUnauthorized)
		return
	}
	if err := d.Beats.Beat(name, d.Clock.Now()); err != nil {
		d.Metrics.Refused("heartbeat", "unknown")
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
