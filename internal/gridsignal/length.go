package gridsignal

// FastLengthAbove is the least n' >= n with no prime factor above 5:
// gonum's FFT of a length with a large prime factor is quadratic, so a
// record is made this long.
func FastLengthAbove(n int) int {
	for ; !fast(n); n++ {
	}
	return n
}

// FastLengthBelow is the greatest n' <= n with no prime factor above
// 5 (n itself when n <= 1).
func FastLengthBelow(n int) int {
	for ; n > 1 && !fast(n); n-- {
	}
	return n
}

// fast reports whether n has no prime factor above 5.
func fast(n int) bool {
	if n < 1 {
		return false
	}
	for _, p := range []int{2, 3, 5} {
		for n%p == 0 {
			n /= p
		}
	}
	return n == 1
}
