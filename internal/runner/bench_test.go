package runner

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/clock"
	"github.com/seamdc/seam/internal/compile"
	"github.com/seamdc/seam/internal/evidence"
	"github.com/seamdc/seam/internal/loadbank"
	"github.com/seamdc/seam/internal/plan"
	"github.com/seamdc/seam/internal/probe"
	"github.com/seamdc/seam/internal/sim"
)

// liveSim is the example's simulated site at time scale 1 (real time),
// its devices on loopback, opened through the binding it describes.
type liveSim struct {
	o    *sim.Opened
	devs map[string]probe.Device
	stop func()
}

func startSim(b *testing.B) *liveSim {
	b.Helper()
	o, _, err := sim.Open(sim.Paths{Contracts: example, Fixtures: "../../fixtures"}, "", sim.SecretsFrom(func(string) (string, bool) { return "", false }), time.Time{}, nil)
	require.NoError(b, err)
	require.NoError(b, o.Start())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = o.Site.Run(ctx, clock.Real{}, 1) }()
	bd := o.Binding(o.ProfileDirs, o.Paths.Contracts, sim.EnvRefs)
	secrets := sim.SecretsFrom(func(string) (string, bool) { return "", false })
	lookup := func(k string) (string, bool) {
		return map[string]string{sim.EnvCommunity: secrets.Community, sim.EnvAuth: secrets.AuthPass, sim.EnvPriv: secrets.PrivPass}[k], true
	}
	ps, err := probe.OpenSite(bd, probe.Options{LookupEnv: lookup})
	require.NoError(b, err)
	devs := map[string]probe.Device{}
	for _, d := range ps.Devices {
		devs[d.Name()] = d
	}
	return &liveSim{o: o, devs: devs, stop: func() { ps.Close(); cancel(); <-done; o.Close() }}
}

func pct(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[min(len(s)-1, int(p/100*float64(len(s))))]
}

// BenchmarkSquareWaveEdges runs square waves on lb-ma of the simulated
// site in real time over Modbus on loopback: 620 kW ↔ 2080 kW, period
// 1 s, 20 cycles per iteration. It reports how late each edge's first
// setpoint write was against its schedule (the goal: p99 ≤ 2 ms), how
// long after the write the simulated bank's applied load reached the
// new level (its physics, stepped every 10 ms, at 50 MW/s), and how long
// until a read-back through the bank's Modbus image (refreshed every
// 200 ms) confirmed it.
func BenchmarkSquareWaveEdges(b *testing.B) {
	ls := startSim(b)
	defer ls.stop()
	o := ls.o
	lbBinding := o.Binding(o.ProfileDirs, o.Paths.Contracts, sim.EnvRefs).LoadBank("lb-ma")
	spec := plan.LoadBank{ID: "lb-ma", Module: "ma", Kind: "resistive", RatingKW: 2500, ResolutionKW: 5, MaxRateKWPerS: 50000}
	bank, err := loadbank.New(spec, lbBinding, ls.devs[lbBinding.DeviceName], loadbank.Options{})
	require.NoError(b, err)
	ctx := context.Background()
	hbCtx, stopHB := context.WithCancel(ctx)
	defer stopHB()
	_, err = bank.Prepare(ctx)
	require.NoError(b, err)
	go bank.Heartbeat(hbCtx, time.Second, nil)
	_, err = bank.Set(ctx, 620)
	require.NoError(b, err)

	var late, applied, readback []float64
	for b.Loop() {
		// the simulator's own applied load, every 0.2 ms of wall time
		type seen struct {
			at time.Time
			kw float64
		}
		var trace []seen
		stopTrace := make(chan struct{})
		traced := make(chan struct{})
		go func() {
			defer close(traced)
			for {
				select {
				case <-stopTrace:
					return
				default:
				}
				v, _ := o.Site.Signal("lb-ma", "applied")
				trace = append(trace, seen{time.Now(), v})
				time.Sleep(200 * time.Microsecond)
			}
		}()
		edges, err := bank.Square(ctx, loadbank.Square{LowKW: 620, HighKW: 2080, PeriodS: 1, DutyPct: 50, Cycles: 20}, nil)
		close(stopTrace)
		<-traced
		require.NoError(b, err)
		for _, e := range edges {
			late = append(late, float64(e.Late().Microseconds()))
			if !e.Applied.IsZero() {
				readback = append(readback, float64(e.Applied.Sub(e.Written).Milliseconds()))
			}
			for _, s := range trace {
				if s.at.After(e.Written) && (s.kw-e.ToKW)*(s.kw-e.ToKW) < 1 {
					applied = append(applied, float64(s.at.Sub(e.Written).Microseconds())/1000)
					break
				}
			}
		}
	}
	b.ReportMetric(pct(late, 50), "edge_late_p50_µs")
	b.ReportMetric(pct(late, 99), "edge_late_p99_µs")
	b.ReportMetric(pct(applied, 50), "edge_to_applied_p50_ms")
	b.ReportMetric(pct(applied, 99), "edge_to_applied_p99_ms")
	b.ReportMetric(pct(readback, 50), "edge_to_readback_p50_ms")
	b.ReportMetric(pct(readback, 99), "edge_to_readback_p99_ms")
	b.ReportMetric(float64(len(late)), "edges")
	_, _ = bank.Zero(ctx)
}

// BenchmarkSamplingJitter samples the channels of the example's
// training-voltage case (ma) from the simulated site in real time for
// 5 s per iteration, as a case does (the runner's sampler: probe.Poll
// per device, interlocks, the evidence bundle), and reports, per
// channel, how far the intervals between consecutive samples stray from
// the sampling period: the p50 and p99 of |interval − period|.
func BenchmarkSamplingJitter(b *testing.B) {
	ls := startSim(b)
	defer ls.stop()
	p, _, err := compile.Dir(example, compile.Options{Level: plan.SAT, Module: "ma", MaxHold: 5 * time.Second})
	require.NoError(b, err)
	var c plan.Case
	for _, k := range p.Cases {
		if k.ID == "sat.p1-ma.transient.training-voltage" {
			c = k
		}
	}
	bd := ls.o.Binding(ls.o.ProfileDirs, ls.o.Paths.Contracts, sim.EnvRefs)
	site, err := NewSite(p, bd, ls.devs, clock.Real{}, nil)
	require.NoError(b, err)
	jitter := map[string][]float64{}
	periods := map[string]time.Duration{}
	for b.Loop() {
		dir := filepath.Join(b.TempDir(), "ev")
		bundle, err := evidence.Create(dir, clock.Real{}, evidence.Options{})
		require.NoError(b, err)
		r := &Runner{cfg: Config{Site: site, Plan: p, Dir: dir}, clk: clock.Real{}, b: bundle, aborted: make(chan struct{}), aborting: clock.NewGroup(clock.Real{}),
			prog: newProgress(nil, false, p, clock.Real{})}
		r.log = r.cfg.Log
		if r.log == nil {
			r.log = discard
		}
		smp, err := r.newSampler(c)
		require.NoError(b, err)
		for _, d := range smp.devices {
			for _, ch := range d.chans {
				periods[ch.channel] = d.period
			}
		}
		smp.start(context.Background())
		time.Sleep(5 * time.Second)
		smp.halt()
		require.NoError(b, bundle.Close())
		last := map[string]time.Time{}
		require.NoError(b, evidence.ScanSamples(dir, func(s evidence.Sample) error {
			if t, ok := last[s.Channel]; ok {
				d := s.Time.Sub(t) - periods[s.Channel]
				jitter[s.Channel] = append(jitter[s.Channel], float64(d.Abs().Microseconds())/1000)
			}
			last[s.Channel] = s.Time
			return nil
		}))
	}
	var names []string
	for ch := range jitter {
		names = append(names, ch)
	}
	slices.Sort(names)
	for _, ch := range names {
		short := strings.NewReplacer("/", "_", "-", "_").Replace(ch)
		b.ReportMetric(pct(jitter[ch], 50), short+"_p50_ms")
		b.ReportMetric(pct(jitter[ch], 99), short+"_p99_ms")
		fmt.Fprintf(os.Stderr, "sampling %-28s every %-6s %5d intervals, |jitter| p50 %.2f ms, p99 %.2f ms\n",
			ch, periods[ch], len(jitter[ch]), pct(jitter[ch], 50), pct(jitter[ch], 99))
	}
}

var discard = slog.New(slog.DiscardHandler)
