package diff

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seamdc/seam/internal/contract"
)

// BenchmarkCompareExample diffs the worked example (9 boundaries, 10
// modules, 48 racks) against a copy whose voltage tolerances are widened
// (4 ERR findings: a template change is one finding for all its
// instances), both already loaded: the classification, the joint
// checks of both sides and the walk of the remaining values.
func BenchmarkCompareExample(b *testing.B) {
	const example = "../../contracts/examples/threemodule"
	dir := b.TempDir()
	if err := os.CopyFS(dir, os.DirFS(example)); err != nil {
		b.Fatal(err)
	}
	p := filepath.Join(dir, "power.cue")
	src, err := os.ReadFile(p)
	if err != nil {
		b.Fatal(err)
	}
	edited := strings.ReplaceAll(string(src), `tolerance: "3 %"}}`, `tolerance: "6 %"}}`)
	if err := os.WriteFile(p, []byte(edited), 0o644); err != nil {
		b.Fatal(err)
	}
	load := func(dir string) Side {
		c, _, err := contract.Load(dir)
		if err != nil || c == nil {
			b.Fatal(err)
		}
		return Side{C: c, Label: dir}
	}
	old, new := load(example), load(dir)
	if n := Compare(old, new).Count(Err); n != 4 {
		b.Fatalf("want 4 ERR findings, got %d", n)
	}
	b.ResetTimer()
	for b.Loop() {
		Compare(old, new)
	}
}
