package contractc

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/peer"
)

// promtoolTest is a unit test of the example's generated rules for
// Debian's promtool: a feed near its limit, a feed lost, l2's supply too
// warm and its flow below the contract's 3200 L/min, l1 over its CDU
// capacity with one CDU lost, p1's block 50 kW over with one feed lost
// (the summaries say how far over, never a negative headroom), a silent
// device; and a healthy first minute that fires nothing.
const promtoolTest = `rule_files: [rules.yml]
evaluation_interval: 15s
tests:
- interval: 15s
  input_series:
  - series: 'seam_feed_utilization_ratio{module="p1",block="p1/block",feed="p1/block/a"}'
    values: '0.5 0.5 0.5 0.5 0.95x20'
  - series: 'seam_feed_voltage_volts{module="p1",block="p1/block",feed="p1/block/b"}'
    values: '415 415 415 415 0x20'
  - series: 'seam_loop_supply_temperature_celsius{module="l2",loop="l2/loop"}'
    values: '30 30 30 30 33x20'
  - series: 'seam_loop_flow_liters_per_second{module="l2",loop="l2/loop"}'
    values: '60 60 60 60 45x20'
  - series: 'seam_loop_headroom_watts{module="l1",loop="l1/loop"}'
    values: '1e5 1e5 1e5 1e5 -2e4x20'
  - series: 'seam_device_up{device="cdu-l2"}'
    values: '1 1 1 1 0x20'
  - series: 'seam_block_headroom_one_feed_lost_watts{module="p1",block="p1/block"}'
    values: '1e5 1e5 1e5 1e5 -5e4x20'
  alert_rule_test:
  - eval_time: 45s
    alertname: SeamFeedHeadroomLow
    exp_alerts: []
  - eval_time: 45s
    alertname: SeamSupplyTempHigh
    exp_alerts: []
  - eval_time: 3m
    alertname: SeamFeedHeadroomLow
    exp_alerts:
    - exp_labels: {severity: warning, receiver: pager, module: p1, block: p1/block, feed: p1/block/a}
      exp_annotations: {summary: "feed p1/block/a carries 95% of its continuous limit: less than 10 % headroom"}
  - eval_time: 3m
    alertname: SeamFeedOverLimit
    exp_alerts: []
  - eval_time: 3m
    alertname: SeamFeedVoltageLost
    exp_alerts:
    - exp_labels: {severity: warning, seam_alarm: feed_lost, domain: power_block=p1, receiver: facilityd, module: p1, block: p1/block, feed: p1/block/b}
      exp_annotations: {summary: "feed p1/block/b reads 0 V, below half its block's 415 V: the feed is lost"}
  - eval_time: 3m
    alertname: SeamSupplyTempHigh
    exp_alerts:
    - exp_labels: {severity: warning, seam_alarm: high_supply_temp, domain: cooling_loop=l2, receiver: facilityd, module: l2, loop: l2/loop}
      exp_annotations: {summary: "loop l2/loop supplies 33 °C, above 31.5 °C (boundaries.\"l2-mb\".steady.\"supply-temp\")"}
  - eval_time: 3m
    alertname: SeamLoopFlowLow
    exp_alerts:
    - exp_labels: {severity: warning, seam_alarm: low_flow, domain: cooling_loop=l2, receiver: facilityd, module: l2, loop: l2/loop}
      exp_annotations: {summary: "loop l2/loop flows 45 L/s, below the 3200 L/min its contracts guarantee (boundaries.\"l2-mb\".steady.flow)"}
  - eval_time: 3m
    alertname: SeamLoopN1Lost
    exp_alerts:
    - exp_labels: {severity: critical, seam_alarm: cooling_redundancy_lost, domain: cooling_loop=l1, receiver: facilityd, module: l1, loop: l1/loop}
      exp_annotations: {summary: "loop l1/loop carries 20kW more heat than its CDUs remove with one lost (N+1)"}
  - eval_time: 3m
    alertname: SeamPowerN1Lost
    exp_alerts:
    - exp_labels: {severity: critical, receiver: pager, module: p1, block: p1/block}
      exp_annotations: {summary: "power block p1/block: with one feed lost, a surviving feed would carry 50kW more than its continuous limit"}
  - eval_time: 3m
    alertname: SeamDeviceDown
    exp_alerts:
    - exp_labels: {severity: warning, receiver: pager, device: cdu-l2}
      exp_annotations: {summary: "device cdu-l2 gives no fresh good reading: the headroom it measures is unknown"}
`

// promtoolGridTest is a unit test of the example's grid rules (its
// u1-site boundary: 1 MW/s and 5 MW/min ramps, a 20 % swing of 6.5 MW
// within a minute, a line and a band RMS of at most 1 % of it in
// 0.1-20 Hz): a quiet site (figures well under every limit, the band
// covered to 20 Hz) fires nothing; a 1.5 MW rise within a second fires
// the ramp breach and nothing else of the grid; a 100 kW line at 2 Hz
// (70.7 kW RMS) fires both oscillation alerts; the meter polled at 5/s
// (the band covered to 2 Hz) fires the coverage alert after --for.
const promtoolGridTest = `rule_files: [rules.yml]
evaluation_interval: 15s
tests:
- interval: 15s
  input_series:
  - series: 'seam_grid_ramp_watts{boundary="u1-site",channel="u1/site/power",direction="up",window="1s"}'
    values: '2e4x4 1.5e6x8'
  - series: 'seam_grid_ramp_watts{boundary="u1-site",channel="u1/site/power",direction="up",window="1m"}'
    values: '5e4x4 1.5e6x8'
  - series: 'seam_grid_ramp_watts{boundary="u1-site",channel="u1/site/power",direction="down",window="1s"}'
    values: '2e4x12'
  - series: 'seam_grid_swing_watts{boundary="u1-site",channel="u1/site/power",window="1m"}'
    values: '5e4x4 1.2e6x8'
  - series: 'seam_grid_band_line_watts{boundary="u1-site",channel="u1/site/power",band_low_hz="0.1",band_high_hz="20"}'
    values: '1e3x12'
  - series: 'seam_grid_band_rms_watts{boundary="u1-site",channel="u1/site/power",band_low_hz="0.1",band_high_hz="20"}'
    values: '2e3x12'
  - series: 'seam_grid_band_covered_high_hertz{boundary="u1-site",channel="u1/site/power"}'
    values: '20x12'
  alert_rule_test:
  - eval_time: 45s
    alertname: SeamGridRampBreach
    exp_alerts: []
  - eval_time: 2m
    alertname: SeamGridRampBreach
    exp_alerts:
    - exp_labels: {severity: critical, receiver: pager, boundary: u1-site, channel: u1/site/power, direction: up, window: 1s}
      exp_annotations: {summary: "site power at the point of interconnection (u1-site) rose 1.5MW within 1s, more than the 1 MW/s the utility allows (boundaries.\"u1-site\".grid.require.ramp.up.per_second)"}
  - eval_time: 2m
    alertname: SeamGridSwingBreach
    exp_alerts: []
  - eval_time: 2m
    alertname: SeamGridOscillationLine
    exp_alerts: []
  - eval_time: 2m
    alertname: SeamGridOscillationRMS
    exp_alerts: []
  - eval_time: 2m
    alertname: SeamGridBandCoverageShort
    exp_alerts: []
- interval: 15s
  input_series:
  - series: 'seam_grid_ramp_watts{boundary="u1-site",channel="u1/site/power",direction="up",window="1s"}'
    values: '2e5x12'
  - series: 'seam_grid_band_line_watts{boundary="u1-site",channel="u1/site/power",band_low_hz="0.1",band_high_hz="2"}'
    values: '1e3x4 1e5x8'
  - series: 'seam_grid_band_rms_watts{boundary="u1-site",channel="u1/site/power",band_low_hz="0.1",band_high_hz="2"}'
    values: '2e3x4 70710x8'
  - series: 'seam_grid_band_covered_high_hertz{boundary="u1-site",channel="u1/site/power"}'
    values: '2x12'
  alert_rule_test:
  - eval_time: 15s
    alertname: SeamGridBandCoverageShort
    exp_alerts: []
  - eval_time: 2m
    alertname: SeamGridOscillationLine
    exp_alerts:
    - exp_labels: {severity: critical, receiver: pager, boundary: u1-site, channel: u1/site/power, band_low_hz: "0.1", band_high_hz: "2"}
      exp_annotations: {summary: "site power at the point of interconnection (u1-site) oscillates with a line of 100kW in 0.1-2 Hz, above the 1 % (65kW) the utility allows (boundaries.\"u1-site\".grid.require.oscillation.line)"}
  - eval_time: 2m
    alertname: SeamGridOscillationRMS
    exp_alerts:
    - exp_labels: {severity: critical, receiver: pager, boundary: u1-site, channel: u1/site/power, band_low_hz: "0.1", band_high_hz: "2"}
      exp_annotations: {summary: "site power at the point of interconnection (u1-site) carries 70.71kW RMS in 0.1-2 Hz, above the 1 % (65kW) the utility allows (boundaries.\"u1-site\".grid.require.oscillation.rms)"}
  - eval_time: 2m
    alertname: SeamGridRampBreach
    exp_alerts: []
  - eval_time: 2m
    alertname: SeamGridBandCoverageShort
    exp_alerts:
    - exp_labels: {severity: warning, receiver: pager, boundary: u1-site, channel: u1/site/power}
      exp_annotations: {summary: "the live grid figures of u1-site cover 0.1-2 Hz of the clause's 0.1-20 Hz: poll u1/site/power at least 50 times a second (2.5 × 20 Hz), or take the band from an analyser"}
`

// gridExample is the worked example with its grid boundary's POI meter
// channel u1/site/power (written into a copy when the example does not
// name one yet).
func gridExample(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, os.DirFS("../../contracts/examples/threemodule")))
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

// contractc alerts writes a rule file Debian's promtool accepts, whose
// rules fire on the conditions they name and not before: the headroom's
// and, for the example's grid boundary with its POI meter channel, the
// live grid figures' (a ramp breach and an oscillation fire, a quiet
// site does not).
func TestAlertsPromtool(t *testing.T) {
	promtool := peer.Need(t, "promtool")
	dir := t.TempDir()
	rules := filepath.Join(dir, "rules.yml")
	var stdout, stderr bytes.Buffer
	code := Main([]string{"alerts", gridExample(t), "--out", rules, "--silent-for", "1m"}, &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	assert.Equal(t, "wrote "+rules+": 54 Prometheus alerting rules in 7 groups\n", stdout.String())
	out, err := peer.Run(30*time.Second, promtool, "check", "rules", rules)
	require.NoError(t, err, out)
	assert.Contains(t, out, "SUCCESS: 54 rules found", "46 and the grid's 8: four ramps, swing, line, band RMS, coverage")
	test := filepath.Join(dir, "test.yml")
	require.NoError(t, os.WriteFile(test, []byte(promtoolTest), 0o644))
	grid := filepath.Join(dir, "grid.yml")
	require.NoError(t, os.WriteFile(grid, []byte(promtoolGridTest), 0o644))
	out, err = peer.Run(60*time.Second, promtool, "test", "rules", test, grid)
	require.NoError(t, err, out)
	assert.Equal(t, 2, strings.Count(out, "SUCCESS"), out)
}
