package physics

// PI is a proportional-integral controller with an output clamp and
// conditional integration as anti-windup: the integral stops growing
// while the output sits on a limit and the error would push it further.
//
//	u = Kp·e + (Kp/Ti)·∫e dt, clamped to [Min, Max]
type PI struct {
	Kp       float64
	Ti       float64 // integral time, s; 0 disables the integral
	Min, Max float64
	Reverse  bool // output falls as the error grows

	integral float64
	out      float64
}

// Step feeds error e (measurement − setpoint, or the reverse when
// Reverse) for dt seconds and returns the output.
func (c *PI) Step(dt, e float64) float64 {
	if c.Reverse {
		e = -e
	}
	if c.Ti > 0 {
		next := c.integral + c.Kp/c.Ti*e*dt
		u := c.Kp*e + next
		if (u < c.Max || e < 0) && (u > c.Min || e > 0) {
			c.integral = next
		}
	}
	c.out = clamp(c.Kp*e+c.integral, c.Min, c.Max)
	return c.out
}

// Preset sets the integral so that a zero error yields output u: the
// bumpless start of a controller already at its operating point.
func (c *PI) Preset(u float64) { c.integral, c.out = u, clamp(u, c.Min, c.Max) }

// Output is the last output.
func (c *PI) Output() float64 { return c.out }

func clamp(v, lo, hi float64) float64 { return max(lo, min(hi, v)) }

// Ramp moves x towards target by at most rate·dt.
func Ramp(x, target, rate, dt float64) float64 {
	if rate <= 0 {
		return target
	}
	step := rate * dt
	switch {
	case target > x+step:
		return x + step
	case target < x-step:
		return x - step
	}
	return target
}
