package contract_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/sitegen"
)

// gridOf is a grid boundary for the generated site (100 modules: 1,600
// racks, 115,200 GPUs, 208 MW) with a sweep of 50 iteration periods;
// answer is what its IT modules declare.
func gridOf(answer string) string {
	return `package site

site: modules: utility: {kind: "utility", vendor: "Utility", failure_domain: "grid"}
site: modules: [=~"^m[0-9]+$"]: {` + answer + `}

boundaries: "utility-site": {
	supplier: "utility", consumer: "generated", medium: "grid"
	parties: ["Utility", "Owner"]
	channels: {}
	grid: {
		rated: "220 MW"
		require: {
			ramp: {up: {per_second: "10 MW/s", per_minute: "50 MW/min"}, down: {per_second: "10 MW/s", per_minute: "50 MW/min"}}
			swing: {max: "20 %", window: "1 min"}
			oscillation: {band: {low: "0.1 Hz", high: "20 Hz"}, window: "60 s", line: "1 %", rms: "1 %"}
		}
		load: {
			period: "1 s", compute_share: "70 %", gpu_compute: "1.2 kW", gpu_communication: "300 W", gpu_idle: "150 W"
			checkpoint: {every: "30 min", stall: "20 s"}
			sweep: {from: "0.2 s", to: "12 s", steps: 50}
		}
	}
}
`
}

// BenchmarkGrid is what the grid rules add to vet on the generated
// 100-module site with 50 iteration periods: the model and measures of
// a passing design (rack storage), and of a failing one with the least
// floor and storage searched. Goal: under 0.5 s each (grid-s).
func BenchmarkGrid(b *testing.B) {
	// the generated racks name no GPU model, so their answer is the
	// storage the failing design's advice asks for
	const storage = `grid_response: storage: {power: "70 kW", energy: "6 kWh", response: "0 s"}`
	for _, tt := range []struct{ name, answer string }{{"passing", storage}, {"failing", ""}} {
		dir := filepath.Join(b.TempDir(), tt.name)
		if err := sitegen.Write(dir, 100); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "grid.cue"), []byte(gridOf(tt.answer)), 0o644); err != nil {
			b.Fatal(err)
		}
		c, diags, err := contract.Load(dir)
		if err != nil || len(diags) > 0 {
			b.Fatalf("load: %v %v", err, diags)
		}
		b.Run(tt.name, func(b *testing.B) {
			var total time.Duration
			for b.Loop() {
				start := time.Now()
				a, ad := contract.AssessGrid(c, c.GridBoundaries()[0])
				total += time.Since(start)
				if a == nil || len(ad) > 0 || (tt.answer == "") != (a.Advice != nil) {
					b.Fatalf("assessment: %+v %v", a, ad)
				}
			}
			b.ReportMetric(total.Seconds()/float64(b.N), "grid-s")
		})
	}
}
