package physics

import "math"

// CDU is one coolant distribution unit of a loop: its pumps and its leak
// sensor. Its heat exchanger is lumped into the loop's.
type CDU struct {
	ID    string // e.g. "l1/loop/cdu-1"
	Pumps []*Pump
	Leak  bool // the leak sensor is wet
}

// Flow is the CDU's own flow in L/min.
func (c *CDU) Flow() float64 {
	total := 0.0
	for _, p := range c.Pumps {
		total += p.Flow()
	}
	return total
}

// Redundant reports whether every pump of the CDU is healthy (N+1 kept).
func (c *CDU) Redundant() bool {
	for _, p := range c.Pumps {
		if p.Tripped {
			return false
		}
	}
	return true
}

// Loop is a secondary cooling loop (technology coolant). Coolant leaves
// the CDUs' heat exchangers at Ts, travels the supply piping to the IT
// cold plates, takes the IT heat, and travels the return piping back to
// the heat exchangers, which reject heat to facility water:
//
//	pipes:  plug flow, as Cells well-mixed cells in series (a front
//	        arrives after volume/flow, slightly spread)
//	IT:     C_it·dT_it/dt = Q_it + ṁ·cp·(T_in − T_it)
//	CDU:    C_hx·dTs/dt  = ṁ·cp·(Tr − Ts) − Q_hx + Q_pumps
//	        Q_hx = f(valve)·UA·(Tr − T_fw), at most ṁ·cp·(Tr − T_fw)
//
// so at steady state Q_it + Q_pumps = ṁ·cp·(Tr − Ts) = Q_hx. A PI
// controller holds Ts by moving the facility-water valve. Because the
// return piping carries a heat step as a front, a fast step reaches the
// heat exchanger as a near-step in Tr, while a slow ramp arrives as a
// ramp: the valve's speed decides how far Ts overshoots.
type Loop struct {
	ID             string  // e.g. "l1/loop"
	Cp             float64 // kJ/(kg·K)
	Density        float64 // kg/L
	SupplyPipe     float64 // kg of coolant in the supply piping
	ReturnPipe     float64 // kg in the return piping
	ITMass         float64 // kg-equivalent of the cold plates and manifolds
	HXMass         float64 // kg-equivalent of the CDUs' heat exchangers
	Cells          int     // cells per pipe; 0: 20
	PumpEfficiency float64 // share of pump power that is hydraulic; 0: no pump heat
	FacilityWater  float64 // degC
	UA             float64 // kW/K of the heat exchangers, valve fully open
	Setpoint       float64 // degC
	Valve          Valve
	Control        PI // valve command from the supply temperature error
	Pumps          Pumps
	CDUs           []*CDU
	HighTempMargin float64 // K above the setpoint that raises HighTemp

	RedundancyLost, Leak, HighTemp Delay

	Ts, Tr, TIT float64 // degC: CDU outlet, CDU inlet, IT outlet
	supply, ret []float64
	heat, hx    float64 // kW in the last step
}

// MassFlow is the coolant flow in kg/s.
func (l *Loop) MassFlow() float64 { return l.Pumps.Flow() / 60 * l.Density }

// PumpHeat is the pumps' power dissipated in the coolant, kW.
func (l *Loop) PumpHeat() float64 {
	if l.PumpEfficiency <= 0 {
		return 0
	}
	return l.Pumps.DP() * l.Pumps.Flow() / 60000 / l.PumpEfficiency
}

func (l *Loop) cells() int {
	if l.Cells > 0 {
		return l.Cells
	}
	return 20
}

// Start sets the loop at its steady state for heatKW: pumps at the flow
// setpoint, supply at the setpoint, return at Ts + Q/(ṁ·cp), valve where
// it removes exactly the heat.
func (l *Loop) Start(heatKW float64) {
	l.Pumps.Start()
	q := heatKW + l.PumpHeat()
	l.Ts = l.Setpoint
	rise := 0.0
	if mc := l.MassFlow() * l.Cp; mc > 0 {
		rise = heatKW / mc
	}
	l.TIT = l.Ts + rise
	l.Tr = l.TIT
	l.supply, l.ret = fill(l.cells(), l.Ts), fill(l.cells(), l.TIT)
	f := 0.0
	if d := l.Tr - l.FacilityWater; d > 0 && l.UA > 0 {
		f = clamp(q/(l.UA*d), 0, 1)
	}
	l.Valve.Set(PositionFor(f, l.Valve.Authority))
	l.Control.Preset(l.Valve.Position())
	l.heat, l.hx = heatKW, q
}

func fill(n int, v float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

// Step runs the loop for dt seconds with heatKW from the IT load.
func (l *Loop) Step(dt, heatKW float64) {
	l.Pumps.Step(dt)
	m := l.MassFlow()
	mc := m * l.Cp
	tin := advect(l.supply, l.Ts, m*dt/(l.SupplyPipe/float64(len(l.supply))))
	l.TIT += (heatKW + mc*(tin-l.TIT)) / (l.ITMass * l.Cp) * dt
	l.Tr = advect(l.ret, l.TIT, m*dt/(l.ReturnPipe/float64(len(l.ret))))
	hx := 0.0
	if d := l.Tr - l.FacilityWater; d > 0 {
		hx = math.Min(l.Valve.Fraction()*l.UA*d, mc*d)
	}
	l.Ts += (mc*(l.Tr-l.Ts) - hx + l.PumpHeat()) / (l.HXMass * l.Cp) * dt
	l.heat, l.hx = heatKW, hx
	l.Valve.Step(dt, l.Control.Step(dt, l.Ts-l.Setpoint))
	l.stepAlarms(dt)
}

// advect moves coolant through cells by the share k of a cell's mass
// and returns the outlet temperature.
func advect(cells []float64, inlet, k float64) float64 {
	k = math.Min(k, 1)
	prev := inlet
	for i := range cells {
		cells[i] += k * (prev - cells[i])
		prev = cells[i]
	}
	return prev
}

func (l *Loop) stepAlarms(dt float64) {
	redundant, leak := true, false
	for _, c := range l.CDUs {
		redundant = redundant && c.Redundant()
		leak = leak || c.Leak
	}
	l.RedundancyLost.Step(dt, !redundant)
	l.Leak.Step(dt, leak)
	l.HighTemp.Step(dt, l.Ts > l.Setpoint+l.HighTempMargin)
}

// Heat is the IT heat into the loop in the last step, kW.
func (l *Loop) Heat() float64 { return l.heat }

// Removed is the heat to facility water in the last step, kW.
func (l *Loop) Removed() float64 { return l.hx }

// TransitTime is how long coolant takes from the IT outlet to the CDU
// at the present flow, s.
func (l *Loop) TransitTime() float64 {
	if m := l.MassFlow(); m > 0 {
		return l.ReturnPipe / m
	}
	return math.Inf(1)
}
