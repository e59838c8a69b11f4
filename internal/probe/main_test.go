package probe

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seamdc/seam/internal/probe/probetest"
	"github.com/seamdc/seam/internal/profile"
)

// deviceServerEnv makes the test binary a device server for benchmarks:
// it serves that many devices, prints one line per device and "ready",
// answers "usage" on stdin with its CPU time and peak RSS, and exits when
// stdin closes.
const deviceServerEnv = "SEAM_PROBE_DEVICE_SERVER"

func TestMain(m *testing.M) {
	if n := os.Getenv(deviceServerEnv); n != "" {
		os.Exit(serveDevices(n))
	}
	os.Exit(m.Run())
}

func serveDevices(count string) int {
	n, err := strconv.Atoi(count)
	set, lerr := profile.MustLoad("../../fixtures/profiles")
	if err != nil || lerr != nil {
		fmt.Fprintln(os.Stderr, err, lerr)
		return 1
	}
	snmpProfiles := []string{"apc-rpdu2", "raritan-px", "servertech-sentry4"}
	cduProfiles := []string{"generic-cdu-int16", "generic-cdu-float32"}
	for i := range n {
		if i%2 == 0 {
			p := set.Get(snmpProfiles[i/2%3])
			a, err := probetest.NewAgent(p, nil, "c0mmunity")
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			fmt.Printf("snmp %s %s\n", p.Name, a.Addr)
			continue
		}
		p := set.Get(cduProfiles[i/2%2])
		s, err := probetest.NewModbus(p, nil, true)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		s.Record(false)
		fmt.Printf("modbus %s %s\n", p.Name, s.Addr)
	}
	fmt.Println("ready")
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		if in.Text() == "usage" {
			u := rusage()
			fmt.Printf("usage %d %d\n", u.cpu, u.maxRSS)
		}
	}
	return 0
}

type deviceSpec struct{ kind, profile, addr string }

type deviceProcess struct {
	mu  sync.Mutex
	in  *os.File
	out *bufio.Scanner
}

// usage asks the device process for its CPU time and peak RSS.
func (p *deviceProcess) usage() usage {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintln(p.in, "usage")
	var u usage
	if p.out.Scan() {
		var cpu int64
		fmt.Sscanf(p.out.Text(), "usage %d %d", &cpu, &u.maxRSS)
		u.cpu = time.Duration(cpu)
	}
	return u
}

// startDeviceProcess runs n devices in a child process.
func startDeviceProcess(b *testing.B, n int) ([]deviceSpec, *deviceProcess) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), deviceServerEnv+"="+strconv.Itoa(n))
	cmd.Stderr = os.Stderr
	stdin, w, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stdin = stdin
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	stdin.Close()
	b.Cleanup(func() { w.Close(); cmd.Wait() })
	sc := bufio.NewScanner(out)
	var specs []deviceSpec
	for sc.Scan() && sc.Text() != "ready" {
		f := strings.Fields(sc.Text())
		if len(f) != 3 {
			b.Fatalf("device process: %q", sc.Text())
		}
		specs = append(specs, deviceSpec{f[0], f[1], f[2]})
	}
	if len(specs) != n {
		b.Fatalf("device process started %d devices, want %d", len(specs), n)
	}
	return specs, &deviceProcess{in: w, out: sc}
}
