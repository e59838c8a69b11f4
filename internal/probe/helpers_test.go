package probe

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/binding"
	"github.com/seamdc/seam/internal/probe/probetest"
	"github.com/seamdc/seam/internal/profile"
)

var profiles *profile.Set

func shipped(t testing.TB, name string) *profile.Profile {
	t.Helper()
	if profiles == nil {
		set, err := profile.MustLoad("../../fixtures/profiles")
		require.NoError(t, err)
		profiles = set
	}
	p := profiles.Get(name)
	require.NotNil(t, p, name)
	return p
}

func mbDevice(p *profile.Profile, addr string) *binding.Device {
	return &binding.Device{Name: "dev1", Protocol: binding.ModbusTCP, Address: addr, Unit: 7,
		Timeout: time.Second, ProfileName: p.Name, Profile: p}
}

func startModbus(t testing.TB, p *profile.Profile, values map[string]float64) *probetest.Modbus {
	t.Helper()
	s, err := probetest.NewModbus(p, values, true)
	require.NoError(t, err)
	t.Cleanup(s.Stop)
	return s
}

func open(t testing.TB, dev *binding.Device, opts Options) Device {
	t.Helper()
	d, err := Open(dev, opts)
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	return d
}

func read(t testing.TB, d Device) map[string]Reading {
	t.Helper()
	rs, _ := d.Read(context.Background())
	out := map[string]Reading{}
	for _, r := range rs {
		out[r.Point] = r
	}
	require.Len(t, out, len(d.Profile().Points))
	return out
}

func qualities(rs map[string]Reading) map[Quality]int {
	out := map[Quality]int{}
	for _, r := range rs {
		out[r.Quality]++
	}
	return out
}
