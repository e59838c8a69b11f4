package record

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/crypto/ssh"

	"github.com/seamdc/seam/internal/atomicfile"
)

// Encode is the record as record.json holds it: indented, in Build's
// order (modules, bundles and issues sorted), times in UTC, so the same
// log gives the same bytes.
func Encode(r *Record) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	return buf.Bytes(), nil
}

// Decode reads a record strictly: no field it does not know, and only
// of this format.
func Decode(raw []byte) (*Record, error) {
	var r Record
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("not a handover record: %w", err)
	}
	if r.Format != Format {
		return nil, fmt.Errorf("a record of format %q, not %q (what sat record writes)", r.Format, Format)
	}
	return &r, nil
}

// Path is the record.json of path: path itself when it is a file, else
// the one in it.
func Path(path string) string {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return filepath.Join(path, JSONFile)
	}
	return path
}

// Read reads the record at path (its directory or record.json) and
// returns it with record.json's exact bytes, which its signature covers.
func Read(path string) (*Record, []byte, error) {
	file := Path(path)
	raw, err := os.ReadFile(file)
	if err != nil {
		return nil, nil, fmt.Errorf("handover record: %w", err)
	}
	r, err := Decode(raw)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", file, err)
	}
	return r, raw, nil
}

// Written is a file Write wrote.
type Written struct {
	Path string
	Size int
}

// Write writes record.json and record.html into dir, each whole or not
// at all, and with signer record.json.sig; without one, it removes a
// signature left from an earlier record there (it would not match).
func Write(dir string, r *Record, signer ssh.Signer) ([]Written, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("handover record: %w", err)
	}
	raw, err := Encode(r)
	if err != nil {
		return nil, err
	}
	var page bytes.Buffer
	if err := HTML(&page, r); err != nil {
		return nil, err
	}
	files := []struct {
		name string
		b    []byte
	}{{JSONFile, raw}, {HTMLFile, page.Bytes()}}
	if signer != nil {
		sig, err := Sign(raw, signer)
		if err != nil {
			return nil, err
		}
		files = append(files, struct {
			name string
			b    []byte
		}{SigFile, sig})
	} else if err := os.Remove(filepath.Join(dir, SigFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("handover record: an earlier signature: %w", err)
	}
	var out []Written
	for _, f := range files {
		p := filepath.Join(dir, f.name)
		if err := atomicfile.Write(p, f.b, 0o644); err != nil {
			return out, err
		}
		out = append(out, Written{Path: p, Size: len(f.b)})
	}
	return out, nil
}
