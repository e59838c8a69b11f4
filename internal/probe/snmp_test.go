package probe

import (
	"context"
	"testing"
	"time"

	"github.com/gosnmp/gosnmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/binding"
	"github.com/seamdc/seam/internal/clock"
	"github.com/seamdc/seam/internal/probe/probetest"
	"github.com/seamdc/seam/internal/profile"
)

var testEnv = map[string]string{"C": "c0mmunity", "AUTH": "auth-pass-1234", "PRIV": "priv-pass-5678"}

func lookupEnv(k string) (string, bool) { v, ok := testEnv[k]; return v, ok }

func v2cDevice(p *profile.Profile, addr string) *binding.Device {
	return &binding.Device{Name: "pdu1", Protocol: binding.SNMPv2c, Address: addr, Timeout: 500 * time.Millisecond,
		Community: binding.Secret{Ref: "env:C", What: "community of device pdu1"}, ProfileName: p.Name, Profile: p}
}

func v3Device(p *profile.Profile, addr string) *binding.Device {
	return &binding.Device{Name: "pdu1", Protocol: binding.SNMPv3, Address: addr, Timeout: time.Second,
		V3: &binding.V3{User: "seam", AuthProtocol: "SHA", AuthPass: binding.Secret{Ref: "env:AUTH", What: "auth passphrase"},
			PrivProtocol: "AES", PrivPass: binding.Secret{Ref: "env:PRIV", What: "priv passphrase"}},
		ProfileName: p.Name, Profile: p}
}

func startAgent(t testing.TB, p *profile.Profile, values map[string]float64, users ...probetest.User) *probetest.Agent {
	t.Helper()
	a, err := probetest.NewAgent(p, values, "c0mmunity", users...)
	require.NoError(t, err)
	t.Cleanup(a.Stop)
	return a
}

func TestSNMPReadsAPC(t *testing.T) {
	p := shipped(t, "apc-rpdu2")
	a := startAgent(t, p, nil)
	a.SetRaw("1.3.6.1.4.1.318.1.1.26.4.3.1.5.1", 1234) // rPDU2DeviceStatusPower: 12.34 kW
	a.SetRaw("1.3.6.1.4.1.318.1.1.26.6.3.1.6.2", 231)  // phase 2 voltage
	a.SetRaw("1.3.6.1.4.1.318.1.1.26.6.3.1.5.3", 165)  // phase 3 current: 16.5 A
	a.SetRaw("1.3.6.1.4.1.318.1.1.26.9.2.3.1.5.1", 2)  // outlet 1 on
	a.SetRaw("1.3.6.1.4.1.318.1.1.26.6.3.1.7.1", -1)   // phase 1 power: not measured
	d := open(t, v2cDevice(p, a.Addr), Options{LookupEnv: lookupEnv})

	rs := read(t, d)
	assert.Equal(t, 12.34, rs["device-power"].Value)
	assert.Equal(t, "kW", rs["device-power"].Unit)
	assert.Equal(t, 231.0, rs["phase2-voltage"].Value)
	assert.Equal(t, 16.5, rs["phase3-current"].Value)
	assert.Equal(t, "on", rs["outlet1-state"].State)
	require.Equal(t, Bad, rs["phase1-power"].Quality)
	assert.ErrorIs(t, rs["phase1-power"].Err, profile.ErrUnavailable)
	assert.Contains(t, rs["phase1-power"].Err.Error(), "device pdu1 (snmp-v2c "+a.Addr+") point phase1-power at OID 1.3.6.1.4.1.318.1.1.26.6.3.1.7.1: read:")
	assert.Equal(t, map[Quality]int{Good: 11, Bad: 1}, qualities(rs))
	assert.Equal(t, int64(2), d.Requests(), "12 OIDs in GETs of at most 10")
	assert.Equal(t, int64(2), a.Packets.Load())
}

// Raritan: values ÷ 10^decimalDigits, and per-point device timestamps
// that tell a repeated measurement from a fresh one.
func TestSNMPRaritanDigitsAndTimestamps(t *testing.T) {
	p := shipped(t, "raritan-px")
	a := startAgent(t, p, nil)
	const voltage, digits, stamp = "1.3.6.1.4.1.13742.6.5.2.3.1.4.1.1.4", "1.3.6.1.4.1.13742.6.3.3.4.1.7.1.1.4", "1.3.6.1.4.1.13742.6.5.2.3.1.5.1.1.4"
	a.SetRaw(voltage, uint(2301))
	a.SetRaw(digits, uint(1))
	a.SetRaw(stamp, uint(1767225600)) // 2026-01-01T00:00:00Z
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 1, 0, time.UTC))
	d := open(t, v2cDevice(p, a.Addr), Options{LookupEnv: lookupEnv, Clock: clk})

	rs := read(t, d)
	assert.InDelta(t, 230.1, rs["inlet-voltage"].Value, 1e-9)
	assert.Equal(t, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), rs["inlet-voltage"].DeviceTime)
	assert.Equal(t, Good, rs["inlet-voltage"].Quality)

	clk.Advance(3 * time.Second) // the PDU measures every second; its timestamp has not moved
	a.SetRaw("1.3.6.1.4.1.13742.6.5.2.3.1.5.1.1.5", uint(1767225603))
	rs = read(t, d)
	assert.Equal(t, Stale, rs["inlet-voltage"].Quality)
	assert.Equal(t, Good, rs["inlet-power"].Quality, "its own timestamp moved")

	a.SetRaw(stamp, uint(1767225604))
	a.SetRaw(digits, uint(2))
	a.SetRaw(voltage, uint(23015))
	rs = read(t, d)
	assert.Equal(t, Good, rs["inlet-voltage"].Quality)
	assert.InDelta(t, 230.15, rs["inlet-voltage"].Value, 1e-9)
}

func TestSNMPv3AuthPriv(t *testing.T) {
	p := shipped(t, "ietf-ups")
	user := probetest.User{Name: "seam", Auth: gosnmp.SHA, AuthPass: testEnv["AUTH"], Priv: gosnmp.AES, PrivPass: testEnv["PRIV"]}
	a := startAgent(t, p, map[string]float64{"input1-voltage": 400, "on-battery": 1}, user)
	d := open(t, v3Device(p, a.Addr), Options{LookupEnv: lookupEnv})
	rs := read(t, d)
	assert.Equal(t, map[Quality]int{Good: 15}, qualities(rs))
	assert.Equal(t, 400.0, rs["input1-voltage"].Value)
	assert.Equal(t, 1.0, rs["on-battery"].Value)
	assert.Equal(t, "battery", rs["output-source"].State)

	// the agent restarts: a new engine boots counter; the probe starts over
	a.Stop()
	rs = read(t, d)
	assert.Equal(t, map[Quality]int{Bad: 15}, qualities(rs))
	require.NoError(t, a.Start())
	assert.Equal(t, map[Quality]int{Good: 15}, qualities(read(t, d)))

	// a wrong passphrase is an error reading, not a hang or a panic
	bad := v3Device(p, a.Addr)
	bad.V3.PrivPass.Ref = "env:AUTH"
	rs = read(t, open(t, bad, Options{LookupEnv: lookupEnv}))
	assert.Equal(t, map[Quality]int{Bad: 15}, qualities(rs))

	// an unset credential names the variable
	unset := v3Device(p, a.Addr)
	unset.V3.AuthPass.Ref = "env:NOPE"
	rs = read(t, open(t, unset, Options{LookupEnv: lookupEnv}))
	assert.Contains(t, rs["on-battery"].Err.Error(), "connect: auth passphrase: environment variable NOPE is not set")
}

func TestSNMPFaults(t *testing.T) {
	p := shipped(t, "servertech-sentry4")
	tests := []struct {
		name  string
		fault probetest.Action
		want  string
	}{
		{"silence", probetest.Action{Drop: true}, "read: timed out after 500ms"},
		{"late reply", probetest.Action{Delay: 1500 * time.Millisecond}, "read: timed out after 500ms"},
		{"error status", probetest.Action{Status: gosnmp.GenErr}, "read: error status GenErr at variable 0"},
		{"garbage", probetest.Action{Reply: func([]byte) []byte { return []byte{0x30, 0x03, 0x02, 0x01, 0x09} }}, "read: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := startAgent(t, p, map[string]float64{"cord-power": 3.5})
			d := open(t, v2cDevice(p, a.Addr), Options{LookupEnv: lookupEnv})
			a.SetFault(func(*gosnmp.SnmpPacket) probetest.Action { return tt.fault })
			rs := read(t, d)
			require.Equal(t, map[Quality]int{Bad: 7}, qualities(rs))
			assert.Contains(t, rs["cord-power"].Err.Error(), "device pdu1 (snmp-v2c "+a.Addr+") at GET of 7 OIDs from 1.3.6.1.4.1.1718.4.1.3.3.1.3.1.1: "+tt.want)

			a.SetFault(nil)
			time.Sleep(1100 * time.Millisecond) // late replies drain
			rs = read(t, d)
			assert.Equal(t, map[Quality]int{Good: 7}, qualities(rs))
			assert.Equal(t, 3.5, rs["cord-power"].Value)
		})
	}
}

// A reply's variables are checked one by one: missing, noSuchObject,
// and a type other than the profile's.
func TestSNMPVariableChecks(t *testing.T) {
	p := shipped(t, "raritan-px")
	d := &snmpDevice{base: base{dev: v2cDevice(p, "127.0.0.1:1")}}
	pt := p.Point("inlet-voltage")
	tests := []struct {
		vars map[string]gosnmp.SnmpPDU
		want string
	}{
		{map[string]gosnmp.SnmpPDU{}, "the reply does not name this OID"},
		{map[string]gosnmp.SnmpPDU{pt.OID: {Type: gosnmp.NoSuchObject}}, "the agent answers NoSuchObject"},
		{map[string]gosnmp.SnmpPDU{pt.OID: {Type: gosnmp.Integer, Value: 5}}, "the agent answers a Integer, the profile says Gauge32"},
		{map[string]gosnmp.SnmpPDU{pt.OID: {Type: gosnmp.Gauge32, Value: []int{1}}}, "value [1] of Go type []int is not a number"},
	}
	for _, tt := range tests {
		_, err := d.variable(pt, tt.vars)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "point inlet-voltage at OID "+pt.OID+": read: ")
		assert.Contains(t, err.Error(), tt.want)
	}
	v, err := d.variable(pt, map[string]gosnmp.SnmpPDU{pt.OID: {Type: gosnmp.Gauge32, Value: uint(2301)}})
	require.NoError(t, err)
	assert.Equal(t, 2301.0, v)
}

func TestSNMPWalk(t *testing.T) {
	p := shipped(t, "raritan-px")
	a := startAgent(t, p, nil)
	d := open(t, v2cDevice(p, a.Addr), Options{LookupEnv: lookupEnv})
	w := d.(Walker)
	vars, err := w.Walk(context.Background(), "1.3.6.1.4.1.13742.6.5.2.3.1")
	require.NoError(t, err)
	assert.Len(t, vars, 11, "values, timestamps and the state of the inlet sensors")

	// the agent answers tooBig to the second GETBULK: gosnmp's walks return
	// what they have without an error; ours says where it stopped
	n := 0
	a.SetFault(func(req *gosnmp.SnmpPacket) probetest.Action {
		if req.PDUType == gosnmp.GetBulkRequest {
			if n++; n == 2 {
				return probetest.Action{Status: gosnmp.TooBig}
			}
		}
		return probetest.Action{}
	})
	vars, err = w.Walk(context.Background(), "1.3.6.1.4.1.13742.6.5.2.3.1")
	require.Error(t, err)
	assert.Len(t, vars, 10, "one GETBULK of max-repetitions 10")
	assert.Contains(t, err.Error(), "walk: stopped after 10 variables, at 1.3.6.1.4.1.13742.6.5.2.3.1.5.1.1.7: error status TooBig")
}

func TestSNMPWrites(t *testing.T) {
	p := shipped(t, "apc-rpdu2")
	a := startAgent(t, p, nil)
	d := open(t, v2cDevice(p, a.Addr), Options{LookupEnv: lookupEnv})
	ctx := context.Background()
	err := d.Write(ctx, "outlet1-state", 1)
	assert.ErrorIs(t, err, ErrNotWritable)
	assert.ErrorIs(t, d.Write(ctx, "device-power", 0), ErrNotWritable)
	assert.Zero(t, a.Packets.Load(), "refused writes never reach the agent")

	require.NoError(t, d.Write(ctx, "outlet1-command", 3))
	require.Equal(t, []probetest.Set{{OID: "1.3.6.1.4.1.318.1.1.26.9.2.4.1.5.1", Value: 3}}, a.Sets())
}
