package profile

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// ErrUnavailable is returned by Value for a raw value that the profile
// declares as "no measurement" (APC's -1).
var ErrUnavailable = errors.New("the device reports no measurement")

// wireIndex says where each big-endian byte of a 32-bit value (A, B,
// C, D) sits on the wire in the point's word order.
func (pt *Point) wireIndex() [4]int {
	order := string(pt.Order)
	if order == "" {
		order = string(ABCD)
	}
	var idx [4]int // idx[i]: the wire position of value byte i (A=0)
	for i, c := range "ABCD" {
		idx[i] = strings.IndexRune(order, c)
	}
	return idx
}

// swap16 reports whether a 16-bit value has its two bytes swapped.
func (pt *Point) swap16() bool { return pt.Order == BADC || pt.Order == DCBA }

// DecodeRegisters turns the point's registers (Registers() of them, or
// one 0/1 for a bit) into its raw number.
func (pt *Point) DecodeRegisters(regs []uint16) (float64, error) {
	if len(regs) != pt.Registers() {
		return 0, fmt.Errorf("%s: got %d registers, want %d", pt.Name, len(regs), pt.Registers())
	}
	switch pt.Type {
	case Bool:
		if regs[0] != 0 {
			return 1, nil
		}
		return 0, nil
	case Int16:
		return float64(int16(pt.word(regs[0]))), nil
	case Uint16:
		return float64(pt.word(regs[0])), nil
	}
	u := pt.dword(regs)
	switch pt.Type {
	case Int32:
		return float64(int32(u)), nil
	case Uint32:
		return float64(u), nil
	case Float32:
		f := float64(math.Float32frombits(u))
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return 0, fmt.Errorf("%s: registers %04x %04x are not a number as float32 %s", pt.Name, regs[0], regs[1], pt.Order)
		}
		if err := pt.wordOrderSuspect(regs, f); err != nil {
			return 0, err
		}
		return f, nil
	}
	return 0, fmt.Errorf("%s: %s is not a Modbus type", pt.Name, pt.Type)
}

func (pt *Point) word(r uint16) uint16 {
	if pt.swap16() {
		return r<<8 | r>>8
	}
	return r
}

func (pt *Point) dword(regs []uint16) uint32 {
	wire := [4]byte{byte(regs[0] >> 8), byte(regs[0]), byte(regs[1] >> 8), byte(regs[1])}
	idx := pt.wireIndex()
	var u uint32
	for i := 0; i < 4; i++ {
		u = u<<8 | uint32(wire[idx[i]])
	}
	return u
}

// EncodeRegisters turns a raw number into the point's registers: the
// inverse of DecodeRegisters. Integer types need an integer in range.
func (pt *Point) EncodeRegisters(raw float64) ([]uint16, error) {
	if err := pt.checkRaw(raw); err != nil {
		return nil, err
	}
	switch pt.Type {
	case Bool:
		if raw != 0 {
			return []uint16{1}, nil
		}
		return []uint16{0}, nil
	case Int16:
		return []uint16{pt.word(uint16(int16(raw)))}, nil
	case Uint16:
		return []uint16{pt.word(uint16(raw))}, nil
	case Int32:
		return pt.putDword(uint32(int32(raw))), nil
	case Uint32:
		return pt.putDword(uint32(raw)), nil
	case Float32:
		return pt.putDword(math.Float32bits(float32(raw))), nil
	}
	return nil, fmt.Errorf("%s: %s is not a Modbus type", pt.Name, pt.Type)
}

func (pt *Point) putDword(u uint32) []uint16 {
	val := [4]byte{byte(u >> 24), byte(u >> 16), byte(u >> 8), byte(u)}
	idx := pt.wireIndex()
	var wire [4]byte
	for i := 0; i < 4; i++ {
		wire[idx[i]] = val[i]
	}
	return []uint16{uint16(wire[0])<<8 | uint16(wire[1]), uint16(wire[2])<<8 | uint16(wire[3])}
}

// typeRange is the raw range of integer types.
var typeRange = map[DataType][2]float64{
	Int16: {math.MinInt16, math.MaxInt16}, Uint16: {0, math.MaxUint16},
	Int32: {math.MinInt32, math.MaxInt32}, Uint32: {0, math.MaxUint32},
	Integer: {math.MinInt32, math.MaxInt32}, Gauge32: {0, math.MaxUint32},
	Counter32: {0, math.MaxUint32}, Counter64: {0, math.MaxUint64}, Bool: {0, 1},
}

func (pt *Point) checkRaw(raw float64) error {
	if math.IsNaN(raw) || math.IsInf(raw, 0) {
		return fmt.Errorf("%s: %v cannot be encoded", pt.Name, raw)
	}
	r, ok := typeRange[pt.Type]
	if !ok {
		if pt.Type == Float32 && math.Abs(raw) > math.MaxFloat32 {
			return fmt.Errorf("%s: %g is out of range for float32", pt.Name, raw)
		}
		return nil
	}
	if raw != math.Trunc(raw) {
		return fmt.Errorf("%s: %g is not an integer, as %s needs", pt.Name, raw, pt.Type)
	}
	if raw < r[0] || raw > r[1] {
		return fmt.Errorf("%s: %g is out of range for %s [%g, %g]", pt.Name, raw, pt.Type, r[0], r[1])
	}
	return nil
}

// FromSNMP turns an SNMP variable's Go value (as gosnmp decodes it:
// int, uint, uint32, uint64, *big.Int is not used; string or []byte for
// OctetString) into the point's raw number. An OctetString must hold a
// decimal number.
func (pt *Point) FromSNMP(v any) (float64, error) {
	switch x := v.(type) {
	case int:
		return float64(x), nil
	case int32:
		return float64(x), nil
	case int64:
		return float64(x), nil
	case uint:
		return float64(x), nil
	case uint32:
		return float64(x), nil
	case uint64:
		return float64(x), nil
	case []byte:
		return pt.parseOctets(string(x))
	case string:
		return pt.parseOctets(x)
	}
	return 0, fmt.Errorf("%s: value %v of Go type %T is not a number", pt.Name, v, v)
}

func (pt *Point) parseOctets(s string) (float64, error) {
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%s: OctetString %q is not a number", pt.Name, s)
	}
	return f, nil
}

// ToSNMP turns a raw number into the Go value of the point's SNMP type:
// int for Integer, uint for Gauge32 and Counter32, uint64 for
// Counter64, string for OctetString: the types gosnmp decodes into and
// GoSNMPServer's OnGet must return.
func (pt *Point) ToSNMP(raw float64) (any, error) {
	if err := pt.checkRaw(raw); err != nil {
		return nil, err
	}
	switch pt.Type {
	case Integer:
		return int(raw), nil
	case Gauge32, Counter32:
		return uint(raw), nil
	case Counter64:
		return uint64(raw), nil
	case OctetString:
		return strconv.FormatFloat(raw, 'f', -1, 64), nil
	}
	return nil, fmt.Errorf("%s: %s is not an SNMP type", pt.Name, pt.Type)
}

// Active reports whether an alarm point's raw value means active.
func (pt *Point) Active(raw float64) bool {
	a := pt.AlarmSpec
	switch {
	case a == nil:
		return raw != 0
	case a.Bit >= 0:
		return uint64(int64(raw))>>a.Bit&1 == 1
	case len(a.Active) > 0:
		return slices.Contains(a.Active, int64(raw))
	}
	return raw != 0
}

// Value turns a raw number into the point's value in canonical units:
// raw ÷ 10^digits × Scale + Offset in Unit, converted to the canonical
// unit. Alarms give 1 (active) or 0. digits is 0 unless the point has a
// Digits point.
func (pt *Point) Value(raw float64, digits int) (float64, error) {
	if slices.Contains(pt.Unavailable, int64(raw)) && raw == math.Trunc(raw) {
		return 0, fmt.Errorf("%s: raw value %g: %w", pt.Name, raw, ErrUnavailable)
	}
	if pt.Dim == Alarm {
		if pt.Active(raw) {
			return 1, nil
		}
		return 0, nil
	}
	v := pt.unitValue(raw, digits)
	return v*pt.unitScale + pt.unitOffset, nil
}

// UnitValue is the value in the point's own Unit (not canonical): what
// Plausible bounds.
func (pt *Point) unitValue(raw float64, digits int) float64 {
	return raw/math.Pow10(digits)*pt.Scale + pt.Offset
}

// smallestNormalFloat32 is 2^-126: a float32 below it (and not 0) is
// subnormal, which is what a word-swapped round number such as 32.5
// (0x4202 0x0000 read as 0x0000 0x4202) decodes to.
const smallestNormalFloat32 = 0x1p-126

// Implausible returns an error when a raw value decodes outside the
// point's plausible range, naming the range in the point's unit (not the
// point: callers say which point they read).
func (pt *Point) Implausible(raw float64, digits int) error {
	if pt.Dim == Alarm {
		return nil
	}
	if pt.Type == Float32 && raw != 0 && math.Abs(raw) < smallestNormalFloat32 {
		return fmt.Errorf("%g is a subnormal float32, never a measurement: check the word order", raw)
	}
	v := pt.unitValue(raw, digits)
	if pt.Plausible.Contains(v) {
		return nil
	}
	return fmt.Errorf("%s is outside the plausible range %s: check the word order, scale and data type",
		fmtValue(v, pt.Unit), pt.Plausible.format(pt.Unit))
}

func (r Range) format(unit string) string {
	lo, hi := "-inf", "+inf"
	if r.HasMin {
		lo = strconv.FormatFloat(r.Min, 'g', -1, 64)
	}
	if r.HasMax {
		hi = strconv.FormatFloat(r.Max, 'g', -1, 64)
	}
	return fmt.Sprintf("[%s, %s] %s", lo, hi, unit)
}

func fmtValue(v float64, unit string) string {
	return strings.TrimSpace(strconv.FormatFloat(v, 'g', 6, 64) + " " + unit)
}

// InUnit converts a canonical value into the point's own Unit.
func (pt *Point) InUnit(canon float64) float64 {
	if pt.Dim == Alarm || pt.Dim == Raw {
		return canon
	}
	return (canon - pt.unitOffset) / pt.unitScale
}

// FromUnit converts a value in the point's own Unit into canonical units.
func (pt *Point) FromUnit(v float64) float64 {
	if pt.Dim == Alarm || pt.Dim == Raw {
		return v
	}
	return v*pt.unitScale + pt.unitOffset
}

// Default is a plausible canonical value for the point: 0 moved into its
// plausible range. Simulators start from it.
func (pt *Point) Default() float64 {
	v := 0.0
	if pt.Plausible.HasMin && v < pt.Plausible.Min {
		v = pt.Plausible.Min
	}
	if pt.Plausible.HasMax && v > pt.Plausible.Max {
		v = pt.Plausible.Max
	}
	return pt.FromUnit(v)
}

// CheckValue returns an error when a canonical value lies outside the
// point's plausible range: a value no device should be sent.
func (pt *Point) CheckValue(canon float64) error {
	if pt.Dim == Alarm || math.IsNaN(canon) {
		return nil
	}
	if v := pt.InUnit(canon); !pt.Plausible.Contains(v) {
		return fmt.Errorf("%s is outside the plausible range %s", fmtValue(v, pt.Unit), pt.Plausible.format(pt.Unit))
	}
	return nil
}

// Raw turns a value in canonical units into the point's raw number: the
// inverse of Value, rounded for integer types. For an alarm, a non-zero
// value gives the active raw value (the bit alone for a bit alarm; Put
// keeps a register's other bits) and zero the normal one.
func (pt *Point) Raw(canon float64, digits int) (float64, error) {
	if pt.Dim == Alarm {
		return pt.alarmRaw(canon != 0), nil
	}
	v := pt.InUnit(canon)
	raw := (v - pt.Offset) / pt.Scale * math.Pow10(digits)
	if pt.Type != Float32 && pt.Type != OctetString {
		raw = math.Round(raw)
	}
	if err := pt.checkRaw(raw); err != nil {
		return 0, err
	}
	return raw, nil
}

func (pt *Point) alarmRaw(active bool) float64 {
	a := pt.AlarmSpec
	switch {
	case !active && a != nil:
		return float64(a.Normal)
	case !active:
		return 0
	case a != nil && a.Bit >= 0:
		return float64(uint64(1) << a.Bit)
	case a != nil && len(a.Active) > 0:
		return float64(a.Active[0])
	}
	return 1
}

// Put encodes a canonical value into the point's registers regs (the
// Registers() registers starting at Address). A bit alarm changes only
// its bit.
func (pt *Point) Put(regs []uint16, canon float64, digits int) error {
	if len(regs) != pt.Registers() {
		return fmt.Errorf("%s: got %d registers, want %d", pt.Name, len(regs), pt.Registers())
	}
	if pt.Dim == Alarm && pt.AlarmSpec != nil && pt.AlarmSpec.Bit >= 0 && pt.Type != Bool {
		pt.putBit(regs, canon != 0)
		return nil
	}
	raw, err := pt.Raw(canon, digits)
	if err != nil {
		return err
	}
	enc, err := pt.EncodeRegisters(raw)
	if err != nil {
		return err
	}
	copy(regs, enc)
	return nil
}

// putBit sets or clears the alarm's bit in the registers' unsigned bits.
func (pt *Point) putBit(regs []uint16, on bool) {
	bit := uint32(1) << pt.AlarmSpec.Bit
	set := func(u uint32) uint32 {
		if on {
			return u | bit
		}
		return u &^ bit
	}
	if len(regs) == 1 {
		regs[0] = pt.word(uint16(set(uint32(pt.word(regs[0])))))
		return
	}
	copy(regs, pt.putDword(set(pt.dword(regs))))
}

// Get decodes the point's registers into a canonical value.
func (pt *Point) Get(regs []uint16, digits int) (float64, error) {
	raw, err := pt.DecodeRegisters(regs)
	if err != nil {
		return 0, err
	}
	return pt.Value(raw, digits)
}

// wordOrderSuspect catches a float32 read in the wrong word order that
// lands near zero, inside the plausible range and so otherwise good
// (26.4 degC decoded as 4.17e-08 degC): a value below a millionth of the
// plausible span is below any sensor's resolution, and when another
// word order reads the same registers as a plausible, larger value, the
// profile's order is the suspect. Without a plausible range nothing can
// be told.
func (pt *Point) wordOrderSuspect(regs []uint16, f float64) error {
	r := pt.Plausible
	if !r.HasMin || !r.HasMax || r.Max <= r.Min || f == 0 {
		return nil
	}
	tiny := 1e-6 * (r.Max - r.Min)
	if math.Abs(pt.unitValue(f, 0)) >= tiny {
		return nil
	}
	own := pt.Order
	if own == "" {
		own = ABCD
	}
	for _, o := range []WordOrder{ABCD, CDAB, BADC, DCBA} {
		if o == own {
			continue
		}
		alt := *pt
		alt.Order = o
		g := float64(math.Float32frombits(alt.dword(regs)))
		if v := pt.unitValue(g, 0); !math.IsNaN(g) && !math.IsInf(g, 0) && r.Contains(v) && math.Abs(v) >= tiny {
			return fmt.Errorf("%s: registers %04x %04x read %s in word order %s, below any sensor's resolution; in word order %s they read %s: check the profile's word order",
				pt.Name, regs[0], regs[1], fmtValue(pt.unitValue(f, 0), pt.Unit), own, o, fmtValue(v, pt.Unit))
		}
	}
	return nil
}
