package discover_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/seamdc/seam/internal/clock"
	"github.com/seamdc/seam/internal/discover"
	"github.com/seamdc/seam/internal/sim"
)

// TestMain runs BenchmarkDiscover's server when the benchmark starts
// this test binary with SEAM_DISCOVERBENCH=1, and the tests otherwise.
func TestMain(m *testing.M) {
	if os.Getenv("SEAM_DISCOVERBENCH") != "" {
		os.Exit(serveBMCsForBench())
	}
	os.Exit(m.Run())
}

// serveBMCsForBench is BenchmarkDiscover's server, in its own process:
// the simulated example site, its 1,689 BMCs on loopback and its physics
// at 100 Hz in real time, as sat sim serves it. It prints the BMCs as
// JSON lines and "ready", and serves until its stdin closes.
func serveBMCsForBench() int {
	o, err := openServed()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer o.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = o.Site.Run(ctx, clock.Real{}, 1); close(done) }()
	enc := json.NewEncoder(os.Stdout)
	for _, b := range o.BMCs() {
		_ = enc.Encode(b)
	}
	fmt.Println("ready")
	_, _ = io.Copy(io.Discard, os.Stdin)
	cancel()
	<-done
	return 0
}

// BenchmarkDiscover walks 1,000 BMCs of the simulated site (the first by
// key: the CDUs, every tray of module ma's racks and some of mb's, each
// BMC on its own port; the trays of the last rack past the 1,000th are
// the findings, missing) served by another process, 64 at a time with one request in
// flight to each, and compares them with the inventory. The first walk
// has each BMC build its tree (Export of its tray); the timed walks are
// the steady state. Reports seconds per walk and requests per second.
func BenchmarkDiscover(b *testing.B) {
	cmd := exec.Command(os.Args[0], "-test.run=^$", "-test.timeout=30m")
	cmd.Env = append(os.Environ(), "SEAM_DISCOVERBENCH=1")
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { stdin.Close(); _ = cmd.Wait() }()
	var ts []discover.Target
	sc := bufio.NewScanner(stdout)
	for sc.Scan() && sc.Text() != "ready" {
		var e sim.BMCEndpoint
		if err := json.Unmarshal(sc.Bytes(), &e); err == nil && len(ts) < 1000 {
			ts = append(ts, discover.Target{Name: e.Name, URL: "http://" + e.Address, Expect: e.Key})
		}
	}
	if len(ts) < 1000 {
		b.Fatalf("the server listed %d BMCs", len(ts))
	}
	o := loadDeclared(b)
	racks := map[string]bool{}
	for _, t := range ts {
		racks[t.Expect[:strings.LastIndexByte(t.Expect, '/')]] = true
	}
	var keep []string
	for r := range racks {
		keep = append(keep, r)
	}
	d := o.Only(keep...)
	sec := sim.SecretsFrom(func(string) (string, bool) { return "", false })
	opt := discover.Options{User: sec.BMCUser, Password: sec.BMCPassword, Parallel: 64, PerBMC: 1}
	first := discover.Run(context.Background(), "threemodule", d, ts, opt)
	b.Logf("first walk (each BMC builds its tree): %.2f s, %d requests, %d errors", first.Seconds, first.Requests, len(first.Errors))
	b.ResetTimer()
	var r *discover.Report
	for b.Loop() {
		r = discover.Run(context.Background(), "threemodule", d, ts, opt)
	}
	if len(r.Errors) > 0 {
		b.Fatalf("%d errors: %v", len(r.Errors), r.Errors[0])
	}
	for _, f := range r.Findings {
		// the last rack is walked in part: its trays past the 1,000th BMC
		if f.Kind != discover.MissingTray {
			b.Fatalf("a finding on the healthy site: %s", f.Message)
		}
	}
	b.ReportMetric(r.Seconds, "s/walk")
	b.ReportMetric(first.Seconds, "s-first-walk")
	b.ReportMetric(float64(r.Requests)/r.Seconds, "requests/s")
	b.ReportMetric(float64(r.BMCs), "bmcs")
	b.ReportMetric(float64(len(r.Findings)), "findings")
}

// loadDeclared is the example's declared inventory, from a simulation
// that serves nothing.
func loadDeclared(b *testing.B) *discover.Declared {
	o, _, err := sim.Open(sim.Paths{Contracts: example, Fixtures: "../../fixtures"}, "", sim.SecretsFrom(func(string) (string, bool) { return "", false }), time.Time{}, nil)
	if err != nil {
		b.Fatal(err)
	}
	return discover.Declare(graph(b, o), nil)
}
