package report

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seamdc/seam/internal/peer"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

var screenshots = flag.String("screenshots", "", "also write screenshots of the report TestHTMLInChromium opens to this directory")

// chromium finds the browser that .ci/run installs (Debian's chromium).
func chromium(t *testing.T) string { return peer.Need(t, "chromium") }

// page is what the browser saw when it opened a report.
type page struct {
	console []string // console errors, warnings and uncaught exceptions
	plots   int      // <svg> elements in figure.plot
	cases   int      // article.case elements
	png     []byte   // full-page screenshot
}

// browser starts headless Chromium with the network cut off (every host
// resolves to nothing) and returns a tab's context.
func browser(t *testing.T) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium(t)),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND"),
		chromedp.WindowSize(1200, 900),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(acancel)
	bctx, bcancel := chromedp.NewContext(actx)
	t.Cleanup(bcancel)
	return bctx
}

// openReport opens a report file in headless Chromium and reads the
// page: console messages, plots, cases and a full-page screenshot.
func openReport(t *testing.T, path string) page {
	t.Helper()
	abs, err := filepath.Abs(path)
	require.NoError(t, err)
	bctx, bcancel := context.WithCancel(browser(t))
	defer bcancel()
	var mu sync.Mutex
	var p page
	msgs := chromedp.Console(bctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range msgs {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.Type == chromedp.ConsoleWarning || m.IsException() {
				mu.Lock()
				p.console = append(p.console, fmt.Sprintf("%s %s:%d %s", m.Type, m.URL, m.Line+1, m.String()))
				mu.Unlock()
			}
		}
	}()
	require.NoError(t, chromedp.Do(bctx, chromedp.Navigate("file://"+abs)))
	p.plots, err = chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelectorAll("figure.plot svg").length`))
	require.NoError(t, err)
	p.cases, err = chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelectorAll("article.case").length`))
	require.NoError(t, err)
	p.png, err = chromedp.Run(bctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	bcancel()
	<-done
	mu.Lock()
	defer mu.Unlock()
	return p
}

// docShots are the screenshots of the SAT runbook: file → element.
var docShots = map[string]string{
	"report-integrity.png":    "#integrity",
	"report-summary.png":      "#summary",
	"report-traceability.png": "#traceability",
	"report-witnesses.png":    "#witnesses",
	"report-case-failed.png":  `article.case[id$=".transient.training-voltage"]`,
	"report-case-heat.png":    `article.case[id$=".transient.training-heat"]`,
	"report-case-event.png":   `article.case[id$=".failure.feed-a-loss"]`,
}

// shoot opens the report at path and writes a screenshot of each
// element of shots that the page has into dir, and of its first screen
// as top.
func shoot(t *testing.T, path, dir, top string, shots map[string]string) {
	t.Helper()
	abs, err := filepath.Abs(path)
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	ctx := browser(t)
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate("file://"+abs)))
	for name, sel := range shots {
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](fmt.Sprintf("document.querySelectorAll(%q).length", sel)))
		require.NoError(t, err)
		if n == 0 {
			continue
		}
		png, err := chromedp.Run(ctx, chromedp.Screenshot(chromedp.CSS(sel)))
		require.NoError(t, err, name)
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), png, 0o644))
	}
	if top != "" {
		png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, top), png, 0o644))
	}
}

// inkStats decodes a PNG and reports the share of pixels that are not
// near-white, and how many of them carry the measured line's blue.
func inkStats(t *testing.T, b []byte) (ink float64, blue int, bounds image.Rectangle) {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(b))
	require.NoError(t, err)
	bounds = img.Bounds()
	var n, total int
	for y := bounds.Min.Y; y < bounds.Max.Y; y++ {
		for x := bounds.Min.X; x < bounds.Max.X; x++ {
			total++
			c := color.NRGBAModel.Convert(img.At(x, y)).(color.NRGBA)
			if c.R < 240 || c.G < 240 || c.B < 240 {
				n++
			}
			if near(c, colMeasured) {
				blue++
			}
		}
	}
	return float64(n) / float64(total), blue, bounds
}

func near(c color.NRGBA, want color.RGBA) bool {
	d := func(a, b uint8) int { return max(int(a)-int(b), int(b)-int(a)) }
	return d(c.R, want.R) < 40 && d(c.G, want.G) < 40 && d(c.B, want.B) < 40
}

func mustNotContain(t *testing.T, s string, needles ...string) {
	t.Helper()
	for _, n := range needles {
		require.False(t, strings.Contains(s, n), "the report contains %q", n)
	}
}
