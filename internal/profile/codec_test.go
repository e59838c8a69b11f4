package profile

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRegisterCodec(t *testing.T) {
	tests := []struct {
		name  string
		typ   DataType
		order WordOrder
		raw   float64
		regs  []uint16
	}{
		{"int16 negative", Int16, ABCD, -5, []uint16{0xFFFB}},
		{"int16 byte-swapped", Int16, BADC, 0x0102, []uint16{0x0201}},
		{"uint16 max", Uint16, ABCD, 65535, []uint16{0xFFFF}},
		{"uint32 ABCD", Uint32, ABCD, 0x11223344, []uint16{0x1122, 0x3344}},
		{"uint32 CDAB", Uint32, CDAB, 0x11223344, []uint16{0x3344, 0x1122}},
		{"uint32 BADC", Uint32, BADC, 0x11223344, []uint16{0x2211, 0x4433}},
		{"uint32 DCBA", Uint32, DCBA, 0x11223344, []uint16{0x4433, 0x2211}},
		{"int32 negative", Int32, ABCD, -2, []uint16{0xFFFF, 0xFFFE}},
		// the reference's example: 0x4148 0x0000 is 12.5 in ABCD
		{"float32 ABCD", Float32, ABCD, 12.5, []uint16{0x4148, 0x0000}},
		{"float32 CDAB", Float32, CDAB, 12.5, []uint16{0x0000, 0x4148}},
		{"float32 DCBA", Float32, DCBA, 12.5, []uint16{0x0000, 0x4841}},
		{"bool", Bool, ABCD, 1, []uint16{1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pt := &Point{Name: "p", Type: tt.typ, Order: tt.order}
			regs, err := pt.EncodeRegisters(tt.raw)
			require.NoError(t, err)
			assert.Equal(t, tt.regs, regs)
			raw, err := pt.DecodeRegisters(tt.regs)
			require.NoError(t, err)
			assert.Equal(t, tt.raw, raw)
		})
	}
}

func TestRegisterCodecErrors(t *testing.T) {
	tests := []struct {
		name string
		typ  DataType
		raw  float64
		want string
	}{
		{"int16 overflow", Int16, 40000, "out of range for int16"},
		{"uint16 negative", Uint16, -1, "out of range for uint16"},
		{"fraction in an integer", Uint32, 1.5, "not an integer"},
		{"NaN", Float32, math.NaN(), "cannot be encoded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := (&Point{Name: "p", Type: tt.typ}).EncodeRegisters(tt.raw)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
	_, err := (&Point{Name: "p", Type: Float32, Order: ABCD}).DecodeRegisters([]uint16{0x7FC0, 0})
	assert.ErrorContains(t, err, "not a number")
	_, err = (&Point{Name: "p", Type: Float32}).DecodeRegisters([]uint16{0x7FC0})
	assert.ErrorContains(t, err, "got 1 registers, want 2")
}

func shipped(t *testing.T) *Set {
	t.Helper()
	set, err := MustLoad("../../fixtures/profiles")
	require.NoError(t, err)
	return set
}

func TestValueAndRaw(t *testing.T) {
	set := shipped(t)
	tests := []struct {
		profile, point string
		raw            float64
		digits         int
		want           float64 // canonical
	}{
		{"generic-cdu-int16", "secondary-supply-temp", 325, 0, 32.5},    // int16 × 0.1 degC
		{"generic-cdu-int16", "secondary-supply-temp", -45, 0, -4.5},    // below zero
		{"generic-cdu-int16", "secondary-flow", 12345, 0, 1234.5},       // uint32 ÷ 10 L/min
		{"generic-cdu-float32", "secondary-flow", 60, 0, 1000},          // 60 m3/h = 1000 L/min
		{"generic-cdu-float32", "secondary-supply-pressure", 3, 0, 300}, // 3 bar = 300 kPa
		{"raritan-px", "inlet-voltage", 2301, 1, 230.1},                 // ÷ 10^digits
		{"raritan-px", "inlet-power", 12345, 0, 12.345},                 // W → kW
		{"raritan-px", "inlet-power-factor", 95, 2, 95},                 // 0.95 × 100 %
		{"apc-rpdu2", "device-power", 1234, 0, 12.34},                   // hundredths of kW
		{"servertech-sentry4", "phase1-current", 1234, 0, 12.34},        // hundredths of A
		{"ietf-ups", "input1-frequency", 500, 0, 50},                    // tenths of Hz
		{"ietf-ups", "minutes-remaining", 2, 0, 120},                    // min → s
	}
	for _, tt := range tests {
		t.Run(tt.profile+"/"+tt.point, func(t *testing.T) {
			pt := set.Get(tt.profile).Point(tt.point)
			require.NotNil(t, pt)
			v, err := pt.Value(tt.raw, tt.digits)
			require.NoError(t, err)
			assert.InDelta(t, tt.want, v, 1e-9)
			raw, err := pt.Raw(v, tt.digits)
			require.NoError(t, err)
			assert.InDelta(t, tt.raw, raw, 1e-6, "Raw is the inverse of Value")
		})
	}
}

func TestUnavailable(t *testing.T) {
	pt := shipped(t).Get("apc-rpdu2").Point("device-power")
	_, err := pt.Value(-1, 0)
	assert.ErrorIs(t, err, ErrUnavailable)
}

func TestAlarms(t *testing.T) {
	set := shipped(t)
	ups := set.Get("ietf-ups")
	onBattery := ups.Point("on-battery")
	for raw, want := range map[float64]float64{5: 1, 3: 0, 4: 0} {
		v, err := onBattery.Value(raw, 0)
		require.NoError(t, err)
		assert.Equal(t, want, v, "upsOutputSource %v", raw)
	}
	raw, err := onBattery.Raw(0, 0)
	require.NoError(t, err)
	assert.Equal(t, 3.0, raw, "an inactive alarm encodes as its normal value, a valid upsOutputSource")

	cdu := set.Get("generic-cdu-int16")
	leak, lost, word := cdu.Point("leak"), cdu.Point("redundancy-lost"), cdu.Point("alarm-word")
	regs := []uint16{0x0040} // another bit already set
	require.NoError(t, leak.Put(regs, 1, 0))
	require.NoError(t, lost.Put(regs, 1, 0))
	assert.Equal(t, []uint16{0x0043}, regs, "bits 0 and 1 set, bit 6 kept")
	require.NoError(t, leak.Put(regs, 0, 0))
	assert.Equal(t, []uint16{0x0041}, regs)
	v, err := lost.Get(regs, 0)
	require.NoError(t, err)
	assert.Equal(t, 1.0, v)
	v, err = word.Get(regs, 0)
	require.NoError(t, err)
	assert.Equal(t, 65.0, v)
}

func TestPlausible(t *testing.T) {
	set := shipped(t)
	pt := set.Get("generic-cdu-float32").Point("secondary-supply-temp")
	// written ABCD by the device but read as CDAB: a word-order mistake
	misread := func(v float64) (float64, error) {
		regs, err := (&Point{Type: Float32, Order: ABCD}).EncodeRegisters(v)
		require.NoError(t, err)
		return pt.DecodeRegisters(regs)
	}
	raw, err := misread(32.57) // 0x4202 0x47AE reads as 89220
	require.NoError(t, err)
	err = pt.Implausible(raw, 0)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "outside the plausible range [-10, 90] degC")
	assert.Contains(t, err.Error(), "word order")
	// 0x4202 0x0000 reads as 2.4e-41, inside the range: refused where the
	// registers are decoded, naming the order that reads them
	_, err = misread(32.5)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "in word order ABCD they read 32.5 degC: check the profile's word order")
	assert.Error(t, pt.Implausible(2.4e-41, 0), "a subnormal float32 is never a measurement")
	assert.NoError(t, pt.Implausible(32.5, 0))
	assert.NoError(t, pt.Implausible(0, 0))
}

func TestSNMPValues(t *testing.T) {
	tests := []struct {
		typ  DataType
		raw  float64
		want any
	}{
		{Integer, -1, int(-1)},
		{Gauge32, 4000000000, uint(4000000000)},
		{Counter32, 7, uint(7)},
		{Counter64, 1 << 40, uint64(1 << 40)},
		{OctetString, 230.5, "230.5"},
	}
	for _, tt := range tests {
		t.Run(string(tt.typ), func(t *testing.T) {
			pt := &Point{Name: "p", Type: tt.typ}
			v, err := pt.ToSNMP(tt.raw)
			require.NoError(t, err)
			assert.Equal(t, tt.want, v)
			raw, err := pt.FromSNMP(v)
			require.NoError(t, err)
			assert.Equal(t, tt.raw, raw)
		})
	}
	_, err := (&Point{Name: "p", Type: OctetString}).FromSNMP([]byte("n/a"))
	assert.ErrorContains(t, err, `OctetString "n/a" is not a number`)
	_, err = (&Point{Name: "p", Type: Gauge32}).ToSNMP(-3)
	assert.ErrorContains(t, err, "out of range for Gauge32")
}
