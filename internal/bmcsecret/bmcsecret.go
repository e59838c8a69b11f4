// Package bmcsecret holds a site's BMC secrets file: each BMC's account
// and its active secret, and during a rotation its pending one. A
// binding names the file (bmcs: secrets:), never a secret; every seam
// client of a BMC logs in with the active secret, then the pending one.
// docs/bmc-credentials.md describes the format.
package bmcsecret

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Format is the secrets file's format field.
const Format = "seam.bmc-secrets/v1"

// Any is the entry for every BMC the file does not name.
const Any = "*"

// Which a credential is: the one in use, or the one a rotation is
// putting in place.
const (
	Active  = "active"
	Pending = "pending"
)

// Entry is one BMC's account.
type Entry struct {
	User    string `json:"user"`
	Active  string `json:"active"`
	Pending string `json:"pending,omitempty"`
	// Standby is the BMC's second service account (the two-account
	// scheme of sat bmc rotate): the one not in use, whose secret the
	// site does not keep.
	Standby string `json:"standby,omitempty"`
	// Rotated is when sat bmc rotate put the active secret in place.
	Rotated time.Time `json:"rotated,omitzero"`
}

// Rotation is a rotation under way (sat bmc rotate): when it started
// and who ran it. It stays in the file until every BMC it covers is
// rotated, so that a run stopped half-way is continued by the next.
type Rotation struct {
	Started time.Time `json:"started"`
	By      string    `json:"by"`
}

// File is a secrets file as read (or to be written).
type File struct {
	Path     string
	Mode     fs.FileMode      // kept when the file is written again
	BMCs     map[string]Entry // by BMC name; Any for the others
	Rotation *Rotation        // a rotation under way; nil: none
}

// Credential is a login to try: a BMC's user and one of its secrets.
// It prints without its secret.
type Credential struct {
	User, Secret string
	Which        string // Active or Pending
}

// String names the credential, never its secret.
func (c Credential) String() string { return c.User + " (" + c.Which + " secret)" }

// GoString keeps the secret out of %#v too.
func (c Credential) GoString() string { return "bmcsecret.Credential{" + c.String() + "}" }

type fileJSON struct {
	Format   string           `json:"format"`
	Rotation *Rotation        `json:"rotation,omitempty"`
	BMCs     map[string]Entry `json:"bmcs"`
}

// Load reads a secrets file. It refuses one that others than its owner
// can read, and names the file (and line) of anything wrong.
func Load(path string) (*File, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("BMC secrets file: %w", err)
	}
	if info.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("BMC secrets file %s: mode %04o lets others than its owner read it: chmod 600 %s", path, info.Mode().Perm(), path)
	}
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("BMC secrets file: %w", err)
	}
	f, err := Parse(src)
	if err != nil {
		return nil, fmt.Errorf("BMC secrets file %s%w", path, err)
	}
	f.Path, f.Mode = path, info.Mode().Perm()
	return f, nil
}

// Parse reads a secrets file's bytes; an error begins with ":LINE: "
// or ": " for its file's name to go before it.
func Parse(src []byte) (*File, error) {
	dec := json.NewDecoder(bytes.NewReader(src))
	dec.DisallowUnknownFields()
	var j fileJSON
	if err := dec.Decode(&j); err != nil {
		return nil, fmt.Errorf("%s: not a secrets file: %v", lineOf(src, err), err)
	}
	if j.Format != Format {
		return nil, fmt.Errorf(": format is %q, want %q", j.Format, Format)
	}
	if len(j.BMCs) == 0 {
		return nil, fmt.Errorf(`: no BMCs: write "bmcs": {"NAME": {"user": …, "active": …}}`)
	}
	var errs []string
	for _, name := range slices.Sorted(maps.Keys(j.BMCs)) {
		e := j.BMCs[name]
		if e.User == "" || e.Active == "" {
			errs = append(errs, fmt.Sprintf("BMC %s: give its user and active secret", name))
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf(": %s", strings.Join(errs, "; "))
	}
	return &File{Mode: 0o600, BMCs: j.BMCs, Rotation: j.Rotation}, nil
}

// lineOf is ":LINE" of a JSON decoding error, or "" when it has no
// offset.
func lineOf(src []byte, err error) string {
	var off int64 = -1
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
	}
	if off < 0 || off > int64(len(src)) {
		return ""
	}
	return fmt.Sprintf(":%d", bytes.Count(src[:off], []byte("\n"))+1)
}

// Entry is the account of the BMC called name: its own entry, else the
// file's Any entry.
func (f *File) Entry(name string) (Entry, error) {
	e, ok := f.BMCs[name]
	if !ok {
		e, ok = f.BMCs[Any]
	}
	if !ok {
		return Entry{}, fmt.Errorf("BMC %s has no entry in the secrets file %s (and it has no %q entry): add one", name, f.Path, Any)
	}
	return e, nil
}

// For is the credentials to try on the BMC called name: its active
// secret, then its pending one when a rotation left one.
func (f *File) For(name string) ([]Credential, error) {
	e, err := f.Entry(name)
	if err != nil {
		return nil, err
	}
	out := []Credential{{User: e.User, Secret: e.Active, Which: Active}}
	if e.Pending != "" && e.Pending != e.Active {
		out = append(out, Credential{User: e.User, Secret: e.Pending, Which: Pending})
	}
	return out, nil
}

// Save writes the file whole: to a temporary file beside it with the
// file's mode, synced, then renamed over it, so that a reader (or a
// crash) sees the old file or the new one, never half of either.
func (f *File) Save() error {
	if err := f.save(); err != nil {
		return fmt.Errorf("BMC secrets file %s: %w", f.Path, err)
	}
	return nil
}

func (f *File) save() error {
	b, err := json.MarshalIndent(fileJSON{Format: Format, Rotation: f.Rotation, BMCs: f.BMCs}, "", "  ")
	if err != nil {
		return err
	}
	mode := f.Mode
	if mode == 0 {
		mode = 0o600
	}
	tmp, err := os.CreateTemp(filepath.Dir(f.Path), "."+filepath.Base(f.Path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	err = tmp.Chmod(mode)
	if err == nil {
		_, err = tmp.Write(append(b, '\n'))
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), f.Path)
	}
	if err != nil {
		return err
	}
	return syncDir(filepath.Dir(f.Path))
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
