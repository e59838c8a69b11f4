package apply

import (
	"context"
	"testing"

	"github.com/seamdc/seam/internal/redfish/bmc"
)

// BenchmarkApply1000 writes and reads back caps on 1,000 simulated BMCs
// on loopback (a session each, DELETEd; 64 BMCs at once, one request in
// flight to each): the goal is under 30 s.
func BenchmarkApply1000(b *testing.B) {
	var targets []Target
	for range 1000 {
		_, _, tg := serve(b, bmc.Config{})
		targets = append(targets, tg)
	}
	o := opts(&stepClock{})
	b.ResetTimer()
	for b.Loop() {
		for _, r := range Run(context.Background(), Apply, targets, o) {
			if r.Err != nil {
				b.Fatal(r.Err)
			}
		}
	}
}
