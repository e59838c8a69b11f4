package headroom_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/headroom"
)

// small is a block of two 100 kW feeds, a rack on two 50 kW PDUs and a
// loop of 1 MW with one CDU lost.
func small() *headroom.Model {
	a := &headroom.Feed{ID: "p/b/a", Block: "p/b", Module: "p", LimitW: 100e3, Derating: 0.8, NominalV: 415}
	b := &headroom.Feed{ID: "p/b/b", Block: "p/b", Module: "p", LimitW: 100e3, Derating: 1, NominalV: 415}
	return &headroom.Model{
		Feeds:  []*headroom.Feed{a, b},
		Blocks: []*headroom.Block{{ID: "p/b", Module: "p", RatingW: 150e3, Redundancy: "2N", Feeds: []*headroom.Feed{a, b}}},
		PDUs: []*headroom.PDU{
			{ID: "m/r1/a", Rack: "m/r1", Module: "m", Feed: "p/b/a", LimitW: 50e3, Siblings: []string{"m/r1/a", "m/r1/b"}},
			{ID: "m/r1/b", Rack: "m/r1", Module: "m", Feed: "p/b/b", LimitW: 50e3, Siblings: []string{"m/r1/a", "m/r1/b"}},
		},
		Loops: []*headroom.Loop{{ID: "l/loop", Module: "l", CapacityW: 1.5e6, CapacityLostW: 1e6, Redundancy: "N+1", DeltaTK: 10, Cp: 4.18,
			SupplyLo: 28, SupplyH: 32, BandFrom: "boundaries.x.steady.supply", Cools: []string{"m"}}},
		Meters: map[string]headroom.Meter{
			"a/power": {Channel: "a/power", Kind: headroom.Power, At: "p/b/a"},
			"b/power": {Channel: "b/power", Kind: headroom.Power, At: "p/b/b"},
			"a/volts": {Channel: "a/volts", Kind: headroom.Voltage, At: "p/b/a"},
			"r1/a":    {Channel: "r1/a", Kind: headroom.Power, At: "m/r1/a"},
			"r1/b":    {Channel: "r1/b", Kind: headroom.Power, At: "m/r1/b"},
			"supply":  {Channel: "supply", Kind: headroom.SupplyTemp, At: "l/loop"},
			"return":  {Channel: "return", Kind: headroom.ReturnTemp, At: "l/loop"},
			"flow":    {Channel: "flow", Kind: headroom.Flow, At: "l/loop"},
			"heat":    {Channel: "heat", Kind: headroom.Power, At: "m"},
		},
	}
}

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func fresh(v float64) headroom.Reading { return headroom.Reading{Value: v, At: t0} }

func TestComputeFeedsAndBlocks(t *testing.T) {
	r := headroom.Compute(small(), map[string]headroom.Reading{"a/power": fresh(40), "b/power": fresh(50), "a/volts": fresh(410)}, t0.Add(time.Second), 5*time.Second)
	a, b := r.Feeds[0], r.Feeds[1]
	assert.Equal(t, headroom.Value{V: 40e3, OK: true}, a.Power)
	assert.Equal(t, headroom.Value{V: 60e3, OK: true}, a.Headroom)
	assert.InDelta(t, 0.4, a.Utilization.V, 1e-12)
	assert.Equal(t, headroom.Value{V: 410, OK: true}, a.Volts)
	assert.False(t, b.Volts.OK, "no voltage channel on b")
	// with b lost, a carries 90 kW of its 100 kW; with a lost, b carries 90
	require.Equal(t, []headroom.Lost{{Lost: "p/b/b", Headroom: headroom.Value{V: 10e3, OK: true}}}, a.LostHeadroom)
	require.Equal(t, []headroom.Lost{{Lost: "p/b/a", Headroom: headroom.Value{V: 10e3, OK: true}}}, b.LostHeadroom)
	blk := r.Blocks[0]
	assert.Equal(t, headroom.Value{V: 90e3, OK: true}, blk.Power)
	assert.Equal(t, headroom.Value{V: 60e3, OK: true}, blk.Headroom)
	assert.Equal(t, headroom.Value{V: 10e3, OK: true}, blk.LostHeadroom)
}

func TestComputeStaleAndImplausible(t *testing.T) {
	for name, tc := range map[string]struct {
		b     headroom.Reading
		stale bool
	}{
		"fresh":          {fresh(50), false},
		"old":            {headroom.Reading{Value: 50, At: t0.Add(-10 * time.Second)}, true},
		"implausible":    {fresh(-500), true},
		"not a number":   {fresh(math.NaN()), true},
		"at the limit":   {headroom.Reading{Value: 50, At: t0.Add(-4 * time.Second)}, false},
		"never received": {headroom.Reading{}, true},
	} {
		t.Run(name, func(t *testing.T) {
			readings := map[string]headroom.Reading{"a/power": fresh(40), "b/power": tc.b}
			if tc.b.At.IsZero() {
				delete(readings, "b/power")
			}
			r := headroom.Compute(small(), readings, t0.Add(time.Second), 5*time.Second)
			assert.Equal(t, tc.stale, r.Stale["b/power"])
			assert.False(t, r.Stale["a/power"])
			assert.Equal(t, !tc.stale, r.Feeds[1].Power.OK, "b's power is exported only when fresh")
			assert.Equal(t, !tc.stale, r.Blocks[0].Power.OK, "the block's sum needs every feed")
			assert.Equal(t, !tc.stale, r.Blocks[0].LostHeadroom.OK, "N-1 needs every feed")
			assert.Empty(t, r.Feeds[0].LostHeadroom[len(r.Feeds[0].LostHeadroom):])
			assert.True(t, r.Feeds[0].Headroom.OK, "a's own headroom stands")
		})
	}
}

func TestComputePDUs(t *testing.T) {
	r := headroom.Compute(small(), map[string]headroom.Reading{"r1/a": fresh(20), "r1/b": fresh(25)}, t0, time.Second)
	require.Len(t, r.PDUs, 2)
	assert.Equal(t, headroom.Value{V: 30e3, OK: true}, r.PDUs[0].Headroom)
	// the rack's 45 kW on one PDU of 50 kW
	assert.Equal(t, headroom.Value{V: 5e3, OK: true}, r.PDUs[0].LostHeadroom)
	assert.Equal(t, headroom.Value{V: 5e3, OK: true}, r.PDUs[1].LostHeadroom)
}

func TestComputeLoop(t *testing.T) {
	// 600 L/min = 10 L/s, ΔT 10 K, cp 4.18: 418 kW
	r := headroom.Compute(small(), map[string]headroom.Reading{"supply": fresh(30), "return": fresh(40), "flow": fresh(600), "heat": fresh(999)}, t0, time.Second)
	l := r.Loops[0]
	assert.InDelta(t, 418e3, l.Heat.V, 1e-6, "Q = ṁ·cp·ΔT wins over the module's heat channel")
	assert.InDelta(t, 1e6-418e3, l.Headroom.V, 1e-6)
	assert.InDelta(t, 10, l.Flow.V, 1e-12)
	assert.InDelta(t, 10, l.FlowNeeded.V, 1e-9, "the heat the flow carries at the design ΔT needs that flow")
	assert.InDelta(t, 1, l.FlowRatio.V, 1e-9)

	// no return temperature: the module's heat channel
	r = headroom.Compute(small(), map[string]headroom.Reading{"supply": fresh(30), "flow": fresh(300), "heat": fresh(1200)}, t0, time.Second)
	l = r.Loops[0]
	assert.Equal(t, headroom.Value{V: 1.2e6, OK: true}, l.Heat)
	assert.InDelta(t, -0.2e6, l.Headroom.V, 1e-6, "1.2 MW on 1 MW with one CDU lost")
	assert.InDelta(t, 5/(1200/(4.18*10)), l.FlowRatio.V, 1e-9, "5 L/s of the 28.7 L/s 1.2 MW needs at 10 K")
	assert.False(t, l.Return.OK)

	// stale flow: no heat, no headroom, the temperatures stand
	r = headroom.Compute(small(), map[string]headroom.Reading{"supply": fresh(30), "return": fresh(40), "flow": {Value: 600, At: t0.Add(-time.Minute)}}, t0, time.Second)
	l = r.Loops[0]
	assert.False(t, l.Heat.OK)
	assert.False(t, l.Headroom.OK)
	assert.True(t, l.Supply.OK)
}
