package liveview

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/evidence"
	"github.com/seamdc/seam/internal/runner"
)

// control records what the page asked; the end-to-end test in satcmd
// drives a real run instead.
type control struct {
	mu    sync.Mutex
	calls []string
	err   error
}

func (c *control) Pause(by string) error   { return c.call("pause " + by) }
func (c *control) Unpause(by string) error { return c.call("resume " + by) }
func (c *control) AbortBy(by, via string)  { _ = c.call("abort " + by + " from " + via) }
func (c *control) call(s string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, s)
	return c.err
}

var (
	opTok   = Token{Role: Operator, Name: "Ana", Value: strings.Repeat("a", 32)}
	viewTok = Token{Role: Viewer, Name: "Ben", Value: strings.Repeat("b", 32)}
)

func newServer(t testing.TB, queue int) (*Server, *httptest.Server, *control) {
	t.Helper()
	ctl := &control{}
	s, err := New(Config{Tokens: []Token{opTok, viewTok}, Control: ctl, ClientQueue: queue, WriteTimeout: time.Minute})
	require.NoError(t, err)
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(func() { s.Close(); hs.Close() })
	return s, hs, ctl
}

// stream is an SSE client.
type stream struct {
	body io.Closer
	r    *bufio.Reader
}

func openStream(t testing.TB, url, token string) *stream {
	t.Helper()
	req, err := http.NewRequest("GET", url+"/events?token="+token, nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	t.Cleanup(func() { resp.Body.Close() })
	return &stream{body: resp.Body, r: bufio.NewReader(resp.Body)}
}

// next is the data of the next message.
func (s *stream) next(t testing.TB) map[string]any {
	t.Helper()
	var data string
	for {
		line, err := s.r.ReadString('\n')
		require.NoError(t, err)
		line = strings.TrimRight(line, "\n")
		if line == "" && data != "" {
			var m map[string]any
			require.NoError(t, json.Unmarshal([]byte(data), &m))
			return m
		}
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			data += d
		}
	}
}

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func sampleEvent(seq int64, v float64) runner.Event {
	return runner.Event{Kind: runner.EventSamples, Seq: seq, At: t0.Add(time.Duration(seq) * time.Second),
		Samples: []evidence.Sample{{Channel: "p1/ma/voltage", Time: t0.Add(time.Duration(seq) * time.Second), Value: v, Quality: "good"}}}
}

func TestEventStreamStartsWithTheStateThenFollows(t *testing.T) {
	s, hs, _ := newServer(t, 0)
	lo, hi := 380.0, 440.0
	s.Observe(runner.Event{Kind: runner.EventRun, Seq: 1, Cases: []runner.CaseSummary{{ID: "c1", Title: "one"}}})
	s.Observe(runner.Event{Kind: runner.EventCase, Seq: 2, Case: &runner.CaseView{ID: "c1", Index: 1, Of: 1,
		Envelopes: []runner.Envelope{{Check: "k", Channel: "p1/ma/voltage", Lo: &lo, Hi: &hi}}}})
	s.Observe(sampleEvent(3, 410))

	st := openStream(t, hs.URL, viewTok.Value)
	hello := st.next(t)
	assert.Equal(t, "hello", hello["kind"])
	assert.Equal(t, "viewer", hello["role"])
	assert.Equal(t, "Ben", hello["name"])
	state := hello["state"].(map[string]any)
	assert.Equal(t, Running, state["status"])
	assert.EqualValues(t, 3, state["seq"])
	assert.Len(t, state["traces"].(map[string]any)["p1/ma/voltage"], 1)

	s.Observe(sampleEvent(4, 411))
	ev := st.next(t)
	assert.Equal(t, "samples", ev["kind"])
	assert.EqualValues(t, 4, ev["seq"])
	assert.InDelta(t, 411, ev["samples"].([]any)[0].(map[string]any)["Value"], 1e-9)
	s.Observe(runner.Event{Kind: runner.EventPaused, Seq: 5, By: "Ana (the live view)"})
	assert.Equal(t, "paused", st.next(t)["kind"])
	snap := s.Snapshot()
	assert.Equal(t, Paused, snap.Status)
	assert.Equal(t, "Ana (the live view)", snap.By)
	assert.EqualValues(t, 2, snap.Samples)

	// the run's end reaches the page though the server closes at once
	s.Observe(runner.Event{Kind: runner.EventEnd, Seq: 6, Outcome: "aborted", Text: "interrupt: aborted by Ana from the live view"})
	<-s.Ended()
	s.Close()
	end := st.next(t)
	assert.Equal(t, "end", end["kind"])
	assert.Equal(t, "aborted", end["outcome"])
}

func post(t *testing.T, url, action string, hdr map[string]string, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("POST", url+"/api/"+action, strings.NewReader(body))
	require.NoError(t, err)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(raw)
}

func TestTokensRefusedAndAccepted(t *testing.T) {
	_, hs, ctl := newServer(t, 0)
	yes := `{"confirmed":true}`
	for _, tc := range []struct {
		name   string
		action string
		hdr    map[string]string
		query  string
		body   string
		code   int
		says   string
	}{
		{"no token", "pause", nil, "", yes, 401, "no valid token"},
		{"a wrong token", "pause", map[string]string{TokenHeader: strings.Repeat("c", 32)}, "", yes, 401, "no valid token"},
		{"the operator's token in the query, not the header", "pause", nil, "?token=" + opTok.Value, yes, 401, "X-Seam-Token header"},
		{"a viewer's token", "pause", map[string]string{TokenHeader: viewTok.Value}, "", yes, 403, "Ben has a viewer's token"},
		{"another site's page", "abort", map[string]string{TokenHeader: opTok.Value, "Origin": "http://evil.example"}, "", yes, 403, "another site"},
		{"not confirmed", "abort", map[string]string{TokenHeader: opTok.Value}, "", `{}`, 400, "confirmed"},
		{"no such action", "undrain", map[string]string{TokenHeader: opTok.Value}, "", yes, 404, "pause, resume or abort"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := post(t, hs.URL, tc.action+tc.query, tc.hdr, tc.body)
			assert.Equal(t, tc.code, code, body)
			assert.Contains(t, body, tc.says)
		})
	}
	assert.Empty(t, ctl.calls, "nothing refused reached the run")

	code, body := post(t, hs.URL, "pause", map[string]string{TokenHeader: opTok.Value, "Origin": hs.URL}, yes)
	assert.Equal(t, 200, code, body)
	code, body = post(t, hs.URL, "abort", map[string]string{TokenHeader: opTok.Value}, yes)
	assert.Equal(t, 200, code, body)
	assert.Equal(t, []string{"pause Ana (the live view)", "abort Ana from the live view"}, ctl.calls)

	ctl.err = errors.New("the run is already paused: type r to resume")
	code, body = post(t, hs.URL, "pause", map[string]string{TokenHeader: opTok.Value}, yes)
	assert.Equal(t, http.StatusConflict, code)
	assert.Contains(t, body, "already paused", "the run's own refusal reaches the page")

	for _, path := range []string{"/events", "/events?token=nope", "/api/state"} {
		resp, err := http.Get(hs.URL + path)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, 401, resp.StatusCode, path)
	}
	resp, err := http.Get(hs.URL + "/api/state?token=" + viewTok.Value)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, 200, resp.StatusCode, "a viewer may watch")
}

func TestNonLoopbackRefused(t *testing.T) {
	for _, tc := range []struct {
		addr       string
		configured bool
		ok         bool
	}{
		{"127.0.0.1:8642", false, true},
		{"[::1]:8642", false, true},
		{"localhost:0", false, true},
		{":8642", false, false},
		{"0.0.0.0:8642", false, false},
		{"192.0.2.7:8642", false, false},
		{"192.0.2.7:8642", true, true},
		{"8642", false, false},
	} {
		err := CheckAddr(tc.addr, tc.configured)
		if tc.ok {
			assert.NoError(t, err, tc.addr)
		} else {
			assert.Error(t, err, tc.addr)
		}
		if err != nil && tc.addr != "8642" {
			assert.Contains(t, err.Error(), "--ui-token-file")
		}
	}
}

func TestReadTokens(t *testing.T) {
	good := strings.Repeat("0123456789abcdef", 2)
	for _, tc := range []struct{ name, text, err string }{
		{"good", "# tokens\noperator Ana " + good + "\n\nviewer Ben " + good + "ff\n", ""},
		{"a role that is not one", "admin Ana " + good + "\n", "tokens:1: the role is operator or viewer"},
		{"too short", "operator Ana 1234\n", "tokens:1: the token of Ana is 4 characters"},
		{"two fields", "\noperator " + good + "\n", "tokens:2: want"},
		{"shared", "operator Ana " + good + "\nviewer Ben " + good + "\n", "tokens:2: the same token as line 1"},
		{"empty", "# none\n", "no tokens"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "tokens")
			require.NoError(t, os.WriteFile(path, []byte(tc.text), 0o600))
			toks, err := ReadTokens(path)
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, []Token{{Operator, "Ana", good}, {Viewer, "Ben", good + "ff"}}, toks)
		})
	}
	_, err := New(Config{Tokens: []Token{viewTok}, Control: &control{}})
	assert.ErrorContains(t, err, "no operator token")
}

// A browser that stops reading is cut off; the run's events keep
// flowing to the others and Observe never waits.
func TestSlowClientIsDroppedNotWaitedFor(t *testing.T) {
	s, hs, _ := newServer(t, 8)
	// the slow one connects and then never reads
	req, err := http.NewRequest("GET", hs.URL+"/events?token="+viewTok.Value, nil)
	require.NoError(t, err)
	slow, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer slow.Body.Close()
	fast := openStream(t, hs.URL, opTok.Value)
	fast.next(t) // hello
	require.Equal(t, 2, s.Clients())

	big := strings.Repeat("x", 16<<10) // fills the socket buffers quickly
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	seq := int64(0)
	for s.Snapshot().DroppedClients == 0 {
		require.NoError(t, ctx.Err(), "the slow client was never dropped")
		seq++
		ev := sampleEvent(seq, float64(seq))
		ev.Text = big
		s.Observe(ev) // returns at once whatever the browsers do
		got := fast.next(t)
		require.EqualValues(t, seq, got["seq"], "the fast client gets every event, in order")
	}
	assert.Equal(t, 1, s.Clients(), "the fast one stays")
	assert.EqualValues(t, 1, s.Snapshot().DroppedClients)
}

// The page loads nothing from anywhere else.
func TestPageHasNoExternalAssets(t *testing.T) {
	_, hs, _ := newServer(t, 0)
	resp, err := http.Get(hs.URL + "/")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, 200, resp.StatusCode)
	assert.Contains(t, resp.Header.Get("Content-Security-Policy"), "default-src 'none'")
	assert.Equal(t, "DENY", resp.Header.Get("X-Frame-Options"))
	url := regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+`)
	require.NoError(t, fs.WalkDir(page, "page", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		raw, err := page.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range url.FindAllString(string(raw), -1) {
			assert.Equal(t, "http://www.w3.org", m, "%s refers to %s", path, m)
		}
		return nil
	}))
}
