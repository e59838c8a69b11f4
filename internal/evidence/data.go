package evidence

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/seamdc/seam/internal/canon/canonjson"
)

// A record's data has one form, as the rest of its line has: the
// canonical JSON of internal/canon/canonjson (keys sorted, each once,
// numbers in their shortest round-trip form, no insignificant
// whitespace), with the characters encoding/json escapes for HTML
// escaped, as everywhere else in the line. The writer writes it so whatever the Go value's
// field order; the reader refuses any other form. Without that, an edit
// that recomputes the chain could give one record two meanings: with
// "outcome" twice, encoding/json reads the last.

// canonicalData is the form sat writes raw in, in a journal line.
func canonicalData(raw []byte) ([]byte, error) {
	c, err := canonjson.Bytes(raw)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	json.HTMLEscape(&buf, c)
	return buf.Bytes(), nil
}

// marshalData is a record's data: data as JSON, in the canonical form.
// A number the canonical form cannot hold exactly (an integer beyond
// 2^53) is refused rather than changed.
func marshalData(data any) (json.RawMessage, error) {
	raw, err := json.Marshal(data)
	if err != nil {
		return nil, err
	}
	if fault := dataFault(raw, true); fault != "" {
		return nil, errors.New(fault)
	}
	return canonicalData(raw)
}

// checkData says what keeps raw, a record's data as read, from the
// form sat writes.
func checkData(raw []byte) error {
	want, err := canonicalData(raw)
	if err != nil {
		return fmt.Errorf("not JSON that sat writes: %w", err)
	}
	if bytes.Equal(want, raw) {
		return nil
	}
	if fault := dataFault(raw, false); fault != "" {
		return errors.New(fault)
	}
	if len(want) > 120 {
		want = append(want[:120:120], "…"...)
	}
	return fmt.Errorf("a string is escaped otherwise than sat escapes it (sat writes %s)", want)
}

// frame is an object or array dataFault is inside.
type frame struct {
	obj     bool
	wantKey bool            // obj: the next token is a key
	key     string          // obj: the last key
	seen    map[string]bool // obj: its keys so far
	i       int             // array: the index of the next value
}

// dataFault walks raw and names the first key or number that is not in
// the canonical form: a key twice, a key out of order (unless writing:
// encoding/json writes a struct's fields in their order, which
// canonicalData sorts) or a number written otherwise; "" when none is.
func dataFault(raw []byte, writing bool) string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var stack []*frame
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return ""
		}
		if err != nil {
			return "not JSON: " + err.Error()
		}
		n := len(stack)
		if n > 0 && stack[n-1].obj && stack[n-1].wantKey {
			top := stack[n-1]
			k, ok := tok.(string)
			if !ok { // the object's closing brace
				stack = valueDone(stack[:n-1])
				continue
			}
			switch {
			case top.seen[k]:
				return fmt.Sprintf("key %q twice%s", k, in(stack[:n-1]))
			case !writing && len(top.seen) > 0 && k < top.key:
				return fmt.Sprintf("key %q after %q%s: keys are sorted", k, top.key, in(stack[:n-1]))
			}
			top.seen[k], top.key, top.wantKey = true, k, false
			continue
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{':
				stack = append(stack, &frame{obj: true, wantKey: true, seen: map[string]bool{}})
			case '[':
				stack = append(stack, &frame{})
			default: // ']': a '}' comes where a key would
				stack = valueDone(stack[:n-1])
			}
			continue
		case json.Number:
			if fault := numberFault(string(t), where(stack), writing); fault != "" {
				return fault
			}
		}
		stack = valueDone(stack)
	}
}

// numberFault says why the number text s at where is not canonical.
func numberFault(s, where string, writing bool) string {
	c, err := canonjson.Bytes([]byte(s))
	switch {
	case err != nil:
		return fmt.Sprintf("number %s at %s: %v", s, where, err)
	case string(c) == s:
		return ""
	case writing:
		return fmt.Sprintf("number %s at %s cannot be written exactly in the canonical form, which would write %s", s, where, c)
	}
	return fmt.Sprintf("number %s at %s is %s in canonical form", s, where, c)
}

// valueDone moves the innermost frame past a value.
func valueDone(stack []*frame) []*frame {
	if n := len(stack); n > 0 {
		if top := stack[n-1]; top.obj {
			top.wantKey = true
		} else {
			top.i++
		}
	}
	return stack
}

// where names where the walk is: result.checks[0].measured.
func where(stack []*frame) string {
	var b []byte
	for _, f := range stack {
		if !f.obj {
			b = append(append(append(b, '['), strconv.Itoa(f.i)...), ']')
			continue
		}
		if len(b) > 0 {
			b = append(b, '.')
		}
		b = append(b, f.key...)
	}
	if len(b) == 0 {
		return "the top"
	}
	return string(b)
}

func in(stack []*frame) string {
	if len(stack) == 0 {
		return ""
	}
	return " in " + where(stack)
}
