package runner

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/binding"
	"github.com/seamdc/seam/internal/clock"
	"github.com/seamdc/seam/internal/plan"
	"github.com/seamdc/seam/internal/probe"
	"github.com/seamdc/seam/internal/results"
	"github.com/seamdc/seam/internal/version"
)

// A whole hour of site time at 100 channels × 10 Hz (3.6 million
// samples, written, interlocked and graded), in a synctest bubble so
// that it takes seconds: the process's resident memory must stay flat,
// its median over the last ten minutes at most 10 % above that of
// minutes 10 to 20. The runner
// keeps no sample in memory: it writes them to the bundle and grades
// from there.
func TestHourAtHundredChannelsKeepsMemoryFlat(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const channels, devices = 100, 10
		p, raw := longPlan(t, channels)
		clk := clock.Real{}
		w := &world{clk: clk, silent: map[string]bool{}, hung: map[string]bool{}}
		b := &binding.Binding{Dir: "fake"}
		devs := map[string]probe.Device{}
		for d := range devices {
			name := fmt.Sprintf("meter-%02d", d)
			values := map[string]func() float64{}
			for k := range channels / devices {
				n := d*channels/devices + k
				values[fmt.Sprintf("p%03d", n)] = func() float64 { return 400 + float64(n%7) + math.Sin(float64(time.Now().UnixNano())/1e9) }
				b.Channels = append(b.Channels, &binding.Channel{Name: fmt.Sprintf("ch/%03d", n), DeviceName: name, PointName: fmt.Sprintf("p%03d", n)})
			}
			devs[name] = newMeter(name, w, values)
			b.Devices = append(b.Devices, &binding.Device{Name: name})
		}
		site, err := NewSite(p, b, devs, clk, nil)
		require.NoError(t, err)
		site.Kind, site.TimeScale, site.Faults = Simulated, 1, w
		dir := filepath.Join(t.TempDir(), "ev")
		r, err := New(Config{Plan: p, PlanBytes: raw, Site: site, Dir: dir, Clock: clk, Operator: Simulator{Clock: clk}})
		require.NoError(t, err)

		var mu sync.Mutex
		rss := map[int]int64{} // minute → resident bytes
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			start := time.Now()
			for {
				select {
				case <-stop:
					return
				case <-time.After(time.Minute):
				}
				m := int(time.Since(start).Minutes() + 0.5)
				mu.Lock()
				rss[m] = residentBytes(t)
				mu.Unlock()
			}
		}()
		res, err := r.Run(context.Background())
		close(stop)
		<-done
		require.NoError(t, err)
		assert.Equal(t, results.Passed, res.Outcome, "%+v", res.Cases[0].Reason)
		assert.InDelta(t, 36001, res.Cases[0].Checks[0].Samples, 1, "10 Hz for an hour (the sample at the very end may land either side of it)")

		mu.Lock()
		defer mu.Unlock()
		// medians of the minutes 10–20 and 50–60: one collection's timing
		// moves a single reading by a few MB on a busy machine; keeping
		// the samples in memory would grow it by hundreds of MB
		base, late := medianOf(rss, 10, 20), medianOf(rss, 50, 60)
		top := int64(0)
		for m, v := range rss {
			if m >= 10 {
				top = max(top, v)
			}
		}
		require.Positive(t, base)
		growth := float64(late-base) / float64(base) * 100
		var heap runtime.MemStats
		runtime.ReadMemStats(&heap)
		t.Logf("1 h of site time, %d channels at 10 Hz: resident %.1f MB (median, minutes 10-20), %.1f MB (minutes 50-60), growth %.1f %%; at most %.1f MB; %d GCs",
			channels, float64(base)/1e6, float64(late)/1e6, growth, float64(top)/1e6, heap.NumGC)
		assert.LessOrEqual(t, growth, 10.0)
	})
}

// medianOf is the median of the readings of minutes from to to.
func medianOf(rss map[int]int64, from, to int) int64 {
	var vs []int64
	for m := from; m <= to; m++ {
		if v, ok := rss[m]; ok {
			vs = append(vs, v)
		}
	}
	if len(vs) == 0 {
		return 0
	}
	slices.Sort(vs)
	return vs[len(vs)/2]
}

// residentBytes is the process's resident set size.
func residentBytes(t *testing.T) int64 {
	raw, err := os.ReadFile("/proc/self/statm")
	require.NoError(t, err)
	f := bytes.Fields(raw)
	pages, err := strconv.ParseInt(string(f[1]), 10, 64)
	require.NoError(t, err)
	return pages * int64(os.Getpagesize())
}

// longPlan is one case: an hour's hold grading every channel in band,
// sampled at 10 Hz.
func longPlan(t *testing.T, channels int) (*plan.Plan, []byte) {
	p := &plan.Plan{
		Header: plan.Header{Format: plan.Format, Generated: plan.Generated, Tool: plan.Tool{Name: "contractc", Version: version.Version},
			Site: "long", Level: plan.SAT, Inputs: plan.Inputs{Boundaries: map[string]string{"b": sha}, Contracts: sha, Files: map[string]string{"long.cue": sha}, Schema: sha, SchemaVersion: "v1alpha1"}},
		LoadBanks: []plan.LoadBank{}, Interlocks: []plan.Interlock{}, Sources: map[string]plan.Source{"band": {Pos: "x.cue:1:1", Value: "400 V"}},
	}
	c := plan.Case{ID: "sat.b.steady.hour", Boundary: "b", Kind: plan.Steady, Level: plan.SAT, Module: "m", Title: "an hour",
		Clause: plan.ClauseRef{Path: "boundaries.b.steady.hour", Pos: "x.cue:1:1", BoundaryDigest: sha}, Sides: []string{plan.Guarantee},
		Preconditions: []plan.Precondition{}, Interlocks: []string{},
		Steps: []plan.Step{{ID: "hold", Op: plan.OpHold, DurationS: 3600, EstimatedS: 3600}}}
	for n := range channels {
		ch := fmt.Sprintf("ch/%03d", n)
		c.Sampling = append(c.Sampling, plan.Sampling{Channel: ch, MaxPeriodS: 0.2, Reason: "10 Hz"})
		c.Checks = append(c.Checks, plan.Check{ID: fmt.Sprintf("in-band-%03d", n), Kind: plan.InBand, Side: plan.Guarantee, Channel: ch,
			Unit: "V", Min: plan.F(390), Max: plan.F(420), Steps: []string{"hold"}, Sources: []string{"band"}})
	}
	p.Cases = []plan.Case{c}
	p.Coverage = []plan.Coverage{{Clause: c.Clause.Path, Pos: c.Clause.Pos, Status: plan.Full, Cases: []string{c.ID}}}
	raw, err := plan.Encode(p)
	require.NoError(t, err)
	back, err := plan.Decode(raw)
	require.NoError(t, err)
	return back, raw
}
