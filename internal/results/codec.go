package results

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

//go:embed results.schema.json
var schemaJSON []byte

// SchemaURL is the results schema's $id.
const SchemaURL = "https://seam.dev/schema/results/v1.json"

var compiled = sync.OnceValues(func() (*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	c.AssertFormat = true
	if err := c.AddResource(SchemaURL, bytes.NewReader(schemaJSON)); err != nil {
		return nil, err
	}
	return c.Compile(SchemaURL)
})

// Encode returns results.json: indented JSON, validated against the
// schema, that decodes back to the same bytes.
func Encode(r *Results) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return nil, fmt.Errorf("results: %w", err)
	}
	if _, err := Decode(buf.Bytes()); err != nil {
		return nil, fmt.Errorf("results: what was written does not read back: %w", err)
	}
	return buf.Bytes(), nil
}

// Decode reads results strictly: the schema, no unknown fields, the
// format version.
func Decode(b []byte) (*Results, error) {
	var doc any
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("results: %w", err)
	}
	if m, ok := doc.(map[string]any); !ok || m["format"] != Format {
		return nil, fmt.Errorf("results: not %s results (format %v)", Format, formatOf(doc))
	}
	s, err := compiled()
	if err != nil {
		return nil, fmt.Errorf("results schema: %w", err)
	}
	if err := s.Validate(doc); err != nil {
		return nil, schemaError(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var r Results
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("results: %w", err)
	}
	return &r, nil
}

func formatOf(doc any) any {
	if m, ok := doc.(map[string]any); ok && m["format"] != nil {
		return m["format"]
	}
	return "missing"
}

// Read reads and decodes the results file at path.
func Read(path string) (*Results, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	r, err := Decode(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

// schemaError lists each failing leaf with its JSON pointer.
func schemaError(err error) error {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return fmt.Errorf("results schema: %w", err)
	}
	var lines []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			lines = append(lines, fmt.Sprintf("at %s: %s", cmpOr(e.InstanceLocation, "/"), e.Message))
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	if len(lines) > 10 {
		lines = append(lines[:10], fmt.Sprintf("and %d more", len(lines)-10))
	}
	return fmt.Errorf("results do not match the results schema:\n  %s", strings.Join(lines, "\n  "))
}

func cmpOr(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}
