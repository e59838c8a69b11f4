package physics

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

// Loop is a secondary cooling loop (technology coolant) with two lumped
// thermal masses: the return side, heated by the IT load, and the supply
// side, cooled by the CDUs' heat exchangers to facility water:
//
//	C_r·dTr/dt = Q_it + ṁ·cp·(Ts − Tr)
//	C_s·dTs/dt = ṁ·cp·(Tr − Ts) − Q_hx
//	Q_hx = f(valve)·UA·(Tr − T_fw), at most ṁ·cp·(Tr − T_fw)
//
// so at steady state Q_it = ṁ·cp·(Tr − Ts) = Q_hx. A PI controller holds
// the supply temperature by moving the facility-water valve.
type Loop struct {
	ID             string  // e.g. "l1/loop"
	Cp             float64 // kJ/(kg·K)
	Density        float64 // kg/L
	ReturnMass     float64 // kg of coolant-equivalent on the return side
	SupplyMass     float64 // kg on the supply side
	FacilityWater  float64 // degC
	UA             float64 // kW/K of the heat exchangers, valve fully open
	Setpoint       float64 // degC
	Valve          Valve
	Control        PI // valve command from the supply temperature error
	Pumps          Pumps
	CDUs           []*CDU
	HighTempMargin float64 // K above the setpoint that raises HighTemp

	RedundancyLost, Leak, HighTemp Delay

	Ts, Tr float64 // degC
	heat   float64 // kW from the IT load in the last step
	hx     float64 // kW to facility water in the last step
}

// MassFlow is the coolant flow in kg/s.
func (l *Loop) MassFlow() float64 { return l.Pumps.Flow() / 60 * l.Density }

// Start sets the loop at its steady state for heatKW: pumps at the flow
// setpoint, supply at the setpoint, return at Ts + Q/(ṁ·cp), valve where
// it removes exactly heatKW.
func (l *Loop) Start(heatKW float64) {
	l.Pumps.Start()
	l.Ts = l.Setpoint
	l.Tr = l.Ts
	if mc := l.MassFlow() * l.Cp; mc > 0 {
		l.Tr += heatKW / mc
	}
	f := 0.0
	if d := l.Tr - l.FacilityWater; d > 0 && l.UA > 0 {
		f = clamp(heatKW/(l.UA*d), 0, 1)
	}
	l.Valve.Set(PositionFor(f, l.Valve.Authority))
	l.Control.Preset(l.Valve.Position())
	l.heat, l.hx = heatKW, heatKW
}

// Step runs the loop for dt seconds with heatKW from the IT load.
func (l *Loop) Step(dt, heatKW float64) {
	l.Pumps.Step(dt)
	mc := l.MassFlow() * l.Cp
	hx := 0.0
	if d := l.Tr - l.FacilityWater; d > 0 {
		hx = min(l.Valve.Fraction()*l.UA*d, mc*d)
	}
	dTr := (heatKW + mc*(l.Ts-l.Tr)) / (l.ReturnMass * l.Cp)
	dTs := (mc*(l.Tr-l.Ts) - hx) / (l.SupplyMass * l.Cp)
	l.Tr += dTr * dt
	l.Ts += dTs * dt
	l.heat, l.hx = heatKW, hx
	l.Valve.Step(dt, l.Control.Step(dt, l.Ts-l.Setpoint))
	l.stepAlarms(dt)
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
