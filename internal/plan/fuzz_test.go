package plan_test

import (
	"testing"

	"github.com/seamdc/seam/internal/plan"
)

// FuzzDecode: the plan reader takes any bytes without a panic, and a
// plan it accepts encodes and reads back to the same bytes. Seeds:
// testdata/fuzz/FuzzDecode.
func FuzzDecode(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := plan.Decode(data)
		if err != nil {
			return
		}
		b, err := plan.Encode(p)
		if err != nil {
			t.Fatalf("a plan that decodes does not encode: %v", err)
		}
		q, err := plan.Decode(b)
		if err != nil {
			t.Fatalf("an encoded plan does not decode: %v", err)
		}
		again, err := plan.Encode(q)
		if err != nil || string(again) != string(b) {
			t.Fatalf("encoding is not stable (%v)", err)
		}
	})
}
