// Package physics holds the simulated site's models: power blocks
// (regulated sources, breakers, UPS, dual feeds) and cooling loops
// (thermal mass, PI-controlled supply temperature through a valve,
// parallel pumps). Every model is a plain value stepped by a fixed dt in
// seconds; nothing here reads a clock, so tests step it exactly and
// compare with closed forms.
//
// Units are the contract's canonical units: kW, V, A, Hz, degC, K, L/min,
// kPa, seconds.
package physics

import "math"

// Regulator is a first-order regulated quantity (a source's voltage or
// frequency). A change of load ΔL (per unit of rating) moves the output
// at once by −Impedance·ΔL; the regulator then removes that deviation
// with time constant Tau. StaticDroop is the deviation left at steady
// state per unit of load. For a load step at t=0 the output is
//
//	x(t) = Nominal · (1 − StaticDroop·L − Impedance·ΔL·e^(−t/Tau))
type Regulator struct {
	Nominal     float64 // V or Hz
	Impedance   float64 // per-unit deviation per per-unit load change
	StaticDroop float64 // per-unit deviation per per-unit load, kept
	Tau         float64 // recovery time constant, s

	dev  float64 // transient deviation, per unit
	load float64 // last load, per unit
	init bool
}

// Step moves the regulator by dt seconds with the load (per unit of
// rating) that applies during the step. A load change is applied at the
// start of the step, so sampled values match the closed form exactly.
func (r *Regulator) Step(dt, load float64) {
	if !r.init {
		r.load, r.init = load, true
	}
	r.dev -= r.Impedance * (load - r.load)
	r.load = load
	if r.Tau > 0 {
		r.dev *= math.Exp(-dt / r.Tau)
	} else {
		r.dev = 0
	}
}

// Value is the output in the regulated quantity's unit.
func (r *Regulator) Value() float64 {
	return r.Nominal * (1 - r.StaticDroop*r.load + r.dev)
}

// Deviation is the transient part of the output, per unit of nominal.
func (r *Regulator) Deviation() float64 { return r.dev }

// Reset forgets the transient, as a source does when it restarts.
func (r *Regulator) Reset(load float64) { r.dev, r.load, r.init = 0, load, true }

// RecoveryTime is the closed-form time after a step of ΔL (per unit) for
// the transient deviation to fall back to band (per unit): the time a
// sampled output needs to return inside a steady band of ±band.
func RecoveryTime(impedance, tau, dl, band float64) float64 {
	peak := math.Abs(impedance * dl)
	if peak <= band {
		return 0
	}
	return tau * math.Log(peak/band)
}
