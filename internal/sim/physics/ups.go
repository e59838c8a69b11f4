package physics

import "math"

// UPS is a double-conversion UPS on a feed. While its input is healthy
// it carries the load from the source and recharges; when the input is
// lost it carries the load from its battery without interruption until
// the stored energy is gone. The battery holds Rating·RideThrough kJ, so
// at a constant load P it rides through
//
//	t = RideThrough · Rating / P
//
// During a dip of the input to v per unit its rectifier draws at most v
// times the load from the input and the battery supplies the rest (the
// output is not interrupted). With Transfer set it also takes the load
// off the input altogether, as its settings say.
type UPS struct {
	Rating      float64 // kW
	RideThrough float64 // s at Rating
	Recharge    float64 // recharge power as a fraction of Rating, e.g. 0.1
	Transfer    *Transfer

	stored float64 // kJ
	init   bool
	// transferred: the load is on the battery by the transfer settings;
	// out and back count how long the input has been outside and inside
	// them
	transferred bool
	out, back   float64
	inputKW     float64
}

// Transfer is when a UPS takes its load off its input (the contract's
// ups.transfer): once the input has been below PU, or outside HzMin to
// HzMax, for longer than After, the UPS carries the load from its
// battery and draws nothing from the input, until the input has been
// back at or above PU (and inside the band) for BackAfter.
type Transfer struct {
	PU, After, BackAfter float64 // per unit, s, s
	HzMin, HzMax         float64 // 0: no bound
}

// Input is the state of a UPS's input during a step.
type Input struct {
	Lost bool    // no input at all (utility or generator gone)
	PU   float64 // voltage per unit of nominal
	Hz   float64 // frequency; 0: unknown (no frequency bound applies)
}

// Capacity is the battery's energy in kJ.
func (u *UPS) Capacity() float64 { return u.Rating * u.RideThrough }

// Step carries loadKW for dt seconds with the input present (at 1 pu)
// or lost, and reports whether the output is live at the end of the step.
func (u *UPS) Step(dt, loadKW float64, inputOK bool) bool {
	return u.StepInput(dt, loadKW, Input{Lost: !inputOK, PU: 1})
}

// StepInput carries loadKW for dt seconds from the input as it is, and
// reports whether the output is live at the end of the step.
func (u *UPS) StepInput(dt, loadKW float64, in Input) bool {
	if !u.init {
		u.stored, u.init = u.Capacity(), true
	}
	u.stepTransfer(dt, in)
	u.inputKW = 0
	fromBattery := loadKW
	if !in.Lost && !u.transferred {
		grid := loadKW * math.Max(0, math.Min(in.PU, 1))
		fromBattery = loadKW - grid
		u.inputKW = grid
		if fromBattery <= 0 {
			r := math.Min(u.Recharge*u.Rating, (u.Capacity()-u.stored)/dt)
			u.stored += r * dt
			u.inputKW += r
			return true
		}
	}
	if u.stored <= 0 {
		u.inputKW = 0
		return false
	}
	u.stored -= fromBattery * dt
	if u.stored <= 0 {
		u.stored, u.inputKW = 0, 0
		return false
	}
	return true
}

// stepTransfer follows the transfer settings for one step: a lost input
// counts as 0 pu.
func (u *UPS) stepTransfer(dt float64, in Input) {
	t := u.Transfer
	if t == nil {
		return
	}
	pu := in.PU
	if in.Lost {
		pu = 0
	}
	bad := pu < t.PU-1e-9 || (in.Hz > 0 && ((t.HzMin > 0 && in.Hz < t.HzMin) || (t.HzMax > 0 && in.Hz > t.HzMax)))
	if bad {
		u.out += dt
		u.back = 0
	} else {
		u.back += dt
		u.out = 0
	}
	switch {
	case !u.transferred && bad && u.out > t.After+1e-9:
		u.transferred = true
	case u.transferred && !bad && u.back >= t.BackAfter-1e-9:
		u.transferred = false
	}
}

// Transferred reports whether the UPS carries its load from the battery
// by its transfer settings (the input may be back, waiting out
// BackAfter).
func (u *UPS) Transferred() bool { return u.transferred }

// InputKW is the power the UPS drew from its input in the last step:
// what its rectifier passed to the load, and the recharge.
func (u *UPS) InputKW() float64 { return u.inputKW }

// Charge is the stored energy as a fraction of capacity.
func (u *UPS) Charge() float64 {
	if !u.init || u.Capacity() == 0 {
		return 1
	}
	return u.stored / u.Capacity()
}
