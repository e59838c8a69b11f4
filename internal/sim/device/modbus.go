package device

import (
	"fmt"
	"io"
	"log"
	"net"
	"strconv"
	"sync"

	"github.com/simonvetter/modbus"

	"github.com/seamdc/seam/internal/profile"
)

// modbusServer serves a device over Modbus TCP with
// github.com/simonvetter/modbus.
type modbusServer struct {
	d  *Device
	mu sync.Mutex
	s  *modbus.ModbusServer
}

// maxClients bounds a device's concurrent connections, as real devices
// do (many accept only a handful).
const maxClients = 8

// start listens on addr, or on a free loopback port when addr is "". The
// library cannot listen on port 0 and report the port, so a free port
// is found first and the bind retried if another process takes it.
func (m *modbusServer) start(addr string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var err error
	for try := 0; try < 10; try++ {
		a := addr
		if a == "" {
			if a, err = freeTCPPort(); err != nil {
				return "", err
			}
		}
		s, nerr := modbus.NewServer(&modbus.ServerConfiguration{URL: "tcp://" + a, MaxClients: maxClients,
			Logger: log.New(io.Discard, "", 0)}, &handler{m.d})
		if nerr != nil {
			return "", nerr
		}
		if err = s.Start(); err == nil {
			m.s = s
			return a, nil
		}
		if addr != "" {
			continue // the port of a rebooting device may linger briefly
		}
	}
	return "", fmt.Errorf("modbus server: %w", err)
}

func (m *modbusServer) stop() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.s != nil {
		_ = m.s.Stop()
		m.s = nil
	}
}

// freeTCPPort returns a loopback address whose port was free a moment ago.
func freeTCPPort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return "127.0.0.1:" + strconv.Itoa(l.Addr().(*net.TCPAddr).Port), nil
}

// handler answers Modbus requests from the device's image.
type handler struct{ d *Device }

// exceptions maps Modbus exception codes to the library's errors, which
// it turns back into the codes on the wire.
var exceptions = map[int]error{
	1: modbus.ErrIllegalFunction, 2: modbus.ErrIllegalDataAddress, 3: modbus.ErrIllegalDataValue,
	4: modbus.ErrServerDeviceFailure, 5: modbus.ErrAcknowledge, 6: modbus.ErrServerDeviceBusy,
	8: modbus.ErrMemoryParityError, 10: modbus.ErrGWPathUnavailable, 11: modbus.ErrGWTargetFailedToRespond,
}

// gate applies the device's faults before a request is served: a timeout
// holds the request until the fault ends (the client gives up first), an
// exception answers every request with it, a unit id other than the
// device's (or 0 and 255, which mean the TCP device itself) gets the
// gateway's "target failed to respond".
func (h *handler) gate(unit uint8) error {
	d := h.d
	d.mu.Lock()
	release, timeout, exc := d.faults.release, d.faults.timeout, d.faults.exception
	d.mu.Unlock()
	if timeout {
		<-release
		return modbus.ErrServerDeviceBusy
	}
	if exc != 0 {
		if err, ok := exceptions[exc]; ok {
			return err
		}
		return modbus.ErrServerDeviceFailure
	}
	if unit != d.spec.Unit && unit != 0 && unit != 0xFF { // 0 and 255 address a TCP device itself
		return modbus.ErrGWTargetFailedToRespond
	}
	return nil
}

func (h *handler) HandleCoils(req *modbus.CoilsRequest) ([]bool, error) {
	if req.IsWrite {
		h.d.writes.Add(1)
	}
	if err := h.gate(req.UnitId); err != nil {
		return nil, err
	}
	if req.IsWrite {
		regs := make([]uint16, len(req.Args))
		for i, b := range req.Args {
			if b {
				regs[i] = 1
			}
		}
		return nil, h.write(profile.Coil, req.Addr, regs)
	}
	regs, err := h.read(profile.Coil, req.Addr, req.Quantity)
	return bits(regs), err
}

func (h *handler) HandleDiscreteInputs(req *modbus.DiscreteInputsRequest) ([]bool, error) {
	if err := h.gate(req.UnitId); err != nil {
		return nil, err
	}
	regs, err := h.read(profile.Discrete, req.Addr, req.Quantity)
	return bits(regs), err
}

func (h *handler) HandleHoldingRegisters(req *modbus.HoldingRegistersRequest) ([]uint16, error) {
	if req.IsWrite {
		h.d.writes.Add(1)
	}
	if err := h.gate(req.UnitId); err != nil {
		return nil, err
	}
	if req.IsWrite {
		return nil, h.write(profile.Holding, req.Addr, req.Args)
	}
	return h.read(profile.Holding, req.Addr, req.Quantity)
}

func (h *handler) HandleInputRegisters(req *modbus.InputRegistersRequest) ([]uint16, error) {
	if err := h.gate(req.UnitId); err != nil {
		return nil, err
	}
	return h.read(profile.Input, req.Addr, req.Quantity)
}

func bits(regs []uint16) []bool {
	if regs == nil {
		return nil
	}
	out := make([]bool, len(regs))
	for i, r := range regs {
		out[i] = r != 0
	}
	return out
}

// read copies registers out of the image; a range past the table's last
// point is an illegal data address, as on a real device.
func (h *handler) read(t profile.Table, addr, qty uint16) ([]uint16, error) {
	d := h.d
	d.mu.Lock()
	defer d.mu.Unlock()
	table := d.regs[t]
	if int(addr)+int(qty) > len(table) {
		return nil, modbus.ErrIllegalDataAddress
	}
	return append([]uint16(nil), table[addr:addr+qty]...), nil
}

// write applies a write to the points it covers. Only registers of
// points the profile declares writable may be written: anything else is
// an illegal data address and changes nothing. A write covering a point
// mapped to a signal is a command to the element; if the element refuses
// it (a load bank in local control, a setpoint out of range) the device
// answers with an exception and keeps its registers.
func (h *handler) write(t profile.Table, addr uint16, vals []uint16) error {
	d := h.d
	d.mu.Lock()
	table := d.regs[t]
	end := int(addr) + len(vals)
	if end > len(table) {
		d.mu.Unlock()
		return modbus.ErrIllegalDataAddress
	}
	next := append([]uint16(nil), table...)
	copy(next[addr:], vals)
	cmds, err := d.commands(t, int(addr), end, next)
	d.mu.Unlock()
	if err != nil {
		return err
	}
	for _, c := range cmds {
		if err := d.cmd(c.signal, c.value); err != nil {
			d.log.Info("write refused", "point", c.point, "value", c.value, "error", err.Error())
			return exceptionFor(err)
		}
	}
	d.mu.Lock()
	copy(d.regs[t][addr:], vals)
	d.mu.Unlock()
	return nil
}

type command struct {
	point, signal string
	value         float64
}

// commands checks that [start, end) is covered by writable points and
// returns the commands the write carries.
func (d *Device) commands(t profile.Table, start, end int, next []uint16) ([]command, error) {
	covered := make([]bool, end-start)
	var out []command
	for _, m := range d.spec.Mappings {
		pt := m.Point
		if pt.Table != t || !pt.Writable() || pt.End() <= start || int(pt.Address) >= end {
			continue
		}
		if int(pt.Address) < start || pt.End() > end {
			return nil, modbus.ErrIllegalDataAddress // a write that splits a 32-bit point
		}
		for i := int(pt.Address); i < pt.End(); i++ {
			covered[i-start] = true
		}
		v, err := pt.Get(next[pt.Address:pt.End()], d.digits[pt.Digits])
		if err != nil {
			return nil, modbus.ErrIllegalDataValue
		}
		if m.Signal != "" && d.cmd != nil {
			out = append(out, command{pt.Name, m.Signal, v})
		}
	}
	for _, pt := range d.spec.Profile.Points {
		if pt.Table == t && pt.Writable() {
			for i := max(int(pt.Address), start); i < min(pt.End(), end); i++ {
				covered[i-start] = true
			}
		}
	}
	for _, c := range covered {
		if !c {
			return nil, modbus.ErrIllegalDataAddress
		}
	}
	return out, nil
}

// CommandError is an error a command returns to ask for a specific
// Modbus exception code.
type CommandError interface {
	error
	ModbusException() int
}

func exceptionFor(err error) error {
	if ce, ok := err.(CommandError); ok {
		if e, ok := exceptions[ce.ModbusException()]; ok {
			return e
		}
	}
	return modbus.ErrServerDeviceFailure
}
