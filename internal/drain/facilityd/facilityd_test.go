package facilityd_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/alarm"
	"github.com/seamdc/seam/internal/drain/facilityd"
	"github.com/seamdc/seam/internal/peer"
)

var update = flag.Bool("update", false, "rewrite generated files")

// deploy/prometheus/facilityd-rules.yml is generated from the
// vocabulary, and Prometheus' promtool accepts it; amtool accepts
// deploy/alertmanager/alertmanager.yml.
func TestDeployFiles(t *testing.T) {
	root := peer.Root(t)
	rules := filepath.Join(root, "deploy/prometheus/facilityd-rules.yml")
	want := facilityd.PrometheusRules("facilityd", "1m")
	if *update {
		require.NoError(t, os.WriteFile(rules, []byte(want), 0o644))
	}
	got, err := os.ReadFile(rules)
	require.NoError(t, err)
	require.Equal(t, want, string(got), "deploy/prometheus/facilityd-rules.yml is stale: go test ./internal/drain/facilityd -update")
	out, err := peer.Run(30*time.Second, peer.Need(t, "promtool"), "check", "rules", rules)
	require.NoError(t, err, out)
	assert.Contains(t, out, "SUCCESS")
	out, err = peer.Run(30*time.Second, peer.Need(t, "amtool"), "check-config", filepath.Join(root, "deploy/alertmanager/alertmanager.yml"))
	require.NoError(t, err, out)
	assert.Contains(t, out, "SUCCESS")
	for _, f := range []string{"facilityd.example.json", "facilityd.demo.json"} {
		_, err := facilityd.LoadConfig(filepath.Join(root, "deploy", f))
		require.NoError(t, err, f)
	}
	unit, err := os.ReadFile(filepath.Join(root, "deploy/facilityd.service"))
	require.NoError(t, err)
	assert.Contains(t, string(unit), "ExecStart=/usr/local/bin/facilityd run --config /etc/seam/facilityd.json")
}

func TestConfigErrors(t *testing.T) {
	for name, tc := range map[string]struct{ body, want string }{
		"unknown field":       {"{\"contracts\": \"x\", \"state_dir\": \"s\", \"scheduler\": {\"kind\": \"slurm\"},\n\"stromm\": {}}", `f.json:2: unknown field "stromm": did you mean "storm"?`},
		"unknown inner field": {"{\"contracts\": \"x\", \"state_dir\": \"s\",\n\"scheduler\": {\"kind\": \"slurm\"},\n\"storm\": {\"max_node\": 10}}", `f.json:3: unknown field "max_node": did you mean "max_nodes"?`},
		"bad number":          {"{\"contracts\": \"x\", \"state_dir\": \"s\", \"scheduler\": {\"kind\": \"slurm\"},\n\"storm\": {\"max_nodes\": \"ten\"}}", `f.json:2: storm.max_nodes: want a number, got a JSON string`},
		"syntax":              {"{\n\"contracts\": \"x\",,\n}", "f.json:2:"},
		"no contracts":        {`{"state_dir": "s", "scheduler": {"kind": "slurm"}}`, "contracts: the site's contract directory is needed"},
		"unknown kind":        {`{"contracts": "x", "state_dir": "s", "scheduler": {"kind": "pbs"}}`, `scheduler.kind "pbs": slurm, kubernetes or none`},
		"unknown type":        {`{"contracts": "x", "state_dir": "s", "scheduler": {"kind": "none"}, "actions": {"pump_on_fire": "drain"}}`, `actions: "pump_on_fire" is no alarm type`},
		"bad action":          {`{"contracts": "x", "state_dir": "s", "scheduler": {"kind": "none"}, "actions": {"leak_detected": "kill"}}`, `"kill", want drain or notify`},
		"bad duration":        {"{\"contracts\": \"x\", \"state_dir\": \"s\", \"scheduler\": {\"kind\": \"none\"},\n\"storm\": {\"window\": \"1 minute\"}}", `f.json:2: window: "1 minute" is not a duration: write it as "90s", "1m" or "1h30m" (units ms, s, m, h): time: unknown unit`},
		"bad intake":          {`{"contracts": "x", "state_dir": "s", "scheduler": {"kind": "none"}, "intake": {"leak_detected": "smoke"}}`, `want direct, alertmanager or both`},
		"open beyond loopback": {`{"contracts": "x", "state_dir": "s", "scheduler": {"kind": "none"}, "listen": "0.0.0.0:9469",
			"heartbeats": [{"name": "bms-mb", "module": "mb", "timeout": "5s"}]}`,
			"listen 0.0.0.0:9469 is beyond loopback, where every door needs TLS and a token: set tls.cert_file and tls.key_file, auth.webhook_token_file, auth.reader_token_file, heartbeats[bms-mb].token_file"},
		"tokens without TLS": {`{"contracts": "x", "state_dir": "s", "scheduler": {"kind": "none"}, "listen": ":9469",
			"auth": {"webhook_token_file": "w", "reader_token_file": "r"}}`, "set tls.cert_file and tls.key_file (docs/facilityd.md, Doors)"},
		"half TLS":       {`{"contracts": "x", "state_dir": "s", "scheduler": {"kind": "none"}, "tls": {"cert_file": "c"}}`, "tls: cert_file and key_file are both needed"},
		"half heartbeat": {`{"contracts": "x", "state_dir": "s", "scheduler": {"kind": "none"}, "heartbeats": [{"name": "c", "module": "mb", "timeout": "5s", "device": "ctl-mb"}]}`, "needs both device and point"},
	} {
		_, err := facilityd.ParseConfig("f.json", []byte(tc.body))
		require.ErrorContains(t, err, tc.want, name)
	}
}

func demoConfig(t testing.TB, extra string) string {
	dir := t.TempDir()
	root := peer.Root(t)
	body := `{"contracts": "` + filepath.Join(root, "contracts/examples/threemodule") + `", "state_dir": "` + filepath.Join(dir, "state") + `",
	"listen": "127.0.0.1:0", "scheduler": {"kind": "none"}` + extra + `}`
	p := filepath.Join(dir, "facilityd.json")
	require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	return p
}

// The drill of make demo: what facilityd would do for l2's redundancy
// lost, exactly.
func TestDrill(t *testing.T) {
	var out, errb bytes.Buffer
	code := facilityd.Main([]string{"run", "--config", demoConfig(t, ""), "--dry-run", "--once", "--raise", "cooling_redundancy_lost@cooling_loop=l2",
		"--raise", "ups_on_battery@power_block=p1"}, &out, &errb)
	require.Equal(t, 0, code, errb.String())
	s := out.String()
	assert.Contains(t, s, "alarm cooling_redundancy_lost for cooling_loop=l2 (288 nodes)\n")
	assert.Contains(t, s, "would run: scontrol update nodename=gpu-b-r01-n[01-18],")
	assert.Contains(t, s, ",gpu-b-r16-n[01-18] state=drain reason=facility:cooling_redundancy_lost:l2\n")
	assert.Contains(t, s, "refused facility:ups_on_battery:power_block=p1: draining 288 more nodes would make 576 drained")
	// the hold on one line, its racks folded; the refusal with the whole
	// command that approves it
	assert.Contains(t, s, "hold facility:cooling_redundancy_lost:cooling_loop=l2: 288 nodes gpu-b-r[01-16]-n[01-18]\n")
	assert.Contains(t, s, "  to drain them: facilityd approve --action drain --owner facility:ups_on_battery:power_block=p1 --by NAME --key ~/.ssh/id_ed25519 --why WHY\n")
	assert.Equal(t, 1, strings.Count(s, "would run:"))
	for args, want := range map[string]string{
		"run --dry-run --once --raise leak@cooling_loop=l2":          `"leak" is no alarm type of the vocabulary: did you mean "leak_detected"?`,
		"run --dry-run --once --raise ups_on_batery@power_block=p1":  `did you mean "ups_on_battery"?`,
		"run --dry-run --once --raise leak_detected@cooling_loop=l9": "unknown domain cooling_loop=l9",
		"run --once":                     "--once is a drill: it needs --dry-run",
		"run --dry-run --once --raise x": "want TYPE@DOMAIN",
	} {
		var o, e bytes.Buffer
		a := append(strings.Fields(args), "--config", demoConfig(t, ""))
		assert.Equal(t, 1, facilityd.Main(a, &o, &e), args)
		assert.Contains(t, e.String(), want, args)
	}
}

// The HTTP interface and its bad input: a malformed webhook is 400 and
// counted, an alert for an unknown domain is refused and counted, an
// unsigned request is 403, an unknown heartbeat 404; nothing drains.
func TestHTTPBadInput(t *testing.T) {
	cfg, err := facilityd.LoadConfig(demoConfig(t, `, "heartbeats": [{"name": "bms-mb", "module": "mb", "timeout": "1m"}]`))
	require.NoError(t, err)
	d, err := facilityd.New(cfg, facilityd.Options{DryRun: true, Out: io.Discard})
	require.NoError(t, err)
	defer d.Close()
	srv := httptest.NewServer(d.Handler())
	defer srv.Close()
	get := func(path string) (int, string) {
		resp, err := http.Get(srv.URL + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	post := func(path, body string) (int, string) {
		resp, err := http.Post(srv.URL+path, "application/json", strings.NewReader(body))
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, _ := get("/readyz")
	assert.Equal(t, http.StatusServiceUnavailable, code, "not ready before Run")
	code, _ = post("/v1/alertmanager", `{"version":"4","alerts":[{"status":"firing","labels":{"alertname":"SeamLeakDetected","domain":"cooling_loop=l2"},"fingerprint":"1"}]}`)
	assert.Equal(t, http.StatusServiceUnavailable, code, "while starting: Alertmanager retries")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { _ = d.Run(ctx); close(done) }()
	require.Eventually(t, func() bool { c, _ := get("/readyz"); return c == 200 }, 10*time.Second, 10*time.Millisecond)
	require.Eventually(t, func() bool { c, _ := get("/healthz"); return c == 200 }, 10*time.Second, 10*time.Millisecond)

	code, _ = post("/v1/alertmanager", `{"version":"4","alerts":[`)
	assert.Equal(t, http.StatusBadRequest, code)
	code, body := post("/v1/alertmanager", `{"version":"4","alerts":[{"status":"firing","labels":{"alertname":"SeamLeakDetected","domain":"cooling_loop=l7"},"fingerprint":"2"}]}`)
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "unknown domain cooling_loop=l7")
	code, body = post("/v1/requests", `{"request": {"format": "seam.facilityd-request/v1"}, "signature": "trust me"}`)
	assert.Equal(t, http.StatusForbidden, code, body)
	code, _ = post("/v1/requests", `not json`)
	assert.Equal(t, http.StatusBadRequest, code)
	code, _ = post("/v1/heartbeats/bms-mx", ``)
	assert.Equal(t, http.StatusNotFound, code)
	code, _ = post("/v1/heartbeats/bms-mb", ``)
	assert.Equal(t, http.StatusNoContent, code)

	_, metrics := get("/metrics")
	for _, want := range []string{
		`seam_facilityd_intake_errors_total{reason="malformed",source="alertmanager"} 1`,
		`seam_facilityd_intake_errors_total{reason="unmapped",source="alertmanager"} 1`,
		`seam_facilityd_intake_errors_total{reason="signature",source="request"} 1`,
		`seam_facilityd_intake_errors_total{reason="malformed",source="request"} 1`,
		`seam_facilityd_intake_errors_total{reason="unknown",source="heartbeat"} 1`,
		`seam_facilityd_heartbeat_timestamp_seconds `,
	} {
		assert.Contains(t, metrics, want)
	}
	_, status := get("/v1/status")
	var doc facilityd.StatusDoc
	require.NoError(t, json.Unmarshal([]byte(status), &doc))
	assert.Empty(t, doc.Holds, "nothing drains on bad input")
	cancel()
	<-done
}

// Which alarms act directly and which only through Prometheus and
// Alertmanager is configuration (intake): "direct" takes devices, traps,
// heartbeats and facilityd's own, never Alertmanager; "alertmanager"
// takes only Alertmanager (and facilityd's own); "both" and unlisted
// types take every source.
func TestIntake(t *testing.T) {
	cfg, err := facilityd.ParseConfig("f.json", []byte(`{"contracts": "x", "state_dir": "s", "scheduler": {"kind": "none"},
		"intake": {"leak_detected": "direct", "high_supply_temp": "alertmanager", "low_flow": "both"}}`))
	require.NoError(t, err)
	for _, tc := range []struct {
		typ  alarm.Type
		kind alarm.SourceKind
		want bool
	}{
		{alarm.LeakDetected, alarm.FromDevice, true},
		{alarm.LeakDetected, alarm.FromTrap, true},
		{alarm.LeakDetected, alarm.FromAlertmanager, false},
		{alarm.HighSupplyTemp, alarm.FromDevice, false},
		{alarm.HighSupplyTemp, alarm.FromTrap, false},
		{alarm.HighSupplyTemp, alarm.FromAlertmanager, true},
		{alarm.HighSupplyTemp, alarm.FromFacilityd, true},
		{alarm.LowFlow, alarm.FromDevice, true},
		{alarm.LowFlow, alarm.FromAlertmanager, true},
		{alarm.CoolingRedundancyLost, alarm.FromDevice, true},
		{alarm.CoolingRedundancyLost, alarm.FromAlertmanager, true},
	} {
		assert.Equal(t, tc.want, cfg.Accepts(tc.typ, tc.kind), "%s from %s", tc.typ, tc.kind)
	}
}

// A configuration that maps a severe alarm to no nodes (a trap rule for
// the controls module, which cools and powers nothing) is a start-up
// problem, logged, counted and raised as unmapped_alarm; facilityd
// starts anyway and drains nothing for it.
func TestSevereAlarmMappedToNoNodes(t *testing.T) {
	cfg, err := facilityd.LoadConfig(demoConfig(t, `, "traps": {"listen": "127.0.0.1:0", "communities": ["env:SEAM_TEST_COMMUNITY"],
		"rules": [{"oid": "1.3.6.1.4.1.99999.1", "type": "leak_detected", "active": true, "domain": "module=ctl"}]}`))
	require.NoError(t, err)
	d, err := facilityd.New(cfg, facilityd.Options{DryRun: true, Out: io.Discard,
		LookupEnv: func(string) (string, bool) { return "s3cret", true }})
	require.NoError(t, err)
	defer d.Close()
	require.Len(t, d.Problems(), 1)
	assert.Contains(t, d.Problems()[0], "trap rule 1.3.6.1.4.1.99999.1 raises leak_detected for module=ctl, which the inventory maps to no nodes")
	u, ok := d.Stream.Get(alarm.UnmappedAlarm, alarm.Domain{Kind: alarm.Module, Value: "ctl"})
	require.True(t, ok)
	assert.True(t, u.Active)
	assert.Empty(t, d.Ctl.Snapshot().Holds)
}
