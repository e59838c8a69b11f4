package bmc_test

import (
	"bytes"
	"cmp"
	"context"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stmcginnis/gofish"
	"github.com/stmcginnis/gofish/schemas"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/peer"
	"github.com/seamdc/seam/internal/redfish/bmc"
)

const (
	updateSvc    = "/redfish/v1/UpdateService"
	fwInventory  = updateSvc + "/FirmwareInventory"
	biosFW       = fwInventory + "/ma-r01-compute-03-bios"
	bmcFW        = fwInventory + "/ma-r01-compute-03-bmc"
	simpleUpdate = updateSvc + "/Actions/UpdateService.SimpleUpdate"
	manager03    = "/redfish/v1/Managers/ma-r01-compute-03-bmc-1"
	system03     = "/redfish/v1/Systems/ma-r01-compute-03"
	managerReset = manager03 + "/Actions/Manager.Reset"
	systemReset  = system03 + "/Actions/ComputerSystem.Reset"
)

// images is an image server over TLS: it serves each image put in it
// once per one-time token, as seam's image server does, and records
// what it was asked for.
type images struct {
	srv    *httptest.Server
	mu     sync.Mutex
	files  map[string][]byte
	tokens map[string]bool // not yet used
	issued int
	gets   []string // the paths asked for
}

func imageServer(t *testing.T) *images {
	im := &images{files: map[string][]byte{}, tokens: map[string]bool{}}
	im.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		im.mu.Lock()
		defer im.mu.Unlock()
		im.gets = append(im.gets, r.URL.Path)
		tok := r.URL.Query().Get("token")
		switch data, ok := im.files[r.URL.Path]; {
		case !ok:
			http.NotFound(w, r)
		case !im.tokens[tok]:
			http.Error(w, "token used or unknown", http.StatusForbidden)
		default:
			delete(im.tokens, tok)
			_, _ = w.Write(data)
		}
	}))
	im.srv.Config.ErrorLog = log.New(io.Discard, "", 0) // a BMC that distrusts its certificate is a test case
	im.srv.StartTLS()
	t.Cleanup(im.srv.Close)
	return im
}

// put serves an image at name and is a URL with a fresh token for it.
func (im *images) put(name string, data []byte) string {
	im.mu.Lock()
	defer im.mu.Unlock()
	im.files["/images/"+name] = data
	im.issued++
	tok := fmt.Sprintf("one-time-%d", im.issued)
	im.tokens[tok] = true
	return im.srv.URL + "/images/" + name + "?token=" + tok
}

func (im *images) pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(im.srv.Certificate())
	return p
}

// serveUpdates serves compute-03's BMC trusting the image server.
func serveUpdates(t *testing.T, cfg bmc.Config) (*bmc.Server, *source, *images) {
	im := imageServer(t)
	cfg.ImageRootCAs = im.pool()
	s, src := serve(t, compute03, cfg)
	return s, src, im
}

// version is a FirmwareInventory member's Version.
func version(c client, uri string) string {
	c.t.Helper()
	resp, doc := c.do(http.MethodGet, uri, nil)
	require.Equal(c.t, http.StatusOK, resp.StatusCode, uri)
	return fmt.Sprint(doc["Version"])
}

// msgIDs are a Task's MessageIds.
func msgIDs(doc map[string]any) []string {
	var ids []string
	list, _ := doc["Messages"].([]any)
	for _, m := range list {
		ids = append(ids, fmt.Sprint(m.(map[string]any)["MessageId"]))
	}
	return ids
}

// update POSTs a SimpleUpdate of image at url to target.
func update(c client, url, target, apply string) (*http.Response, map[string]any) {
	body := map[string]any{"ImageURI": url, "Targets": []string{target}, "TransferProtocol": "HTTPS"}
	if apply != "" {
		body["@Redfish.OperationApplyTime"] = apply
	}
	return c.do(http.MethodPost, simpleUpdate, body)
}

// answers reports whether the BMC answers at all.
func answers(s *bmc.Server) bool {
	resp, err := http.Get(s.URL() + "/redfish/v1/")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return true
}

// The FirmwareInventory holds a member per component the tray's
// inventory declares firmware for, each updateable with its version,
// SoftwareId, status and the resource it belongs to; the UpdateService
// offers SimpleUpdate and a multipart push; the service root links the
// TaskService. A power shelf, with nothing to reset, offers only
// Immediate updates.
func TestFirmwareInventory(t *testing.T) {
	s, src := serve(t, compute03, bmc.Config{})
	src.tray.Firmware["gpu"], src.tray.Firmware["nic"] = "570.86.15", "28.41.1000" // before the BMC's first request builds its tree
	c := basic(t, s)
	_, coll := c.do(http.MethodGet, fwInventory, nil)
	require.EqualValues(t, 4, coll["Members@odata.count"])
	for _, tc := range []struct{ component, version, related string }{
		{"bios", "1.4.2", system03},
		{"bmc", "25.06-1", manager03},
		{"gpu", "570.86.15", "/redfish/v1/Chassis/ma-r01-compute-03"},
		{"nic", "28.41.1000", "/redfish/v1/Chassis/ma-r01-compute-03"},
	} {
		resp, doc := c.do(http.MethodGet, fwInventory+"/ma-r01-compute-03-"+tc.component, nil)
		require.Equal(t, http.StatusOK, resp.StatusCode, tc.component)
		assert.Equal(t, "#SoftwareInventory.v1_13_0.SoftwareInventory", doc["@odata.type"])
		assert.Equal(t, tc.version, doc["Version"], tc.component)
		assert.Equal(t, tc.component, doc["SoftwareId"])
		assert.Equal(t, true, doc["Updateable"])
		assert.Equal(t, "Enabled", doc["Status"].(map[string]any)["State"])
		var related []any
		for _, r := range doc["RelatedItem"].([]any) {
			related = append(related, r.(map[string]any)["@odata.id"])
		}
		assert.Equal(t, "/redfish/v1/Chassis/ma-r01-compute-03", related[0], "%s: the tray's chassis first (sat discover files the version there)", tc.component)
		assert.Contains(t, related, tc.related, tc.component)
	}

	_, us := c.do(http.MethodGet, updateSvc, nil)
	assert.Equal(t, updateSvc+"/update-multipart", us["MultipartHttpPushUri"])
	assert.EqualValues(t, 64<<20, us["MaxImageSizeBytes"])
	assert.Equal(t, []any{"Immediate", "OnReset"}, us["HttpPushUriOptions"].(map[string]any)["HttpPushUriApplyTime"].(map[string]any)["ApplyTime@Redfish.AllowableValues"])
	action := us["Actions"].(map[string]any)["#UpdateService.SimpleUpdate"].(map[string]any)
	assert.Equal(t, simpleUpdate, action["target"])
	_, info := c.do(http.MethodGet, action["@Redfish.ActionInfo"].(string), nil)
	params := info["Parameters"].([]any)
	assert.Equal(t, "ImageURI", params[0].(map[string]any)["Name"])
	assert.Len(t, params[2].(map[string]any)["AllowableValues"], 4, "the Targets")
	_, root := c.do(http.MethodGet, "/redfish/v1/", nil)
	resp, ts := c.do(http.MethodGet, root["Tasks"].(map[string]any)["@odata.id"].(string), nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	_, tasks := c.do(http.MethodGet, ts["Tasks"].(map[string]any)["@odata.id"].(string), nil)
	assert.EqualValues(t, 0, tasks["Members@odata.count"])

	shelf, _ := serve(t, "ma/r01/shelf-05", bmc.Config{})
	sc := basic(t, shelf)
	_, us = sc.do(http.MethodGet, updateSvc, nil)
	assert.Equal(t, []any{"Immediate"}, us["HttpPushUriOptions"].(map[string]any)["HttpPushUriApplyTime"].(map[string]any)["ApplyTime@Redfish.AllowableValues"])
	resp, doc := update(sc, "https://images.example/shelf.bin", fwInventory+"/ma-r01-shelf-05-shelf", "OnReset")
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "nothing to reset")
	id, _ := message(doc)
	assert.Equal(t, "Base.1.5.0.PropertyValueNotInList", id)
}

// gofish v0.23.0: SimpleUpdate returns the task monitor (and the Task);
// the BMC really fetched the image over TLS with its token; the monitor
// answers 202 with the Task's progress on the BMC's clock, then 200 with
// the completed Task; the new version is in the FirmwareInventory.
func TestGofishSimpleUpdate(t *testing.T) {
	s, src, im := serveUpdates(t, bmc.Config{})
	url := im.put("bios-1.5.0.bin", bmc.MakeImage("bios", "1.5.0", 8192))
	c, err := gofish.Connect(gofish.ClientConfig{Endpoint: s.URL(), Username: user, Password: pass})
	require.NoError(t, err)
	defer c.Logout()
	us, err := c.GetService().UpdateService()
	require.NoError(t, err)
	assert.Equal(t, updateSvc+"/update-multipart", us.MultipartHTTPPushURI)
	info, err := us.SimpleUpdate(&schemas.UpdateServiceSimpleUpdateParameters{ImageURI: url, Targets: []string{biosFW},
		TransferProtocol: schemas.HTTPSTransferProtocolType})
	require.NoError(t, err)
	require.NotNil(t, info)
	assert.Equal(t, "/redfish/v1/TaskService/TaskMonitors/1", info.TaskMonitor)
	require.NotNil(t, info.Task)
	assert.Equal(t, schemas.NewTaskState, info.Task.TaskState)
	assert.Equal(t, []string{"/images/bios-1.5.0.bin"}, im.gets, "the BMC fetched the image")

	src.advance(30 * time.Second)
	resp, err := c.Get(info.TaskMonitor)
	require.NoError(t, err)
	var running schemas.Task
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&running))
	resp.Body.Close()
	assert.Equal(t, http.StatusAccepted, resp.StatusCode)
	assert.Equal(t, "5", resp.Header.Get("Retry-After"))
	assert.Equal(t, schemas.RunningTaskState, running.TaskState)
	assert.EqualValues(t, 50, *running.PercentComplete)

	src.advance(30 * time.Second)
	// the Retry-After is in the BMC's time, which this test moves itself
	done, _, err := schemas.WaitForTaskMonitorObject[schemas.Task](context.Background(), c, time.Millisecond,
		&schemas.TaskMonitorInfo{TaskMonitor: info.TaskMonitor}, nil)
	require.NoError(t, err)
	assert.Equal(t, schemas.CompletedTaskState, done.TaskState)
	assert.EqualValues(t, 100, *done.PercentComplete)
	assert.Equal(t, "2026-01-01T00:01:00Z", done.EndTime)
	fw, err := us.FirmwareInventory()
	require.NoError(t, err)
	versions := map[string]string{}
	for _, f := range fw {
		versions[f.ID] = f.Version
		assert.True(t, f.Updateable)
	}
	assert.Equal(t, map[string]string{"ma-r01-compute-03-bios": "1.5.0", "ma-r01-compute-03-bmc": "25.06-1"}, versions)
	assert.Equal(t, map[string]int{"ma-r01-compute-03-bios": 1}, s.BMC.Updates())
	assert.Equal(t, 1, s.BMC.Stats().Writes, "the SimpleUpdate")
}

// How an update of the BIOS (installed at once) ends, with and without
// the faults that decide it, as its task monitor shows it.
func TestUpdateOutcomes(t *testing.T) {
	for _, tc := range []struct {
		name, fault string
		after       time.Duration
		status      int
		state       string
		percent     int
		msg         string
		version     string
	}{
		{"completes", "", 60 * time.Second, http.StatusOK, "Completed", 100, "Update.1.0.2.UpdateSuccessful", "1.5.0"},
		{"runs", "", 15 * time.Second, http.StatusAccepted, "Running", 25, "Update.1.0.2.InstallingOnComponent", "1.4.2"},
		{"starts", "", 3 * time.Second, http.StatusAccepted, "Starting", 5, "Update.1.0.2.VerifyingAtComponent", "1.4.2"},
		{"fails half-way", bmc.FaultUpdateFails, 30 * time.Second, http.StatusOK, "Exception", 50, "Update.1.0.2.ApplyFailed", "1.4.2"},
		{"completes unchanged", bmc.FaultVersionUnchanged, 60 * time.Second, http.StatusOK, "Completed", 100, "Update.1.0.2.UpdateSuccessful", "1.4.2"},
		{"stuck", bmc.FaultStuckTask, time.Hour, http.StatusAccepted, "Running", 40, "TaskEvent.1.0.3.TaskProgressChanged", "1.4.2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, src, im := serveUpdates(t, bmc.Config{})
			c := basic(t, s)
			if tc.fault != "" {
				require.NoError(t, s.BMC.SetFault(tc.fault, true))
			}
			resp, doc := update(c, im.put("bios.bin", bmc.MakeImage("bios", "1.5.0", 1024)), biosFW, "")
			require.Equal(t, http.StatusAccepted, resp.StatusCode, doc)
			assert.Equal(t, "New", doc["TaskState"])
			monitor := resp.Header.Get("Location")
			src.advance(tc.after)
			resp, doc = c.do(http.MethodGet, monitor, nil)
			assert.Equal(t, tc.status, resp.StatusCode)
			assert.Equal(t, tc.state, doc["TaskState"])
			assert.EqualValues(t, tc.percent, doc["PercentComplete"])
			assert.Contains(t, msgIDs(doc), tc.msg)
			assert.Equal(t, tc.version, version(c, biosFW))
			assert.Equal(t, map[string]int{"ma-r01-compute-03-bios": 1}, s.BMC.Updates())
			_, task := c.do(http.MethodGet, doc["@odata.id"].(string), nil)
			assert.Equal(t, tc.state, task["TaskState"], "the Task itself")
		})
	}

	// a stuck task is cancelled through its monitor
	s, src, im := serveUpdates(t, bmc.Config{})
	c := basic(t, s)
	require.NoError(t, s.BMC.SetFault(bmc.FaultStuckTask, true))
	resp, _ := update(c, im.put("bios.bin", bmc.MakeImage("bios", "1.5.0", 1024)), biosFW, "")
	monitor := resp.Header.Get("Location")
	src.advance(time.Hour)
	resp, doc := c.do(http.MethodDelete, monitor, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "Cancelled", doc["TaskState"])
	assert.Contains(t, msgIDs(doc), "TaskEvent.1.0.3.TaskCancelled")
	resp, _ = c.do(http.MethodGet, monitor, nil)
	assert.Equal(t, http.StatusOK, resp.StatusCode, "ended")
	resp, _ = c.do(http.MethodDelete, monitor, nil)
	assert.Equal(t, http.StatusConflict, resp.StatusCode, "nothing left to cancel")
}

// Requests a BMC refuses (400 with the message saying why, no task, no
// update counted), and transfers that fail (202, then a task that
// failed at once with the BMC's message; a one-time token stays out of
// it).
func TestUpdateRefusedOrTransferFailed(t *testing.T) {
	s, _, im := serveUpdates(t, bmc.Config{})
	c := basic(t, s)
	for _, tc := range []struct {
		name  string
		fault string
		body  map[string]any
		id    string
		says  string
	}{
		{"the image refused", bmc.FaultImageRefused, map[string]any{"ImageURI": im.put("a.bin", bmc.MakeImage("bios", "2", 64)), "Targets": []string{biosFW}},
			"Update.1.0.2.VerificationFailed", "did not accept the image's signature"},
		{"another component's image", "", map[string]any{"ImageURI": im.put("b.bin", bmc.MakeImage("bmc", "2", 64)), "Targets": []string{biosFW}},
			"Update.1.0.2.VerificationFailed", "The image is bmc firmware; ma-r01-compute-03-bios takes bios firmware."},
		{"no component takes it", "", map[string]any{"ImageURI": im.put("c.bin", bmc.MakeImage("cpld", "2", 64))},
			"Update.1.0.2.VerificationFailed", "no component of this BMC takes it"},
		{"not an image", "", map[string]any{"ImageURI": im.put("d.bin", []byte("MZ\x90\x00 a real firmware blob\n"))},
			"Base.1.5.0.ResourceAtUriInUnknownFormat", "not a simulated firmware image"},
		{"no ImageURI", "", map[string]any{"Targets": []string{biosFW}}, "Base.1.5.0.ActionParameterMissing", "requires the parameter ImageURI"},
		{"FTP", "", map[string]any{"ImageURI": "images.example/a.bin", "TransferProtocol": "FTP"}, "Base.1.5.0.PropertyValueNotInList", "HTTP or HTTPS"},
		{"a target that is not firmware", "", map[string]any{"ImageURI": "https://images.example/a.bin", "Targets": []string{system03}},
			"Base.1.5.0.PropertyValueNotInList", "Targets are members of"},
		{"an apply time not offered", "", map[string]any{"ImageURI": "https://images.example/a.bin", "@Redfish.OperationApplyTime": "AtMaintenanceWindowStart"},
			"Base.1.5.0.PropertyValueNotInList", "Immediate OnReset"},
	} {
		require.NoError(t, s.BMC.SetFault(bmc.FaultImageRefused, tc.fault != ""))
		resp, doc := c.do(http.MethodPost, simpleUpdate, tc.body)
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode, tc.name)
		e := doc["error"].(map[string]any)["@Message.ExtendedInfo"].([]any)[0].(map[string]any)
		assert.Equal(t, tc.id, e["MessageId"], tc.name)
		assert.Contains(t, fmt.Sprint(e["Message"], " ", e["Resolution"]), tc.says, tc.name)
	}
	require.NoError(t, s.BMC.SetFault(bmc.FaultImageRefused, false))
	used := im.put("bios.bin", bmc.MakeImage("bios", "1.5.0", 64))
	resp, _ := update(c, used, biosFW, "")
	require.Equal(t, http.StatusAccepted, resp.StatusCode)

	distrustful, _ := serve(t, compute03, bmc.Config{}) // trusts the system's roots only
	for _, tc := range []struct {
		name, url string
		bmc       client
		id, says  string
	}{
		{"the token used", used, c, "Base.1.5.0.ResourceAtUriUnauthorized", "403 Forbidden"},
		{"no such image", im.srv.URL + "/images/none.bin?token=one-time-1", c, "Base.1.5.0.ResourceMissingAtURI", "/images/none.bin"},
		{"a certificate the BMC does not trust", im.put("bios.bin", bmc.MakeImage("bios", "1.5.0", 64)), basic(t, distrustful),
			"Base.1.5.0.CouldNotEstablishConnection", "certificate signed by unknown authority"},
	} {
		resp, doc := update(tc.bmc, tc.url, biosFW, "")
		require.Equal(t, http.StatusAccepted, resp.StatusCode, tc.name)
		assert.Equal(t, "Exception", doc["TaskState"], tc.name)
		assert.Contains(t, msgIDs(doc), "Update.1.0.2.TransferFailed", tc.name)
		assert.Contains(t, msgIDs(doc), tc.id, tc.name)
		raw, _ := json.Marshal(doc)
		assert.Contains(t, string(raw), tc.says, tc.name)
		assert.NotContains(t, string(raw), "one-time", "the one-time token stays out of the task")
		resp, _ = tc.bmc.do(http.MethodGet, resp.Header.Get("Location"), nil)
		assert.Equal(t, http.StatusOK, resp.StatusCode, "a task that ended")
	}
	assert.Empty(t, distrustful.BMC.Updates())
	assert.Equal(t, map[string]int{"ma-r01-compute-03-bios": 1}, s.BMC.Updates(), "only the update that began installing")
	assert.Equal(t, "1.4.2", version(c, biosFW))
}

// The BMC's own firmware, applied at once: after the update the BMC
// reboots for its reset duration, answering nothing, its sessions gone;
// then its task is Completed and the new version is served. With
// forgets_tasks its task monitor is 404 after the reboot; with
// slow_reset the reboot takes minutes.
func TestBMCUpdateReboots(t *testing.T) {
	for _, tc := range []struct {
		name, fault string
		down        time.Duration
		monitor     int
	}{
		{"keeps its task", "", 30 * time.Second, http.StatusOK},
		{"forgets its task", bmc.FaultForgetsTasks, 30 * time.Second, http.StatusNotFound},
		{"reboots slowly", bmc.FaultSlowReset, 10 * time.Minute, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, src, im := serveUpdates(t, bmc.Config{})
			if tc.fault != "" {
				require.NoError(t, s.BMC.SetFault(tc.fault, true))
			}
			sess, code := sessionAs(t, s, user, pass)
			require.Equal(t, http.StatusCreated, code)
			resp, _ := update(sess, im.put("bmc.bin", bmc.MakeImage("bmc", "25.09-2", 2048)), bmcFW, "")
			require.Equal(t, http.StatusAccepted, resp.StatusCode)
			monitor := resp.Header.Get("Location")
			src.advance(59 * time.Second)
			resp, _ = sess.do(http.MethodGet, monitor, nil)
			require.Equal(t, http.StatusAccepted, resp.StatusCode)
			src.advance(time.Second)
			assert.False(t, answers(s), "rebooting: no answer")
			assert.True(t, s.BMC.Rebooting())
			src.advance(tc.down - time.Second)
			assert.False(t, answers(s), "still rebooting")
			src.advance(time.Second)
			require.True(t, answers(s), "back")
			resp, _ = sess.do(http.MethodGet, monitor, nil)
			assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "the reboot ended the session")
			c := basic(t, s)
			resp, doc := c.do(http.MethodGet, monitor, nil)
			assert.Equal(t, tc.monitor, resp.StatusCode)
			if tc.monitor == http.StatusOK {
				assert.Equal(t, "Completed", doc["TaskState"])
			}
			assert.Equal(t, "25.09-2", version(c, bmcFW))
			assert.Equal(t, 1, s.BMC.Reboots())
			assert.Equal(t, map[string]int{"ma-r01-compute-03-bmc": 1}, s.BMC.Updates())
		})
	}
}

// Updates applied on reset: the task completes awaiting the reset, the
// version stays until it; the BIOS installs when the system boots (not
// on a power-off), the BMC's firmware when the Manager resets; a BMC
// reset kills a task still running.
func TestUpdatesOnReset(t *testing.T) {
	s, src, im := serveUpdates(t, bmc.Config{})
	c := basic(t, s)
	for _, u := range []struct{ target, component, version string }{{biosFW, "bios", "1.5.0"}, {bmcFW, "bmc", "25.09-2"}} {
		resp, _ := update(c, im.put(u.component+".bin", bmc.MakeImage(u.component, u.version, 512)), u.target, "OnReset")
		require.Equal(t, http.StatusAccepted, resp.StatusCode)
		src.advance(time.Minute)
		resp, doc := c.do(http.MethodGet, resp.Header.Get("Location"), nil)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		assert.Equal(t, "Completed", doc["TaskState"])
		assert.Contains(t, msgIDs(doc), "Update.1.0.2.AwaitToActivate")
	}
	assert.Equal(t, "1.4.2", version(c, biosFW))
	assert.Equal(t, "25.06-1", version(c, bmcFW))
	assert.True(t, answers(s), "OnReset: the BMC does not reboot by itself")

	resp, _ := c.do(http.MethodPost, systemReset, map[string]any{"ResetType": "ForceOff"})
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	src.advance(time.Minute)
	assert.Equal(t, "1.4.2", version(c, biosFW), "a power-off boots nothing")
	resp, _ = c.do(http.MethodPost, systemReset, map[string]any{"ResetType": "On"})
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	src.advance(29 * time.Second)
	assert.Equal(t, "1.4.2", version(c, biosFW), "booting")
	src.advance(time.Second)
	assert.Equal(t, "1.5.0", version(c, biosFW), "booted")

	require.NoError(t, s.BMC.SetFault(bmc.FaultStuckTask, true))
	resp, _ = update(c, im.put("bios2.bin", bmc.MakeImage("bios", "1.6.0", 512)), biosFW, "")
	stuck := resp.Header.Get("Location")
	resp, _ = c.do(http.MethodPost, managerReset, map[string]any{"ResetType": "GracefulRestart"})
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	assert.False(t, answers(s), "the BMC reboots")
	src.advance(30 * time.Second)
	assert.Equal(t, "25.09-2", version(c, bmcFW), "installed on the Manager's reset")
	resp, doc := c.do(http.MethodGet, stuck, nil)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "Killed", doc["TaskState"], "the reset killed the running task")
	assert.Equal(t, "1.5.0", version(c, biosFW))
}

// A multipart push (Go's mime/multipart, as a client writes it): the
// image in UpdateFile, Targets and the apply time in UpdateParameters;
// answered 202 with the task monitor; refused when a part is missing,
// the image is another component's or too large, or the request is not
// multipart.
func TestMultipartPush(t *testing.T) {
	s, src := serve(t, compute03, bmc.Config{MaxImageSize: 4096})
	c := basic(t, s)
	push := func(params any, file []byte, contentType string) (*http.Response, map[string]any) {
		t.Helper()
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		if params != nil {
			p, _ := json.Marshal(params)
			pw, err := mw.CreateFormField("UpdateParameters")
			require.NoError(t, err)
			_, _ = pw.Write(p)
		}
		if file != nil {
			fw, err := mw.CreateFormFile("UpdateFile", "image.bin")
			require.NoError(t, err)
			_, _ = fw.Write(file)
		}
		require.NoError(t, mw.Close())
		req, _ := http.NewRequest(http.MethodPost, s.URL()+updateSvc+"/update-multipart", &buf)
		req.Header.Set("Authorization", c.hdr["Authorization"])
		req.Header.Set("Content-Type", cmp.Or(contentType, mw.FormDataContentType()))
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var doc map[string]any
		b, _ := io.ReadAll(resp.Body)
		_ = json.Unmarshal(b, &doc)
		return resp, doc
	}
	resp, doc := push(map[string]any{"Targets": []string{bmcFW}, "@Redfish.OperationApplyTime": "Immediate"}, bmc.MakeImage("bmc", "25.09-2", 4096), "")
	require.Equal(t, http.StatusAccepted, resp.StatusCode, doc)
	monitor := resp.Header.Get("Location")
	assert.Equal(t, "/redfish/v1/TaskService/TaskMonitors/1", monitor)
	assert.Equal(t, updateSvc+"/update-multipart", doc["Payload"].(map[string]any)["TargetUri"])
	src.advance(90 * time.Second)
	resp, doc = c.do(http.MethodGet, monitor, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "Completed", doc["TaskState"])
	assert.Equal(t, "25.09-2", version(c, bmcFW))

	for _, tc := range []struct {
		name        string
		params      any
		file        []byte
		contentType string
		status      int
		id          string
	}{
		{"no parameters", nil, bmc.MakeImage("bios", "2", 64), "", http.StatusBadRequest, "Base.1.5.0.ActionParameterMissing"},
		{"no file", map[string]any{}, nil, "", http.StatusBadRequest, "Base.1.5.0.ActionParameterMissing"},
		{"another component's", map[string]any{"Targets": []string{biosFW}}, bmc.MakeImage("bmc", "2", 64), "", http.StatusBadRequest, "Update.1.0.2.VerificationFailed"},
		{"too large", map[string]any{}, bmc.MakeImage("bios", "2", 4097), "", http.StatusRequestEntityTooLarge, "Base.1.5.0.GeneralError"},
		{"not multipart", map[string]any{}, bmc.MakeImage("bios", "2", 64), "application/octet-stream", http.StatusUnsupportedMediaType, "Base.1.5.0.GeneralError"},
	} {
		resp, doc := push(tc.params, tc.file, tc.contentType)
		assert.Equal(t, tc.status, resp.StatusCode, tc.name)
		id, _ := message(doc)
		assert.Equal(t, tc.id, id, tc.name)
	}
	assert.Equal(t, map[string]int{"ma-r01-compute-03-bmc": 1}, s.BMC.Updates())
}

// Updates and resets are an Administrator's: an Operator or a ReadOnly
// account gets 403 and changes nothing, but reads the services.
func TestUpdatesNeedAnAdministrator(t *testing.T) {
	s, _, im := serveUpdates(t, bmc.Config{})
	c := basic(t, s)
	resp, _ := update(c, im.put("bios.bin", bmc.MakeImage("bios", "1.5.0", 64)), biosFW, "")
	require.Equal(t, http.StatusAccepted, resp.StatusCode)
	monitor := resp.Header.Get("Location")
	for _, role := range []string{"ReadOnly", "Operator"} {
		name := strings.ToLower(role)
		resp, _ := c.do(http.MethodPost, accounts, map[string]any{"UserName": name, "Password": goodPass, "RoleId": role})
		require.Equal(t, http.StatusCreated, resp.StatusCode)
		who := basicAs(t, s, name, goodPass)
		for _, w := range []struct {
			method, uri string
			body        any
		}{
			{http.MethodPost, simpleUpdate, map[string]any{"ImageURI": im.put("bios.bin", bmc.MakeImage("bios", "1.6.0", 64)), "Targets": []string{biosFW}}},
			{http.MethodPost, updateSvc + "/update-multipart", nil},
			{http.MethodPost, managerReset, map[string]any{"ResetType": "ForceRestart"}},
			{http.MethodPost, systemReset, map[string]any{"ResetType": "ForceOff"}},
			{http.MethodDelete, monitor, nil},
		} {
			resp, doc := who.do(w.method, w.uri, w.body)
			assert.Equal(t, http.StatusForbidden, resp.StatusCode, "%s: %s %s", role, w.method, w.uri)
			id, _ := message(doc)
			assert.Equal(t, "Base.1.5.0.InsufficientPrivilege", id)
		}
		for _, uri := range []string{updateSvc, fwInventory, biosFW, "/redfish/v1/TaskService/Tasks/1", monitor} {
			resp, _ := who.do(http.MethodGet, uri, nil)
			assert.Less(t, resp.StatusCode, 300, "%s reads %s", role, uri)
		}
	}
	assert.Equal(t, map[string]int{"ma-r01-compute-03-bios": 1}, s.BMC.Updates())
	assert.Equal(t, 0, s.BMC.Reboots())
}

// Debian's redfishtool reads the UpdateService, the FirmwareInventory
// and the TaskService back, with a session.
func TestRedfishtoolReadsUpdates(t *testing.T) {
	rt := peer.Need(t, "redfishtool")
	s, src, im := serveUpdates(t, bmc.Config{})
	resp, _ := update(basic(t, s), im.put("bmc.bin", bmc.MakeImage("bmc", "25.09-2", 512)), bmcFW, "OnReset")
	require.Equal(t, http.StatusAccepted, resp.StatusCode)
	src.advance(time.Minute)
	get := func(uri string) map[string]any {
		t.Helper()
		out, err := peer.Run(time.Minute, rt, "-r", s.Addr(), "-S", "Never", "-A", "Session", "-u", user, "-p", pass, "raw", "GET", uri)
		require.NoError(t, err, out)
		var doc map[string]any
		require.NoError(t, json.Unmarshal([]byte(out), &doc), out)
		return doc
	}
	us := get(updateSvc)
	assert.Equal(t, updateSvc+"/update-multipart", us["MultipartHttpPushUri"])
	assert.EqualValues(t, 2, get(fwInventory)["Members@odata.count"])
	assert.Equal(t, "25.06-1", get(bmcFW)["Version"], "applied on the BMC's reset")
	assert.Equal(t, "/redfish/v1/TaskService/Tasks", get("/redfish/v1/TaskService")["Tasks"].(map[string]any)["@odata.id"])
	assert.EqualValues(t, 1, get("/redfish/v1/TaskService/Tasks")["Members@odata.count"])
	task := get("/redfish/v1/TaskService/Tasks/1")
	assert.Equal(t, "Completed", task["TaskState"])
	assert.Contains(t, msgIDs(task), "Update.1.0.2.AwaitToActivate")
	assert.Equal(t, 0, s.BMC.Stats().Sessions, "redfishtool logs out")
}
