package physics

import "math"

// Pump is a variable-speed pump. Its flow follows the affinity law in a
// fixed system, q = speed·Rated; its speed ramps at Accel (fraction of
// full speed per second) towards the controller's command, and coasts
// down with time constant Coast once it trips.
type Pump struct {
	ID      string  // e.g. "l1/loop/cdu-1/p1"
	Rated   float64 // L/min at full speed
	Accel   float64 // fraction of full speed per second
	Coast   float64 // coast-down time constant, s
	Tripped bool

	speed float64
}

// Flow is the pump's flow in L/min.
func (p *Pump) Flow() float64 { return p.speed * p.Rated }

// Speed is the pump's speed as a fraction of full speed.
func (p *Pump) Speed() float64 { return p.speed }

// Running reports whether the pump is healthy and turning.
func (p *Pump) Running() bool { return !p.Tripped && p.speed > 0.01 }

func (p *Pump) step(dt, command float64) {
	if p.Tripped {
		p.speed *= math.Exp(-dt / p.Coast)
		return
	}
	p.speed = Ramp(p.speed, command, p.Accel, dt)
}

// Pumps are parallel pumps under one flow controller: every healthy pump
// runs at the speed the controller commands, so losing one dips the flow
// until the controller has ramped the others up.
type Pumps struct {
	Pumps    []*Pump
	Setpoint float64 // L/min
	Control  PI      // output: speed command, 0..1
	SystemK  float64 // kPa per (L/min)²: ΔP = SystemK·Q²
}

// Flow is the total flow in L/min.
func (g *Pumps) Flow() float64 {
	total := 0.0
	for _, p := range g.Pumps {
		total += p.Flow()
	}
	return total
}

// DP is the loop's differential pressure in kPa.
func (g *Pumps) DP() float64 { q := g.Flow(); return g.SystemK * q * q }

// Start puts every healthy pump at the speed that gives the setpoint.
func (g *Pumps) Start() {
	rated := 0.0
	for _, p := range g.Pumps {
		if !p.Tripped {
			rated += p.Rated
		}
	}
	s := 0.0
	if rated > 0 {
		s = clamp(g.Setpoint/rated, 0, 1)
	}
	for _, p := range g.Pumps {
		if !p.Tripped {
			p.speed = s
		}
	}
	g.Control.Preset(s)
}

// Step runs the flow controller and the pumps for dt seconds and returns
// the flow at the end of the step.
func (g *Pumps) Step(dt float64) float64 {
	cmd := g.Control.Step(dt, (g.Setpoint-g.Flow())/g.Setpoint)
	for _, p := range g.Pumps {
		p.step(dt, cmd)
	}
	return g.Flow()
}
