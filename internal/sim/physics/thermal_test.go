package physics

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// loop is the example site's loop: three 1.2 MW CDUs with two 1800 L/min
// pumps each, PG25, 30 degC supply.
func loop() *Loop {
	l := &Loop{ID: "l1/loop", Cp: 3.9, Density: 1, SupplyPipe: 700, ReturnPipe: 700, ITMass: 300, HXMass: 100,
		PumpEfficiency: 0.6, FacilityWater: 26, UA: 3 * 1200 / 14.0, Setpoint: 30, HighTempMargin: 3,
		Valve:          Valve{Stroke: 30, Authority: 0.5},
		Control:        PI{Kp: 0.2, Ti: 20, Min: 0, Max: 1},
		RedundancyLost: Delay{On: 2, Off: 5}, Leak: Delay{On: 1, Off: 5}, HighTemp: Delay{On: 10, Off: 10}}
	l.Pumps = Pumps{Setpoint: 3300, SystemK: 120.0 / 3300 / 3300, Control: PI{Kp: 1, Ti: 5, Min: 0, Max: 1}}
	for c := 1; c <= 3; c++ {
		cdu := &CDU{ID: fmt.Sprintf("l1/loop/cdu-%d", c)}
		for p := 1; p <= 2; p++ {
			pump := &Pump{ID: fmt.Sprintf("%s/p%d", cdu.ID, p), Rated: 1800, Accel: 0.05, Coast: 1}
			cdu.Pumps = append(cdu.Pumps, pump)
			l.Pumps.Pumps = append(l.Pumps.Pumps, pump)
		}
		l.CDUs = append(l.CDUs, cdu)
	}
	return l
}

func run(l *Loop, seconds, heat float64) {
	for range int(math.Round(seconds / dt)) {
		l.Step(dt, heat)
	}
}

func TestLoopSteadyStateIsHeatBalance(t *testing.T) {
	for _, tc := range []struct{ heat, flow float64 }{
		{1872, 3300}, {561.6, 3300}, {1000, 2400}, {2400, 3600},
	} {
		l := loop()
		l.Pumps.Setpoint = tc.flow
		l.Start(0)
		run(l, 1800, tc.heat)
		// Q = ṁ·cp·ΔT
		mdot := tc.flow / 60 * 1.0
		assert.InDelta(t, tc.heat/(mdot*3.9), l.Tr-l.Ts, 1e-3, "ΔT at %+v", tc)
		assert.InDelta(t, tc.heat+l.PumpHeat(), l.Removed(), 0.5, "heat to facility water at %+v", tc)
		assert.InDelta(t, 30, l.Ts, 1e-3, "supply held at the setpoint at %+v", tc)
		assert.InDelta(t, tc.flow, l.Pumps.Flow(), 0.5)
	}
}

func TestLoopStartIsSteady(t *testing.T) {
	l := loop()
	l.Start(1872)
	ts, tr := l.Ts, l.Tr
	run(l, 60, 1872)
	assert.InDelta(t, ts, l.Ts, 1e-6)
	assert.InDelta(t, tr, l.Tr, 1e-6)
	assert.InDelta(t, 1872/(3300/60.0*3.9), tr-ts, 1e-9)
}

// stepResponse steps the heat from 30 % to 100 % of 1872 kW at 20 MW/s
// and returns the largest supply deviation, the last time outside
// ±band, and the supply temperature at the end.
func stepResponse(l *Loop, seconds, band float64) (peak, lastOut, final float64) {
	lo, hi := 0.3*1872, 1872.0
	l.Start(lo)
	heat := lo
	for i := 1; i <= int(seconds/dt); i++ {
		heat = Ramp(heat, hi, 20000, dt)
		l.Step(dt, heat)
		d := math.Abs(l.Ts - l.Setpoint)
		peak = max(peak, d)
		if d > band {
			lastOut = float64(i) * dt
		}
	}
	return peak, lastOut, l.Ts
}

func TestLoopPISettlesAfterHeatStep(t *testing.T) {
	peak, _, final := stepResponse(loop(), 600, 1.5)
	t.Logf("30 → 100 %% heat step: supply peaks %.2f K off its setpoint", peak)
	assert.Greater(t, peak, 0.3, "a step must move the supply temperature")
	assert.Less(t, peak, 2.0, "within the contract's 2 K")
	assert.InDelta(t, 30, final, 0.01, "integral action removes the error")
	_, settle, _ := stepResponse(loop(), 600, 0.1)
	assert.Less(t, settle, 300.0, "inside ±0.1 K within 5 min")
	assert.Greater(t, settle, 10.0)
}

func TestLoopSlowValveOvershoots(t *testing.T) {
	l := loop()
	l.Valve.Stroke = 700
	peak, _, final := stepResponse(l, 1200, 1.5)
	t.Logf("with a 700 s valve: %.2f K", peak)
	assert.Greater(t, peak, 3.0)
	assert.InDelta(t, 30, final, 0.05, "a slow valve still settles")
}

// The return piping delays a heat step by its volume over the flow: the
// first moment of the CDU inlet's response, less the IT outlet's, is the
// mean transit time of the cells in series (less one step per cell).
func TestLoopReturnPipeDelaysByVolumeOverFlow(t *testing.T) {
	l := loop()
	l.Control = PI{Min: 0, Max: 1} // hold the valve
	l.Start(1000)
	l.Control.Preset(l.Valve.Position())
	r0, it0 := l.Tr, l.TIT
	var trs, its []float64
	for range int(1200 / dt) {
		l.Step(dt, 1500)
		trs, its = append(trs, l.Tr), append(its, l.TIT)
	}
	rEnd, itEnd := trs[len(trs)-1], its[len(its)-1]
	require.InDelta(t, rEnd, itEnd, 1e-6, "settled")
	area := 0.0
	for i := range trs {
		area += ((rEnd - trs[i]) - (itEnd - its[i])) * dt
	}
	want := 700/l.MassFlow() - float64(l.cells())*dt
	assert.InDelta(t, want, area/(rEnd-r0), 0.05, "transit %.2f s", l.TransitTime())
	_ = it0
}

func TestPumpTripCoastsDownInClosedForm(t *testing.T) {
	l := loop()
	l.Pumps.Control = PI{Min: 0, Max: 1} // hold the speed command
	l.Start(1872)
	l.Pumps.Control.Preset(l.Pumps.Pumps[0].Speed())
	q0 := l.Pumps.Flow()
	lost := l.Pumps.Pumps[0].Flow()
	l.Pumps.Pumps[0].Tripped = true
	for i := 1; i <= 500; i++ {
		l.Step(dt, 1872)
		tt := float64(i) * dt
		require.InDelta(t, q0-lost*(1-math.Exp(-tt/1.0)), l.Pumps.Flow(), 1e-9, "t=%.2f", tt)
	}
}

func TestPumpTripDipsThenRecovers(t *testing.T) {
	l := loop()
	l.Start(1872)
	l.CDUs[0].Pumps[0].Tripped = true
	minFlow, below, alarmAt := math.Inf(1), 0.0, 0.0
	for i := 1; i <= 6000; i++ {
		l.Step(dt, 1872)
		f := l.Pumps.Flow()
		minFlow = min(minFlow, f)
		if f < 3200 {
			below = float64(i) * dt
		}
		if alarmAt == 0 && l.RedundancyLost.Active() {
			alarmAt = float64(i) * dt
		}
	}
	t.Logf("pump trip: flow dips to %.0f L/min, below 3200 for %.1f s", minFlow, below)
	assert.Less(t, minFlow, 3250.0, "losing one of six pumps dips the flow")
	assert.Greater(t, minFlow, 2900.0, "the contract's degraded floor")
	assert.Less(t, below, 15.0, "back above 3200 L/min within the contract's 15 s")
	assert.InDelta(t, 3300, l.Pumps.Flow(), 3)
	assert.InDelta(t, 2.0, alarmAt, dt/2, "redundancy-lost after its 2 s confirmation")
	assert.Less(t, l.CDUs[0].Pumps[0].Speed(), 1e-6, "the tripped pump has stopped")
	assert.InDelta(t, 30, l.Ts, 0.2)
}

func TestLeakAlarmDelay(t *testing.T) {
	l := loop()
	l.Start(1000)
	l.CDUs[1].Leak = true
	run(l, 0.99, 1000)
	assert.False(t, l.Leak.Active())
	run(l, 0.01, 1000)
	assert.True(t, l.Leak.Active())
}

func TestHighTempAlarmWhenCoolingFails(t *testing.T) {
	l := loop()
	l.Start(1872)
	l.FacilityWater = 45 // the facility water is lost
	run(l, 120, 1872)
	assert.True(t, l.HighTemp.Active())
	assert.Greater(t, l.Ts, 33.0)
}

func TestValveAuthority(t *testing.T) {
	for _, beta := range []float64{0.1, 0.5, 1} {
		for _, x := range []float64{0, 0.1, 0.37, 0.8, 1} {
			f := InstalledFraction(x, beta)
			assert.InDelta(t, x, PositionFor(f, beta), 1e-12)
			if beta < 1 && x > 0 && x < 1 {
				assert.Greater(t, f, x, "a low-authority linear valve passes more than its opening")
			}
		}
		assert.InDelta(t, 1, InstalledFraction(1, beta), 1e-12)
	}
}

func TestValveStrokesAtItsRate(t *testing.T) {
	v := Valve{Stroke: 30}
	for range 1000 { // 10 s
		v.Step(dt, 1)
	}
	assert.InDelta(t, 1.0/3, v.Position(), 1e-9)
}

func TestPIAntiWindup(t *testing.T) {
	c := PI{Kp: 1, Ti: 1, Min: 0, Max: 1}
	for range 1000 {
		c.Step(dt, 5) // saturated high for 10 s
	}
	assert.Equal(t, 1.0, c.Output())
	// with a wound-up integral of 50 the output would stay at 1 for ~50 s
	c.Step(dt, -1.5)
	assert.Less(t, c.Output(), 1.0)
}
