// Package probetest holds in-process devices for tests and benchmarks:
// a Modbus TCP server and an SNMP agent that serve a profile's points,
// record every request, and misbehave on demand (delays, exceptions,
// silence, garbage, restarts). They use the same profile codec as the
// probe; tests that must not trust that codec compare with literal
// registers.
package probetest

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/simonvetter/modbus"

	"github.com/seamdc/seam/internal/profile"
)

// imageSize is how many registers (or bits) of each table the server
// holds: addresses above answer "illegal data address".
const imageSize = 1024

// Request is one request a Modbus server received.
type Request struct {
	Table    profile.Table
	Addr     uint16
	Quantity uint16
	Write    bool
	Args     []uint16
	Unit     uint8
}

// Fault decides how the server answers a request: after Delay, with Err
// (a modbus sentinel such as modbus.ErrIllegalDataAddress sends that
// exception).
type Fault func(r Request) (delay time.Duration, err error)

// Modbus is a Modbus TCP server holding one register image per table.
type Modbus struct {
	Addr    string
	Profile *profile.Profile

	mu       sync.Mutex
	regs     map[profile.Table][]uint16
	defined  map[profile.Table]map[uint16]bool // nil: every address answers
	requests []Request
	count    int64
	noRecord bool
	fault    Fault
	server   *modbus.ModbusServer
}

// NewModbus starts a server on a free loopback port serving the
// profile's points at values (canonical units, by point name; others at
// their Default).
// Registers that no point covers answer "illegal data address" when
// strict is set, as many real devices do.
func NewModbus(p *profile.Profile, values map[string]float64, strict bool) (*Modbus, error) {
	s := &Modbus{Profile: p, regs: map[profile.Table][]uint16{}}
	for _, t := range []profile.Table{profile.Holding, profile.Input, profile.Coil, profile.Discrete} {
		s.regs[t] = make([]uint16, imageSize)
	}
	for _, pt := range p.Points {
		if pt.End() > imageSize {
			return nil, fmt.Errorf("point %s at %s: the test server holds only %d registers per table", pt.Name, pt.Where(), imageSize)
		}
	}
	if strict {
		s.defined = map[profile.Table]map[uint16]bool{}
		for _, pt := range p.Points {
			if s.defined[pt.Table] == nil {
				s.defined[pt.Table] = map[uint16]bool{}
			}
			for a := int(pt.Address); a < pt.End(); a++ {
				s.defined[pt.Table][uint16(a)] = true
			}
		}
	}
	for _, pt := range p.Points {
		if pt.Dim != profile.Alarm && pt.Dim != profile.Raw {
			if err := s.Set(pt.Name, pt.Default()); err != nil {
				return nil, err
			}
		}
	}
	for name, v := range values {
		if err := s.Set(name, v); err != nil {
			return nil, err
		}
	}
	return s, s.Start()
}

// Set puts a canonical value into a point's registers.
func (s *Modbus) Set(point string, value float64) error {
	pt := s.Profile.Point(point)
	if pt == nil {
		return fmt.Errorf("profile %s has no point %q", s.Profile.Name, point)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return pt.Put(s.regs[pt.Table][pt.Address:pt.End()], value, 0)
}

// SetRegisters writes raw registers, for tests that must not trust the
// codec.
func (s *Modbus) SetRegisters(t profile.Table, addr uint16, regs ...uint16) {
	s.mu.Lock()
	defer s.mu.Unlock()
	copy(s.regs[t][addr:], regs)
}

// Registers returns raw registers.
func (s *Modbus) Registers(t profile.Table, addr, n uint16) []uint16 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]uint16(nil), s.regs[t][addr:addr+n]...)
}

// SetFault installs f (nil: behave).
func (s *Modbus) SetFault(f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fault = f
}

// Count is how many requests the server has received.
func (s *Modbus) Count() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.count
}

// Record turns recording of requests on or off (benchmarks send
// millions); counting never stops.
func (s *Modbus) Record(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.noRecord = !on
}

// Requests returns every request received so far.
func (s *Modbus) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Start listens (again, after Stop: a device restart on the same port).
func (s *Modbus) Start() error {
	fresh := s.Addr == ""
	var err error
	for attempt := 0; attempt < 20; attempt++ {
		if fresh {
			if s.Addr, err = FreeTCPPort(); err != nil {
				return err
			}
		}
		srv, e := modbus.NewServer(&modbus.ServerConfiguration{URL: "tcp://" + s.Addr, MaxClients: 64, Timeout: time.Minute}, s)
		if e != nil {
			return e
		}
		if err = srv.Start(); err == nil {
			s.server = srv
			return nil
		}
		if !fresh {
			time.Sleep(10 * time.Millisecond) // the old listener is closing
		}
	}
	return fmt.Errorf("modbus server on %s: %w", s.Addr, err)
}

// Stop closes the listener and every connection.
func (s *Modbus) Stop() {
	if s.server != nil {
		s.server.Stop()
	}
}

func (s *Modbus) handle(r Request, count int) ([]uint16, error) {
	s.mu.Lock()
	s.count++
	if !s.noRecord {
		s.requests = append(s.requests, r)
	}
	fault := s.fault
	s.mu.Unlock()
	if fault != nil {
		delay, err := fault(r)
		time.Sleep(delay) // the device's own slowness, in real time
		if err != nil {
			return nil, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.defined != nil {
		for a := int(r.Addr); a < int(r.Addr)+count; a++ {
			if !s.defined[r.Table][uint16(a)] {
				return nil, modbus.ErrIllegalDataAddress
			}
		}
	}
	if int(r.Addr)+count > imageSize {
		return nil, modbus.ErrIllegalDataAddress
	}
	img := s.regs[r.Table]
	if r.Write {
		copy(img[r.Addr:], r.Args)
		return nil, nil
	}
	return append([]uint16(nil), img[r.Addr:int(r.Addr)+count]...), nil
}

// HandleHoldingRegisters implements modbus.RequestHandler.
func (s *Modbus) HandleHoldingRegisters(req *modbus.HoldingRegistersRequest) ([]uint16, error) {
	return s.handle(Request{Table: profile.Holding, Addr: req.Addr, Quantity: req.Quantity, Write: req.IsWrite,
		Args: req.Args, Unit: req.UnitId}, int(req.Quantity))
}

// HandleInputRegisters implements modbus.RequestHandler.
func (s *Modbus) HandleInputRegisters(req *modbus.InputRegistersRequest) ([]uint16, error) {
	return s.handle(Request{Table: profile.Input, Addr: req.Addr, Quantity: req.Quantity, Unit: req.UnitId}, int(req.Quantity))
}

// HandleCoils implements modbus.RequestHandler.
func (s *Modbus) HandleCoils(req *modbus.CoilsRequest) ([]bool, error) {
	var args []uint16
	for _, b := range req.Args {
		args = append(args, boolReg(b))
	}
	regs, err := s.handle(Request{Table: profile.Coil, Addr: req.Addr, Quantity: req.Quantity, Write: req.IsWrite,
		Args: args, Unit: req.UnitId}, int(req.Quantity))
	return bools(regs), err
}

// HandleDiscreteInputs implements modbus.RequestHandler.
func (s *Modbus) HandleDiscreteInputs(req *modbus.DiscreteInputsRequest) ([]bool, error) {
	regs, err := s.handle(Request{Table: profile.Discrete, Addr: req.Addr, Quantity: req.Quantity, Unit: req.UnitId}, int(req.Quantity))
	return bools(regs), err
}

func boolReg(b bool) uint16 {
	if b {
		return 1
	}
	return 0
}

func bools(regs []uint16) []bool {
	if regs == nil {
		return nil
	}
	out := make([]bool, len(regs))
	for i, r := range regs {
		out[i] = r != 0
	}
	return out
}

// FreeTCPPort returns a loopback address with a port that was free a
// moment ago (the modbus server cannot listen on port 0 and report it).
func FreeTCPPort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// ErrDrop is returned by a Fault to have the proxy or agent say nothing.
var ErrDrop = errors.New("drop")
