package physics

import "math"

// Valve is a control valve on the facility-water side of a heat
// exchanger. Its actuator strokes from closed to open in Stroke seconds,
// and its installed characteristic has authority Authority (0..1]: a
// linear valve of authority β passes the fraction
//
//	f(x) = x / sqrt(β + (1−β)·x²)
//
// of its full flow at position x. A low authority makes the valve act
// mostly near its seat, which is what makes real loops overshoot.
type Valve struct {
	Stroke    float64 // s, closed to open
	Authority float64

	pos float64
}

// Step moves the actuator towards command (0..1) for dt seconds.
func (v *Valve) Step(dt, command float64) {
	rate := 0.0
	if v.Stroke > 0 {
		rate = 1 / v.Stroke
	}
	v.pos = Ramp(v.pos, clamp(command, 0, 1), rate, dt)
}

// Position is the actuator position, 0..1.
func (v *Valve) Position() float64 { return v.pos }

// Set places the actuator at once (initial conditions).
func (v *Valve) Set(pos float64) { v.pos = clamp(pos, 0, 1) }

// Fraction is the installed flow fraction at the current position.
func (v *Valve) Fraction() float64 { return InstalledFraction(v.pos, v.Authority) }

// InstalledFraction is f(x) for a linear valve of authority beta.
func InstalledFraction(x, beta float64) float64 {
	if x <= 0 {
		return 0
	}
	if beta <= 0 || beta >= 1 {
		return x
	}
	return x / math.Sqrt(beta+(1-beta)*x*x)
}

// PositionFor inverts InstalledFraction: the position that passes f.
func PositionFor(f, beta float64) float64 {
	if f <= 0 {
		return 0
	}
	if beta <= 0 || beta >= 1 || f >= 1 {
		return min(f, 1)
	}
	// f² (β + (1−β)x²) = x²  →  x² = f²β / (1 − f²(1−β))
	return math.Sqrt(f * f * beta / (1 - f*f*(1-beta)))
}
