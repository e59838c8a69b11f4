package sim

import (
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/comtrade"
	gr "github.com/seamdc/seam/internal/grade"
	"github.com/seamdc/seam/internal/sim/simconfig"
)

// withCaptures is the example site with the simulated analyser on.
func withCaptures(t *testing.T, offset float64) (*Sim, string) {
	t.Helper()
	loadOnce.Do(loadExample)
	require.NoError(t, exErr)
	cfg := *exCfg
	dir := t.TempDir()
	cfg.Captures = &simconfig.Captures{Dir: dir, OffsetS: offset, RateHz: 1000, PreS: 1, PostS: 2, TriggerPct: 0.5}
	s, err := New(Config{Contracts: exC, Sim: &cfg, Profiles: exSet,
		Secrets: SecretsFrom(func(string) (string, bool) { return "", false }), Epoch: epoch})
	require.NoError(t, err)
	return s, dir
}

// A 2 MW load step on p1's block is captured at 1 kHz by an analyser
// whose clock reads 1.3 s ahead: the trigger sits 1.3 s after the
// commanded edge on the analyser's clock, the dip is the physics' dip,
// and grading it against ITIC, aligned on the edge, finds the offset.
func TestSimulatedAnalyserCapturesALoadStep(t *testing.T) {
	s, dir := withCaptures(t, 1.3)
	require.NoError(t, s.Site.Command("lb-ma", "heartbeat", 1))
	require.NoError(t, s.Site.Command("lb-ma", "enable", 1))
	s.Site.Advance(1500 * time.Millisecond)
	edge := s.Site.Now()
	require.NoError(t, s.Site.Command("lb-ma", "setpoint", 2000))
	dipped := math.Inf(1)
	for range 10 {
		s.Site.Step(1)
		dipped = min(dipped, signal(t, s, "p1/block/a", "voltage"))
	}
	require.NoError(t, s.Site.Command("lb-ma", "heartbeat", 2))
	s.Site.Advance(2500 * time.Millisecond)

	files, err := filepath.Glob(filepath.Join(dir, "*.cfg"))
	require.NoError(t, err)
	require.Len(t, files, 1, "one transient, one capture")
	assert.Equal(t, "p1-block-001.cfg", filepath.Base(files[0]))
	c, err := comtrade.Open(files[0])
	require.NoError(t, err)
	assert.Equal(t, "2013", c.Revision)
	assert.Equal(t, comtrade.Binary32, c.DataType)
	assert.Equal(t, 1000.0, c.SampleRate())
	assert.Equal(t, 50.0, c.LineHz)
	assert.Equal(t, 3000, len(c.Time), "1 s before the trigger, 2 s after")
	lag := c.Trigger.Sub(edge.Add(1300 * time.Millisecond))
	assert.True(t, lag >= 0 && lag <= 20*time.Millisecond, "trigger %v after the edge on the analyser's clock, want within a step or two", lag)
	assert.InDelta(t, 1.0, c.TriggerOffset(), 0.011)

	ch := c.Channel("p1/block/a")
	require.GreaterOrEqual(t, ch, 0)
	lowest := math.Inf(1)
	for _, v := range c.Analog[ch] {
		lowest = min(lowest, math.Abs(v))
	}
	peakDip := math.Inf(1)
	for k := 0; k+20 <= len(c.Time); k += 10 {
		peak := 0.0
		for _, v := range c.Analog[ch][k : k+20] {
			peak = max(peak, math.Abs(v))
		}
		peakDip = min(peakDip, peak/math.Sqrt2)
	}
	assert.InDelta(t, dipped, peakDip, 0.01*dipped, "the capture's lowest cycle peak is the physics' dip")
	assert.True(t, c.Status[ch][0] && c.Status[ch][len(c.Time)-1], "feed live throughout")

	w := gr.Wave{Channel: "p1/block/a", Start: c.Start, Trigger: c.Trigger, Rate: c.SampleRate(), LineHz: c.LineHz, Values: c.Analog[ch]}
	itic := []gr.MaskPoint{{DurationS: 0.02, MinPct: 0, MaxPct: 120}, {DurationS: 0.5, MinPct: 70, MaxPct: 120}, {DurationS: 10, MinPct: 80, MaxPct: 110}, {DurationS: 1e9, MinPct: 90, MaxPct: 110}}
	r := gr.GradeCapture(w, 415, itic, []time.Time{edge.Add(-10 * time.Second), edge})
	assert.Equal(t, gr.Pass, r.Verdict.Outcome, r.Verdict.Detail)
	assert.InDelta(t, -1.3, r.Align.OffsetS, 0.02)
}

// A feed loss is captured as a dropout to 0 V on that feed, its status
// channel going off; the analyser's clock may run behind the site's.
func TestSimulatedAnalyserCapturesAFeedLoss(t *testing.T) {
	s, dir := withCaptures(t, -0.4)
	require.NoError(t, s.Site.Command("lb-ma", "heartbeat", 1))
	require.NoError(t, s.Site.Command("lb-ma", "enable", 1))
	require.NoError(t, s.Site.Command("lb-ma", "setpoint", 1000))
	s.Site.Advance(4 * time.Second) // the load step's capture
	require.NoError(t, s.Site.Command("lb-ma", "heartbeat", 2))
	require.NoError(t, s.Site.Inject(Fault{Kind: FeedLoss, Target: "p1/block/a"}))
	s.Site.Advance(2500 * time.Millisecond)
	files, err := filepath.Glob(filepath.Join(dir, "*.cfg"))
	require.NoError(t, err)
	require.Len(t, files, 2)
	c, err := comtrade.Open(files[1])
	require.NoError(t, err)
	a := c.Channel("p1/block/a")
	last := len(c.Time) - 1
	assert.Zero(t, c.Analog[a][last], "feed a is lost")
	assert.False(t, c.Status[a][last])
	assert.True(t, c.Status[a][0])
}
