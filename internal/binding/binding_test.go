package binding

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/diag"
	"github.com/seamdc/seam/internal/profile"
	"github.com/seamdc/seam/internal/units"
)

func TestExampleBinding(t *testing.T) {
	b, diags, err := Load("../../fixtures/bindings/threemodule")
	require.NoError(t, err)
	require.Empty(t, diags)
	assert.Len(t, b.Devices, 16)
	assert.Len(t, b.Channels, 49, "every channel of the three-module site, and the point-of-interconnection meter")
	assert.Len(t, b.LoadBanks, 3)

	ch := b.Channel("l1/ma/supply-temp")
	require.NotNil(t, ch)
	assert.Equal(t, "cdu-l1", ch.Device.Name)
	assert.Equal(t, units.Temperature, ch.Point.Dim)
	assert.Equal(t, "binding.cue", ch.Pos.File)

	pdu := b.Device("pdu-p1-a")
	assert.Equal(t, SNMPv3, pdu.Protocol)
	assert.Equal(t, "SHA", pdu.V3.AuthProtocol)
	assert.Equal(t, "AES", pdu.V3.PrivProtocol)
	assert.Equal(t, "env:SEAM_SNMP_PRIV", pdu.V3.PrivPass.Ref)

	lb := b.LoadBank("lb-mb")
	require.NotNil(t, lb)
	assert.True(t, lb.Point(RoleSetpoint).Writable())
	assert.False(t, lb.Point(RoleApplied).Writable())
	assert.Equal(t, uint8(1), lb.Device.Unit)
	assert.Equal(t, &Instrument{Make: "Avtron", Model: "K595", Serial: "AVT-K595-20417", Calibrated: "2026-05-12", Due: "2027-05-12",
		Certificate: "cal/avt-k595-20417-2026.pdf"}, lb.Device.Instrument)
	assert.False(t, lb.Device.Instrument.Overdue("2027-05-12"), "due that day: not yet overdue")
	assert.True(t, lb.Device.Instrument.Overdue("2027-05-13"))
	assert.Nil(t, pdu.Instrument)
}

// bindingDir writes a binding that reads the shipped profiles (the
// check against a site's contracts is internal/bindreq's test).
func bindingDir(t *testing.T, body string) string {
	t.Helper()
	dir := t.TempDir()
	profiles, err := filepath.Abs("../../fixtures/profiles")
	require.NoError(t, err)
	src := "package b\n\nprofiles: [\"" + profiles + "\"]\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "b.cue"), []byte(src+body), 0o644))
	return dir
}

func TestLoadErrors(t *testing.T) {
	const cdu = "devices: cdu: {protocol: \"modbus-tcp\", address: \"127.0.0.1:5020\", profile: \"generic-cdu-int16\"}\n"
	tests := []struct {
		name, body, rule, msg string
		line                  int // 0: do not check
	}{
		{"unknown profile", "devices: d: {protocol: \"modbus-tcp\", address: \"h:1\", profile: \"generic-cdu-int61\"}\n",
			RuleUnknownProfile, `no profile "generic-cdu-int61"`, 4},
		{"protocol mismatch", "devices: d: {protocol: \"snmp-v2c\", address: \"h:161\", community: \"env:C\", profile: \"generic-cdu-int16\"}\n",
			RuleProtocol, "protocol snmp-v2c cannot read profile generic-cdu-int16, which is modbus", 4},
		{"unknown device", cdu + "channels: \"l1/ma/flow\": {device: \"cdu2\", point: \"secondary-flow\"}\n",
			RuleUnknownDevice, `no device "cdu2"`, 5},
		{"unknown point", cdu + "channels: \"l1/ma/flow\": {device: \"cdu\", point: \"secondry-flow\"}\n",
			RuleUnknownPoint, `profile generic-cdu-int16 of device cdu has no point "secondry-flow"`, 5},
		{"ambient not bound", cdu + "channels: \"l1/ma/flow\": {device: \"cdu\", point: \"secondary-flow\"}\nambient: [\"l1/ma/flow\", \"site/air-temp\"]\n",
			RuleUnknownChannel, `ambient[1]: channel "site/air-temp" is not bound in channels`, 6},
		{"calibration date", "devices: d: {protocol: \"modbus-tcp\", address: \"h:1\", profile: \"generic-cdu-int16\",\n\tinstrument: {serial: \"S1\", calibrated: \"12/05/2026\"}}\n",
			"SCHEMA001", `devices.d.instrument.calibrated: invalid value "12/05/2026"`, 5},
		{"inline community", "devices: d: {protocol: \"snmp-v2c\", address: \"h:161\", community: \"public\", profile: \"apc-rpdu2\"}\n",
			RuleInlineSecret, "community is written inline", 4},
		{"inline v3 passphrase", "devices: d: {protocol: \"snmp-v3\", address: \"h:161\", profile: \"apc-rpdu2\", user: \"u\",\n\tauth: {passphrase: \"hunter2hunter2\"}}\n",
			RuleInlineSecret, "auth passphrase is written inline", 5},
		{"address without port", "devices: d: {protocol: \"modbus-tcp\", address: \"127.0.0.1\", profile: \"generic-cdu-int16\"}\n",
			RuleAddress, `"127.0.0.1" is not host:port`, 4},
		{"community on a modbus device", "devices: d: {protocol: \"modbus-tcp\", address: \"h:1\", profile: \"generic-cdu-int16\", community: \"env:X\"}\n",
			"SCHEMA003", "field not allowed", 4},
		{"bad timeout", "devices: d: {protocol: \"modbus-tcp\", address: \"h:1\", profile: \"generic-cdu-int16\", timeout: \"1 kW\"}\n",
			RuleDuration, `"1 kW" is not a positive time`, 4},
		{"load bank role not writable", "devices: lb: {protocol: \"modbus-tcp\", address: \"h:1\", profile: \"generic-loadbank\"}\n" +
			"loadbanks: \"lb-ma\": {device: \"lb\", points: setpoint: \"applied\"}\n",
			RuleRole, "the setpoint role needs a writable point, and applied of profile generic-loadbank is read-only", 5},
		{"load bank on a CDU", cdu + "loadbanks: \"lb-ma\": {device: \"cdu\"}\n",
			RuleUnknownPoint, `profile generic-cdu-int16 of device cdu has no point`, 5},
		{"stray top-level field", cdu + "channel: {}\n", "SCHEMA003", `unknown top-level field "channel"`, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, diags, err := Load(bindingDir(t, tt.body))
			require.NoError(t, err)
			d := find(diags, tt.rule)
			require.NotNil(t, d, "want rule %s, got %v", tt.rule, diags)
			assert.Contains(t, d.Message, tt.msg)
			assert.Equal(t, "b.cue", d.Pos.File)
			if tt.line > 0 {
				assert.Equal(t, tt.line, d.Pos.Line, d.Message)
			}
		})
	}
}

func find(diags diag.List, rule string) *diag.Diagnostic {
	for i := range diags {
		if diags[i].Rule == rule {
			return &diags[i]
		}
	}
	return nil
}

// Against the example site: an unbound channel, a channel the site does
// not have, and a channel bound to a point of the wrong dimension.
func TestCheckLoadBanks(t *testing.T) {
	b := &Binding{LoadBanks: []*LoadBank{{Name: "lb-mx"}}}
	diags := b.Check(Requirements{Source: "site s", LoadBanks: []string{"lb-ma"}})
	require.Len(t, diags, 2)
	assert.Equal(t, RuleUnbound, diags[0].Rule)
	assert.Contains(t, diags[0].Message, `load bank "lb-ma" of site s is not bound`)
	assert.Equal(t, RuleUnknownChannel, diags[1].Rule)
}

func TestCheckAlarmDimension(t *testing.T) {
	set, err := profile.MustLoad("../../fixtures/profiles")
	require.NoError(t, err)
	dev := &Device{Name: "cdu", Profile: set.Get("generic-cdu-int16"), ProfileName: "generic-cdu-int16"}
	b := &Binding{Devices: []*Device{dev}, Channels: []*Channel{
		{Name: "leak", Device: dev, Point: dev.Profile.Point("alarm-word"), PointName: "alarm-word"},
	}}
	diags := b.Check(Requirements{Source: "site s", Channels: []Want{{Name: "leak", Dim: profile.Alarm}}})
	require.Len(t, diags, 1)
	assert.Contains(t, diags[0].Message, "the channel is an alarm, but point alarm-word of profile generic-cdu-int16 is a plain number")
}

func TestSecretResolve(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "community"), []byte("s3cret\n"), 0o600))
	env := map[string]string{"SEAM_C": "from-env"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	tests := []struct {
		ref, want, err string
	}{
		{"env:SEAM_C", "from-env", ""},
		{"env:SEAM_MISSING", "", "community of device d: environment variable SEAM_MISSING is not set"},
		{"file:community", "s3cret", ""},
		{"file:nope", "", "community of device d: reading " + filepath.Join(dir, "nope") + ": no such file or directory"},
		{"public", "", `community of device d: "public" is not a reference: write env:NAME or file:PATH`},
	}
	for _, tt := range tests {
		t.Run(tt.ref, func(t *testing.T) {
			got, err := Secret{Ref: tt.ref, What: "community of device d", Dir: dir}.Resolve(lookup)
			if tt.err != "" {
				require.EqualError(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestLoadMissingDir(t *testing.T) {
	_, _, err := Load(filepath.Join(t.TempDir(), "none"))
	require.Error(t, err)
}

// Marshal writes what Load reads back: the simulator prints its
// endpoints this way.
func TestMarshalRoundTrip(t *testing.T) {
	b, diags, err := Load("../../fixtures/bindings/threemodule")
	require.NoError(t, err)
	require.Empty(t, diags)
	b.Device("cdu-l2").Timeout = 250 * time.Millisecond
	b.Device("ups-p1").Retries = 2
	b.LoadBank("lb-mc").Roles[RoleFaultReset] = "fault-reset"
	dir := t.TempDir()
	out := Marshal(b, "sim")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "binding.cue"), out, 0o644))
	back, diags, err := Load(dir)
	require.NoError(t, err)
	require.Empty(t, diags, "%s", out)

	strip := func(b *Binding) ([]Device, []Channel, []LoadBank) {
		var ds []Device
		for _, d := range b.Devices {
			c := *d
			c.Pos, c.Profile, c.Community.Pos, c.Community.Dir = diag.Pos{}, nil, diag.Pos{}, ""
			if c.V3 != nil {
				v3 := *c.V3
				v3.AuthPass.Pos, v3.PrivPass.Pos, v3.AuthPass.Dir, v3.PrivPass.Dir = diag.Pos{}, diag.Pos{}, "", ""
				c.V3 = &v3
			}
			ds = append(ds, c)
		}
		var cs []Channel
		for _, ch := range b.Channels {
			cs = append(cs, Channel{Name: ch.Name, DeviceName: ch.DeviceName, PointName: ch.PointName, Optional: ch.Optional})
		}
		var ls []LoadBank
		for _, lb := range b.LoadBanks {
			ls = append(ls, LoadBank{Name: lb.Name, DeviceName: lb.DeviceName, Roles: lb.Roles})
		}
		return ds, cs, ls
	}
	d1, c1, l1 := strip(b)
	d2, c2, l2 := strip(back)
	assert.Equal(t, d1, d2)
	assert.Equal(t, c1, c2)
	assert.Equal(t, l1, l2)
	assert.Equal(t, b.ProfileDirs, back.ProfileDirs)
	assert.Equal(t, b.Contracts, back.Contracts)
	assert.Contains(t, string(out), `"cdu-l2": {protocol: "modbus-tcp", address: "127.0.0.1:5021", profile: "generic-cdu-float32", timeout: "250 ms", unit: 1}`)
}

// --site may name the binding's file, as sat sim prints it: the
// directory that holds it is the binding. Anything else is refused.
func TestDirOfABindingFile(t *testing.T) {
	d, err := Dir("../../fixtures/bindings/threemodule/binding.cue")
	require.NoError(t, err)
	require.Equal(t, "../../fixtures/bindings/threemodule", d)
	b, diags, err := Load("../../fixtures/bindings/threemodule/binding.cue")
	require.NoError(t, err)
	require.Zero(t, diags.Count(diag.Error), "%v", diags)
	require.NotEmpty(t, b.Devices)

	_, err = Dir("../../fixtures/bindings/nowhere")
	require.ErrorContains(t, err, "binding directory ../../fixtures/bindings/nowhere: no such file or directory")
	_, err = Dir("binding_test.go")
	require.ErrorContains(t, err, "binding directory binding_test.go: not a directory, nor a .cue file in one")
}
