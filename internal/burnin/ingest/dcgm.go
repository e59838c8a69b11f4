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
// JSON document is read, in one pass. A document of neither shape, or
// of a shape whose version's major number is not the shape's, is an
// error.
func ParseDiag(file string, r io.Reader, exit int) (*Diag, error) {
	raw, err := readAll(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	start := jsonStart(raw)
	if start < 0 {
		return nil, fmt.Errorf("%s: no JSON document (dcgmi diag printed no -j output; exit %d)", file, exit)
	}
	d := &Diag{File: file, Exit: exit, Noise: bytes.Count(raw[:start], []byte("\n"))}
	dec := json.NewDecoder(bytes.NewReader(raw[start:]))
	var doc diagDoc
	if err := dec.Decode(&doc); err != nil {
		return nil, decodeError(file, raw, start, err)
	}
	rest := bytes.TrimSpace(raw[start+int(dec.InputOffset()):])
	if len(rest) > 0 {
		d.Noise += bytes.Count(rest, []byte("\n")) + 1
	}
	// encoding/json matches keys regardless of case: a shape's key
	// must be there as DCGM spells it
	doc.shape(raw[start:])
	switch {
	case doc.V3 != nil:
		d.Shape, d.Version, d.Driver = 3, doc.V3.Version, string(doc.Driver3)
		err = readTests(d, doc.V3.Categories, (*result3).read)
	case doc.V4 != nil:
		d.Shape, d.Version, d.Driver = 4, string(doc.Meta.Version), string(doc.Meta.Driver)
		d.serials(doc.Groups)
		err = readTests(d, doc.V4.Categories, (*result4).read)
	default:
		return nil, fmt.Errorf("%s: a JSON document of no known dcgmi diag shape (top keys %s; known: \"DCGM GPU Diagnostic\" (3.x), \"DCGM Diagnostic\" (4.x))", file, topKeys(raw[start:]))
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if major, _, _ := strings.Cut(d.Version, "."); d.Version != "" && major != strconv.Itoa(d.Shape) {
		return nil, fmt.Errorf("%s: DCGM version %s in the %d.x shape: an unknown version, whose results seam does not know how to read", file, d.Version, d.Shape)
	}
	return d, nil
}

// decodeError names the line where the JSON stopped reading.
func decodeError(file string, raw []byte, start int, err error) error {
	at := len(raw) // io.ErrUnexpectedEOF: the end
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	what := "does not parse (truncated or interleaved?)"
	switch {
	case errors.As(err, &se):
		at = start + int(se.Offset)
	case errors.As(err, &te):
		at, what = start+int(te.Offset), "is not of dcgmi diag's shape"
	}
	line := 1 + bytes.Count(bytes.TrimRight(raw[:min(at, len(raw))], "\n"), []byte("\n"))
	return fmt.Errorf("%s:%d: the dcgmi JSON %s: %w", file, line, what, err)
}

// topKeys lists a document's top keys, for the message that no shape
// matched.
func topKeys(doc []byte) string {
	var top map[string]json.RawMessage
	_ = json.NewDecoder(bytes.NewReader(doc)).Decode(&top)
	keys := make([]string, 0, len(top))
	for k := range top {
		keys = append(keys, strconv.Quote(k))
	}
	sort.Strings(keys)
	return strings.Join(keys, ", ")
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

// diagDoc is both shapes of the document, decoded at once: 10,000
// nodes' diagnostics are read in one go, and each pass over them
// counts.
type diagDoc struct {
	V3 *struct {
		Categories []category[result3] `json:"test_categories"`
		Version    string              `json:"version"`
	} `json:"DCGM GPU Diagnostic"`
	Driver3 lenient `json:"Driver Version Detected"`
	V4      *struct {
		Categories []category[result4] `json:"test_categories"`
	} `json:"DCGM Diagnostic"`
	Meta   metadata      `json:"metadata"`
	Groups []entityGroup `json:"entity_groups"`
}

// shape drops a shape whose key the document does not spell as DCGM
// does.
func (doc *diagDoc) shape(raw []byte) {
	if doc.V3 != nil && !bytes.Contains(raw, []byte(`"DCGM GPU Diagnostic"`)) {
		doc.V3 = nil
	}
	if doc.V4 != nil && !bytes.Contains(raw, []byte(`"DCGM Diagnostic"`)) {
		doc.V4 = nil
	}
}

type category[R any] struct {
	Category string     `json:"category"`
	Tests    []*test[R] `json:"tests"` // DCGM 3.1 prints nulls between tests
}

type test[R any] struct {
	Name    string `json:"name"`
	Results []*R   `json:"results"`
	Summary *struct {
		Status string `json:"status"`
	} `json:"test_summary"`
}

type entityGroup struct {
	Group    string `json:"entity_group"`
	Entities []struct {
		ID     int    `json:"entity_id"`
		Serial string `json:"serial_num"`
	} `json:"entities"`
}

// result3 is a 3.x result: gpu_ids "0", "0,1,2,3" or an integer.
type result3 struct {
	GPUIDs   json.RawMessage `json:"gpu_ids"`
	Status   string          `json:"status"`
	Warnings []warning       `json:"warnings"`
}

func (r *result3) read() (DiagResult, error) {
	gpus, err := gpuIDs(r.GPUIDs)
	return DiagResult{GPUs: gpus, Status: r.Status, Warnings: warningText(r.Warnings)}, err
}

// result4 is a 4.x entity result.
type result4 struct {
	Group    string    `json:"entity_group"`
	ID       *int      `json:"entity_id"`
	Status   string    `json:"status"`
	Warnings []warning `json:"warnings"`
}

func (r *result4) read() (DiagResult, error) {
	res := DiagResult{Status: r.Status, Warnings: warningText(r.Warnings)}
	if r.ID != nil && (r.Group == "" || r.Group == "GPU") {
		res.GPUs = []int{*r.ID}
	}
	return res, nil
}

// metadata is 4.x's; anything but an object is none (it is
// informative).
type metadata struct {
	Version lenient `json:"version"`
	Driver  lenient `json:"Driver Version Detected"`
}

func (m *metadata) UnmarshalJSON(b []byte) error {
	type plain metadata
	var p plain
	if json.Unmarshal(b, &p) == nil {
		*m = metadata(p)
	}
	return nil
}

// lenient is a string that is empty when the JSON holds anything else
// (the driver and version are informative).
type lenient string

func (l *lenient) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		*l = lenient(s)
	}
	return nil
}

// warning is a warning as a string or a {"warning": …} object; any
// other JSON is kept as printed.
type warning string

func (w *warning) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		*w = warning(s)
		return nil
	}
	var o struct {
		Warning string `json:"warning"`
	}
	if json.Unmarshal(b, &o) == nil && o.Warning != "" {
		*w = warning(o.Warning)
	} else {
		*w = warning(b)
	}
	return nil
}

func warningText(ws []warning) []string {
	if len(ws) == 0 {
		return nil
	}
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = string(w)
	}
	return out
}

func (d *Diag) serials(groups []entityGroup) {
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
}

// readTests reads the categories' tests and their results, skipping
// nulls.
func readTests[R any](d *Diag, cats []category[R], read func(*R) (DiagResult, error)) error {
	for _, c := range cats {
		for _, t := range c.Tests {
			if t == nil {
				continue
			}
			dt := DiagTest{Category: c.Category, Name: t.Name}
			if t.Summary != nil {
				dt.Summary = t.Summary.Status
			}
			for _, r := range t.Results {
				if r == nil {
					continue
				}
				res, err := read(r)
				if err != nil {
					return fmt.Errorf("category %s, test %q: a result: %w", c.Category, t.Name, err)
				}
				dt.Results = append(dt.Results, res)
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
