package probe

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/simonvetter/modbus"

	"github.com/seamdc/seam/internal/binding"
)

// Error is a failure to read or write a device, with everything a
// commissioning engineer needs to find it.
type Error struct {
	Device *binding.Device
	Op     string // "read", "write", "connect", "walk"
	Point  string // the point, or "" for a request covering several
	Where  string // "input registers 0..31", "OID 1.3.6…"
	Err    error
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "device %s (%s %s", e.Device.Name, e.Device.Protocol, e.Device.Address)
	if e.Device.Protocol.Family() == "modbus" {
		fmt.Fprintf(&b, " unit %d", e.Device.Unit)
	}
	b.WriteString(")")
	if e.Point != "" {
		fmt.Fprintf(&b, " point %s", e.Point)
	}
	if e.Where != "" {
		fmt.Fprintf(&b, " at %s", e.Where)
	}
	fmt.Fprintf(&b, ": %s: %v", e.Op, e.Err)
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// TimeoutError is a request that got no answer in time.
type TimeoutError struct {
	After time.Duration
	// Check says what to look at when the device is reachable but
	// silent, or "".
	Check string
}

func (e *TimeoutError) Error() string {
	if e.Check != "" {
		return fmt.Sprintf("timed out after %s (%s)", e.After, e.Check)
	}
	return fmt.Sprintf("timed out after %s", e.After)
}

// Timeout marks it as a timeout for errors.Is(err, os.ErrDeadlineExceeded) users.
func (e *TimeoutError) Timeout() bool { return true }

// ExceptionError is a Modbus exception reply.
type ExceptionError struct {
	Code byte
	Err  error // the library's sentinel
}

func (e *ExceptionError) Error() string {
	return fmt.Sprintf("exception %02X %s", e.Code, exceptionNames[e.Code])
}

func (e *ExceptionError) Unwrap() error { return e.Err }

var exceptionNames = map[byte]string{
	0x01: "illegal function", 0x02: "illegal data address", 0x03: "illegal data value",
	0x04: "server device failure", 0x05: "acknowledge", 0x06: "server device busy",
	0x08: "memory parity error", 0x0A: "gateway path unavailable", 0x0B: "gateway target device failed to respond",
}

var exceptionCodes = map[error]byte{
	modbus.ErrIllegalFunction: 0x01, modbus.ErrIllegalDataAddress: 0x02, modbus.ErrIllegalDataValue: 0x03,
	modbus.ErrServerDeviceFailure: 0x04, modbus.ErrAcknowledge: 0x05, modbus.ErrServerDeviceBusy: 0x06,
	modbus.ErrMemoryParityError: 0x08, modbus.ErrGWPathUnavailable: 0x0A, modbus.ErrGWTargetFailedToRespond: 0x0B,
}

// describeModbus turns a library error into what happened.
func describeModbus(err error, timeout time.Duration) error {
	for sentinel, code := range exceptionCodes {
		if errors.Is(err, sentinel) {
			return &ExceptionError{Code: code, Err: sentinel}
		}
	}
	switch {
	case errors.Is(err, modbus.ErrRequestTimedOut) || errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, context.DeadlineExceeded):
		return &TimeoutError{After: timeout}
	case errors.Is(err, modbus.ErrProtocolError), errors.Is(err, modbus.ErrBadTransactionId),
		errors.Is(err, modbus.ErrUnknownProtocolId), errors.Is(err, modbus.ErrBadUnitId),
		errors.Is(err, modbus.ErrShortFrame), errors.Is(err, modbus.ErrBadCRC):
		return fmt.Errorf("garbled reply (%w)", err)
	}
	return err
}

// isException reports whether err is an answer from the device (an
// exception), after which the connection is still good.
func isException(err error) bool {
	var ex *ExceptionError
	return errors.As(err, &ex)
}
