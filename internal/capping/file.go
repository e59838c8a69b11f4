package capping

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
)

// Format is the caps file's format name (docs/capping.md).
const Format = "seam.caps/v1"

// File is a caps file: what contractc budget --cap writes and sat cap
// apply reads.
type File struct {
	Format string `json:"format"`
	Site   string `json:"site"`
	Target string `json:"target"`
	// Limit is the limit that binds once capped.
	Limit string `json:"limit"`
	Caps  []Cap  `json:"caps"`
}

// FileOf is a plan's caps file.
func FileOf(site string, p *Plan) File {
	return File{Format: Format, Site: site, Target: p.Target, Limit: p.Binding, Caps: p.Caps}
}

// Marshal writes the file: indented JSON with a final newline.
func (f File) Marshal() []byte {
	if f.Caps == nil {
		f.Caps = []Cap{}
	}
	b, _ := json.MarshalIndent(f, "", "  ")
	return append(b, '\n')
}

// ReadFile reads and checks a caps file: its format, and each cap's
// node, BMC and watts (above 0, within its own range when it states
// one); errors name the file and the cap.
func ReadFile(path string) (*File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, b)
}

// Parse is ReadFile of bytes read from path.
func Parse(path string, b []byte) (*File, error) {
	var f File
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			return nil, fmt.Errorf("%s:%d: %w: write the caps file contractc budget --cap writes", path, line(b, se.Offset), err)
		case errors.As(err, &te):
			return nil, fmt.Errorf("%s:%d: %w", path, line(b, te.Offset), err)
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if f.Format != Format {
		return nil, fmt.Errorf("%s: format %q, want %q: write it with contractc budget DIR --cap TARGET --caps-out FILE", path, f.Format, Format)
	}
	seen := map[string]bool{}
	var errs []error
	for i, c := range f.Caps {
		at := fmt.Sprintf("%s: caps[%d] (node %s)", path, i, c.Node)
		switch {
		case c.Node == "":
			errs = append(errs, fmt.Errorf("%s: no node: every cap names its node", at))
		case c.BMC == "":
			errs = append(errs, fmt.Errorf("%s: no bmc: every cap names the BMC to write it to", at))
		case seen[c.Node]:
			errs = append(errs, fmt.Errorf("%s: a second cap for the node: keep one", at))
		case !(c.Watts > 0) || math.IsInf(c.Watts, 0):
			errs = append(errs, fmt.Errorf("%s: watts %v: want a cap above 0 W", at, c.Watts))
		case c.MaxW > 0 && (c.Watts < c.MinW || c.Watts > c.MaxW):
			errs = append(errs, fmt.Errorf("%s: %.0f W is outside the node's range %.0f..%.0f W", at, c.Watts, c.MinW, c.MaxW))
		}
		seen[c.Node] = true
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &f, nil
}

func line(b []byte, off int64) int {
	return bytes.Count(b[:min(int(off), len(b))], []byte("\n")) + 1
}
