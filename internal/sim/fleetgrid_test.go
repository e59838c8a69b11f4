package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/gridload"
	"github.com/seamdc/seam/internal/sim/fleet"
)

// The fleet drives the example's grid load (grid.cue) through every
// rack's answer, the module's NVML smoothing, in vet's units.
func TestFleetGridFromContract(t *testing.T) {
	loadOnce.Do(loadExample)
	require.NoError(t, exErr)
	g := fleetGrid(exC)
	require.NotNil(t, g)
	assert.Equal(t, gridload.Load{Period: 1, ComputeShare: 0.7, Compute: 1200, Communication: 300, Idle: 150, CheckpointStall: 20}, g.Load)
	assert.InDelta(t, 0.05, g.Jitter, 1e-12)
	assert.Len(t, g.Answers, 48)
	a := g.Answers["mc/r16"]
	require.NotNil(t, a.Smoothing)
	assert.Equal(t, gridload.Smoothing{Floor: 0.8, RampUp: 5, RampDown: 5}, *a.Smoothing)
	assert.Nil(t, a.Storage)
	assert.Zero(t, a.PowerLimit)
}

// POST /v1/fleet/train starts the grid job on the nodes that are on:
// the example's smoothing lets each GPU rise at 5 W/s toward its floor,
// and the rack's PDUs carry it; a pattern no job can run, or a site with
// every node off, is refused with what to do. POST /v1/fleet/stop sets
// the nodes idle, and they ramp down as declared.
func TestSiteTrainsThroughControl(t *testing.T) {
	s := withInventory(t)
	cs, err := s.ServeControl("127.0.0.1:0")
	require.NoError(t, err)
	defer cs.Close()
	c := &Client{URL: cs.URL()}
	ctx := context.Background()
	assert.ErrorContains(t, c.Train(ctx, fleet.Pattern{}), "set the nodes idle first")

	_, err = c.SetNodes(ctx, NodeRequest{Racks: []string{"ma/r01"}, State: fleet.Idle})
	require.NoError(t, err)
	s.Site.Advance(time.Second)
	gpuW := func() float64 {
		v, err := c.GPUViews(ctx, "gpu-a-r01-n01")
		require.NoError(t, err)
		return v[0].GPUs[0].PowerW
	}
	idle, pdu := gpuW(), sig(t, s, "ma/r01/a", "power")

	resp, err := http.Post(cs.URL()+"/v1/fleet/train", "application/json", bytes.NewBufferString(`{"period_s": 2, "compute_share": 0.5}`))
	require.NoError(t, err)
	var tr TrainReply
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&tr))
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, TrainReply{Pattern: fleet.Pattern{PeriodS: 2, ComputeShare: 0.5}, Training: 18}, tr)

	s.Site.Advance(3 * time.Second)
	assert.InDelta(t, idle+3*5, gpuW(), 0.02, "the GPU rises at the smoothing's 5 W/s toward its floor")
	assert.InDelta(t, pdu+72*3*5/fleet.PSUEff/2/1000, sig(t, s, "ma/r01/a", "power"), 0.001, "the rack's PDUs carry the GPUs' rise")

	assert.ErrorContains(t, c.Train(ctx, fleet.Pattern{ComputeShare: 2}), "compute_share 2 must be a share of the period")

	require.NoError(t, c.StopTraining(ctx))
	s.Site.Advance(time.Second)
	assert.InDelta(t, idle+3*5-5, gpuW(), 0.02, "stopped, the GPU falls at 5 W/s")
	st, err := c.Nodes(ctx, "gpu-a-r01-n01")
	require.NoError(t, err)
	assert.Equal(t, fleet.Idle, st[0].State)
}
