package discover_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/discover"
	"github.com/seamdc/seam/internal/inventory"
	"github.com/seamdc/seam/internal/lifecycle"
	"github.com/seamdc/seam/internal/sim"
	"github.com/seamdc/seam/internal/sim/fleet"
)

const example = "../../contracts/examples/threemodule"

// served is the example site, simulated, with its BMCs on loopback.
func served(t testing.TB) *sim.Opened {
	t.Helper()
	o, err := openServed()
	require.NoError(t, err)
	t.Cleanup(o.Close)
	return o
}

// openServed opens the simulated example site and serves it.
func openServed() (*sim.Opened, error) {
	o, diags, err := sim.Open(sim.Paths{Contracts: example, Fixtures: "../../fixtures"}, "", sim.SecretsFrom(func(string) (string, bool) { return "", false }),
		time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), nil)
	if err == nil && len(diags) > 0 {
		err = fmt.Errorf("the simulated site's inputs: %v", diags)
	}
	if err != nil {
		return nil, err
	}
	if err := o.Start(); err != nil {
		return nil, err
	}
	return o, nil
}

// simClock waits in site time: a Retry-After moves the simulation on.
type simClock struct{ s *sim.Site }

func (c simClock) Now() time.Time { return c.s.Now() }
func (c simClock) Sleep(ctx context.Context, d time.Duration) error {
	c.s.Advance(d)
	return ctx.Err()
}

func graph(t testing.TB, o *sim.Opened) *inventory.Graph {
	var g *inventory.Graph
	require.NoError(t, o.Site.WithFleet(func(f *fleet.Fleet) error { g = f.Graph(); return nil }))
	return g
}

// targets are the served BMCs of some racks, expecting the trays the
// inventory puts behind them.
func targets(o *sim.Opened, racks ...string) []discover.Target {
	var out []discover.Target
	for _, b := range o.BMCs() {
		for _, r := range racks {
			if strings.HasPrefix(b.Key, r+"/") {
				out = append(out, discover.Target{Name: b.Name, URL: "http://" + b.Address, Expect: b.Key})
			}
		}
	}
	return out
}

func options(o *sim.Opened) discover.Options {
	sec := sim.SecretsFrom(func(string) (string, bool) { return "", false })
	return discover.Options{User: sec.BMCUser, Password: sec.BMCPassword, Timeout: 2 * time.Second, Parallel: 16, Clock: simClock{o.Site}}
}

func kinds(fs []discover.Finding) map[string][]string {
	out := map[string][]string{}
	for _, f := range fs {
		out[f.Kind] = append(out[f.Kind], f.Element)
	}
	return out
}

// Two racks of the healthy site match the inventory: every tray found
// where it is declared, with its serials, parts, PSUs and firmware; no
// BMC ever has more requests in flight than asked, and every session is
// closed.
func TestDiscoverMatches(t *testing.T) {
	o := served(t)
	d := discover.Declare(graph(t, o), nil).Only("ma/r01", "ma/r02")
	for _, per := range []int{1, 2} {
		opt := options(o)
		opt.PerBMC = per
		r := discover.Run(context.Background(), "threemodule", d, targets(o, "ma/r01", "ma/r02"), opt)
		assert.Empty(t, r.Errors)
		assert.Empty(t, r.Findings)
		assert.Equal(t, 70, r.Found)
		assert.Equal(t, 70, r.Declared)
		assert.True(t, r.Clean())
		for _, tg := range targets(o, "ma/r01", "ma/r02") {
			st := o.BMC(tg.Name).Stats()
			assert.LessOrEqual(t, st.MaxInFlight, per, tg.Name)
			assert.Zero(t, st.Sessions, "%s: the session is closed", tg.Name)
			assert.Zero(t, st.Busy, tg.Name)
		}
	}
	var compute *discover.Tray
	for _, tr := range discover.Walk(context.Background(), targets(o, "ma/r01")[:20], options(o)) {
		for _, x := range tr.Trays {
			if x.Kind == "compute" && compute == nil {
				compute = x
			}
		}
	}
	require.NotNil(t, compute)
	assert.Len(t, compute.Parts, 4+2+5, "4 GPUs, 2 CPUs, 4 NICs and a DPU")
	assert.Equal(t, map[string]string{"bios": "1.4.2", "bmc": "25.06-1"}, compute.Firmware)
}

// The defects discovery must name: a swapped GPU, two trays in each
// other's slots, a tray moved to another rack, firmware drift, a PSU
// gone from its bay, a tray gone, an extra tray.
func TestDiscoverFindsTheDefects(t *testing.T) {
	o := served(t)
	for _, d := range []fleet.Defect{
		{Kind: fleet.SwappedPart, Target: "ma/r01/compute-03/gpu-2", Serial: "SN-GPU-RMA-0001"},
		{Kind: fleet.WrongSlot, Target: "ma/r01/compute-05", With: "ma/r01/compute-06"},
		{Kind: fleet.WrongSlot, Target: "ma/r01/compute-10", With: "ma/r02/compute-10"},
		{Kind: fleet.FirmwareDrift, Target: "ma/r02/nvswitch-03", Component: "bmc", Version: "25.09-2"},
		{Kind: fleet.MissingPSU, Target: "ma/r02/shelf-07/psu-4"},
		{Kind: fleet.MissingTray, Target: "ma/r02/compute-18"},
		{Kind: fleet.ExtraTray, Target: "ma/r01", Slot: 33},
	} {
		require.NoError(t, o.AddFleetDefect(d), d.String())
	}
	d := discover.Declare(graph(t, o), nil).Only("ma/r01", "ma/r02")
	r := discover.Run(context.Background(), "threemodule", d, targets(o, "ma/r01", "ma/r02"), options(o))
	assert.Empty(t, r.Errors)
	got := kinds(r.Findings)
	assert.Equal(t, map[string][]string{
		discover.ChangedSerial: {"ma/r01/compute-03/gpu-2"},
		discover.WrongSlot:     {"ma/r01/compute-05", "ma/r01/compute-06"},
		discover.WrongRack:     {"ma/r01/compute-10", "ma/r02/compute-10"},
		discover.FirmwareDrift: {"ma/r02/nvswitch-03"},
		discover.PSUAbsent:     {"ma/r02/shelf-07/psu-4"},
		discover.MissingTray:   {"ma/r02/compute-18"},
		discover.ExtraTray:     {"ma/r01 U33"},
	}, got)
	var text bytes.Buffer
	r.WriteText(&text)
	t.Logf("\n%s", text.String())
	for _, want := range []string{
		"ma/r01/compute-03/gpu-2: serial SN-GPU-RMA-0001, the inventory says SN-GPU-0000010",
		"node gpu-a-r01-n10 (ma/r01/compute-10) SN-COMPUTE-0000010 is in the wrong rack: the inventory puts it at ma/r01 U23, its BMC reports ma/r02 U23",
		"node gpu-a-r01-n05 (ma/r01/compute-05) SN-COMPUTE-0000005 is in the wrong slot: the inventory puts it at ma/r01 U9, its BMC reports ma/r01 U10",
		"bmc firmware 25.09-2, the inventory says 25.06-1",
		"ma/r02/shelf-07/psu-4: bay 4 is empty",
		"node gpu-a-r02-n18 (ma/r02/compute-18) at ma/r02 U31: no BMC reports it",
	} {
		assert.Contains(t, text.String(), want)
	}
	var js bytes.Buffer
	require.NoError(t, r.WriteJSON(&js))
	var back map[string]any
	require.NoError(t, json.Unmarshal(js.Bytes(), &back))
	assert.Len(t, back["findings"], 9)
	// the event is the lifecycle store's reconcile report (its JSON)
	ev := r.Event(o.Site.Now(), "sat discover test", "ma/r01", "ma/r02")
	b, err := json.Marshal(ev)
	require.NoError(t, err)
	// the store's own reader takes it as it is (unknown fields refused)
	rec, err := lifecycle.ParseReconcile(b)
	require.NoError(t, err)
	assert.Len(t, rec.Findings, 9)
	assert.Equal(t, 70, rec.BMCs)
	var store struct {
		Source   string    `json:"source"`
		At       time.Time `json:"at"`
		Scope    []string  `json:"scope"`
		Checked  int       `json:"checked"`
		Findings []struct {
			Element, Kind, Field, Declared, Discovered, Detail string
		} `json:"findings"`
	}
	require.NoError(t, json.Unmarshal(b, &store))
	assert.Equal(t, "sat discover test", store.Source)
	assert.Equal(t, []string{"ma/r01", "ma/r02"}, store.Scope)
	assert.Equal(t, 70, store.Checked)
	require.Len(t, store.Findings, 9)
	byKind := map[string][]string{}
	for _, f := range store.Findings {
		byKind[f.Kind] = append(byKind[f.Kind], f.Element+" "+f.Field)
	}
	assert.Equal(t, map[string][]string{
		"unexpected": {"ma/r01 slot 33"},
		"serial":     {"ma/r01/compute-03/gpu-2 serial"},
		"other":      {"ma/r01/compute-05 location", "ma/r01/compute-06 location", "ma/r01/compute-10 location", "ma/r02/compute-10 location"},
		"missing":    {"ma/r02/compute-18 ", "ma/r02/shelf-07/psu-4 "},
		"firmware":   {"ma/r02/nvswitch-03 firmware.bmc"},
	}, byKind)
}

// Broken BMCs: 401, a chassis that is 404, garbage, a redirect loop,
// no answer, a Contains loop. Each is an error naming the BMC and the
// URI; the other BMCs' walk goes on, and a tray behind a failed BMC is
// reported missing with its BMC's error. A busy BMC's Retry-After is
// honoured (in site time), and it is walked once it answers.
func TestDiscoverBadBMCs(t *testing.T) {
	o := served(t)
	faults := map[string]string{
		"bmc-a-r01-n01":          sim.BMCUnauthorized,
		"bmc-a-r01-n02":          sim.BMCNotFound,
		"bmc-a-r01-n03":          sim.BMCGarbage,
		"bmc-a-r01-n04":          sim.BMCRedirectLoop,
		"bmc-a-r01-n05":          sim.BMCTimeout,
		"bmc-a-r01-n06":          sim.BMCContainsLoop,
		"bmc-ma-r01-nvswitch-01": sim.BMCBusy,
	}
	for bmcName, kind := range faults {
		f := sim.Fault{Kind: kind, Target: bmcName}
		if kind == sim.BMCBusy {
			f.For = 2 // s, site time
		}
		require.NoError(t, o.Site.Inject(f))
	}
	opt := options(o)
	// the silent BMC's wait; long enough that the redirect loop's ten
	// redirects (one request's time) end on a busy machine
	opt.Timeout = 3 * time.Second
	d := discover.Declare(graph(t, o), nil).Only("ma/r01")
	r := discover.Run(context.Background(), "threemodule", d, targets(o, "ma/r01"), opt)
	byBMC := map[string]*discover.Error{}
	for _, e := range r.Errors {
		byBMC[e.BMC] = e
	}
	want := map[string]string{
		"bmc-a-r01-n01": "/redfish/v1/: 401",
		"bmc-a-r01-n02": "/redfish/v1/Chassis/ma-r01-compute-02: 404",
		"bmc-a-r01-n03": "/redfish/v1/: invalid character",
		"bmc-a-r01-n04": "/redfish/v1/: stopped after 10 redirects",
		"bmc-a-r01-n05": "/redfish/v1/: timed out after 3s",
		"bmc-a-r01-n06": "a Contains loop: /redfish/v1/Chassis/ma-r01-compute-06 → /redfish/v1/Chassis/ma-r01-compute-06-enclosure → /redfish/v1/Chassis/ma-r01-compute-06",
	}
	for bmcName, msg := range want {
		e := byBMC[bmcName]
		require.NotNil(t, e, "%s: an error", bmcName)
		assert.Contains(t, e.URI+": "+e.Msg, msg, bmcName)
		assert.Contains(t, e.Error(), "BMC "+bmcName+" (http://127.0.0.1:", bmcName)
	}
	assert.Len(t, byBMC, len(want), "the busy BMC answered after its Retry-After: %v", r.Errors)
	assert.Positive(t, r.Waits)
	assert.Equal(t, 35-6, r.Answered)
	got := kinds(r.Findings)
	assert.ElementsMatch(t, []string{"ma/r01/compute-01", "ma/r01/compute-02", "ma/r01/compute-03", "ma/r01/compute-04", "ma/r01/compute-05"},
		got[discover.MissingTray], "compute-06's chassis is read before its loop is seen")
	for _, f := range r.Findings {
		if f.Element == "ma/r01/compute-01" {
			assert.Contains(t, f.Message, "its BMC bmc-a-r01-n01 failed: /redfish/v1/: 401")
		}
	}
	assert.Len(t, r.Findings, 5)
	for _, k := range []string{sim.BMCUnauthorized, sim.BMCNotFound, sim.BMCGarbage, sim.BMCRedirectLoop, sim.BMCTimeout, sim.BMCContainsLoop} {
		for bmcName, kind := range faults {
			if kind == k {
				require.NoError(t, o.Site.Clear(k, bmcName))
			}
		}
	}

	// a wrong password: 401 at the session, for every BMC
	opt.Password = "wrong"
	r = discover.Run(context.Background(), "threemodule", d, targets(o, "ma/r01")[:3], opt)
	require.Len(t, r.Errors, 3)
	assert.Equal(t, "/redfish/v1/SessionService/Sessions", r.Errors[0].URI)
	assert.Contains(t, r.Errors[0].Msg, "401")
}

// Retry-After: waited for as long as the BMC asks, then the request is
// sent again; beyond the retries, the 503 is the error.
func TestRetryAfter(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) <= 2 {
			w.Header().Set("Retry-After", "3")
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"@odata.id": "/redfish/v1/", "Id": "RootService", "Name": "root", "RedfishVersion": "1.15.0"}`))
	}))
	defer srv.Close()
	clk := &waitClock{}
	f := discover.Walk(context.Background(), []discover.Target{{Name: "flaky", URL: srv.URL}}, discover.Options{Basic: true, User: "u", Password: "p", Clock: clk})
	require.Len(t, f, 1)
	assert.Equal(t, 2, f[0].Waits)
	assert.Equal(t, 6*time.Second, clk.total)
	assert.Empty(t, f[0].Errors, "%v", f[0].Errors)
}

type waitClock struct{ total time.Duration }

func (c *waitClock) Now() time.Time { return time.Unix(0, 0) }
func (c *waitClock) Sleep(_ context.Context, d time.Duration) error {
	c.total += d
	return nil
}

// A Contains loop between two chassis that the collection both lists is
// reported once, however the two requests in flight interleave: the
// loop is looked for in the links once the walk is over.
func TestContainsLoopWalkedTwoAtATime(t *testing.T) {
	docs := map[string]string{
		"/redfish/v1/":        `{"@odata.id": "/redfish/v1/", "Id": "RootService", "Name": "root", "RedfishVersion": "1.15.0", "Chassis": {"@odata.id": "/redfish/v1/Chassis"}}`,
		"/redfish/v1/Chassis": `{"@odata.id": "/redfish/v1/Chassis", "Name": "Chassis", "Members": [{"@odata.id": "/redfish/v1/Chassis/b"}, {"@odata.id": "/redfish/v1/Chassis/a"}], "Members@odata.count": 2}`,
		"/redfish/v1/Chassis/a": `{"@odata.id": "/redfish/v1/Chassis/a", "Id": "a", "Name": "a", "ChassisType": "Enclosure",
			"Links": {"Contains": [{"@odata.id": "/redfish/v1/Chassis/b"}]}}`,
		"/redfish/v1/Chassis/b": `{"@odata.id": "/redfish/v1/Chassis/b", "Id": "b", "Name": "b", "ChassisType": "Enclosure",
			"Links": {"Contains": [{"@odata.id": "/redfish/v1/Chassis/a"}]}}`,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		doc, ok := docs[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(doc))
	}))
	defer srv.Close()
	for range 20 {
		f := discover.Walk(context.Background(), []discover.Target{{Name: "loopy", URL: srv.URL}},
			discover.Options{Basic: true, User: "u", Password: "p", PerBMC: 2, Clock: &waitClock{}})
		require.Len(t, f[0].Errors, 1, "%v", f[0].Errors)
		e := f[0].Errors[0]
		assert.Equal(t, "/redfish/v1/Chassis/a", e.URI)
		assert.Equal(t, "BMC loopy ("+srv.URL+"): /redfish/v1/Chassis/a: a Contains loop: /redfish/v1/Chassis/a → /redfish/v1/Chassis/b → /redfish/v1/Chassis/a", e.Error())
	}
}
