package domains

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/seamdc/seam/internal/cueload"
	"github.com/seamdc/seam/internal/units"
)

// jobLine is one line of a job file.
type jobLine struct {
	Name       string `json:"name"`
	GPUs       int    `json:"gpus"`
	Interval   string `json:"interval"`
	Write      string `json:"write"`
	Restart    string `json:"restart"`
	Generation string `json:"generation"`
}

var jobFields = []string{"name", "gpus", "interval", "write", "restart", "generation"}

// ReadJobs reads job profiles from a JSON Lines file, one object a line:
//
//	{"name": "pretrain", "gpus": 1152, "interval": "30 min", "write": "1 min", "restart": "20 min"}
//
// with an optional "generation". Blank lines and lines that start with
// # are skipped. Every problem names file:line:column; all are returned.
func ReadJobs(file string, r io.Reader) ([]Job, error) {
	var jobs []Job
	var errs []error
	seen := map[string]int{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		if t := bytes.TrimSpace(line); len(t) == 0 || t[0] == '#' {
			continue
		}
		j, err := parseJob(line)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s:%d:%d: %w", file, n, err.col, err))
			continue
		}
		j.Where = fmt.Sprintf("%s:%d", file, n)
		if first, ok := seen[j.Name]; ok {
			errs = append(errs, fmt.Errorf("%s:%d:1: job %s is listed twice (first at line %d): give each profile its own name", file, n, j.Name, first))
			continue
		}
		seen[j.Name] = n
		if err := j.Validate(); err != nil {
			errs = append(errs, err)
			continue
		}
		jobs = append(jobs, j)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return jobs, nil
}

// lineError is a problem at a column of a line.
type lineError struct {
	col int
	msg string
}

func (e *lineError) Error() string { return e.msg }

func parseJob(line []byte) (Job, *lineError) {
	var jl jobLine
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&jl); err != nil {
		return Job{}, jsonError(line, err)
	}
	if dec.More() {
		return Job{}, &lineError{int(dec.InputOffset()) + 1, "more than one JSON value on the line: write one job profile a line"}
	}
	col := func(field string) int {
		if i := bytes.Index(line, []byte(`"`+field+`"`)); i >= 0 {
			return i + 1
		}
		return 1
	}
	if jl.Name == "" {
		return Job{}, &lineError{1, `a job profile without a "name"`}
	}
	j := Job{Name: jl.Name, GPUs: jl.GPUs, Generation: jl.Generation}
	for _, f := range []struct {
		name, raw string
		to        *time.Duration
	}{{"interval", jl.Interval, &j.Interval}, {"write", jl.Write, &j.Write}, {"restart", jl.Restart, &j.Restart}} {
		d, err := parseTime(f.raw)
		if err != nil {
			return Job{}, &lineError{col(f.name), fmt.Sprintf("job %s: %s: %v", jl.Name, f.name, err)}
		}
		*f.to = d
	}
	return j, nil
}

// parseTime reads a time with its unit, such as "30 min".
func parseTime(raw string) (time.Duration, error) {
	if raw == "" {
		return 0, errors.New(`missing: give a time with its unit, such as "20 min"`)
	}
	q, err := units.Parse(raw)
	if err != nil {
		return 0, fmt.Errorf("%w (a time, in %s)", err, strings.Join(units.UnitsOf(units.Time), ", "))
	}
	if q.Dim != units.Time {
		return 0, fmt.Errorf("%q is a %s, not a time", raw, q.Dim)
	}
	return time.Duration(q.Canon * float64(time.Second)), nil
}

// jsonError says where a line's JSON is wrong and what to write.
func jsonError(line []byte, err error) *lineError {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return &lineError{int(syn.Offset), fmt.Sprintf("not JSON: %v", syn)}
	case errors.As(err, &typ):
		return &lineError{int(typ.Offset), fmt.Sprintf("%q is a JSON %s, but a %s is expected", typ.Field, typ.Value, goType(typ.Type.Kind().String()))}
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		field := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		col := 1
		if i := bytes.Index(line, []byte(`"`+field+`"`)); i >= 0 {
			col = i + 1
		}
		return &lineError{col, fmt.Sprintf("unknown field %q: %s", field, cueload.DidYouMean(field, jobFields))}
	case errors.Is(err, io.ErrUnexpectedEOF):
		return &lineError{len(line), "the line ends inside a JSON object: close it on the same line"}
	}
	return &lineError{1, err.Error()}
}

func goType(kind string) string {
	if kind == "int" {
		return "whole number"
	}
	return kind
}
