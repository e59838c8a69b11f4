package sim

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/comtrade"
	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/diag"
	"github.com/seamdc/seam/internal/probe"
	"github.com/seamdc/seam/internal/sim/simconfig"
)

// The POI channel the example's grid boundary declares.
const poiChannel = "u1/site/power"

// insideCurve are UPS transfer settings inside the example's
// ride-through curve: below 0.85 pu for 20 ms, back 5 min after.
const insideCurve = `{voltage: "0.85 pu", after: "20 ms", back_after: "5 min", frequency_min: "47 Hz", frequency_max: "52 Hz"}`

var (
	gridMu        sync.Mutex
	gridContracts = map[string]*contract.Contracts{}
)

// gridExample builds the example site from a copy of its contracts
// whose grid boundary declares the POI channel and, with p1 set, whose
// block p1 has those UPS transfer settings (the others keep the
// example's).
func gridExample(t *testing.T, p1 string) *Sim {
	t.Helper()
	return gridExampleWith(t, p1, exCfg)
}

func gridExampleWith(t *testing.T, p1 string, cfg *simconfig.Config) *Sim {
	t.Helper()
	loadOnce.Do(loadExample)
	require.NoError(t, exErr)
	gridMu.Lock()
	c := gridContracts[p1]
	if c == nil {
		c = loadGridCopy(t, p1)
		gridContracts[p1] = c
	}
	gridMu.Unlock()
	if cfg == nil {
		cfg = exCfg
	}
	s, err := New(Config{Contracts: c, Sim: cfg, Profiles: exSet, Secrets: SecretsFrom(noEnv), Epoch: epoch})
	require.NoError(t, err)
	return s
}

func loadGridCopy(t *testing.T, p1 string) *contract.Contracts {
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, os.DirFS(exampleDir)))
	path := filepath.Join(dir, "grid.cue")
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	text := string(b)
	edit := func(old, new string) {
		require.Contains(t, text, old, "the example's grid.cue changed: update gridExample")
		text = strings.Replace(text, old, new, 1)
	}
	if !strings.Contains(text, `"`+poiChannel+`"`) {
		edit("channels: {}", `channels: "`+poiChannel+`": {quantity: "power"}`)
		edit("grid: {\n", "grid: {\n\t\tchannel: \""+poiChannel+"\"\n")
	}
	if p1 != "" {
		edit("a: ups: transfer: _transfer", "a: ups: transfer: _transferOf[c.power]")
		edit("b: ups: transfer: _transfer", "b: ups: transfer: _transferOf[c.power]")
		text += "\n_transferOf: {p1: " + p1 + ", p2: _transfer, p3: _transfer}\n"
	}
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	c, diags, err := contract.Load(dir)
	require.NoError(t, err)
	for _, d := range diags {
		require.NotEqual(t, diag.Error, d.Severity, "%s: %s", d.Pos, d.Message)
	}
	return c
}

// draw has the load banks of ma, mb and mc draw kw each, their
// watchdogs off (no heartbeat needed while the test advances the site).
func draw(t *testing.T, s *Sim, kw ...float64) {
	t.Helper()
	for i, lb := range []string{"lb-ma", "lb-mb", "lb-mc"} {
		s.Site.LoadBank(lb).Watchdog = 0
		require.NoError(t, s.Site.Command(lb, "heartbeat", 1))
		require.NoError(t, s.Site.Command(lb, "enable", 1))
		require.NoError(t, s.Site.Command(lb, "setpoint", kw[i]))
	}
}

// blocksKW is the power the three blocks deliver.
func blocksKW(t *testing.T, s *Sim) float64 {
	sum := 0.0
	for _, b := range []string{"p1/block", "p2/block", "p3/block"} {
		sum += signal(t, s, b, "power")
	}
	return sum
}

// TestPOIMeterSumsTheBlocks: the POI meter reads the blocks' power
// through the loss model of the UPSs and transformers, and its channel
// is the grid boundary's.
func TestPOIMeterSumsTheBlocks(t *testing.T) {
	s := gridExample(t, "")
	for _, tc := range []struct {
		name string
		kw   []float64
	}{
		{"idle banks", []float64{0, 0, 0}},
		{"three loads", []float64{1000, 1500, 2000}},
		{"one module", []float64{2000, 0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			draw(t, s, tc.kw...)
			s.Site.Advance(2 * time.Second)
			blocks := blocksKW(t, s)
			poi := signal(t, s, POIElement, "power")
			assert.InDelta(t, blocks/(UPSEfficiency*TransformerEfficiency), poi, 0.01, "the blocks' %.1f kW through the losses", blocks)
			assert.GreaterOrEqual(t, blocks, tc.kw[0]+tc.kw[1]+tc.kw[2]-1e-6, "the blocks carry the banks (and the fleet's nodes)")
			ch, err := s.ReadChannel(poiChannel)
			require.NoError(t, err)
			assert.InDelta(t, poi, ch, 0.01*poi+0.01, "the channel reads the meter")
			assert.Equal(t, 100.0, signal(t, s, POIElement, "voltage"), "1 pu")
		})
	}
}

// TestGridDipRideThrough dips the grid to 0.5 pu for 300 ms with the
// load banks drawing: UPSs that transfer only below 0.7 pu after 3 s
// (the example's) ride it on their batteries and the meter's power is
// back within a second; UPSs of p1 that transfer below 0.85 pu after
// 20 ms take ma's load off the grid for their 5 min back_after.
func TestGridDipRideThrough(t *testing.T) {
	const maKW = 1000.0
	for _, tc := range []struct {
		name     string
		p1       string
		transfer bool
	}{
		{"example settings ride through", "", false},
		{"settings inside the curve transfer", insideCurve, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := gridExample(t, tc.p1)
			draw(t, s, maKW, 1500, 1500)
			s.Site.Advance(3 * time.Second)
			before := s.Site.POIPower()
			p1 := signal(t, s, "p1/block", "power")
			assert.InDelta(t, maKW, p1, 100, "ma's banks and its idle nodes")
			require.Error(t, s.Site.GridDip("p1", 0.5, 0.3), "p1 is not a utility")
			require.NoError(t, s.Site.GridDip("u1", 0.5, 0.3))
			s.Site.Advance(100 * time.Millisecond)
			assert.Equal(t, 0.5, s.Site.GridPU())
			if !tc.transfer {
				assert.InDelta(t, before/2, s.Site.POIPower(), 0.01*before, "the rectifiers draw half, the batteries the rest")
			}
			s.Site.Advance(200 * time.Millisecond)
			s.Site.Advance(time.Second)
			assert.Equal(t, 1.0, s.Site.GridPU(), "the dip is over")
			onBattery, err := s.ReadChannel("p1/ma/alarm/on-battery")
			require.NoError(t, err)
			after, err := s.ReadChannel(poiChannel)
			require.NoError(t, err)
			if !tc.transfer {
				assert.GreaterOrEqual(t, after, 0.9*before, "restored within 1 s")
				assert.Zero(t, onBattery, "no UPS transferred")
				assert.Empty(t, s.Site.GridStatus().OnBattery)
				return
			}
			lost := p1 / (UPSEfficiency * TransformerEfficiency)
			assert.InDelta(t, before-lost, after, 0.01*before, "ma's load is off the grid")
			assert.Equal(t, 1.0, onBattery, "p1's UPSs are on battery")
			assert.Equal(t, []string{"p1/block/a", "p1/block/b"}, s.Site.GridStatus().OnBattery)
			// 1.3 s since the dip began; the voltage came back at 0.3 s:
			// still down just before back_after is over, back after it
			s.Site.Advance(300*time.Second + 300*time.Millisecond - 1300*time.Millisecond - 100*time.Millisecond)
			assert.InDelta(t, before-lost, s.Site.POIPower(), 0.01*before, "down for back_after")
			s.Site.Advance(200 * time.Millisecond)
			assert.GreaterOrEqual(t, s.Site.POIPower(), before, "back on the grid, recharging")
			assert.Empty(t, s.Site.GridStatus().OnBattery)
			s.Site.Advance(3 * time.Second)
			onBattery, err = s.ReadChannel("p1/ma/alarm/on-battery")
			require.NoError(t, err)
			assert.Zero(t, onBattery, "the on-battery alarm cleared")
		})
	}
}

func TestGridDipRefusals(t *testing.T) {
	s := example(t, "")
	for _, tc := range []struct {
		target      string
		pu, seconds float64
		want        string
	}{
		{"p1", 0.5, 1, `grid dip on "p1": not a utility module of the site (utilities: u1)`},
		{"u1", 1.2, 1, "voltage 1.2 pu: want 0 to 1 pu"},
		{"u1", 0.5, 0, "duration 0 s: want more than 0"},
	} {
		err := s.Site.GridDip(tc.target, tc.pu, tc.seconds)
		require.Error(t, err)
		assert.Contains(t, err.Error(), tc.want)
	}
	assert.Equal(t, 1.0, s.Site.GridPU())
}

// TestGridDipControl dips the grid through the control interface.
func TestGridDipControl(t *testing.T) {
	s := example(t, "")
	cs, err := s.ServeControl("127.0.0.1:0")
	require.NoError(t, err)
	defer cs.Close()
	c := &Client{URL: cs.URL()}
	ctx := context.Background()
	err = c.GridDip(ctx, "ma", 0.5, 1)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "utilities: u1) (404)")
	require.NoError(t, c.GridDip(ctx, "u1", 0.6, 2))
	g, err := c.Grid(ctx)
	require.NoError(t, err)
	assert.Equal(t, 0.6, g.VoltagePU)
	assert.InDelta(t, 2.0, g.DipLeftS, 1e-9)
	assert.Equal(t, []string{"u1"}, g.Utilities)
	s.Site.Advance(2010 * time.Millisecond)
	g, err = c.Grid(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1.0, g.VoltagePU)
}

// TestPOIMeterOverModbus reads the POI meter with the probe, through
// the generic-poi-meter profile, while the banks draw.
func TestPOIMeterOverModbus(t *testing.T) {
	s := gridExample(t, "")
	require.NoError(t, s.Start())
	defer s.Close()
	draw(t, s, 1200, 800, 400)
	s.Site.Advance(2 * time.Second)
	b := s.Binding(nil, "", EnvRefs)
	site, err := probe.OpenSite(b, probe.Options{LookupEnv: noEnv})
	require.NoError(t, err)
	defer site.Close()
	var meter probe.Device
	for _, d := range site.Devices {
		if d.Name() == "meter-poi" {
			meter = d
		}
	}
	require.NotNil(t, meter, "the binding has the POI meter")
	rs, err := meter.Read(context.Background())
	require.NoError(t, err)
	got := map[string]float64{}
	for _, r := range rs {
		assert.Equal(t, probe.Good, r.Quality, "%s: %v", r.Point, r.Err)
		got[r.Point] = r.Value
	}
	want := s.Site.POIPower()
	assert.Greater(t, want, 2400.0)
	assert.InDelta(t, want, got["power"], 1e-3*want, "float32 kW of the whole site")
	assert.InDelta(t, 100, got["voltage"], 1e-6, "1 pu, in % canonical")
	assert.InDelta(t, 50, got["frequency"], 1e-6)
	readings, err := site.ReadAll(context.Background())
	require.NoError(t, err)
	found := false
	for _, r := range readings {
		if r.Name == poiChannel {
			found = true
			assert.InDelta(t, want, r.Value, 1e-3*want)
		}
	}
	assert.True(t, found, "the grid channel is bound to the meter")
}

// TestSimulatedAnalyserCapturesAGridDip: the simulated analyser
// triggers on a dip at the POI and records the grid's voltage and the
// site's power there, under the grid boundary's channel.
func TestSimulatedAnalyserCapturesAGridDip(t *testing.T) {
	loadOnce.Do(loadExample)
	require.NoError(t, exErr)
	cfg := *exCfg
	dir := t.TempDir()
	cfg.Captures = &simconfig.Captures{Dir: dir, RateHz: 1000, PreS: 1, PostS: 2, TriggerPct: 0.5}
	s := gridExampleWith(t, "", &cfg)
	draw(t, s, 1000, 1000, 1000)
	s.Site.Advance(4 * time.Second) // the load step's captures of the blocks
	before := s.Site.POIPower()
	require.NoError(t, s.Site.GridDip("u1", 0.5, 0.3))
	s.Site.Advance(2500 * time.Millisecond)
	files, err := filepath.Glob(filepath.Join(dir, "poi-*.cfg"))
	require.NoError(t, err)
	require.Len(t, files, 1, "one dip, one capture at the POI")
	c, err := comtrade.Open(files[0])
	require.NoError(t, err)
	v, p := c.Channel("poi/voltage"), c.Channel(poiChannel)
	require.GreaterOrEqual(t, v, 0)
	require.GreaterOrEqual(t, p, 0)
	assert.Equal(t, "kW", c.Analogs[p].Unit)
	assert.InDelta(t, 1.0, c.TriggerOffset(), 0.011, "1 s before the trigger")
	at := func(s float64) int { return int(s * c.SampleRate()) }
	assert.InDelta(t, before, c.Analog[p][at(0.5)], 0.01*before, "before the dip")
	assert.InDelta(t, before/2, c.Analog[p][at(1.15)], 0.01*before, "during the dip: the rectifiers draw half")
	peak := func(from, to float64) float64 {
		m := 0.0
		for _, x := range c.Analog[v][at(from):at(to)] {
			m = max(m, math.Abs(x))
		}
		return m / math.Sqrt2
	}
	assert.InDelta(t, 1, peak(0.5, 0.9), 0.01, "1 pu before")
	assert.InDelta(t, 0.5, peak(1.05, 1.25), 0.01, "0.5 pu during")
	assert.InDelta(t, 1, peak(1.5, 2.5), 0.01, "1 pu after")
}
