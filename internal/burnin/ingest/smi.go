package ingest

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// SMIRow is one GPU's line of `nvidia-smi --query-gpu=… --format=csv`:
// the raw value of each field by its queried name (the header's unit
// in brackets stripped), as printed.
type SMIRow struct {
	Values map[string]string
	Line   int
}

// SMITable is the CSV as printed.
type SMITable struct {
	File   string
	Fields []string          // the queried names, in order
	Units  map[string]string // a field's unit from the header ("W", "MiB")
	Rows   []SMIRow
}

// ParseSMI reads nvidia-smi's CSV. With a header line (the default
// format), the fields come from it; with noheader, fields must name
// them, in the order queried. Values are split at ", " as nvidia-smi
// separates them; a line of another field count is an error naming the
// line (truncated or interleaved).
func ParseSMI(file string, r io.Reader, fields []string) (*SMITable, error) {
	t := &SMITable{File: file, Units: map[string]string{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20) // grown as lines need: 10,000 nodes' outputs are read at once
	if len(fields) > 0 {
		t.Fields = fields
	}
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimRight(sc.Text(), " \r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		cols := strings.Split(line, ", ")
		if t.Fields == nil {
			for _, c := range cols {
				name, unit := c, ""
				if i := strings.Index(c, " ["); i > 0 && strings.HasSuffix(c, "]") {
					name, unit = c[:i], c[i+2:len(c)-1]
				}
				t.Fields = append(t.Fields, strings.TrimSpace(name))
				if unit != "" {
					t.Units[name] = unit
				}
			}
			continue
		}
		if len(cols) != len(t.Fields) {
			return nil, fmt.Errorf("%s:%d: %d values for %d fields: a truncated or interleaved line", file, n, len(cols), len(t.Fields))
		}
		row := SMIRow{Values: make(map[string]string, len(cols)), Line: n}
		for i, c := range cols {
			row.Values[t.Fields[i]] = strings.TrimSpace(c)
		}
		t.Rows = append(t.Rows, row)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if len(t.Rows) == 0 {
		return nil, fmt.Errorf("%s: no GPU lines: nvidia-smi found no GPU or failed (see its output)", file)
	}
	return t, nil
}

// Unavailable reports whether a value is one of nvidia-smi's
// placeholders: [N/A], N/A, [Not Supported], [Unknown Error],
// [Requested functionality has been deprecated], and the like.
func Unavailable(v string) bool {
	return v == "N/A" || v == "" || (strings.HasPrefix(v, "[") && strings.HasSuffix(v, "]"))
}

// Float reads a numeric field, its unit ("631.95 W") stripped; ok is
// false for a placeholder; a value that is neither is an error naming
// file, line and field.
func (t *SMITable) Float(r SMIRow, field string) (v float64, ok bool, err error) {
	s, present := r.Values[field]
	if !present {
		return 0, false, fmt.Errorf("%s: no field %s queried", t.File, field)
	}
	if Unavailable(s) {
		return 0, false, nil
	}
	if u := t.Units[field]; u != "" {
		s = strings.TrimSpace(strings.TrimSuffix(s, u))
	} else if i := strings.IndexByte(s, ' '); i > 0 {
		s = s[:i] // nounits absent but the header carried none: "614 MiB"
	}
	if strings.HasPrefix(s, "0x") {
		u, err := strconv.ParseUint(s[2:], 16, 64)
		if err != nil {
			return 0, false, fmt.Errorf("%s:%d: %s %q is not a number", t.File, r.Line, field, r.Values[field])
		}
		return float64(u), true, nil
	}
	v, err = strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, false, fmt.Errorf("%s:%d: %s %q is not a number", t.File, r.Line, field, r.Values[field])
	}
	return v, true, nil
}

// Hex reads a bitmask field such as clocks_event_reasons.active.
func (t *SMITable) Hex(r SMIRow, field string) (uint64, bool, error) {
	s, present := r.Values[field]
	if !present {
		return 0, false, fmt.Errorf("%s: no field %s queried", t.File, field)
	}
	if Unavailable(s) {
		return 0, false, nil
	}
	u, err := strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 64)
	if err != nil {
		return 0, false, fmt.Errorf("%s:%d: %s %q is not a hex mask", t.File, r.Line, field, s)
	}
	return u, true, nil
}

// GPUTelemetry is what burn-in keeps of one GPU's nvidia-smi line.
// Absent fields (placeholders, not queried) are NaN-free: Has says
// which were read.
type GPUTelemetry struct {
	Index          int             `json:"index"`
	Serial         string          `json:"serial,omitempty"`
	UUID           string          `json:"uuid,omitempty"`
	Name           string          `json:"name,omitempty"`
	PowerW         float64         `json:"power_w"`
	LimitW         float64         `json:"limit_w"`
	TempC          float64         `json:"temp_c"`
	SMClock        float64         `json:"sm_clock_mhz"`
	MaxClock       float64         `json:"max_sm_clock_mhz"`
	Throttle       uint64          `json:"throttle"`
	ECCUncorrected float64         `json:"ecc_uncorrected"`
	Has            map[string]bool `json:"has"`
}

// TelemetryFields are the fields burn-in queries, in order; the
// throttle mask under both its old and new names is accepted on read.
var TelemetryFields = []string{"index", "serial", "uuid", "name", "power.draw", "enforced.power.limit", "temperature.gpu",
	"clocks.current.sm", "clocks.max.sm", "clocks_event_reasons.active", "ecc.errors.uncorrected.volatile.total"}

// Telemetry reads every GPU line into GPUTelemetry.
func (t *SMITable) Telemetry() ([]GPUTelemetry, error) {
	var out []GPUTelemetry
	for _, r := range t.Rows {
		g := GPUTelemetry{Has: map[string]bool{}, Serial: r.Values["serial"], UUID: r.Values["uuid"], Name: r.Values["name"]}
		idx, ok, err := t.Float(r, "index")
		if err != nil || !ok {
			return nil, fmt.Errorf("%s:%d: no GPU index: query index first", t.File, r.Line)
		}
		g.Index = int(idx)
		for field, p := range map[string]*float64{"power.draw": &g.PowerW, "enforced.power.limit": &g.LimitW, "temperature.gpu": &g.TempC,
			"clocks.current.sm": &g.SMClock, "clocks.max.sm": &g.MaxClock, "ecc.errors.uncorrected.volatile.total": &g.ECCUncorrected} {
			if _, q := r.Values[field]; !q {
				continue
			}
			v, ok, err := t.Float(r, field)
			if err != nil {
				return nil, err
			}
			*p, g.Has[field] = v, ok
		}
		for _, field := range []string{"clocks_event_reasons.active", "clocks_throttle_reasons.active"} {
			if _, q := r.Values[field]; q {
				v, ok, err := t.Hex(r, field)
				if err != nil {
					return nil, err
				}
				g.Throttle, g.Has["throttle"] = v, ok
			}
		}
		out = append(out, g)
	}
	return out, nil
}
