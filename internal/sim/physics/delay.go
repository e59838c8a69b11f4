package physics

// Delay debounces a condition into an alarm: the alarm rises once the
// condition has held for On seconds and falls once it has been false for
// Off seconds, as a controller's alarm confirmation timers do. A Delay
// with Disabled set never raises (a defect: the alarm that never fires).
type Delay struct {
	On, Off  float64 // s
	Disabled bool

	active bool
	timer  float64 // how long the condition has disagreed with active
}

// Step feeds the condition for dt seconds and returns the alarm state.
func (d *Delay) Step(dt float64, cond bool) bool {
	if d.Disabled {
		d.active, d.timer = false, 0
		return false
	}
	if cond == d.active {
		d.timer = 0
		return d.active
	}
	d.timer += dt
	limit := d.On
	if d.active {
		limit = d.Off
	}
	if d.timer >= limit-1e-9 {
		d.active, d.timer = cond, 0
	}
	return d.active
}

// Active reports the alarm.
func (d *Delay) Active() bool { return d.active }
