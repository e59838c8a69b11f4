package gridsignal

import "testing"

func TestFastLength(t *testing.T) {
	for _, tt := range []struct{ n, above, below int }{
		{2977, 3000, 2916}, {3000, 3000, 3000}, {1, 1, 1}, {7, 8, 6}, {0, 1, 0},
	} {
		if got := FastLengthAbove(tt.n); got != tt.above {
			t.Errorf("FastLengthAbove(%d) = %d, want %d", tt.n, got, tt.above)
		}
		if got := FastLengthBelow(tt.n); got != tt.below {
			t.Errorf("FastLengthBelow(%d) = %d, want %d", tt.n, got, tt.below)
		}
	}
}
