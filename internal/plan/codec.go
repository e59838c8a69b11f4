package plan

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

//go:embed plan.schema.json
var schemaJSON []byte

// SchemaURL is the plan schema's $id.
const SchemaURL = "https://seam.dev/schema/plan/v1.json"

// Schema returns the plan's JSON Schema (draft 2020-12).
func Schema() []byte { return bytes.Clone(schemaJSON) }

// SchemaDigest is "sha256:<hex>" of the plan's JSON Schema.
func SchemaDigest() string {
	sum := sha256.Sum256(schemaJSON)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// schemas are the compiled plan schema and its case definition.
type schemas struct{ root, kase *jsonschema.Schema }

var compiled = sync.OnceValues(func() (schemas, error) {
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	if err := c.AddResource(SchemaURL, bytes.NewReader(schemaJSON)); err != nil {
		return schemas{}, err
	}
	root, err := c.Compile(SchemaURL)
	if err != nil {
		return schemas{}, err
	}
	kase, err := c.Compile(SchemaURL + "#/$defs/case")
	return schemas{root, kase}, err
})

// Encode returns the plan's bytes: canonical JSON (keys sorted, numbers
// in their shortest form, no HTML escaping) indented by two spaces, with
// a final newline. It fills p.Header.Digest with the plan's content
// digest (ContentDigest) and refuses a plan that Validate refuses.
//
// The plan is encoded once: the digest is taken over the bytes with an
// empty header digest, then written into them. What a reader's Decode
// adds to Validate (the JSON Schema, strict field names) is not checked
// here, as it costs more than the compile: the compiler's tests and
// fuzz target decode every plan they compile.
func Encode(p *Plan) ([]byte, error) {
	if err := Validate(p); err != nil {
		return nil, fmt.Errorf("plan: the compiled plan is not valid: %w", err)
	}
	q := *p
	q.Header.Digest = ""
	b, err := encode(&q)
	if err != nil {
		return nil, err
	}
	d := digestOf(b)
	out, err := withDigest(b, d)
	if err != nil {
		return nil, err
	}
	p.Header.Digest = d
	return out, nil
}

// withDigest writes d into the header's empty digest of b, an encoded
// plan: the top-level "header" object's own "digest" member, found by
// its indentation (two spaces for the plan's keys, four for the
// header's), so a digest elsewhere in the plan is never touched.
func withDigest(b []byte, d string) ([]byte, error) {
	h := bytes.Index(b, []byte("\n  \"header\": {\n"))
	if h < 0 {
		return nil, errors.New("plan: encoded plan has no header")
	}
	end := bytes.Index(b[h+1:], []byte("\n  }"))
	empty := []byte("\n    \"digest\": \"\"")
	i := bytes.Index(b[h:], empty)
	if end < 0 || i < 0 || i > end+1 {
		return nil, errors.New("plan: encoded header has no digest")
	}
	at := h + i + len(empty) - 1 // the closing quote of ""
	out := make([]byte, 0, len(b)+len(d))
	out = append(out, b[:at]...)
	out = append(out, d...)
	return append(out, b[at:]...), nil
}

func digestOf(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// ContentDigest is the sha256 of the plan's bytes as Encode writes them
// with Header.Digest empty: what Header.Digest must be.
func ContentDigest(p *Plan) (string, error) {
	q := *p
	q.Header.Digest = ""
	b, err := encode(&q)
	if err != nil {
		return "", err
	}
	return digestOf(b), nil
}

// CheckDigest refuses a plan whose content does not match its
// Header.Digest: a plan edited after contractc wrote it (or written by a
// tool that did not digest it).
func CheckDigest(p *Plan) error {
	d, err := ContentDigest(p)
	if err != nil {
		return err
	}
	if d != p.Header.Digest {
		return fmt.Errorf("its content digests to %s, but its header.digest says %s: the plan was edited after contractc wrote it (it says %q)", short(d), short(p.Header.Digest), Generated)
	}
	return nil
}

func short(d string) string {
	if len(d) > 19 {
		return d[:19] + "…"
	}
	return d
}

func encode(p *Plan) ([]byte, error) {
	// the struct fields are declared in JSON name order and maps are
	// written sorted, so this is canonical JSON, indented
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(p); err != nil {
		return nil, fmt.Errorf("plan: %w", err)
	}
	return indent(bytes.TrimSuffix(buf.Bytes(), []byte("\n"))), nil
}

// indent lays out b, compact JSON as encoding/json writes it, with two
// spaces a level and a newline at the end: the bytes an Encoder with
// SetIndent("", "  ") writes (TestIndentIsEncodingJSONs), in one pass
// that copies strings whole instead of stepping json's scanner through
// every byte, which cost a tenth of compiling a large site.
func indent(b []byte) []byte {
	out := make([]byte, 0, len(b)+len(b)/2)
	depth := 0
	newline := func() {
		out = append(out, '\n')
		for range depth {
			out = append(out, ' ', ' ')
		}
	}
	for i := 0; i < len(b); i++ {
		switch c := b[i]; c {
		case '"':
			j := i + 1
			for {
				k := bytes.IndexAny(b[j:], `"\`)
				j += k
				if b[j] == '"' {
					break
				}
				j += 2 // an escape and the byte it escapes
			}
			out = append(out, b[i:j+1]...)
			i = j
		case '{', '[':
			out = append(out, c)
			if i+1 < len(b) && (b[i+1] == '}' || b[i+1] == ']') {
				out = append(out, b[i+1])
				i++
				continue
			}
			depth++
			newline()
		case '}', ']':
			depth--
			newline()
			out = append(out, c)
		case ',':
			out = append(out, c)
			newline()
		case ':':
			out = append(out, ':', ' ')
		default:
			out = append(out, c)
		}
	}
	return append(out, '\n')
}

// Decode reads a plan strictly: JSON syntax, the format version, the
// schema, no unknown fields, and the references between cases, steps,
// checks, interlocks and load banks. The schema validation and the
// strict decoding run side by side.
func Decode(b []byte) (*Plan, error) {
	var doc any
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, syntaxError(b, err)
	}
	if err := checkFormat(doc); err != nil {
		return nil, err
	}
	var p Plan
	var decodeErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&p); err != nil {
			decodeErr = fmt.Errorf("plan: %w", err)
		} else if dec.More() {
			decodeErr = errors.New("plan: data after the plan object")
		}
	}()
	schemaErr := validateSchema(doc)
	<-done
	if schemaErr != nil {
		return nil, schemaErr
	}
	if decodeErr != nil {
		return nil, decodeErr
	}
	if err := Validate(&p); err != nil {
		return nil, err
	}
	return &p, nil
}

// validateSchema validates doc against the plan schema. A big plan is
// mostly cases, so the cases are validated against the case schema on
// every CPU, and the rest of the document against the root schema with
// no cases: the same verdict as one pass over the whole, faster.
func validateSchema(doc any) error {
	s, err := compiled()
	if err != nil {
		return fmt.Errorf("plan schema: %w", err)
	}
	root, _ := doc.(map[string]any)
	cases, ok := root["cases"].([]any)
	if !ok || len(cases) < 2 {
		if err := s.root.Validate(doc); err != nil {
			return schemaError(err, "")
		}
		return nil
	}
	rest := make(map[string]any, len(root))
	for k, v := range root {
		rest[k] = v
	}
	rest["cases"] = []any{}
	errs := make([]error, len(cases)+1)
	if err := s.root.Validate(rest); err != nil {
		errs[len(cases)] = schemaError(err, "")
	}
	var wg sync.WaitGroup
	next := make(chan int)
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for i := range next {
				if err := s.kase.Validate(cases[i]); err != nil {
					errs[i] = schemaError(err, fmt.Sprintf("/cases/%d", i))
				}
			}
		})
	}
	for i := range cases {
		next <- i
	}
	close(next)
	wg.Wait()
	return joinSchemaErrors(errs)
}

// checkFormat refuses a foreign or future plan before the schema can
// bury the reason under other errors.
func checkFormat(doc any) error {
	m, ok := doc.(map[string]any)
	if !ok {
		return errors.New("plan: not a JSON object")
	}
	h, _ := m["header"].(map[string]any)
	f, _ := h["format"].(string)
	if f != Format {
		if f == "" {
			return fmt.Errorf("plan: header.format is missing: not a seam plan (want %q)", Format)
		}
		return fmt.Errorf("plan: format %q, but this tool reads %q: recompile the plan with this version of contractc", f, Format)
	}
	in, _ := h["inputs"].(map[string]any)
	if _, ok := h["digest"]; h["generated"] != nil && (!ok || in["files"] == nil) {
		return errors.New("plan: it has no header.digest or inputs.files: an older contractc wrote it; recompile the plan with this version of contractc")
	}
	return nil
}

// Read reads and strictly decodes the plan file at path.
func Read(path string) (*Plan, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	p, err := Decode(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// syntaxError names the line and column of a JSON syntax error.
func syntaxError(b []byte, err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	off := int64(-1)
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
	}
	if off < 0 {
		return fmt.Errorf("plan: %w", err)
	}
	// the offset counts the bytes read, the offending one included
	line, col := 1, 1
	for _, c := range b[:min(max(int(off)-1, 0), len(b))] {
		if c == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return fmt.Errorf("plan: line %d, column %d: %w", line, col, err)
}

// schemaError flattens a validation error into one line per failing
// leaf, each naming the JSON pointer of the offending value (under
// prefix, for a part validated on its own).
func schemaError(err error, prefix string) error {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return fmt.Errorf("plan schema: %w", err)
	}
	var lines []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			loc := prefix + e.InstanceLocation
			if loc == "" {
				loc = "/"
			}
			lines = append(lines, fmt.Sprintf("at %s: %s", loc, e.Message))
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	return &SchemaError{Problems: lines}
}

// joinSchemaErrors merges the problems of the parts, keeping the first
// few.
func joinSchemaErrors(errs []error) error {
	var all []string
	for _, err := range errs {
		var se *SchemaError
		if errors.As(err, &se) {
			all = append(all, se.Problems...)
		} else if err != nil {
			return err
		}
	}
	if len(all) == 0 {
		return nil
	}
	if len(all) > maxErrors {
		all = append(all[:maxErrors], fmt.Sprintf("and %d more", len(all)-maxErrors))
	}
	return &SchemaError{Problems: all}
}

// SchemaError lists where a document breaks the plan schema.
type SchemaError struct{ Problems []string }

func (e *SchemaError) Error() string {
	return "plan does not match the plan schema:\n  " + strings.Join(e.Problems, "\n  ")
}
