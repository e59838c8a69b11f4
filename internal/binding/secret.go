package binding

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/seamdc/seam/internal/diag"
)

// Secret is a reference to a credential: "env:NAME" or "file:PATH". The
// credential itself is read only when a device is opened, by Resolve.
type Secret struct {
	Ref  string   // as written
	What string   // what it is for, e.g. "community of device pdu-p1-b"
	Dir  string   // the binding directory, for relative file paths
	Pos  diag.Pos // where it was written
}

// IsSet reports whether a reference was written.
func (s Secret) IsSet() bool { return s.Ref != "" }

// valid reports whether Ref has the form of a reference.
func (s Secret) valid() bool {
	kind, rest, ok := strings.Cut(s.Ref, ":")
	return ok && rest != "" && (kind == "env" || kind == "file")
}

// Resolve reads the credential. lookup is os.LookupEnv in production.
func (s Secret) Resolve(lookup func(string) (string, bool)) (string, error) {
	kind, rest, _ := strings.Cut(s.Ref, ":")
	switch {
	case !s.valid():
		return "", fmt.Errorf("%s: %q is not a reference: write env:NAME or file:PATH", s.What, s.Ref)
	case kind == "env":
		v, ok := lookup(rest)
		if !ok {
			return "", fmt.Errorf("%s: environment variable %s is not set", s.What, rest)
		}
		return v, nil
	}
	path := rest
	if !filepath.IsAbs(path) {
		path = filepath.Join(s.Dir, path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return "", fmt.Errorf("%s: reading %s: %w", s.What, path, err)
	}
	return strings.TrimRight(string(b), "\r\n"), nil
}
