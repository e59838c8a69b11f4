package sign

import "testing"

// BenchmarkVerifyExample verifies the worked example signed by its four
// parties: 9 boundary digests and 18 Ed25519 SSHSIG verifications.
func BenchmarkVerifyExample(b *testing.B) {
	dir := copyDir(b, example)
	parties := exampleParties(b)
	allowed := allowedOf(b, parties...)
	signAll(b, dir, parties, allowed)
	c := load(b, dir)
	b.ResetTimer()
	for b.Loop() {
		r, err := Verify(c, allowed, "", now)
		if err != nil || !r.OK() {
			b.Fatal(err, r)
		}
	}
}

// BenchmarkUnits computes the canonical signed unit and digest of every
// boundary of the worked example.
func BenchmarkUnits(b *testing.B) {
	c := load(b, example)
	for b.Loop() {
		if _, err := Units(c); err != nil {
			b.Fatal(err)
		}
	}
}
