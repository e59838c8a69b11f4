package compile_test

import (
	"testing"

	"github.com/seamdc/seam/internal/compile"
	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/plan"
	"github.com/seamdc/seam/internal/sitegen"
)

// The benchmarks compare compile with vet on the same inputs: compile
// vets first, so compile time is vet time plus the plan. The goal is
// compile ≤ 1.5 × vet. BenchmarkPlan* measure the plan alone (compile,
// encode, read back and validate) on contracts already vetted.

func BenchmarkVetExample(b *testing.B) { benchVet(b, example) }

func BenchmarkCompileExample(b *testing.B) { benchCompile(b, example) }

func BenchmarkVetSite100(b *testing.B) { benchVet(b, site100(b)) }

func BenchmarkCompileSite100(b *testing.B) { benchCompile(b, site100(b)) }

func BenchmarkPlanExample(b *testing.B) { benchPlan(b, example) }

func BenchmarkPlanSite100(b *testing.B) { benchPlan(b, site100(b)) }

func site100(b *testing.B) string {
	dir := b.TempDir()
	if err := sitegen.Write(dir, 100); err != nil {
		b.Fatal(err)
	}
	return dir
}

func benchVet(b *testing.B, dir string) {
	for b.Loop() {
		if _, _, err := contract.Vet(dir); err != nil {
			b.Fatal(err)
		}
	}
}

// benchCompile measures what contractc compile does: vet, compile all
// levels, encode and check the plan.
func benchCompile(b *testing.B, dir string) {
	for b.Loop() {
		p, _, err := compile.Dir(dir, compile.Options{Level: plan.All})
		if err != nil || p == nil {
			b.Fatal(err)
		}
		if _, err := plan.Encode(p); err != nil {
			b.Fatal(err)
		}
	}
}

func benchPlan(b *testing.B, dir string) {
	c, _, err := contract.Vet(dir)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		p, _, err := compile.Compile(c, compile.Options{Level: plan.All})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := plan.Encode(p); err != nil {
			b.Fatal(err)
		}
	}
}
