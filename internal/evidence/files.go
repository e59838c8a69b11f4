package evidence

import (
	"crypto/sha256"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// NotRegularError is a bundle path that is not a regular file: a FIFO,
// a link, a device or a directory where a file belongs. A bundle holds
// regular files only; nothing else is opened for reading.
type NotRegularError struct {
	Name string
	Mode fs.FileMode
}

func (e *NotRegularError) Error() string {
	return fmt.Sprintf("%s is not a regular file (%s): a bundle holds regular files only", e.Name, kindOf(e.Mode))
}

func kindOf(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m.IsDir():
		return "a directory"
	}
	return m.Type().String()
}

// openRegular opens a bundle file for reading, refusing anything but a
// regular file before reading a byte (a FIFO would block a reader for
// ever, a link could point anywhere).
func openRegular(dir, name string) (*os.File, int64, error) {
	path := filepath.Join(dir, filepath.FromSlash(name))
	if st, err := os.Lstat(path); err != nil {
		return nil, 0, err
	} else if !st.Mode().IsRegular() {
		return nil, 0, &NotRegularError{name, st.Mode()}
	}
	f, err := os.OpenFile(path, openFlags, 0)
	if err != nil {
		return nil, 0, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, 0, &NotRegularError{name, st.Mode()}
	}
	return f, st.Size(), nil
}

// readRegular reads a whole bundle file of at most limit bytes.
func readRegular(dir, name string, limit int64) ([]byte, error) {
	f, size, err := openRegular(dir, name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if size > limit {
		return nil, fmt.Errorf("%s is %d bytes, more than the %d a bundle's %s may be", name, size, limit, name)
	}
	return io.ReadAll(io.LimitReader(f, limit+1))
}

// fileDigest is "sha256:<hex>" of a bundle file, read as a regular file.
func fileDigest(dir, name string) (string, error) {
	f, _, err := openRegular(dir, name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	return digestOf(h), nil
}

func digestOf(h hash.Hash) string { return fmt.Sprintf("sha256:%x", h.Sum(nil)) }

// Digest is "sha256:<hex>" of b.
func Digest(b []byte) string { return hashOf(b) }

// checkName refuses a file name that would leave the bundle or hide in
// it: absolute, "..", a directory other than attachments/.
func checkName(name string) error {
	clean := filepath.ToSlash(filepath.Clean(name))
	switch {
	case name == "" || clean != name || strings.HasPrefix(name, "/") || strings.Contains(name, "\\"):
		return fmt.Errorf("file name %q: not a plain name inside the bundle", name)
	case strings.HasPrefix(name, "../") || name == "..":
		return fmt.Errorf("file name %q leaves the bundle", name)
	}
	dir, base, nested := strings.Cut(name, "/")
	if nested && (dir != AttachDir || strings.Contains(base, "/") || base == "") {
		return fmt.Errorf("file name %q: only %s/ may hold files", name, AttachDir)
	}
	if !nested && reserved[name] {
		return fmt.Errorf("file name %q is the bundle's own", name)
	}
	return nil
}

// reserved are the files the evidence package writes itself.
var reserved = map[string]bool{JournalFile: true, SamplesFile: true, ManifestFile: true, SignatureFile: true}
