package poll_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/alarm"
	"github.com/seamdc/seam/internal/alarm/poll"
	"github.com/seamdc/seam/internal/clock"
	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/probe"
	"github.com/seamdc/seam/internal/sim"
)

const example = "../../../contracts/examples/threemodule"

type seen struct {
	mu    sync.Mutex
	obs   []alarm.Observation
	beats map[string]int
	// the site times of the poller's good reads of heartbeat counters
	heard func() time.Duration
	reads []time.Duration
}

func (s *seen) sink(o alarm.Observation) { s.mu.Lock(); s.obs = append(s.obs, o); s.mu.Unlock() }
func (s *seen) beat(name string, _ time.Time) {
	s.mu.Lock()
	s.beats[name]++
	s.mu.Unlock()
}

// has reports whether an observation of t for domain d, active or not,
// was seen.
func (s *seen) has(t alarm.Type, d string, active bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, o := range s.obs {
		if o.Type == t && o.Domain.String() == d && o.Active == active {
			return true
		}
	}
	return false
}

func (s *seen) beatsOf(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.beats[name]
}

// sample notes, in site time, each good read of the heartbeat counter
// of ctl-mb, mb's controls link.
func (s *seen) sample(sm probe.Sample) {
	if sm.Device != "ctl-mb" {
		return
	}
	for _, r := range sm.Readings {
		if r.Point == "heartbeats" && r.Quality == probe.Good {
			at := s.heard()
			s.mu.Lock()
			s.reads = append(s.reads, at)
			s.mu.Unlock()
		}
	}
}

// readsSince counts the good reads of the heartbeat counter at or after
// site time t.
func (s *seen) readsSince(t time.Duration) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, at := range s.reads {
		if at >= t {
			n++
		}
	}
	return n
}

// The one poller, against the simulated site's real Modbus servers: the
// contract's alarm channels map to their domains; a pump trip on l2
// shows as a pump fault and then l2's redundancy lost; a controls link
// counts its controller's heartbeats, which stop when the controller
// falls silent; a CDU group controller that leaves the network is
// device_silent for its loop, and answers again.
func TestPollerOnTheSimulatedSite(t *testing.T) {
	c, diags, err := contract.Load(example)
	require.NoError(t, err)
	require.Empty(t, diags)
	_, err = c.ReadInventory(nil)
	require.NoError(t, err)
	g, _ := c.Graph()
	ix := alarm.NewIndex(g)
	o, diags, err := sim.Open(sim.Paths{Contracts: example, Fixtures: "../../../fixtures"}, "", sim.SecretsFrom(func(string) (string, bool) { return "", false }), time.Time{}, nil)
	require.NoError(t, err)
	require.Empty(t, diags)
	require.NoError(t, o.Start())
	t.Cleanup(o.Close)
	b := o.Binding(o.ProfileDirs, o.Paths.Contracts, sim.EnvRefs)

	var channels []poll.Channel
	for _, bd := range c.Boundaries {
		for _, ch := range bd.Channels {
			channels = append(channels, poll.Channel{Name: ch.Name, Quantity: string(ch.Quantity), At: ch.At.To, Consumer: bd.Consumer.To})
		}
	}
	points, errs := poll.Points(channels, b, ix)
	require.Empty(t, errs)
	byChannel := map[string]poll.Point{}
	for _, p := range points {
		byChannel[p.Channel] = p
	}
	require.Len(t, points, 15, "5 alarm channels per cell")
	assert.Equal(t, poll.Point{Device: "cdu-l2", Point: "redundancy-lost", Channel: "l2/mb/alarm/redundancy-lost", Type: alarm.CoolingRedundancyLost,
		Domain: alarm.Domain{Kind: alarm.CoolingLoop, Value: "l2"}}, byChannel["l2/mb/alarm/redundancy-lost"])
	assert.Equal(t, "module=mb", byChannel["ctl/mb/alarm/controller-silent"].Domain.String(), "a controller's silence is its module's")
	assert.Equal(t, "power_block=p2", byChannel["p2/mb/alarm/on-battery"].Domain.String())
	sib := poll.Siblings(points, b)
	var l2 []string
	for _, p := range sib {
		if p.Device == "cdu-l2" {
			l2 = append(l2, p.Point)
		}
	}
	assert.ElementsMatch(t, []string{"high-supply-temp", "low-flow", "pump-fault"}, l2)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go o.Site.Run(ctx, clock.Real{}, 1)
	site, err := probe.OpenSite(b, probe.Options{LookupEnv: func(string) (string, bool) { return "", false }})
	require.NoError(t, err)
	defer site.Close()
	s := &seen{beats: map[string]int{}, heard: o.Site.Time}
	p := &poll.Poller{Devices: []probe.Device{site.Device("cdu-l2"), site.Device("ctl-mb")}, Points: append(points, sib...),
		Counters: []poll.Counter{{Device: "ctl-mb", Point: "heartbeats", Heartbeat: "ctl-mb"}},
		Period:   100 * time.Millisecond, Silence: time.Second, Sink: s.sink, Beat: s.beat, Sample: s.sample}
	done := make(chan struct{})
	go func() { p.Run(ctx, clock.Real{}); close(done) }()

	require.Eventually(t, func() bool { return s.has(alarm.CoolingRedundancyLost, "cooling_loop=l2", false) }, 5*time.Second, 20*time.Millisecond,
		"the first read reports each point's state")
	require.Eventually(t, func() bool { return s.beatsOf("ctl-mb") >= 2 }, 5*time.Second, 20*time.Millisecond, "mb's controller beats once a second")

	require.NoError(t, o.Site.Inject(sim.Fault{Kind: sim.PumpTrip, Target: "l2/loop/cdu-1/p1"}))
	require.Eventually(t, func() bool { return s.has(alarm.PumpFault, "cooling_loop=l2", true) }, 5*time.Second, 20*time.Millisecond,
		"no pump_fault for l2 within 5 s of the pump trip")
	require.Eventually(t, func() bool { return s.has(alarm.CoolingRedundancyLost, "cooling_loop=l2", true) }, 10*time.Second, 20*time.Millisecond,
		"l2's redundancy not lost within 10 s of the pump trip")

	require.NoError(t, o.Site.Inject(sim.Fault{Kind: sim.ControllerSilent, Target: "ctl/net/mb"}))
	require.Eventually(t, func() bool { return s.has(alarm.ControllerSilent, "module=mb", true) }, 10*time.Second, 20*time.Millisecond,
		"no controller_silent for mb within 10 s of its link failing")
	// the controller beats once a second: two good reads of its
	// counter 1.2 s of site time on (the first's beat, had there been
	// one, delivered before the second read) prove it silent
	n, from := s.beatsOf("ctl-mb"), o.Site.Time()
	require.Eventually(t, func() bool { return s.readsSince(from+1200*time.Millisecond) >= 2 }, 10*time.Second, 20*time.Millisecond,
		"the poller did not read mb's heartbeat counter 1.2 s of site time after the controller fell silent")
	assert.Equal(t, n, s.beatsOf("ctl-mb"), "no beats from a silent controller")

	require.NoError(t, o.Site.Inject(sim.Fault{Kind: sim.DeviceReboot, Target: "cdu-l2", For: 4}))
	require.Eventually(t, func() bool { return s.has(alarm.DeviceSilent, "cooling_loop=l2", true) }, 10*time.Second, 20*time.Millisecond,
		"rebooting cdu-l2 not device_silent for l2 within 10 s")
	require.Eventually(t, func() bool { return s.has(alarm.DeviceSilent, "cooling_loop=l2", false) }, 20*time.Second, 50*time.Millisecond,
		"cdu-l2 not answering again within 20 s of its 4 s reboot")
	cancel()
	<-done
}
