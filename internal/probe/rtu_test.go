package probe

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/binding"
	"github.com/seamdc/seam/internal/probe/probetest"
	"github.com/seamdc/seam/internal/profile"
)

// Modbus RTU for real, on a pseudo-terminal: serial settings, framing and
// CRC through the library's RTU transport; a load bank as the ASCO/Froment
// ones are wired (unit 1, 19200 8N1).
func TestModbusRTU(t *testing.T) {
	p := shipped(t, "generic-loadbank")
	srv := startModbus(t, p, map[string]float64{"applied": 1250.5, "remote": 1})
	rtu, err := probetest.NewRTU(srv, 1)
	require.NoError(t, err)
	t.Cleanup(rtu.Close)
	dev := &binding.Device{Name: "lb", Protocol: binding.ModbusRTU, Address: rtu.Path, Unit: 1, Timeout: 500 * time.Millisecond,
		Serial: binding.Serial{Baud: 19200, DataBits: 8, Parity: "none", StopBits: 1}, ProfileName: p.Name, Profile: p}
	d := open(t, dev, Options{})

	rs := read(t, d)
	assert.Equal(t, map[Quality]int{Good: len(p.Points)}, qualities(rs), "%v", firstErr(values(rs)))
	assert.Equal(t, 1250.5, rs["applied"].Value)
	assert.Equal(t, "remote", rs["remote"].State)

	require.NoError(t, d.Write(context.Background(), "setpoint", 800))
	assert.Equal(t, []uint16{0x0000, 8000}, srv.Registers(profile.Holding, 1, 2))
	require.ErrorIs(t, d.Write(context.Background(), "applied", 0), ErrNotWritable)

	// a slave on another unit id stays silent: a timeout that names the unit
	dev2 := *dev
	dev2.Unit = 9
	rs = read(t, open(t, &dev2, Options{}))
	assert.Contains(t, rs["applied"].Err.Error(), "device lb (modbus-rtu "+rtu.Path+" unit 9) at input registers 0..6: read: timed out after 500ms")
}
