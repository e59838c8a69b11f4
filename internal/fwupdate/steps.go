package fwupdate

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/seamdc/seam/internal/dryrun"
	"github.com/seamdc/seam/internal/firmware"
)

const (
	updateServiceURI = "/redfish/v1/UpdateService"
	firmwareURI      = updateServiceURI + "/FirmwareInventory"
	simpleUpdateURI  = updateServiceURI + "/Actions/UpdateService.SimpleUpdate"
	tasksURI         = "/redfish/v1/TaskService/Tasks"
)

// member is a FirmwareInventory member.
type member struct {
	uri, id, name, software, version string
	related                          []string // RelatedItem URIs
	manager                          bool     // it belongs to a Manager: the BMC's own firmware
}

func memberIDs(ms []member) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.uri
	}
	return out
}

func allAt(ms []member, version string) bool {
	for _, m := range ms {
		if m.version != version {
			return false
		}
	}
	return len(ms) > 0
}

func versions(ms []member) string {
	vs := make([]string, 0, len(ms))
	for _, m := range ms {
		if !slices.Contains(vs, m.version) {
			vs = append(vs, m.version)
		}
	}
	return strings.Join(vs, ", ")
}

// check reads the component's FirmwareInventory members: the
// baseline's targets where the BMC has them all, else the members
// that name the component.
func (a *applier) check(u Update) ([]member, string, error) {
	if a.inventory == nil {
		inv, err := a.firstRead(u)
		if err != nil {
			return nil, "", a.readFail(u, StepCheck, "reading the FirmwareInventory", err)
		}
		a.inventory = inv
	} else if err := a.refresh(a.inventory); err != nil {
		return nil, "", a.readFail(u, StepCheck, "reading the FirmwareInventory", err)
	}
	targets := a.resolve(u)
	if len(targets) == 0 {
		ids := make([]string, len(a.inventory))
		for i, m := range a.inventory {
			ids[i] = m.id
		}
		return nil, "", a.fail(u, StepCheck, fmt.Sprintf("no FirmwareInventory member is %s (by SoftwareId, Id or Name; members: %s)", u.Component, strings.Join(ids, ", ")),
			"", "check the baseline's component and targets against the BMC", nil)
	}
	found := versions(targets)
	if u.From != "" && found != u.From && found != u.To {
		a.emit(u, StepCheck, fmt.Sprintf("runs %s where the plan says %s: updating it to %s", found, u.From, u.To), nil)
	}
	return targets, found, nil
}

// firstRead reads the FirmwareInventory a first time. A BMC that does
// not answer may be rebooting (a run stopped during its own update):
// it is waited for up to the reset timeout.
func (a *applier) firstRead(u Update) ([]member, error) {
	start := a.clk.Now()
	for said := false; ; said = true {
		inv, err := a.readInventory()
		if err == nil || !isDown(err) || a.since(start) >= a.opt.ResetTimeout {
			return inv, err
		}
		if !said {
			a.emit(u, StepCheck, fmt.Sprintf("the BMC does not answer (rebooting?): waiting up to %s for it", a.opt.ResetTimeout), nil)
		}
		if err := a.sleep(a.opt.Poll); err != nil {
			return nil, err
		}
	}
}

// readInventory reads every FirmwareInventory member.
func (a *applier) readInventory() ([]member, error) {
	rep, err := a.conn.do(http.MethodGet, firmwareURI, nil)
	if err != nil {
		return nil, err
	}
	var out []member
	for _, uri := range members(rep.doc) {
		out = append(out, member{uri: uri})
	}
	return out, a.refresh(out)
}

// refresh reads the members again.
func (a *applier) refresh(ms []member) error {
	for i := range ms {
		rep, err := a.conn.do(http.MethodGet, ms[i].uri, nil)
		if err != nil {
			return err
		}
		ms[i] = toMember(ms[i].uri, rep.doc)
	}
	return nil
}

func toMember(uri string, doc map[string]any) member {
	m := member{uri: uri, id: str(doc, "Id"), name: str(doc, "Name"), software: str(doc, "SoftwareId"), version: str(doc, "Version")}
	items, _ := doc["RelatedItem"].([]any)
	for _, it := range items {
		if id := odataID(it); id != "" {
			m.related = append(m.related, id)
			m.manager = m.manager || strings.HasPrefix(id, "/redfish/v1/Managers/")
		}
	}
	return m
}

// resolve is the update's targets among the inventory, said in an
// event when they are not the baseline's.
func (a *applier) resolve(u Update) []member {
	byURI := map[string]member{}
	for _, m := range a.inventory {
		byURI[m.uri] = m
	}
	var given []member
	for _, t := range u.Targets {
		if m, ok := byURI[strings.TrimSuffix(t, "/")]; ok {
			given = append(given, m)
		}
	}
	if len(u.Targets) > 0 && len(given) == len(u.Targets) {
		return given
	}
	for _, match := range []func(member) string{
		func(m member) string { return m.software }, func(m member) string { return m.id }, func(m member) string { return m.name },
	} {
		var out []member
		for _, m := range a.inventory {
			if strings.EqualFold(match(m), u.Component) {
				out = append(out, m)
			}
		}
		if len(out) > 0 {
			why := "the baseline names no targets"
			if len(u.Targets) > 0 {
				why = fmt.Sprintf("the BMC has no %s", strings.Join(u.Targets, ", "))
			}
			a.emit(u, StepCheck, fmt.Sprintf("targets %s: %s, so the members that name %s", strings.Join(memberIDs(out), ", "), why, u.Component), nil)
			return out
		}
	}
	return nil
}

// readFail is a read that failed at step.
func (a *applier) readFail(u Update, step, what string, err error) *Error {
	next := nextLookAtBMC
	if isDown(err) {
		next = nextReboot
	}
	return a.fail(u, step, what, joinMessages(errorMessages(err)), next, err)
}

// start sends the update: a multipart push where asked for and
// offered, else SimpleUpdate; in a dry run it records the request and
// the reset that would follow.
func (a *applier) start(u Update, targets []member, r *Result) (string, error) {
	svc, err := a.conn.do(http.MethodGet, updateServiceURI, nil)
	if err != nil {
		return "", a.readFail(u, StepUpdate, "reading the UpdateService", err)
	}
	ids := memberIDs(targets)
	params := map[string]any{"Targets": ids}
	if u.ApplyTime != "" {
		params["@Redfish.OperationApplyTime"] = u.ApplyTime
	}
	push := str(svc.doc, "MultipartHttpPushUri")
	var rep reply
	switch {
	case a.opt.Push && push != "" && u.ImageFile != "":
		rep, err = a.push(u, push, params, r)
	default:
		if a.opt.Push {
			a.emit(u, StepUpdate, "no multipart push (the BMC offers none, or the update names no image file): SimpleUpdate", nil)
		}
		rep, err = a.simpleUpdate(u, svc.doc, params, r)
	}
	if err != nil || r.Would {
		return "", err
	}
	r.Sent = true
	monitor := rep.header.Get("Location")
	if monitor == "" {
		monitor = str(rep.doc, "TaskMonitor")
	}
	if monitor == "" {
		monitor = str(rep.doc, "@odata.id") // a Task, followed by its own resource
	}
	if u, err := url.Parse(monitor); err == nil && u.IsAbs() {
		monitor = u.RequestURI()
	}
	a.emit(u, StepUpdate, fmt.Sprintf("%s %s taken by the BMC (%d)", u.Component, u.To, rep.status), func(e *Event) { e.TaskMonitor = monitor })
	return monitor, nil
}

// simpleUpdate POSTs UpdateService.SimpleUpdate.
func (a *applier) simpleUpdate(u Update, svc map[string]any, params map[string]any, r *Result) (reply, error) {
	target, _ := action(svc, "#UpdateService.SimpleUpdate")
	if target == "" {
		target = simpleUpdateURI
	}
	body := map[string]any{"ImageURI": u.ImageURI}
	for k, v := range params {
		body[k] = v
	}
	if p, err := url.Parse(u.ImageURI); err == nil && (p.Scheme == "https" || p.Scheme == "http") {
		body["TransferProtocol"] = strings.ToUpper(p.Scheme)
	}
	if a.opt.DryRun.Active() {
		shown := map[string]any{}
		for k, v := range body {
			shown[k] = v
		}
		shown["ImageURI"] = shownURL(u.ImageURI)
		raw, _ := json.Marshal(shown)
		a.opt.DryRun.Would(dryrun.BMC, "POST %s%s %s (BMC %s, node %s: %s %s → %s)", trimURL(a.opt.URL), target, raw, a.bmc, a.node, u.Component, r.Found, u.To)
		r.Would = true
		return reply{}, nil
	}
	a.emit(u, StepUpdate, fmt.Sprintf("SimpleUpdate of %s %s from %s, %s", u.Component, u.To, shownURL(u.ImageURI), applyTimeOf(u)), sending)
	rep, err := a.conn.do(http.MethodPost, target, body)
	return rep, a.sendFail(u, "SimpleUpdate", err)
}

func applyTimeOf(u Update) string {
	if u.ApplyTime == "" {
		return "applied as the BMC chooses"
	}
	return "applied " + u.ApplyTime
}

// push POSTs the image to the MultipartHttpPushUri, its file checked
// against its digest first.
func (a *applier) push(u Update, uri string, params map[string]any, r *Result) (reply, error) {
	data, err := os.ReadFile(u.ImageFile)
	if err != nil {
		return reply{}, a.fail(u, StepUpdate, "reading the image to push", "", nextImage, err)
	}
	sum := sha256.Sum256(data)
	if got := hex.EncodeToString(sum[:]); u.SHA256 != "" && got != strings.ToLower(u.SHA256) {
		return reply{}, a.fail(u, StepUpdate, fmt.Sprintf("the image %s is sha256:%s, not the plan's %s: nothing sent", u.ImageFile, got, u.SHA256), "", nextImage, nil)
	}
	raw, _ := json.Marshal(params)
	name := filepath.Base(u.ImageFile)
	if a.opt.DryRun.Active() {
		a.opt.DryRun.Would(dryrun.BMC, "POST %s%s multipart/form-data: UpdateParameters %s, UpdateFile %s (%d bytes, sha256:%s) (BMC %s, node %s: %s %s → %s)",
			trimURL(a.opt.URL), uri, raw, name, len(data), hex.EncodeToString(sum[:]), a.bmc, a.node, u.Component, r.Found, u.To)
		r.Would = true
		return reply{}, nil
	}
	body, ctype, err := multipartBody(raw, name, data)
	if err != nil {
		return reply{}, err
	}
	a.emit(u, StepUpdate, fmt.Sprintf("multipart push of %s (%d bytes), %s", name, len(data), applyTimeOf(u)), sending)
	rep, err := a.conn.raw(http.MethodPost, uri, body, ctype)
	return rep, a.sendFail(u, "the multipart push", err)
}

// multipartBody is a push's body: UpdateParameters (JSON), then
// UpdateFile.
func multipartBody(params []byte, name string, data []byte) ([]byte, string, error) {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", `form-data; name="UpdateParameters"`)
	h.Set("Content-Type", "application/json")
	pw, err := mw.CreatePart(h)
	if err == nil {
		_, err = pw.Write(params)
	}
	if err == nil {
		var fw interface{ Write([]byte) (int, error) }
		if fw, err = mw.CreateFormFile("UpdateFile", name); err == nil {
			_, err = fw.Write(data)
		}
	}
	if err == nil {
		err = mw.Close()
	}
	return buf.Bytes(), mw.FormDataContentType(), err
}

// sendFail is an update request that failed: refused (the BMC's
// message), or unanswered (it may have been taken).
func (a *applier) sendFail(u Update, what string, err error) error {
	switch {
	case err == nil:
		return nil
	case isDown(err):
		return a.fail(u, StepUpdate, what+": no answer", "", nextUnanswered, err)
	}
	ms := errorMessages(err)
	return a.fail(u, StepUpdate, fmt.Sprintf("the BMC refused %s (%d)", what, statusOf(err)), joinMessages(ms), nextFor(ms, nextLookAtBMC), nil)
}

// outcome is how following a task ended: the BMC rebooted meanwhile
// (it stopped answering, then answered again), or forgot the task.
type outcome struct{ rebooted, gone bool }

// terminal task states: the update is over.
var terminal = []string{"Completed", "Exception", "Killed", "Cancelled"}

// follow reads the task monitor until the task ends, the BMC forgets
// it (404), or the task timeout passes; a BMC that stops answering is
// waited for up to the reset timeout and the monitor read again.
func (a *applier) follow(u Update, monitor string) (outcome, error) {
	var out outcome
	start := a.clk.Now()
	var downSince time.Time
	lastState, lastPct := "", -1
	withMonitor := func(e *Event) { e.TaskMonitor = monitor }
	for {
		rep, err := a.conn.do(http.MethodGet, monitor, nil)
		switch {
		case isDown(err):
			if downSince.IsZero() {
				downSince, out.rebooted = a.clk.Now(), true
				a.emit(u, StepReboot, fmt.Sprintf("the BMC stopped answering (rebooting): waiting up to %s", a.opt.ResetTimeout), withMonitor)
			}
			if d := a.since(downSince); d >= a.opt.ResetTimeout {
				return out, a.fail(u, StepReboot, fmt.Sprintf("the BMC answered nothing for %s (the reset timeout) during its update", d), "", nextReboot, nil)
			}
			if err := a.sleep(a.opt.Poll); err != nil {
				return out, err
			}
			continue
		case statusOf(err) == http.StatusNotFound:
			out.gone = true
			a.backFrom(u, &downSince)
			return out, nil
		case err != nil:
			return out, a.readFail(u, StepTask, "reading the task monitor "+monitor, err)
		}
		a.backFrom(u, &downSince)
		state, pct := str(rep.doc, "TaskState"), percent(rep.doc)
		if slices.Contains(terminal, state) {
			return out, a.ended(u, monitor, state, pct, rep.doc)
		}
		if state != lastState || pct != lastPct {
			lastState, lastPct = state, pct
			a.emit(u, StepTask, fmt.Sprintf("%s at %d %%", state, pct), func(e *Event) { e.Percent, e.TaskMonitor = pct, monitor })
		}
		if d := a.since(start); d >= a.opt.TaskTimeout {
			return out, a.fail(u, StepTask, fmt.Sprintf("task %s still %s at %d %% after %s (the task timeout)", monitor, state, pct, d), "", nextRunning, nil)
		}
		if err := a.sleep(a.wait(rep.header)); err != nil {
			return out, err
		}
	}
}

// backFrom says the BMC answers again after a reboot.
func (a *applier) backFrom(u Update, downSince *time.Time) {
	if downSince.IsZero() {
		return
	}
	a.emit(u, StepReboot, fmt.Sprintf("the BMC answers again after %s", a.since(*downSince)), nil)
	*downSince = time.Time{}
}

// ended is a task that ended: nil when Completed, else the BMC's
// messages.
func (a *applier) ended(u Update, monitor, state string, pct int, doc map[string]any) error {
	if state == "Completed" {
		a.emit(u, StepTask, "Completed", func(e *Event) { e.Percent, e.TaskMonitor = 100, monitor })
		return nil
	}
	ms := taskMessages(doc)
	next := nextFor(ms, nextRetry)
	if state == "Cancelled" {
		next = "someone cancelled it at the BMC: retry the stage if that was not meant to stop the rollout"
	}
	return a.fail(u, StepTask, fmt.Sprintf("%s at %d %%", state, pct), joinMessages(ms), next, nil)
}

// wait is how long to wait before reading a monitor again: its
// Retry-After (1 s to a minute), else the poll interval.
func (a *applier) wait(h http.Header) time.Duration {
	if n, err := strconv.Atoi(h.Get("Retry-After")); err == nil && n >= 1 && n <= 60 {
		return time.Duration(n) * time.Second
	}
	return a.opt.Poll
}

func percent(doc map[string]any) int {
	f, _ := doc["PercentComplete"].(float64)
	return int(f)
}

// resumeGone decides an interrupted run's update whose task the BMC no
// longer knows: done if the version is the target's; updated again
// only when the version is still another and no task runs on the BMC.
func (a *applier) resumeGone(u Update, targets []member, r *Result) (string, error) {
	if err := a.refresh(targets); err != nil {
		return "", a.readFail(u, StepCheck, "reading the version after the task was forgotten", err)
	}
	if allAt(targets, u.To) {
		a.emit(u, StepCheck, fmt.Sprintf("the BMC forgot task %s and runs %s already: done", u.Resume, u.To), nil)
		r.Version = u.To
		return "", nil
	}
	running, err := a.runningTasks()
	if err != nil {
		return "", a.readFail(u, StepCheck, "reading the TaskService", err)
	}
	if len(running) > 0 {
		return "", a.fail(u, StepCheck, fmt.Sprintf("the BMC forgot task %s, runs %s and has tasks running (%s): not updating again blindly", u.Resume, versions(targets), strings.Join(running, ", ")),
			"", nextRunning, nil)
	}
	a.emit(u, StepCheck, fmt.Sprintf("the BMC forgot task %s, still runs %s and runs no task: safe to update again", u.Resume, versions(targets)), nil)
	return a.start(u, targets, r)
}

// sending marks the event sent just before an update is.
func sending(e *Event) { e.Sending = true }

// adoptSkew is how much earlier than the interrupted run's intent a
// BMC's clock may date the task it began for it.
const adoptSkew = 5 * time.Minute

// adopt finds the update task an interrupted run may have begun
// (u.MaybeSent): the newest of the BMC's tasks posted to an update
// action that began since, running or ended. "" when there is none:
// the update was not taken, and is sent.
func (a *applier) adopt(u Update) (string, error) {
	rep, err := a.conn.do(http.MethodGet, tasksURI, nil)
	if err != nil {
		return "", a.readFail(u, StepCheck, "reading the TaskService for the update an interrupted run may have sent", err)
	}
	var best string
	var bestAt time.Time
	for _, uri := range members(rep.doc) {
		t, err := a.conn.do(http.MethodGet, uri, nil)
		if err != nil {
			return "", a.readFail(u, StepCheck, "reading the TaskService for the update an interrupted run may have sent", err)
		}
		payload, _ := t.doc["Payload"].(map[string]any)
		target := str(payload, "TargetUri")
		if !strings.HasPrefix(target, updateServiceURI) {
			continue
		}
		at, err := time.Parse(time.RFC3339, str(t.doc, "StartTime"))
		if err != nil || at.Before(u.MaybeSent.Add(-adoptSkew)) || (best != "" && !at.After(bestAt)) {
			continue
		}
		best, bestAt = cmp.Or(str(t.doc, "TaskMonitor"), uri), at
	}
	if best == "" {
		a.emit(u, StepCheck, "an interrupted run was sending this update, and the BMC began no update task since: sending it", nil)
		return "", nil
	}
	if p, err := url.Parse(best); err == nil && p.IsAbs() {
		best = p.RequestURI()
	}
	a.emit(u, StepTask, fmt.Sprintf("an interrupted run was sending this update; the BMC began task %s since: following it", best), func(e *Event) { e.TaskMonitor = best })
	return best, nil
}

// runningTasks are the BMC's tasks that have not ended.
func (a *applier) runningTasks() ([]string, error) {
	rep, err := a.conn.do(http.MethodGet, tasksURI, nil)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, uri := range members(rep.doc) {
		t, err := a.conn.do(http.MethodGet, uri, nil)
		if err != nil {
			return nil, err
		}
		if s := str(t.doc, "TaskState"); !slices.Contains(terminal, s) {
			out = append(out, uri+" "+s)
		}
	}
	return out, nil
}

// reset sends the reset the update needs (its name; "" none): the
// system's, the Manager's or the chassis's. A manager reset is not
// sent when the BMC rebooted by itself for the update.
func (a *applier) reset(u Update, targets []member, bmcRebooted bool) (string, error) {
	switch {
	case u.Reset == "" || u.Reset == firmware.ResetNone:
		return "", nil
	case u.Reset == firmware.ResetManager && bmcRebooted:
		a.emit(u, StepReset, "the BMC's own reboot after its update is the manager reset: none sent", nil)
		return "", nil
	}
	target, kind, err := a.resetAction(u, targets)
	if err != nil {
		return "", err
	}
	body := map[string]any{"ResetType": kind}
	if a.opt.DryRun.Active() {
		raw, _ := json.Marshal(body)
		a.opt.DryRun.Would(dryrun.BMC, "POST %s%s %s (BMC %s, node %s: the %s reset %s %s needs)", trimURL(a.opt.URL), target, raw, a.bmc, a.node, u.Reset, u.Component, u.To)
		return "", nil
	}
	a.emit(u, StepReset, fmt.Sprintf("%s reset: POST %s %s", u.Reset, target, kind), nil)
	if _, err := a.conn.do(http.MethodPost, target, body); err != nil && !isDown(err) {
		ms := errorMessages(err)
		return "", a.fail(u, StepReset, fmt.Sprintf("the BMC refused the %s reset (%d)", u.Reset, statusOf(err)), joinMessages(ms), nextFor(ms, nextLookAtBMC), nil)
	}
	return u.Reset, nil
}

// resets: where each reset's action is, and the reset types preferred.
var resets = map[string]struct {
	collection, action string
	prefer             []string
}{
	firmware.ResetSystem:  {"/redfish/v1/Systems", "#ComputerSystem.Reset", []string{"GracefulRestart", "ForceRestart", "PowerCycle"}},
	firmware.ResetManager: {"/redfish/v1/Managers", "#Manager.Reset", []string{"GracefulRestart", "ForceRestart"}},
	firmware.ResetChassis: {"/redfish/v1/Chassis", "#Chassis.Reset", []string{"PowerCycle", "ForceRestart", "GracefulRestart"}},
}

// resetAction finds the reset's action: on the resource the targets
// belong to, else on the first of its collection that has one.
func (a *applier) resetAction(u Update, targets []member) (string, string, error) {
	spec, ok := resets[u.Reset]
	if !ok {
		return "", "", a.fail(u, StepReset, fmt.Sprintf("reset %q is none of system, manager, chassis", u.Reset), "", "correct the baseline", nil)
	}
	var cands []string
	for _, m := range targets {
		for _, rel := range m.related {
			if strings.HasPrefix(rel, spec.collection+"/") {
				cands = append(cands, rel)
			}
		}
	}
	col, err := a.conn.do(http.MethodGet, spec.collection, nil)
	if err != nil {
		return "", "", a.readFail(u, StepReset, "reading "+spec.collection, err)
	}
	cands = append(cands, members(col.doc)...)
	for _, uri := range cands {
		rep, err := a.conn.do(http.MethodGet, uri, nil)
		if err != nil {
			return "", "", a.readFail(u, StepReset, "reading "+uri, err)
		}
		if target, types := action(rep.doc, spec.action); target != "" {
			return target, pick(spec.prefer, types), nil
		}
	}
	next := nextLookAtBMC
	if u.Reset == firmware.ResetChassis {
		next = nextNoChassis
	}
	return "", "", a.fail(u, StepReset, fmt.Sprintf("the BMC offers no %s under %s", strings.TrimPrefix(spec.action, "#"), spec.collection), "", next, nil)
}

// pick is the first preferred reset type the BMC allows (it allows
// any when it lists none).
func pick(prefer, allowed []string) string {
	for _, p := range prefer {
		if len(allowed) == 0 || slices.Contains(allowed, p) {
			return p
		}
	}
	return allowed[0]
}

// readback is how the version is read back: wait is how long it may
// take to change (0: it must have already); decisive says the
// activation is over (the BMC rebooted and is back), expectDown that a
// BMC reboot must be seen before the version decides.
type readback struct {
	wait                 time.Duration
	decisive, expectDown bool
	after                string // what the version waits for: "the system reset", …
}

// readback reads the targets' versions until they are the target's,
// or the version decides otherwise, or the wait is over.
func (a *applier) readback(u Update, targets []member, rb readback) (string, error) {
	start := a.clk.Now()
	sawDown, downSince := false, time.Time{}
	for {
		err := a.refresh(targets)
		switch {
		case isDown(err):
			if !sawDown {
				a.emit(u, StepReboot, fmt.Sprintf("the BMC stopped answering (rebooting): waiting up to %s", rb.wait), nil)
			}
			sawDown = true
			if downSince.IsZero() {
				downSince = a.clk.Now()
			}
		case err != nil:
			return "", a.readFail(u, StepReadback, "reading the version", err)
		case allAt(targets, u.To):
			a.backFrom(u, &downSince)
			a.emit(u, StepReadback, fmt.Sprintf("%s reads back %s", strings.Join(memberIDs(targets), ", "), u.To), nil)
			return u.To, nil
		case rb.wait == 0 || rb.decisive || (rb.expectDown && sawDown):
			a.backFrom(u, &downSince)
			return versions(targets), a.fail(u, StepReadback, fmt.Sprintf("the update Completed but the version reads back %s, not %s", versions(targets), u.To), "", nextUnchanged, nil)
		default:
			a.backFrom(u, &downSince)
		}
		if d := a.since(start); d >= rb.wait {
			if !downSince.IsZero() {
				return "", a.fail(u, StepReboot, fmt.Sprintf("the BMC answered nothing for %s (the reset timeout %s)", a.since(downSince), rb.wait), "", nextReboot, nil)
			}
			return versions(targets), a.fail(u, StepReadback, fmt.Sprintf("the version still reads back %s, not %s, %s after %s (the reset timeout)", versions(targets), u.To, d, cmp.Or(rb.after, "the update")), "", nextUnchanged, nil)
		}
		if err := a.sleep(a.opt.Poll); err != nil {
			return "", err
		}
	}
}
