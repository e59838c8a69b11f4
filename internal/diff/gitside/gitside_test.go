package gitside

import (
	"archive/tar"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// repo makes a git repository whose CUE module root (cue.mod) sits above
// the contract directory, with two commits.
func repo(t *testing.T) string {
	t.Helper()
	top := t.TempDir()
	run := func(args ...string) {
		cmd := exec.Command("git", args...)
		cmd.Dir = top
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
			"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_GLOBAL=/dev/null")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	write := func(name, content string) {
		p := filepath.Join(top, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	run("init", "-q", "-b", "main")
	write("cue.mod/module.cue", "module: \"x.test/m@v0\"\n")
	write("contracts/site/a.cue", "package site\na: 1\n")
	write("other/b.cue", "package other\n")
	run("add", ".")
	run("commit", "-q", "-m", "one")
	write("contracts/site/a.cue", "package site\na: 2\n")
	run("commit", "-q", "-am", "two")
	return top
}

func TestExportReadsTheRevisionWithItsModule(t *testing.T) {
	top := repo(t)
	ctx := context.Background()
	gotTop, rel, err := Locate(ctx, filepath.Join(top, "contracts", "site"))
	require.NoError(t, err)
	assert.Equal(t, "contracts/site", rel)

	dst := t.TempDir()
	dir, err := Export(ctx, gotTop, rel, "HEAD~1", dst)
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(dir, "a.cue"))
	require.NoError(t, err)
	assert.Equal(t, "package site\na: 1\n", string(b), "the old revision, not the working tree")
	assert.FileExists(t, filepath.Join(dst, "cue.mod", "module.cue"), "the module root above the directory")
	assert.NoFileExists(t, filepath.Join(dst, "other", "b.cue"), "nothing else")
}

func TestExportErrors(t *testing.T) {
	top := repo(t)
	ctx := context.Background()
	_, err := Export(ctx, top, "contracts/site", "nosuch", t.TempDir())
	assert.ErrorContains(t, err, `git revision "nosuch": unknown`)
	_, err = Export(ctx, top, "contracts/gone", "HEAD", t.TempDir())
	assert.ErrorContains(t, err, "HEAD has no directory contracts/gone")
	_, _, err = Locate(ctx, t.TempDir())
	assert.ErrorContains(t, err, "is not inside a git repository")
}

func TestParseRange(t *testing.T) {
	top := repo(t)
	ctx := context.Background()
	for in, want := range map[string]Range{
		"HEAD~1":       {Old: "HEAD~1"},
		"HEAD~1..main": {Old: "HEAD~1", New: "main"},
	} {
		got, err := ParseRange(ctx, top, in)
		require.NoError(t, err)
		assert.Equal(t, want, got, in)
	}
	got, err := ParseRange(ctx, top, "HEAD~1...main")
	require.NoError(t, err)
	assert.Len(t, got.Old, 40, "the merge base is a commit id")
	assert.Equal(t, "main", got.New)
	for _, bad := range []string{"", "..main", "a...", "HEAD...nosuch"} {
		_, err := ParseRange(ctx, top, bad)
		assert.Error(t, err, bad)
	}
}

func TestUntarRefusesEscapesAndLinks(t *testing.T) {
	for name, hdr := range map[string]*tar.Header{
		"leaves the directory": {Name: "../evil.cue", Typeflag: tar.TypeReg, Size: 1, Mode: 0o644},
		"symbolic link":        {Name: "link.cue", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"},
	} {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		require.NoError(t, tw.WriteHeader(hdr))
		if hdr.Size > 0 {
			_, _ = tw.Write([]byte("x"))
		}
		require.NoError(t, tw.Close())
		err := untar(&buf, t.TempDir())
		require.Error(t, err)
		assert.True(t, strings.Contains(err.Error(), name), "%v", err)
	}
}
