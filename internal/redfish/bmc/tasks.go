package bmc

import (
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/seamdc/seam/internal/redfish"
)

// The TaskService, shaped on DMTF's public-rackmount1 mockup: one Task
// per firmware update, followed through its task monitor. Nothing runs
// in the background: a task's state is worked out from the source's
// clock when someone looks (settle), so a fake clock makes it exact.

const (
	taskServiceURI = redfish.Root + "/TaskService"
	tasksURI       = taskServiceURI + "/Tasks"
	monitorsURI    = taskServiceURI + "/TaskMonitors"
	// maxTasks is how many tasks the BMC keeps; the oldest ended one
	// goes first (CompletedTaskOverWritePolicy Oldest).
	maxTasks = 32
	// stuckAt is where a task stuck by FaultStuckTask stays.
	stuckAt = 40
	// retryAfter is the Retry-After of a task monitor's 202, seconds.
	retryAfter = 5
)

// Task states and the end of an update.
const (
	stateNew       = "New"
	stateStarting  = "Starting"
	stateRunning   = "Running"
	stateCompleted = "Completed"
	stateException = "Exception"
	stateKilled    = "Killed"
	stateCancelled = "Cancelled"
)

// task is one update: its targets, the image's name and version, when
// it applies, and the fault in force when it was accepted, which
// decides how it ends.
type task struct {
	id      int
	action  string   // the URI the request was posted to
	targets []string // FirmwareInventory member ids
	places  []place  // where each target's image goes when the task completes
	image   string
	version string
	apply   string // Immediate or OnReset
	fault   string
	start   time.Time
	dur     time.Duration

	state   string // "" while it runs, then how it ended
	end     time.Time
	percent int // when it ended
	msgs    []map[string]any
}

// due is when a running task ends by itself (ok false: it does not).
func (t *task) due() (time.Time, bool) {
	switch {
	case t.state != "" || t.fault == FaultStuckTask:
		return time.Time{}, false
	case t.fault == FaultUpdateFails:
		return t.start.Add(t.dur / 2), true
	}
	return t.start.Add(t.dur), true
}

// progress is a running task's state and percent at now.
func (t *task) progress(now time.Time) (string, int) {
	elapsed := now.Sub(t.start)
	if elapsed <= 0 {
		return stateNew, 0
	}
	p := int(elapsed * 100 / t.dur)
	top := 99
	if t.fault == FaultStuckTask {
		top = stuckAt
	}
	p = min(p, top)
	if elapsed < t.dur/10 {
		return stateStarting, p
	}
	return stateRunning, p
}

// finish ends a running task at at.
func (t *task) finish(at time.Time, state string, percent int, msgs ...map[string]any) {
	t.state, t.end, t.percent = state, at, percent
	t.msgs = append(t.msgs, msgs...)
}

// running is whether the task has not ended.
func (t *task) running() bool { return t.state == "" }

// doc is the Task resource at now, after the public-rackmount1 mockup's
// Tasks/545.
func (t *task) doc(now time.Time) map[string]any {
	id := strconv.Itoa(t.id)
	state, percent := t.state, t.percent
	if t.running() {
		state, percent = t.progress(now)
	}
	msgs := make([]any, 0, len(t.targets)+4)
	for _, m := range t.targets {
		msgs = append(msgs, regMsg("Update.1.0.2.TargetDetermined", m, t.image))
	}
	switch state {
	case stateStarting:
		msgs = append(msgs, regMsg("TaskEvent.1.0.3.TaskStarted", id))
		for _, m := range t.targets {
			msgs = append(msgs, regMsg("Update.1.0.2.VerifyingAtComponent", t.image, m))
		}
	case stateRunning:
		msgs = append(msgs, regMsg("TaskEvent.1.0.3.TaskStarted", id))
		for _, m := range t.targets {
			msgs = append(msgs, regMsg("Update.1.0.2.InstallingOnComponent", t.image, m))
		}
		msgs = append(msgs, regMsg("TaskEvent.1.0.3.TaskProgressChanged", id, strconv.Itoa(percent)))
	}
	for _, m := range t.msgs {
		msgs = append(msgs, m)
	}
	status := "OK"
	switch state {
	case stateException, stateKilled:
		status = "Critical"
	case stateCancelled:
		status = "Warning"
	}
	doc := map[string]any{"@odata.id": tasksURI + "/" + id, "@odata.type": "#Task.v1_7_4.Task", "Id": id, "Name": "Task " + id,
		"TaskState": state, "TaskStatus": status, "PercentComplete": percent, "StartTime": t.start.Format(time.RFC3339),
		"TaskMonitor": monitorsURI + "/" + id, "Messages": msgs, "HidePayload": false,
		"Payload": map[string]any{"HttpOperation": "POST", "TargetUri": t.action}}
	if !t.running() {
		doc["EndTime"] = t.end.Format(time.RFC3339)
	}
	return doc
}

// regMsg is a message of the Base, Update or TaskEvent registry with
// its arguments.
func regMsg(id string, args ...string) map[string]any {
	m := registry[id[strings.LastIndexByte(id, '.')+1:]]
	text := m.text
	for i := len(args); i >= 1; i-- { // %10 before %1
		text = strings.ReplaceAll(text, "%"+strconv.Itoa(i), args[i-1])
	}
	out := map[string]any{"@odata.type": "#Message.v1_1_1.Message", "MessageId": id, "Message": text, "Severity": m.severity,
		"Resolution": m.resolution}
	if len(args) > 0 {
		out["MessageArgs"] = slices.Clone(args)
	}
	return out
}

// withResolution is m with a resolution of the BMC's own: what went
// wrong in words.
func withResolution(m map[string]any, resolution string) map[string]any {
	m = maps.Clone(m)
	m["Resolution"] = resolution
	return m
}

// registry holds the messages the BMC sends, by their key in the
// registries of DMTF's DSP8011 (Base 1.5.0, Update 1.0.2, TaskEvent
// 1.0.3).
var registry = map[string]struct{ text, severity, resolution string }{
	"TargetDetermined":      {"The target device '%1' will be updated with image '%2'.", "OK", "None."},
	"VerifyingAtComponent":  {"Image '%1' is being verified at '%2'.", "OK", "None."},
	"InstallingOnComponent": {"Image '%1' is being installed on '%2'.", "OK", "None."},
	"UpdateSuccessful":      {"Device '%1' successfully updated with image '%2'.", "OK", "None."},
	"AwaitToActivate":       {"Awaiting for an action to proceed with activating image '%1' on '%2'.", "OK", "Perform the requested action to advance the update operation."},
	"TransferFailed":        {"Transfer of image '%1' to '%2' failed.", "Critical", "None."},
	"VerificationFailed":    {"Verification of image '%1' at '%2' failed.", "Critical", "None."},
	"ApplyFailed":           {"Installation of image '%1' to '%2' failed.", "Critical", "None."},
	"TaskStarted":           {"The task with Id '%1' has started.", "OK", "None."},
	"TaskProgressChanged":   {"The task with Id '%1' has changed to progress %2 percent complete.", "OK", "None."},
	"TaskCompletedOK":       {"The task with Id '%1' has completed.", "OK", "None."},
	"TaskAborted":           {"The task with Id '%1' has completed with errors.", "Critical", "None."},
	"TaskCancelled":         {"Work on the task with Id '%1' has been halted prior to completion due to an explicit request.", "Warning", "None."},
	"CouldNotEstablishConnection": {"The service failed to establish a connection with the URI %1.", "Critical",
		"Ensure that the URI contains a valid and reachable node name, protocol information and other URI components."},
	"ResourceAtUriUnauthorized": {"While accessing the resource at %1, the service received an authorization error %2.", "Critical",
		"Ensure that the appropriate access is provided for the service in order for it to access the URI."},
	"ResourceMissingAtURI": {"The resource at the URI %1 was not found.", "Critical",
		"Place a valid resource at the URI or correct the URI and resubmit the request."},
	"ResourceAtUriInUnknownFormat": {"The resource at %1 is in a format not recognized by the service.", "Critical",
		"Place an image or resource or file that is recognized by the service at the URI."},
	"ActionParameterMissing": {"The action %1 requires the parameter %2 to be present in the request body.", "Critical",
		"Supply the action with the required parameter in the request body when the request is resubmitted."},
	"PropertyValueNotInList": {"The value %1 for the property %2 is not in the list of acceptable values.", "Warning",
		"Choose a value from the enumeration list that the implementation can support and resubmit the request if the operation failed."},
	"GeneralError": {"A general error has occurred. See Resolution for information on how to resolve the error.", "Critical", "None."},
}

// writeMsg answers status with a Redfish error of one message.
func writeMsg(w http.ResponseWriter, status int, m map[string]any) {
	writeJSON(w, status, map[string]any{"error": map[string]any{"code": m["MessageId"], "message": m["Message"],
		"@Message.ExtendedInfo": []any{m}}})
}

// settle brings the updates to now, in the order things happened:
// tasks that ended (installing, staging or failing, a BMC update
// rebooting the BMC), the BMC's reboot ending (what it staged
// installs), the system's reset ending (likewise); with b.mu held. It
// reports whether the BMC began a reboot (the caller resets the power
// limit, without the lock).
func (b *BMC) settle(now time.Time) bool {
	rebooted := false
	for {
		var next *task
		var at time.Time
		for _, t := range b.fw.tasks {
			if due, ok := t.due(); ok && !due.After(now) && (next == nil || due.Before(at)) {
				next, at = t, due
			}
		}
		fw := &b.fw
		switch {
		case fw.rebooting && !fw.downUntil.After(now) && (next == nil || !at.Before(fw.downUntil)):
			fw.rebooting = false
			b.install(fw.onBMC)
			fw.onBMC = map[string]string{}
		case len(fw.booting) > 0 && !fw.hostDone.After(now) && (next == nil || !at.Before(fw.hostDone)):
			b.install(fw.booting)
			fw.booting = map[string]string{}
		case next != nil:
			if b.taskEnds(next, at) {
				rebooted = true
			}
		default:
			return rebooted
		}
	}
}

// taskEnds ends a task that ran its course at at; with b.mu held. It
// reports whether the BMC began a reboot to activate its own firmware.
func (b *BMC) taskEnds(t *task, at time.Time) bool {
	id := strconv.Itoa(t.id)
	if t.fault == FaultUpdateFails {
		msgs := make([]map[string]any, 0, len(t.targets)+1)
		for _, m := range t.targets {
			msgs = append(msgs, withResolution(regMsg("Update.1.0.2.ApplyFailed", t.image, m),
				"The component stopped answering half-way through the installation; it still runs its previous firmware. Retry the update."))
		}
		t.finish(at, stateException, 50, append(msgs, regMsg("TaskEvent.1.0.3.TaskAborted", id))...)
		b.cfg.Log.Warn("firmware update failed", "bmc", b.cfg.Name, "task", t.id, "image", t.image)
		return false
	}
	self := false
	var msgs []map[string]any
	for i, m := range t.targets {
		switch t.places[i] {
		case onNow:
			if t.fault != FaultVersionUnchanged {
				b.fw.installed[m] = t.version
			}
			msgs = append(msgs, regMsg("Update.1.0.2.UpdateSuccessful", m, t.image))
		case onSelf:
			if t.fault != FaultVersionUnchanged {
				b.fw.onBMC[m] = t.version
			}
			self = true
			msgs = append(msgs, regMsg("Update.1.0.2.UpdateSuccessful", m, t.image))
		case onHostReset:
			if t.fault != FaultVersionUnchanged {
				b.fw.onHost[m] = t.version
			}
			msgs = append(msgs, withResolution(regMsg("Update.1.0.2.AwaitToActivate", t.image, m), "Reset the system (ComputerSystem.Reset) to activate the image."))
		case onBMCReset:
			if t.fault != FaultVersionUnchanged {
				b.fw.onBMC[m] = t.version
			}
			msgs = append(msgs, withResolution(regMsg("Update.1.0.2.AwaitToActivate", t.image, m), "Reset the BMC (Manager.Reset) to activate the image."))
		}
	}
	t.finish(at, stateCompleted, 100, append(msgs, regMsg("TaskEvent.1.0.3.TaskCompletedOK", id))...)
	b.cfg.Log.Info("firmware update completed", "bmc", b.cfg.Name, "task", t.id, "image", t.image, "version", t.version, "apply_time", t.apply)
	if self {
		b.rebootLocked(at, b.resetDuration(t.fault), t.fault == FaultForgetsTasks)
	}
	return self
}

// install makes versions the installed ones; with b.mu held.
func (b *BMC) install(versions map[string]string) {
	for m, v := range versions {
		b.fw.installed[m] = v
		b.cfg.Log.Info("firmware activated", "bmc", b.cfg.Name, "component", m, "version", v)
	}
}

// resetDuration is how long a reset takes under fault.
func (b *BMC) resetDuration(fault string) time.Duration {
	if fault == FaultSlowReset {
		return b.cfg.SlowResetDuration
	}
	return b.cfg.ResetDuration
}

// rebootLocked reboots the BMC at at for d (0: at once): its sessions
// end, tasks still running are killed, or every task is forgotten, and
// what waits for its reset installs once it is back; with b.mu held.
func (b *BMC) rebootLocked(at time.Time, d time.Duration, forget bool) {
	b.sessions = map[string]*session{}
	b.reboots++
	for _, t := range b.fw.tasks {
		if t.running() {
			_, p := t.progress(at)
			t.finish(at, stateKilled, p, withResolution(regMsg("TaskEvent.1.0.3.TaskAborted", strconv.Itoa(t.id)),
				"The BMC reset during the update; the component runs its previous firmware. Retry the update."))
		}
	}
	if forget {
		b.fw.tasks = nil
	}
	b.fw.downUntil, b.fw.rebooting = at.Add(d), true
	if d == 0 {
		b.fw.rebooting = false
		b.install(b.fw.onBMC)
		b.fw.onBMC = map[string]string{}
	}
}

// tick brings the updates to the source's time, resetting the power
// limit if the BMC rebooted meanwhile; it reports whether the BMC is
// rebooting now.
func (b *BMC) tick() bool {
	now := b.src.Now()
	b.mu.Lock()
	rebooted := b.settle(now)
	down := now.Before(b.fw.downUntil)
	b.mu.Unlock()
	if rebooted {
		if err := b.limitToDefault(); err != nil {
			b.cfg.Log.Warn("BMC reboot: the power limit", "bmc", b.cfg.Name, "error", err.Error())
		}
	}
	return down
}

// Rebooting reports whether the BMC is in its own reboot now (it
// answers nothing).
func (b *BMC) Rebooting() bool { return b.tick() }

// hangUp answers nothing: the connection drops, as a BMC's that is
// rebooting.
func hangUp(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if c, _, err := hj.Hijack(); err == nil {
			_ = c.Close()
			return
		}
	}
	panic(http.ErrAbortHandler)
}

// addTask keeps a new task, dropping the oldest ended one beyond
// maxTasks; with b.mu held.
func (b *BMC) addTask(t *task) {
	b.fw.nextTask++
	t.id = b.fw.nextTask
	if len(b.fw.tasks) >= maxTasks {
		if i := slices.IndexFunc(b.fw.tasks, func(x *task) bool { return !x.running() }); i >= 0 {
			b.fw.tasks = slices.Delete(b.fw.tasks, i, i+1)
		}
	}
	b.fw.tasks = append(b.fw.tasks, t)
}

// taskByID is the task with id, or nil; with b.mu held.
func (b *BMC) taskByID(id string) *task {
	for _, t := range b.fw.tasks {
		if strconv.Itoa(t.id) == id {
			return t
		}
	}
	return nil
}

// taskService answers a request under /redfish/v1/TaskService.
func (b *BMC) taskService(w http.ResponseWriter, r *http.Request, uri string, who caller) {
	now := b.src.Now()
	switch {
	case r.Method == http.MethodDelete && strings.HasPrefix(uri, monitorsURI+"/"):
		b.cancelTask(w, strings.TrimPrefix(uri, monitorsURI+"/"), who, now)
		return
	case r.Method != http.MethodGet && r.Method != http.MethodHead:
		notAllowed(w, r, "GET, HEAD")
		return
	}
	b.mu.Lock()
	status, doc := b.taskDoc(uri, now)
	b.mu.Unlock()
	switch status {
	case http.StatusNotFound:
		notFound(w, uri)
	case http.StatusAccepted:
		id, _ := strconv.Atoi(strings.TrimPrefix(uri, monitorsURI+"/"))
		b.answer(w, reply{doc: doc, id: id})
	default:
		writeJSON(w, status, doc)
	}
}

// taskDoc is a document of the TaskService at now and its status: 404
// for none, 202 for the monitor of a running task; with b.mu held.
func (b *BMC) taskDoc(uri string, now time.Time) (int, map[string]any) {
	switch {
	case uri == taskServiceURI:
		return http.StatusOK, map[string]any{"@odata.id": uri, "@odata.type": "#TaskService.v1_3_0.TaskService", "Id": "TaskService",
			"Name": "Tasks Service", "DateTime": now.Format(time.RFC3339), "CompletedTaskOverWritePolicy": "Oldest",
			"LifeCycleEventOnTaskStateChange": false, "ServiceEnabled": true, "Status": map[string]any{"State": "Enabled", "Health": "OK"},
			"Tasks": ref(tasksURI)}
	case uri == tasksURI:
		uris := make([]string, len(b.fw.tasks))
		for i, t := range b.fw.tasks {
			uris[i] = tasksURI + "/" + strconv.Itoa(t.id)
		}
		return http.StatusOK, collection(uri, "TaskCollection", "Task Collection", uris...)
	case strings.HasPrefix(uri, tasksURI+"/"):
		if t := b.taskByID(strings.TrimPrefix(uri, tasksURI+"/")); t != nil {
			return http.StatusOK, t.doc(now)
		}
	case strings.HasPrefix(uri, monitorsURI+"/"):
		t := b.taskByID(strings.TrimPrefix(uri, monitorsURI+"/"))
		switch {
		case t != nil && t.running():
			return http.StatusAccepted, t.doc(now)
		case t != nil:
			return http.StatusOK, t.doc(now) // what the operation ended as, in the Task
		}
	}
	return http.StatusNotFound, nil
}

// cancelTask is a DELETE of a task monitor: a running task is
// cancelled (the component keeps its firmware); an Administrator's
// only.
func (b *BMC) cancelTask(w http.ResponseWriter, id string, who caller, now time.Time) {
	if b.role(who) != RoleAdministrator {
		forbidden(w)
		return
	}
	b.mu.Lock()
	t := b.taskByID(id)
	var doc map[string]any
	if t != nil && t.running() {
		_, p := t.progress(now)
		t.finish(now, stateCancelled, p, regMsg("TaskEvent.1.0.3.TaskCancelled", id))
		doc = t.doc(now)
	}
	b.mu.Unlock()
	switch {
	case t == nil:
		notFound(w, monitorsURI+"/"+id)
	case doc == nil:
		writeMsg(w, http.StatusConflict, withResolution(regMsg("Base.1.5.0.GeneralError"), "The task has ended; there is nothing to cancel."))
	default:
		b.cfg.Log.Info("firmware update cancelled", "bmc", b.cfg.Name, "task", id)
		writeJSON(w, http.StatusOK, doc)
	}
}
