package lifecycle

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"time"
)

// LimitsFormat is the format of a water-chemistry limits file.
const LimitsFormat = "seam.chemistry.limits/v1"

// DefaultInterval is how often a loop is sampled unless its limits say
// otherwise.
const DefaultInterval = 30 * 24 * time.Hour

// Range is a measure's limits: Min and Max when set (nil: no bound),
// and where the figures come from.
type Range struct {
	Min    *float64 `json:"min,omitempty"`
	Max    *float64 `json:"max,omitempty"`
	Source string   `json:"source,omitempty"`
}

// Limits are one loop's chemistry limits and its sampling interval.
type Limits struct {
	Fluid        string `json:"fluid,omitempty"` // water or pg25: the built-in table the rest overrides
	IntervalDays int    `json:"interval_days,omitempty"`
	Conductivity *Range `json:"conductivity_us_cm,omitempty"`
	PH           *Range `json:"ph,omitempty"`
	Glycol       *Range `json:"glycol_pct,omitempty"`
	Particulates *Range `json:"particulates_mg_l,omitempty"`
}

func fv(v float64) *float64 { return &v }

// The built-in tables, one per fluid. They are starting points only:
// the CDU vendor's limits for its wetted materials and coolant win, and
// go in a limits file (docs/lifecycle.md, "Water chemistry").
const (
	srcASHRAE  = "ASHRAE TC 9.9, Water-Cooled Servers (2019), TCS water quality"
	srcPG      = "inhibited propylene-glycol coolant (PG25) data sheets: 25 % ±3, in-service pH"
	srcDefault = "seam default: set the CDU vendor's figure in a limits file"
)

// BuiltinLimits are the built-in tables by fluid.
var BuiltinLimits = map[string]Limits{
	"water": {Fluid: "water", IntervalDays: 30,
		Conductivity: &Range{Min: fv(0.2), Max: fv(20), Source: srcASHRAE},
		PH:           &Range{Min: fv(8.0), Max: fv(10.5), Source: srcASHRAE},
		Particulates: &Range{Max: fv(3), Source: srcASHRAE},
	},
	"pg25": {Fluid: "pg25", IntervalDays: 30,
		PH:           &Range{Min: fv(8.0), Max: fv(10.5), Source: srcPG},
		Glycol:       &Range{Min: fv(22), Max: fv(28), Source: srcPG},
		Particulates: &Range{Max: fv(10), Source: srcDefault},
	},
}

// DefaultFluid is the fluid of a loop its limits file does not name.
const DefaultFluid = "pg25"

// LimitsFile is a site's chemistry limits: a default for every loop,
// and per loop (by key) what differs. A loop's limits are its fluid's
// built-in table, then the file's default, then its own entry.
type LimitsFile struct {
	Format  string            `json:"format"`
	Default Limits            `json:"default"`
	Loops   map[string]Limits `json:"loops,omitempty"`
}

// LoadLimits reads a limits file; unknown fields are errors.
func LoadLimits(path string) (*LimitsFile, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("chemistry limits: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var lf LimitsFile
	if err := dec.Decode(&lf); err != nil {
		return nil, fmt.Errorf("chemistry limits %s: %w", path, jsonWhere(raw, err))
	}
	if lf.Format != LimitsFormat {
		return nil, fmt.Errorf("chemistry limits %s: format %q, want %q", path, lf.Format, LimitsFormat)
	}
	if err := lf.check(); err != nil {
		return nil, fmt.Errorf("chemistry limits %s: %w", path, err)
	}
	return &lf, nil
}

// jsonWhere adds the line of a JSON error.
func jsonWhere(raw []byte, err error) error {
	var off int64 = -1
	switch e := err.(type) {
	case *json.SyntaxError:
		off = e.Offset
	case *json.UnmarshalTypeError:
		off = e.Offset
	}
	if off < 0 {
		return err
	}
	return fmt.Errorf("line %d: %w", bytes.Count(raw[:min(int(off), len(raw))], []byte("\n"))+1, err)
}

func (lf *LimitsFile) check() error {
	check := func(where string, l Limits) error {
		if l.Fluid != "" {
			if _, ok := BuiltinLimits[l.Fluid]; !ok {
				return fmt.Errorf("%s: fluid %q: the built-in tables are %s", where, l.Fluid, strings.Join(fluids(), ", "))
			}
		}
		if l.IntervalDays < 0 {
			return fmt.Errorf("%s: interval_days %d: want a number of days above 0", where, l.IntervalDays)
		}
		for _, f := range []struct {
			name string
			r    *Range
		}{{"conductivity_us_cm", l.Conductivity}, {"ph", l.PH}, {"glycol_pct", l.Glycol}, {"particulates_mg_l", l.Particulates}} {
			name, r := f.name, f.r
			if r != nil && r.Min != nil && r.Max != nil && *r.Min > *r.Max {
				return fmt.Errorf("%s: %s: min %g is above max %g", where, name, *r.Min, *r.Max)
			}
		}
		return nil
	}
	if err := check("default", lf.Default); err != nil {
		return err
	}
	keys := make([]string, 0, len(lf.Loops))
	for k := range lf.Loops {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := check("loop "+k, lf.Loops[k]); err != nil {
			return err
		}
	}
	return nil
}

func fluids() []string {
	var out []string
	for k := range BuiltinLimits {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// For returns loop's limits (lf may be nil: the built-in default).
func (lf *LimitsFile) For(loop string) Limits {
	var def, own Limits
	if lf != nil {
		def, own = lf.Default, lf.Loops[loop]
	}
	fluid := DefaultFluid
	for _, l := range []Limits{def, own} {
		if l.Fluid != "" {
			fluid = l.Fluid
		}
	}
	out := BuiltinLimits[fluid]
	for _, l := range []Limits{def, own} {
		out = out.over(l)
	}
	out.Fluid = fluid
	return out
}

// over is l with what o sets.
func (l Limits) over(o Limits) Limits {
	if o.IntervalDays > 0 {
		l.IntervalDays = o.IntervalDays
	}
	if o.Conductivity != nil {
		l.Conductivity = o.Conductivity
	}
	if o.PH != nil {
		l.PH = o.PH
	}
	if o.Glycol != nil {
		l.Glycol = o.Glycol
	}
	if o.Particulates != nil {
		l.Particulates = o.Particulates
	}
	return l
}

// Interval is how often the loop is sampled.
func (l Limits) Interval() time.Duration {
	if l.IntervalDays <= 0 {
		return DefaultInterval
	}
	return time.Duration(l.IntervalDays) * 24 * time.Hour
}

// ChemFinding kinds.
const (
	ChemOverdue    = "overdue"       // the loop's last sample is older than its interval, or it has none
	ChemOutOfLimit = "out_of_limits" // the loop's latest sample has a measure outside its limits
)

// ChemFinding is what a loop's chemistry says: an overdue sample, or a
// measure of its latest sample outside its limits.
type ChemFinding struct {
	Loop     string `json:"loop"`
	Kind     string `json:"kind"`
	SampleID string `json:"sample_id,omitempty"`
	Field    string `json:"field,omitempty"`
	Detail   string `json:"detail"`
}

// Evaluate checks each loop's latest sample against its limits and its
// interval at now. samples may be of any loops, in any order; a loop
// with no sample is overdue.
func Evaluate(loops []string, samples []Sample, lf *LimitsFile, now time.Time) []ChemFinding {
	latest := map[string]Sample{}
	for _, smp := range samples {
		if cur, ok := latest[smp.Loop]; !ok || smp.Taken.After(cur.Taken) || (smp.Taken.Equal(cur.Taken) && smp.SampleID > cur.SampleID) {
			latest[smp.Loop] = smp
		}
	}
	var out []ChemFinding
	for _, loop := range loops {
		l := lf.For(loop)
		smp, ok := latest[loop]
		if !ok {
			out = append(out, ChemFinding{Loop: loop, Kind: ChemOverdue, Detail: fmt.Sprintf("no water chemistry sample of %s is recorded (one is due every %d days): sample it and record it with sat lifecycle chem record", loop, l.IntervalDays)})
			continue
		}
		if age := now.Sub(smp.Taken); age > l.Interval() {
			out = append(out, ChemFinding{Loop: loop, Kind: ChemOverdue, SampleID: smp.SampleID,
				Detail: fmt.Sprintf("the last sample of %s (%s) was drawn %s, %d days ago; one is due every %d days", loop, smp.SampleID, smp.Taken.Format("2006-01-02"), int(age.Hours()/24), l.IntervalDays)})
		}
		out = append(out, outOfLimits(smp, l)...)
	}
	return out
}

func outOfLimits(smp Sample, l Limits) []ChemFinding {
	var out []ChemFinding
	for _, m := range []struct {
		field, name, unit string
		v                 *float64
		r                 *Range
	}{
		{"conductivity_us_cm", "conductivity", " µS/cm", smp.Conductivity, l.Conductivity},
		{"ph", "pH", "", smp.PH, l.PH},
		{"glycol_pct", "glycol", " %", smp.Glycol, l.Glycol},
		{"particulates_mg_l", "particulates", " mg/L", smp.Particulates, l.Particulates},
	} {
		if m.v == nil || m.r == nil {
			continue
		}
		var why string
		switch {
		case m.r.Min != nil && *m.v < *m.r.Min:
			why = fmt.Sprintf("below its minimum %g%s", *m.r.Min, m.unit)
		case m.r.Max != nil && *m.v > *m.r.Max:
			why = fmt.Sprintf("above its maximum %g%s", *m.r.Max, m.unit)
		default:
			continue
		}
		src := ""
		if m.r.Source != "" {
			src = " (" + m.r.Source + ")"
		}
		out = append(out, ChemFinding{Loop: smp.Loop, Kind: ChemOutOfLimit, SampleID: smp.SampleID, Field: m.field,
			Detail: fmt.Sprintf("sample %s of %s (%s, %s): %s %g%s is %s%s", smp.SampleID, smp.Loop, smp.Lab, smp.Taken.Format("2006-01-02"), m.name, *m.v, m.unit, why, src)})
	}
	return out
}

// Sampled reports whether an element in state st is sampled: a loop
// counts from installed until it is decommissioned.
func Sampled(st State) bool {
	switch st {
	case Design, Built, Integrated, Shipped, Decommissioned:
		return false
	}
	return true
}
