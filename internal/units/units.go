// Package units parses quantities such as "415 V" or "1.5 L/min/kW" and
// converts them to canonical units. The unit table is closed: every unit
// belongs to exactly one dimension, and a quantity of the wrong dimension
// is an error, never a silent conversion.
package units

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Dimension is a physical dimension with a closed set of units.
type Dimension string

// The dimensions a contract may use.
const (
	Power        Dimension = "power"
	Voltage      Dimension = "voltage"
	Current      Dimension = "current"
	Frequency    Dimension = "frequency"
	Temperature  Dimension = "temperature"
	TempDiff     Dimension = "temperature_difference"
	Flow         Dimension = "flow"
	Pressure     Dimension = "pressure"
	Time         Dimension = "time"
	Ratio        Dimension = "ratio"
	PowerRate    Dimension = "power_rate"
	SpecificFlow Dimension = "specific_flow"
	TempRate     Dimension = "temperature_rate"
	Energy       Dimension = "energy"
)

// unit is one row of the table: value_canonical = value*scale + offset.
type unit struct {
	dim    Dimension
	scale  float64
	offset float64
}

var table = map[string]unit{
	"W": {Power, 1e-3, 0}, "kW": {Power, 1, 0}, "MW": {Power, 1e3, 0},
	"V": {Voltage, 1, 0}, "kV": {Voltage, 1e3, 0},
	"A": {Current, 1, 0}, "kA": {Current, 1e3, 0},
	"Hz":   {Frequency, 1, 0},
	"degC": {Temperature, 1, 0}, "degF": {Temperature, 5.0 / 9, -32 * 5.0 / 9},
	"K":     {TempDiff, 1, 0},
	"L/min": {Flow, 1, 0}, "L/s": {Flow, 60, 0}, "m3/h": {Flow, 1000.0 / 60, 0},
	"Pa": {Pressure, 1e-3, 0}, "kPa": {Pressure, 1, 0}, "bar": {Pressure, 100, 0},
	"ms": {Time, 1e-3, 0}, "s": {Time, 1, 0}, "min": {Time, 60, 0}, "h": {Time, 3600, 0},
	"%": {Ratio, 1, 0}, "pu": {Ratio, 100, 0},
	"W/s": {PowerRate, 1e-3, 0}, "kW/s": {PowerRate, 1, 0}, "MW/s": {PowerRate, 1e3, 0},
	"kW/min": {PowerRate, 1.0 / 60, 0}, "MW/min": {PowerRate, 1e3 / 60, 0},
	"Wh": {Energy, 1e-3, 0}, "kWh": {Energy, 1, 0}, "MWh": {Energy, 1e3, 0},
	"L/min/kW": {SpecificFlow, 1, 0},
	"K/s":      {TempRate, 60, 0}, "K/min": {TempRate, 1, 0},
}

// canonical is the unit every dimension converts to.
var canonical = map[Dimension]string{
	Power: "kW", Voltage: "V", Current: "A", Frequency: "Hz", Temperature: "degC",
	TempDiff: "K", Flow: "L/min", Pressure: "kPa", Time: "s", Ratio: "%",
	PowerRate: "kW/s", SpecificFlow: "L/min/kW", TempRate: "K/min", Energy: "kWh",
}

// Canonical returns the canonical unit of d.
func Canonical(d Dimension) string { return canonical[d] }

// UnitsOf lists the units of d, sorted.
func UnitsOf(d Dimension) []string {
	var out []string
	for name, u := range table {
		if u.dim == d {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// Dimensions lists every dimension, sorted.
func Dimensions() []Dimension {
	var out []Dimension
	for d := range canonical {
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// Quantity is a parsed value: what was written and its canonical value.
type Quantity struct {
	Value float64   // as written
	Unit  string    // as written
	Dim   Dimension // the unit's dimension
	Canon float64   // value in Canonical(Dim)
}

// String renders the quantity as written.
func (q Quantity) String() string { return Format(q.Value, q.Unit) }

// Format renders a number and unit, dropping needless digits.
func Format(v float64, unit string) string {
	s := strconv.FormatFloat(v, 'f', -1, 64)
	if math.Abs(v) >= 1e6 || (v != 0 && math.Abs(v) < 1e-4) {
		s = strconv.FormatFloat(v, 'g', 6, 64)
	} else if strings.Contains(s, ".") && len(s) > 10 {
		s = strconv.FormatFloat(v, 'f', 4, 64)
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	if unit == "%" {
		return s + " %"
	}
	return s + " " + unit
}

// Exceeds reports whether a is above b. Every comparison of contract
// values uses it: exact after unit conversion, to within floating-point
// rounding (one part in 10⁹), so that 1.8721 MW is above 1.872 MW and
// 3119.9 L/min below 3120 L/min, while 2.08 MW written as "2080 kW"
// equals itself.
func Exceeds(a, b float64) bool {
	return a > b+1e-9*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}

// Parse reads "415 V", "-5 %", "1.5 L/min/kW". The number and unit are
// separated by optional spaces.
func Parse(s string) (Quantity, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && strings.ContainsRune("+-0123456789.eE", rune(t[i])) {
		// an 'e' starts a unit only when no digit follows it
		if (t[i] == 'e' || t[i] == 'E') && (i+1 >= len(t) || !strings.ContainsRune("+-0123456789", rune(t[i+1]))) {
			break
		}
		i++
	}
	num, name := t[:i], strings.TrimSpace(t[i:])
	if num == "" {
		return Quantity{}, fmt.Errorf("%q does not start with a number: write it as a number and a unit, such as \"415 V\"", s)
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
		return Quantity{}, fmt.Errorf("%q: %q is not a number", s, num)
	}
	if name == "" {
		return Quantity{}, &MissingUnitError{Text: s}
	}
	u, ok := table[name]
	if !ok {
		return Quantity{}, &UnknownUnitError{Text: s, Unit: name}
	}
	return Quantity{Value: v, Unit: name, Dim: u.dim, Canon: v*u.scale + u.offset}, nil
}

// MissingUnitError is a number written without a unit.
type MissingUnitError struct{ Text string }

func (e *MissingUnitError) Error() string {
	return fmt.Sprintf("%q has no unit: every quantity states its unit, such as \"%s kW\"", e.Text, strings.TrimSpace(e.Text))
}

// UnknownUnitError is a unit outside the closed table.
type UnknownUnitError struct{ Text, Unit string }

func (e *UnknownUnitError) Error() string {
	if guess := Suggest(e.Unit); guess != "" {
		return fmt.Sprintf("unknown unit %q in %q: did you mean %q?", e.Unit, e.Text, guess)
	}
	return fmt.Sprintf("unknown unit %q in %q (see the unit table in docs/contracts.md)", e.Unit, e.Text)
}

// Suggest returns a known unit that differs from name only in case or
// in a common spelling, or "".
func Suggest(name string) string {
	aliases := map[string]string{"°C": "degC", "C": "degC", "celsius": "degC", "lpm": "L/min",
		"l/min": "L/min", "kw": "kW", "mw": "MW", "w": "W", "v": "V", "a": "A", "hz": "Hz",
		"sec": "s", "secs": "s", "mins": "min", "hr": "h", "percent": "%", "m³/h": "m3/h"}
	if g, ok := aliases[name]; ok {
		return g
	}
	for _, known := range slices.Sorted(maps.Keys(table)) {
		if strings.EqualFold(known, name) {
			return known
		}
	}
	return ""
}

// In converts a canonical value of dimension d to the named unit.
func In(canon float64, unitName string) (float64, error) {
	u, ok := table[unitName]
	if !ok {
		return 0, fmt.Errorf("unknown unit %q", unitName)
	}
	return (canon - u.offset) / u.scale, nil
}

// Of builds a quantity from a canonical value, written in unitName.
func Of(canon float64, unitName string) Quantity {
	u := table[unitName]
	return Quantity{Value: (canon - u.offset) / u.scale, Unit: unitName, Dim: u.dim, Canon: canon}
}

// Physical constants and conversions used by the budgets.
const (
	BTUPerHourPerKW = 3412.14
	KWPerTon        = 3.517
	// Specific heat in kJ/(kg·K), density in kg/L.
	CpWater = 4.18
	CpPG25  = 3.9
)

// FlowFor returns the flow in L/min that carries heat kW at a temperature
// rise of dT K: Q = ṁ·cp·ΔT with a density of 1 kg/L.
func FlowFor(kw, dT, cp float64) float64 { return kw / (cp * dT) * 60 }

// ThreePhaseKW is the power in kW that a three-phase circuit of line-line
// voltage v and current i carries at power factor pf.
func ThreePhaseKW(v, i, pf float64) float64 { return math.Sqrt(3) * v * i * pf / 1000 }
