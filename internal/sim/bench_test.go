package sim

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seamdc/seam/internal/binding"
	"github.com/seamdc/seam/internal/clock"
	"github.com/seamdc/seam/internal/probe"
)

// TestMain doubles as the server of BenchmarkServedSite: run with
// SEAM_SIMBENCH_COPIES=K, the test binary serves K copies of the
// example site (123 devices each) with their physics at 100 Hz in real
// time, prints its devices as JSON lines and "ready", and serves until
// its stdin closes. The benchmark measures that process's CPU alone.
// With SEAM_FLEETBENCH=K it is BenchmarkServedFleet's server instead
// (serveFleetForBench).
func TestMain(m *testing.M) {
	if n := os.Getenv("SEAM_SIMBENCH_COPIES"); n != "" {
		os.Exit(serveForBench(n))
	}
	if k := os.Getenv("SEAM_FLEETBENCH"); k != "" {
		os.Exit(serveFleetForBench(k))
	}
	os.Exit(m.Run())
}

type benchDevice struct {
	Name, Protocol, Address, Profile string
	V3                               bool
}

func serveForBench(n string) int {
	copies, err := strconv.Atoi(n)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	loadOnce.Do(loadExample)
	if exErr != nil {
		fmt.Fprintln(os.Stderr, exErr)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	enc := json.NewEncoder(os.Stdout)
	for range copies {
		s, err := New(Config{Contracts: exC, Sim: exCfg, Profiles: exSet, Secrets: SecretsFrom(noEnv)})
		if err == nil {
			err = s.Start()
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer s.Close()
		for _, d := range s.Devices() {
			_ = enc.Encode(benchDevice{Name: d.Name(), Protocol: string(d.Profile().Protocol), Address: d.Addr(),
				Profile: d.Profile().Name, V3: d.Spec().SNMP.Version == "v3"})
		}
		wg.Add(1)
		go func() { defer wg.Done(); _ = s.Site.Run(ctx, clock.Real{}, 1) }()
	}
	fmt.Println("ready")
	_, _ = io.Copy(io.Discard, os.Stdin)
	cancel()
	wg.Wait()
	return 0
}

func noEnv(string) (string, bool) { return "", false }

// cpuSeconds is the user and system CPU time of process pid.
func cpuSeconds(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// fields after the command name in parentheses; utime and stime are fields 14 and 15
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / 100, nil // USER_HZ is 100 on Linux
}

// BenchmarkServedSite serves the example site (123 devices) and eight
// copies of it (984 devices) from one process with physics at 100 Hz,
// polls every device once a second with the project's probe from this
// process, and reports the server's CPU: idle (physics and device
// refreshes only) and polled, as a share of one core, and the devices
// one core would serve at that rate. Each size takes about 20 s.
func BenchmarkServedSite(b *testing.B) {
	for _, copies := range []int{1, 8} {
		b.Run(fmt.Sprintf("devices=%d", copies*123), func(b *testing.B) { benchServed(b, copies) })
	}
}

func benchServed(b *testing.B, copies int) {
	loadOnce.Do(loadExample)
	if exErr != nil {
		b.Fatal(exErr)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "SEAM_SIMBENCH_COPIES="+strconv.Itoa(copies))
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { stdin.Close(); _ = cmd.Wait() }()
	devs := readDevices(b, stdout)

	time.Sleep(2 * time.Second) // settle
	idle := measure(b, cmd.Process.Pid, 5*time.Second)

	ctx, cancel := context.WithCancel(context.Background())
	var good, bad atomic.Int64
	var wg sync.WaitGroup
	for i, d := range devs {
		pd := openForBench(b, d)
		defer pd.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			offset := time.Duration(i) * time.Second / time.Duration(len(devs))
			if (clock.Real{}).Sleep(ctx, offset) != nil {
				return
			}
			for {
				rs, _ := pd.Read(ctx)
				for _, r := range rs {
					if r.Quality == probe.Good {
						good.Add(1)
					} else if ctx.Err() == nil {
						bad.Add(1)
					}
				}
				if (clock.Real{}).Sleep(ctx, time.Second) != nil {
					return
				}
			}
		}()
	}
	time.Sleep(2 * time.Second) // every poller running
	good.Store(0)
	bad.Store(0)
	polled := measure(b, cmd.Process.Pid, 10*time.Second)
	cancel()
	wg.Wait()
	b.ReportMetric(float64(len(devs)), "devices")
	b.ReportMetric(idle*100, "%core-idle")
	b.ReportMetric(polled*100, "%core-polled")
	b.ReportMetric(float64(len(devs))/polled, "devices/core")
	b.ReportMetric(float64(good.Load())/10, "readings/s")
	b.ReportMetric(float64(bad.Load()), "bad-readings")
}

func readDevices(b *testing.B, r io.Reader) []benchDevice {
	var devs []benchDevice
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if sc.Text() == "ready" {
			return devs
		}
		var d benchDevice
		if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
			b.Fatal(err)
		}
		devs = append(devs, d)
	}
	b.Fatalf("the server stopped before it was ready: %v", sc.Err())
	return nil
}

func measure(b *testing.B, pid int, d time.Duration) float64 {
	c0, err := cpuSeconds(pid)
	if err != nil {
		b.Fatal(err)
	}
	t0 := time.Now()
	time.Sleep(d)
	c1, _ := cpuSeconds(pid)
	return (c1 - c0) / time.Since(t0).Seconds()
}

func openForBench(b *testing.B, d benchDevice) probe.Device {
	sec := SecretsFrom(noEnv)
	bd := &binding.Device{Name: d.Name, Address: d.Address, Unit: 1, Timeout: time.Second, ProfileName: d.Profile, Profile: exSet.Get(d.Profile)}
	switch {
	case d.Protocol == "modbus":
		bd.Protocol = binding.ModbusTCP
	case d.V3:
		bd.Protocol = binding.SNMPv3
		bd.V3 = &binding.V3{User: "seam", AuthProtocol: "SHA", AuthPass: binding.Secret{Ref: "env:A"}, PrivProtocol: "AES", PrivPass: binding.Secret{Ref: "env:P"}}
	default:
		bd.Protocol = binding.SNMPv2c
		bd.Community = binding.Secret{Ref: "env:C"}
	}
	env := map[string]string{"A": sec.AuthPass, "P": sec.PrivPass, "C": sec.Community}
	pd, err := probe.Open(bd, probe.Options{LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
	if err != nil {
		b.Fatal(err)
	}
	return pd
}
