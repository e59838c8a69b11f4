package probetest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"unsafe"

	"github.com/simonvetter/modbus"
)

// RTU serves a Modbus server's registers as Modbus RTU on a
// pseudo-terminal, so that the RTU client path (serial port settings,
// framing, CRC) runs for real without hardware. Path is the serial device
// a client opens.
type RTU struct {
	Path   string
	master *os.File
	server *Modbus
	unit   uint8
}

// NewRTU opens a pseudo-terminal and answers requests for unit on it
// with s's registers until Close.
func NewRTU(s *Modbus, unit uint8) (*RTU, error) {
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, fmt.Errorf("pseudo-terminal: %w", err)
	}
	var unlock int32
	if err := ioctl(master, syscall.TIOCSPTLCK, unsafe.Pointer(&unlock)); err != nil {
		master.Close()
		return nil, fmt.Errorf("unlockpt: %w", err)
	}
	var n uint32
	if err := ioctl(master, syscall.TIOCGPTN, unsafe.Pointer(&n)); err != nil {
		master.Close()
		return nil, fmt.Errorf("ptsname: %w", err)
	}
	r := &RTU{Path: fmt.Sprintf("/dev/pts/%d", n), master: master, server: s, unit: unit}
	go r.serve()
	return r, nil
}

func ioctl(f *os.File, req uint, arg unsafe.Pointer) error {
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), uintptr(req), uintptr(arg)); errno != 0 {
		return errno
	}
	return nil
}

// Close stops serving.
func (r *RTU) Close() { r.master.Close() }

func (r *RTU) serve() {
	for {
		frame, err := r.readFrame()
		if err != nil {
			if errors.Is(err, errBadCRC) {
				continue // a real slave stays silent on a bad frame
			}
			return
		}
		if frame[0] != r.unit {
			continue
		}
		if _, err := r.master.Write(withCRC(r.answer(frame))); err != nil {
			return
		}
	}
}

var errBadCRC = errors.New("bad crc")

// readFrame reads one request: unit, function, its fixed part, and for
// multiple writes the byte count and data, then the CRC.
func (r *RTU) readFrame() ([]byte, error) {
	head := make([]byte, 6)
	if _, err := io.ReadFull(r.master, head); err != nil {
		return nil, err
	}
	frame := head
	if fc := head[1]; fc == 0x0F || fc == 0x10 {
		count := make([]byte, 1)
		if _, err := io.ReadFull(r.master, count); err != nil {
			return nil, err
		}
		data := make([]byte, int(count[0]))
		if _, err := io.ReadFull(r.master, data); err != nil {
			return nil, err
		}
		frame = append(append(frame, count...), data...)
	}
	crc := make([]byte, 2)
	if _, err := io.ReadFull(r.master, crc); err != nil {
		return nil, err
	}
	if binary.LittleEndian.Uint16(crc) != crc16(frame) {
		return nil, errBadCRC
	}
	return frame, nil
}

// answer runs a request against the server's handler.
func (r *RTU) answer(f []byte) []byte {
	unit, fc := f[0], f[1]
	addr, qty := binary.BigEndian.Uint16(f[2:]), binary.BigEndian.Uint16(f[4:])
	var regs []uint16
	var bits []bool
	var err error
	switch fc {
	case 0x03:
		regs, err = r.server.HandleHoldingRegisters(&modbus.HoldingRegistersRequest{UnitId: unit, Addr: addr, Quantity: qty})
	case 0x04:
		regs, err = r.server.HandleInputRegisters(&modbus.InputRegistersRequest{UnitId: unit, Addr: addr, Quantity: qty})
	case 0x01:
		bits, err = r.server.HandleCoils(&modbus.CoilsRequest{UnitId: unit, Addr: addr, Quantity: qty})
	case 0x02:
		bits, err = r.server.HandleDiscreteInputs(&modbus.DiscreteInputsRequest{UnitId: unit, Addr: addr, Quantity: qty})
	case 0x06:
		_, err = r.server.HandleHoldingRegisters(&modbus.HoldingRegistersRequest{UnitId: unit, Addr: addr, Quantity: 1, IsWrite: true, Args: []uint16{qty}})
		if err == nil {
			return f[:6]
		}
	case 0x10:
		args := make([]uint16, qty)
		for i := range args {
			args[i] = binary.BigEndian.Uint16(f[7+2*i:])
		}
		_, err = r.server.HandleHoldingRegisters(&modbus.HoldingRegistersRequest{UnitId: unit, Addr: addr, Quantity: qty, IsWrite: true, Args: args})
		if err == nil {
			return f[:6]
		}
	default:
		return []byte{unit, fc | 0x80, 0x01}
	}
	if err != nil {
		code := byte(0x04)
		if errors.Is(err, modbus.ErrIllegalDataAddress) {
			code = 0x02
		}
		return []byte{unit, fc | 0x80, code}
	}
	out := []byte{unit, fc, 0}
	for _, v := range regs {
		out = binary.BigEndian.AppendUint16(out, v)
	}
	if bits != nil {
		packed := make([]byte, (len(bits)+7)/8)
		for i, b := range bits {
			if b {
				packed[i/8] |= 1 << (i % 8)
			}
		}
		out = append(out, packed...)
	}
	out[2] = byte(len(out) - 3)
	return out
}

func withCRC(b []byte) []byte { return binary.LittleEndian.AppendUint16(b, crc16(b)) }

// crc16 is the Modbus CRC (polynomial 0xA001 reflected, initial 0xFFFF).
func crc16(b []byte) uint16 {
	crc := uint16(0xFFFF)
	for _, c := range b {
		crc ^= uint16(c)
		for range 8 {
			if crc&1 != 0 {
				crc = crc>>1 ^ 0xA001
			} else {
				crc >>= 1
			}
		}
	}
	return crc
}
