package inventory

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
)

// elementOffsets are the offsets, in an object's bytes, of the elements
// of its array field key.
func elementOffsets(raw []byte, key string) []int {
	out := []int{}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil {
		return out
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return out
		}
		if tok != key {
			var skipped json.RawMessage
			if dec.Decode(&skipped) != nil {
				return out
			}
			continue
		}
		if t, err := dec.Token(); err != nil || t != json.Delim('[') {
			return out
		}
		for dec.More() {
			out = append(out, skip(raw, int(dec.InputOffset())))
			var skipped json.RawMessage
			if dec.Decode(&skipped) != nil {
				return out
			}
		}
		return out
	}
	return out
}

// strict decodes a JSON object into v, refusing unknown fields. On a
// field of the wrong type or name it still fills in the others.
func strict(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// jsonKind says what a JSON value is, for a message.
func jsonKind(raw []byte) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// invalid reports where a file that is not JSON stops being JSON. A
// file that is not JSON yields no records: half a file would mislead
// every count.
func (r *reader) invalid() {
	h := r.h
	var v json.RawMessage
	err := json.Unmarshal(h.src, &v)
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se) && se.Offset > 0 && int(se.Offset) <= len(h.src) && !strings.Contains(se.Error(), "unexpected end"):
		off := int(se.Offset) - 1
		msg := strings.TrimPrefix(se.Error(), "json: ")
		if strings.Contains(msg, "after top-level value") {
			msg = "more text after the end of the inventory"
		}
		hint := "fix the JSON here (reading stopped at the first problem; nothing of the file is read until it parses)"
		if prev := bytes.TrimRight(h.src[:off], " \t\r\n"); len(prev) > 0 && prev[len(prev)-1] == ',' && (h.src[off] == ']' || h.src[off] == '}') {
			msg += ": a comma before it, which JSON does not allow"
			hint = "remove the comma after the last element"
		}
		r.errorf(RuleHandoverSyntax, off, "not JSON: %s", msg).Hint = hint
	default:
		open := openAt(h.src)
		what := "in the middle of a value"
		if len(open) > 0 {
			o := h.pos(open[len(open)-1])
			what = fmt.Sprintf("with %d arrays or objects still open (the innermost opened at line %d, column %d)", len(open), o.Line, o.Col)
			if len(open) == 1 {
				what = fmt.Sprintf("with the value opened at line %d, column %d still open", o.Line, o.Col)
			}
		}
		r.errorf(RuleHandoverSyntax, len(h.src), "not JSON: the file ends %s: it is cut short", what).Hint =
			"write the whole file again (an export or an upload stopped early), or close what is open"
	}
}

// openAt lists where the arrays and objects still open at the end of
// a JSON text start, outermost first.
func openAt(b []byte) []int {
	var open []int
	in := false
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case in && c == '\\':
			i++
		case c == '"':
			in = !in
		case in:
		case c == '[' || c == '{':
			open = append(open, i)
		case (c == ']' || c == '}') && len(open) > 0:
			open = open[:len(open)-1]
		}
	}
	return open
}

// fieldError reports why a record (at offset at of the file) did not
// decode cleanly: an unknown field at the field, a wrong type at the
// value. name names the record, or the part of it at an offset; the
// offset reported (in raw) comes back.
func (r *reader) fieldError(err error, raw []byte, at int, name func(off int) string, known []string) int {
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &te):
		off := valueStart(raw, int(te.Offset))
		field := te.Field
		if field == "" {
			field = "the record"
		} else {
			field = fmt.Sprintf("%q", field)
		}
		r.errorf(RuleHandoverField, at+off, "%s: %s is %s, want %s", name(off), field, jsonValue(te.Value), goKind(te.Type)).Hint = formatHint
		return off
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		field := strings.TrimPrefix(err.Error(), "json: unknown field ")
		unquoted := strings.Trim(field, `"`)
		off := keyOffset(raw, field)
		hint := didYouMean(unquoted, known)
		if hint == "" {
			hint = formatHint
		}
		r.errorf(RuleHandoverField, at+off, "%s: unknown field %s: it is not read", name(off), field).Hint = hint
		return off
	}
	r.errorf(RuleHandoverField, at, "%s: %v", name(0), err).Hint = formatHint
	return 0
}

// keyOffset is the offset of the first object key quoted in raw (0 when
// it cannot be found).
func keyOffset(raw []byte, quoted string) int {
	for from := 0; ; {
		i := bytes.Index(raw[from:], []byte(quoted))
		if i < 0 {
			return 0
		}
		at := from + i
		if j := skipSpace(raw, at+len(quoted)); j < len(raw) && raw[j] == ':' {
			return at
		}
		from = at + len(quoted)
	}
}

// valueStart is where the JSON value that ends at offset end of raw
// starts.
func valueStart(raw []byte, end int) int {
	end = min(max(end, 0), len(raw))
	i := end - 1
	for i >= 0 && (raw[i] == ' ' || raw[i] == '\t' || raw[i] == '\r' || raw[i] == '\n') {
		i--
	}
	if i < 0 {
		return 0
	}
	if raw[i] == '"' {
		for j := i - 1; j >= 0; j-- {
			if raw[j] == '"' && (j == 0 || raw[j-1] != '\\') {
				return j
			}
		}
		return 0
	}
	if raw[i] == '}' || raw[i] == ']' {
		return i // the decoder stops at the end of a composite value
	}
	for i > 0 && !bytes.ContainsRune([]byte(" \t\r\n:,[{"), rune(raw[i-1])) {
		i--
	}
	return i
}

// jsonValue names a JSON value as encoding/json describes it ("number",
// "number 1.5", "string"), for a message.
func jsonValue(v string) string {
	switch {
	case v == "object" || v == "array":
		return "an " + v
	case v == "bool":
		return "a boolean"
	case strings.HasPrefix(v, "number "):
		return "the number " + strings.TrimPrefix(v, "number ")
	case v == "":
		return "a value of another type"
	}
	return "a " + v
}

// goKind names what a Go type wants, for a message.
func goKind(t reflect.Type) string {
	if t == nil {
		return "another type"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "an array"
	}
	return "an object"
}

// fields lists the JSON field names of the given struct types and the
// structs they hold.
func fields(types ...reflect.Type) []string {
	seen := map[string]bool{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct {
			return
		}
		for i := range t.NumField() {
			f := t.Field(i)
			if f.Anonymous {
				walk(f.Type)
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" || name == "-" {
				continue
			}
			seen[name] = true
			walk(f.Type)
		}
	}
	for _, t := range types {
		walk(t)
	}
	return sortedKeys(seen)
}

var (
	nodeRecordFields = fields(reflect.TypeFor[NodeRecord]())
	rackRecordFields = fields(reflect.TypeFor[RackRecord]())
)

// didYouMean suggests the known names nearest to s; "" when none is near.
func didYouMean(s string, known []string) string {
	best, bestD := []string(nil), 3
	for _, k := range known {
		switch d := editDistance(s, k); {
		case d < bestD:
			best, bestD = []string{k}, d
		case d == bestD:
			best = append(best, k)
		}
	}
	if len(best) == 0 || len(best) > 3 {
		return ""
	}
	quoted := make([]string, len(best))
	for i, b := range best {
		quoted[i] = fmt.Sprintf("%q", b)
	}
	return "did you mean " + strings.Join(quoted, " or ") + "?"
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
