// Package amtest runs Debian's Alertmanager and Prometheus for tests,
// on loopback, with their data in the test's temporary directory,
// ready when they say so, stopped when the test ends (internal/peer).
package amtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seamdc/seam/internal/peer"
)

// Alertmanager is a running Alertmanager.
type Alertmanager struct {
	URL  string
	Peer *peer.Peer
}

// StartAlertmanager runs prometheus-alertmanager with config (YAML).
func StartAlertmanager(t testing.TB, config string) *Alertmanager {
	t.Helper()
	bin := peer.Need(t, "prometheus-alertmanager")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "alertmanager.yml")
	if err := os.WriteFile(cfg, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := peer.ListenTCP(t)
	url := "http://" + addr
	p := peer.Start(t, "alertmanager", peer.Spec{
		Args: []string{bin, "--config.file=" + cfg, "--storage.path=" + filepath.Join(dir, "data"), "--web.listen-address=" + addr,
			"--cluster.listen-address=", "--log.level=debug"},
		Ready: ready(url + "/-/ready"),
	})
	return &Alertmanager{URL: url, Peer: p}
}

func ready(url string) func(context.Context) error {
	return func(ctx context.Context) error {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: %s", url, resp.Status)
		}
		return nil
	}
}

// Alert is an alert posted to Alertmanager's API, as Prometheus posts
// them.
type Alert struct {
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations,omitempty"`
	StartsAt    time.Time         `json:"startsAt,omitzero"`
	EndsAt      time.Time         `json:"endsAt,omitzero"`
}

// Post sends alerts to POST /api/v2/alerts.
func (a *Alertmanager) Post(t testing.TB, alerts ...Alert) {
	t.Helper()
	a.post(t, "/api/v2/alerts", alerts, nil)
}

// Silence creates a silence matching labels exactly, for d, and returns
// its id.
func (a *Alertmanager) Silence(t testing.TB, labels map[string]string, d time.Duration, by, comment string) string {
	t.Helper()
	type matcher struct {
		Name    string `json:"name"`
		Value   string `json:"value"`
		IsRegex bool   `json:"isRegex"`
		IsEqual bool   `json:"isEqual"`
	}
	var ms []matcher
	for k, v := range labels {
		ms = append(ms, matcher{k, v, false, true})
	}
	body := map[string]any{"matchers": ms, "startsAt": time.Now().UTC(), "endsAt": time.Now().Add(d).UTC(), "createdBy": by, "comment": comment}
	var out struct {
		SilenceID string `json:"silenceID"`
	}
	a.post(t, "/api/v2/silences", body, &out)
	return out.SilenceID
}

func (a *Alertmanager) post(t testing.TB, path string, body, out any) {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(a.URL+path, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: %s: %s", path, resp.Status, strings.TrimSpace(buf.String()))
	}
	if out != nil {
		if err := json.Unmarshal(buf.Bytes(), out); err != nil {
			t.Fatalf("POST %s: %v: %s", path, err, buf.String())
		}
	}
}

// Prometheus is a running Prometheus.
type Prometheus struct {
	URL  string
	Peer *peer.Peer
}

// StartPrometheus runs prometheus with config and rule files (name →
// YAML, written beside the config), evaluating and resending to
// Alertmanager every second.
func StartPrometheus(t testing.TB, config string, rules map[string]string) *Prometheus {
	t.Helper()
	bin := peer.Need(t, "prometheus")
	dir := t.TempDir()
	for name, body := range rules {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfg, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := peer.ListenTCP(t)
	url := "http://" + addr
	p := peer.Start(t, "prometheus", peer.Spec{
		Args: []string{bin, "--config.file=" + cfg, "--storage.tsdb.path=" + filepath.Join(dir, "data"), "--web.listen-address=" + addr,
			"--rules.alert.resend-delay=1s", "--web.console.templates=" + dir, "--web.console.libraries=" + dir},
		Dir:    dir,
		Ready:  ready(url + "/-/ready"),
		Within: 60 * time.Second,
	})
	return &Prometheus{URL: url, Peer: p}
}
