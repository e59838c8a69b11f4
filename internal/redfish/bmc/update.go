package bmc

import (
	"cmp"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/seamdc/seam/internal/redfish"
)

// The UpdateService, shaped on DMTF's public-rackmount1 and
// liquid-cooled server mockups: the FirmwareInventory of what the
// inventory declares, SimpleUpdate (the BMC fetches the image) and a
// multipart push (the image in the request), each answered 202 with a
// task monitor (tasks.go).

const (
	updateServiceURI    = redfish.Root + "/UpdateService"
	firmwareURI         = updateServiceURI + "/FirmwareInventory"
	simpleUpdateURI     = updateServiceURI + "/Actions/UpdateService.SimpleUpdate"
	simpleUpdateInfoURI = updateServiceURI + "/SimpleUpdateActionInfo"
	multipartURI        = updateServiceURI + "/update-multipart"
	applyImmediate      = "Immediate"
	applyOnReset        = "OnReset"
)

// place is where an update's image goes when its task completes.
type place int

const (
	onNow       place = iota // installed at once
	onSelf                   // the BMC's own firmware: the BMC reboots and comes back with it
	onHostReset              // staged: installs when the system next boots
	onBMCReset               // staged: installs when the BMC next reboots
)

// firmware is a BMC's side of its updates: what they installed over
// the inventory's versions, what waits for a reset, its tasks, its
// reboot, and how many updates each component was sent. Installed and
// staged versions survive a reboot (they are in flash).
type firmware struct {
	installed map[string]string // by FirmwareInventory member id
	onHost    map[string]string // staged for the system's next boot
	booting   map[string]string // installing in the system's reset, until hostDone
	onBMC     map[string]string // staged for the BMC's next reboot
	hostDone  time.Time
	downUntil time.Time // the BMC's reboot ends then
	rebooting bool
	tasks     []*task
	nextTask  int
	counts    map[string]int
}

func newFirmware() firmware {
	return firmware{installed: map[string]string{}, onHost: map[string]string{}, booting: map[string]string{}, onBMC: map[string]string{},
		counts: map[string]int{}}
}

func (c *Config) updateDefaults() {
	if c.UpdateDuration <= 0 {
		c.UpdateDuration = 60 * time.Second
	}
	if c.ResetDuration <= 0 {
		c.ResetDuration = 30 * time.Second
	}
	if c.SlowResetDuration <= 0 {
		c.SlowResetDuration = 10 * time.Minute
	}
	if c.MaxImageSize <= 0 {
		c.MaxImageSize = 64 << 20
	}
	if c.ImageClient == nil {
		c.ImageClient = &http.Client{Timeout: time.Minute,
			Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: c.ImageRootCAs, MinVersion: tls.VersionTLS12}}}
	}
}

// fwMember is one FirmwareInventory member: its id and SoftwareId.
type fwMember struct{ id, component string }

// updateOverlays completes what the export gives the update side: each
// FirmwareInventory member updateable, with a status and the resource
// it belongs to (the BMC's firmware to its Manager, the BIOS to its
// system), the Manager's Reset action, and the service root's link to
// the TaskService.
func (s *static) updateOverlays() {
	s.firmware = map[string]fwMember{}
	for uri, doc := range s.docs {
		if strings.HasPrefix(uri, redfish.Root+"/Managers/") && strings.Count(uri, "/") == 4 && doc["ManagerType"] == "BMC" && s.manager == "" {
			s.manager = uri
		}
	}
	for uri, doc := range s.docs {
		id, ok := strings.CutPrefix(uri, firmwareURI+"/")
		if !ok || strings.Contains(id, "/") {
			continue
		}
		c, _ := doc["SoftwareId"].(string)
		s.firmware[uri] = fwMember{id: id, component: c}
		doc["Updateable"] = true
		doc["ResetRequiredOnUpdate"] = c == "bmc"
		doc["Status"] = map[string]any{"State": "Enabled", "Health": "OK"}
		// related to the tray's chassis (where sat discover files the
		// version), and the BMC's firmware to its Manager, the BIOS to
		// its system too
		items, _ := doc["RelatedItem"].([]any)
		switch {
		case c == "bmc" && s.manager != "":
			items = append(items, ref(s.manager))
		case c == "bios" && s.system != "":
			items = append(items, ref(s.system))
		}
		if items != nil {
			doc["RelatedItem"], doc["RelatedItem@odata.count"] = items, len(items)
		}
	}
	if m := s.docs[s.manager]; m != nil {
		m["Actions"] = map[string]any{"#Manager.Reset": map[string]any{"target": s.manager + "/Actions/Manager.Reset",
			"ResetType@Redfish.AllowableValues": []any{"ForceRestart", "GracefulRestart"}}}
	}
	s.docs[redfish.Root]["Tasks"] = ref(taskServiceURI)
}

// applyTimes are the apply times the BMC offers: OnReset only where
// something can be reset (a system, or the BMC through its Manager).
func (s *static) applyTimes() []any {
	if s.system == "" && s.manager == "" {
		return []any{applyImmediate}
	}
	return []any{applyImmediate, applyOnReset}
}

// placeFor is where an image for component goes at apply time.
func (s *static) placeFor(component, apply string) place {
	switch {
	case component == "bmc" && apply == applyImmediate:
		return onSelf
	case component == "bmc":
		return onBMCReset
	case apply == applyImmediate:
		return onNow
	case s.system != "":
		return onHostReset
	}
	return onBMCReset
}

// Updates counts the updates each FirmwareInventory member (by id) was
// sent: every task that began installing an image on it, whatever its
// outcome (a transfer that failed or an image refused does not count).
func (b *BMC) Updates() map[string]int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return maps.Clone(b.fw.counts)
}

// updateService answers a request under /redfish/v1/UpdateService.
func (b *BMC) updateService(w http.ResponseWriter, r *http.Request, uri string, who caller) {
	t, err := b.static()
	if err != nil {
		b.get(w, r, uri) // answers the tree's error
		return
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		switch {
		case uri == updateServiceURI:
			writeJSON(w, http.StatusOK, b.updateServiceDoc(t))
		case uri == simpleUpdateInfoURI:
			writeJSON(w, http.StatusOK, simpleUpdateInfo(t))
		case t.firmware[uri].id != "":
			writeJSON(w, http.StatusOK, b.firmwareDoc(t, uri))
		default:
			b.get(w, r, uri)
		}
	case http.MethodPost:
		switch uri {
		case simpleUpdateURI:
			b.simpleUpdate(w, r, t, who)
		case multipartURI:
			b.push(w, r, t, who)
		default:
			notAllowed(w, r, "GET, HEAD")
		}
	default:
		notAllowed(w, r, "GET, HEAD")
	}
}

func (b *BMC) updateServiceDoc(t *static) map[string]any {
	times := t.applyTimes()
	return map[string]any{"@odata.id": updateServiceURI, "@odata.type": "#UpdateService.v1_17_0.UpdateService", "Id": "UpdateService",
		"Name": "Update Service", "Status": map[string]any{"State": "Enabled", "Health": "OK"}, "ServiceEnabled": true,
		"FirmwareInventory": ref(firmwareURI), "MultipartHttpPushUri": multipartURI, "MaxImageSizeBytes": b.cfg.MaxImageSize,
		"HttpPushUriOptions":     map[string]any{"HttpPushUriApplyTime": map[string]any{"ApplyTime": applyImmediate, "ApplyTime@Redfish.AllowableValues": times}},
		"HttpPushUriOptionsBusy": false,
		"Actions": map[string]any{"#UpdateService.SimpleUpdate": map[string]any{"target": simpleUpdateURI,
			"@Redfish.ActionInfo": simpleUpdateInfoURI, "TransferProtocol@Redfish.AllowableValues": []any{"HTTP", "HTTPS"},
			"@Redfish.OperationApplyTimeSupport": map[string]any{"@odata.type": "#Settings.v1_4_0.OperationApplyTimeSupport", "SupportedValues": times}}}}
}

// simpleUpdateInfo is SimpleUpdate's ActionInfo, after the mockup's.
func simpleUpdateInfo(t *static) map[string]any {
	targets := slices.Sorted(maps.Keys(t.firmware))
	param := func(name, typ string, required bool) map[string]any {
		return map[string]any{"Name": name, "Required": required, "DataType": typ}
	}
	proto := param("TransferProtocol", "String", false)
	proto["AllowableValues"] = []any{"HTTP", "HTTPS"}
	tg := param("Targets", "StringArray", false)
	tg["AllowableValues"] = targets
	return map[string]any{"@odata.id": simpleUpdateInfoURI, "@odata.type": "#ActionInfo.v1_5_0.ActionInfo", "Id": "SimpleUpdateActionInfo",
		"Name": "Simple Update Action Info", "Parameters": []any{param("ImageURI", "String", true), proto, tg,
			param("Username", "String", false), param("Password", "String", false)}}
}

// firmwareDoc is a FirmwareInventory member with the version installed
// now.
func (b *BMC) firmwareDoc(t *static, uri string) map[string]any {
	doc := maps.Clone(t.docs[uri])
	b.mu.Lock()
	if v, ok := b.fw.installed[t.firmware[uri].id]; ok {
		doc["Version"] = v
	}
	b.mu.Unlock()
	return doc
}

// updateParams are what SimpleUpdate and a multipart push's
// UpdateParameters share.
type updateParams struct {
	Targets   []string
	ApplyTime string `json:"@Redfish.OperationApplyTime"`
}

// simpleUpdate is UpdateService.SimpleUpdate: the BMC fetches ImageURI
// (HTTP or HTTPS, with Username and Password as basic credentials if
// given), checks the image and begins a task; a transfer that fails
// makes a task that failed.
func (b *BMC) simpleUpdate(w http.ResponseWriter, r *http.Request, t *static, who caller) {
	if b.role(who) != RoleAdministrator {
		forbidden(w)
		return
	}
	var p struct {
		updateParams
		ImageURI, TransferProtocol, Username, Password string
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16)).Decode(&p); err != nil {
		malformed(w)
		return
	}
	if p.ImageURI == "" {
		writeMsg(w, http.StatusBadRequest, regMsg("Base.1.5.0.ActionParameterMissing", "UpdateService.SimpleUpdate", "ImageURI"))
		return
	}
	u, ok := imageURL(w, p.ImageURI, p.TransferProtocol)
	if !ok {
		return
	}
	targets, ok := b.targets(w, t, p.Targets)
	if !ok {
		return
	}
	apply, ok := applyTime(w, t, p.ApplyTime)
	if !ok {
		return
	}
	name := path.Base(u.Path)
	data, failure := b.fetch(r.Context(), u, p.Username, p.Password)
	if failure != nil {
		b.answer(w, b.transferFailed(simpleUpdateURI, name, targets, failure))
		return
	}
	img, targets, ok := b.verify(w, t, data, name, targets)
	if !ok {
		return
	}
	b.answer(w, b.begin(t, simpleUpdateURI, name, img, apply, targets))
}

// targets are the FirmwareInventory members a request names (none: the
// image decides); it answers 400 for a target that is not one.
func (b *BMC) targets(w http.ResponseWriter, t *static, given []string) ([]fwMember, bool) {
	var out []fwMember
	for _, g := range given {
		m, ok := t.firmware[redfish.Clean(g)]
		if !ok {
			writeMsg(w, http.StatusBadRequest, withResolution(regMsg("Base.1.5.0.PropertyValueNotInList", g, "Targets"),
				"Targets are members of "+firmwareURI+": "+strings.Join(slices.Sorted(maps.Keys(t.firmware)), ", ")+"."))
			return nil, false
		}
		if !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	return out, true
}

// applyTime is a request's @Redfish.OperationApplyTime (Immediate by
// default); it answers 400 for one the BMC does not offer.
func applyTime(w http.ResponseWriter, t *static, v string) (string, bool) {
	if v == "" {
		return applyImmediate, true
	}
	if !slices.Contains(t.applyTimes(), any(v)) {
		writeMsg(w, http.StatusBadRequest, withResolution(regMsg("Base.1.5.0.PropertyValueNotInList", v, "@Redfish.OperationApplyTime"),
			fmt.Sprintf("This BMC applies updates %v.", t.applyTimes())))
		return "", false
	}
	return v, true
}

// reply is a new task's answer: its document and monitor.
type reply struct {
	doc map[string]any
	id  int
}

// begin starts the task that installs img on targets, counting an
// update for each.
func (b *BMC) begin(t *static, action, name string, img Image, apply string, targets []fwMember) reply {
	now := b.src.Now()
	tk := &task{action: action, image: name, version: img.Version, apply: apply, start: now, dur: b.cfg.UpdateDuration}
	for _, m := range targets {
		tk.targets = append(tk.targets, m.id)
		tk.places = append(tk.places, t.placeFor(m.component, apply))
	}
	b.mu.Lock()
	tk.fault = b.fault
	b.addTask(tk)
	for _, m := range targets {
		b.fw.counts[m.id]++
	}
	rep := reply{doc: tk.doc(now), id: tk.id}
	b.mu.Unlock()
	b.cfg.Log.Info("firmware update accepted", "bmc", b.cfg.Name, "task", tk.id, "image", name, "component", img.Component,
		"version", img.Version, "apply_time", apply, "targets", strings.Join(tk.targets, ","))
	return rep
}

// transferFailed is the task of an update whose image never arrived:
// it failed at once, with why.
func (b *BMC) transferFailed(action, name string, targets []fwMember, why map[string]any) reply {
	now := b.src.Now()
	tk := &task{action: action, image: name, apply: applyImmediate, start: now, dur: b.cfg.UpdateDuration}
	msgs := []map[string]any{}
	for _, m := range targets {
		tk.targets = append(tk.targets, m.id)
		msgs = append(msgs, regMsg("Update.1.0.2.TransferFailed", name, m.id))
	}
	if len(targets) == 0 {
		msgs = append(msgs, regMsg("Update.1.0.2.TransferFailed", name, b.cfg.Name))
	}
	b.mu.Lock()
	b.addTask(tk)
	tk.finish(now, stateException, 0, append(msgs, why, regMsg("TaskEvent.1.0.3.TaskAborted", fmt.Sprint(tk.id)))...)
	rep := reply{doc: tk.doc(now), id: tk.id}
	b.mu.Unlock()
	b.cfg.Log.Warn("firmware image transfer failed", "bmc", b.cfg.Name, "task", tk.id, "image", name, "error", why["Message"])
	return rep
}

// answer is 202 Accepted with the task monitor in Location, a
// Retry-After and the Task, as DSP0266 answers an asynchronous
// operation.
func (b *BMC) answer(w http.ResponseWriter, rep reply) {
	w.Header().Set("Location", fmt.Sprintf("%s/%d", monitorsURI, rep.id))
	w.Header().Set("Retry-After", fmt.Sprint(retryAfter))
	writeJSON(w, http.StatusAccepted, rep.doc)
}

// push is a POST to the MultipartHttpPushUri: multipart/form-data with
// an UpdateParameters part (JSON: Targets, @Redfish.OperationApplyTime)
// and an UpdateFile part (the image).
func (b *BMC) push(w http.ResponseWriter, r *http.Request, t *static, who caller) {
	if b.role(who) != RoleAdministrator {
		forbidden(w)
		return
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "multipart/form-data" {
		writeMsg(w, http.StatusUnsupportedMediaType, withResolution(regMsg("Base.1.5.0.GeneralError"),
			"Send multipart/form-data with the parts UpdateParameters (JSON) and UpdateFile (the image)."))
		return
	}
	p, data, name, ok := b.readPush(w, r)
	if !ok {
		return
	}
	targets, ok := b.targets(w, t, p.Targets)
	if !ok {
		return
	}
	apply, ok := applyTime(w, t, p.ApplyTime)
	if !ok {
		return
	}
	img, targets, ok := b.verify(w, t, data, name, targets)
	if !ok {
		return
	}
	b.answer(w, b.begin(t, multipartURI, name, img, apply, targets))
}

// readPush reads a multipart push's parts; it answers 400 (a part
// missing or malformed) or 413 (an image over MaxImageSizeBytes).
func (b *BMC) readPush(w http.ResponseWriter, r *http.Request) (updateParams, []byte, string, bool) {
	var p updateParams
	var data []byte
	name := ""
	r.Body = http.MaxBytesReader(w, r.Body, b.cfg.MaxImageSize+1<<20) // the image and its parameters
	parts, err := r.MultipartReader()
	if err != nil {
		malformed(w)
		return p, nil, "", false
	}
	seenParams := false
	for {
		part, err := parts.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			b.pushReadError(w, err)
			return p, nil, "", false
		}
		switch part.FormName() {
		case "UpdateParameters":
			seenParams = true
			if err := json.NewDecoder(io.LimitReader(part, 1<<16)).Decode(&p); err != nil {
				malformed(w)
				return p, nil, "", false
			}
		case "UpdateFile":
			name = cmp.Or(part.FileName(), "image")
			if data, err = io.ReadAll(io.LimitReader(part, b.cfg.MaxImageSize+1)); err != nil {
				b.pushReadError(w, err)
				return p, nil, "", false
			}
			if int64(len(data)) > b.cfg.MaxImageSize {
				b.tooLarge(w)
				return p, nil, "", false
			}
		}
	}
	for _, m := range []struct {
		name string
		ok   bool
	}{{"UpdateParameters", seenParams}, {"UpdateFile", data != nil}} {
		if !m.ok {
			writeMsg(w, http.StatusBadRequest, regMsg("Base.1.5.0.ActionParameterMissing", "MultipartHttpPushUri", m.name))
			return p, nil, "", false
		}
	}
	return p, data, name, true
}

func (b *BMC) pushReadError(w http.ResponseWriter, err error) {
	if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
		b.tooLarge(w)
		return
	}
	writeMsg(w, http.StatusBadRequest, withResolution(regMsg("Base.1.5.0.GeneralError"), "Reading the multipart request: "+err.Error()))
}

func (b *BMC) tooLarge(w http.ResponseWriter) {
	writeMsg(w, http.StatusRequestEntityTooLarge, withResolution(regMsg("Base.1.5.0.GeneralError"),
		fmt.Sprintf("The image is larger than MaxImageSizeBytes (%d).", b.cfg.MaxImageSize)))
}
