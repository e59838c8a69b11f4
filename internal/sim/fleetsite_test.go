package sim

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stmcginnis/gofish"
	"github.com/stmcginnis/gofish/schemas"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/inventory"
	"github.com/seamdc/seam/internal/peer"
	"github.com/seamdc/seam/internal/probe"
	"github.com/seamdc/seam/internal/sim/fleet"
)

var (
	invOnce  sync.Once
	invGraph *inventory.Graph
	invErr   error
)

// withInventory builds the example site with its handover inventory's
// fleet (the nodes named as in Slurm, the BMCs at their addresses).
func withInventory(t testing.TB) *Sim {
	t.Helper()
	s, err := newWithInventory()
	require.NoError(t, err)
	return s
}

func newWithInventory() (*Sim, error) {
	loadOnce.Do(loadExample)
	if exErr != nil {
		return nil, exErr
	}
	invOnce.Do(func() {
		c, _, err := contract.Load(exampleDir)
		if err == nil {
			_, err = c.ReadInventory(nil)
		}
		if err != nil {
			invErr = err
			return
		}
		invGraph, _ = c.Graph()
	})
	if invErr != nil {
		return nil, invErr
	}
	return New(Config{Contracts: exC, Sim: exCfg, Profiles: exSet, Secrets: SecretsFrom(noEnv), Epoch: epoch, Graph: invGraph})
}

func sig(t *testing.T, s *Sim, el, name string) float64 {
	t.Helper()
	v, err := s.Site.Signal(el, name)
	require.NoError(t, err)
	return v
}

// The nodes of a rack at burn-in draw through their PSUs onto the
// rack's PDUs, the block's feeds carry them with the load banks' load,
// and their liquid-cooled share is heat in the loop; other racks' PDUs
// carry only the banks' share.
func TestFleetDrivesThePhysics(t *testing.T) {
	s := withInventory(t)
	_, err := s.SetNodes(NodeRequest{Racks: []string{"ma/r01"}, State: fleet.BurnIn})
	require.NoError(t, err)
	s.Site.Advance(2 * time.Second)
	rack := (18*6400.0 + 9*1200) / fleet.PSUEff / 2 / 1000 // kW on each PDU
	assert.InDelta(t, rack+0.15, sig(t, s, "ma/r01/a", "power"), 0.01)
	assert.InDelta(t, rack+0.15, sig(t, s, "ma/r01/b", "power"), 0.01)
	assert.Zero(t, sig(t, s, "ma/r02/a", "power"))
	assert.InDelta(t, rack+0.15, sig(t, s, "p1/block/a", "power"), 0.05, "the feed carries the rack")
	assert.InDelta(t, (18*6400.0+9*1200)*0.9/1000, sig(t, s, "l1/loop", "heat"), 0.05, "the liquid share is the loop's heat")

	require.NoError(t, s.Site.Command("lb-ma", "heartbeat", 1))
	require.NoError(t, s.Site.Command("lb-ma", "enable", 1))
	require.NoError(t, s.Site.Command("lb-ma", "setpoint", 800))
	s.Site.Advance(2 * time.Second)
	assert.InDelta(t, 800.0/16/2+rack+0.15, sig(t, s, "ma/r01/a", "power"), 0.05)
	assert.InDelta(t, 800.0/16/2, sig(t, s, "ma/r02/a", "power"), 0.05)

	// feed b lost: rack r01's PSUs on b drop out, a carries the rack
	require.NoError(t, s.Site.Inject(Fault{Kind: FeedLoss, Target: "p1/block/b"}))
	s.Site.Advance(time.Second)
	assert.InDelta(t, 800.0/16+2*rack+0.3, sig(t, s, "ma/r01/a", "power"), 0.1)
}

// With every node off the fleet adds nothing: the physics is the load
// banks' to the last bit, as before the fleet existed.
func TestFleetOffChangesNothing(t *testing.T) {
	with := withInventory(t)
	require.True(t, with.Site.HasFleet())
	loadOnce.Do(loadExample)
	empty := inventory.NewGraph(&inventory.Site{Name: "none"}, 0)
	empty.Seal()
	without, err := New(Config{Contracts: exC, Sim: exCfg, Profiles: exSet, Secrets: SecretsFrom(noEnv), Epoch: epoch, Graph: empty})
	require.NoError(t, err)
	require.False(t, without.Site.HasFleet())
	for _, s := range []*Sim{with, without} {
		require.NoError(t, s.Site.Command("lb-ma", "heartbeat", 1))
		require.NoError(t, s.Site.Command("lb-ma", "enable", 1))
		require.NoError(t, s.Site.Command("lb-ma", "setpoint", 1500))
	}
	for i := range 40 {
		for _, s := range []*Sim{with, without} {
			if i%10 == 0 {
				require.NoError(t, s.Site.Command("lb-ma", "heartbeat", float64(i)))
			}
			s.Site.Advance(250 * time.Millisecond)
		}
		for _, el := range []string{"ma/r05/a", "p1/block", "p1/block/a", "l1/loop"} {
			a, _ := with.Site.Signals(el)
			b, _ := without.Site.Signals(el)
			require.Equal(t, b, a, "%s at step %d", el, i)
		}
	}
}

// The done-when of the fleet: a power cap PATCHed through Debian's
// redfishtool at a node's BMC lowers the node's draw, and the rack
// PDU's reading, read over SNMP by the project's probe, falls with it.
func TestCapThroughRedfishtoolLowersThePDU(t *testing.T) {
	rt := peer.Need(t, "redfishtool")
	s := withInventory(t)
	require.NoError(t, s.Start())
	t.Cleanup(s.Close)
	var nodes []string
	for i := 1; i <= 12; i++ { // 12 of 18: the PDU stays inside its profile's plausible 60 kW
		nodes = append(nodes, "gpu-a-r01-n"+twoDigits(i))
	}
	_, err := s.SetNodes(NodeRequest{Nodes: nodes, State: fleet.BurnIn})
	require.NoError(t, err)
	s.Site.Advance(3 * time.Second)
	before := pduPower(t, s, "pdu-ma-r01-a")

	var ep BMCEndpoint
	for _, e := range s.BMCs() {
		if e.Name == "bmc-a-r01-n03" {
			ep = e
		}
	}
	require.NotEmpty(t, ep.Address, "the BMC of gpu-a-r01-n03 is served")
	assert.Equal(t, "10.1.1.7", ep.Declared)
	sec := SecretsFrom(noEnv)
	out, err := peer.Run(time.Minute, rt, "-r", ep.Address, "-S", "Never", "-A", "Session", "-u", sec.BMCUser, "-p", sec.BMCPassword,
		"raw", "PATCH", "/redfish/v1/Chassis/ma-r01-compute-03/Controls/PowerLimit", "-d", `{"SetPoint": 3200}`)
	require.NoError(t, err, out)
	s.Site.Advance(3 * time.Second)
	st, err := s.NodeStatus("gpu-a-r01-n03")
	require.NoError(t, err)
	assert.InDelta(t, 3200, st[0].DrawW, 0.01)
	assert.True(t, st[0].Capped)
	after := pduPower(t, s, "pdu-ma-r01-a")
	t.Logf("pdu-ma-r01-a device-power: %.2f kW before the cap, %.2f kW after", before, after)
	assert.InDelta(t, (6400-3200)/fleet.PSUEff/2/1000, before-after, 0.02, "the PDU carries half the node's 3.2 kW less, through the PSUs")

	// gofish reads the cap back, with the node's power as its reading
	c, err := gofish.Connect(gofish.ClientConfig{Endpoint: "http://" + ep.Address, Username: sec.BMCUser, Password: sec.BMCPassword})
	require.NoError(t, err)
	defer c.Logout()
	ctl, err := schemas.GetObject[schemas.Control](c, "/redfish/v1/Chassis/ma-r01-compute-03/Controls/PowerLimit")
	require.NoError(t, err)
	assert.EqualValues(t, 3200, *ctl.SetPoint)
}

func twoDigits(i int) string { return string(rune('0'+i/10)) + string(rune('0'+i%10)) }

// pduPower reads a rack PDU's device-power over SNMP with the probe.
func pduPower(t *testing.T, s *Sim, device string) float64 {
	t.Helper()
	sec := SecretsFrom(noEnv)
	env := map[string]string{EnvCommunity: sec.Community, EnvAuth: sec.AuthPass, EnvPriv: sec.PrivPass}
	b := s.Binding(nil, "", EnvRefs)
	for _, d := range b.Devices {
		if d.Name != device {
			continue
		}
		pd, err := probe.Open(d, probe.Options{LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
		require.NoError(t, err)
		defer pd.Close()
		rs, err := pd.Read(context.Background())
		require.NoError(t, err)
		for _, r := range rs {
			if r.Point == "device-power" {
				require.Equal(t, probe.Good, r.Quality, "%v", r.Err)
				return r.Value
			}
		}
	}
	t.Fatalf("no device-power of %s", device)
	return 0
}

// The fleet through the control interface: nodes set and read, the GPU
// tools' view, defects in force and cleared (a tray taken out: its BMC
// stops answering), the BMCs listed, a BMC fault injected as a site
// fault.
func TestFleetControl(t *testing.T) {
	s := withInventory(t)
	require.NoError(t, s.Start())
	t.Cleanup(s.Close)
	cs, err := s.ServeControl("127.0.0.1:0")
	require.NoError(t, err)
	defer cs.Close()
	c := &Client{URL: cs.URL()}
	ctx := context.Background()
	bmcs, err := c.BMCs(ctx)
	require.NoError(t, err)
	assert.Len(t, bmcs, 48*35+9)
	limit := 4000.0
	st, err := c.SetNodes(ctx, NodeRequest{Nodes: []string{"gpu-a-r01-n01", "gpu-a-r01-n02"}, State: fleet.Training, LimitW: &limit, DCGM: "3.3.9"})
	require.NoError(t, err)
	require.Len(t, st, 2)
	assert.Equal(t, fleet.Training, st[0].State)
	s.Site.Advance(time.Second)
	views, err := c.GPUViews(ctx, "gpu-a-r01-n01")
	require.NoError(t, err)
	require.Len(t, views[0].GPUs, 4)
	assert.Equal(t, "3.3.9", views[0].DCGM)
	assert.Equal(t, "SN-GPU-0000001", views[0].GPUs[0].Serial)
	assert.True(t, views[0].Powered)
	_, err = c.SetNodes(ctx, NodeRequest{Nodes: []string{"gpu-z"}, State: fleet.Idle})
	assert.ErrorContains(t, err, `no node "gpu-z"`)

	require.NoError(t, c.AddDefect(ctx, fleet.Defect{Kind: fleet.MissingTray, Target: "ma/r01/compute-05"}))
	bmcs, _ = c.BMCs(ctx)
	assert.Len(t, bmcs, 48*35+8)
	sum, err := c.FleetSummary(ctx)
	require.NoError(t, err)
	require.Len(t, sum.Defects, 1)
	require.NoError(t, c.ClearDefect(ctx, fleet.MissingTray, "ma/r01/compute-05"))
	bmcs, _ = c.BMCs(ctx)
	assert.Len(t, bmcs, 48*35+9)

	var addr string
	for _, b := range bmcs {
		if b.Name == "bmc-a-r01-n01" {
			addr = b.Address
		}
	}
	require.NoError(t, c.Inject(ctx, Fault{Kind: BMCUnauthorized, Target: "bmc-a-r01-n01"}))
	resp, err := http.Get("http://" + addr + "/redfish/v1/")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.NoError(t, c.Clear(ctx, BMCUnauthorized, "bmc-a-r01-n01"))
	resp, err = http.Get("http://" + addr + "/redfish/v1/")
	require.NoError(t, err)
	var root map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&root))
	resp.Body.Close()
	assert.Equal(t, "seam simulated BMC", root["Product"])
	assert.ErrorContains(t, c.Inject(ctx, Fault{Kind: BMCBusy, Target: "bmc-nope"}), `no BMC "bmc-nope"`)
	// the firmware updates' faults go through the same door
	require.NoError(t, c.Inject(ctx, Fault{Kind: BMCImageRefused, Target: "bmc-a-r01-n01"}))
	require.NoError(t, c.Clear(ctx, BMCImageRefused, "bmc-a-r01-n01"))
}
