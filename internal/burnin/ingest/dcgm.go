package ingest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
)

// Diag is one `dcgmi diag -r N -j` run: its exit code and the JSON as
// printed, in DCGM 3.x's shape ("DCGM GPU Diagnostic", results naming
// gpu_ids) or 4.x's ("DCGM Diagnostic", entity results, test_summary,
// entity_groups, metadata), read into one model.
type Diag struct {
	File    string     `json:"file"`
	Shape   int        `json:"shape"` // 3 or 4
	Version string     `json:"version,omitempty"`
	Driver  string     `json:"driver,omitempty"`
	Exit    int        `json:"exit"`
	Tests   []DiagTest `json:"tests"`
	// Serials are the GPUs' serials by entity id (4.x entity_groups;
	// "<<<NOT_SUPPORTED>>>" dropped).
	Serials map[int]string `json:"serials,omitempty"`
	// Noise counts the lines around the JSON (dcgmi prints warnings
	// before it; DCGM 4.6 text after it).
	Noise int `json:"noise_lines"`
}

// DiagTest is one test with its results.
type DiagTest struct {
	Category string       `json:"category"`
	Name     string       `json:"name"`
	Summary  string       `json:"summary,omitempty"` // 4.x test_summary.status
	Results  []DiagResult `json:"results"`
}

// DiagResult is one result: the GPUs it covers, its status as printed,
// and its warnings' text.
type DiagResult struct {
	GPUs     []int    `json:"gpus"`
	Status   string   `json:"status"`
	Warnings []string `json:"warnings,omitempty"`
}

// Statuses a result may carry, lower-cased. Anything else is unknown,
// and never a pass.
const (
	StatusPass = "pass"
	StatusFail = "fail"
	StatusWarn = "warn"
	StatusSkip = "skip"
)

// NormStatus maps a printed status to one of the Status constants, or
// "" for a word DCGM is not known to print.
func NormStatus(s string) string {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "pass", "passed":
		return StatusPass
	case "fail", "failed":
		return StatusFail
	case "warn", "warning":
		return StatusWarn
	case "skip", "skipped", "not run":
		return StatusSkip
	}
	return ""
}

// ParseDiag reads dcgmi diag -j's output and exit code. The JSON may
// sit among other lines (dcgmi prints warnings before it); exactly one
// JSON document is read. A document of neither shape, or of a shape
// whose version's major number is not the shape's, is an error.
func ParseDiag(file string, r io.Reader, exit int) (*Diag, error) {
	raw, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	start := jsonStart(raw)
	if start < 0 {
		return nil, fmt.Errorf("%s: no JSON document (dcgmi diag printed no -j output; exit %d)", file, exit)
	}
	d := &Diag{File: file, Exit: exit, Noise: bytes.Count(raw[:start], []byte("\n"))}
	dec := json.NewDecoder(bytes.NewReader(raw[start:]))
	var top map[string]json.RawMessage
	if err := dec.Decode(&top); err != nil {
		at := len(raw) // io.ErrUnexpectedEOF: the end
		var se *json.SyntaxError
		if errors.As(err, &se) {
			at = start + int(se.Offset)
		}
		line := 1 + bytes.Count(bytes.TrimRight(raw[:min(at, len(raw))], "\n"), []byte("\n"))
		return nil, fmt.Errorf("%s:%d: the dcgmi JSON does not parse (truncated or interleaved?): %w", file, line, err)
	}
	rest := bytes.TrimSpace(raw[start+int(dec.InputOffset()):])
	if len(rest) > 0 {
		d.Noise += bytes.Count(rest, []byte("\n")) + 1
	}
	switch {
	case top["DCGM GPU Diagnostic"] != nil:
		d.Shape = 3
		err = d.read3(top)
	case top["DCGM Diagnostic"] != nil:
		d.Shape = 4
		err = d.read4(top)
	default:
		keys := make([]string, 0, len(top))
		for k := range top {
			keys = append(keys, strconv.Quote(k))
		}
		sort.Strings(keys)
		return nil, fmt.Errorf("%s: a JSON document of no known dcgmi diag shape (top keys %s; known: \"DCGM GPU Diagnostic\" (3.x), \"DCGM Diagnostic\" (4.x))", file, strings.Join(keys, ", "))
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if major, _, _ := strings.Cut(d.Version, "."); d.Version != "" && major != strconv.Itoa(d.Shape) {
		return nil, fmt.Errorf("%s: DCGM version %s in the %d.x shape: an unknown version, whose results seam does not know how to read", file, d.Version, d.Shape)
	}
	return d, nil
}

// jsonStart is the offset of the first line that starts with '{'.
func jsonStart(b []byte) int {
	for off := 0; off < len(b); {
		line := b[off:]
		if i := bytes.IndexByte(line, '\n'); i >= 0 {
			line = line[:i+1]
		}
		if t := bytes.TrimLeft(line, " \t"); len(t) > 0 && t[0] == '{' {
			return off + len(line) - len(t)
		}
		off += len(line)
	}
	return -1
}

type category struct {
	Category string            `json:"category"`
	Tests    []json.RawMessage `json:"tests"`
}

type test struct {
	Name    string            `json:"name"`
	Results []json.RawMessage `json:"results"`
	Summary *struct {
		Status string `json:"status"`
	} `json:"test_summary"`
}

func (d *Diag) read3(top map[string]json.RawMessage) error {
	var doc struct {
		Categories []category `json:"test_categories"`
		Version    string     `json:"version"`
	}
	if err := json.Unmarshal(top["DCGM GPU Diagnostic"], &doc); err != nil {
		return fmt.Errorf(`"DCGM GPU Diagnostic": %w`, err)
	}
	d.Version = doc.Version
	if v, ok := top["Driver Version Detected"]; ok {
		_ = json.Unmarshal(v, &d.Driver)
	}
	return d.readCategories(doc.Categories, func(raw json.RawMessage) (DiagResult, error) {
		var r struct {
			GPUIDs   json.RawMessage   `json:"gpu_ids"`
			Status   string            `json:"status"`
			Warnings []json.RawMessage `json:"warnings"`
		}
		if err := json.Unmarshal(raw, &r); err != nil {
			return DiagResult{}, err
		}
		gpus, err := gpuIDs(r.GPUIDs)
		if err != nil {
			return DiagResult{}, err
		}
		return DiagResult{GPUs: gpus, Status: r.Status, Warnings: warnings(r.Warnings)}, nil
	})
}

func (d *Diag) read4(top map[string]json.RawMessage) error {
	var doc struct {
		Categories []category `json:"test_categories"`
	}
	if err := json.Unmarshal(top["DCGM Diagnostic"], &doc); err != nil {
		return fmt.Errorf(`"DCGM Diagnostic": %w`, err)
	}
	var meta map[string]any
	if raw, ok := top["metadata"]; ok {
		_ = json.Unmarshal(raw, &meta)
	}
	d.Version, _ = meta["version"].(string)
	d.Driver, _ = meta["Driver Version Detected"].(string)
	var groups []struct {
		Group    string `json:"entity_group"`
		Entities []struct {
			ID     int    `json:"entity_id"`
			Serial string `json:"serial_num"`
		} `json:"entities"`
	}
	if raw, ok := top["entity_groups"]; ok {
		if err := json.Unmarshal(raw, &groups); err != nil {
			return fmt.Errorf("entity_groups: %w", err)
		}
	}
	for _, g := range groups {
		for _, e := range g.Entities {
			if g.Group == "GPU" && e.Serial != "" && !strings.HasPrefix(e.Serial, "<<<") {
				if d.Serials == nil {
					d.Serials = map[int]string{}
				}
				d.Serials[e.ID] = e.Serial
			}
		}
	}
	return d.readCategories(doc.Categories, func(raw json.RawMessage) (DiagResult, error) {
		var r struct {
			Group    string            `json:"entity_group"`
			ID       *int              `json:"entity_id"`
			Status   string            `json:"status"`
			Warnings []json.RawMessage `json:"warnings"`
		}
		if err := json.Unmarshal(raw, &r); err != nil {
			return DiagResult{}, err
		}
		res := DiagResult{Status: r.Status, Warnings: warnings(r.Warnings)}
		if r.ID != nil && (r.Group == "" || r.Group == "GPU") {
			res.GPUs = []int{*r.ID}
		}
		return res, nil
	})
}

func (d *Diag) readCategories(cats []category, result func(json.RawMessage) (DiagResult, error)) error {
	for _, c := range cats {
		for _, raw := range c.Tests {
			if string(raw) == "null" {
				continue // DCGM 3.1 prints nulls between tests
			}
			var t test
			if err := json.Unmarshal(raw, &t); err != nil {
				return fmt.Errorf("category %s: a test: %w", c.Category, err)
			}
			dt := DiagTest{Category: c.Category, Name: t.Name}
			if t.Summary != nil {
				dt.Summary = t.Summary.Status
			}
			for _, rr := range t.Results {
				if string(rr) == "null" {
					continue
				}
				r, err := result(rr)
				if err != nil {
					return fmt.Errorf("test %q: a result: %w", t.Name, err)
				}
				dt.Results = append(dt.Results, r)
			}
			d.Tests = append(d.Tests, dt)
		}
	}
	return nil
}

// gpuIDs reads 3.x's gpu_ids: "0", "0,1,2,3" or an integer.
func gpuIDs(raw json.RawMessage) ([]int, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var n int
	if err := json.Unmarshal(raw, &n); err == nil {
		return []int{n}, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("gpu_ids %s: neither a number nor a list", raw)
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		v, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("gpu_ids %q: %q is not a GPU id", s, f)
		}
		out = append(out, v)
	}
	return out, nil
}

// warnings reads warnings as strings or {"warning": …} objects.
func warnings(raws []json.RawMessage) []string {
	var out []string
	for _, raw := range raws {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			out = append(out, s)
			continue
		}
		var o struct {
			Warning string `json:"warning"`
		}
		if json.Unmarshal(raw, &o) == nil && o.Warning != "" {
			out = append(out, o.Warning)
		} else {
			out = append(out, string(raw))
		}
	}
	return out
}

// Problem is one reason a diagnostic is not a pass.
type Problem struct {
	Test, Status string
	GPUs         []int
	Text         string
}

func (p Problem) String() string {
	s := p.Text
	if p.Test != "" {
		s = fmt.Sprintf("%s: %s", p.Test, s)
	}
	return s
}

// Problems are every reason the run is not a pass: a failing or
// warning result (with its GPU and warning), an unknown status, a test
// without results, no tests at all, an exit code that disagrees with
// the results. Empty means passed.
func (d *Diag) Problems() []Problem {
	var out []Problem
	counted := 0
	for _, t := range d.Tests {
		if len(t.Results) == 0 {
			out = append(out, Problem{Test: t.Name, Text: "no results: a test that reports nothing has not passed"})
			continue
		}
		for _, r := range t.Results {
			st := NormStatus(r.Status)
			switch st {
			case StatusPass:
				counted++
			case StatusSkip:
			case "":
				out = append(out, Problem{Test: t.Name, Status: r.Status, GPUs: r.GPUs, Text: fmt.Sprintf("status %q on GPU %s: a status seam does not know is not a pass", r.Status, ints(r.GPUs))})
			default:
				text := fmt.Sprintf("%s on GPU %s", r.Status, ints(r.GPUs))
				if len(r.Warnings) > 0 {
					text += ": " + strings.Join(r.Warnings, "; ")
				}
				out = append(out, Problem{Test: t.Name, Status: st, GPUs: r.GPUs, Text: text})
			}
		}
		if s := NormStatus(t.Summary); t.Summary != "" && s != StatusPass && s != StatusSkip && !anyFor(out, t.Name) {
			out = append(out, Problem{Test: t.Name, Status: t.Summary, Text: fmt.Sprintf("test summary %q", t.Summary)})
		}
	}
	if counted == 0 && len(out) == 0 {
		out = append(out, Problem{Text: "no test passed on any GPU (empty or all skipped): not a pass"})
	}
	if d.Exit != 0 && len(out) == 0 {
		out = append(out, Problem{Text: fmt.Sprintf("dcgmi exited %d although every result passed", d.Exit)})
	}
	return out
}

func anyFor(ps []Problem, test string) bool {
	for _, p := range ps {
		if p.Test == test {
			return true
		}
	}
	return false
}

func ints(xs []int) string {
	if len(xs) == 0 {
		return "(all)"
	}
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}
