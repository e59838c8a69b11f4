package lifecyclecmd_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/seamdc/seam/internal/peer"
)

// The walkthrough in docs/lifecycle.md runs as written: bash runs the
// block after its marker from a directory with the repository's
// contracts and fixtures, with the real sat and contractc on PATH.
func TestDocWalkthrough(t *testing.T) {
	t.Parallel()
	const doc = "../../../docs/lifecycle.md"
	const marker = "<!-- walkthrough: run by TestDocWalkthrough (internal/lifecycle/lifecyclecmd) -->\n```sh\n"
	raw, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(raw), marker)
	if ok {
		block, _, ok = strings.Cut(block, "\n```\n")
	}
	if !ok {
		t.Fatalf("%s has no walkthrough block after %q", doc, marker)
	}
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	bash, keygen := peer.Need(t, "bash"), peer.Need(t, "ssh-keygen")
	script := filepath.Join(t.TempDir(), "walkthrough.txtar")
	txtar := "symlink contracts -> " + filepath.Join(root, "contracts") + "\n" +
		"symlink fixtures -> " + filepath.Join(root, "fixtures") + "\n" +
		"exec " + bash + " walkthrough.sh\n" +
		"stdout '^OK: site.db: 16095 elements'\n" +
		"-- walkthrough.sh --\n" + block + "\n"
	if err := os.WriteFile(script, []byte(txtar), 0o644); err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Files: []string{script},
		Setup: func(env *testscript.Env) error {
			env.Setenv("PATH", filepath.Dir(keygen)+string(os.PathListSeparator)+env.Getenv("PATH"))
			return nil
		},
	})
}
