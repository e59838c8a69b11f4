package device

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/gosnmp/gosnmp"
	"github.com/simonvetter/modbus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/profile"
)

var (
	loadOnce sync.Once
	profiles *profile.Set
	loadErr  error
)

func shipped(t *testing.T, name string) *profile.Profile {
	t.Helper()
	loadOnce.Do(func() { profiles, loadErr = profile.MustLoad("../../../fixtures/profiles") })
	require.NoError(t, loadErr)
	p := profiles.Get(name)
	require.NotNil(t, p, name)
	return p
}

// fakeSource is an element with fixed signals that records commands.
type fakeSource struct {
	mu       sync.Mutex
	sig      map[string]float64
	commands []string
	refuse   error
}

func (f *fakeSource) Signal(n string) (float64, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	v, ok := f.sig[n]
	return v, ok
}

func (f *fakeSource) set(n string, v float64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sig[n] = v
}

func (f *fakeSource) command(sig string, v float64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.refuse != nil {
		return f.refuse
	}
	f.commands = append(f.commands, fmt.Sprintf("%s=%g", sig, v))
	f.sig[sig] = v
	return nil
}

func mapAll(p *profile.Profile, names map[string]string) []Mapping {
	var out []Mapping
	for pt, sig := range names {
		out = append(out, Mapping{Point: p.Point(pt), Signal: sig})
	}
	return out
}

func loadBank(t *testing.T) (*Device, *fakeSource) {
	p := shipped(t, "generic-loadbank")
	src := &fakeSource{sig: map[string]float64{"enable": 1, "setpoint": 1250.5, "applied": 1234.5, "voltage": 415.2,
		"current": 1716.8, "status": 14, "fault": 0, "remote": 1, "heartbeat": 7, "fault-reset": 0, "emergency-stop": 0}}
	m := mapAll(p, map[string]string{"enable": "enable", "setpoint": "setpoint", "applied": "applied", "voltage": "voltage",
		"current": "current", "status": "status", "fault": "fault", "remote": "remote", "heartbeat": "heartbeat", "fault-reset": "fault-reset"})
	d, err := New(Spec{Name: "lb-ma", Element: "lb-ma", Profile: p, Mappings: m}, src, src.command, nil)
	require.NoError(t, err)
	d.Refresh(time.Unix(1000, 0))
	require.NoError(t, d.Start())
	t.Cleanup(d.Stop)
	return d, src
}

func modbusClient(t *testing.T, addr string) *modbus.ModbusClient {
	t.Helper()
	c, err := modbus.NewClient(&modbus.ClientConfiguration{URL: "tcp://" + addr, Timeout: 300 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, c.Open())
	t.Cleanup(func() { c.Close() })
	return c
}

// readPoint reads one point with a bare client and decodes it with the
// profile: what any client following the profile gets.
func readPoint(t *testing.T, c *modbus.ModbusClient, pt *profile.Point) (float64, error) {
	kind := modbus.INPUT_REGISTER
	if pt.Table == profile.Holding {
		kind = modbus.HOLDING_REGISTER
	}
	regs, err := c.ReadRegisters(pt.Address, uint16(pt.Registers()), kind)
	if err != nil {
		return 0, err
	}
	return pt.Get(regs, 0)
}

func TestModbusServesTheProfilesRegisters(t *testing.T) {
	d, src := loadBank(t)
	c := modbusClient(t, d.Addr())
	for _, name := range []string{"applied", "setpoint", "voltage", "current", "status", "remote", "heartbeat"} {
		pt := d.Profile().Point(name)
		v, err := readPoint(t, c, pt)
		require.NoError(t, err, name)
		want, _ := src.Signal(name)
		assert.InDelta(t, want, v, pt.Scale/2+1e-9, name)
	}
	// every register of the plan is readable in the planned requests
	for _, r := range d.Profile().Plan {
		kind := modbus.INPUT_REGISTER
		if r.Table == profile.Holding {
			kind = modbus.HOLDING_REGISTER
		}
		_, err := c.ReadRegisters(r.Start, r.Count, kind)
		require.NoError(t, err, r.String())
	}
	_, err := c.ReadRegisters(100, 2, modbus.INPUT_REGISTER)
	assert.ErrorIs(t, err, modbus.ErrIllegalDataAddress)
}

func TestModbusWritesBecomeCommands(t *testing.T) {
	d, src := loadBank(t)
	c := modbusClient(t, d.Addr())
	sp := d.Profile().Point("setpoint")
	regs := make([]uint16, 2)
	require.NoError(t, sp.Put(regs, 1800, 0))
	require.NoError(t, c.WriteRegisters(sp.Address, regs))
	assert.Equal(t, []string{"setpoint=1800"}, src.commands)
	v, err := readPoint(t, c, sp)
	require.NoError(t, err)
	assert.InDelta(t, 1800, v, 1e-9, "a holding register reads back what was written")
}

func TestModbusRefusesWritesToReadOnlyRegisters(t *testing.T) {
	d, src := loadBank(t)
	c := modbusClient(t, d.Addr())
	// holding register 2 is the low word of the 32-bit setpoint (1..2): a
	// write that splits a point
	assert.ErrorIs(t, c.WriteRegister(2, 5), modbus.ErrIllegalDataAddress)
	assert.ErrorIs(t, c.WriteRegister(40, 5), modbus.ErrIllegalDataAddress, "past the last register")
	assert.Empty(t, src.commands)

	p := shipped(t, "generic-cdu-int16")
	mode := p.Point("control-mode") // a holding register the profile does not declare writable
	cdu, err := New(Spec{Name: "cdu", Profile: p, Mappings: []Mapping{{Point: mode, Signal: "mode"}}}, src, src.command, nil)
	require.NoError(t, err)
	require.NoError(t, cdu.Start())
	t.Cleanup(cdu.Stop)
	cc := modbusClient(t, cdu.Addr())
	assert.ErrorIs(t, cc.WriteRegister(mode.Address, 1), modbus.ErrIllegalDataAddress)
	assert.Empty(t, src.commands)
	v, err := readPoint(t, cc, mode)
	require.NoError(t, err)
	assert.Zero(t, v, "the refused write changed nothing")
}

type refusal struct{ code int }

func (r refusal) Error() string        { return "refused" }
func (r refusal) ModbusException() int { return r.code }

func TestModbusRefusedCommandIsAnExceptionAndKeepsRegisters(t *testing.T) {
	d, src := loadBank(t)
	c := modbusClient(t, d.Addr())
	src.refuse = refusal{1}
	err := c.WriteRegister(d.Profile().Point("enable").Address, 0)
	assert.ErrorIs(t, err, modbus.ErrIllegalFunction)
	v, err := readPoint(t, c, d.Profile().Point("enable"))
	require.NoError(t, err)
	assert.Equal(t, 1.0, v)
	src.refuse = errors.New("anything else")
	err = c.WriteRegister(d.Profile().Point("enable").Address, 0)
	assert.ErrorIs(t, err, modbus.ErrServerDeviceFailure)
}

func TestModbusUnitID(t *testing.T) {
	d, _ := loadBank(t)
	c := modbusClient(t, d.Addr())
	require.NoError(t, c.SetUnitId(7))
	_, err := c.ReadRegisters(0, 1, modbus.INPUT_REGISTER)
	assert.ErrorIs(t, err, modbus.ErrGWTargetFailedToRespond)
}

func TestModbusFaults(t *testing.T) {
	d, src := loadBank(t)
	c := modbusClient(t, d.Addr())
	pt := d.Profile().Point("applied")

	require.NoError(t, d.SetFault(FaultException, 6, true))
	_, err := readPoint(t, c, pt)
	assert.ErrorIs(t, err, modbus.ErrServerDeviceBusy)
	require.NoError(t, d.SetFault(FaultException, 0, false))

	require.NoError(t, d.SetFault(FaultTimeout, 0, true))
	_, err = readPoint(t, c, pt)
	assert.ErrorIs(t, err, modbus.ErrRequestTimedOut)
	require.NoError(t, d.SetFault(FaultTimeout, 0, false))
	_, err = readPoint(t, c, pt)
	assert.NoError(t, err, "after a timeout the client skips the late reply and reads again")

	require.NoError(t, d.SetFault(FaultStale, 0, true))
	src.set("applied", 99)
	d.Refresh(time.Unix(1001, 0))
	v, err := readPoint(t, c, pt)
	require.NoError(t, err)
	assert.InDelta(t, 1234.5, v, 1e-9, "a stale device keeps serving its old value")
	require.NoError(t, d.SetFault(FaultStale, 0, false))
	d.Refresh(time.Unix(1002, 0))
	v, _ = readPoint(t, c, pt)
	assert.InDelta(t, 99, v, 1e-9)

	assert.ErrorIs(t, d.SetFault(FaultGarbled, 0, true), ErrUnsupportedFault)
}

func TestModbusReboot(t *testing.T) {
	d, _ := loadBank(t)
	addr := d.Addr()
	c := modbusClient(t, addr)
	pt := d.Profile().Point("heartbeat")
	require.NoError(t, d.SetFault(FaultReboot, 0, true))
	_, err := readPoint(t, c, pt)
	assert.Error(t, err, "a rebooting device drops its connections")
	c2, _ := modbus.NewClient(&modbus.ClientConfiguration{URL: "tcp://" + addr, Timeout: 200 * time.Millisecond})
	assert.Error(t, c2.Open(), "and refuses new ones")
	require.NoError(t, d.SetFault(FaultReboot, 0, false))
	assert.Equal(t, addr, d.Addr())
	c3 := modbusClient(t, addr)
	_, err = readPoint(t, c3, pt)
	assert.NoError(t, err)
}

func raritan(t *testing.T, snmp SNMP) (*Device, *fakeSource) {
	p := shipped(t, "raritan-px")
	src := &fakeSource{sig: map[string]float64{"voltage": 414.96, "current": 95.07, "power": 64.93, "power-factor": 95,
		"frequency": 49.98, "state": 4}}
	m := mapAll(p, map[string]string{"inlet-voltage": "voltage", "inlet-current": "current", "inlet-power": "power",
		"inlet-power-factor": "power-factor", "inlet-frequency": "frequency", "inlet-voltage-state": "state",
		"inlet-voltage-time": SigTime, "inlet-current-time": SigTime})
	for pt, digits := range map[string]float64{"inlet-voltage-digits": 1, "inlet-current-digits": 2, "inlet-power-digits": 0,
		"inlet-power-factor-digits": 2, "inlet-frequency-digits": 2} {
		m = append(m, Mapping{Point: p.Point(pt), Const: digits, IsConst: true})
	}
	d, err := New(Spec{Name: "pdu-ma-r01-a", Profile: p, Mappings: m, SNMP: snmp}, src, nil, nil)
	require.NoError(t, err)
	d.Refresh(time.Unix(1700000000, 0))
	require.NoError(t, d.Start())
	t.Cleanup(d.Stop)
	return d, src
}

func snmpClient(t *testing.T, addr string, mut func(*gosnmp.GoSNMP)) *gosnmp.GoSNMP {
	t.Helper()
	host, port := splitHostPort(t, addr)
	g := &gosnmp.GoSNMP{Target: host, Port: port, Transport: "udp", Community: "public", Version: gosnmp.Version2c,
		Timeout: 300 * time.Millisecond, Retries: 0, MaxOids: 10}
	if mut != nil {
		mut(g)
	}
	require.NoError(t, g.Connect())
	t.Cleanup(func() { g.Conn.Close() })
	return g
}

func splitHostPort(t *testing.T, addr string) (string, uint16) {
	var host string
	var port uint16
	_, err := fmt.Sscanf(addr, "127.0.0.1:%d", &port)
	require.NoError(t, err, addr)
	host = "127.0.0.1"
	return host, port
}

// getValues reads points and decodes them with the profile, digits and all.
func getValues(g *gosnmp.GoSNMP, p *profile.Profile, names ...string) (map[string]float64, error) {
	var oids []string
	want := map[string]*profile.Point{}
	for _, n := range names {
		pt := p.Point(n)
		oids = append(oids, pt.OID)
		if pt.Digits != "" {
			oids = append(oids, p.Point(pt.Digits).OID)
		}
		want[n] = pt
	}
	res, err := g.Get(oids)
	if err != nil {
		return nil, err
	}
	raw := map[string]float64{}
	for _, v := range res.Variables {
		if v.Type == gosnmp.NoSuchObject || v.Type == gosnmp.NoSuchInstance {
			return nil, fmt.Errorf("%s: no such object", v.Name)
		}
		for _, pt := range p.Points {
			if "."+pt.OID == v.Name {
				raw[pt.Name], _ = pt.FromSNMP(v.Value)
			}
		}
	}
	out := map[string]float64{}
	for n, pt := range want {
		digits := 0
		if pt.Digits != "" {
			digits = int(raw[pt.Digits])
		}
		out[n], err = pt.Value(raw[n], digits)
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

func TestSNMPv2cServesTheProfilesOIDsWithDigits(t *testing.T) {
	d, src := raritan(t, SNMP{Version: "v2c", Community: "public"})
	g := snmpClient(t, d.Addr(), nil)
	got, err := getValues(g, d.Profile(), "inlet-voltage", "inlet-current", "inlet-power", "inlet-frequency", "inlet-power-factor")
	require.NoError(t, err)
	assert.InDelta(t, 415.0, got["inlet-voltage"], 1e-9, "one decimal digit")
	assert.InDelta(t, 95.07, got["inlet-current"], 1e-9, "two decimal digits")
	assert.InDelta(t, 64.93, got["inlet-power"], 0.5e-3, "W on the wire, kW canonical")
	assert.InDelta(t, 49.98, got["inlet-frequency"], 1e-9)
	assert.InDelta(t, 95, got["inlet-power-factor"], 1e-9)
	res, err := g.Get([]string{d.Profile().Point("inlet-voltage-time").OID})
	require.NoError(t, err)
	assert.Equal(t, uint(1700000000), res.Variables[0].Value)
	_ = src
}

func TestSNMPWrongCommunityGetsNoAnswer(t *testing.T) {
	d, _ := raritan(t, SNMP{Version: "v2c", Community: "public"})
	g := snmpClient(t, d.Addr(), func(g *gosnmp.GoSNMP) { g.Community = "private" })
	_, err := g.Get([]string{d.Profile().Point("inlet-voltage").OID})
	assert.ErrorContains(t, err, "timeout")
}

func v3(user, auth, priv string) func(*gosnmp.GoSNMP) {
	return func(g *gosnmp.GoSNMP) {
		g.Version, g.SecurityModel, g.MsgFlags = gosnmp.Version3, gosnmp.UserSecurityModel, gosnmp.AuthPriv
		g.SecurityParameters = &gosnmp.UsmSecurityParameters{UserName: user, AuthenticationProtocol: gosnmp.SHA,
			AuthenticationPassphrase: auth, PrivacyProtocol: gosnmp.AES, PrivacyPassphrase: priv}
	}
}

func TestSNMPv3AuthPriv(t *testing.T) {
	sec := SNMP{Version: "v3", User: "seam", AuthProto: "SHA", AuthPass: "seam-auth-pass", PrivProto: "AES", PrivPass: "seam-priv-pass"}
	d, _ := raritan(t, sec)
	g := snmpClient(t, d.Addr(), v3("seam", "seam-auth-pass", "seam-priv-pass"))
	got, err := getValues(g, d.Profile(), "inlet-voltage", "inlet-frequency")
	require.NoError(t, err)
	assert.InDelta(t, 415.0, got["inlet-voltage"], 1e-9)

	bad := snmpClient(t, d.Addr(), v3("seam", "wrong-auth-pass", "seam-priv-pass"))
	_, err = bad.Get([]string{d.Profile().Point("inlet-voltage").OID})
	assert.Error(t, err, "a wrong authentication key is refused")
	v2 := snmpClient(t, d.Addr(), nil)
	_, err = v2.Get([]string{d.Profile().Point("inlet-voltage").OID})
	assert.Error(t, err, "a v3 agent does not answer v2c")
}

func TestSNMPWalkReachesEveryOID(t *testing.T) {
	d, _ := raritan(t, SNMP{Version: "v2c", Community: "public"})
	g := snmpClient(t, d.Addr(), nil)
	pdus, err := g.BulkWalkAll("1.3.6.1.4.1.13742")
	require.NoError(t, err)
	oids := map[string]bool{}
	for _, pt := range d.Profile().Points {
		oids[pt.OID] = true
	}
	assert.Len(t, pdus, len(oids))
}

func TestSNMPFaults(t *testing.T) {
	d, src := raritan(t, SNMP{Version: "v2c", Community: "public"})
	g := snmpClient(t, d.Addr(), nil)
	oid := d.Profile().Point("inlet-voltage").OID

	require.NoError(t, d.SetFault(FaultGarbled, 0, true))
	_, err := g.Get([]string{oid})
	assert.Error(t, err, "a garbled reply does not decode")
	require.NoError(t, d.SetFault(FaultGarbled, 0, false))

	require.NoError(t, d.SetFault(FaultStale, 0, true))
	src.set("voltage", 380)
	d.Refresh(time.Unix(1700000001, 0))
	got, err := getValues(g, d.Profile(), "inlet-voltage")
	require.NoError(t, err)
	assert.InDelta(t, 415.0, got["inlet-voltage"], 1e-9)
	res, _ := g.Get([]string{d.Profile().Point("inlet-voltage-time").OID})
	assert.Equal(t, uint(1700000000), res.Variables[0].Value, "a stale device's timestamp stands still")
	require.NoError(t, d.SetFault(FaultStale, 0, false))

	addr := d.Addr()
	require.NoError(t, d.SetFault(FaultReboot, 0, true))
	_, err = g.Get([]string{oid})
	assert.Error(t, err)
	require.NoError(t, d.SetFault(FaultReboot, 0, false))
	assert.Equal(t, addr, d.Addr())
	_, err = g.Get([]string{oid})
	assert.NoError(t, err)

	assert.ErrorIs(t, d.SetFault(FaultException, 6, true), ErrUnsupportedFault)
}

func TestMappingsThatFightAreRefused(t *testing.T) {
	p := shipped(t, "raritan-px")
	_, err := New(Spec{Name: "x", Profile: p, SNMP: SNMP{Version: "v2c"}, Mappings: []Mapping{
		{Point: p.Point("inlet-voltage-state"), Signal: "a"}, {Point: p.Point("inlet-voltage-lost"), Signal: "b"}}}, nil, nil, nil)
	assert.ErrorContains(t, err, "both serve OID")
}

func TestSaturation(t *testing.T) {
	p := shipped(t, "generic-loadbank")
	pt := p.Point("voltage") // uint16 × 0.1 V
	assert.InDelta(t, 6553.5, saturate(pt, 1e6, 0), 1e-9)
	assert.InDelta(t, 0, saturate(pt, -5, 0), 1e-9)
	assert.False(t, math.IsNaN(saturate(pt, 10, 0)))
}
