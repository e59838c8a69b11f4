package bmc_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stmcginnis/gofish"
	"github.com/stmcginnis/gofish/schemas"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/inventory"
	"github.com/seamdc/seam/internal/peer"
	"github.com/seamdc/seam/internal/redfish/bmc"
	"github.com/seamdc/seam/internal/sim/fleet"
	"github.com/seamdc/seam/internal/sim/fleet/fleettest"
)

func exampleFleet(t testing.TB) *fleet.Fleet { return fleettest.Example(t) }

// source serves one tray of the example fleet, with a power limit it
// records.
type source struct {
	mu    sync.Mutex
	f     *fleet.Fleet
	tray  *fleet.Tray
	limit bmc.Limit
	state string
	now   time.Time
	sets  []float64
}

func (s *source) Version() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tray.Version()
}

func (s *source) Graph() (*inventory.Graph, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.f.TrayGraph(s.tray), nil
}

func (s *source) Live() bmc.Live {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.limit
	return bmc.Live{PowerState: s.state, PowerW: 1234.5, Limit: &l,
		Sensors: []bmc.Sensor{{ID: "TotalPower", Name: "Total Power", ReadingType: "Power", Units: "W", PhysicalContext: "Chassis", Reading: 1234.5}}}
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

func (s *source) Reset(kind string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch kind {
	case "On":
		s.state = "On"
	case "ForceOff", "GracefulShutdown":
		s.state = "Off"
	default:
		return errors.New("unsupported reset type " + kind)
	}
	return nil
}

func (s *source) Now() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.now
}

func (s *source) advance(d time.Duration) {
	s.mu.Lock()
	s.now = s.now.Add(d)
	s.mu.Unlock()
}

const user, pass = "admin", "seam-sim-bmc"

func serve(t *testing.T, key string, cfg bmc.Config) (*bmc.Server, *source) {
	t.Helper()
	f := exampleFleet(t)
	src := &source{f: f, tray: f.Tray(key), limit: bmc.Limit{SetPoint: 6400, Min: 2560, Max: 6400, Mode: "Automatic"}, state: "On",
		now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	require.NotNil(t, src.tray, key)
	cfg.Name, cfg.User, cfg.Password = "bmc-test", user, pass
	s, err := bmc.Serve(bmc.New(cfg, src), "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s, src
}

type client struct {
	t    *testing.T
	base string
	hdr  map[string]string
}

func (c client) do(method, uri string, body any) (*http.Response, map[string]any) {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, c.base+uri, rd)
	require.NoError(c.t, err)
	for k, v := range c.hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(c.t, err)
	defer resp.Body.Close()
	var doc map[string]any
	b, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(b, &doc)
	return resp, doc
}

func basic(t *testing.T, s *bmc.Server) client {
	req, _ := http.NewRequest(http.MethodGet, "/", nil)
	req.SetBasicAuth(user, pass)
	return client{t: t, base: s.URL(), hdr: map[string]string{"Authorization": req.Header.Get("Authorization")}}
}

// links collects every @odata.id a document links to.
func links(v any, out *[]string) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if s, ok := e.(string); ok && k == "@odata.id" {
				*out = append(*out, s)
			}
			links(e, out)
		}
	case []any:
		for _, e := range x {
			links(e, out)
		}
	}
}

// A compute tray's BMC serves its chassis, system, processors, network
// adapters, manager and firmware, where the tray physically sits, with
// no seam extension and no link that leads nowhere; anything but the
// service root needs credentials.
func TestComputeTrayBMC(t *testing.T) {
	s, _ := serve(t, "ma/r01/compute-03", bmc.Config{})
	anon := client{t: t, base: s.URL()}
	resp, root := anon.do(http.MethodGet, "/redfish/v1/", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "seam simulated BMC", root["Product"])
	resp, _ = anon.do(http.MethodGet, "/redfish/v1/Chassis", nil)
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	assert.Contains(t, resp.Header.Get("WWW-Authenticate"), "Basic")

	c := basic(t, s)
	seen := map[string]bool{}
	queue := []string{"/redfish/v1/"}
	for len(queue) > 0 {
		uri := queue[0]
		queue = queue[1:]
		if seen[strings.TrimSuffix(uri, "/")] || strings.Contains(uri, "#") {
			continue
		}
		seen[strings.TrimSuffix(uri, "/")] = true
		resp, doc := c.do(http.MethodGet, uri, nil)
		require.Equal(t, http.StatusOK, resp.StatusCode, "GET %s: every link leads somewhere", uri)
		if uri == "/redfish/v1/AccountService" {
			delete(doc, "Oem") // the simulator's own password rule, Oem.Seam (TestAccountServiceDocuments)
		}
		raw, _ := json.Marshal(doc)
		assert.NotContains(t, string(raw), "Seam", uri)
		var found []string
		links(doc, &found)
		queue = append(queue, found...)
	}
	assert.Greater(t, len(seen), 20)
	_, ch := c.do(http.MethodGet, "/redfish/v1/Chassis/ma-r01-compute-03", nil)
	assert.Equal(t, "SN-COMPUTE-0000003", ch["SerialNumber"])
	assert.Equal(t, "GB300 compute tray", ch["Name"])
	loc := ch["Location"].(map[string]any)["Placement"].(map[string]any)
	assert.Equal(t, "ma/r01", loc["Rack"])
	assert.EqualValues(t, 7, loc["RackOffset"])
	assert.Equal(t, "On", ch["PowerState"])
	_, coll := c.do(http.MethodGet, "/redfish/v1/Chassis", nil)
	assert.EqualValues(t, 1, coll["Members@odata.count"], "the rack is not the tray BMC's")
	_, sys := c.do(http.MethodGet, "/redfish/v1/Systems/ma-r01-compute-03", nil)
	assert.Equal(t, "gpu-a-r01-n03", sys["HostName"])
	_, procs := c.do(http.MethodGet, "/redfish/v1/Systems/ma-r01-compute-03/Processors", nil)
	assert.EqualValues(t, 6, procs["Members@odata.count"])
	_, fw := c.do(http.MethodGet, "/redfish/v1/UpdateService/FirmwareInventory", nil)
	assert.EqualValues(t, 2, fw["Members@odata.count"], "bios and bmc")
}

// Sessions: a wrong password is 401, a session's token works until it
// is deleted or unused past its timeout (the source's clock), and a
// session beyond the limit is refused with 503.
func TestSessions(t *testing.T) {
	s, src := serve(t, "ma/r01/compute-03", bmc.Config{MaxSessions: 2, SessionTimeout: time.Minute})
	anon := client{t: t, base: s.URL()}
	resp, _ := anon.do(http.MethodPost, "/redfish/v1/SessionService/Sessions", map[string]string{"UserName": user, "Password": "wrong"})
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	login := func() (string, string) {
		resp, doc := anon.do(http.MethodPost, "/redfish/v1/SessionService/Sessions", map[string]string{"UserName": user, "Password": pass})
		require.Equal(t, http.StatusCreated, resp.StatusCode)
		assert.Equal(t, user, doc["UserName"])
		return resp.Header.Get("X-Auth-Token"), resp.Header.Get("Location")
	}
	tok, loc := login()
	c := client{t: t, base: s.URL(), hdr: map[string]string{"X-Auth-Token": tok}}
	resp, _ = c.do(http.MethodGet, "/redfish/v1/Chassis", nil)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	login()
	resp, doc := anon.do(http.MethodPost, "/redfish/v1/SessionService/Sessions", map[string]string{"UserName": user, "Password": pass})
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Equal(t, "5", resp.Header.Get("Retry-After"))
	assert.Contains(t, fmt.Sprint(doc), "SessionLimitExceeded")
	resp, _ = c.do(http.MethodDelete, loc, nil)
	assert.Equal(t, http.StatusNoContent, resp.StatusCode)
	resp, _ = c.do(http.MethodGet, "/redfish/v1/Chassis", nil)
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "a deleted session's token")
	tok, _ = login()
	src.advance(2 * time.Minute)
	resp, _ = client{t: t, base: s.URL(), hdr: map[string]string{"X-Auth-Token": tok}}.do(http.MethodGet, "/redfish/v1/Chassis", nil)
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "a session unused past its timeout")
}

// More requests in flight than the BMC takes: 503 with Retry-After.
func TestBusy(t *testing.T) {
	s, _ := serve(t, "ma/r01/compute-03", bmc.Config{MaxInFlight: 1})
	require.NoError(t, s.BMC.SetFault(bmc.FaultTimeout, true))
	done := make(chan int)
	go func() {
		resp, _ := basic(t, s).do(http.MethodGet, "/redfish/v1/Chassis", nil)
		done <- resp.StatusCode
	}()
	for s.BMC.Stats().MaxInFlight == 0 {
		time.Sleep(time.Millisecond)
	}
	resp, _ := basic(t, s).do(http.MethodGet, "/redfish/v1/Systems", nil)
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Equal(t, "1", resp.Header.Get("Retry-After"))
	require.NoError(t, s.BMC.SetFault(bmc.FaultTimeout, false))
	assert.Equal(t, http.StatusOK, <-done, "the held request is answered once the fault clears")
	assert.Equal(t, 1, s.BMC.Stats().Busy)
}

// The power limit: GET with an ETag, PATCH of SetPoint and ControlMode,
// a value out of range refused, a stale If-Match refused.
func TestPowerLimit(t *testing.T) {
	s, src := serve(t, "ma/r01/compute-03", bmc.Config{})
	c := basic(t, s)
	uri := "/redfish/v1/Chassis/ma-r01-compute-03/Controls/PowerLimit"
	resp, doc := c.do(http.MethodGet, uri, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	etag := resp.Header.Get("ETag")
	assert.Equal(t, "W", doc["SetPointUnits"])
	assert.EqualValues(t, 2560, doc["AllowableMin"])
	assert.EqualValues(t, 1234.5, doc["Sensor"].(map[string]any)["Reading"])
	resp, doc = c.do(http.MethodPatch, uri, map[string]any{"SetPoint": 4000})
	require.Equal(t, http.StatusOK, resp.StatusCode, doc)
	assert.EqualValues(t, 4000, doc["SetPoint"])
	assert.Equal(t, []float64{4000}, src.sets)
	resp, doc = c.do(http.MethodPatch, uri, map[string]any{"SetPoint": 100})
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Contains(t, fmt.Sprint(doc), "outside 2560..6400 W")
	resp, _ = c.do(http.MethodPatch, uri, map[string]any{"Reading": 1})
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	stale := c
	stale.hdr = map[string]string{"Authorization": c.hdr["Authorization"], "If-Match": etag}
	resp, _ = stale.do(http.MethodPatch, uri, map[string]any{"SetPoint": 5000})
	assert.Equal(t, http.StatusPreconditionFailed, resp.StatusCode, "the ETag from before the first PATCH")
	resp, _ = c.do(http.MethodPatch, uri, map[string]any{"ControlMode": "Disabled"})
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "Disabled", src.limit.Mode)
	resp, _ = c.do(http.MethodPatch, "/redfish/v1/Chassis/ma-r01-compute-03", map[string]any{"AssetTag": "x"})
	assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	resp, _ = c.do(http.MethodPost, "/redfish/v1/Systems/ma-r01-compute-03/Actions/ComputerSystem.Reset", map[string]any{"ResetType": "ForceOff"})
	assert.Equal(t, http.StatusNoContent, resp.StatusCode)
	_, sys := c.do(http.MethodGet, "/redfish/v1/Systems/ma-r01-compute-03", nil)
	assert.Equal(t, "Off", sys["PowerState"])
}

// gofish v0.23.0 logs in with a session, reads the tray through its own
// methods, reads and changes the power limit, and logs out.
func TestGofishReadsABMC(t *testing.T) {
	s, src := serve(t, "ma/r01/shelf-05", bmc.Config{})
	c, err := gofish.Connect(gofish.ClientConfig{Endpoint: s.URL(), Username: user, Password: pass})
	require.NoError(t, err)
	assert.Equal(t, 1, s.BMC.Stats().Sessions)
	chassis, err := c.GetService().Chassis()
	require.NoError(t, err)
	require.Len(t, chassis, 1)
	assert.Equal(t, "SN-SHELF-0000005", chassis[0].SerialNumber)
	ps, err := chassis[0].PowerSubsystem()
	require.NoError(t, err)
	supplies, err := ps.PowerSupplies()
	require.NoError(t, err)
	assert.Len(t, supplies, 6)
	c.Logout()
	assert.Equal(t, 0, s.BMC.Stats().Sessions, "gofish's Logout deletes the session")

	s, src = serve(t, "ma/r01/compute-03", bmc.Config{})
	c, err = gofish.Connect(gofish.ClientConfig{Endpoint: s.URL(), Username: user, Password: pass})
	require.NoError(t, err)
	defer c.Logout()
	ctl, err := schemas.GetObject[schemas.Control](c, "/redfish/v1/Chassis/ma-r01-compute-03/Controls/PowerLimit")
	require.NoError(t, err)
	assert.EqualValues(t, 6400, *ctl.SetPoint)
	resp, err := c.Patch(ctl.ODataID, map[string]any{"SetPoint": 3000})
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, []float64{3000}, src.sets)
	systems, err := c.GetService().Systems()
	require.NoError(t, err)
	require.Len(t, systems, 1)
	assert.Equal(t, "gpu-a-r01-n03", systems[0].HostName)
}

// Debian's redfishtool reads a BMC with a session and PATCHes its power
// limit.
func TestRedfishtoolPatchesThePowerLimit(t *testing.T) {
	rt := peer.Need(t, "redfishtool")
	s, src := serve(t, "ma/r01/compute-03", bmc.Config{})
	run := func(args ...string) string {
		t.Helper()
		out, err := peer.Run(time.Minute, append([]string{rt, "-r", s.Addr(), "-S", "Never", "-A", "Session", "-u", user, "-p", pass}, args...)...)
		require.NoError(t, err, out)
		return out
	}
	var ch map[string]any
	require.NoError(t, json.Unmarshal([]byte(run("Chassis", "-I", "ma-r01-compute-03")), &ch))
	assert.Equal(t, "SN-COMPUTE-0000003", ch["SerialNumber"])
	run("raw", "PATCH", "/redfish/v1/Chassis/ma-r01-compute-03/Controls/PowerLimit", "-d", `{"SetPoint": 4200}`)
	assert.Equal(t, []float64{4200}, src.sets)
	assert.Equal(t, 0, s.BMC.Stats().Sessions, "redfishtool logs out")
	assert.Equal(t, 2, s.BMC.Stats().SessionsMade)
}

// The faults a broken BMC shows.
func TestFaults(t *testing.T) {
	s, _ := serve(t, "ma/r01/compute-03", bmc.Config{})
	c := basic(t, s)
	for _, tc := range []struct {
		fault  string
		uri    string
		status int
	}{
		{bmc.FaultUnauthorized, "/redfish/v1/", http.StatusUnauthorized},
		{bmc.FaultNotFound, "/redfish/v1/Chassis/ma-r01-compute-03", http.StatusNotFound},
		{bmc.FaultBusy, "/redfish/v1/Chassis", http.StatusServiceUnavailable},
	} {
		require.NoError(t, s.BMC.SetFault(tc.fault, true))
		resp, _ := c.do(http.MethodGet, tc.uri, nil)
		assert.Equal(t, tc.status, resp.StatusCode, tc.fault)
		require.NoError(t, s.BMC.SetFault(tc.fault, false))
	}
	require.NoError(t, s.BMC.SetFault(bmc.FaultGarbage, true))
	resp, doc := c.do(http.MethodGet, "/redfish/v1/Chassis", nil)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Nil(t, doc, "not JSON")
	require.NoError(t, s.BMC.SetFault(bmc.FaultRedirectLoop, true))
	_, err := http.Get(s.URL() + "/redfish/v1/")
	assert.ErrorContains(t, err, "stopped after 10 redirects")
	require.NoError(t, s.BMC.SetFault(bmc.FaultContainsLoop, true))
	_, ch := c.do(http.MethodGet, "/redfish/v1/Chassis/ma-r01-compute-03", nil)
	contains := ch["Links"].(map[string]any)["Contains"].([]any)
	_, enc := c.do(http.MethodGet, contains[0].(map[string]any)["@odata.id"].(string), nil)
	assert.Equal(t, "/redfish/v1/Chassis/ma-r01-compute-03", enc["Links"].(map[string]any)["Contains"].([]any)[0].(map[string]any)["@odata.id"])
	assert.ErrorContains(t, s.BMC.SetFault("on_fire", true), `unknown fault "on_fire"`)
}
