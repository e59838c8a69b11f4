package headroom_test

import (
	"fmt"
	"io"
	"math"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/seamdc/seam/internal/headroom"
	"github.com/seamdc/seam/internal/probe"
)

// fleet is a site of n devices: per block two feed meters (power,
// current, voltage each) and per loop one CDU (supply, return, flow);
// a quarter of the devices are CDUs.
func fleet(n int) (*headroom.Model, map[string][]string, []string) {
	m := &headroom.Model{Meters: map[string]headroom.Meter{}}
	byPoint := map[string][]string{}
	var devices []string
	meter := func(dev, point string, k headroom.Kind, at string) {
		ch := dev + "/" + point
		m.Meters[ch] = headroom.Meter{Channel: ch, Kind: k, At: at}
		byPoint[dev+"/"+point] = []string{ch}
	}
	for i := 0; len(devices) < n; i++ {
		blk := &headroom.Block{ID: fmt.Sprintf("p%d/block", i), Module: fmt.Sprintf("p%d", i), RatingW: 2.5e6, Redundancy: "2N"}
		for _, side := range []string{"a", "b"} {
			f := &headroom.Feed{ID: blk.ID + "/" + side, Block: blk.ID, Module: blk.Module, LimitW: 2.1e6, Derating: 0.8, NominalV: 415}
			blk.Feeds = append(blk.Feeds, f)
			m.Feeds = append(m.Feeds, f)
			dev := fmt.Sprintf("meter-%d-%s", i, side)
			devices = append(devices, dev)
			meter(dev, "power", headroom.Power, f.ID)
			meter(dev, "current", headroom.Current, f.ID)
			meter(dev, "voltage", headroom.Voltage, f.ID)
		}
		m.Blocks = append(m.Blocks, blk)
		l := &headroom.Loop{ID: fmt.Sprintf("l%d/loop", i), Module: fmt.Sprintf("l%d", i), CapacityW: 3.6e6, CapacityLostW: 2.4e6, DeltaTK: 10, Cp: 4.18, SupplyLo: 28.5, SupplyH: 31.5}
		m.Loops = append(m.Loops, l)
		for c := 0; c < 2; c++ {
			dev := fmt.Sprintf("cdu-%d-%d", i, c)
			devices = append(devices, dev)
			meter(dev, "supply", headroom.SupplyTemp, l.ID)
			meter(dev, "return", headroom.ReturnTemp, l.ID)
			meter(dev, "flow", headroom.Flow, l.ID)
		}
	}
	return m, byPoint, devices[:n]
}

// BenchmarkCycle1000 is one 1 Hz cycle of a site of 1,000 devices: every
// device's read taken, then one scrape (collection and the text
// exposition). The goal is well under 1 s.
func BenchmarkCycle1000(b *testing.B) {
	m, byPoint, devices := fleet(1000)
	now := t0
	c := headroom.NewCollector(m, byPoint, devices, func() time.Time { return now }, 3*time.Second)
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	h := promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	samples := make([]probe.Sample, len(devices))
	for i, d := range devices {
		pts := []string{"power", "current", "voltage"}
		if d[:3] == "cdu" {
			pts = []string{"supply", "return", "flow"}
		}
		for _, p := range pts {
			samples[i].Readings = append(samples[i].Readings, probe.Reading{Device: d, Point: p, Value: 30, Unit: "kW"})
		}
		samples[i].Device = d
	}
	b.ReportAllocs()
	b.ResetTimer()
	var bytes int
	for i := 0; i < b.N; i++ {
		now = now.Add(time.Second)
		for j := range samples {
			samples[j].Done = now
			for k := range samples[j].Readings {
				samples[j].Readings[k].Received = now
			}
			c.Take(samples[j])
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		bytes = rec.Body.Len()
		io.Discard.Write(rec.Body.Bytes())
	}
	b.ReportMetric(float64(bytes), "exposition_bytes")
}

// BenchmarkGridFigures is the live grid figures' work per poll of the
// POI meter at 50 samples/s: one reading taken, then every figure of the
// example's grid boundary measured over its record (ramps and swing over
// the trailing minute, the band's line and RMS over the 60 s window:
// 3,001 samples resampled, two ramp passes, one 3,000-point FFT and
// seven 750-point Welch segments). At 50 polls/s the share of a core is
// 50 × ns/op / 1e9 (reported as core-share-at-50Hz).
func BenchmarkGridFigures(b *testing.B) {
	w, err := headroom.NewGridWatch([]*headroom.Grid{exampleGrid()}, 20*time.Millisecond, 3*time.Second)
	if err != nil {
		b.Fatal(err)
	}
	f := func(t float64) float64 { return 4e6 + 1e5*math.Sin(2*math.Pi*2*t) }
	at := feed(w, 50, 70, 0.2, f)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		at = at.Add(20 * time.Millisecond)
		w.Take("u1/site/power", headroom.Reading{Value: f(float64(i)/50) / 1000, At: at})
		if r := w.Compute(at); !r[0].RMS.OK {
			b.Fatal("no band RMS")
		}
	}
	b.ReportMetric(50*float64(time.Since(start).Nanoseconds())/float64(b.N)/1e9, "core-share-at-50Hz")
}
