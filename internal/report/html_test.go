package report

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/report/reporttest"
)

// TestHTMLInChromium opens the HTML report of a failing SAT in headless
// Chromium with the network cut off: the page logs nothing to the
// console, shows one plot per case, and its screenshot has ink,
// including the measured lines' blue.
func TestHTMLInChromium(t *testing.T) {
	for _, tt := range []struct{ level, defect string }{{"sat", reporttest.Dip}} {
		t.Run(tt.level, func(t *testing.T) {
			dir := writeBundle(t, tt.level, "ma", reporttest.Options{Defect: tt.defect})
			r, err := Load(dir, Options{Plots: true})
			require.NoError(t, err)
			path := filepath.Join(t.TempDir(), "report.html")
			var buf bytes.Buffer
			require.NoError(t, HTML(&buf, r))
			require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o644))
			selfContained(t, buf.String())
			require.NotEmpty(t, r.Sim)
			assert.Contains(t, buf.String(), "<h1>SIMULATED ", "a simulated run says so in its title")
			assert.Contains(t, buf.String(), `@top-right { content: "SIMULATED`, "and in the margin of every printed page")

			p := openReport(t, path)
			if *screenshots != "" {
				shoot(t, path, *screenshots, "report-top.png", docShots)
			}
			assert.Empty(t, p.console, "console messages")
			assert.Equal(t, len(r.Cases), p.cases)
			assert.Equal(t, len(r.Cases), p.plots, "one plot per case")
			ink, blue, bounds := inkStats(t, p.png)
			t.Logf("screenshot %v, %.1f %% ink, %d blue pixels, HTML %d bytes", bounds.Size(), ink*100, blue, buf.Len())
			assert.Greater(t, bounds.Dy(), 2000, "a full-page screenshot")
			assert.Greater(t, ink, 0.03, "the screenshot is blank")
			assert.Greater(t, blue, 2000, "no measured line drawn")
		})
	}
}

// selfContained checks that the page fetches nothing: no script, no
// stylesheet or image by URL, no URL but the SVG namespaces.
func selfContained(t *testing.T, html string) {
	t.Helper()
	for _, bad := range []string{"<script", "<link", "<img", "<iframe", "@import", "url("} {
		assert.NotContains(t, html, bad)
	}
	urls := regexp.MustCompile(`https?://[^"' )<>]+`).FindAllString(html, -1)
	for _, u := range urls {
		assert.True(t, strings.HasPrefix(u, "http://www.w3.org/"), "the report refers to %s", u)
	}
}

// TestChromiumHarnessSeesProblems proves the harness can fail: a page
// with a script error, a console error and an image from the network.
func TestChromiumHarnessSeesProblems(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.html")
	require.NoError(t, os.WriteFile(path, []byte(`<!DOCTYPE html><html><body>
<img src="https://example.invalid/x.png">
<script>console.error("boom"); undefinedFunction();</script>
</body></html>`), 0o644))
	p := openReport(t, path)
	all := strings.Join(p.console, "\n")
	assert.Contains(t, all, "boom")
	assert.Contains(t, all, "undefinedFunction")
	assert.Contains(t, all, "example.invalid")
	assert.Zero(t, p.plots)
	ink, _, _ := inkStats(t, p.png)
	assert.Less(t, ink, 0.01, "an empty page is blank")
}

func TestPlotMarksFailures(t *testing.T) {
	d := &PlotData{Channel: "v", Unit: "V", Duration: 10,
		Measured: []Point{{0, 415}, {1, 415}, {2, 380}, {3, 415}, {10, 415}},
		Bands:    []Band{{Label: "envelope", From: 0, To: 10, Lo: 381.8, Hi: 448.2, Envelope: true, Failed: true}},
		Marks:    []Mark{{At: 2, Label: "edge"}}}
	svg, err := d.SVG()
	require.NoError(t, err)
	s := string(svg)
	assert.True(t, strings.HasPrefix(s, "<svg"), "no XML prolog in inline SVG")
	assert.Contains(t, s, "#D62728", "the failing sample is drawn red")
	assert.Contains(t, s, ">edge</text>")
	assert.Equal(t, []Point{{2, 380}}, d.outside())

	ok := *d
	ok.Bands = []Band{{From: 0, To: 10, Lo: 370, Hi: 460}}
	assert.Empty(t, ok.outside())

	_, err = (&PlotData{Channel: "v"}).SVG()
	assert.ErrorContains(t, err, "plot of v: no samples")
}

func TestBandRange(t *testing.T) {
	inf := func(s int) float64 { return float64(s) * 1e308 * 10 }
	x0, x1, y0, y1 := bandPlotter{Band{From: 1, To: 2, Lo: inf(-1), Hi: 5}}.DataRange()
	assert.Equal(t, []float64{1, 2, 5, 5}, []float64{x0, x1, y0, y1}, "a one-sided band keeps its limit in view")
	x0, x1, _, _ = bandPlotter{Band{From: 1, To: 2, Lo: inf(-1), Hi: inf(1)}}.DataRange()
	assert.Greater(t, x0, x1, "an open band adds nothing to the range")
}
