package peer

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// A daemon that binds a port named in its configuration does so
// seconds after the test chose it (Slurm's slurmd after slurmctld, a
// server after its peers are configured with its address). A port the
// kernel handed out for :0 lies in its ephemeral range, where every
// outgoing connection of every process also takes its local port, so
// on a busy machine another test's client can take it first ("bind:
// address already in use"). ListenTCP's ports are therefore chosen at
// random below the ephemeral range, where the kernel never allocates on
// its own, checked free, and never handed out twice by this process.

var (
	portsMu sync.Mutex
	given   = map[int]bool{}
)

const lowestPort = 10000

// ListenTCP is a loopback address for a daemon to bind later: a port
// below the kernel's ephemeral range, free a moment ago (FreeTCP's
// when none is found).
func ListenTCP(t testing.TB) string {
	t.Helper()
	if p := freePort(); p > 0 {
		return fmt.Sprintf("127.0.0.1:%d", p)
	}
	return FreeTCP(t)
}

// freePort returns a TCP port below the ephemeral range that was free a
// moment ago, or 0 if none was found.
func freePort() int {
	hi := ephemeralLow()
	portsMu.Lock()
	defer portsMu.Unlock()
	for range 2000 {
		p := lowestPort + rand.IntN(hi-lowestPort)
		if given[p] || !bindable(p) {
			continue
		}
		given[p] = true
		return p
	}
	return 0
}

func bindable(p int) bool {
	for _, addr := range []string{fmt.Sprintf("127.0.0.1:%d", p), fmt.Sprintf(":%d", p)} {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			return false
		}
		l.Close()
	}
	return true
}

// ephemeralLow is the first port of the kernel's ephemeral range
// (net.ipv4.ip_local_port_range; 32768 when it cannot be read).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 32768
	}
	n, err := strconv.Atoi(f[0])
	if err != nil || n <= lowestPort+1000 {
		return 32768
	}
	return n
}
