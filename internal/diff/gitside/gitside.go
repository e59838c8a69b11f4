// Package gitside reads a contract directory as it is at a git revision,
// straight from the repository's objects (git archive), so that CI can
// diff a pull request against its base without a second checkout.
package gitside

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
)

// Range is what --git names: Old and New revisions; New is "" for the
// working tree.
type Range struct{ Old, New string }

// ParseRange reads "REV" (REV against the working tree), "A..B" or
// "A...B" (the merge base of A and B against B, as a pull request shows).
func ParseRange(ctx context.Context, dir, s string) (Range, error) {
	if s == "" {
		return Range{}, fmt.Errorf("--git: empty revision")
	}
	if a, b, ok := strings.Cut(s, "..."); ok {
		if a == "" || b == "" {
			return Range{}, fmt.Errorf("--git %q: want A...B", s)
		}
		base, err := git(ctx, dir, nil, "merge-base", a, b)
		if err != nil {
			return Range{}, fmt.Errorf("--git %q: no merge base: %w", s, err)
		}
		return Range{Old: strings.TrimSpace(string(base)), New: b}, nil
	}
	if a, b, ok := strings.Cut(s, ".."); ok {
		if a == "" || b == "" {
			return Range{}, fmt.Errorf("--git %q: want A..B", s)
		}
		return Range{Old: a, New: b}, nil
	}
	return Range{Old: s}, nil
}

// Locate returns the repository's top directory and dir's path inside it
// (slash-separated, "." for the top).
func Locate(ctx context.Context, dir string) (top, rel string, err error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", "", err
	}
	start := abs
	for {
		if st, err := os.Stat(start); err == nil && st.IsDir() {
			break
		}
		if filepath.Dir(start) == start {
			return "", "", fmt.Errorf("%s: no such directory", dir)
		}
		start = filepath.Dir(start)
	}
	out, err := git(ctx, start, nil, "rev-parse", "--show-toplevel")
	if err != nil {
		return "", "", fmt.Errorf("%s is not inside a git repository: %w", dir, err)
	}
	top = strings.TrimSpace(string(out))
	realTop, err1 := filepath.EvalSymlinks(top)
	realStart, err2 := filepath.EvalSymlinks(start)
	if err1 != nil || err2 != nil {
		return "", "", fmt.Errorf("%s: %w", dir, errors.Join(err1, err2))
	}
	r, err := filepath.Rel(realTop, filepath.Join(realStart, strings.TrimPrefix(abs, start)))
	if err != nil || strings.HasPrefix(r, "..") {
		return "", "", fmt.Errorf("%s lies outside the repository at %s", dir, top)
	}
	return top, filepath.ToSlash(r), nil
}

// Export writes the directory rel of the repository at top, as it is at
// rev, under dst, with the cue.mod of its CUE module (which may sit in a
// parent directory), and returns the exported directory.
func Export(ctx context.Context, top, rel, rev, dst string) (string, error) {
	if _, err := git(ctx, top, nil, "rev-parse", "--verify", "--quiet", rev+"^{commit}"); err != nil {
		return "", fmt.Errorf("git revision %q: unknown (fetch it first, e.g. git fetch origin %s)", rev, rev)
	}
	if _, err := git(ctx, top, nil, "cat-file", "-e", rev+":"+treePath(rel)); err != nil {
		return "", fmt.Errorf("%s has no directory %s", rev, rel)
	}
	paths := []string{treePath(rel)}
	if mod := moduleDir(ctx, top, rel, rev); mod != "" && !strings.HasPrefix(mod+"/", treePath(rel)+"/") {
		paths = append(paths, mod)
	}
	args := append([]string{"archive", "--format=tar", rev, "--"}, pathspecs(paths)...)
	var tarball bytes.Buffer
	if _, err := git(ctx, top, &tarball, args...); err != nil {
		return "", fmt.Errorf("reading %s at %s: %w", rel, rev, err)
	}
	if err := untar(&tarball, dst); err != nil {
		return "", fmt.Errorf("reading %s at %s: %w", rel, rev, err)
	}
	return filepath.Join(dst, filepath.FromSlash(rel)), nil
}

// treePath is rel as a tree path: "" for the top.
func treePath(rel string) string {
	if rel == "." {
		return ""
	}
	return rel
}

func pathspecs(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = ":(literal)" + p
		if p == "" {
			out[i] = "."
		}
	}
	return out
}

// moduleDir finds the nearest cue.mod at rev from rel upwards.
func moduleDir(ctx context.Context, top, rel, rev string) string {
	for p := rel; ; p = path.Dir(p) {
		mod := path.Join(treePath(p), "cue.mod")
		if _, err := git(ctx, top, nil, "cat-file", "-e", rev+":"+mod+"/module.cue"); err == nil {
			return mod
		}
		if p == "." || p == "/" {
			return ""
		}
	}
}

// untar extracts regular files and directories below dst, refusing any
// path that would leave it and any link.
func untar(r io.Reader, dst string) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := path.Clean(h.Name)
		if path.IsAbs(name) || name == ".." || strings.HasPrefix(name, "../") {
			return fmt.Errorf("archive entry %q leaves the directory", h.Name)
		}
		target := filepath.Join(dst, filepath.FromSlash(name))
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(target, 0o755)
		case tar.TypeReg:
			err = writeFile(target, tr)
		case tar.TypeXGlobalHeader:
		case tar.TypeSymlink:
			err = fmt.Errorf("%s is a symbolic link; contract directories read from git may not hold links", h.Name)
		default:
			err = fmt.Errorf("%s: unsupported entry type %q", h.Name, h.Typeflag)
		}
		if err != nil {
			return err
		}
	}
}

func writeFile(target string, r io.Reader) error {
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// git runs git in dir; stdout goes to out when given, else is returned.
func git(ctx context.Context, dir string, out io.Writer, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if out != nil {
		cmd.Stdout = out
	}
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return nil, fmt.Errorf("git %s: %s", args[0], msg)
	}
	return stdout.Bytes(), nil
}
