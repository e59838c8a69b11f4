package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// FileDigests hashes the contract files of dir as a plan records them
// (Inputs.Files): every .cue file directly in dir, which is what the
// contract loader reads, and the CUE module file (cue.mod/module.cue,
// in dir or the nearest parent), whose language version changes what
// they mean. Paths are relative to dir, with forward slashes. Only
// regular files are read.
func FileDigests(dir string) (map[string]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("contract directory: %w", err)
	}
	out := map[string]string{}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".cue") {
			continue
		}
		d, err := fileDigest(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		out[e.Name()] = d
	}
	if mod := moduleFile(dir); mod != "" {
		d, err := fileDigest(mod)
		if err != nil {
			return nil, err
		}
		rel, err := filepath.Rel(dir, mod)
		if err != nil {
			return nil, err
		}
		out[filepath.ToSlash(rel)] = d
	}
	return out, nil
}

// moduleFile is the nearest cue.mod/module.cue at or above dir.
func moduleFile(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return ""
	}
	for d := abs; ; d = filepath.Dir(d) {
		name := filepath.Join(d, "cue.mod", "module.cue")
		if st, err := os.Stat(name); err == nil && st.Mode().IsRegular() {
			if d == abs {
				return filepath.Join(dir, "cue.mod", "module.cue")
			}
			return name
		}
		if filepath.Dir(d) == d {
			return ""
		}
	}
}

func fileDigest(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", err
	}
	if !st.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file", path)
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// FileChanges names every contract file whose digest differs between a
// plan's inputs (was) and the files now (now): changed, added, removed.
func FileChanges(was, now map[string]string) []string {
	names := map[string]bool{}
	for n := range was {
		names[n] = true
	}
	for n := range now {
		names[n] = true
	}
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)
	var out []string
	for _, n := range sorted {
		a, inPlan := was[n]
		b, inDir := now[n]
		switch {
		case !inDir:
			out = append(out, fmt.Sprintf("contract file %s was removed since the plan was compiled", n))
		case !inPlan:
			out = append(out, fmt.Sprintf("contract file %s is new since the plan was compiled", n))
		case a != b:
			out = append(out, fmt.Sprintf("contract file %s changed since the plan was compiled (%s, now %s)", n, short(a), short(b)))
		}
	}
	return out
}
