package report

import (
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTimeTicks(t *testing.T) {
	labels := func(lo, hi float64) []string {
		var out []string
		for _, tk := range (timeTicks{}).Ticks(lo, hi) {
			if tk.Label != "" {
				out = append(out, tk.Label)
			}
		}
		return out
	}
	assert.Equal(t, []string{"0", "50", "100", "150", "200", "250"}, labels(0, 268.6))
	assert.Equal(t, []string{"0", "5", "10", "15", "20", "25", "30", "35"}, labels(0, 35.5))
	assert.Equal(t, []string{"0", "500", "1000", "1500", "2000", "2500", "3000", "3500"}, labels(0, 3600))
	assert.Equal(t, []string{"0", "0.2", "0.4", "0.6", "0.8", "1"}, labels(0, 1))
	assert.Len(t, (timeTicks{}).Ticks(0, 268.6), 27, "minor ticks every fifth of a step")
}

// Every text of a plot is at least 8 pt on an A4 page: the plot is no
// wider than the page's printable width, so printing never shrinks it,
// and no font in its SVG is smaller than 8 pt.
func TestPlotTextReadableOnA4(t *testing.T) {
	require.LessOrEqual(t, plotWidth, printWidth)
	d := &PlotData{Channel: "p1/ma/feed-a/power", Unit: "kW", Duration: 60,
		Measured:   []Point{{T: 0, V: 1}, {T: 30, V: 2}, {T: 60, V: 1}},
		Excitation: []Point{{T: 0, V: 0}, {T: 30, V: 500}, {T: 60, V: 0}}, ExcitationUnit: "kW",
		Marks: []Mark{{At: 10, Label: "inject pump trip"}, {At: 11, Label: "restore"}}}
	svg, err := d.SVG()
	require.NoError(t, err)
	// font sizes are in the viewBox's units; the page scales the viewBox's
	// width to the printable width (HTML: width 100 %)
	vb := regexp.MustCompile(`viewBox="0 0 ([0-9.]+) `).FindStringSubmatch(string(svg))
	require.NotNil(t, vb)
	vbWidth, err := strconv.ParseFloat(vb[1], 64)
	require.NoError(t, err)
	sizes := regexp.MustCompile(`font-size:([0-9.]+)`).FindAllStringSubmatch(string(svg), -1)
	require.Greater(t, len(sizes), 10, "the plot's texts")
	for _, m := range sizes {
		size, err := strconv.ParseFloat(m[1], 64)
		require.NoError(t, err)
		assert.GreaterOrEqual(t, size*printWidth/vbWidth, 8.0, "a text of font-size %s prints below 8 pt", m[1])
	}
}
