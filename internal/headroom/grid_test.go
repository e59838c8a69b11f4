package headroom_test

import (
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/headroom"
	"github.com/seamdc/seam/internal/peer"
	"github.com/seamdc/seam/internal/probe"
)

// gridExample is the worked example with its grid boundary's POI meter
// channel u1/site/power (written into a copy when the example does not
// name one yet).
func gridExample(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, os.DirFS(example)))
	p := filepath.Join(dir, "grid.cue")
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	s := string(b)
	if !strings.Contains(s, `channel: "u1/site/power"`) {
		s = strings.Replace(s, "channels: {}", `channels: "u1/site/power": {quantity: "power"}`, 1)
		s = strings.Replace(s, `rated: "6.5 MW"`, "rated: \"6.5 MW\"\n\t\tchannel: \"u1/site/power\"", 1)
		require.Contains(t, s, `channel: "u1/site/power"`)
		require.NoError(t, os.WriteFile(p, []byte(s), 0o644))
	}
	return dir
}

// exampleGrid is the example's grid boundary as headroom reads it.
func exampleGrid() *headroom.Grid {
	return &headroom.Grid{Boundary: "u1-site", Channel: "u1/site/power", Path: `boundaries."u1-site".grid`, RatedW: 6.5e6,
		Ramps: []headroom.GridRamp{
			{Direction: "up", WindowS: 1, LimitW: 1e6, Limit: "1 MW/s"}, {Direction: "up", WindowS: 60, LimitW: 5e6, Limit: "5 MW/min"},
			{Direction: "down", WindowS: 1, LimitW: 1e6, Limit: "1 MW/s"}, {Direction: "down", WindowS: 60, LimitW: 5e6, Limit: "5 MW/min"}},
		SwingW: 1.3e6, SwingWindowS: 60, Swing: "20 %",
		Band: &headroom.GridBand{LowHz: 0.1, HighHz: 20, WindowS: 60, SegmentS: 15, LineW: 65e3, RMSW: 65e3, Line: "1 %", RMS: "1 %"}}
}

// The example's grid boundary: the limits in W from its clauses (shares
// of the 6.5 MW rated power, rates × their window), the segment vet
// takes.
func TestGridFromExample(t *testing.T) {
	c, _, err := contract.Load(gridExample(t))
	require.NoError(t, err)
	m, err := headroom.FromContracts(c, nil)
	require.NoError(t, err)
	require.Len(t, m.Grids, 1)
	g := m.Grids[0]
	want := exampleGrid()
	assert.Equal(t, want.Boundary, g.Boundary)
	assert.Equal(t, want.Channel, g.Channel)
	require.Len(t, g.Ramps, 4)
	for i, r := range g.Ramps {
		assert.Equal(t, r.Direction, []string{"up", "up", "down", "down"}[i])
		assert.InDelta(t, []float64{1e6, 5e6, 1e6, 5e6}[i], r.LimitW, 1e-3, r.Path)
	}
	assert.Equal(t, `boundaries."u1-site".grid.require.ramp.down.per_minute`, g.Ramps[3].Path)
	assert.InDelta(t, 1.3e6, g.SwingW, 1e-6)
	assert.Equal(t, 60.0, g.SwingWindowS)
	require.NotNil(t, g.Band)
	assert.InDelta(t, 65e3, g.Band.LineW, 1e-6)
	assert.InDelta(t, 65e3, g.Band.RMSW, 1e-6)
	assert.Equal(t, [4]float64{0.1, 20, 60, 15}, [4]float64{g.Band.LowHz, g.Band.HighHz, g.Band.WindowS, g.Band.SegmentS})
	assert.Equal(t, headroom.Meter{Channel: "u1/site/power", Kind: headroom.Power}, m.Meters["u1/site/power"], "and its staleness is the channel's")
}

// feed takes site power f(t) (W) at rate for the seconds, each reading's
// time jittered by up to jitter of a period, and returns the last time.
func feed(w *headroom.GridWatch, rate, seconds, jitter float64, f func(t float64) float64) time.Time {
	var at time.Time
	n := int(math.Round(seconds * rate))
	for i := 0; i <= n; i++ {
		t := float64(i) / rate
		if i > 0 && i < n {
			t += jitter / rate * math.Sin(float64(i)*1.7) // deterministic, irregular
		}
		at = t0.Add(time.Duration(t * float64(time.Second)))
		w.Take("u1/site/power", headroom.Reading{Value: f(t) / 1000, At: at})
	}
	return at
}

// The live figures read what gridsignal reads of the same waveform: a
// quiet site nothing, a 2 Hz line its amplitude and RMS, a step its
// ramp and swing; a slower poll covers the band only up to rate ÷ 2.5,
// and jittered poll times are resampled onto the poll's grid.
func TestGridFigures(t *testing.T) {
	const base = 4e6
	for _, tc := range []struct {
		name           string
		period         time.Duration
		jitter         float64
		f              func(t float64) float64
		up1, down1     float64 // the largest rise and fall within 1 s
		up60, swing    float64
		line, lineHz   float64
		rms, coveredHz float64
		tol            float64 // relative, of the spectral figures
	}{
		{name: "quiet", period: 20 * time.Millisecond, f: func(float64) float64 { return base }, coveredHz: 20},
		{name: "line at 2 Hz", period: 20 * time.Millisecond, f: func(t float64) float64 { return base + 1e5*math.Sin(2*math.Pi*2*t) },
			up1: 2e5, down1: 2e5, up60: 2e5, swing: 2e5, line: 1e5, lineHz: 2, rms: 1e5 / math.Sqrt2, coveredHz: 20, tol: 0.01},
		{name: "step of 1.5 MW", period: 20 * time.Millisecond, f: func(t float64) float64 { return base + 1.5e6*math.Min(1, math.Max(0, (t-40)*50)) },
			up1: 1.5e6, up60: 1.5e6, swing: 1.5e6, line: -1, rms: -1, coveredHz: 20}, // the step's spectrum is in the band
		{name: "polled at 5/s", period: 200 * time.Millisecond, f: func(t float64) float64 { return base + 1e5*math.Sin(2*math.Pi*1.25*t) },
			up1: 2e5, down1: 2e5, up60: 2e5, swing: 2e5, line: 1e5, lineHz: 1.25, rms: 1e5 / math.Sqrt2, coveredHz: 2, tol: 0.01},
		{name: "jittered polls", period: 20 * time.Millisecond, jitter: 0.3, f: func(t float64) float64 { return base + 1e5*math.Sin(2*math.Pi*0.5*t) },
			up1: 2e5, down1: 2e5, up60: 2e5, swing: 2e5, line: 1e5, lineHz: 0.5, rms: 1e5 / math.Sqrt2, coveredHz: 20, tol: 0.02},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := headroom.NewGridWatch([]*headroom.Grid{exampleGrid()}, tc.period, 3*time.Second)
			require.NoError(t, err)
			end := feed(w, w.Rate(), 70, tc.jitter, tc.f)
			rs := w.Compute(end)
			require.Len(t, rs, 1)
			r := rs[0]
			near := func(want float64, got headroom.Value, tol float64, what string) {
				t.Helper()
				require.True(t, got.OK, what)
				assert.InDelta(t, want, got.V, math.Max(tol*want, 100), what)
			}
			near(tc.f(70), r.Power, 0.02, "power")
			near(tc.up1, r.Ramps[0][0], 0.02, "ramp up 1 s")
			near(tc.down1, r.Ramps[0][1], 0.02, "ramp down 1 s")
			near(tc.up60, r.Ramps[1][0], 0.02, "ramp up 1 min")
			near(tc.swing, r.Swing, 0.02, "swing")
			assert.Equal(t, tc.coveredHz, r.CoveredHz)
			if tc.line >= 0 {
				near(tc.line, r.Line, tc.tol, "line")
				near(tc.rms, r.RMS, tc.tol, "band RMS")
			}
			if tc.line > 0 {
				assert.InDelta(t, tc.lineHz, r.LineHz, 0.02)
			}
		})
	}
}

// Nothing stale is exported: no reading for longer than staleAfter
// drops every figure; a gap longer than that cuts the record, so only
// the figures whose window fits the readings after it come back.
func TestGridStale(t *testing.T) {
	w, err := headroom.NewGridWatch([]*headroom.Grid{exampleGrid()}, 20*time.Millisecond, 3*time.Second)
	require.NoError(t, err)
	sine := func(t float64) float64 { return 4e6 + 1e5*math.Sin(2*math.Pi*2*t) }
	end := feed(w, 50, 70, 0, sine)
	r := w.Compute(end.Add(3 * time.Second))[0]
	require.True(t, r.RMS.OK && r.Ramps[1][0].OK, "fresh for 3 s")
	r = w.Compute(end.Add(3*time.Second + time.Millisecond))[0]
	assert.False(t, r.Power.OK || r.Ramps[0][0].OK || r.Ramps[1][0].OK || r.Swing.OK || r.Line.OK || r.RMS.OK, "stale: nothing")
	assert.Equal(t, 20.0, r.CoveredHz, "the coverage is the poll's, not a reading")

	// readings again after a 4 s gap: 10 s of them give the 1 s ramp, not
	// the minute's figures nor the band's
	for i := 0; i <= 500; i++ {
		at := end.Add(4*time.Second + time.Duration(i)*20*time.Millisecond)
		w.Take("u1/site/power", headroom.Reading{Value: 4000, At: at})
	}
	r = w.Compute(end.Add(14 * time.Second))[0]
	assert.True(t, r.Power.OK && r.Ramps[0][0].OK)
	assert.Zero(t, r.Ramps[0][0].V, "the gap is not a ramp")
	assert.False(t, r.Ramps[1][0].OK || r.Swing.OK || r.Line.OK || r.RMS.OK, "the minute's and the band's records are cut by the gap")
}

// The collector exports the grid figures of the POI channel's readings
// with the boundary's labels in W; the band's labels say the edge the
// poll covers and a second metric the clause's; promtool lints them.
func TestGridExposition(t *testing.T) {
	m := &headroom.Model{Meters: map[string]headroom.Meter{"u1/site/power": {Channel: "u1/site/power", Kind: headroom.Power}},
		Grids: []*headroom.Grid{exampleGrid()}}
	now := t0
	c := headroom.NewCollector(m, map[string][]string{"meter-poi/power": {"u1/site/power"}}, []string{"meter-poi"}, func() time.Time { return now }, 3*time.Second)
	for i := 0; i <= 350; i++ { // 70 s at 5/s
		now = t0.Add(time.Duration(i) * 200 * time.Millisecond)
		c.Take(sample("meter-poi", now, probe.Reading{Point: "power", Value: 4000 + 100*math.Sin(2*math.Pi*float64(i)/5), Unit: "kW"}))
	}
	got := expose(t, c)
	assert.NotContains(t, got, "seam_grid_ramp_watts", "no figures without WatchGrid")
	require.NoError(t, c.WatchGrid(200*time.Millisecond))
	for i := 351; i <= 700; i++ {
		now = t0.Add(time.Duration(i) * 200 * time.Millisecond)
		c.Take(sample("meter-poi", now, probe.Reading{Point: "power", Value: 4000 + 100*math.Sin(2*math.Pi*float64(i)/5), Unit: "kW"}))
	}
	got = expose(t, c)
	l := `boundary="u1-site",channel="u1/site/power"`
	for _, s := range []string{
		`seam_grid_ramp_limit_watts{` + l + `,direction="up",window="1m"} 5e+06`,
		`seam_grid_swing_limit_watts{` + l + `,window="1m"} 1.3e+06`,
		`seam_grid_band_clause_high_hertz{` + l + `} 20`,
		`seam_grid_band_covered_high_hertz{` + l + `} 2`,
		`seam_grid_band_rms_limit_watts{` + l + `} 65000`,
		`seam_grid_band_line_frequency_hertz{band_high_hz="2",band_low_hz="0.1",` + l + `} 1`,
	} {
		assert.Contains(t, got, s+"\n")
	}
	for _, s := range []string{`seam_grid_power_watts{` + l + `} `, `seam_grid_ramp_watts{` + l + `,direction="down",window="1s"} `, `seam_grid_swing_watts{` + l + `,window="1m"} `,
		`seam_grid_band_rms_watts{band_high_hz="2",band_low_hz="0.1",` + l + `} `, `seam_grid_band_line_watts{band_high_hz="2",band_low_hz="0.1",` + l + `} `} {
		assert.Contains(t, got, s, "the figure is exported")
	}
	cmd := exec.Command(peer.Need(t, "promtool"), "check", "metrics")
	cmd.Stdin = strings.NewReader(got)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "promtool check metrics:\n%s", out)
	assert.Empty(t, strings.TrimSpace(string(out)))

	// silent for longer than staleAfter: the figures leave, the limits stay
	now = now.Add(4 * time.Second)
	got = expose(t, c)
	assert.NotContains(t, got, "seam_grid_power_watts{")
	assert.NotContains(t, got, "seam_grid_ramp_watts{")
	assert.NotContains(t, got, "seam_grid_band_rms_watts{")
	assert.Contains(t, got, `seam_grid_band_rms_limit_watts{`+l+`} 65000`)
	assert.Contains(t, got, `seam_channel_stale{at="",channel="u1/site/power"} 1`)
}

// The rules of the example's grid boundary, one per clause, its limit
// written in from the contract.
func TestGridRules(t *testing.T) {
	m := &headroom.Model{Grids: []*headroom.Grid{exampleGrid()}}
	var b strings.Builder
	headroom.WriteGroups(&b, headroom.Rules(m, headroom.RuleOptions{})...)
	got := b.String()
	for _, s := range []string{
		`expr: "seam_grid_ramp_watts{boundary=\"u1-site\",direction=\"up\",window=\"1s\"} > 1e+06"`,
		`expr: "seam_grid_swing_watts{boundary=\"u1-site\",window=\"1m\"} > 1.3e+06"`,
		`expr: "seam_grid_band_line_watts{boundary=\"u1-site\"} > 65000"`,
		`expr: "seam_grid_band_rms_watts{boundary=\"u1-site\"} > 65000"`,
		`expr: "seam_grid_band_covered_high_hertz{boundary=\"u1-site\"} < 20"`,
	} {
		assert.Contains(t, got, s)
	}
	assert.Equal(t, 8, strings.Count(got, "alert: SeamGrid"), "4 ramps, swing, line, RMS, coverage")
	none := &headroom.Model{}
	b.Reset()
	headroom.WriteGroups(&b, headroom.Rules(none, headroom.RuleOptions{})...)
	assert.NotContains(t, b.String(), "seam-headroom-grid", "no grid boundary with a channel: no group")
}

// A meter read slower than the poll rate (a slow device, a late poller)
// is not passed off as the band the poll rate would cover: its ramps and
// swing are measured, its band is not.
func TestGridReadSlowerThanPolled(t *testing.T) {
	w, err := headroom.NewGridWatch([]*headroom.Grid{exampleGrid()}, 20*time.Millisecond, 3*time.Second)
	require.NoError(t, err)
	end := feed(w, 10, 70, 0, func(t float64) float64 { return 4e6 + 1e5*math.Sin(2*math.Pi*0.5*t) }) // 10/s, polled at 50/s
	r := w.Compute(end)[0]
	assert.True(t, r.Ramps[0][0].OK && r.Ramps[1][0].OK && r.Swing.OK)
	assert.InDelta(t, 2e5, r.Swing.V, 2e3)
	assert.False(t, r.Line.OK || r.RMS.OK, "a fifth of the samples are readings: no band up to 20 Hz")
}
