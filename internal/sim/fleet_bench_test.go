package sim

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seamdc/seam/internal/clock"
	"github.com/seamdc/seam/internal/probe"
	"github.com/seamdc/seam/internal/sim/fleet"
)

// serveFleetForBench is BenchmarkServedFleet's server, run in its own
// process (SEAM_FLEETBENCH=K, through TestMain): K copies of the example
// site with its handover inventory's fleet (864 nodes each, every one
// training; 1,689 BMCs) and its 123 devices, physics at 100 Hz in real
// time. With SEAM_FLEETBENCH_JOB=grid the nodes run the grid job
// (Site.Train: the contract's grid load through the racks' smoothing)
// instead of the square wave. It prints the compute BMCs' addresses as
// JSON lines, "meter " and the first copy's POI meter device (when its
// binding serves one), and "ready", and serves until its stdin closes.
func serveFleetForBench(k string) int {
	copies, err := strconv.Atoi(k)
	if err != nil || copies <= 0 {
		fmt.Fprintf(os.Stderr, "SEAM_FLEETBENCH=%q: want a number of copies\n", k)
		return 2
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	enc := json.NewEncoder(os.Stdout)
	n, meterShown := 0, false
	for range copies {
		s, err := newWithInventory()
		if err == nil {
			err = s.Start()
		}
		if err == nil {
			defer s.Close()
			if os.Getenv("SEAM_FLEETBENCH_JOB") == "grid" {
				_, err = s.SetNodes(NodeRequest{All: true, State: fleet.Idle})
				if err == nil {
					err = s.Site.Train(fleet.Pattern{})
				}
			} else {
				_, err = s.SetNodes(NodeRequest{All: true, State: fleet.Training})
			}
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		for _, b := range s.BMCs() {
			n++
			if b.Kind == "compute" {
				_ = enc.Encode(b)
			}
		}
		for _, d := range s.Devices() {
			if d.Name() == "meter-poi" && !meterShown {
				meterShown = true
				fmt.Print("meter ")
				_ = enc.Encode(benchDevice{Name: d.Name(), Protocol: string(d.Profile().Protocol), Address: d.Addr(), Profile: d.Profile().Name})
			}
		}
		wg.Go(func() { _ = s.Site.Run(ctx, clock.Real{}, 1) })
	}
	fmt.Printf("ready %d\n", n)
	_, _ = io.Copy(io.Discard, os.Stdin)
	cancel()
	wg.Wait()
	return 0
}

// BenchmarkServedFleet measures the simulator's CPU with its fleet, in
// a process of its own: the example site (864 nodes, 1,689 BMCs, 123
// devices) and two copies of it (1,728 nodes: past the goal's 1,000),
// every node training (its power summed onto the PDUs and feeds every
// 10 ms), physics at 100 Hz in real time. Idle: no client; polled: this
// process reads every node's PowerLimit (its power reading) once every
// 5 s, as a headroom poller would, with basic authentication.
//
// grid-job: two copies (1,728 nodes) on the grid job (Site.Train: the
// example's grid load, each GPU through its rack's NVML smoothing), and
// the polled figure is the POI meter read at 50 samples/s over Modbus
// instead of the BMCs (the figure: under 25 % of a core), when
// the example's binding serves the meter (meter-readings/s says whether
// it did).
func BenchmarkServedFleet(b *testing.B) {
	for _, copies := range []int{1, 2} {
		b.Run(fmt.Sprintf("nodes=%d", copies*864), func(b *testing.B) { benchServedFleet(b, copies, false) })
	}
	b.Run("nodes=1728/grid-job", func(b *testing.B) { benchServedFleet(b, 2, true) })
}

func benchServedFleet(b *testing.B, copies int, grid bool) {
	loadOnce.Do(loadExample)
	if exErr != nil {
		b.Fatal(exErr)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$", "-test.timeout=10m")
	cmd.Env = append(os.Environ(), "SEAM_FLEETBENCH="+strconv.Itoa(copies))
	if grid {
		cmd.Env = append(cmd.Env, "SEAM_FLEETBENCH_JOB=grid")
	}
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { stdin.Close(); _ = cmd.Wait() }()
	var nodes []BMCEndpoint
	var meter *benchDevice
	bmcs := 0
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if _, err := fmt.Sscanf(sc.Text(), "ready %d", &bmcs); err == nil {
			break
		}
		if m, ok := strings.CutPrefix(sc.Text(), "meter "); ok {
			meter = &benchDevice{}
			if err := json.Unmarshal([]byte(m), meter); err != nil {
				b.Fatal(err)
			}
			continue
		}
		var e BMCEndpoint
		if err := json.Unmarshal(sc.Bytes(), &e); err == nil {
			nodes = append(nodes, e)
		}
	}
	if bmcs == 0 {
		b.Fatal("the server stopped before it was ready")
	}
	time.Sleep(2 * time.Second)
	idle := measure(b, cmd.Process.Pid, 10*time.Second)

	sec := SecretsFrom(noEnv)
	ctx, cancel := context.WithCancel(context.Background())
	var good, bad atomic.Int64
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	for i, n := range nodes {
		if grid {
			break // the meter alone
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if (clock.Real{}).Sleep(ctx, time.Duration(i)*5*time.Second/time.Duration(len(nodes))) != nil {
				return
			}
			for {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+n.Address+"/redfish/v1/Chassis/"+flat(n.Key)+"/Controls/PowerLimit", nil)
				req.SetBasicAuth(sec.BMCUser, sec.BMCPassword)
				resp, err := client.Do(req)
				if err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				switch {
				case err == nil && resp.StatusCode == http.StatusOK:
					good.Add(1)
				case ctx.Err() == nil:
					bad.Add(1)
				}
				if (clock.Real{}).Sleep(ctx, 5*time.Second) != nil {
					return
				}
			}
		}()
	}
	var meterReads atomic.Int64
	if grid && meter != nil {
		pd := openForBench(b, *meter)
		defer pd.Close()
		wg.Go(func() {
			tick := time.NewTicker(20 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				if rs, err := pd.Read(ctx); err == nil && len(rs) > 0 && rs[0].Quality == probe.Good {
					meterReads.Add(1)
				}
			}
		})
	}
	time.Sleep(6 * time.Second) // every poller running
	good.Store(0)
	meterReads.Store(0)
	polled := measure(b, cmd.Process.Pid, 10*time.Second)
	cancel()
	wg.Wait()
	b.ReportMetric(float64(len(nodes)), "nodes")
	b.ReportMetric(float64(bmcs), "bmcs")
	b.ReportMetric(idle*100, "%core-idle")
	b.ReportMetric(polled*100, "%core-polled")
	b.ReportMetric(float64(good.Load())/10, "readings/s")
	b.ReportMetric(float64(bad.Load()), "bad-readings")
	if grid {
		b.ReportMetric(float64(meterReads.Load())/10, "meter-readings/s")
	}
}

func flat(key string) string {
	out := []byte(key)
	for i, c := range out {
		if c == '/' {
			out[i] = '-'
		}
	}
	return string(out)
}
