package contractc

import (
	"bytes"
	"os"
	"path/filepath"
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

// contractc alerts writes a rule file Debian's promtool accepts, whose
// rules fire on the conditions they name and not before.
func TestAlertsPromtool(t *testing.T) {
	promtool := peer.Need(t, "promtool")
	dir := t.TempDir()
	rules := filepath.Join(dir, "rules.yml")
	var stdout, stderr bytes.Buffer
	code := Main([]string{"alerts", "../../contracts/examples/threemodule", "--out", rules, "--silent-for", "1m"}, &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	out, err := peer.Run(30*time.Second, promtool, "check", "rules", rules)
	require.NoError(t, err, out)
	assert.Contains(t, out, "SUCCESS: 46 rules found")
	test := filepath.Join(dir, "test.yml")
	require.NoError(t, os.WriteFile(test, []byte(promtoolTest), 0o644))
	out, err = peer.Run(60*time.Second, promtool, "test", "rules", test)
	require.NoError(t, err, out)
	assert.Contains(t, out, "SUCCESS")
}
