package headroom_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/binding"
	"github.com/seamdc/seam/internal/diag"
	"github.com/seamdc/seam/internal/headroom"
	"github.com/seamdc/seam/internal/peer"
	"github.com/seamdc/seam/internal/probe"
)

// the two real recordings, read in place
const recordings = "../../../shared/samples/snmp"

// communities are the recordings' snmpsim communities: their file names.
var communities = map[string]string{
	"UPS": "abbups_abbups",
	"PDU": "algcom-pdu-08p-ac_algcom-pdu-08p-ac",
}

// recordedValues are the recordings' values in canonical units, worked
// out by hand from the files and the profiles' scales.
var recordedValues = map[string]map[string]float64{
	"ups-abb": {"battery-status": 2, "battery-low": 0, "seconds-on-battery": 0, "minutes-remaining": 452 * 60, "battery-charge": 100,
		"battery-voltage": 434.8, "output-source": 3, "on-battery": 0, "output-frequency": 50, "bypass-frequency": 50,
		"input1-frequency": 50, "input2-frequency": 50, "input3-frequency": 50, "input1-voltage": 239, "input2-voltage": 239, "input3-voltage": 238,
		"output1-voltage": 230, "output2-voltage": 230, "output3-voltage": 230, "output1-current": 0.7, "output2-current": 0.8, "output3-current": 0.5,
		"output1-power": 0, "output2-power": 0, "output3-power": 0, "output1-load": 6, "output2-load": 6, "output3-load": 4,
		"bypass1-voltage": 239, "bypass2-voltage": 238, "bypass3-voltage": 238},
	"pdu-algcom": {"device-voltage": 129.1, "device-current": 0.6, "device-power": 0.0976},
}

func init() {
	pdu := recordedValues["pdu-algcom"]
	on := map[int]bool{1: true, 2: true, 5: true, 7: true}
	volts := map[bool]float64{true: 129.1, false: 0}
	amps := map[int]float64{1: 0.1, 2: 0.3, 7: 0.2}
	kw := map[int]float64{1: 0.019, 2: 0.0446, 7: 0.0341}
	for n := 1; n <= 8; n++ {
		state := 0.0
		if on[n] {
			state = 1
		}
		pdu[fmt.Sprintf("outlet%d-state", n)] = state
		pdu[fmt.Sprintf("outlet%d-voltage", n)] = volts[on[n]]
		pdu[fmt.Sprintf("outlet%d-current", n)] = amps[n]
		pdu[fmt.Sprintf("outlet%d-power", n)] = kw[n]
	}
}

func lookup(k string) (string, bool) { v, ok := communities[k]; return v, ok }

// Debian's snmpsim serves the two real recordings (an ABB UPS on the
// standard UPS-MIB, an ALGCOM 8-outlet PDU) and the probe reads every
// point of the profiles written for them, in canonical units; the PDU's
// reading feeds the headroom of a rack PDU.
func TestRecordingsThroughProfiles(t *testing.T) {
	bin := peer.Need(t, "snmpsimd")
	data, err := filepath.Abs(recordings)
	require.NoError(t, err)
	profiles, err := filepath.Abs("../../fixtures/profiles/recorded")
	require.NoError(t, err)
	cache, err := os.MkdirTemp("", "seam-snmpsim-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(cache) })
	require.NoError(t, os.Chmod(cache, 0o777))
	addr := peer.FreeUDP(t)

	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "binding.cue"), []byte(fmt.Sprintf(`package binding

profiles: [%q]
devices: {
	"ups-abb": {protocol: "snmp-v2c", community: "env:UPS", address: %q, profile: "abb-powerscale-ups", timeout: "1 s"}
	"pdu-algcom": {protocol: "snmp-v2c", community: "env:PDU", address: %q, profile: "algcom-pdu-08p", timeout: "1 s"}
}
`, profiles, addr, addr)), 0o644))
	b, diags, err := binding.Load(dir)
	require.NoError(t, err)
	require.Zero(t, diags.Count(diag.Error), "%v", diags)
	site, err := probe.OpenSite(b, probe.Options{LookupEnv: lookup})
	require.NoError(t, err)
	t.Cleanup(func() { site.Close() })

	args := []string{bin, "--data-dir=" + data, "--cache-dir=" + cache, "--agent-udpv4-endpoint=" + addr, "--logging-method=stderr"}
	if os.Geteuid() == 0 {
		args = append(args, "--process-user=nobody", "--process-group=nogroup")
	}
	peer.Start(t, "snmpsimd", peer.Spec{Args: args, Within: 60 * time.Second, Ready: func(ctx context.Context) error {
		_, err := site.Device("ups-abb").Read(ctx)
		return err
	}})

	read := map[string][]probe.Reading{}
	for _, dev := range site.Devices {
		t.Run(dev.Name(), func(t *testing.T) {
			rs, err := dev.Read(context.Background())
			require.NoError(t, err)
			want := recordedValues[dev.Name()]
			require.Len(t, rs, len(want), "every point of the profile has an expected value")
			for _, r := range rs {
				w, ok := want[r.Point]
				require.True(t, ok, "%s: no expected value", r.Point)
				if assert.Equal(t, probe.Good, r.Quality, "%s: %v", r.Point, r.Err) {
					assert.InDelta(t, w, r.Value, 1e-9, "%s", r.Point)
				}
			}
			read[dev.Name()] = rs
		})
	}

	// the PDU's power against a 16 A single-phase-equivalent limit
	m := &headroom.Model{PDUs: []*headroom.PDU{{ID: "lab/r1/a", Rack: "lab/r1", Module: "lab", Feed: "lab/block/a", LimitW: 1000, Siblings: []string{"lab/r1/a"}}},
		Meters: map[string]headroom.Meter{"lab/r1/a/power": {Channel: "lab/r1/a/power", Kind: headroom.Power, At: "lab/r1/a"}}}
	now := time.Now()
	c := headroom.NewCollector(m, map[string][]string{"pdu-algcom/device-power": {"lab/r1/a/power"}}, []string{"pdu-algcom"}, func() time.Time { return now }, 5*time.Second)
	c.Take(probe.Sample{Device: "pdu-algcom", Done: now, Readings: read["pdu-algcom"]})
	got := expose(t, c)
	assert.Contains(t, got, `seam_pdu_power_watts{feed="lab/block/a",module="lab",pdu="lab/r1/a",rack="lab/r1"} 97.6`)
	assert.True(t, strings.Contains(got, `seam_pdu_headroom_watts{feed="lab/block/a",module="lab",pdu="lab/r1/a",rack="lab/r1"} 902.4`), got)
	assert.Contains(t, got, `seam_device_up{device="pdu-algcom"} 1`)
}
