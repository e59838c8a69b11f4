package recorded

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/seamdc/seam/internal/burnin"
)

// Format is the manifest's format.
const Format = "seam.burnin.recorded/v1"

// ManifestFile is the manifest's name in the recorded directory.
const ManifestFile = "manifest.json"

// Kinds of recorded output: the tool that printed it.
const (
	KindDCGM = "dcgm" // dcgmi diag -r N -j
	KindSMI  = "smi"  // nvidia-smi --query-gpu=… --format=csv
	KindNCCL = "nccl" // all_reduce_perf (nccl-tests, rccl-tests)
)

// Steps of the ladder an output may belong to: the job steps of
// burnin.Run.
const (
	StepDiag      = "diag"
	StepTelemetry = "telemetry"
	StepSingle    = burnin.ScopeSingle
	StepPair      = burnin.ScopePair
	StepRack      = burnin.ScopeRack
	StepModule    = burnin.ScopeModule
	StepBisect    = "bisect"
)

// step is what a step's output is: its kind and how many nodes it
// ran on (max 0: any number).
type step struct {
	kind     string
	min, max int
}

var steps = map[string]step{
	StepDiag:      {KindDCGM, 1, 1},
	StepTelemetry: {KindSMI, 1, 1},
	StepSingle:    {KindNCCL, 1, 1},
	StepPair:      {KindNCCL, 2, 2},
	StepRack:      {KindNCCL, 2, 0},
	StepModule:    {KindNCCL, 2, 0},
	StepBisect:    {KindNCCL, 1, 0},
}

// Manifest lists a site's recorded burn-in outputs (DIR/manifest.json).
type Manifest struct {
	Format  string  `json:"format"`
	Entries []Entry `json:"entries"`
}

// Entry is one recorded output: the file (relative to the manifest's
// directory), the ladder step it belongs to, the nodes it ran on (names
// or Slurm host lists such as gpu-a-r01-n[01-18], in rank order), the
// tool's kind (optional: the step implies it) and its exit code.
type Entry struct {
	File  string   `json:"file"`
	Step  string   `json:"step"`
	Nodes []string `json:"nodes"`
	Kind  string   `json:"kind,omitempty"`
	Exit  int      `json:"exit,omitempty"`
	// Line is where the entry starts in the manifest.
	Line int `json:"-"`
}

// readManifest reads and decodes the manifest at path; an error names
// path and line.
func readManifest(path string) (*Manifest, []byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("the manifest: %w", err)
	}
	m, err := decodeManifest(path, data)
	if err != nil {
		return nil, nil, err
	}
	if m.Format != Format {
		return nil, nil, fmt.Errorf("%s: format %q, want %q", path, m.Format, Format)
	}
	return m, data, nil
}

// decodeManifest decodes data strictly (an unknown key is an error),
// keeping the line each entry starts on.
func decodeManifest(path string, data []byte) (*Manifest, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	m := &Manifest{}
	fail := func(at int64, err error) error {
		return fmt.Errorf("%s:%d: %w", path, lineAt(data, jsonOffset(err, at, data)), err)
	}
	if err := expect(dec, json.Delim('{')); err != nil {
		return nil, fail(dec.InputOffset(), err)
	}
	for dec.More() {
		at := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return nil, fail(at, err)
		}
		switch tok {
		case "format":
			err = dec.Decode(&m.Format)
		case "entries":
			at, err = m.decodeEntries(dec, data)
		default:
			err = fmt.Errorf("unknown key %v (a manifest has format and entries)", tok)
		}
		if err != nil {
			return nil, fail(at, err)
		}
	}
	if err := expect(dec, json.Delim('}')); err != nil {
		return nil, fail(dec.InputOffset(), err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fail(dec.InputOffset(), errors.New("more after the manifest's closing brace"))
	}
	return m, nil
}

// decodeEntries decodes the entries array; on an error it returns the
// offset of the entry it was in.
func (m *Manifest) decodeEntries(dec *json.Decoder, data []byte) (int64, error) {
	if err := expect(dec, json.Delim('[')); err != nil {
		return dec.InputOffset(), err
	}
	line, counted := 1, int64(0) // the line at offset counted
	for dec.More() {
		start := skipSpace(data, dec.InputOffset())
		var e Entry
		if err := dec.Decode(&e); err != nil {
			return start, fmt.Errorf("entry %d: %w", len(m.Entries)+1, err)
		}
		line += bytes.Count(data[counted:start], []byte("\n"))
		e.Line, counted = line, start
		m.Entries = append(m.Entries, e)
	}
	return dec.InputOffset(), expect(dec, json.Delim(']'))
}

func expect(dec *json.Decoder, want json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok != want {
		return fmt.Errorf("%v where %v belongs", tok, want)
	}
	return nil
}

// jsonOffset is where a JSON error is: a syntax error's own offset,
// the last byte for JSON cut short, else at.
func jsonOffset(err error, at int64, data []byte) int64 {
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		return se.Offset
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return int64(len(bytes.TrimRight(data, " \t\r\n")))
	}
	return at
}

// skipSpace skips white space and a comma from off.
func skipSpace(data []byte, off int64) int64 {
	for off < int64(len(data)) && bytes.IndexByte([]byte(" \t\r\n,"), data[off]) >= 0 {
		off++
	}
	return off
}

// lineAt is the line of byte offset off.
func lineAt(data []byte, off int64) int {
	off = min(max(off, 0), int64(len(data)))
	return 1 + bytes.Count(data[:off], []byte("\n"))
}
