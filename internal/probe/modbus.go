package probe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/simonvetter/modbus"

	"github.com/seamdc/seam/internal/binding"
	"github.com/seamdc/seam/internal/profile"
)

// modbusDevice wraps a simonvetter client: one lock per device, the
// profile's plan, the device's minimum gap, and a fresh connection after
// any error.
type modbusDevice struct {
	base
	mu      sync.Mutex
	client  *modbus.ModbusClient // nil: closed
	reused  bool                 // the open connection has carried a reply
	log     *slog.Logger
	planIdx [][]int // per planned request, its points' profile indices
}

func newModbus(dev *binding.Device, opts Options) *modbusDevice {
	d := &modbusDevice{log: opts.Logger.With("device", dev.Name, "address", dev.Address, "unit", dev.Unit)}
	d.init(dev, opts)
	for _, r := range dev.Profile.Plan {
		d.planIdx = append(d.planIdx, d.indices(r.Points))
	}
	points := 0
	for _, r := range dev.Profile.Plan {
		points += len(r.Points)
	}
	d.log.Debug(fmt.Sprintf("%d requests for %d points", len(dev.Profile.Plan), points),
		"profile", dev.ProfileName, "requests", len(dev.Profile.Plan), "points", points)
	return d
}

func (d *modbusDevice) url() string {
	if d.dev.Protocol == binding.ModbusRTU {
		return "rtu://" + d.dev.Address
	}
	return "tcp://" + d.dev.Address
}

// connect opens a connection if none is open. Called with mu held.
func (d *modbusDevice) connect() error {
	if d.client != nil {
		return nil
	}
	cfg := &modbus.ClientConfiguration{URL: d.url(), Timeout: d.dev.Timeout, Logger: log.New(io.Discard, "", 0)}
	if d.dev.Protocol == binding.ModbusRTU {
		cfg.Speed, cfg.DataBits, cfg.StopBits = uint(d.dev.Serial.Baud), uint(d.dev.Serial.DataBits), uint(d.dev.Serial.StopBits)
		cfg.Parity = map[string]uint{"none": modbus.PARITY_NONE, "even": modbus.PARITY_EVEN, "odd": modbus.PARITY_ODD}[d.dev.Serial.Parity]
	}
	c, err := modbus.NewClient(cfg)
	if err != nil {
		return err
	}
	if d.dev.Protocol == binding.ModbusTCP {
		// the library dials with a fixed 5 s timeout: find out within the
		// device's own timeout whether anything answers
		conn, err := net.DialTimeout("tcp", d.dev.Address, d.dev.Timeout)
		if err != nil {
			return err
		}
		conn.Close()
	}
	if err := c.Open(); err != nil {
		return err
	}
	if err := c.SetUnitId(d.dev.Unit); err != nil {
		c.Close()
		return err
	}
	d.client, d.reused = c, false
	d.log.Debug("connected")
	return nil
}

// connectError is a failure to open a connection.
type connectError struct{ err error }

func (e *connectError) Error() string { return "connect: " + e.err.Error() }
func (e *connectError) Unwrap() error { return e.err }

// drop closes the connection after an error; the next request reopens.
func (d *modbusDevice) drop(err error) {
	if d.client == nil {
		return
	}
	d.client.Close()
	d.client = nil
	d.log.Debug("connection closed after an error", "err", err)
}

// do runs one request: it keeps the minimum gap, opens a connection if
// needed, and on an error closes it. A request that fails on a
// connection that had carried replies, other than by an exception or a
// timeout, is retried once on a fresh connection when retry is set.
func (d *modbusDevice) do(ctx context.Context, retry bool, req func(*modbus.ModbusClient) error) (time.Duration, error) {
	for attempt := 0; ; attempt++ {
		if err := d.gap(ctx, &d.mu); err != nil {
			return 0, err
		}
		if err := d.connect(); err != nil {
			d.lastSent = d.opts.Clock.Now()
			return 0, &connectError{describeModbus(err, d.dev.Timeout)}
		}
		start := d.opts.Clock.Now()
		d.lastSent = start
		d.requests.Add(1)
		err := req(d.client)
		latency := d.opts.Clock.Now().Sub(start)
		if err == nil {
			d.reused = true
			return latency, nil
		}
		err = describeModbus(err, d.dev.Timeout)
		var silent *TimeoutError
		if errors.As(err, &silent) && d.dev.Protocol == binding.ModbusTCP {
			// the connection was accepted: the device is there but does
			// not answer this unit
			silent.Check = fmt.Sprintf("the device accepts connections but does not answer: check the unit id, %d in the binding, and that the device's register map is the profile's", d.dev.Unit)
		}
		wasReused := d.reused
		d.drop(err)
		var timeout *TimeoutError
		if !retry || attempt > 0 || !wasReused || isException(err) || errors.As(err, &timeout) {
			return latency, err
		}
		d.log.Debug("retrying on a fresh connection", "err", err)
	}
}

// Read reads every point of the profile with the planned requests.
func (d *modbusDevice) Read(ctx context.Context) ([]Reading, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	raws := d.raws()
	var connectErr error // once a connect fails, the read's other requests fail with it
	for ri, req := range d.dev.Profile.Plan {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var regs []uint16
		var latency time.Duration
		err := connectErr
		if err == nil {
			latency, err = d.do(ctx, true, func(c *modbus.ModbusClient) (err error) {
				regs, err = readRequest(c, req)
				return err
			})
			var ce *connectError
			if errors.As(err, &ce) {
				connectErr = err
			}
		}
		now := d.opts.Clock.Now()
		if err == nil && len(regs) != int(req.Count) {
			err = fmt.Errorf("garbled reply: %d values for %d asked", len(regs), req.Count)
		}
		if err != nil {
			err = &Error{Device: d.dev, Op: "read", Where: where(req), Err: err}
		}
		for k, pt := range req.Points {
			r := raw{err: err, latency: latency, received: now}
			if err == nil {
				r.value, r.err = pt.DecodeRegisters(req.Slice(regs, pt))
				if r.err != nil {
					r.err = &Error{Device: d.dev, Op: "read", Point: pt.Name, Where: pt.Where(), Err: r.err}
				}
			}
			raws[d.planIdx[ri][k]] = r
		}
	}
	rs := d.readings(raws)
	return rs, firstErr(rs)
}

func where(req profile.Request) string {
	kind := map[profile.Table]string{profile.Holding: "holding registers", profile.Input: "input registers",
		profile.Coil: "coils", profile.Discrete: "discrete inputs"}[req.Table]
	return fmt.Sprintf("%s %d..%d", kind, req.Start, req.End()-1)
}

func readRequest(c *modbus.ModbusClient, req profile.Request) ([]uint16, error) {
	switch req.Table {
	case profile.Holding:
		return c.ReadRegisters(req.Start, req.Count, modbus.HOLDING_REGISTER)
	case profile.Input:
		return c.ReadRegisters(req.Start, req.Count, modbus.INPUT_REGISTER)
	}
	var bits []bool
	var err error
	if req.Table == profile.Coil {
		bits, err = c.ReadCoils(req.Start, req.Count)
	} else {
		bits, err = c.ReadDiscreteInputs(req.Start, req.Count)
	}
	out := make([]uint16, len(bits))
	for i, b := range bits {
		if b {
			out[i] = 1
		}
	}
	return out, err
}

// Write sets a writable point. Anything else is refused before a byte
// is sent.
func (d *modbusDevice) Write(ctx context.Context, point string, value float64) error {
	pt, err := checkWrite(d.dev, point, value)
	if err != nil {
		return err
	}
	fail := func(err error) error {
		return &Error{Device: d.dev, Op: "write", Point: pt.Name, Where: pt.Where(), Err: err}
	}
	if pt.Digits != "" || (pt.AlarmSpec != nil && pt.AlarmSpec.Bit >= 0 && pt.Type != profile.Bool) {
		return fail(errors.New("refused: writing a point with decimal digits or a bit of a register is not supported"))
	}
	raw, err := pt.Raw(value, 0)
	if err != nil {
		return fail(err)
	}
	regs, err := pt.EncodeRegisters(raw)
	if err != nil {
		return fail(err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	_, err = d.do(ctx, false, func(c *modbus.ModbusClient) error {
		switch {
		case pt.Table == profile.Coil:
			return c.WriteCoil(pt.Address, regs[0] != 0)
		case len(regs) == 1:
			return c.WriteRegister(pt.Address, regs[0])
		}
		return c.WriteRegisters(pt.Address, regs)
	})
	if err != nil {
		return fail(err)
	}
	d.log.Info("wrote", "point", pt.Name, "value", value, "unit", pt.CanonicalUnit(), "raw", raw)
	return nil
}

// Close closes the connection.
func (d *modbusDevice) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.client == nil {
		return nil
	}
	err := d.client.Close()
	d.client = nil
	return err
}
