package loadbank

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/binding"
	"github.com/seamdc/seam/internal/probe"
	"github.com/seamdc/seam/internal/probe/probetest"
	"github.com/seamdc/seam/internal/profile"
)

func modbusBank(t *testing.T, roles map[string]string) (*probetest.Modbus, *Bank) {
	t.Helper()
	p := loadbankProfile(t)
	srv, err := probetest.NewModbus(p, map[string]float64{"remote": 1}, true)
	require.NoError(t, err)
	t.Cleanup(srv.Stop)
	dev, err := probe.Open(&binding.Device{Name: "lb-ma", Protocol: binding.ModbusTCP, Address: srv.Addr, Unit: 1,
		Timeout: 500 * time.Millisecond, ProfileName: p.Name, Profile: p}, probe.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { dev.Close() })
	b, err := New(spec, &binding.LoadBank{Name: "lb-ma", DeviceName: "lb-ma", Roles: roles}, dev,
		Options{ConfirmSlack: 300 * time.Millisecond})
	require.NoError(t, err)
	return srv, b
}

// Over Modbus the setpoint lands in holding registers 1..2 as a uint32
// of tenths of a kW, and the heartbeat in register 3.
func TestModbusWritesTheRegisterMap(t *testing.T) {
	srv, b := modbusBank(t, nil)
	require.NoError(t, srv.Set("applied", 465)) // what the bank will report
	e, err := b.Set(ctx, 463)
	require.NoError(t, err)
	assert.Equal(t, []uint16{0, 4650}, srv.Registers(profile.Holding, 1, 2))
	assert.InDelta(t, 465, e.AppliedKW, 1e-9)
	require.NoError(t, b.Beat(ctx))
	require.NoError(t, b.Beat(ctx))
	assert.Equal(t, []uint16{2}, srv.Registers(profile.Holding, 3, 1))

	// the bank does not follow: the read-back says so
	_, err = b.Set(ctx, 1000)
	require.ErrorIs(t, err, ErrNotConfirmed)
	assert.ErrorContains(t, err, "set 1000.0 kW, reads 465.0 kW applied")
}

// A binding that maps a written role to a read-only point is refused by
// the probe before anything is sent.
func TestNotWritableNeverReachesTheWire(t *testing.T) {
	srv, b := modbusBank(t, map[string]string{binding.RoleSetpoint: "applied"})
	_, err := b.Set(ctx, 100)
	require.ErrorIs(t, err, probe.ErrNotWritable)
	assert.ErrorContains(t, err, "load bank lb-ma: setpoint: device lb-ma")
	for _, r := range srv.Requests() {
		assert.False(t, r.Write, "a write reached the device: %+v", r)
	}
}
