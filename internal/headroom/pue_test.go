package headroom_test

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/headroom"
	"github.com/seamdc/seam/internal/peer"
	"github.com/seamdc/seam/internal/probe"
)

// feedMeters reads each meter's power (kW) every step from start to
// until, as the one poller would.
func feedMeters(c *headroom.Collector, start, until time.Time, step time.Duration, power func(at time.Time) map[string]float64) {
	for at := start; !at.After(until); at = at.Add(step) {
		for dev, kw := range power(at) {
			c.Take(sample(dev, at, probe.Reading{Point: "power", Value: kw, Unit: "kW"}))
		}
	}
}

func pueModel(kinds ...string) *headroom.Model {
	m := small()
	for _, k := range kinds {
		m.PUE = append(m.PUE, headroom.PUEMeter{Name: "m-" + k, Kind: k, Channel: k + "/power"})
	}
	return m
}

// Measured PUE is the facility's energy over IT's over the window (not
// the mean of instant ratios); it is exported only once the meters'
// fresh readings cover the window, and not while one is silent.
func TestMeasuredPUE(t *testing.T) {
	byPoint := map[string][]string{"utility/power": {"utility/power"}, "it/power": {"it/power"}, "cooling/power": {"cooling/power"}}
	now := t0
	c := headroom.NewCollector(pueModel("utility", "it"), byPoint, []string{"utility", "it"}, func() time.Time { return now }, 5*time.Second)
	require.NoError(t, c.MeasurePUE([]time.Duration{10 * time.Minute}))

	// 5 minutes: utility 1000 kW, IT 800 kW; the window is not covered yet
	half := t0.Add(5 * time.Minute)
	feedMeters(c, t0, half, 2*time.Second, func(time.Time) map[string]float64 { return map[string]float64{"utility": 1000, "it": 800} })
	now = half
	got := expose(t, c)
	assert.NotContains(t, got, "seam_pue_ratio{")
	assert.Contains(t, got, `seam_pue_meter_missing{meter="m-it",window="10m"} 1`)

	// 5 more: utility 2000 kW, IT 1800 kW: 3000/2600, not (1.25+1.11)/2
	end := half.Add(5 * time.Minute)
	feedMeters(c, half.Add(2*time.Second), end, 2*time.Second, func(time.Time) map[string]float64 { return map[string]float64{"utility": 2000, "it": 1800} })
	now = end
	got = expose(t, c)
	pue := metric(t, got, `seam_pue_ratio{window="10m"}`)
	assert.InDelta(t, 3000.0/2600.0, pue, 0.005)
	assert.InDelta(t, 1.3e6, metric(t, got, `seam_pue_it_power_watts{window="10m"}`), 0.02e6)
	assert.Contains(t, got, `seam_pue_meter_missing{meter="m-it",window="10m"} 0`)

	// IT goes silent for 2 minutes of the window: no PUE over it
	later := end.Add(2 * time.Minute)
	feedMeters(c, end.Add(2*time.Second), later, 2*time.Second, func(time.Time) map[string]float64 { return map[string]float64{"utility": 2000} })
	now = later
	got = expose(t, c)
	assert.NotContains(t, got, "seam_pue_ratio{")
	assert.Contains(t, got, `seam_pue_meter_missing{meter="m-it",window="10m"} 1`)
	assert.Contains(t, got, `seam_pue_meter_missing{meter="m-utility",window="10m"} 0`)

	cmd := exec.Command(peer.Need(t, "promtool"), "check", "metrics")
	cmd.Stdin = strings.NewReader(got)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "promtool check metrics:\n%s", out)
	assert.Empty(t, strings.TrimSpace(string(out)))
}

// Without a utility meter the facility is IT plus its loads; the
// meters must allow PUE at all.
func TestMeasuredPUEFacilityLoads(t *testing.T) {
	byPoint := map[string][]string{"it/power": {"it/power"}, "cooling/power": {"cooling/power"}}
	now := t0
	c := headroom.NewCollector(pueModel("it", "cooling"), byPoint, []string{"it", "cooling"}, func() time.Time { return now }, 5*time.Second)
	end := t0.Add(20 * time.Minute)
	feedMeters(c, t0, end, time.Second, func(time.Time) map[string]float64 { return map[string]float64{"it": 1000, "cooling": 250} })
	now = end
	got := expose(t, c)
	assert.InDelta(t, 1.25, metric(t, got, `seam_pue_ratio{window="15m"}`), 1e-9, "the default windows: 15m, 1h, 24h")
	assert.NotContains(t, got, `seam_pue_ratio{window="1h"}`, "20 minutes cover no hour")
	assert.Equal(t, []time.Duration{15 * time.Minute, time.Hour, 24 * time.Hour}, headroom.DefaultPUEWindows)
	assert.Contains(t, got, `seam_pue_declared_power_watts{window="15m"} 0`)

	// a facility load declared, not measured: counted at its design draw
	m := pueModel("it", "cooling")
	m.PUE = append(m.PUE, headroom.PUEMeter{Name: "lighting", Kind: "lighting", DesignW: 50e3})
	now = t0
	c = headroom.NewCollector(m, byPoint, []string{"it", "cooling"}, func() time.Time { return now }, 5*time.Second)
	feedMeters(c, t0, end, time.Second, func(time.Time) map[string]float64 { return map[string]float64{"it": 1000, "cooling": 250} })
	now = end
	got = expose(t, c)
	assert.InDelta(t, 1.3, metric(t, got, `seam_pue_ratio{window="15m"}`), 1e-9, "(1000 + 250 + 50) / 1000")
	assert.Equal(t, 50e3, metric(t, got, `seam_pue_declared_power_watts{window="15m"}`))
	assert.NotContains(t, got, `meter="lighting"`, "a declared load is never missing")

	for _, c := range []struct {
		name    string
		m       *headroom.Model
		windows []time.Duration
		want    string
	}{
		{"no it meter", pueModel("utility", "cooling"), []time.Duration{time.Hour}, "the meters are m-utility (utility), m-cooling (cooling): it needs at least one it meter with a channel"},
		{"only it", pueModel("it"), []time.Duration{time.Hour}, "and one utility or facility-load meter (measured, or declared with its design draw)"},
		{"no meters", pueModel(), []time.Duration{time.Hour}, "the site declares no meters"},
		{"short window", pueModel("it", "utility"), []time.Duration{time.Second}, "window 1s: a window is a minute or more"},
	} {
		col := headroom.NewCollector(c.m, nil, nil, time.Now, time.Second)
		assert.ErrorContains(t, col.MeasurePUE(c.windows), c.want, c.name)
		assert.NotContains(t, expose(t, col), "seam_pue_ratio", c.name)
	}
}

// metric is the value of the series line that starts with name.
func metric(t *testing.T, exposition, name string) float64 {
	t.Helper()
	for _, line := range strings.Split(exposition, "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			var f float64
			_, err := fmt.Sscan(v, &f)
			require.NoError(t, err)
			return f
		}
	}
	t.Fatalf("no series %s in:\n%s", name, exposition)
	return 0
}

// The example's meters: its IT feeds measured by the joints' channels,
// its cooling, losses and lighting declared; the collector measures PUE
// from them.
func TestPUEMetersFromExample(t *testing.T) {
	m, _ := exampleModel(t)
	var it, declared int
	var declaredW float64
	for _, p := range m.PUE {
		switch {
		case p.Kind == "it":
			it++
			assert.NotEmpty(t, p.Channel, p.Name)
			assert.Contains(t, m.Meters, p.Channel, "%s reads a channel headroom knows", p.Name)
		case p.Channel == "":
			declared++
			declaredW += p.DesignW
		}
	}
	assert.Equal(t, 6, it, "feeds a and b of each IT cell")
	assert.Equal(t, 7, declared, "3 cooling, 3 losses, lighting")
	assert.InDelta(t, 3*210e3+3*90e3+30e3, declaredW, 1e-6)
	c := headroom.NewCollector(m, nil, nil, func() time.Time { return t0 }, 5*time.Second)
	got := expose(t, c)
	assert.Contains(t, got, `seam_pue_meter_missing{meter="ma-feed-a",window="24h"} 1`, "no readings yet")
}
