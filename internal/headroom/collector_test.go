package headroom_test

import (
	"flag"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/headroom"
	"github.com/seamdc/seam/internal/peer"
	"github.com/seamdc/seam/internal/probe"
)

var update = flag.Bool("update", false, "rewrite golden files")

func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, string(want), got, "%s is stale: go test ./internal/headroom -update", path)
}

func expose(t testing.TB, c prometheus.Collector) string {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(c))
	rec := httptest.NewRecorder()
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	require.Equal(t, 200, rec.Code, rec.Body.String())
	return rec.Body.String()
}

func sample(dev string, at time.Time, readings ...probe.Reading) probe.Sample {
	for i := range readings {
		readings[i].Device, readings[i].Received = dev, at
	}
	return probe.Sample{Device: dev, Done: at, Readings: readings}
}

// The exposition names every series in base units, with the inventory's
// labels, and drops a device's series when its readings go stale.
func TestCollectorExposition(t *testing.T) {
	now := t0
	byPoint := map[string][]string{"pdu-a/power": {"a/power", "r1/a"}, "pdu-a/volts": {"a/volts"}, "pdu-b/power": {"b/power", "r1/b"},
		"cdu/supply": {"supply"}, "cdu/return": {"return"}, "cdu/flow": {"flow"}}
	c := headroom.NewCollector(small(), byPoint, []string{"pdu-a", "pdu-b", "cdu", "never"}, func() time.Time { return now }, 3*time.Second)
	c.Take(sample("pdu-a", t0, probe.Reading{Point: "power", Value: 40, Unit: "kW"}, probe.Reading{Point: "volts", Value: 410, Unit: "V"},
		probe.Reading{Point: "energy", Value: 12.5, Unit: "kWh"}))
	c.Take(sample("pdu-b", t0, probe.Reading{Point: "power", Value: 45, Unit: "kW"}))
	c.Take(sample("cdu", t0, probe.Reading{Point: "supply", Value: 30, Unit: "degC"}, probe.Reading{Point: "return", Value: 40, Unit: "degC"},
		probe.Reading{Point: "flow", Value: 600, Unit: "L/min"}))
	golden(t, "testdata/fresh.prom", expose(t, c))

	// pdu-b answers with a bad reading, then nothing: after 3 s its
	// series are gone, the block's sum and N-1 with them
	c.Take(sample("pdu-b", t0.Add(time.Second), probe.Reading{Point: "power", Value: 45, Quality: probe.Bad}))
	now = t0.Add(4 * time.Second)
	c.Take(sample("pdu-a", now, probe.Reading{Point: "power", Value: 40, Unit: "kW"}, probe.Reading{Point: "volts", Value: 410, Unit: "V"}))
	c.Take(sample("cdu", now, probe.Reading{Point: "supply", Value: 30, Unit: "degC"}, probe.Reading{Point: "return", Value: 40, Unit: "degC"},
		probe.Reading{Point: "flow", Value: 600, Unit: "L/min"}))
	got := expose(t, c)
	golden(t, "testdata/stale.prom", got)
	assert.Contains(t, got, `seam_device_up{device="pdu-b"} 0`)
	assert.Contains(t, got, `seam_channel_stale{at="p/b/b",channel="b/power"} 1`)
	assert.NotContains(t, got, `seam_feed_power_watts{block="p/b",feed="p/b/b"`)
	assert.NotContains(t, got, "seam_block_headroom_one_feed_lost_watts{")
	assert.Contains(t, got, `seam_feed_power_watts{block="p/b",feed="p/b/a",module="p"} 40000`)
	for _, line := range strings.Split(got, "\n") {
		assert.NotContains(t, line, "percent", "ratios 0-1, never percent")
	}
	// Debian's promtool lints the exposition: names, units, help
	cmd := exec.Command(peer.Need(t, "promtool"), "check", "metrics")
	cmd.Stdin = strings.NewReader(got)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "promtool check metrics:\n%s", out)
	assert.Empty(t, strings.TrimSpace(string(out)))
}

// The example's model: its limits are the budget's (one derating rule),
// its meters the boundaries' channels, its bands the clauses'.
func TestModelFromExample(t *testing.T) {
	m, _ := exampleModel(t)
	require.Len(t, m.Feeds, 6)
	f := m.Feeds[0]
	assert.Equal(t, "p1/block/a", f.ID)
	assert.InDelta(t, 2185.2e3, f.LimitW, 100, "√3 × 415 V × 4000 A × 0.95 × 80 %")
	assert.Equal(t, 0.8, f.Derating)
	assert.Equal(t, "power_block=p1", f.Domain)
	require.Len(t, m.Loops, 3)
	l := m.Loops[1]
	assert.Equal(t, "l2/loop", l.ID)
	assert.Equal(t, "cooling_loop=l2", l.Domain)
	assert.Equal(t, 2.4e6, l.CapacityLostW)
	assert.Equal(t, [2]float64{28.5, 31.5}, [2]float64{l.SupplyLo, l.SupplyH}, "30 degC ± 1.5 K, inside the 20-35 degC the IT side requires")
	assert.Equal(t, 3200.0, l.FlowMin)
	assert.Equal(t, headroom.Meter{Channel: "l2/mb/supply-temp", Kind: headroom.SupplyTemp, At: "l2/loop"}, m.Meters["l2/mb/supply-temp"])
	assert.Equal(t, headroom.Meter{Channel: "p1/ma/feed-a/power", Kind: headroom.Power, At: "p1/block/a"}, m.Meters["p1/ma/feed-a/power"])
	assert.Len(t, m.PDUs, 96)
}
