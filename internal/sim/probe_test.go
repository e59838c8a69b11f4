package sim

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/probe"
)

// TestProbeReadsEveryDevice reads every point of all 123 devices with the
// project's probe while the three modules draw 1.8 MW each: every reading
// must be good (decoded, plausible, fresh) and the channels must carry
// the physics' values. (At the full 2.08 MW design load a rack PDU
// carries 65 kW, above the 60 kW the shipped PDU profiles call
// plausible, and the probe reports those power points as errors.)
func TestProbeReadsEveryDevice(t *testing.T) {
	s := served(t)
	const load = 1800.0
	for _, lb := range []string{"lb-ma", "lb-mb", "lb-mc"} {
		require.NoError(t, s.Site.Command(lb, "heartbeat", 1))
		require.NoError(t, s.Site.Command(lb, "enable", 1))
		require.NoError(t, s.Site.Command(lb, "setpoint", load))
	}
	s.Site.Advance(2 * time.Second)
	sec := SecretsFrom(noEnv)
	env := map[string]string{EnvCommunity: sec.Community, EnvAuth: sec.AuthPass, EnvPriv: sec.PrivPass}
	b := s.Binding(nil, "", EnvRefs)
	site, err := probe.OpenSite(b, probe.Options{LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
	require.NoError(t, err)
	defer site.Close()
	ctx := context.Background()
	points := 0
	for _, d := range site.Devices {
		rs, err := d.Read(ctx)
		for _, r := range rs {
			points++
			assert.Equal(t, probe.Good, r.Quality, "%s %s: %v", d.Name(), r.Point, r.Err)
		}
		assert.NoError(t, err, d.Name())
	}
	t.Logf("%d points of %d devices", points, len(site.Devices))
	readings, err := site.ReadAll(ctx)
	require.NoError(t, err)
	byName := map[string]probe.ChannelReading{}
	for _, r := range readings {
		byName[r.Name] = r
	}
	want := map[string]float64{"p1/ma/feed-a/power": load / 2, "p2/mb/feed-b/power": load / 2, "l3/mc/heat": load,
		"p1/ma/feed-a/voltage": 415, "l1/ma/flow": 3300, "lb-mb/applied": load}
	for ch, v := range want {
		r, ok := byName[ch]
		require.True(t, ok, ch)
		assert.InDelta(t, v, r.Value, 0.01*v+0.5, fmt.Sprintf("%s: %+v", ch, r))
	}
}
