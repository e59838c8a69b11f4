package contractc

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"contractc": func() { os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr)) },
	})
}

// TestScripts runs the real contractc command on real files: each
// testdata/script/*.txtar holds inputs and expected output. $EXAMPLE is
// the worked example; -update rewrites expected output in place.
func TestScripts(t *testing.T) {
	example, err := filepath.Abs("../../contracts/examples/threemodule")
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		UpdateScripts:       os.Getenv("UPDATE_SCRIPTS") == "1",
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			env.Setenv("EXAMPLE", example)
			return nil
		},
	})
}
