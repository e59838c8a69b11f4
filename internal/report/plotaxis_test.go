package report

import (
	"encoding/csv"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/evidence"
	"github.com/seamdc/seam/internal/report/reporttest"
)

// excursionReports are reports of runs with an excursion beyond the
// envelope: the SAT whose square-wave edges dip past it, and the IST
// whose restores overshoot far above every band (the feed-loss case's
// restore spike). They are written once for the package's tests.
func excursionReports(t *testing.T) map[string]*Run {
	t.Helper()
	excursion.once.Do(func() {
		excursion.runs = map[string]*Run{}
		if excursion.dir, excursion.err = os.MkdirTemp("", "report-excursion-"); excursion.err != nil {
			return
		}
		for _, tt := range []struct{ level, defect string }{{"sat", reporttest.Dip}, {"ist", reporttest.RestoreSpike}} {
			p, raw := examplePlan(t, tt.level, "ma")
			dir := filepath.Join(excursion.dir, tt.level)
			if _, excursion.err = reporttest.Write(dir, p, raw, reporttest.Options{Defect: tt.defect}); excursion.err != nil {
				return
			}
			var r *Run
			if r, excursion.err = Load(dir, Options{Plots: true}); excursion.err != nil {
				return
			}
			excursion.runs[dir] = r
		}
	})
	require.NoError(t, excursion.err)
	return excursion.runs
}

var excursion struct {
	once sync.Once
	dir  string
	runs map[string]*Run
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if excursion.dir != "" {
		os.RemoveAll(excursion.dir)
	}
	os.Exit(code)
}

// Every sample of every plot is drawn inside its axis, at least a point
// from the axis's edge (a peak on the edge reads as cut off), or the
// plot marks the clip with the peak's value. The axis is read back from
// the SVG: the data area from the grid's vertical lines, the value
// scale from the horizontal grid lines and their tick labels; the
// samples are the bundle's raw samples, not the decimated ones.
func TestPlotsShowEverySample(t *testing.T) {
	spiked := false
	for dir, r := range excursionReports(t) {
		raw := rawSamples(t, dir)
		for _, c := range r.Cases {
			if c.Plot == nil {
				continue
			}
			svg, err := c.Plot.SVG()
			require.NoError(t, err, c.ID)
			axes := svgAxes(t, string(svg))
			require.NotEmpty(t, axes, c.ID)
			texts := svgTexts(string(svg))
			check := func(ax svgAxis, channel string) {
				vals := raw.between(channel, c.Start, c.End)
				require.NotEmpty(t, vals, "%s: no raw samples of %s", c.ID, channel)
				lo, hi := ax.value(ax.y0+1), ax.value(ax.y1-1)
				var peak, trough float64 = math.Inf(-1), math.Inf(1)
				for _, v := range vals {
					peak, trough = math.Max(peak, v), math.Min(trough, v)
				}
				if peak > hi && !clipMarked(texts, peak) {
					t.Errorf("%s: %s's peak %g is not inside its axis (drawn up to %.4g) and no clip mark says %s", c.ID, channel, peak, hi, fmtNum(peak, ""))
				}
				if trough < lo && !clipMarked(texts, trough) {
					t.Errorf("%s: %s's lowest sample %g is not inside its axis (drawn down to %.4g) and no clip mark says %s", c.ID, channel, trough, lo, fmtNum(trough, ""))
				}
			}
			check(axes[0], c.Plot.Channel)
			if c.Plot.ExcitationChannel != "" {
				require.Len(t, axes, 2, c.ID)
				check(axes[1], c.Plot.ExcitationChannel)
			}
			if strings.HasSuffix(c.ID, ".failure.feed-a-loss") {
				spiked = true
			}
		}
	}
	assert.True(t, spiked, "the IST's feed-loss case was plotted")
}

func clipMarked(texts []svgText, v float64) bool {
	want := fmtNum(v, "")
	for _, tx := range texts {
		if strings.Contains(tx.s, want) {
			return true
		}
	}
	return false
}

// svgAxis is one axis of a plot as its SVG draws it: the data area's
// bottom and top (points, upwards) and the value scale.
type svgAxis struct {
	x0, y0, y1 float64
	a, b       float64 // value = a + b·y
}

func (ax svgAxis) value(y float64) float64 { return ax.a + ax.b*y }

var (
	svgPath   = regexp.MustCompile(`<path d="M([-0-9.e]+),([-0-9.e]+)L([-0-9.e]+),([-0-9.e]+)" style="fill:none;stroke:#CCCCCC;`)
	svgTextRE = regexp.MustCompile(`(?s)<text x="([-0-9.e]+)" y="([-0-9.e]+)" transform="scale\(1, -1\)"[^>]*>([^<]*)</text>`)
)

type svgText struct {
	x, y float64 // upwards, as the paths are
	s    string
}

func svgTexts(svg string) []svgText {
	var out []svgText
	for _, m := range svgTextRE.FindAllStringSubmatch(svg, -1) {
		out = append(out, svgText{num(m[1]), -num(m[2]), m[3]})
	}
	return out
}

func num(s string) float64 {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return math.NaN()
	}
	return f
}

// svgAxes reads the plot's axes from its grid, top axis first.
func svgAxes(t *testing.T, svg string) []svgAxis {
	t.Helper()
	type span struct{ y0, y1 float64 }
	areas := map[span]float64{} // vertical grid line's span → leftmost x
	var horiz [][2]float64      // y, x of horizontal grid lines
	for _, m := range svgPath.FindAllStringSubmatch(svg, -1) {
		x0, y0, x1, y1 := num(m[1]), num(m[2]), num(m[3]), num(m[4])
		switch {
		case x0 == x1:
			s := span{min(y0, y1), max(y0, y1)}
			if x, ok := areas[s]; !ok || x0 < x {
				areas[s] = x0
			}
		case y0 == y1:
			horiz = append(horiz, [2]float64{y0, min(x0, x1)})
		}
	}
	texts := svgTexts(svg)
	var out []svgAxis
	for s, x := range areas {
		ax := svgAxis{x0: x, y0: s.y0, y1: s.y1}
		var grid, labels []float64
		var values []float64
		for _, h := range horiz {
			if h[0] >= s.y0 && h[0] <= s.y1 {
				grid = append(grid, h[0])
			}
		}
		type label struct{ y, v float64 }
		var ls []label
		for _, tx := range texts {
			v := num(strings.TrimSpace(tx.s))
			if tx.x < x && tx.y >= s.y0-5 && tx.y <= s.y1 && !math.IsNaN(v) {
				ls = append(ls, label{tx.y, v})
			}
		}
		sort.Float64s(grid)
		sort.Slice(ls, func(i, j int) bool { return ls[i].y < ls[j].y })
		for _, l := range ls {
			labels, values = append(labels, l.y), append(values, l.v)
		}
		require.GreaterOrEqual(t, len(grid), 2, "an axis with fewer than two grid lines")
		require.Len(t, labels, len(grid), "one tick label a grid line")
		n := len(grid) - 1
		ax.b = (values[n] - values[0]) / (grid[n] - grid[0])
		ax.a = values[0] - ax.b*grid[0]
		require.Greater(t, ax.b, 0.0, "the values rise up the axis")
		out = append(out, ax)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].y0 > out[j].y0 })
	return out
}

// samplesOf are a bundle's good raw samples by channel.
type samplesOf map[string][]struct {
	t time.Time
	v float64
}

func rawSamples(t *testing.T, dir string) samplesOf {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, evidence.SamplesFile))
	require.NoError(t, err)
	defer f.Close()
	rd := csv.NewReader(f)
	out := samplesOf{}
	for {
		rec, err := rd.Read()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		if rec[0] == "channel" || len(rec) < 4 || rec[3] != "good" {
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, rec[1])
		require.NoError(t, err)
		out[rec[0]] = append(out[rec[0]], struct {
			t time.Time
			v float64
		}{at, num(rec[2])})
	}
	return out
}

func (s samplesOf) between(ch string, from, to time.Time) []float64 {
	var out []float64
	for _, x := range s[ch] {
		if !x.t.Before(from) && !x.t.After(to) {
			out = append(out, x.v)
		}
	}
	return out
}

// No mark's label overlaps another, a band's shading or the data area,
// and each is on the canvas: on every plot of the excursion reports
// and on one crowded with marks.
func TestLabelsOverlapNothing(t *testing.T) {
	plots := map[string]*PlotData{"crowded": {Channel: "p1/ma/feed-b/voltage", Unit: "V", Duration: 60,
		Measured: []Point{{0, 415}, {30, 380}, {31, 440}, {60, 415}},
		Bands:    []Band{{From: 10, To: 40, Lo: 373.5, Hi: math.Inf(1)}, {From: 20, To: 60, Lo: 402, Hi: 427, Failed: true}},
		Marks: []Mark{{At: 0, Label: "start of something with a long name"}, {At: 10, Label: "inject"}, {At: 10.2, Label: "guarantee alarm +0.345 s"},
			{At: 10.2, Label: "require alarm +0.345 s"}, {At: 10.5, Label: "guarantee recovered 0.545 s (≤ 10 s)"}, {At: 30, Label: "restore"},
			{At: 59.9, Label: "guarantee alarm deadline", Failed: true}, {At: 60, Label: "end"}}}}
	for _, r := range excursionReports(t) {
		for _, c := range r.Cases {
			if c.Plot != nil {
				plots[c.ID] = c.Plot
			}
		}
	}
	for name, d := range plots {
		l, err := d.layout()
		require.NoError(t, err, name)
		require.Len(t, l.labels, labelled(d.Marks), "%s: every label placed", name)
		data := Box{float64(l.data.Min.X), float64(l.data.Min.Y), float64(l.data.Max.X), float64(l.data.Max.Y)}
		for i, a := range l.labels {
			assert.True(t, a.X0 >= 0 && a.X1 <= plotWidth && a.Y0 >= 0 && a.Y1 <= float64(l.height), "%s: %q at %+v is off the canvas", name, a.Label, a.Box)
			assert.False(t, a.Overlaps(data), "%s: %q overlaps the data area", name, a.Label)
			for _, b := range l.bands {
				assert.False(t, a.Overlaps(b), "%s: %q overlaps a band's shading", name, a.Label)
			}
			for _, b := range l.labels[:i] {
				assert.False(t, a.Overlaps(b.Box), "%s: %q overlaps %q", name, a.Label, b.Label)
			}
		}
	}
}

func labelled(marks []Mark) int {
	n := 0
	for _, m := range marks {
		if m.Label != "" {
			n++
		}
	}
	return n
}
