package probe

// Interop with third-party peers: snmpsim replaying the recordings in
// fixtures/snmprec, net-snmp's snmpd serving the same values, and a
// pymodbus server that encodes registers itself. .ci/run installs the
// Debian packages; a missing peer fails the test with the package to
// install.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/binding"
	"github.com/seamdc/seam/internal/clock"
	"github.com/seamdc/seam/internal/peer"
)

// sharedDir makes a directory that a peer dropping privileges to
// nobody can read and write.
func sharedDir(t *testing.T) string {
	dir, err := os.MkdirTemp("", "seam-interop-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o777))
	return dir
}

// recorded is what fixtures/snmprec holds, in canonical units, written
// out by hand from the recordings.
var recorded = map[string]map[string]float64{
	"apc-rpdu2": {"device-power": 4.21, "phase1-current": 6.1, "phase2-current": 6.0, "phase3-current": 6.2,
		"phase1-voltage": 230, "phase2-voltage": 231, "phase3-voltage": 229, "phase1-power": 1.40, "phase2-power": 1.38,
		"phase3-power": 1.43, "outlet1-state": 2, "outlet1-command": 1},
	"raritan-px": {"inlet-current": 6.123, "inlet-voltage": 230, "inlet-power": 1.402, "inlet-power-factor": 99,
		"inlet-frequency": 50, "inlet-current-digits": 3, "inlet-voltage-digits": 0, "inlet-power-digits": 0,
		"inlet-power-factor-digits": 2, "inlet-frequency-digits": 1, "inlet-current-time": 1767225600,
		"inlet-voltage-time": 1767225600, "inlet-power-time": 1767225600, "inlet-power-factor-time": 1767225600,
		"inlet-frequency-time": 1767225600, "inlet-voltage-state": 4, "inlet-voltage-lost": 0},
	"servertech-sentry4": {"cord-power": 4.21, "phase1-voltage": 230.1, "phase2-voltage": 231, "phase3-voltage": 229.5,
		"phase1-current": 6.12, "phase2-current": 6, "phase3-current": 6.2},
	"ietf-ups": {"battery-status": 2, "battery-low": 0, "seconds-on-battery": 0, "minutes-remaining": 2520,
		"input-line-bads": 3, "input1-frequency": 50, "input1-voltage": 400, "output-source": 3, "on-battery": 0,
		"output-frequency": 50, "output1-voltage": 400, "output1-current": 125, "output1-power": 86.5, "output1-load": 43,
		"alarms-present": 0},
}

const (
	interopCommunity = "c0mmunity"
	interopAuth      = "auth-pass-1234"
	interopPriv      = "priv-pass-5678"
)

// snmpDevices returns a v2c and a v3 authPriv device of profile name
// at addr; context is the v3 context name and community the v2c
// community.
func snmpDevices(t *testing.T, name, addr, community, context string) []*binding.Device {
	p := shipped(t, name)
	v2 := v2cDevice(p, addr)
	v2.Name, v2.Timeout, v2.Retries = name+"-v2c", time.Second, 1
	v2.Community.Ref = "env:" + community
	v3 := v3Device(p, addr)
	v3.Name, v3.Timeout, v3.Retries = name+"-v3", time.Second, 1
	v3.V3.Context = context
	return []*binding.Device{v2, v3}
}

var interopEnv = map[string]string{"AUTH": interopAuth, "PRIV": interopPriv, "C": interopCommunity,
	"apc-rpdu2": "apc-rpdu2", "raritan-px": "raritan-px", "servertech-sentry4": "servertech-sentry4", "ietf-ups": "ietf-ups"}

func interopLookup(k string) (string, bool) { v, ok := interopEnv[k]; return v, ok }

// readAll reads dev once (the peer is ready: see snmpReady).
func readAll(t *testing.T, dev *binding.Device, clk clock.Clock) map[string]Reading {
	t.Helper()
	return read(t, open(t, dev, Options{LookupEnv: interopLookup, Clock: clk}))
}

// snmpReady is ready once a v2c device of profile reads every point
// good at addr.
func snmpReady(t *testing.T, addr, profile, community string) func(context.Context) error {
	dev := snmpDevices(t, profile, addr, community, "")[0]
	return func(ctx context.Context) error {
		d, err := Open(dev, Options{LookupEnv: interopLookup})
		if err != nil {
			return err
		}
		defer d.Close()
		if _, err := d.Read(ctx); err != nil {
			return err
		}
		return nil
	}
}

func checkRecorded(t *testing.T, dev *binding.Device, rs map[string]Reading) {
	t.Helper()
	want := recorded[dev.ProfileName]
	require.Len(t, want, len(dev.Profile.Points), "every point of %s has an expected value", dev.ProfileName)
	for point, v := range want {
		r := rs[point]
		if assert.Equal(t, Good, r.Quality, "%s %s: %v", dev.Name, point, r.Err) {
			assert.InDelta(t, v, r.Value, 1e-9, "%s %s", dev.Name, point)
		}
	}
}

// snmpsim replays the recordings: each file is a community (v2c) and a
// context (v3).
func TestInteropSnmpsim(t *testing.T) {
	bin := peer.Need(t, "snmpsimd")
	dir := sharedDir(t)
	data, cache := filepath.Join(dir, "data"), filepath.Join(dir, "cache")
	require.NoError(t, os.MkdirAll(cache, 0o777))
	require.NoError(t, os.Chmod(cache, 0o777))
	require.NoError(t, os.CopyFS(data, os.DirFS("../../fixtures/snmprec")))
	require.NoError(t, os.Chmod(data, 0o755))
	addr := peer.FreeUDP(t)
	args := []string{bin, "--data-dir=" + data, "--cache-dir=" + cache, "--agent-udpv4-endpoint=" + addr,
		"--v3-user=seam", "--v3-auth-key=" + interopAuth, "--v3-auth-proto=SHA",
		"--v3-priv-key=" + interopPriv, "--v3-priv-proto=AES", "--logging-method=stderr"}
	if os.Geteuid() == 0 {
		args = append(args, "--process-user=nobody", "--process-group=nogroup")
	}
	peer.Start(t, "snmpsimd", peer.Spec{Args: args, Ready: snmpReady(t, addr, "ietf-ups", "ietf-ups")})

	for name := range recorded {
		for _, dev := range snmpDevices(t, name, addr, name, name) {
			t.Run(dev.Name, func(t *testing.T) {
				clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 10, 0, time.UTC))
				rs := readAll(t, dev, clk)
				checkRecorded(t, dev, rs)
				if name == "raritan-px" {
					assert.Equal(t, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), rs["inlet-voltage"].DeviceTime)
				}
			})
		}
	}

	// a recording never refreshes: Raritan's sensor timestamps stand
	// still, so a second read 3 s later is stale
	dev := snmpDevices(t, "raritan-px", addr, "raritan-px", "")[0]
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 10, 0, time.UTC))
	d := open(t, dev, Options{LookupEnv: interopLookup, Clock: clk})
	require.Equal(t, Good, read(t, d)["inlet-voltage"].Quality)
	clk.Advance(3 * time.Second)
	assert.Equal(t, Stale, read(t, d)["inlet-voltage"].Quality)

	// a walk of the recorded inlet sensor table through max-repetitions 10
	vars, err := d.(Walker).Walk(context.Background(), "1.3.6.1.4.1.13742.6.5.2.3.1")
	require.NoError(t, err)
	assert.Len(t, vars, 14)
}

// net-snmp's snmpd serves the recorded values (override directives
// generated from the .snmprec files), v2c and v3 authPriv SHA/AES.
func TestInteropSnmpd(t *testing.T) {
	bin := peer.Need(t, "snmpd")
	dir := sharedDir(t)
	addr := peer.FreeUDP(t)
	conf := []string{"agentAddress udp:" + addr, "rocommunity " + interopCommunity + " 127.0.0.1",
		fmt.Sprintf("createUser seam SHA %q AES %q", interopAuth, interopPriv), "rouser seam priv"}
	for name := range recorded {
		lines, err := overrides(filepath.Join("../../fixtures/snmprec", name+".snmprec"))
		require.NoError(t, err)
		conf = append(conf, lines...)
	}
	confPath := filepath.Join(dir, "snmpd.conf")
	require.NoError(t, os.WriteFile(confPath, []byte(strings.Join(conf, "\n")+"\n"), 0o644))
	peer.Start(t, "snmpd", peer.Spec{Env: []string{"SNMP_PERSISTENT_DIR=" + filepath.Join(dir, "persist"), "MIBS="},
		Args:  []string{bin, "-f", "-Le", "-C", "-c", confPath, "-p", filepath.Join(dir, "snmpd.pid")},
		Ready: snmpReady(t, addr, "ietf-ups", "C")})

	for name := range recorded {
		for _, dev := range snmpDevices(t, name, addr, "C", "") {
			t.Run(dev.Name, func(t *testing.T) {
				checkRecorded(t, dev, readAll(t, dev, nil))
			})
		}
	}
}

// overrides turns a .snmprec file into snmpd override directives for
// everything outside the system group (which snmpd serves itself).
func overrides(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	types := map[string]string{"2": "integer", "4": "octet_str", "6": "object_id", "65": "counter", "66": "unsigned", "67": "timeticks"}
	var out []string
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		parts := strings.SplitN(sc.Text(), "|", 3)
		if len(parts) != 3 {
			return nil, fmt.Errorf("%s:%d: want OID|tag|value", path, n)
		}
		if strings.HasPrefix(parts[0], "1.3.6.1.2.1.1.") {
			continue
		}
		typ, ok := types[parts[1]]
		if !ok {
			return nil, fmt.Errorf("%s:%d: tag %s has no snmpd override type", path, n, parts[1])
		}
		out = append(out, fmt.Sprintf("override .%s %s %q", parts[0], typ, parts[2]))
	}
	return out, sc.Err()
}

type pyPoint struct {
	Table   string  `json:"table"`
	Address int     `json:"address"`
	Type    string  `json:"type"`
	Order   string  `json:"order,omitempty"`
	Raw     float64 `json:"raw"`
	point   string
	want    float64 // canonical, written out by hand
}

// A pymodbus server encodes registers with Python's struct module; the
// probe reads them through the CDU profiles and writes a setpoint back.
func TestInteropPymodbus(t *testing.T) {
	python := peer.Python(t, "pymodbus")
	tests := map[string][]pyPoint{
		"generic-cdu-int16": {
			{point: "secondary-supply-temp", Raw: 325, want: 32.5},
			{point: "secondary-return-temp", Raw: -45, want: -4.5},
			{point: "secondary-flow", Raw: 12345, want: 1234.5},
			{point: "heat-load", Raw: 12000, want: 1200},
			{point: "alarm-word", Raw: 0b10, want: 2},
			{point: "heartbeat", Raw: 17, want: 17},
			{point: "run-hours", Raw: 70000, want: 70000 * 3600},
			{point: "supply-temp-setpoint", Raw: 180, want: 18},
		},
		"generic-cdu-float32": {
			{point: "secondary-supply-temp", Raw: 32.57, want: float64(float32(32.57))},
			{point: "secondary-flow", Raw: 60, want: 1000},
			{point: "secondary-supply-pressure", Raw: 3.5, want: 350},
			{point: "heat-load", Raw: 1234.5, want: 1234.5},
			{point: "heartbeat", Raw: 5, want: 5},
			{point: "leak", Raw: 1, want: 1},
			{point: "supply-temp-setpoint", Raw: 18.5, want: 18.5},
		},
	}
	for name, points := range tests {
		t.Run(name, func(t *testing.T) {
			p := shipped(t, name)
			for i := range points {
				pt := p.Point(points[i].point)
				require.NotNil(t, pt, points[i].point)
				points[i].Table, points[i].Address, points[i].Type, points[i].Order = string(pt.Table), int(pt.Address), string(pt.Type), string(pt.Order)
			}
			spec, err := json.Marshal(map[string]any{"unit": 1, "points": points})
			require.NoError(t, err)
			specPath := filepath.Join(t.TempDir(), "spec.json")
			require.NoError(t, os.WriteFile(specPath, spec, 0o644))
			addr := peer.FreeTCP(t)
			_, port, _ := net.SplitHostPort(addr)
			peer.Start(t, "pymodbus", peer.Spec{Args: []string{python, "testdata/pymodbus_server.py", specPath, port}, Ready: peer.TCP(addr)})

			dev := mbDevice(p, addr)
			dev.Unit, dev.Timeout = 1, time.Second
			d := open(t, dev, Options{})
			rs := read(t, d)
			assert.Equal(t, map[Quality]int{Good: len(p.Points)}, qualities(rs), "%v", firstErr(values(rs)))
			for _, pp := range points {
				assert.InDelta(t, pp.want, rs[pp.point].Value, 1e-9, pp.point)
			}
			assert.Equal(t, 1.0, rs["leak"].Value)
			assert.Equal(t, 0.0, rs["redundancy-lost"].Value)
			require.NoError(t, d.Write(context.Background(), "supply-temp-setpoint", 21.5))
			assert.Equal(t, 21.5, read(t, d)["supply-temp-setpoint"].Value, "written through pymodbus and read back")
		})
	}
}

func values(m map[string]Reading) []Reading {
	var out []Reading
	for _, r := range m {
		out = append(out, r)
	}
	return out
}
