package apply

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/bmcsecret"
	"github.com/seamdc/seam/internal/capping"
	"github.com/seamdc/seam/internal/inventory"
	"github.com/seamdc/seam/internal/redfish/bmc"
	"github.com/seamdc/seam/internal/redfish/bmchttp"
	"github.com/seamdc/seam/internal/sim/fleet"
	"github.com/seamdc/seam/internal/sim/fleet/fleettest"
)

func exampleFleet(t testing.TB) *fleet.Fleet { return fleettest.Example(t) }

// source is one node's BMC side: its limit as a node keeps it.
type source struct {
	mu    sync.Mutex
	f     *fleet.Fleet
	tray  *fleet.Tray
	limit bmc.Limit
	sets  []float64
}

func (s *source) Version() uint64 { return 1 }
func (s *source) Graph() (*inventory.Graph, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.f.TrayGraph(s.tray), nil
}
func (s *source) Live() bmc.Live {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.limit
	return bmc.Live{PowerState: "On", PowerW: 5000, Limit: &l}
}
func (s *source) SetPowerLimit(sp *float64, mode string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sp != nil {
		if *sp < s.limit.Min || *sp > s.limit.Max {
			return fmt.Errorf("%.0f W is outside %.0f..%.0f W", *sp, s.limit.Min, s.limit.Max)
		}
		s.limit.SetPoint = *sp
		s.sets = append(s.sets, *sp)
	}
	if mode != "" {
		s.limit.Mode = mode
	}
	return nil
}
func (s *source) Reset(string) error { return nil }
func (s *source) Now() time.Time     { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }

func (s *source) set() []float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]float64(nil), s.sets...)
}

const user, pass = "admin", "seam-sim-bmc"

func serve(t testing.TB, cfg bmc.Config) (*bmc.Server, *source, Target) {
	t.Helper()
	f := exampleFleet(t)
	src := &source{f: f, tray: f.Tray("ma/r01/compute-03"), limit: bmc.Limit{SetPoint: 6400, Min: 2560, Max: 6400, Mode: "Automatic"}}
	cfg.Name, cfg.User, cfg.Password = "bmc-a-r01-n03", user, pass
	s, err := bmc.Serve(bmc.New(cfg, src), "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s, src, Target{URL: s.URL(), Cap: capping.Cap{Node: "gpu-a-r01-n03", Key: "ma/r01/compute-03", BMC: "bmc-a-r01-n03",
		Watts: 4000, MinW: 2560, MaxW: 6400, DesignW: 6400}}
}

// stepClock is a clock whose Sleep returns at once, moving its time:
// the waits a Retry-After asks for are counted, never slept.
type stepClock struct {
	mu     sync.Mutex
	now    time.Time
	slept  []time.Duration
	sleeps int
}

func (c *stepClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *stepClock) Sleep(_ context.Context, d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	c.slept = append(c.slept, d)
	return nil
}

func allowAll(string, string) error { return nil }

func opts(clk *stepClock) Options {
	return Options{Access: bmchttp.Access{User: user, Password: pass, Clock: clk, Timeout: 20 * time.Second}, Writable: allowAll}
}

// A cap written through each variant of a BMC's power limit reads back
// in W; the session is made and DELETEd, one request at a time; clear
// puts the BMC's maximum back.
func TestApplyVariants(t *testing.T) {
	for _, c := range []struct {
		name    string
		cfg     bmc.Config
		control string
		units   string
	}{
		{"control in W", bmc.Config{}, Control, "W"},
		{"control in %", bmc.Config{LimitUnits: "%"}, Control, "%"},
		{"control in kW", bmc.Config{LimitUnits: "kW"}, Control, "kW"},
		{"legacy Power only", bmc.Config{Legacy: true}, Legacy, "W"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, src, tg := serve(t, c.cfg)
			rs := Run(context.Background(), Apply, []Target{tg}, opts(&stepClock{}))
			require.Len(t, rs, 1)
			r := rs[0]
			require.NoError(t, r.Err)
			assert.Equal(t, c.control, r.Control)
			assert.Equal(t, c.units, r.Units)
			assert.Equal(t, 6400.0, r.BeforeW)
			assert.Equal(t, 4000.0, r.ReadBackW)
			assert.Equal(t, 6400.0, r.MaxW)
			assert.True(t, r.Written)
			assert.Equal(t, []float64{4000}, src.set())
			st := s.BMC.Stats()
			assert.Equal(t, 0, st.Sessions, "the session was deleted")
			assert.Equal(t, 1, st.SessionsMade)
			assert.Equal(t, 1, st.MaxInFlight, "one request at a time")

			rs = Run(context.Background(), Read, []Target{tg}, Options{Access: bmchttp.Access{User: user, Password: pass}})
			require.NoError(t, rs[0].Err)
			assert.Equal(t, 4000.0, rs[0].ReadBackW)
			assert.False(t, rs[0].Written)

			rs = Run(context.Background(), Clear, []Target{tg}, opts(&stepClock{}))
			require.NoError(t, rs[0].Err)
			assert.Equal(t, 6400.0, rs[0].ReadBackW)
			assert.Equal(t, []float64{4000, 6400}, src.set())
		})
	}
}

// A busy BMC's 503s are waited out for as long as its Retry-After asks,
// on the clock.
func TestApplyRetryAfter(t *testing.T) {
	s, src, tg := serve(t, bmc.Config{})
	s.BMC.SetBusyFor(2, 5)
	clk := &stepClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	rs := Run(context.Background(), Apply, []Target{tg}, opts(clk))
	require.NoError(t, rs[0].Err)
	assert.Equal(t, 2, rs[0].Waits)
	assert.Equal(t, []time.Duration{5 * time.Second, 5 * time.Second}, clk.slept)
	assert.Equal(t, []float64{4000}, src.set())
}

// Bad input: each an error naming the BMC, the node and the control,
// and nothing written that should not be.
func TestApplyErrors(t *testing.T) {
	for _, c := range []struct {
		name   string
		cfg    bmc.Config
		fault  string
		watts  float64
		opt    func(*Options)
		err    string
		sets   []float64
		noReqs bool
	}{
		{name: "not declared writable", opt: func(o *Options) {
			o.Writable = func(b, c string) error {
				return fmt.Errorf("BIND032: BMC %s: control %s is not declared writable", b, c)
			}
		}, err: "BMC bmc-a-r01-n03 (node gpu-a-r01-n03): BIND032: BMC bmc-a-r01-n03: control PowerLimit is not declared writable", noReqs: true},
		{name: "no allow-list", opt: func(o *Options) { o.Writable = nil }, err: "no allow-list given: nothing is written", noReqs: true},
		{name: "below the BMC's range", watts: 2000,
			err: "BMC bmc-a-r01-n03 (node gpu-a-r01-n03): Controls/PowerLimit: a cap of 2000 W is outside the BMC's range 2560..6400 W (AllowableMin..AllowableMax 2560..6400 W): nothing written"},
		{name: "below the range in %", cfg: bmc.Config{LimitUnits: "%"}, watts: 2000,
			err: "a cap of 2000 W is outside the BMC's range 2560..6400 W (AllowableMin..AllowableMax 40..100 % of 6400 W)"},
		{name: "above the legacy capacity", cfg: bmc.Config{Legacy: true}, watts: 7000,
			err: "Power.PowerControl[0].PowerLimit.LimitInWatts: a cap of 7000 W is outside the BMC's range 2560..6400 W"},
		{name: "other units", cfg: bmc.Config{LimitUnits: "A"},
			err: `the control answers in "A": only W, kW and % are understood, so nothing is written`},
		{name: "refused", fault: bmc.FaultReadOnly,
			err: "Controls/PowerLimit: PATCH /redfish/v1/Chassis/ma-r01-compute-03/Controls/PowerLimit: the BMC refused the cap: 403"},
		{name: "reset mid-write", fault: bmc.FaultResetOnWrite,
			err: "no answer", sets: []float64{6400}},
		{name: "wrong password", opt: func(o *Options) { o.Password = "nope" }, err: "login: 401"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, src, tg := serve(t, c.cfg)
			if c.fault != "" {
				require.NoError(t, s.BMC.SetFault(c.fault, true))
			}
			if c.watts > 0 {
				tg.Watts = c.watts
			}
			o := opts(&stepClock{})
			if c.opt != nil {
				c.opt(&o)
			}
			rs := Run(context.Background(), Apply, []Target{tg}, o)
			require.Error(t, rs[0].Err)
			assert.Contains(t, rs[0].Error, c.err)
			assert.Contains(t, rs[0].Error, "BMC bmc-a-r01-n03 (node gpu-a-r01-n03)")
			assert.Equal(t, c.sets, src.set(), "nothing written")
			if c.noReqs {
				assert.Equal(t, 0, s.BMC.Stats().Requests, "not one request to a BMC not allowed")
			}
		})
	}
}

// Many BMCs at once: at most Parallel, each with its own session.
func TestApplyMany(t *testing.T) {
	var tgs []Target
	var srvs []*bmc.Server
	for range 6 {
		s, _, tg := serve(t, bmc.Config{})
		tgs, srvs = append(tgs, tg), append(srvs, s)
	}
	o := opts(&stepClock{})
	o.Parallel, o.PerBMC = 2, 2
	rs := Run(context.Background(), Apply, tgs, o)
	for i, r := range rs {
		require.NoError(t, r.Err)
		assert.Equal(t, 4000.0, r.ReadBackW)
		st := srvs[i].BMC.Stats()
		assert.Equal(t, 0, st.Sessions)
		assert.LessOrEqual(t, st.MaxInFlight, 2)
	}
}

// A secrets file's BMC: its active secret first, then its pending one (a
// rotation that changed the BMC but not yet the file's active entry); a
// BMC that takes neither is credential_lost, named, with no secret in
// the message.
func TestApplySecretsFile(t *testing.T) {
	for _, c := range []struct {
		name, active, pending, err string
	}{
		{"the active secret", pass, "", ""},
		{"the pending secret", "rotated-away", pass, ""},
		{"neither", "rotated-away", "never-set", "credential_lost: BMC bmc-a-r01-n03 refused every secret the site holds for it (admin (active secret), admin (pending secret))"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, src, tg := serve(t, bmc.Config{})
			o := opts(&stepClock{})
			o.User, o.Password = "", ""
			o.Secrets = &bmcsecret.File{Path: "bmc-secrets.json", BMCs: map[string]bmcsecret.Entry{
				"bmc-a-r01-n03": {User: user, Active: c.active, Pending: c.pending}}}
			rs := Run(context.Background(), Apply, []Target{tg}, o)
			if c.err == "" {
				require.NoError(t, rs[0].Err)
				assert.Equal(t, []float64{4000}, src.set())
				return
			}
			require.Error(t, rs[0].Err)
			assert.ErrorIs(t, rs[0].Err, bmchttp.ErrCredentialLost)
			assert.Contains(t, rs[0].Err.Error(), c.err)
			for _, secret := range []string{c.active, c.pending} {
				assert.NotContains(t, rs[0].Err.Error(), secret)
			}
			assert.Empty(t, src.set(), "nothing written")
		})
	}
}
