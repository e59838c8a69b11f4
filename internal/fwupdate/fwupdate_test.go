package fwupdate

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/binding"
	"github.com/seamdc/seam/internal/dryrun"
	"github.com/seamdc/seam/internal/firmware"
	"github.com/seamdc/seam/internal/redfish/bmc"
)

// A node's BMC and BIOS as the example baseline has them: the BMC's
// firmware applied at once (the BMC reboots by itself: that reboot is
// its manager reset, none sent), the BIOS on reset (a system reset
// sent); the targets resolved by component, since the BMC has not the
// baseline's; each version read back; one update each, in exactly the
// site time the simulated BMC takes (60 s task + 30 s reboot, 60 s
// task + 30 s boot). Run again, both are current: nothing written.
func TestHappyPath(t *testing.T) {
	w := newWorld(t, bmc.Config{})
	us := []Update{w.update("bmc", firmware.Immediate, firmware.ResetManager), w.update("bios", firmware.OnReset, firmware.ResetSystem)}
	r := w.apply(us, w.options())
	require.NoError(t, r.err)
	require.Len(t, r.results, 2)
	b, bi := r.results[0], r.results[1]
	assert.Equal(t, Result{Component: "bmc", From: "25.06-1", To: "25.09-2", Found: "25.06-1", Version: "25.09-2", Targets: []string{bmcMember},
		Sent: true, TaskMonitor: "/redfish/v1/TaskService/TaskMonitors/1"}, b)
	assert.Equal(t, Result{Component: "bios", From: "1.4.2", To: "1.5.0", Found: "1.4.2", Version: "1.5.0", Targets: []string{biosMember},
		Sent: true, TaskMonitor: "/redfish/v1/TaskService/TaskMonitors/2", Reset: firmware.ResetSystem}, bi)
	assert.Equal(t, 3*time.Minute, r.took, "site time, exact")
	assert.Equal(t, map[string]int{"ma-r01-compute-03-bios": 1, "ma-r01-compute-03-bmc": 1}, w.srv.BMC.Updates())
	assert.Equal(t, 1, w.srv.BMC.Reboots(), "the BMC's own reboot only")
	st := w.srv.BMC.Stats()
	assert.Equal(t, 3, st.Writes, "two updates and the system reset")
	assert.Equal(t, 2, st.SessionsMade, "the first login and one after the reboot")
	assert.Equal(t, 0, st.Sessions, "logged out")
	assert.Equal(t, []string{"bmc check", "bmc update", "bmc task", "bmc reboot", "bmc task", "bmc reset", "bmc readback",
		"bios check", "bios update", "bios task", "bios reset", "bios readback"}, r.steps())
	assert.True(t, r.said("the BMC has no /redfish/v1/UpdateService/FirmwareInventory/BIOS, so the members that name bios"))
	assert.True(t, r.said("the BMC stopped answering (rebooting)"))
	assert.True(t, r.said("the BMC answers again after 30s"))
	assert.True(t, r.said("from https://127.0.0.1:"), "the image's host is shown")
	assert.True(t, r.said("/images/…/bios-1.5.0.bin, applied OnReset"), "its token is not")
	noSecret(t, r, us...)

	again := w.apply([]Update{w.update("bmc", firmware.Immediate, firmware.ResetManager), w.update("bios", firmware.OnReset, firmware.ResetSystem)}, w.options())
	require.NoError(t, again.err)
	for _, res := range again.results {
		assert.True(t, res.Current, res.Component)
		assert.False(t, res.Sent, res.Component)
	}
	assert.Equal(t, map[string]int{"ma-r01-compute-03-bios": 1, "ma-r01-compute-03-bmc": 1}, w.srv.BMC.Updates(), "no second update")
	assert.Equal(t, 3, w.srv.BMC.Stats().Writes, "nothing written")
	assert.Equal(t, time.Duration(0), again.took)
}

// Each fault of the simulated BMC, as Apply reports it: an error that
// names the node, the BMC, the component, the step, the BMC's own
// message and what to do next, in exact site time, with no token.
func TestFaults(t *testing.T) {
	for _, tc := range []struct {
		name      string
		fault     string
		component string
		apply     string
		reset     string
		opt       func(*Options)
		setup     func(*world, *Update)
		err       []string // "" no error
		took      time.Duration
		version   string
		updates   int
	}{
		{name: "update fails", fault: bmc.FaultUpdateFails, component: "bios", apply: firmware.Immediate, reset: firmware.ResetNone,
			err: []string{"gpu-a-r01-n03 (bmc-a-r01-n03): bios 1.5.0, step task: Exception at 50 %: Installation of image 'bios-1.5.0.bin' to 'ma-r01-compute-03-bios' failed. (The component stopped answering half-way",
				"; retry the stage"},
			took: 30 * time.Second, updates: 1},
		{name: "stuck task", fault: bmc.FaultStuckTask, component: "bios", apply: firmware.Immediate, reset: firmware.ResetNone,
			opt:  func(o *Options) { o.TaskTimeout = 10 * time.Minute },
			err:  []string{"bios 1.5.0, step task: task /redfish/v1/TaskService/TaskMonitors/1 still Running at 40 % after 10m0s (the task timeout); look at the BMC: its task still runs there"},
			took: 10 * time.Minute, updates: 1},
		{name: "version unchanged", fault: bmc.FaultVersionUnchanged, component: "bios", apply: firmware.Immediate, reset: firmware.ResetNone,
			err:  []string{"bios 1.5.0, step readback: the update Completed but the version reads back 1.4.2, not 1.5.0; check that the image is the version the baseline says"},
			took: time.Minute, version: "1.4.2", updates: 1},
		{name: "version unchanged after the BMC's reboot", fault: bmc.FaultVersionUnchanged, component: "bmc", apply: firmware.Immediate, reset: firmware.ResetManager,
			err:  []string{"bmc 25.09-2, step readback: the update Completed but the version reads back 25.06-1, not 25.09-2"},
			took: 90 * time.Second, version: "25.06-1", updates: 1},
		{name: "image refused", fault: bmc.FaultImageRefused, component: "bios", apply: firmware.Immediate, reset: firmware.ResetNone,
			err: []string{"bios 1.5.0, step update: the BMC refused SimpleUpdate (400): Verification of image 'bios-1.5.0.bin' at 'ma-r01-compute-03-bios' failed. (The component did not accept the image's signature",
				"; check the image"}},
		{name: "the grant used already", component: "bios", apply: firmware.Immediate, reset: firmware.ResetNone,
			setup: func(w *world, u *Update) {
				resp, err := w.images.Grant("sha256:"+w.sums["bios"], bmcName) // a fresh one, fetched by someone else
				require.NoError(t, err)
				*u = FromPlan(firmware.Update{Component: "bios", To: "1.5.0", ApplyTime: firmware.Immediate, Reset: firmware.ResetNone}, resp)
				fetch(t, w, resp)
			},
			err: []string{"bios 1.5.0, step task: Exception at 0 %: Transfer of image 'bios-1.5.0.bin' to 'ma-r01-compute-03-bios' failed.", "/images/…",
				"; check that the BMC reaches the image server and that the grant is fresh"}},
		{name: "slow reset within the reset timeout", fault: bmc.FaultSlowReset, component: "bmc", apply: firmware.Immediate, reset: firmware.ResetManager,
			took: 11 * time.Minute, version: "25.09-2", updates: 1},
		{name: "slow reset beyond the reset timeout", fault: bmc.FaultSlowReset, component: "bmc", apply: firmware.Immediate, reset: firmware.ResetManager,
			opt:  func(o *Options) { o.ResetTimeout = 5 * time.Minute },
			err:  []string{"bmc 25.09-2, step reboot: the BMC answered nothing for 5m0s (the reset timeout) during its update; look at the BMC (its console or its power)"},
			took: 6 * time.Minute, updates: 1},
		{name: "slow system reset beyond the reset timeout", fault: bmc.FaultSlowReset, component: "bios", apply: firmware.OnReset, reset: firmware.ResetSystem,
			opt:  func(o *Options) { o.ResetTimeout = 5 * time.Minute },
			err:  []string{"bios 1.5.0, step readback: the version still reads back 1.4.2, not 1.5.0, 5m0s after the system reset (the reset timeout)"},
			took: 6 * time.Minute, version: "1.4.2", updates: 1},
		{name: "forgets its task: the version decides", fault: bmc.FaultForgetsTasks, component: "bmc", apply: firmware.Immediate, reset: firmware.ResetManager,
			took: 90 * time.Second, version: "25.09-2", updates: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, bmc.Config{})
			u := w.update(tc.component, tc.apply, tc.reset)
			if tc.setup != nil {
				tc.setup(w, &u)
			}
			if tc.fault != "" {
				require.NoError(t, w.srv.BMC.SetFault(tc.fault, true))
			}
			opt := w.options()
			if tc.opt != nil {
				tc.opt(&opt)
			}
			r := w.apply([]Update{u}, opt)
			t.Log(r.err)
			noSecret(t, r, u)
			assert.Equal(t, tc.took, r.took, "site time, exact")
			require.Len(t, r.results, 1)
			assert.Equal(t, tc.version, r.results[0].Version)
			want := map[string]int{}
			if tc.updates > 0 {
				want["ma-r01-compute-03-"+tc.component] = tc.updates
			}
			assert.Equal(t, want, w.srv.BMC.Updates())
			if len(tc.err) == 0 {
				require.NoError(t, r.err)
				if tc.fault == bmc.FaultForgetsTasks {
					assert.True(t, r.said("the BMC no longer knows task /redfish/v1/TaskService/TaskMonitors/1 (404): the version read back decides"))
				}
				return
			}
			require.Error(t, r.err)
			var fe *Error
			require.True(t, errors.As(r.err, &fe))
			assert.Equal(t, r.results[0].Err, r.err)
			assert.Equal(t, []string{node, bmcName, tc.component}, []string{fe.Node, fe.BMC, fe.Component})
			for _, part := range tc.err {
				assert.Contains(t, r.err.Error(), part)
			}
			assert.Contains(t, r.err.Error(), "gpu-a-r01-n03 (bmc-a-r01-n03): ")
		})
	}
}

// fetch uses up a grant, as someone else's GET would.
func fetch(t *testing.T, w *world, url string) {
	t.Helper()
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: w.roots, MinVersion: tls.VersionTLS12}}}
	defer client.CloseIdleConnections()
	resp, err := client.Get(url)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

// An interrupted run's update is followed from its task monitor, not
// sent again; a task the BMC forgot is decided by the version: updated
// again only when the version is the old one and no task runs (said in
// an event), refused when a task runs.
func TestResume(t *testing.T) {
	t.Run("follows the task", func(t *testing.T) {
		w := newWorld(t, bmc.Config{})
		opt := w.options()
		opt.TaskTimeout = 20 * time.Second
		first := w.apply([]Update{w.update("bios", firmware.OnReset, firmware.ResetSystem)}, opt)
		require.Error(t, first.err, "interrupted: the task outlived its timeout")
		monitor := first.results[0].TaskMonitor
		require.Equal(t, "/redfish/v1/TaskService/TaskMonitors/1", monitor)

		u := w.update("bios", firmware.OnReset, firmware.ResetSystem)
		u.Resume = monitor
		r := w.apply([]Update{u}, w.options())
		require.NoError(t, r.err)
		assert.Equal(t, "1.5.0", r.results[0].Version)
		assert.False(t, r.results[0].Sent)
		assert.Equal(t, monitor, r.results[0].TaskMonitor)
		assert.Equal(t, firmware.ResetSystem, r.results[0].Reset)
		assert.Equal(t, map[string]int{"ma-r01-compute-03-bios": 1}, w.srv.BMC.Updates(), "no second update")
		assert.True(t, r.said("resuming: following the task of an interrupted run"))
	})

	t.Run("forgotten, still old, nothing running: updated again", func(t *testing.T) {
		w := newWorld(t, bmc.Config{})
		opt := w.options()
		opt.TaskTimeout = 20 * time.Second
		first := w.apply([]Update{w.update("bios", firmware.Immediate, firmware.ResetNone)}, opt)
		require.Error(t, first.err)
		require.NoError(t, w.srv.BMC.SetFault(bmc.FaultForgetsTasks, true))
		require.NoError(t, w.srv.BMC.Reboot()) // kills the task and forgets it
		require.NoError(t, w.srv.BMC.SetFault(bmc.FaultForgetsTasks, false))

		u := w.update("bios", firmware.Immediate, firmware.ResetNone)
		u.Resume = first.results[0].TaskMonitor
		r := w.apply([]Update{u}, w.options())
		require.NoError(t, r.err)
		assert.True(t, r.said("the BMC forgot task /redfish/v1/TaskService/TaskMonitors/1, still runs 1.4.2 and runs no task: safe to update again"))
		assert.True(t, r.results[0].Sent)
		assert.Equal(t, "1.5.0", r.results[0].Version)
		assert.Equal(t, map[string]int{"ma-r01-compute-03-bios": 2}, w.srv.BMC.Updates(), "the second update, said so")
	})

	t.Run("forgotten, a task running: refused", func(t *testing.T) {
		w := newWorld(t, bmc.Config{})
		opt := w.options()
		opt.TaskTimeout = 20 * time.Second
		first := w.apply([]Update{w.update("bios", firmware.Immediate, firmware.ResetNone)}, opt)
		require.Error(t, first.err)
		require.NoError(t, w.srv.BMC.SetFault(bmc.FaultForgetsTasks, true))
		require.NoError(t, w.srv.BMC.Reboot())
		require.NoError(t, w.srv.BMC.SetFault(bmc.FaultForgetsTasks, false))
		other := w.apply([]Update{w.update("bios", firmware.Immediate, firmware.ResetNone)}, opt) // someone's task, still running
		require.Error(t, other.err)

		u := w.update("bios", firmware.Immediate, firmware.ResetNone)
		u.Resume = first.results[0].TaskMonitor
		r := w.apply([]Update{u}, w.options())
		require.Error(t, r.err)
		assert.Contains(t, r.err.Error(), "step check: the BMC forgot task /redfish/v1/TaskService/TaskMonitors/1, runs 1.4.2 and has tasks running (/redfish/v1/TaskService/Tasks/2 Running): not updating again blindly; look at the BMC")
		assert.Equal(t, map[string]int{"ma-r01-compute-03-bios": 2}, w.srv.BMC.Updates(), "none sent by the resumed run")
	})

	t.Run("already done: nothing followed", func(t *testing.T) {
		w := newWorld(t, bmc.Config{})
		opt := w.options()
		opt.TaskTimeout = 20 * time.Second
		first := w.apply([]Update{w.update("bios", firmware.Immediate, firmware.ResetNone)}, opt)
		require.Error(t, first.err)
		w.pass(time.Minute)
		u := w.update("bios", firmware.Immediate, firmware.ResetNone)
		u.Resume = first.results[0].TaskMonitor
		r := w.apply([]Update{u}, w.options())
		require.NoError(t, r.err)
		assert.True(t, r.results[0].Current)
		assert.Equal(t, map[string]int{"ma-r01-compute-03-bios": 1}, w.srv.BMC.Updates())
	})
}

// A BMC whose binding does not allow the writes an update needs is
// refused before a single request; so is one with no allow-list.
func TestNotWritable(t *testing.T) {
	for _, tc := range []struct {
		name     string
		writable func(string, string) error
		reset    string
		err      string
	}{
		{"firmware not declared", declared(), firmware.ResetNone,
			"gpu-a-r01-n03 (bmc-a-r01-n03): step check: refused before any request: BIND032: BMC bmc-a-r01-n03: control Firmware is not declared writable"},
		{"reset not declared", declared(binding.ControlFirmware), firmware.ResetSystem, "control Reset is not declared writable"},
		{"no allow-list", nil, firmware.ResetNone, "step check: no allow-list given: nothing is written"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, bmc.Config{})
			opt := w.options()
			opt.Writable = tc.writable
			r := w.apply([]Update{w.update("bios", firmware.OnReset, tc.reset)}, opt)
			require.Error(t, r.err)
			assert.Contains(t, r.err.Error(), tc.err)
			assert.Empty(t, r.results)
			assert.Equal(t, 0, w.srv.BMC.Stats().Requests, "not one request")
		})
	}
	w := newWorld(t, bmc.Config{})
	opt := w.options()
	opt.Writable = declared(binding.ControlFirmware)
	r := w.apply([]Update{w.update("bios", firmware.Immediate, firmware.ResetNone)}, opt)
	require.NoError(t, r.err, "an update without a reset needs Firmware only")
}

// declared is a binding's allow-list of controls for every BMC.
func declared(controls ...string) func(string, string) error {
	b := &binding.BMCs{WritableControls: controls}
	return b.Writable
}

// A dry run reads the BMC and records the exact requests it would
// send (the token redacted): the updates and the system reset, not the
// manager reset the BMC's own reboot makes; it writes nothing.
func TestDryRun(t *testing.T) {
	w := newWorld(t, bmc.Config{})
	var out strings.Builder
	opt := w.options()
	opt.DryRun = dryrun.New(&out, nil)
	us := []Update{w.update("bmc", firmware.Immediate, firmware.ResetManager), w.update("bios", firmware.OnReset, firmware.ResetSystem)}
	r := w.apply(us, opt)
	require.NoError(t, r.err)
	for _, res := range r.results {
		assert.True(t, res.Would, res.Component)
		assert.False(t, res.Sent, res.Component)
	}
	writes := opt.DryRun.Writes()
	require.Len(t, writes, 3)
	host := strings.TrimPrefix(strings.SplitN(us[0].ImageURI, "/images/", 2)[0], "https://")
	assert.Equal(t, dryrun.Write{Peer: dryrun.BMC, What: "POST " + w.srv.URL() + "/redfish/v1/UpdateService/Actions/UpdateService.SimpleUpdate " +
		`{"@Redfish.OperationApplyTime":"Immediate","ImageURI":"https://` + host + `/images/…/bmc-25.09-2.bin","Targets":["` + bmcMember + `"],"TransferProtocol":"HTTPS"}` +
		" (BMC bmc-a-r01-n03, node gpu-a-r01-n03: bmc 25.06-1 → 25.09-2)"}, writes[0])
	assert.Contains(t, writes[1].What, `"@Redfish.OperationApplyTime":"OnReset"`)
	assert.Equal(t, "POST "+w.srv.URL()+`/redfish/v1/Systems/ma-r01-compute-03/Actions/ComputerSystem.Reset {"ResetType":"ForceRestart"} (BMC bmc-a-r01-n03, node gpu-a-r01-n03: the system reset bios 1.5.0 needs)`, writes[2].What)
	assert.Equal(t, 3, strings.Count(out.String(), "would POST "))
	for _, u := range us {
		assert.NotContains(t, out.String(), tokenOf(u))
	}
	assert.Empty(t, w.srv.BMC.Updates())
	assert.Equal(t, 0, w.srv.BMC.Stats().Writes)
	assert.Empty(t, w.images.Fetches(), "no image fetched")
}

// A multipart push sends the image itself (checked against its digest
// first): the BMC fetches nothing; an image that is not the plan's is
// not sent.
func TestPush(t *testing.T) {
	w := newWorld(t, bmc.Config{})
	opt := w.options()
	opt.Push = true
	r := w.apply([]Update{w.update("bios", firmware.Immediate, firmware.ResetNone)}, opt)
	require.NoError(t, r.err)
	assert.Equal(t, "1.5.0", r.results[0].Version)
	assert.True(t, r.said("multipart push of bios-1.5.0.bin (16384 bytes), applied Immediate"))
	assert.Empty(t, w.images.Fetches(), "pushed, not fetched")
	assert.Equal(t, map[string]int{"ma-r01-compute-03-bios": 1}, w.srv.BMC.Updates())

	w = newWorld(t, bmc.Config{})
	u := w.update("bios", firmware.Immediate, firmware.ResetNone)
	u.SHA256 = strings.Repeat("0", 64)
	opt = w.options()
	opt.Push = true
	r = w.apply([]Update{u}, opt)
	require.Error(t, r.err)
	assert.Contains(t, r.err.Error(), fmt.Sprintf("step update: the image %s is sha256:%s, not the plan's %s: nothing sent; check the image", w.files["bios"], w.sums["bios"], u.SHA256))
	assert.Equal(t, 0, w.srv.BMC.Stats().Writes)
}
