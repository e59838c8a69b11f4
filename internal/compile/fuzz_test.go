package compile_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/seamdc/seam/internal/compile"
	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/diag"
	"github.com/seamdc/seam/internal/plan"
)

// fuzzFiles are the example's files a fuzzed input replaces, by index.
var fuzzFiles = []string{"site.cue", "power.cue", "cooling.cue", "it.cue", "joints.cue", "controls.cue", "racks.cue"}

// FuzzContractLoad: one file of the worked example replaced by any
// text. The contract loader takes it without a panic; contracts that
// load without errors compile to a plan that encodes and reads back.
// Inputs are capped at 8 KiB: a CUE evaluation cannot be cancelled, and
// the commands bound a runaway one by memory and time (cli.Guard), not
// the loader. Seeds: testdata/fuzz/FuzzContractLoad.
func FuzzContractLoad(f *testing.F) {
	f.Fuzz(func(t *testing.T, which uint8, src string) {
		if len(src) > 8<<10 {
			return
		}
		dir := t.TempDir()
		name := fuzzFiles[int(which)%len(fuzzFiles)]
		for _, n := range append(fuzzFiles, "cue.mod/module.cue") {
			b, err := os.ReadFile(filepath.Join(example, n))
			if err != nil {
				t.Fatal(err)
			}
			if n == name {
				b = []byte(src)
			}
			if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, n)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, n), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		c, diags, err := contract.Vet(dir)
		if err != nil || c == nil || diags.Count(diag.Error) > 0 {
			return
		}
		p, _, err := compile.Compile(c, compile.Options{Level: plan.All})
		if err != nil {
			return
		}
		b, err := plan.Encode(p)
		if err != nil {
			t.Fatalf("the compiled plan does not encode: %v", err)
		}
		if _, err := plan.Decode(b); err != nil {
			t.Fatalf("the compiled plan does not read back: %v", err)
		}
	})
}
