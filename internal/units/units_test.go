package units

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseConverts(t *testing.T) {
	tests := []struct {
		in    string
		dim   Dimension
		canon float64
	}{
		{"130 kW", Power, 130},
		{"130000 W", Power, 130},
		{"2.08 MW", Power, 2080},
		{"415 V", Voltage, 415},
		{"0.415 kV", Voltage, 415},
		{"63 A", Current, 63},
		{"50 Hz", Frequency, 50},
		{"32 degC", Temperature, 32},
		{"89.6 degF", Temperature, 32},
		{"10 K", TempDiff, 10},
		{"1.5 L/s", Flow, 90},
		{"6 m3/h", Flow, 100},
		{"1.5 bar", Pressure, 150},
		{"1500 Pa", Pressure, 1.5},
		{"70 ms", Time, 0.07},
		{"5 min", Time, 300},
		{"1 h", Time, 3600},
		{"-5 %", Ratio, -5},
		{"20 MW/s", PowerRate, 20000},
		{"1.5 L/min/kW", SpecificFlow, 1.5},
		{"5 K/min", TempRate, 5},
		{"1e3 W", Power, 1},
		{"415V", Voltage, 415},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			q, err := Parse(tt.in)
			require.NoError(t, err)
			require.Equal(t, tt.dim, q.Dim)
			require.InDelta(t, tt.canon, q.Canon, 1e-9)
		})
	}
}

func TestParseRejects(t *testing.T) {
	_, err := Parse("130")
	var missing *MissingUnitError
	require.True(t, errors.As(err, &missing), "a number without a unit is a MissingUnitError: %v", err)

	_, err = Parse("1800 lpm")
	var unknown *UnknownUnitError
	require.True(t, errors.As(err, &unknown))
	require.Contains(t, err.Error(), `did you mean "L/min"?`)

	_, err = Parse("kW")
	require.ErrorContains(t, err, "does not start with a number")

	_, err = Parse("1.2.3 kW")
	require.ErrorContains(t, err, "is not a number")
}

func TestEveryDimensionHasCanonicalUnitInTable(t *testing.T) {
	for _, d := range Dimensions() {
		c := Canonical(d)
		q, err := Parse("1 " + c)
		require.NoError(t, err, d)
		require.Equal(t, d, q.Dim)
		require.InDelta(t, 1, q.Canon, 1e-12, "canonical unit %s of %s must have scale 1", c, d)
	}
}

func TestRoundTrip(t *testing.T) {
	v, err := In(Of(2080, "MW").Canon, "MW")
	require.NoError(t, err)
	require.InDelta(t, 2.08, v, 1e-12)
	f, _ := In(32, "degF")
	require.InDelta(t, 89.6, f, 1e-9)
}

func TestPhysics(t *testing.T) {
	// 415 V, 63 A, PF 1: about 45 kW (reference/standards.md)
	require.InDelta(t, 45.3, ThreePhaseKW(415, 63, 1), 0.1)
	// 1 MW at 10 K in water: 1000/(4.18*10) kg/s = 1435 L/min
	require.InDelta(t, 1435.4, FlowFor(1000, 10, CpWater), 0.1)
}

func TestFormat(t *testing.T) {
	require.Equal(t, "415 V", Format(415, "V"))
	require.Equal(t, "2.08 MW", Format(2.08, "MW"))
	require.Equal(t, "5 %", Format(5, "%"))
	require.Equal(t, "0.3333 s", Format(1.0/3, "s"))
}
