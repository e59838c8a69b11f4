package inventory

import (
	"fmt"
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

// TestDupesMany holds dupes against a map past 4,096 keys, where it
// drops the keys whose hash bits no other key shares before sorting
// (maybeShared), with a good hash and with one whose low bits collide
// often, and checks the findings come in the things' order.
func TestDupesMany(t *testing.T) {
	const n = 300_000
	keys := make([]string, n)
	for i := range keys {
		switch {
		case i%97 == 0:
			keys[i] = ""
		case i%1000 == 999:
			keys[i] = fmt.Sprintf("k%d", i/3) // the same as an earlier key, or a new one
		default:
			keys[i] = fmt.Sprintf("k%d", i)
		}
	}
	var want [][2]int
	first := map[string]int{}
	for i, k := range keys {
		if k == "" {
			continue
		}
		if p, ok := first[k]; ok {
			want = append(want, [2]int{i, p})
		} else {
			first[k] = i
		}
	}
	if len(want) == 0 {
		t.Fatal("the keys have no duplicates to find")
	}
	for _, h := range []struct {
		name string
		f    func(string) uint64
	}{{"hash", strHash}, {"weak hash", func(s string) uint64 { return strHash(s) & 0xff00ff }}} {
		var got [][2]int
		dupes(n, func(i int) (uint64, bool) { return h.f(keys[i]), keys[i] != "" },
			func(i, j int) bool { return keys[i] == keys[j] },
			func(i, prev int) { got = append(got, [2]int{i, prev}) })
		if !slices.Equal(got, want) {
			t.Errorf("%s: dupes found %d, want %d (first %v, want %v)", h.name, len(got), len(want), got[:min(3, len(got))], want[:3])
		}
	}
}
