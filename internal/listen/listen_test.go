package listen

import "testing"

func TestLoopback(t *testing.T) {
	for _, c := range []struct {
		addr string
		want bool
	}{
		{"127.0.0.1:8642", true}, {"localhost:80", true}, {"[::1]:9", true}, {"127.1.2.3:0", true},
		{"0.0.0.0:8642", false}, {":8642", false}, {"10.0.0.5:443", false}, {"[::]:80", false}, {"example.com:80", false}, {"127.0.0.1", false},
	} {
		if got := Loopback(c.addr); got != c.want {
			t.Errorf("Loopback(%q) = %v, want %v", c.addr, got, c.want)
		}
	}
}
