package inventory

import (
	"net/netip"
	"slices"
	"testing"
)

// TestParseIPv4: the fast path reads what netip.ParseAddr reads as IPv4
// and leaves everything else to it.
func TestParseIPv4(t *testing.T) {
	for _, s := range []string{"10.1.1.5", "0.0.0.0", "255.255.255.255", "10.256.1.5", "10.01.1.5", "10.1.1", "10.1.1.5.6",
		"10.1.1.5/24", "10..1.5", ".10.1.1", "10.1.1.", "", "fd5e::1", "::ffff:10.1.1.5", "1.2.3.4%eth0", "bmc-a"} {
		got, ok := parseIPv4(s)
		want, err := netip.ParseAddr(s)
		switch {
		case ok && (err != nil || got != want):
			t.Errorf("parseIPv4(%q) = %v, but netip reads %v, %v", s, got, want, err)
		case !ok && err == nil && want.Is4():
			t.Errorf("parseIPv4(%q) refuses an IPv4 address netip reads: %v", s, want)
		}
	}
}

// TestDupes: each repeat is reported once, against the first, also when
// different keys share a hash (a hash of one value for all) and past
// the packed sort's size.
func TestDupes(t *testing.T) {
	keys := []string{"a", "b", "a", "c", "b", "a", ""}
	want := [][2]int{{2, 0}, {4, 1}, {5, 0}}
	for _, h := range []struct {
		name string
		f    func(string) uint64
	}{{"hash", strHash}, {"one hash for all", func(string) uint64 { return 7 }}} {
		var got [][2]int
		dupes(len(keys), func(i int) (uint64, bool) { return h.f(keys[i]), keys[i] != "" },
			func(i, j int) bool { return keys[i] == keys[j] },
			func(i, prev int) { got = append(got, [2]int{i, prev}) })
		slices.SortFunc(got, func(a, b [2]int) int { return a[0] - b[0] })
		if !slices.Equal(got, want) {
			t.Errorf("%s: dupes = %v, want %v", h.name, got, want)
		}
	}
	// past 2^21 things: the unpacked sort
	n := 1<<idBits + 3
	var got [][2]int
	dupes(n, func(i int) (uint64, bool) { return uint64(i % (n - 2)), true },
		func(i, j int) bool { return i%(n-2) == j%(n-2) },
		func(i, prev int) { got = append(got, [2]int{i, prev}) })
	if want := [][2]int{{n - 2, 0}, {n - 1, 1}}; !slices.Equal(got, want) {
		t.Errorf("past 2^21: dupes = %v, want %v", got, want)
	}
}
