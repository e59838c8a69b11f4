package bmc_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/redfish/bmc"
)

const chassis = "/redfish/v1/Chassis/ma-r01-compute-03"

// A BMC with only the legacy Power resource: no Controls, the limit as
// PowerControl[0].PowerLimit.LimitInWatts, PATCHed there.
func TestLegacyPowerLimit(t *testing.T) {
	s, src := serve(t, "ma/r01/compute-03", bmc.Config{Legacy: true})
	c := basic(t, s)
	resp, ch := c.do(http.MethodGet, chassis, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.NotContains(t, ch, "Controls")
	assert.Equal(t, map[string]any{"@odata.id": chassis + "/Power"}, ch["Power"])
	resp, _ = c.do(http.MethodGet, chassis+"/Controls/PowerLimit", nil)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	resp, _ = c.do(http.MethodPatch, chassis+"/Controls/PowerLimit", map[string]any{"SetPoint": 4000})
	assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)

	resp, doc := c.do(http.MethodPatch, chassis+"/Power", map[string]any{"PowerControl": []any{map[string]any{"PowerLimit": map[string]any{"LimitInWatts": 4000}}}})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	pc := doc["PowerControl"].([]any)[0].(map[string]any)
	assert.Equal(t, 4000.0, pc["PowerLimit"].(map[string]any)["LimitInWatts"])
	assert.Equal(t, 6400.0, pc["PowerCapacityWatts"])
	assert.Equal(t, []float64{4000}, src.sets)
	resp, doc = c.do(http.MethodPatch, chassis+"/Power", map[string]any{"PowerControl": []any{map[string]any{"PowerLimit": map[string]any{"LimitInWatts": 100}}}})
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Contains(t, doc["error"].(map[string]any)["message"], "outside 2560..6400 W")
	resp, _ = c.do(http.MethodPatch, chassis+"/Power", map[string]any{"PowerControl": []any{}})
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
}

// A control in % of its maximum, and one in kW: read and PATCHed in
// its units, applied in W.
func TestPowerLimitUnits(t *testing.T) {
	for _, c := range []struct {
		units         string
		min, max, set float64
	}{{"%", 40, 100, 50}, {"kW", 2.56, 6.4, 3.2}} {
		s, src := serve(t, "ma/r01/compute-03", bmc.Config{LimitUnits: c.units})
		cl := basic(t, s)
		resp, doc := cl.do(http.MethodGet, chassis+"/Controls/PowerLimit", nil)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		assert.Equal(t, c.units, doc["SetPointUnits"])
		assert.Equal(t, c.min, doc["AllowableMin"])
		assert.Equal(t, c.max, doc["AllowableMax"])
		resp, doc = cl.do(http.MethodPatch, chassis+"/Controls/PowerLimit", map[string]any{"SetPoint": c.set})
		require.Equal(t, http.StatusOK, resp.StatusCode, c.units)
		assert.Equal(t, c.set, doc["SetPoint"])
		assert.Equal(t, []float64{3200}, src.sets, c.units)
	}
}

// Busy for a while (503 with the Retry-After asked), then answering; a
// reset that ends the sessions and drops the cap to its default; the
// faults of a BMC that refuses a write and one that resets under it.
func TestBusyResetAndWriteFaults(t *testing.T) {
	s, src := serve(t, "ma/r01/compute-03", bmc.Config{})
	c := basic(t, s)
	s.BMC.SetBusyFor(2, 3)
	for range 2 {
		resp, _ := c.do(http.MethodGet, chassis, nil)
		assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
		assert.Equal(t, "3", resp.Header.Get("Retry-After"))
	}
	resp, _ := c.do(http.MethodGet, chassis, nil)
	assert.Equal(t, http.StatusOK, resp.StatusCode)

	anon := client{t: t, base: s.URL()}
	resp, _ = anon.do(http.MethodPost, "/redfish/v1/SessionService/Sessions", map[string]string{"UserName": user, "Password": pass})
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	tok := client{t: t, base: s.URL(), hdr: map[string]string{"X-Auth-Token": resp.Header.Get("X-Auth-Token")}}
	resp, _ = tok.do(http.MethodPatch, chassis+"/Controls/PowerLimit", map[string]any{"SetPoint": 3000})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NoError(t, s.BMC.Reboot())
	assert.Equal(t, 1, s.BMC.Reboots())
	resp, _ = tok.do(http.MethodGet, chassis, nil)
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "a reset ends the sessions")
	_, doc := c.do(http.MethodGet, chassis+"/Controls/PowerLimit", nil)
	assert.Equal(t, 6400.0, doc["SetPoint"], "a reset drops the cap")
	assert.Equal(t, "Automatic", doc["ControlMode"])

	require.NoError(t, s.BMC.SetFault(bmc.FaultReadOnly, true))
	resp, _ = c.do(http.MethodPatch, chassis+"/Controls/PowerLimit", map[string]any{"SetPoint": 3000})
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	require.NoError(t, s.BMC.SetFault(bmc.FaultReadOnly, false))

	require.NoError(t, s.BMC.SetFault(bmc.FaultResetOnWrite, true))
	req, _ := http.NewRequest(http.MethodPatch, s.URL()+chassis+"/Controls/PowerLimit", nil)
	req.SetBasicAuth(user, pass)
	_, err := http.DefaultClient.Do(req)
	require.Error(t, err, "no answer: the BMC reset")
	assert.Equal(t, 2, s.BMC.Reboots())
	assert.Equal(t, []float64{3000, 6400, 6400}, src.sets, "the write was not applied; each reset put the default back")
}
