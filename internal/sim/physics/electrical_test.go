package physics

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const dt = 0.01

func TestRegulatorStepIsFirstOrder(t *testing.T) {
	r := Regulator{Nominal: 415, Impedance: 0.2, StaticDroop: 0.01, Tau: 0.8}
	r.Step(dt, 0.2)
	for i := 1; i <= 300; i++ {
		r.Step(dt, 0.5) // a 0.3 pu step at the start of step 1
		tt := float64(i) * dt
		want := 415 * (1 - 0.01*0.5 - 0.2*0.3*math.Exp(-tt/0.8))
		require.InDelta(t, want, r.Value(), 1e-9, "t=%.2f", tt)
	}
}

func TestRecoveryTimeMatchesSimulation(t *testing.T) {
	for _, tc := range []struct{ z, tau, dl, band float64 }{
		{0.2, 0.8, 0.29, 0.03}, {0.2, 3.6, 0.29, 0.03}, {0.013, 1.5, 0.58, 0.005}, {0.1, 1, 0.1, 0.03},
	} {
		r := Regulator{Nominal: 1, Impedance: tc.z, Tau: tc.tau}
		r.Step(dt, 0)
		out := 0.0
		for i := 1; i <= 2000; i++ {
			r.Step(dt, tc.dl)
			if math.Abs(r.Value()-1) > tc.band {
				out = float64(i) * dt
			}
		}
		// the last sample outside the band is within one step of the closed form
		want := RecoveryTime(tc.z, tc.tau, tc.dl, tc.band)
		assert.InDelta(t, want, out, dt, "%+v", tc)
	}
}

func breaker() Breaker {
	return Breaker{Rating: 4000, Pickup: 1.13, Tau: 120, Instantaneous: 10, Clearing: 0.02}
}

func TestBreakerTripsOnItsCurve(t *testing.T) {
	for _, m := range []float64{1.2, 1.5, 2, 3, 6, 9.9, 10, 15} {
		b := breaker()
		want := b.TripTime(m)
		elapsed := 0.0
		for !b.Step(dt, m*b.Rating) {
			elapsed += dt
			require.Less(t, elapsed, 10*b.Tau, "m=%v never tripped", m)
		}
		elapsed += dt
		assert.InDelta(t, want, elapsed, dt, "m=%v", m)
		if m >= 10 {
			assert.Equal(t, "instantaneous", b.Tripped())
		} else {
			assert.Equal(t, "thermal", b.Tripped())
		}
	}
}

func TestBreakerCurveClosedForm(t *testing.T) {
	b := breaker()
	// IEC 60255-8: t = τ ln(m²/(m²−k²)); at m=2, k=1.13: 120·ln(4/2.7231)
	assert.InDelta(t, 120*math.Log(4/(4-1.13*1.13)), b.TripTime(2), 1e-12)
	assert.True(t, math.IsInf(b.TripTime(1.1), 1), "below pickup a breaker never trips")
	assert.Equal(t, 0.02, b.TripTime(12))
}

func TestBreakerCarriesRatedCurrentForever(t *testing.T) {
	b := breaker()
	for i := 0; i < int(20*b.Tau/dt); i++ {
		require.False(t, b.Step(dt, b.Rating))
	}
}

func TestBreakerManualOpenAndClose(t *testing.T) {
	b := breaker()
	b.Open()
	assert.True(t, b.Step(dt, 100))
	assert.Equal(t, "manual", b.Tripped())
	b.Close()
	assert.False(t, b.Step(dt, 100))
	assert.Equal(t, "", b.Tripped())
}

func TestUPSRidesThroughForItsEnergy(t *testing.T) {
	for _, tc := range []struct{ load, want float64 }{
		{2500, 300}, {1250, 600}, {1040, 300 * 2500 / 1040.0},
	} {
		u := UPS{Rating: 2500, RideThrough: 300, Recharge: 0.1}
		require.True(t, u.Step(dt, tc.load, true))
		elapsed := 0.0
		for u.Step(dt, tc.load, false) {
			elapsed += dt
			require.Less(t, elapsed, 2*tc.want)
		}
		elapsed += dt
		assert.InDelta(t, tc.want, elapsed, dt, "load %v kW", tc.load)
		assert.Zero(t, u.Charge())
	}
}

func TestUPSRecharges(t *testing.T) {
	u := UPS{Rating: 100, RideThrough: 10, Recharge: 0.1}
	u.Step(1, 100, false) // 10 % used
	assert.InDelta(t, 0.9, u.Charge(), 1e-12)
	u.Step(1, 0, true) // 10 kW for 1 s = 1 % of 1000 kJ
	assert.InDelta(t, 0.91, u.Charge(), 1e-12)
}

func block() *Block {
	mk := func(id string) *Feed {
		return &Feed{ID: id, Voltage: Regulator{Nominal: 415, Impedance: 0.2, Tau: 0.8},
			UPS: &UPS{Rating: 2500, RideThrough: 300, Recharge: 0.1}, Breaker: breaker()}
	}
	return &Block{ID: "p1/block", Rating: 2500, PowerFactor: 0.95,
		Frequency: Regulator{Nominal: 50, Impedance: 0.013, Tau: 1.5},
		Feeds:     []*Feed{mk("p1/block/a"), mk("p1/block/b")},
		FeedLost:  Delay{On: 0.3, Off: 1}, OnBattery: Delay{On: 0.5, Off: 1}}
}

func TestBlockSharesLoadOverFeeds(t *testing.T) {
	b := block()
	for range 10 {
		require.Equal(t, 2080.0, b.Step(dt, 2080))
	}
	a := b.Feed("a")
	assert.Equal(t, 1040.0, a.LoadKW())
	assert.InDelta(t, 415, a.Volts(), 1e-9)
	// P = √3·V·I·pf
	assert.InDelta(t, 1040e3/(math.Sqrt(3)*415*0.95), a.Amps(), 1e-9)
	assert.InDelta(t, 50, b.Hz(), 1e-12)
}

func TestBlockFeedLossTransfersWithoutInterruption(t *testing.T) {
	b := block()
	for range 100 {
		b.Step(dt, 2080)
	}
	b.Feed("a").OutputLost = true
	alarmAt := -1
	for i := 1; i <= 300; i++ {
		require.Equal(t, 2080.0, b.Step(dt, 2080), "the racks lost power at step %d", i)
		if i == 1 {
			// feed B took A's 1040 kW at once: a droop of Z·ΔL
			assert.InDelta(t, 415*(1-0.2*1040/2500*math.Exp(-dt/0.8)), b.Feed("b").Volts(), 1e-9)
			assert.Zero(t, b.Feed("a").Volts())
		}
		if alarmAt < 0 && b.FeedLost.Active() {
			alarmAt = i
		}
	}
	assert.Equal(t, 30, alarmAt, "feed-lost alarm after its 0.3 s confirmation")
	assert.Equal(t, 2080.0, b.Feed("b").LoadKW())
}

func TestBlockUPSRidesThroughThenTransfers(t *testing.T) {
	b := block()
	b.Step(dt, 2080)
	b.Feed("a").SourceLost = true
	steps := 0
	for b.Feed("a").Live() {
		require.Equal(t, 2080.0, b.Step(dt, 2080))
		require.True(t, b.Feed("a").Live() == b.Feed("a").OnBattery())
		steps++
		if steps == 50 {
			assert.True(t, b.OnBattery.Active(), "on-battery alarm after 0.5 s")
		}
		require.Less(t, steps, 100000)
	}
	// 2.5 MW·300 s of battery at 1040 kW
	assert.InDelta(t, 2500*300/1040.0, float64(steps)*dt, 2*dt)
	require.Equal(t, 2080.0, b.Step(dt, 2080), "feed B carries the block once the battery is empty")
	assert.Equal(t, 2080.0, b.Feed("b").LoadKW())
}

func TestBlockBothFeedsLostDropsTheLoad(t *testing.T) {
	b := block()
	b.Step(dt, 1000)
	b.Feed("a").Breaker.Open()
	b.Feed("b").OutputLost = true
	assert.Zero(t, b.Step(dt, 1000))
	assert.Zero(t, b.Hz())
}

func TestBlockOverloadTripsBreakerThenOtherFeed(t *testing.T) {
	b := block()
	b.Feed("b").OutputLost = true
	// 3.2 MW on one 4000 A feed: m = 3.2e6/(√3·415·0.95·4000) ≈ 1.17
	elapsed := 0.0
	for b.Step(dt, 3200) > 0 {
		elapsed += dt
		require.Less(t, elapsed, 3600.0)
	}
	assert.Equal(t, "thermal", b.Feed("a").Breaker.Tripped())
	assert.Greater(t, elapsed, 60.0)
}

func TestDelay(t *testing.T) {
	d := Delay{On: 0.05, Off: 0.02}
	var got []bool
	for _, c := range []bool{true, true, true, true, true, false, false, false} {
		got = append(got, d.Step(dt, c))
	}
	assert.Equal(t, []bool{false, false, false, false, true, true, false, false}, got)
	d = Delay{On: 0, Disabled: true}
	assert.False(t, d.Step(dt, true))
}

// TestUPSTransferSettings follows a UPS through a dip of its input: it
// rides the dip from its battery for the share the dip takes away, and
// with transfer settings takes the load off its input once they are met,
// until the input has been back for BackAfter.
func TestUPSTransferSettings(t *testing.T) {
	example := &Transfer{PU: 0.7, After: 3, BackAfter: 1, HzMin: 47, HzMax: 52}
	for _, tc := range []struct {
		name     string
		transfer *Transfer
		in       Input
		dip      float64 // s
		// the step transferred (-1: never) and back (from the end of the dip)
		transferAt, backAfter int
	}{
		{"no settings ride a deep dip", nil, Input{PU: 0.2, Hz: 50}, 10, -1, 0},
		{"0.5 pu for 300 ms is inside the curve", example, Input{PU: 0.5, Hz: 50}, 0.3, -1, 0},
		{"0.5 pu for 4 s transfers after 3 s", example, Input{PU: 0.5, Hz: 50}, 4, 301, 100},
		{"0.75 pu stays on the grid", example, Input{PU: 0.75, Hz: 50}, 10, -1, 0},
		{"53 Hz transfers", example, Input{PU: 1, Hz: 53}, 4, 301, 100},
		{"a lost input transfers", example, Input{Lost: true}, 4, 301, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := UPS{Rating: 2500, RideThrough: 300, Recharge: 0.1, Transfer: tc.transfer}
			require.True(t, u.StepInput(dt, 1000, Input{PU: 1, Hz: 50}))
			assert.Equal(t, 1000.0, u.InputKW())
			steps := int(tc.dip/dt + 0.5)
			at := -1
			for i := 1; i <= steps; i++ {
				require.True(t, u.StepInput(dt, 1000, tc.in), "the output is never interrupted")
				if u.Transferred() && at < 0 {
					at = i
				}
				switch {
				case u.Transferred() || tc.in.Lost:
					require.Zero(t, u.InputKW(), "step %d: nothing from the input", i)
				default:
					require.InDelta(t, 1000*tc.in.PU, u.InputKW(), 1e-9, "step %d: the rectifier draws the dip's share", i)
				}
			}
			assert.Equal(t, tc.transferAt, at)
			assert.Less(t, u.Charge(), 1.0, "the battery carried a share")
			back := 0
			for u.Transferred() {
				require.True(t, u.StepInput(dt, 1000, Input{PU: 1, Hz: 50}))
				back++
				if u.Transferred() {
					require.Zero(t, u.InputKW())
				}
				require.Less(t, back, 1000)
			}
			assert.Equal(t, tc.backAfter, back, "steps until the UPS gives the load back to its input")
			u.StepInput(dt, 1000, Input{PU: 1, Hz: 50})
			assert.InDelta(t, 1000+250, u.InputKW(), 1e-9, "back on the input, recharging at 10 % of the rating")
		})
	}
}
