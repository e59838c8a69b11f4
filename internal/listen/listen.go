// Package listen says where a listening address takes connections
// from: the one check every door of seam makes before it serves
// without TLS or a token (facilityd, the live view, the firmware image
// server).
package listen

import "net"

// Loopback reports whether a listen address (HOST:PORT) takes
// connections from this machine only.
func Loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	return LoopbackHost(host)
}

// LoopbackHost reports whether a host name or address is this
// machine's loopback.
func LoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
