package sim

import (
	"errors"
	"fmt"
	"math"

	"github.com/seamdc/seam/internal/sim/physics"
)

// Load bank fault codes, after the ASCO/Froment Sigma 2 warnings.
const (
	FaultNone        = 0
	FaultOverTemp    = 1 // H0
	FaultLoadStep    = 2 // H1
	FaultComms       = 3 // H2: the heartbeat watchdog expired
	FaultPhaseRotate = 5 // H4
)

// Errors a load bank returns to a command; the Modbus server turns them
// into exceptions.
var (
	ErrLocal      = errors.New("the load bank is in local control: remote commands are refused")
	ErrOutOfRange = errors.New("value out of range")
	ErrReadOnly   = errors.New("not a command")
)

// LoadBank is a resistive load bank: an enable, a kW setpoint quantised
// to its resolution and applied at its maximum rate, a heartbeat
// watchdog that drops the load and latches a fault when the heartbeat
// register stops changing, and local/remote control.
type LoadBank struct {
	ID, Module string
	Rating     float64 // kW
	Resolution float64 // kW
	MaxRate    float64 // kW/s
	Watchdog   float64 // s

	enable    bool
	setpoint  float64
	applied   float64
	remote    bool
	estop     bool
	fault     int
	heartbeat float64
	lastBeat  float64 // sim time of the last heartbeat change
	now       float64
	volts     float64
}

// Applied is the load the bank draws, kW.
func (lb *LoadBank) Applied() float64 { return lb.applied }

// step moves the bank by dt at sim time now; volts is the supply voltage
// (0: no supply, so a resistive bank draws nothing).
func (lb *LoadBank) step(dt, now, volts float64) {
	lb.now, lb.volts = now, volts
	if lb.enable && lb.Watchdog > 0 && now-lb.lastBeat > lb.Watchdog+1e-9 {
		lb.trip(FaultComms)
	}
	target := 0.0
	if lb.enable && lb.fault == FaultNone && !lb.estop {
		target = lb.quantised()
	}
	lb.applied = physics.Ramp(lb.applied, target, lb.MaxRate, dt)
	if volts <= 0 {
		lb.applied = 0
	}
}

// trip drops the load at once (the contactors open) and latches code.
func (lb *LoadBank) trip(code int) {
	lb.fault, lb.enable, lb.applied = code, false, 0
}

func (lb *LoadBank) quantised() float64 {
	sp := min(lb.setpoint, lb.Rating)
	if lb.Resolution > 0 {
		sp = math.Round(sp/lb.Resolution) * lb.Resolution
	}
	return sp
}

// Signal returns one of the bank's values.
func (lb *LoadBank) Signal(name string) (float64, bool) {
	switch name {
	case "enable":
		return b2f(lb.enable), true
	case "setpoint":
		return lb.setpoint, true
	case "applied":
		return lb.applied, true
	case "voltage":
		return lb.volts, true
	case "current":
		if lb.volts <= 0 {
			return 0, true
		}
		return lb.applied * 1000 / (math.Sqrt(3) * lb.volts), true
	case "status":
		return float64(lb.status()), true
	case "emergency-stop":
		return b2f(lb.estop), true
	case "fault":
		return float64(lb.fault), true
	case "remote":
		return b2f(lb.remote), true
	case "heartbeat":
		return lb.heartbeat, true
	case "fault-reset":
		return 0, true
	}
	return 0, false
}

// status is the status word: bit 0 emergency stop, 1 ready, 2 fan
// running, 3 load applied.
func (lb *LoadBank) status() int {
	s := 0
	if lb.estop {
		s |= 1
	}
	if lb.fault == FaultNone && !lb.estop && lb.volts > 0 {
		s |= 2
	}
	if lb.enable {
		s |= 4
	}
	if lb.applied > 0 {
		s |= 8
	}
	return s
}

// LoadBankSignals are the signals a load bank serves.
var LoadBankSignals = []string{"enable", "setpoint", "applied", "voltage", "current", "status",
	"emergency-stop", "fault", "remote", "heartbeat", "fault-reset"}

// Command applies a remote write.
func (lb *LoadBank) Command(name string, v float64) error {
	switch name {
	case "enable", "setpoint", "heartbeat", "fault-reset":
	default:
		return fmt.Errorf("load bank %s: %s: %w", lb.ID, name, ErrReadOnly)
	}
	if !lb.remote {
		return fmt.Errorf("load bank %s: %s: %w", lb.ID, name, ErrLocal)
	}
	switch name {
	case "enable":
		on := v != 0
		if on && !lb.enable {
			lb.lastBeat = lb.now // the watchdog starts when the bank is enabled
		}
		lb.enable = on && lb.fault == FaultNone
	case "setpoint":
		if v < 0 || v > lb.Rating {
			return fmt.Errorf("load bank %s: setpoint %.1f kW outside 0..%.0f kW: %w", lb.ID, v, lb.Rating, ErrOutOfRange)
		}
		lb.setpoint = v
	case "heartbeat":
		if v != lb.heartbeat {
			lb.heartbeat, lb.lastBeat = v, lb.now
		}
	case "fault-reset":
		if v != 0 {
			lb.fault = FaultNone
		}
	}
	return nil
}

// SetLocal switches the bank to local (operator panel) or remote control.
func (lb *LoadBank) SetLocal(local bool) { lb.remote = !local }

// EmergencyStop presses or releases the bank's emergency stop.
func (lb *LoadBank) EmergencyStop(on bool) {
	lb.estop = on
	if on {
		lb.enable, lb.applied = false, 0
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
