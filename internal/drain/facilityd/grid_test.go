package facilityd_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/drain/facilityd"
	"github.com/seamdc/seam/internal/peer"
	"github.com/seamdc/seam/internal/probe/probetest"
	"github.com/seamdc/seam/internal/profile"
)

// gridExample is the worked example with its grid boundary's POI meter
// channel u1/site/power (written into a copy when the example does not
// name one yet).
func gridExample(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, os.DirFS(filepath.Join(peer.Root(t), "contracts/examples/threemodule"))))
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

// poiMeterProfile is a power meter over Modbus TCP: power in kW as a
// float32.
const poiMeterProfile = `package profiles

profiles: "test-poi-meter": {
	vendor:        "test"
	model:         "point-of-interconnection power meter"
	protocol:      "modbus"
	update_period: "10 ms"
	limits: {max_registers: 125, max_gap: 4, min_gap: "0 ms"}
	points: "power": {table: "input", address: 0, type: "float32", unit: "kW", plausible: {min: 0, max: 100000}}
}
`

// metric is the value of the exposition's line that starts with
// series, or NaN-free false when there is none.
func metric(t *testing.T, url, series string) (float64, bool) {
	resp, err := http.Get(url + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`).FindSubmatch(b)
	if m == nil {
		return 0, false
	}
	v, err := strconv.ParseFloat(string(m[1]), 64)
	require.NoError(t, err)
	return v, true
}

// facilityd's /metrics shows the live grid figures of the POI meter the
// binding binds, read by its one poller: here a fake meter (an
// in-process Modbus server; the simulator's meter-poi is another
// engineer's) polled every 50 ms, so the band is covered up to 8 Hz of
// the clause's 20, and a 1.5 MW step read as the 1 s ramp.
func TestGridFiguresOnMetrics(t *testing.T) {
	contracts := gridExample(t)
	bdir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(bdir, "profiles"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(bdir, "profiles", "poi.cue"), []byte(poiMeterProfile), 0o644))
	set, diags, err := profile.Load(filepath.Join(bdir, "profiles"))
	require.NoError(t, err)
	require.Empty(t, diags)
	meter, err := probetest.NewModbus(set.Get("test-poi-meter"), map[string]float64{"power": 4000}, true)
	require.NoError(t, err)
	t.Cleanup(meter.Stop)
	require.NoError(t, os.WriteFile(filepath.Join(bdir, "binding.cue"), []byte(fmt.Sprintf(`package b

profiles: ["profiles"]
devices: "meter-poi": {protocol: "modbus-tcp", address: %q, unit: 1, profile: "test-poi-meter"}
channels: "u1/site/power": {device: "meter-poi", point: "power"}
`, meter.Addr)), 0o644))
	cfgPath := filepath.Join(t.TempDir(), "facilityd.json")
	require.NoError(t, os.WriteFile(cfgPath, []byte(fmt.Sprintf(`{"contracts": %q, "state_dir": %q, "listen": "127.0.0.1:0",
	"scheduler": {"kind": "none"}, "binding": %q, "poll": {"period": "50ms", "silence": "3s"}}`, contracts, filepath.Join(t.TempDir(), "state"), bdir)), 0o644))
	cfg, err := facilityd.LoadConfig(cfgPath)
	require.NoError(t, err)
	d, err := facilityd.New(cfg, facilityd.Options{DryRun: true, Out: io.Discard})
	require.NoError(t, err)
	defer d.Close()
	srv := httptest.NewServer(d.Handler())
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = d.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	l := `{boundary="u1-site",channel="u1/site/power"}`
	require.Eventually(t, func() bool {
		v, ok := metric(t, srv.URL, "seam_grid_power_watts"+l)
		return ok && v == 4e6
	}, 30*time.Second, 50*time.Millisecond, "the POI meter's reading, in W")
	v, ok := metric(t, srv.URL, "seam_grid_band_covered_high_hertz"+l)
	assert.True(t, ok)
	assert.Equal(t, 8.0, v, "polled at 20/s: the band up to 20 ÷ 2.5 Hz")
	v, _ = metric(t, srv.URL, "seam_grid_band_clause_high_hertz"+l)
	assert.Equal(t, 20.0, v)
	v, _ = metric(t, srv.URL, `seam_grid_ramp_limit_watts{boundary="u1-site",channel="u1/site/power",direction="up",window="1s"}`)
	assert.Equal(t, 1e6, v, "the contract's 1 MW/s")

	require.NoError(t, meter.Set("power", 5500))
	up1s := `seam_grid_ramp_watts{boundary="u1-site",channel="u1/site/power",direction="up",window="1s"}`
	require.Eventually(t, func() bool {
		p, _ := metric(t, srv.URL, "seam_grid_power_watts"+l)
		r, ok := metric(t, srv.URL, up1s)
		return p == 5.5e6 && ok && r > 0
	}, 30*time.Second, 50*time.Millisecond, "the step is read as a rise within 1 s")
	_, ok = metric(t, srv.URL, `seam_grid_band_rms_watts{band_high_hz="8",band_low_hz="0.1",boundary="u1-site",channel="u1/site/power"}`)
	assert.False(t, ok, "the band needs a whole 60 s window of readings")
}
