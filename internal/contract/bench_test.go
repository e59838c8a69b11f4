package contract_test

import (
	"path/filepath"
	"testing"

	"cuelang.org/go/cue"

	"github.com/seamdc/seam/contracts/schema"
	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/cueload"
	"github.com/seamdc/seam/internal/sitegen"
)

// The vet benchmarks compare vet with loading and validating the same
// files through the CUE API alone (the floor vet builds on). The issue's
// goal: vet's own checks add at most 25 % over CUE evaluation.

func benchSites(b *testing.B) map[string]string {
	b.Helper()
	gen := filepath.Join(b.TempDir(), "gen100")
	if err := sitegen.Write(gen, 100); err != nil {
		b.Fatal(err)
	}
	return map[string]string{"example": example, "generated-100": gen}
}

func BenchmarkVet(b *testing.B) {
	for name, dir := range benchSites(b) {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, diags, err := contract.Vet(dir)
				if err != nil || len(diags) > 0 {
					b.Fatalf("vet: %v %v", err, diags)
				}
			}
		})
	}
}

// BenchmarkCUEOnly loads the same directory with the schema bound and
// validates it for concreteness in one call, as `cue vet -c` would.
func BenchmarkCUEOnly(b *testing.B) {
	for name, dir := range benchSites(b) {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				r, diags, err := cueload.Load(dir, cueload.Config{ImportPath: schema.ImportPath, Files: schema.Files(), Bind: schema.Bind})
				if err != nil || len(diags) > 0 {
					b.Fatal(err, diags)
				}
				if err := r.Value.Validate(cue.Concrete(true)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestGeneratedSiteVetsClean(t *testing.T) {
	dir := t.TempDir()
	if err := sitegen.Write(dir, 5); err != nil {
		t.Fatal(err)
	}
	c, diags, err := contract.Vet(dir)
	if err != nil || len(diags) > 0 {
		t.Fatalf("generated site: %v\n%s", err, render(diags))
	}
	if len(c.Boundaries) != 15 {
		t.Fatalf("want 15 boundaries, got %d", len(c.Boundaries))
	}
}
