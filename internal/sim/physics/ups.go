package physics

// UPS is a double-conversion UPS on a feed. While its input is healthy
// it carries the load from the source and recharges; when the input is
// lost it carries the load from its battery without interruption until
// the stored energy is gone. The battery holds Rating·RideThrough kJ, so
// at a constant load P it rides through
//
//	t = RideThrough · Rating / P
type UPS struct {
	Rating      float64 // kW
	RideThrough float64 // s at Rating
	Recharge    float64 // recharge power as a fraction of Rating, e.g. 0.1

	stored float64 // kJ
	init   bool
}

// Capacity is the battery's energy in kJ.
func (u *UPS) Capacity() float64 { return u.Rating * u.RideThrough }

// Step carries loadKW for dt seconds with the input present or lost, and
// reports whether the output is live at the end of the step.
func (u *UPS) Step(dt, loadKW float64, inputOK bool) bool {
	if !u.init {
		u.stored, u.init = u.Capacity(), true
	}
	if inputOK {
		u.stored = min(u.Capacity(), u.stored+u.Recharge*u.Rating*dt)
		return true
	}
	if u.stored <= 0 {
		return false
	}
	u.stored -= loadKW * dt
	if u.stored <= 0 {
		u.stored = 0
		return false
	}
	return true
}

// Charge is the stored energy as a fraction of capacity.
func (u *UPS) Charge() float64 {
	if !u.init || u.Capacity() == 0 {
		return 1
	}
	return u.stored / u.Capacity()
}
