package redfish

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Small readers of decoded JSON (map[string]any), nil-safe.

// at is the value at a path of object keys.
func at(m map[string]any, path ...string) any {
	var v any = m
	for _, p := range path {
		o, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = o[p]
	}
	return v
}

func str(m map[string]any, path ...string) string {
	s, _ := at(m, path...).(string)
	return s
}

func object(m map[string]any, path ...string) map[string]any {
	o, _ := at(m, path...).(map[string]any)
	return o
}

// integer is a number at path as an int64, when it is a whole number.
func integer(m map[string]any, path ...string) (int64, bool) {
	f, ok := at(m, path...).(float64)
	if !ok || f != float64(int64(f)) {
		return 0, false
	}
	return int64(f), true
}

// refs are the URIs at path: one reference object, or an array of them.
func refs(m map[string]any, path ...string) []string {
	switch v := at(m, path...).(type) {
	case map[string]any:
		if u, ok := v["@odata.id"].(string); ok {
			return []string{u}
		}
	case []any:
		var out []string
		for _, x := range v {
			if o, ok := x.(map[string]any); ok {
				if u, ok := o["@odata.id"].(string); ok {
					out = append(out, u)
				}
			}
		}
		return out
	}
	return nil
}

func first(uris []string) string {
	if len(uris) == 0 {
		return ""
	}
	return uris[0]
}

// typeName is the type of an @odata.type: "Chassis" of
// "#Chassis.v1_28_0.Chassis".
func typeName(odataType string) string {
	t := strings.TrimPrefix(odataType, "#")
	if i := strings.IndexByte(t, '.'); i >= 0 {
		t = t[:i]
	}
	return t
}

// isRef reports whether an object is a reference: an @odata.id and
// nothing but annotations.
func isRef(o map[string]any) bool {
	if _, ok := o["@odata.id"]; !ok {
		return false
	}
	for k := range o {
		if !strings.HasPrefix(k, "@") {
			return false
		}
	}
	return true
}

// visitRefs calls f with every reference in v and its JSON pointer.
func visitRefs(v any, ptr string, f func(ptr string, ref any)) {
	switch x := v.(type) {
	case map[string]any:
		if isRef(x) && ptr != "" {
			f(ptr+"/@odata.id", x["@odata.id"])
			return
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			visitRefs(x[k], ptr+"/"+escapePointer(k), f)
		}
	case []any:
		for i, e := range x {
			visitRefs(e, ptr+"/"+strconv.Itoa(i), f)
		}
	}
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// pointer resolves a JSON pointer (RFC 6901) in v.
func pointer(v any, ptr string) (any, bool) {
	if ptr == "" {
		return v, true
	}
	if !strings.HasPrefix(ptr, "/") {
		return nil, false
	}
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[tok]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// decode parses a document; a syntax error says where (line and column
// from 1; 0 when the error has no position).
func decode(b []byte) (v any, line, col int, err error) {
	err = json.Unmarshal(b, &v)
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line, col = lineCol(b, se.Offset)
		return nil, line, col, fmt.Errorf("JSON does not parse: %v", se)
	}
	if err != nil {
		return nil, 0, 0, fmt.Errorf("JSON does not parse: %w", err)
	}
	return v, 0, 0, nil
}

func lineCol(b []byte, off int64) (int, int) {
	line, col := 1, 1
	for i := int64(0); i < off-1 && i < int64(len(b)); i++ {
		if b[i] == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return line, col
}
