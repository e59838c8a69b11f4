package satcmd

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/compile"
	"github.com/seamdc/seam/internal/evidence"
	"github.com/seamdc/seam/internal/peer"
	"github.com/seamdc/seam/internal/plan"
)

// uncappedPlan is the example's SAT plan with its holds at their full
// length: at a time scale of 1 it runs far longer than any browser
// takes to start, so the page always finds the run going.
func uncappedPlan(t *testing.T) string {
	t.Helper()
	p, _, err := compile.Dir(exampleDir, compile.Options{Level: plan.SAT, Module: "ma"})
	require.NoError(t, err)
	raw, err := plan.Encode(p)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "sat.json")
	require.NoError(t, os.WriteFile(path, raw, 0o644))
	return path
}

// headless starts Debian's chromium, network cut off but for loopback.
func headless(t *testing.T) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(peer.Need(t, "chromium")),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"),
		chromedp.WindowSize(1200, 900),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	t.Cleanup(cancel)
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(acancel)
	bctx, bcancel := chromedp.NewContext(actx)
	t.Cleanup(bcancel)
	return bctx
}

var liveShot = flag.String("live-screenshot", "", "write a screenshot of the live view, paused, to this PNG file")

var (
	operatorURL = regexp.MustCompile(`live view \(operator Ana: [^)]*\) at (http://\S+)`)
	viewerURL   = regexp.MustCompile(`live view \(read-only\) at (http://\S+)`)
)

// waitFor waits until stderr has a match of re, or the run ends.
func waitFor(t *testing.T, stderr *syncBuffer, code chan int, re *regexp.Regexp) []string {
	t.Helper()
	for {
		if m := re.FindStringSubmatch(stderr.String()); m != nil {
			return m
		}
		select {
		case c := <-code:
			t.Fatalf("the run ended (exit %d) before %s:\n%s", c, re, stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// The live view follows a simulated run in headless Chromium: the page
// loads with no console errors, its traces grow as samples arrive, and
// pause and abort from the page go through the run's own paths: the
// journal says Ana did them, from the live view.
func TestLiveViewInChromium(t *testing.T) {
	ctx := headless(t)
	out := filepath.Join(t.TempDir(), "ev")
	args := []string{uncappedPlan(t), "--sim", "--contracts", exampleDir, "--fixtures", fixturesDir,
		"--time-scale", "1", "--operator", "Ana", "--out", out, "--ui", "127.0.0.1:0"}
	var stdout, stderr syncBuffer
	code := make(chan int, 1)
	ctl := &control{interrupt: make(chan struct{}), kill: make(chan struct{})}
	go func() {
		code <- runCtx(context.Background(), args, &stdout, &stderr, strings.NewReader(""), os.LookupEnv, ctl)
	}()
	url := waitFor(t, &stderr, code, operatorURL)[1]

	var mu sync.Mutex
	var console []string
	msgs := chromedp.Console(ctx) // starts the browser and listens, before the page opens
	go func() {
		for m, err := range msgs {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.Type == chromedp.ConsoleWarning || m.IsException() {
				mu.Lock()
				console = append(console, fmt.Sprintf("%s %s:%d %s", m.Type, m.URL, m.Line+1, m.String()))
				mu.Unlock()
			}
		}
	}()
	wait := func(expr string) {
		t.Helper()
		_, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(2*time.Minute)))
		require.NoError(t, err, "waiting for %s\nstderr:\n%s", expr, stderr.String())
	}
	eval := func(expr string) int {
		t.Helper()
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](expr))
		require.NoError(t, err, expr)
		return n
	}
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(url)))
	wait(`document.body.dataset.status === "running" && Number(document.body.dataset.samples) >= 3`)
	n := eval(`Number(document.body.dataset.samples)`)
	wait(fmt.Sprintf(`Number(document.body.dataset.samples) >= %d`, n+5))
	assert.Positive(t, eval(`document.querySelectorAll("#traces svg path.line").length`), "a trace is drawn")
	assert.Positive(t, eval(`document.querySelectorAll("#traces svg line.limit").length`), "against its envelope")
	assert.Positive(t, eval(`document.querySelectorAll("#margins tbody tr").length`), "the interlock margins")
	assert.False(t, strings.Contains(eval0(t, ctx, `location.href`), "token="), "the token leaves the address bar")

	// pause: the button asks first
	require.NoError(t, chromedp.Do(ctx, chromedp.Click("#pause")))
	wait(`!document.getElementById("confirm").hidden`)
	require.NoError(t, chromedp.Do(ctx, chromedp.Click("#confirm-yes")))
	wait(`document.body.dataset.status === "paused"`)
	waitFor(t, &stderr, code, regexp.MustCompile(`PAUSED by Ana \(the live view\), load at 0 kW`))

	if *liveShot != "" {
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(*liveShot, png, 0o644))
	}
	// a viewer's tab sees the pause and has no buttons
	vctx, vcancel := chromedp.NewContext(ctx)
	defer vcancel()
	require.NoError(t, chromedp.Do(vctx, chromedp.Navigate(waitFor(t, &stderr, code, viewerURL)[1])))
	_, err := chromedp.Run(vctx, chromedp.Poll[bool](`document.body.dataset.status === "paused"`, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(2*time.Minute)))
	require.NoError(t, err)
	hidden, err := chromedp.Run(vctx, chromedp.Evaluate[bool](`document.getElementById("controls").hidden`))
	require.NoError(t, err)
	assert.True(t, hidden, "a viewer cannot pause or abort")
	vcancel()

	errs := eval(`window.__liveErrors.length`)
	mu.Lock()
	assert.Empty(t, console, "the page logs no errors")
	mu.Unlock()
	assert.Zero(t, errs)

	require.NoError(t, chromedp.Do(ctx, chromedp.Click("#abort")))
	wait(`!document.getElementById("confirm").hidden`)
	require.NoError(t, chromedp.Do(ctx, chromedp.Click("#confirm-yes")))
	select {
	case c := <-code:
		require.Equal(t, 3, c, "aborted\nstdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	case <-ctx.Done():
		t.Fatalf("the run did not end after the abort:\n%s", stderr.String())
	}
	assert.Contains(t, stdout.String(), "aborted (interrupt): aborted by Ana from the live view")

	raw, err := os.ReadFile(filepath.Join(out, evidence.JournalFile))
	require.NoError(t, err)
	var pauses, aborts int
	for _, line := range bytes.Split(bytes.TrimSpace(raw), []byte("\n")) {
		var rec struct {
			Kind string          `json:"kind"`
			Data json.RawMessage `json:"data"`
		}
		require.NoError(t, json.Unmarshal(line, &rec))
		switch rec.Kind {
		case "pause":
			pauses++
			assert.Contains(t, string(rec.Data), `"by":"Ana (the live view)"`)
		case "abort":
			aborts++
			assert.Contains(t, string(rec.Data), `aborted by Ana from the live view`)
		}
	}
	assert.Equal(t, 1, pauses, "the journal has the pause")
	assert.Equal(t, 1, aborts, "and the abort")
}

func eval0(t *testing.T, ctx context.Context, expr string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr))
	require.NoError(t, err, expr)
	return s
}

// A live view beyond this machine needs tokens someone configured.
func TestLiveViewRefusesBadSetups(t *testing.T) {
	p := examplePlan(t, plan.SAT)
	short := filepath.Join(t.TempDir(), "tokens")
	require.NoError(t, os.WriteFile(short, []byte("operator Ana 1234\n"), 0o600))
	for _, tc := range []struct {
		name  string
		extra []string
		says  string
	}{
		{"all interfaces without tokens", []string{"--ui", "0.0.0.0:0"}, "is not loopback"},
		{"a token file without --ui", []string{"--ui-token-file", short}, "--ui-token-file needs --ui"},
		{"a short token", []string{"--ui", "127.0.0.1:0", "--ui-token-file", short}, short + ":1: the token of Ana is 4 characters"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"run", p, "--sim", "--contracts", exampleDir, "--fixtures", fixturesDir,
				"--time-scale", e2eScale, "--out", filepath.Join(t.TempDir(), "ev")}, tc.extra...)
			code, _, stderr := sat(t, args...)
			assert.NotZero(t, code)
			assert.Contains(t, stderr, tc.says)
		})
	}
}
