package ingest

import (
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// NCCLRun is one nccl-tests (or rccl-tests) run as its rank 0 printed
// it: the header, the rank lines, the table and the footer. Lines that
// belong to none (ssh warnings, shell echoes, `NCCL version …`) are
// counted as noise, not errors: real logs carry them.
type NCCLRun struct {
	File string `json:"file"`
	// Header is the `# nThread …` line's options; nil when the log
	// starts after it (a tail).
	Header *NCCLHeader `json:"header,omitempty"`
	// Version is `# nccl-tests version X …`'s X, or rccl-tests'.
	Version string     `json:"version,omitempty"`
	Ranks   []NCCLRank `json:"ranks,omitempty"`
	Rows    []NCCLRow  `json:"rows"`
	// OutOfBounds is the footer's count (-1: no such line).
	OutOfBounds int `json:"out_of_bounds"`
	// AvgBusBW is the footer's "Avg bus bandwidth" (0 and HasAvg false:
	// absent). It averages every size of the sweep: never compare it.
	AvgBusBW float64 `json:"avg_busbw"`
	HasAvg   bool    `json:"has_avg"`
	// Concluded is true when `# Collective test concluded:` was seen.
	Concluded bool `json:"concluded"`
	Noise     int  `json:"noise_lines"`
	// RootColumn is false for the old tables without a root column.
	RootColumn bool `json:"root_column"`
}

// NCCLHeader is the options line.
type NCCLHeader struct {
	NThread, NGPUs     int
	MinBytes, MaxBytes int64
	Warmup, Iters      int
	Validation         int
	Line               int
}

// NCCLRank is one `#  Rank N Group G Pid P on HOST device D [BUS] NAME`
// line (rccl-tests print no name).
type NCCLRank struct {
	Rank   int    `json:"rank"`
	Host   string `json:"host"`
	Device int    `json:"device"`
	Bus    string `json:"bus"`
	GPU    string `json:"gpu,omitempty"`
	Line   int    `json:"line"`
}

// NCCLRow is one size of the table.
type NCCLRow struct {
	Size     int64       `json:"size"`
	Count    int64       `json:"count"`
	Type     string      `json:"type"`
	Redop    string      `json:"redop"`
	Root     int         `json:"root"`
	OutPlace NCCLMeasure `json:"out_of_place"`
	InPlace  NCCLMeasure `json:"in_place"`
	Line     int         `json:"line"`
}

// NCCLMeasure is one half of a row: time (us), algbw and busbw (GB/s)
// and #wrong (-1 when the tool printed N/A: validation off).
type NCCLMeasure struct {
	TimeUS float64 `json:"time_us"`
	AlgBW  float64 `json:"algbw"`
	BusBW  float64 `json:"busbw"`
	Wrong  int64   `json:"wrong"`
}

var (
	headerRe  = regexp.MustCompile(`^#?\s*nThread\s+(\d+)\s+nGpus\s+(\d+)\s+minBytes\s+(\d+)\s+maxBytes\s+(\d+)\b(.*)$`)
	versionRe = regexp.MustCompile(`^#?\s*(?:nccl-tests version|rccl-tests: Version)\s+(\S+)`)
	oobRe     = regexp.MustCompile(`^#\s*Out of bounds values\s*:\s*(\d+)\s+(OK|FAILED)\s*$`)
	avgRe     = regexp.MustCompile(`^#\s*Avg bus bandwidth\s*:\s*(\S+)\s*$`)
)

// ParseNCCL reads an all_reduce_perf (or any nccl-tests/rccl-tests
// collective) log. It fails, naming file and line, on what would make
// a number unreliable: a table line that does not parse (truncated,
// interleaved with another process's output), a second table, two
// headers, no table at all.
func ParseNCCL(file string, r io.Reader) (*NCCLRun, error) {
	raw, err := readAll(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	run := &NCCLRun{File: file, OutOfBounds: -1, RootColumn: true}
	inTable, tableDone := false, false
	n := 0
	// the lines are slices of one string: 10,000 nodes' outputs are
	// read at once, and a string a line was most of the time
	for line := range strings.Lines(string(raw)) {
		n++
		line = strings.TrimRight(line, " \t\r\n")
		trim := strings.TrimSpace(line)
		errf := func(format string, args ...any) error {
			return fmt.Errorf("%s:%d: %s", file, n, fmt.Sprintf(format, args...))
		}
		var rank *NCCLRank // most lines of a large run are rank lines
		if strings.Contains(trim, "Rank") {
			rank = parseRank(trim, n)
		}
		switch {
		case trim == "" || trim == "#":
			continue
		case inTable && isDigit(trim[0]): // first: most lines are rows, and no other case starts with a digit
			row, err := parseRow(trim, run.RootColumn, n)
			if err != nil {
				return nil, errf("%v", err)
			}
			if k := len(run.Rows); k > 0 && row.Size <= run.Rows[k-1].Size {
				return nil, errf("size %d after %d: the table's sizes must grow (interleaved output?)", row.Size, run.Rows[k-1].Size)
			}
			run.Rows = append(run.Rows, row)
		case strings.Contains(trim, "nThread") && headerRe.MatchString(trim):
			if run.Header != nil {
				return nil, errf("a second nccl-tests header (line %d has the first): two runs or interleaved output in one file", run.Header.Line)
			}
			h, err := parseHeader(trim, n)
			if err != nil {
				return nil, errf("%v", err)
			}
			run.Header = h
		case strings.Contains(trim, "ersion") && versionRe.MatchString(trim):
			run.Version = versionRe.FindStringSubmatch(trim)[1]
		case rank != nil:
			run.Ranks = append(run.Ranks, *rank)
		case strings.HasPrefix(trim, "#") && strings.Contains(trim, "size") && strings.Contains(trim, "busbw"):
			if tableDone || len(run.Rows) > 0 {
				return nil, errf("a second table: two runs or interleaved output in one file")
			}
			f := strings.Fields(strings.TrimPrefix(trim, "#"))
			run.RootColumn = contains(f, "root")
			if !contains(f, "#wrong") && !contains(f, "error") {
				return nil, errf("the table's header has neither #wrong nor error: not an nccl-tests table")
			}
			inTable = true
		case strings.Contains(trim, "Out of bounds") && oobRe.MatchString(trim):
			m := oobRe.FindStringSubmatch(trim)
			run.OutOfBounds, _ = strconv.Atoi(m[1])
			inTable, tableDone = false, true
		case strings.Contains(trim, "Avg bus") && avgRe.MatchString(trim):
			v, err := strconv.ParseFloat(avgRe.FindStringSubmatch(trim)[1], 64)
			if err != nil {
				return nil, errf("Avg bus bandwidth %q is not a number", trim)
			}
			run.AvgBusBW, run.HasAvg = v, true
			inTable, tableDone = false, true
		case strings.HasPrefix(trim, "# Collective test concluded"):
			run.Concluded = true
			inTable, tableDone = false, true
		case strings.HasPrefix(trim, "#"):
			// units line, "out-of-place in-place", "Using devices", "...", other comments
		case inTable && !strings.HasPrefix(trim, "NCCL") && !strings.HasPrefix(trim, "rccl"):
			return nil, errf("%q inside the table: interleaved output from another process", short(trim))
		default:
			run.Noise++
		}
	}
	if len(run.Rows) > 0 && run.OutOfBounds < 0 && !run.HasAvg && !run.Concluded {
		return nil, fmt.Errorf("%s:%d: the log ends in the table, with no footer (# Out of bounds values): truncated", file, run.Rows[len(run.Rows)-1].Line)
	}
	if len(run.Rows) == 0 {
		return nil, fmt.Errorf("%s: no nccl-tests table rows: the run did not get to measure (see its stderr), or this is not nccl-tests output", file)
	}
	return run, nil
}

// parseRank reads `#  Rank N Group G Pid P on HOST device D [BUS] NAME`
// (nil: not a rank line). By hand, not a regular expression: a
// module's run prints one per GPU, and 10,000 nodes' runs hundreds of
// thousands.
func parseRank(s string, line int) *NCCLRank {
	const space = "\t\n\f\r " // a regular expression's \s
	rest := strings.TrimPrefix(s, "#")
	var f [10]string
	for i := range f {
		rest = strings.TrimLeft(rest, space)
		end := strings.IndexAny(rest, space)
		if end <= 0 {
			return nil
		}
		f[i], rest = rest[:end], rest[end:]
	}
	rest = strings.TrimLeft(rest, space)
	if f[0] != "Rank" || f[2] != "Group" || f[4] != "Pid" || f[6] != "on" || f[8] != "device" || !strings.HasPrefix(rest, "[") {
		return nil
	}
	bus, name, ok := strings.Cut(rest[1:], "]")
	if !ok || !digits(f[1]) || !digits(f[3]) || !digits(f[5]) || !digits(f[9]) {
		return nil
	}
	rank, err1 := strconv.Atoi(f[1])
	dev, err2 := strconv.Atoi(f[9])
	if err1 != nil || err2 != nil {
		return nil
	}
	return &NCCLRank{Rank: rank, Host: f[7], Device: dev, Bus: bus, GPU: strings.TrimSpace(name), Line: line}
}

func digits(s string) bool {
	for i := range len(s) {
		if !isDigit(s[i]) {
			return false
		}
	}
	return s != ""
}

func parseHeader(s string, line int) (*NCCLHeader, error) {
	m := headerRe.FindStringSubmatch(s)
	h := &NCCLHeader{Line: line, Validation: -1}
	h.NThread, _ = strconv.Atoi(m[1])
	h.NGPUs, _ = strconv.Atoi(m[2])
	var err error
	if h.MinBytes, err = strconv.ParseInt(m[3], 10, 64); err != nil {
		return nil, fmt.Errorf("minBytes %q: %w", m[3], err)
	}
	if h.MaxBytes, err = strconv.ParseInt(m[4], 10, 64); err != nil {
		return nil, fmt.Errorf("maxBytes %q: %w", m[4], err)
	}
	rest := strings.Fields(m[5])
	for i := 0; i+1 < len(rest); i++ {
		v, err := strconv.Atoi(rest[i+1])
		if err != nil {
			continue
		}
		prev := ""
		if i > 0 {
			prev = rest[i-1]
		}
		switch {
		case rest[i] == "validation:":
			h.Validation = v
		case rest[i] == "iters:" && prev == "warmup":
			h.Warmup = v
		case rest[i] == "iters:" && prev != "agg":
			h.Iters = v
		}
	}
	return h, nil
}

// parseRow reads one table row: 13 fields (12 without root).
func parseRow(s string, root bool, line int) (NCCLRow, error) {
	f := strings.Fields(s)
	want := 13
	if !root {
		want = 12
	}
	if len(f) != want {
		return NCCLRow{}, fmt.Errorf("a table row of %d fields, want %d: truncated or interleaved output", len(f), want)
	}
	var r NCCLRow
	r.Line = line
	var err error
	if r.Size, err = strconv.ParseInt(f[0], 10, 64); err != nil || r.Size <= 0 {
		return r, fmt.Errorf("size %q is not a positive number of bytes", f[0])
	}
	if r.Count, err = strconv.ParseInt(f[1], 10, 64); err != nil {
		return r, fmt.Errorf("count %q is not a number", f[1])
	}
	r.Type, r.Redop = f[2], f[3]
	i := 4
	r.Root = -1
	if root {
		if r.Root, err = strconv.Atoi(f[4]); err != nil {
			return r, fmt.Errorf("root %q is not a number", f[4])
		}
		i = 5
	}
	if r.OutPlace, err = parseMeasure(f[i : i+4]); err != nil {
		return r, fmt.Errorf("out-of-place: %w", err)
	}
	if r.InPlace, err = parseMeasure(f[i+4 : i+8]); err != nil {
		return r, fmt.Errorf("in-place: %w", err)
	}
	return r, nil
}

func parseMeasure(f []string) (NCCLMeasure, error) {
	var m NCCLMeasure
	var err error
	for i, p := range []*float64{&m.TimeUS, &m.AlgBW, &m.BusBW} {
		if *p, err = strconv.ParseFloat(f[i], 64); err != nil || *p < 0 {
			return m, fmt.Errorf("%q is not a number", f[i])
		}
	}
	if f[3] == "N/A" {
		m.Wrong = -1
		return m, nil
	}
	if m.Wrong, err = strconv.ParseInt(f[3], 10, 64); err != nil || m.Wrong < 0 {
		return m, fmt.Errorf("#wrong %q is not a count", f[3])
	}
	return m, nil
}

// At returns the row of exactly size bytes.
func (r *NCCLRun) At(size int64) (NCCLRow, bool) {
	for _, row := range r.Rows {
		if row.Size == size {
			return row, true
		}
	}
	return NCCLRow{}, false
}

// Hosts are the rank lines' hosts, each once, in rank order.
func (r *NCCLRun) Hosts() []string {
	var out []string
	seen := map[string]bool{}
	for _, rk := range r.Ranks {
		if !seen[rk.Host] {
			seen[rk.Host] = true
			out = append(out, rk.Host)
		}
	}
	return out
}

// BusBW is the verdict-grade figure of a run: the lower of out-of-place
// and in-place busbw at size bytes, with the reasons it cannot be
// trusted: the size missing, #wrong non-zero, out-of-bounds values,
// validation off.
func (r *NCCLRun) BusBW(size int64) (float64, error) {
	row, ok := r.At(size)
	if !ok {
		sizes := make([]string, len(r.Rows))
		for i, x := range r.Rows {
			sizes[i] = strconv.FormatInt(x.Size, 10)
		}
		return 0, fmt.Errorf("%s: no row of %d bytes (the table has %s): run with -b and -e spanning it", r.File, size, strings.Join(sizes, ", "))
	}
	if row.OutPlace.Wrong != 0 || row.InPlace.Wrong != 0 {
		if row.OutPlace.Wrong < 0 || row.InPlace.Wrong < 0 {
			return 0, fmt.Errorf("%s:%d: #wrong is N/A at %d bytes: validation was off (-c 0), so the result is unchecked", r.File, row.Line, size)
		}
		return 0, fmt.Errorf("%s:%d: #wrong %d out-of-place, %d in-place at %d bytes: the all-reduce computed wrong results", r.File, row.Line, row.OutPlace.Wrong, row.InPlace.Wrong, size)
	}
	if r.OutOfBounds > 0 {
		return 0, fmt.Errorf("%s: %d out-of-bounds values: the run's results are wrong", r.File, r.OutOfBounds)
	}
	if r.Header != nil && r.Header.Validation == 0 {
		return 0, fmt.Errorf("%s:%d: validation: 0: the results are unchecked", r.File, r.Header.Line)
	}
	return min(row.OutPlace.BusBW, row.InPlace.BusBW), nil
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

func isDigit(b byte) bool { return b >= '0' && b <= '9' }

func short(s string) string {
	if len(s) > 60 {
		return s[:60] + "…"
	}
	return s
}
