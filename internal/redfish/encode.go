package redfish

import (
	"encoding/json"
	"slices"
	"strconv"
	"unicode/utf8"
)

// appendJSON writes v as indented JSON (four spaces, as DMTF's mockups
// are written), object keys sorted: the export's canonical form. v holds
// what the export builds: objects, arrays, strings, integers, booleans.
func appendJSON(b []byte, v any, depth int) []byte {
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 0 {
			return append(b, "{}"...)
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = newline(b, depth+1)
			b = appendString(b, k)
			b = append(b, ": "...)
			b = appendJSON(b, x[k], depth+1)
		}
		return append(newline(b, depth), '}')
	case []any:
		if len(x) == 0 {
			return append(b, "[]"...)
		}
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = newline(b, depth+1)
			b = appendJSON(b, e, depth+1)
		}
		return append(newline(b, depth), ']')
	case string:
		return appendString(b, x)
	case int:
		return strconv.AppendInt(b, int64(x), 10)
	case int64:
		return strconv.AppendInt(b, x, 10)
	case bool:
		return strconv.AppendBool(b, x)
	case nil:
		return append(b, "null"...)
	}
	j, err := json.Marshal(v) // nothing else is built; kept correct all the same
	if err != nil {
		return append(b, "null"...)
	}
	return append(b, j...)
}

func newline(b []byte, depth int) []byte {
	b = append(b, '\n')
	for range depth {
		b = append(b, "    "...)
	}
	return b
}

const hex = "0123456789abcdef"

// appendString writes a JSON string, escaping what JSON must (and, as
// encoding/json does, invalid UTF-8 and U+2028/U+2029), nothing for HTML.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}
