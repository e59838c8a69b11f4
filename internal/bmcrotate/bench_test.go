package bmcrotate_test

import (
	"context"
	"testing"

	"github.com/seamdc/seam/internal/bmcrotate"
)

// BenchmarkRotate1000 rotates the credentials of 1,000 simulated BMCs
// on loopback, half with two accounts and half with one (64 at once, a
// session each, the secrets file group-committed and synced): the
// issue's goal is under 60 s a rotation.
func BenchmarkRotate1000(b *testing.B) {
	s := newSite(b, 1000, true)
	b.ResetTimer()
	for b.Loop() {
		for _, r := range bmcrotate.Run(context.Background(), s.targets, s.options(nil)) {
			if r.Outcome != bmcrotate.Rotated {
				b.Fatalf("%+v", r)
			}
		}
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/rotation")
}
