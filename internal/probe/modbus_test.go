package probe

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/simonvetter/modbus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/clock"
	"github.com/seamdc/seam/internal/probe/probetest"
	"github.com/seamdc/seam/internal/profile"
)

// Registers written as literals, not through the codec: the probe must
// read what a device that follows the register map sends.
func TestModbusReadsTheRegisterMap(t *testing.T) {
	p := shipped(t, "generic-cdu-int16")
	srv := startModbus(t, p, nil)
	srv.SetRegisters(profile.Input, 2, 325, 0xFFD3)    // secondary supply 32.5 degC, return -4.5 degC
	srv.SetRegisters(profile.Input, 8, 0x0000, 0x3039) // secondary flow 12345 → 1234.5 L/min
	srv.SetRegisters(profile.Input, 12, 12000)         // heat load 1200.0 kW
	srv.SetRegisters(profile.Input, 20, 0b10010)       // leak (bit 1) and bms-comm-lost (bit 4)
	srv.SetRegisters(profile.Input, 13, 1)             // pump 1 running
	srv.SetRegisters(profile.Holding, 0, 0xFFF1)       // a setpoint of -1.5 degC: implausible
	d := open(t, mbDevice(p, srv.Addr), Options{})

	rs := read(t, d)
	assert.Equal(t, 32.5, rs["secondary-supply-temp"].Value)
	assert.Equal(t, "degC", rs["secondary-supply-temp"].Unit)
	assert.Equal(t, -4.5, rs["secondary-return-temp"].Value)
	assert.Equal(t, 1234.5, rs["secondary-flow"].Value)
	assert.Equal(t, 1200.0, rs["heat-load"].Value)
	assert.Equal(t, 1.0, rs["leak"].Value)
	assert.Equal(t, 1.0, rs["bms-comm-lost"].Value)
	assert.Equal(t, 0.0, rs["redundancy-lost"].Value)
	assert.Equal(t, "running", rs["pump1-state"].State)
	assert.Equal(t, Good, rs["heat-load"].Quality)
	assert.Equal(t, Bad, rs["supply-temp-setpoint"].Quality)
	assert.ErrorContains(t, rs["supply-temp-setpoint"].Err, "-1.5 degC is outside the plausible range [15, 60] degC")
	assert.Equal(t, map[Quality]int{Good: 39, Bad: 1}, qualities(rs))

	// the plan: two requests for 40 points, at the device's unit id
	reqs := srv.Requests()
	require.Len(t, reqs, 2)
	assert.Equal(t, int64(2), d.Requests())
	for _, r := range reqs {
		assert.Equal(t, uint8(7), r.Unit)
		assert.False(t, r.Write)
	}
}

func TestModbusTimeout(t *testing.T) {
	p := shipped(t, "generic-cdu-int16")
	srv := startModbus(t, p, map[string]float64{"heat-load": 100})
	dev := mbDevice(p, srv.Addr)
	dev.Timeout = 300 * time.Millisecond
	d := open(t, dev, Options{})
	srv.SetFault(func(r probetest.Request) (time.Duration, error) {
		if r.Table == profile.Input {
			return time.Second, nil
		}
		return 0, nil
	})
	rs := read(t, d)
	r := rs["heat-load"]
	require.Equal(t, Bad, r.Quality)
	assert.EqualError(t, r.Err, "device dev1 (modbus-tcp "+srv.Addr+" unit 7) at input registers 0..31: read: timed out after 300ms (the device accepts connections but does not answer: check the unit id, 7 in the binding, and that the device's register map is the profile's)")
	var te *TimeoutError
	assert.True(t, errors.As(r.Err, &te))
	assert.Equal(t, Good, rs["dp-setpoint"].Quality, "the holding registers answered on a fresh connection")

	srv.SetFault(nil)
	time.Sleep(800 * time.Millisecond) // let the slow replies drain
	rs = read(t, d)
	assert.Equal(t, Good, rs["heat-load"].Quality)
	assert.Equal(t, 100.0, rs["heat-load"].Value)
}

func TestModbusException(t *testing.T) {
	p := shipped(t, "generic-cdu-int16")
	srv := startModbus(t, p, nil)
	srv.SetFault(func(r probetest.Request) (time.Duration, error) {
		if r.Table == profile.Holding {
			return 0, modbus.ErrIllegalDataAddress
		}
		return 0, nil
	})
	d := open(t, mbDevice(p, srv.Addr), Options{})
	rs := read(t, d)
	assert.EqualError(t, rs["alarm-ack"].Err, "device dev1 (modbus-tcp "+srv.Addr+" unit 7) at holding registers 0..3: read: exception 02 illegal data address")
	assert.ErrorIs(t, rs["alarm-ack"].Err, modbus.ErrIllegalDataAddress)
	assert.Equal(t, map[Quality]int{Good: 36, Bad: 4}, qualities(rs))
}

func TestModbusConnectionDroppedMidRun(t *testing.T) {
	p := shipped(t, "generic-cdu-int16")
	srv := startModbus(t, p, map[string]float64{"secondary-flow": 900})
	proxy, err := probetest.NewProxy(srv.Addr)
	require.NoError(t, err)
	t.Cleanup(proxy.Close)
	d := open(t, mbDevice(p, proxy.Addr), Options{})

	assert.Equal(t, map[Quality]int{Good: 40}, qualities(read(t, d)))
	proxy.DropAll()
	rs := read(t, d)
	assert.Equal(t, map[Quality]int{Good: 40}, qualities(rs), "the failed request is retried once on a fresh connection")
	assert.Equal(t, 900.0, rs["secondary-flow"].Value)
	assert.Equal(t, int64(4), proxy.Accepts.Load(), "two connections, each a reachability dial and the library's own")
}

func TestModbusDeviceRestart(t *testing.T) {
	p := shipped(t, "generic-cdu-int16")
	srv := startModbus(t, p, map[string]float64{"secondary-flow": 900})
	d := open(t, mbDevice(p, srv.Addr), Options{})
	assert.Equal(t, map[Quality]int{Good: 40}, qualities(read(t, d)))

	srv.Stop()
	rs := read(t, d)
	require.Equal(t, map[Quality]int{Bad: 40}, qualities(rs))
	assert.Contains(t, rs["secondary-flow"].Err.Error(), "device dev1 (modbus-tcp "+srv.Addr+" unit 7) at input registers 0..31: read: connect: dial tcp "+srv.Addr+": connect: connection refused")

	require.NoError(t, srv.Start())
	rs = read(t, d)
	assert.Equal(t, map[Quality]int{Good: 40}, qualities(rs))
	assert.Equal(t, 900.0, rs["secondary-flow"].Value)
}

func TestModbusGarbageReplies(t *testing.T) {
	p := shipped(t, "generic-cdu-int16")
	srv := startModbus(t, p, nil)
	proxy, err := probetest.NewProxy(srv.Addr)
	require.NoError(t, err)
	t.Cleanup(proxy.Close)
	d := open(t, mbDevice(p, proxy.Addr), Options{})

	// garbage: an MBAP header that announces an empty frame
	proxy.Mutate(func(b []byte) []byte { return []byte{0xDE, 0xAD, 0x00, 0x00, 0x00, 0x00, 0x07} })
	rs := read(t, d)
	require.Equal(t, Bad, rs["heat-load"].Quality)
	assert.Contains(t, rs["heat-load"].Err.Error(), "at input registers 0..31: read: garbled reply (protocol error)")

	// a foreign protocol id: the library skips the frame and times out
	proxy.Mutate(func(b []byte) []byte { b[2], b[3] = 0xBE, 0xEF; return b })
	rs = read(t, d)
	require.Equal(t, Bad, rs["heat-load"].Quality)
	assert.Contains(t, rs["heat-load"].Err.Error(), "timed out after 1s")

	proxy.Mutate(func(b []byte) []byte { return append(b[:7], 0x83, 0x02) }) // function code mismatch
	rs = read(t, d)
	require.Equal(t, Bad, rs["heat-load"].Quality)

	proxy.Mutate(nil)
	assert.Equal(t, map[Quality]int{Good: 40}, qualities(read(t, d)))
}

// A float32 CDU whose registers hold ABCD while the profile says CDAB:
// plausibility limits catch it instead of reporting 89220 degC.
func TestWordOrderMistakeCaught(t *testing.T) {
	p := shipped(t, "generic-cdu-float32")
	srv := startModbus(t, p, nil)
	srv.SetRegisters(profile.Input, 4, 0x4202, 0x47AE) // 32.57 ABCD
	srv.SetRegisters(profile.Input, 6, 0x47AE, 0x4202) // 32.57 CDAB, as the profile says
	d := open(t, mbDevice(p, srv.Addr), Options{})
	rs := read(t, d)
	require.Equal(t, Bad, rs["secondary-supply-temp"].Quality)
	assert.Contains(t, rs["secondary-supply-temp"].Err.Error(), "outside the plausible range [-10, 90] degC: check the word order")
	assert.Equal(t, Good, rs["secondary-return-temp"].Quality)
	assert.InDelta(t, 32.57, rs["secondary-return-temp"].Value, 1e-5)
}

// The write path: only points declared writable reach the wire. The
// server records every request and the proxy every connection: a refused
// write leaves both untouched.
func TestWritesOnlyToWritablePoints(t *testing.T) {
	p := shipped(t, "generic-loadbank")
	srv := startModbus(t, p, nil)
	proxy, err := probetest.NewProxy(srv.Addr)
	require.NoError(t, err)
	t.Cleanup(proxy.Close)
	d := open(t, mbDevice(p, proxy.Addr), Options{})
	ctx := context.Background()

	refused := []struct {
		point string
		value float64
		want  string
	}{
		{"applied", 100, "read: the profile does not declare the point writable"},
		{"status", 1, "the profile does not declare the point writable"},
		{"remote", 1, "the profile does not declare the point writable"},
		{"no-such-point", 1, `profile generic-loadbank has no point "no-such-point"`},
		{"setpoint", 500000, "point setpoint at holding register 1: write: refused: 500000 kW is outside the plausible range [0, 400000] kW"},
		{"setpoint", -5, "refused"},
	}
	for _, tt := range refused {
		err := d.Write(ctx, tt.point, tt.value)
		require.Error(t, err, tt.point)
		if tt.want == "read: the profile does not declare the point writable" {
			assert.ErrorIs(t, err, ErrNotWritable)
			assert.EqualError(t, err, "device dev1 (modbus-tcp "+proxy.Addr+" unit 7) point applied at input register 0: write: the profile does not declare the point writable")
			continue
		}
		assert.Contains(t, err.Error(), tt.want)
	}
	assert.Empty(t, srv.Requests(), "nothing reached the device")
	assert.Zero(t, proxy.Accepts.Load(), "not even a connection")

	require.NoError(t, d.Write(ctx, "setpoint", 1234.5))
	require.NoError(t, d.Write(ctx, "enable", 1))
	require.NoError(t, d.Write(ctx, "heartbeat", 42))
	require.NoError(t, d.Write(ctx, "fault-reset", 1))
	assert.Equal(t, []uint16{1, 0x0000, 0x3039, 42, 1}, srv.Registers(profile.Holding, 0, 5))
	reqs := srv.Requests()
	require.Len(t, reqs, 4)
	for _, r := range reqs {
		assert.True(t, r.Write)
		assert.Equal(t, profile.Holding, r.Table)
	}
}

// Staleness from the freshness counter, with a fake clock.
func TestModbusStaleWhenHeartbeatFreezes(t *testing.T) {
	p := shipped(t, "generic-cdu-int16")
	srv := startModbus(t, p, map[string]float64{"heartbeat": 1})
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	d := open(t, mbDevice(p, srv.Addr), Options{Clock: clk})

	assert.Equal(t, map[Quality]int{Good: 40}, qualities(read(t, d)))
	clk.Advance(2 * time.Second)
	assert.Equal(t, map[Quality]int{Good: 40}, qualities(read(t, d)), "2 s < 3 × the 1 s update period")
	clk.Advance(time.Second)
	rs := read(t, d)
	assert.Equal(t, map[Quality]int{Stale: 40}, qualities(rs))
	assert.EqualError(t, rs["heat-load"].Err, "not refreshed for 3s (the device updates every 1s)")

	require.NoError(t, srv.Set("heartbeat", 2))
	assert.Equal(t, map[Quality]int{Good: 40}, qualities(read(t, d)))
}

// The device's minimum gap between requests, on a fake clock: the second
// request of a read waits until the clock has moved.
func TestModbusMinimumGap(t *testing.T) {
	p := shipped(t, "generic-loadbank") // min_gap 10 ms, 2 requests
	srv := startModbus(t, p, nil)
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	d := open(t, mbDevice(p, srv.Addr), Options{Clock: clk})
	done := make(chan []Reading)
	go func() { rs, _ := d.Read(context.Background()); done <- rs }()
	require.Eventually(t, func() bool { return clk.Waiters() == 1 }, 5*time.Second, time.Millisecond)
	assert.Len(t, srv.Requests(), 1, "the second request waits for the gap")
	clk.Advance(9 * time.Millisecond)
	select {
	case <-done:
		t.Fatal("read finished before the gap passed")
	default:
	}
	clk.Advance(time.Millisecond)
	rs := <-done
	assert.Len(t, rs, len(p.Points))
	assert.Len(t, srv.Requests(), 2)
}
