package main_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/seamdc/seam/internal/alarm"
	"github.com/seamdc/seam/internal/alarm/amtest"
	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/drain"
	"github.com/seamdc/seam/internal/drain/facilityd"
	"github.com/seamdc/seam/internal/peer"
	"github.com/seamdc/seam/internal/peer/slurmtest"
)

// pager is the on-call's webhook: every notification it gets.
type pager struct {
	mu   sync.Mutex
	got  []paged
	srv  *httptest.Server
	body []string
}

type paged struct {
	at                time.Time
	alertname, status string
}

func newPager(t *testing.T) *pager {
	p := &pager{}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m alarm.WebhookMessage
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &m)
		p.mu.Lock()
		for _, a := range m.Alerts {
			p.got = append(p.got, paged{time.Now(), a.Labels["alertname"], a.Status})
		}
		p.mu.Unlock()
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *pager) paged(alertname string, after time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, g := range p.got {
		if g.alertname == alertname && g.status == "firing" && g.at.After(after) {
			return true
		}
	}
	return false
}

// The end-to-end test, every part a real program: sat sim serves
// the example site; Debian's Slurm defines all 864 nodes and runs slurmd
// for five; Debian's Prometheus scrapes facilityd and evaluates the
// generated rules; Debian's Alertmanager routes them; facilityd is the
// real binary.
//
// A pump of l2 trips → l2's CDU group controller raises redundancy lost
// → facilityd drains exactly l2's nodes (module mb); a running job keeps
// running (draining); the job that opted in gets USR1; an operator's own
// drain on one of them stays; the same alarm also arrives through
// Prometheus and Alertmanager and is taken once. Clearing the alarm
// releases nothing; a release while it is active is refused; an
// approved release returns the nodes, but not the operator's. Killing
// facilityd pages (its silence is an alarm). The journal verifies.
func TestEndToEnd(t *testing.T) {
	root := peer.Root(t)
	example := filepath.Join(root, "contracts/examples/threemodule")
	sat := peer.BuildGo(t, "./cmd/sat")
	fd := peer.BuildGo(t, "./cmd/facilityd")
	ctx := context.Background()

	// the simulated site
	simDir := t.TempDir()
	peer.Start(t, "sat sim", peer.Spec{Args: []string{sat, "sim", example, "--out", simDir, "--fixtures", filepath.Join(root, "fixtures")}, Dir: root,
		Ready: func(context.Context) error {
			_, err := os.Stat(filepath.Join(simDir, "control.url"))
			return err
		}})
	controlURL, err := os.ReadFile(filepath.Join(simDir, "control.url"))
	require.NoError(t, err)
	control := strings.TrimSpace(string(controlURL))

	// Slurm: every node of the inventory, slurmd for five of them
	c, _, err := contract.Load(example)
	require.NoError(t, err)
	_, err = c.ReadInventory(nil)
	require.NoError(t, err)
	g, _ := c.Graph()
	ix := alarm.NewIndex(g)
	all := ix.Nodes(alarm.Domain{Kind: alarm.Site, Value: "threemodule"})
	mb := ix.Nodes(alarm.Domain{Kind: alarm.Module, Value: "mb"})
	running := map[string]bool{"gpu-b-r01-n01": true, "gpu-b-r01-n02": true, "gpu-b-r02-n01": true, "gpu-b-r16-n18": true, "gpu-a-r01-n01": true}
	var nodes []slurmtest.Node
	for _, n := range all {
		nodes = append(nodes, slurmtest.Node{Name: n, Run: running[n]})
	}
	cluster := slurmtest.Start(t, slurmtest.Config{Nodes: nodes, Within: 120 * time.Second})
	slurm := cluster.Slurm()

	// a job running on an l2 node, one that opts in to checkpoint_now,
	// and an operator's own drain
	jobs := t.TempDir()
	require.NoError(t, os.Chmod(jobs, 0o777))
	script := filepath.Join(jobs, "train.sh")
	require.NoError(t, os.WriteFile(script, []byte("#!/bin/bash\ntrap 'echo checkpoint >> "+jobs+"/signals' USR1\ntouch "+jobs+"/trapped\nwhile true; do sleep 1 & wait; done\n"), 0o755))
	plain := strings.TrimSpace(cluster.Must("sbatch", "--parsable", "-w", "gpu-b-r01-n01", "-o", filepath.Join(jobs, "plain.out"), "--wrap", "sleep 900"))
	optIn := strings.TrimSpace(cluster.Must("sbatch", "--parsable", "-w", "gpu-b-r01-n02", "--comment=seam:checkpoint_now", "-o", filepath.Join(jobs, "opt.out"), script))
	require.Eventually(t, func() bool { _, err := os.Stat(filepath.Join(jobs, "trapped")); return err == nil }, 60*time.Second, 100*time.Millisecond)
	cluster.Must("scontrol", "update", "nodename=gpu-b-r02-n01", "state=drain", "reason=alice: bad DIMM")

	// the approver's key
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	signer, err := ssh.NewSignerFromKey(priv)
	require.NoError(t, err)
	block, err := ssh.MarshalPrivateKey(priv, "alice")
	require.NoError(t, err)
	keys := t.TempDir()
	key := filepath.Join(keys, "id_ed25519")
	require.NoError(t, os.WriteFile(key, pem.EncodeToMemory(block), 0o600))
	allowed := filepath.Join(keys, "allowed_signers")
	require.NoError(t, os.WriteFile(allowed, []byte(`alice namespaces="seam-facilityd" `+string(ssh.MarshalAuthorizedKey(signer.PublicKey()))), 0o644))

	// facilityd's doors: TLS, the webhook's and the reader's tokens
	crt, tlsKey := peer.SelfSigned(t, keys, "facilityd")
	webhookToken, readerToken := filepath.Join(keys, "webhook.token"), filepath.Join(keys, "reader.token")
	require.NoError(t, os.WriteFile(webhookToken, []byte("webhook-token-of-the-e2e-test\n"), 0o600))
	require.NoError(t, os.WriteFile(readerToken, []byte("reader-token-of-the-e2e-test\n"), 0o600))
	client := tlsClient(t, crt)

	// Alertmanager, with the Watchdog on its own short route
	pg := newPager(t)
	fdAddr := peer.ListenTCP(t) // bound by facilityd long after Alertmanager is told it
	base := "https://" + fdAddr
	am := amtest.StartAlertmanager(t, fmt.Sprintf(`route:
  receiver: pager
  group_by: [alertname, domain]
  group_wait: 0s
  group_interval: 1s
  repeat_interval: 1h
  routes:
  - matchers: ['alertname="Watchdog"']
    receiver: facilityd
    group_interval: 1s
    repeat_interval: 2s
  - matchers: ['receiver="facilityd"']
    receiver: facilityd
  - matchers: ['receiver="pager"']
    receiver: pager
receivers:
- name: facilityd
  webhook_configs:
  - url: https://%s/v1/alertmanager
    send_resolved: true
    http_config:
      authorization: {credentials_file: %q}
      tls_config: {ca_file: %q}
- name: pager
  webhook_configs:
  - url: %s
    send_resolved: true
`, fdAddr, webhookToken, crt, pg.srv.URL))

	// facilityd, the real binary
	state := t.TempDir()
	cfg := map[string]any{
		"contracts": example, "binding": simDir, "state_dir": state, "listen": fdAddr,
		"scheduler":    map[string]any{"kind": "slurm", "slurm_conf": cluster.Conf, "bin": slurm.Bin, "timeout": "20s"},
		"poll":         map[string]any{"period": "250ms", "silence": "5s"},
		"clear_for":    "3s",
		"checkpoint":   map[string]any{"enabled": true},
		"alarm_path":   map[string]any{"required": true, "watchdog": "10s"},
		"approvals":    map[string]any{"allowed_signers": allowed},
		"alertmanager": am.URL,
		"heartbeats":   []any{map[string]any{"name": "ctl-mb", "module": "mb", "timeout": "5s", "device": "ctl-mb", "point": "heartbeats"}},
		"reconcile":    "2s",
		"tls":          map[string]any{"cert_file": crt, "key_file": tlsKey},
		"auth":         map[string]any{"webhook_token_file": webhookToken, "reader_token_file": readerToken},
	}
	cfgFile := filepath.Join(state, "facilityd.json")
	b, _ := json.MarshalIndent(cfg, "", "  ")
	require.NoError(t, os.WriteFile(cfgFile, b, 0o644))
	fdPeer := peer.Start(t, "facilityd", peer.Spec{Args: []string{fd, "run", "--config", cfgFile}, Env: cluster.Env(), Within: 60 * time.Second,
		Ready: httpOK(client, base+"/readyz")})

	// Prometheus: scrapes facilityd, evaluates the generated rules
	amAddr := strings.TrimPrefix(am.URL, "http://")
	amtest.StartPrometheus(t, fmt.Sprintf(`global: {scrape_interval: 1s, evaluation_interval: 1s}
alerting:
  alertmanagers: [{static_configs: [{targets: [%q]}]}]
rule_files: [rules.yml]
scrape_configs:
- job_name: facilityd
  scheme: https
  authorization: {credentials_file: %q}
  tls_config: {ca_file: %q}
  static_configs: [{targets: [%q]}]
`, amAddr, readerToken, crt, fdAddr), map[string]string{"rules.yml": facilityd.PrometheusRules("facilityd", "")})

	status := func() facilityd.StatusDoc {
		var doc facilityd.StatusDoc
		resp, err := readerGet(client, base+"/v1/status", readerToken)
		require.NoError(t, err)
		defer resp.Body.Close()
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&doc))
		return doc
	}
	require.Eventually(t, func() bool { return status().AlarmPath == "alive" }, 60*time.Second, 200*time.Millisecond, "the Watchdog arrives")
	// slurmctld answers: scheduler_unreachable is 0
	assert.False(t, status().SchedulerUnreachable, status().SchedulerError)
	resp, err := readerGet(client, base+"/metrics", readerToken)
	require.NoError(t, err)
	metrics, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	assert.Contains(t, string(metrics), "\nseam_facilityd_scheduler_unreachable 0\n")

	// a webhook without the token, or with another, is refused and
	// nothing moves: no hold, no drain in Slurm
	before, err := slurm.Status(ctx, mb)
	require.NoError(t, err)
	forged := `{"version":"4","status":"firing","alerts":[{"status":"firing","labels":{"alertname":"SeamCoolingRedundancyLost","domain":"cooling_loop=l2"},"fingerprint":"forged"}]}`
	for _, bearer := range []string{"", "reader-token-of-the-e2e-test", "a-guess-at-the-webhook-token"} {
		req, err := http.NewRequest(http.MethodPost, base+"/v1/alertmanager", strings.NewReader(forged))
		require.NoError(t, err)
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := client.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "bearer %q", bearer)
	}
	assert.Empty(t, status().Holds, "a refused webhook holds nothing")
	st, err := slurm.Status(ctx, mb)
	require.NoError(t, err)
	for _, n := range mb {
		require.Equal(t, before.Nodes[n].Drained, st.Nodes[n].Drained, "%s: a refused webhook changes nothing in Slurm", n)
		require.Equal(t, before.Nodes[n].Reason, st.Nodes[n].Reason, "%s: a refused webhook changes nothing in Slurm", n)
	}

	// the pump trips
	tripped := time.Now()
	faultReq(t, http.MethodPost, control+"/v1/faults", `{"kind":"pump_trip","target":"l2/loop/cdu-1/p1"}`, http.StatusCreated)
	var drainedAt time.Time
	require.Eventually(t, func() bool {
		st, err := slurm.Status(ctx, mb)
		if err != nil {
			return false
		}
		for _, n := range mb {
			if !st.Nodes[n].Drained {
				return false
			}
		}
		drainedAt = time.Now()
		return true
	}, 30*time.Second, 100*time.Millisecond, "l2's nodes drained")
	t.Logf("pump trip to every node of mb drained: %s (the CDU confirms the redundancy loss after 2 s of site time)", drainedAt.Sub(tripped).Round(time.Millisecond))
	st, err = slurm.Status(ctx, all)
	require.NoError(t, err)
	for _, n := range all {
		ns := st.Nodes[n]
		switch {
		case n == "gpu-b-r02-n01":
			assert.Equal(t, "alice: bad DIMM", ns.Reason, "the operator's drain is not overwritten")
		case strings.HasPrefix(n, "gpu-b-"):
			assert.Equal(t, "facility:cooling_redundancy_lost:l2", ns.Reason, n)
		default:
			assert.False(t, ns.Drained, "%s is not on l2", n)
		}
	}
	assert.Equal(t, "draining", st.Nodes["gpu-b-r01-n01"].State, "the running job's node drains")
	assert.Equal(t, "RUNNING", jobState(cluster, plain), "drain, never kill")
	require.Eventually(t, func() bool {
		b, _ := os.ReadFile(filepath.Join(jobs, "signals"))
		return strings.Contains(string(b), "checkpoint")
	}, 20*time.Second, 100*time.Millisecond, "the opted-in job gets checkpoint_now")
	assert.Equal(t, "RUNNING", jobState(cluster, optIn))
	sig, _ := os.ReadFile(filepath.Join(jobs, "signals"))
	assert.Equal(t, 1, strings.Count(string(sig), "checkpoint"), "signalled once")

	// the same alarm through Prometheus and Alertmanager: one alarm, two sources
	l2 := func() alarm.Alarm {
		for _, a := range status().Alarms {
			if a.Type == alarm.CoolingRedundancyLost && a.Domain.String() == "cooling_loop=l2" {
				return a
			}
		}
		return alarm.Alarm{}
	}
	require.Eventually(t, func() bool {
		for _, s := range l2().Sources {
			if strings.HasPrefix(s, "alertmanager:") {
				return true
			}
		}
		return false
	}, 30*time.Second, 200*time.Millisecond, "Alertmanager delivers it")
	assert.Len(t, l2().Raises, 1, "taken once")

	owner := string(drain.FacilityOwner(alarm.CoolingRedundancyLost, alarm.Domain{Kind: alarm.CoolingLoop, Value: "l2"}))
	approve := func() (int, string) {
		out, err := peer.Run(60*time.Second, fd, "approve", "--addr", base, "--ca", crt, "--token-file", readerToken, "--action", "release", "--owner", owner,
			"--by", "alice", "--key", key, "--why", "pump 1 of l2's CDU 1 replaced")
		code := 0
		if err != nil {
			code = 1
			if m := regexp.MustCompile(`exit status (\d+)`).FindStringSubmatch(err.Error()); m != nil {
				code, _ = strconv.Atoi(m[1])
			}
			out = err.Error()
		}
		return code, out
	}
	code, out := approve()
	assert.Equal(t, facilityd.ExitRefused, code, out)
	assert.Contains(t, out, "cooling_redundancy_lost is active for cooling_loop=l2")

	// clearing the alarm releases nothing
	faultReq(t, http.MethodDelete, control+"/v1/faults?kind=pump_trip&target=l2/loop/cdu-1/p1", "", http.StatusNoContent)
	require.Eventually(t, func() bool { return !l2().Active }, 60*time.Second, 200*time.Millisecond, "the alarm clears (device and Alertmanager)")
	require.Eventually(t, func() bool {
		doc := status()
		for _, a := range doc.Alarms {
			if a.Type == alarm.CoolingRedundancyLost && a.Domain.String() == "cooling_loop=l2" {
				return !a.Active && doc.At.Sub(a.Cleared) > 3*time.Second
			}
		}
		return false
	}, 30*time.Second, 200*time.Millisecond, "facilityd's clock passes clear_for (3 s) after the clear")
	st, err = slurm.Status(ctx, mb)
	require.NoError(t, err)
	for _, n := range mb {
		require.True(t, st.Nodes[n].Drained, "%s: a cleared alarm releases nothing", n)
	}

	// an approved release returns them, but not the operator's
	code, out = approve()
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "approved by alice: 287 node(s) returned")
	assert.Contains(t, out, "left as an operator set them: gpu-b-r02-n01")
	st, err = slurm.Status(ctx, all)
	require.NoError(t, err)
	for _, n := range all {
		if n == "gpu-b-r02-n01" {
			assert.Equal(t, "alice: bad DIMM", st.Nodes[n].Reason)
			assert.True(t, st.Nodes[n].Drained)
			continue
		}
		assert.False(t, st.Nodes[n].Drained, n)
	}
	assert.Equal(t, "RUNNING", jobState(cluster, plain))

	// the journal holds every action, and verifies
	n, err := drain.VerifyJournals(state)
	require.NoError(t, err)
	require.Len(t, n, 1)

	// kill facilityd: its silence pages
	killed := time.Now()
	require.NoError(t, syscall.Kill(fdPeer.Pid(), syscall.SIGKILL))
	require.Eventually(t, func() bool { return pg.paged("SeamFacilitydDown", killed) }, 60*time.Second, 200*time.Millisecond, "facilityd's silence is an alarm")
	t.Logf("facilityd killed to the pager paged: %s", time.Since(killed).Round(time.Millisecond))
	_, err = drain.VerifyJournals(state)
	require.NoError(t, err, "a journal cut off by a kill verifies up to its last record")
}

// tlsClient trusts the certificate at crt.
func tlsClient(t *testing.T, crt string) *http.Client {
	pem, err := os.ReadFile(crt)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(pem))
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
}

// readerGet is a GET with the reader token in tokenFile.
func readerGet(c *http.Client, url, tokenFile string) (*http.Response, error) {
	tok, err := os.ReadFile(tokenFile)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
	return c.Do(req)
}

func httpOK(c *http.Client, url string) func(context.Context) error {
	return func(ctx context.Context) error {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := c.Do(req)
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

func faultReq(t *testing.T, method, url, body string, want int) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	require.Equal(t, want, resp.StatusCode, "%s %s: %s", method, url, b)
}

func jobState(c *slurmtest.Cluster, id string) string {
	out, _ := c.Run("squeue", "-h", "-j", id, "-o", "%T")
	if s := strings.TrimSpace(out); s != "" {
		return s
	}
	return "GONE"
}
