package facilityd_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/drain/facilityd"
	"github.com/seamdc/seam/internal/peer"
)

// tokens writes one token file per name (0600) and returns the files
// and the tokens.
func tokens(t *testing.T, names ...string) (files, values map[string]string) {
	dir := t.TempDir()
	files, values = map[string]string{}, map[string]string{}
	for _, n := range names {
		values[n] = "token-of-" + n + "-0123456789abcdef"
		files[n] = filepath.Join(dir, n)
		require.NoError(t, os.WriteFile(files[n], []byte(values[n]+"\n"), 0o600))
	}
	return files, values
}

// Every door of facilityd's HTTP interface takes its bearer token, over
// TLS: an unauthenticated or wrongly authenticated webhook, a forged
// resolve, a heartbeat without its controller's own token and a read of
// the status or metrics are each refused (401, naming the door, never a
// token or a path) and nothing moves; the right tokens work.
func TestDoors(t *testing.T) {
	files, tok := tokens(t, "webhook", "reader", "bms-ma", "bms-mb")
	crt, key := peer.SelfSigned(t, t.TempDir(), "facilityd")
	port := peer.ListenTCP(t)
	cfgFile := demoConfig(t, `, "auth": {"webhook_token_file": "`+files["webhook"]+`", "reader_token_file": "`+files["reader"]+`"},
		"tls": {"cert_file": "`+crt+`", "key_file": "`+key+`"},
		"heartbeats": [{"name": "bms-ma", "module": "ma", "timeout": "1m", "token_file": "`+files["bms-ma"]+`"},
			{"name": "bms-mb", "module": "mb", "timeout": "1m", "token_file": "`+files["bms-mb"]+`"},
			{"name": "ctl-mc", "module": "mc", "timeout": "1m", "device": "ctl-mc", "point": "heartbeats"}]`)
	b, err := os.ReadFile(cfgFile)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(cfgFile, bytes.Replace(b, []byte(`"listen": "127.0.0.1:0"`), []byte(`"listen": "`+port+`"`), 1), 0o644))

	cfg, err := facilityd.LoadConfig(cfgFile)
	require.NoError(t, err)
	var errb bytes.Buffer
	d, err := facilityd.New(cfg, facilityd.Options{Log: slog.New(slog.NewTextHandler(&errb, nil))})
	require.NoError(t, err)
	defer d.Close()
	srv, ln, err := facilityd.Listen(cfg, d.Handler())
	require.NoError(t, err)
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = d.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	pem, err := os.ReadFile(crt)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(pem))
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	do := func(method, path, bearer, body string) (int, string) {
		req, err := http.NewRequest(method, "https://"+port+path, strings.NewReader(body))
		require.NoError(t, err)
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	require.Eventually(t, func() bool { c, _ := do("GET", "/readyz", "", ""); return c == 200 }, 30*time.Second, 20*time.Millisecond, errb.String())
	status := func() facilityd.StatusDoc {
		code, body := do("GET", "/v1/status", tok["reader"], "")
		require.Equal(t, 200, code, body)
		var doc facilityd.StatusDoc
		require.NoError(t, json.Unmarshal([]byte(body), &doc))
		return doc
	}

	// plain HTTP is no way in
	resp, err := http.Get("http://" + port + "/v1/status")
	if err == nil {
		resp.Body.Close()
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "plain HTTP to a TLS listener")
	}

	firing := `{"version":"4","alerts":[{"status":"firing","labels":{"alertname":"SeamLeakDetected","domain":"cooling_loop=l2"},"fingerprint":"1"}]}`
	for _, bearer := range []string{"", "wrong-token-0123456789abcdef", tok["reader"], tok["bms-ma"]} {
		code, body := do("POST", "/v1/alertmanager", bearer, firing)
		assert.Equal(t, http.StatusUnauthorized, code, "webhook with %q", bearer)
		assert.Contains(t, body, "alertmanager needs its bearer token")
		for _, secret := range append(values(tok), files["webhook"]) {
			assert.NotContains(t, body, secret, "a refusal names no token and no path")
		}
	}
	doc := status()
	assert.Empty(t, doc.Holds, "an unauthenticated webhook moves nothing")
	assert.Empty(t, doc.Alarms)

	code, body := do("POST", "/v1/alertmanager", tok["webhook"], firing)
	require.Equal(t, http.StatusOK, code, body)
	require.Eventually(t, func() bool { return len(status().Holds) > 0 }, 10*time.Second, 20*time.Millisecond, "the right token drains")
	held := status().Holds

	// a forged resolve: refused, the alarm stays and so do the holds
	resolved := strings.Replace(firing, `"status":"firing"`, `"status":"resolved"`, 1)
	code, _ = do("POST", "/v1/alertmanager", "", resolved)
	assert.Equal(t, http.StatusUnauthorized, code)
	code, _ = do("POST", "/v1/alertmanager", tok["bms-mb"], resolved)
	assert.Equal(t, http.StatusUnauthorized, code)
	doc = status()
	assert.Equal(t, held, doc.Holds, "a forged resolve moves nothing")
	require.NotEmpty(t, doc.Alarms)
	assert.True(t, doc.Alarms[0].Active)

	// heartbeats: each controller's own token, and no other
	for _, tc := range []struct {
		name, bearer string
		code         int
	}{
		{"bms-ma", "", http.StatusUnauthorized},
		{"bms-ma", tok["bms-mb"], http.StatusUnauthorized},
		{"bms-ma", tok["webhook"], http.StatusUnauthorized},
		{"bms-ma", tok["bms-ma"], http.StatusNoContent},
		{"bms-mb", tok["bms-ma"], http.StatusUnauthorized},
		{"bms-mb", tok["bms-mb"], http.StatusNoContent},
		{"ctl-mc", "", http.StatusForbidden},            // its device counter beats for it, nothing over HTTP
		{"ctl-mc", tok["bms-mb"], http.StatusForbidden}, // not even with a token
	} {
		code, body := do("POST", "/v1/heartbeats/"+tc.name, tc.bearer, "")
		assert.Equal(t, tc.code, code, "%s with the token of %q: %s", tc.name, tc.bearer, body)
	}

	// the reader's doors
	for _, path := range []string{"/v1/status", "/metrics"} {
		code, _ := do("GET", path, "", "")
		assert.Equal(t, http.StatusUnauthorized, code, path)
		code, _ = do("GET", path, tok["webhook"], "")
		assert.Equal(t, http.StatusUnauthorized, code, "%s with the webhook's token", path)
	}
	code, metrics := do("GET", "/metrics", tok["reader"], "")
	require.Equal(t, 200, code)
	assert.Contains(t, metrics, `seam_facilityd_intake_errors_total{reason="token",source="alertmanager"} 6`)
	assert.Contains(t, metrics, `seam_facilityd_intake_errors_total{reason="token",source="heartbeat"} 4`)
	assert.Contains(t, metrics, `seam_facilityd_intake_errors_total{reason="counter",source="heartbeat"} 2`)
	for _, secret := range values(tok) {
		assert.NotContains(t, metrics, secret)
		assert.NotContains(t, errb.String(), secret, "no token in the log")
	}
}

func values(m map[string]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// A token file every user can read is refused at start, saying how to
// fix it; so is a short one.
func TestTokenFiles(t *testing.T) {
	files, _ := tokens(t, "webhook")
	require.NoError(t, os.Chmod(files["webhook"], 0o644))
	cfg, err := facilityd.LoadConfig(demoConfig(t, `, "auth": {"webhook_token_file": "`+files["webhook"]+`"}`))
	require.NoError(t, err)
	_, err = facilityd.New(cfg, facilityd.Options{DryRun: true, Out: io.Discard})
	require.ErrorContains(t, err, "auth.webhook_token_file: "+files["webhook"]+" is readable by every user of the machine (mode -rw-r--r--): chmod o-r")
	require.NoError(t, os.Chmod(files["webhook"], 0o600))
	require.NoError(t, os.WriteFile(files["webhook"], []byte("short\n"), 0o600))
	_, err = facilityd.New(cfg, facilityd.Options{DryRun: true, Out: io.Discard})
	require.ErrorContains(t, err, "holds a token of 5 characters: use at least 16")
}

// With tls.client_ca_file, a client that presents a certificate must
// present one that CA signed; one that presents none still needs its
// token, as every client does.
func TestMutualTLS(t *testing.T) {
	files, tok := tokens(t, "webhook", "reader")
	dir := t.TempDir()
	crt, key := peer.SelfSigned(t, dir, "facilityd")
	clientCrt, clientKey := peer.SelfSigned(t, dir, "alertmanager")
	strangerCrt, strangerKey := peer.SelfSigned(t, dir, "stranger")
	port := peer.ListenTCP(t)
	cfgFile := demoConfig(t, `, "auth": {"webhook_token_file": "`+files["webhook"]+`", "reader_token_file": "`+files["reader"]+`"},
		"tls": {"cert_file": "`+crt+`", "key_file": "`+key+`", "client_ca_file": "`+clientCrt+`"}`)
	b, err := os.ReadFile(cfgFile)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(cfgFile, bytes.Replace(b, []byte(`"listen": "127.0.0.1:0"`), []byte(`"listen": "`+port+`"`), 1), 0o644))
	cfg, err := facilityd.LoadConfig(cfgFile)
	require.NoError(t, err)
	d, err := facilityd.New(cfg, facilityd.Options{DryRun: true, Out: io.Discard})
	require.NoError(t, err)
	defer d.Close()
	srv, ln, err := facilityd.Listen(cfg, d.Handler())
	require.NoError(t, err)
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()

	pem, err := os.ReadFile(crt)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(pem))
	status := func(cert, key string) (int, error) {
		tc := &tls.Config{RootCAs: pool}
		if cert != "" {
			pair, err := tls.LoadX509KeyPair(cert, key)
			require.NoError(t, err)
			tc.Certificates = []tls.Certificate{pair}
		}
		c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: tc}}
		req, _ := http.NewRequest(http.MethodGet, "https://"+port+"/healthz", nil)
		req.Header.Set("Authorization", "Bearer "+tok["reader"])
		resp, err := c.Do(req)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	code, err := status(clientCrt, clientKey)
	require.NoError(t, err, "the CA's client")
	assert.NotZero(t, code)
	_, err = status(strangerCrt, strangerKey)
	require.Error(t, err, "a certificate another CA signed is refused in the handshake")
	code, err = status("", "")
	require.NoError(t, err, "no certificate: the token decides")
	assert.NotZero(t, code)
}
