package bmc

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"math"
	"net/http"
	"strings"
)

// route answers an authorised (or public) request.
func (b *BMC) route(w http.ResponseWriter, r *http.Request, uri string, who caller) {
	if writes(r.Method, uri) {
		b.mu.Lock()
		b.stats.Writes++
		b.mu.Unlock()
	}
	switch {
	case under(uri, accountServiceURI):
		b.accountService(w, r, uri, who)
		return
	case under(uri, updateServiceURI):
		b.updateService(w, r, uri, who)
		return
	case under(uri, taskServiceURI):
		b.taskService(w, r, uri, who)
		return
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		b.get(w, r, uri)
	case http.MethodPost:
		b.post(w, r, uri, who)
	case http.MethodPatch:
		b.patch(w, r, uri)
	case http.MethodDelete:
		if strings.HasPrefix(uri, sessionsURI+"/") {
			b.logout(w, uri)
			return
		}
		notAllowed(w, r, "GET, HEAD")
	default:
		notAllowed(w, r, "GET, HEAD")
	}
}

// under reports whether uri is root or below it.
func under(uri, root string) bool { return uri == root || strings.HasPrefix(uri, root+"/") }

// writes reports whether a request would change the BMC: a session's
// login and logout change nothing of what it manages.
func writes(method, uri string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	case http.MethodPost:
		return uri != sessionsURI
	case http.MethodDelete:
		return !strings.HasPrefix(uri, sessionsURI+"/")
	}
	return true
}

func notAllowed(w http.ResponseWriter, r *http.Request, allow string) {
	w.Header().Set("Allow", allow)
	writeError(w, http.StatusMethodNotAllowed, "GeneralError", "A general error has occurred. See Resolution for information on how to resolve the error.",
		fmt.Sprintf("%s is not allowed on %s; use %s.", r.Method, r.URL.Path, allow), nil)
}

func (b *BMC) get(w http.ResponseWriter, r *http.Request, uri string) {
	if uri == "/redfish" {
		writeRaw(w, http.StatusOK, []byte("{\n    \"v1\": \"/redfish/v1/\"\n}\n"))
		return
	}
	switch {
	case uri == sessionsURI:
		writeJSON(w, http.StatusOK, b.sessionsDoc())
		return
	case strings.HasPrefix(uri, sessionsURI+"/"):
		if s := b.sessionByURI(uri); s != nil {
			writeJSON(w, http.StatusOK, sessionDoc(s))
		} else {
			notFound(w, uri)
		}
		return
	}
	t, err := b.static()
	if err != nil {
		writeError(w, http.StatusInternalServerError, "InternalError", "The request failed due to an internal service error.  The service is still operational.",
			"Resubmit the request.  If the problem persists, consider resetting the service.", nil)
		b.cfg.Log.Warn("BMC tree", "bmc", b.cfg.Name, "error", err.Error())
		return
	}
	if doc, ok := b.live(t, uri); ok {
		if doc == nil {
			notFound(w, uri)
			return
		}
		if uri == t.chassis+"/Controls/PowerLimit" {
			w.Header().Set("ETag", limitETag(doc))
		}
		writeJSON(w, http.StatusOK, doc)
		return
	}
	if enc, ok := t.encoded[uri]; ok {
		writeRaw(w, http.StatusOK, enc)
		return
	}
	notFound(w, r.URL.Path)
}

// live is a live document (ok: uri is one of them; nil: it names
// something the equipment does not have).
func (b *BMC) live(t *static, uri string) (map[string]any, bool) {
	lv := func() Live { return b.src.Live() }
	switch {
	case t.chassis != "" && uri == t.chassis:
		doc := maps.Clone(t.docs[uri])
		l := lv()
		if l.PowerState != "" {
			doc["PowerState"] = l.PowerState
		} else {
			doc["PowerState"] = "On"
		}
		if b.isLegacy() && t.system != "" {
			delete(doc, "Controls")
			doc["Power"] = ref(t.chassis + "/Power")
		}
		return b.faultDoc(t, doc), true
	case b.isLegacy() && t.system != "" && (uri == t.chassis+"/Controls" || uri == t.chassis+"/Controls/PowerLimit"):
		return nil, true
	case b.isLegacy() && t.system != "" && uri == t.chassis+"/Power":
		l := lv()
		if l.Limit == nil {
			return nil, true
		}
		return legacyPowerDoc(t.chassis, l), true
	case t.chassis != "" && uri == t.chassis+"-enclosure" && b.Fault() == FaultContainsLoop:
		return map[string]any{"@odata.id": uri, "@odata.type": "#Chassis.v1_28_0.Chassis", "Id": uri[strings.LastIndexByte(uri, '/')+1:],
			"Name": "Enclosure", "ChassisType": "Enclosure", "Links": map[string]any{"Contains": []any{ref(t.chassis)}}}, true
	case t.system != "" && uri == t.system:
		doc := maps.Clone(t.docs[uri])
		doc["PowerState"] = lv().PowerState
		return doc, true
	case t.chassis != "" && uri == t.chassis+"/Sensors":
		ids := []string{}
		for _, s := range lv().Sensors {
			ids = append(ids, t.chassis+"/Sensors/"+s.ID)
		}
		return collection(uri, "SensorCollection", "Sensors", ids...), true
	case t.chassis != "" && strings.HasPrefix(uri, t.chassis+"/Sensors/"):
		id := strings.TrimPrefix(uri, t.chassis+"/Sensors/")
		for _, s := range lv().Sensors {
			if s.ID == id {
				return sensorDoc(uri, s), true
			}
		}
		return nil, true
	case t.system != "" && uri == t.chassis+"/Controls":
		if lv().Limit == nil {
			return collection(uri, "ControlCollection", "Chassis controls"), true
		}
		return collection(uri, "ControlCollection", "Chassis controls", uri+"/PowerLimit"), true
	case t.system != "" && uri == t.chassis+"/Controls/PowerLimit":
		l := lv()
		if l.Limit == nil {
			return nil, true
		}
		return b.limitDoc(t.chassis, l), true
	case strings.HasSuffix(uri, "/Metrics") && t.psus[strings.TrimSuffix(uri, "/Metrics")] != 0:
		bay := t.psus[strings.TrimSuffix(uri, "/Metrics")]
		p := lv().PSUs[bay]
		return map[string]any{"@odata.id": uri, "@odata.type": "#PowerSupplyMetrics.v1_2_0.PowerSupplyMetrics", "Id": "Metrics",
			"Name": fmt.Sprintf("Metrics for Power Supply %d", bay), "Status": map[string]any{"State": "Enabled", "Health": "OK"},
			"InputVoltage": reading(p.InputV), "InputPowerWatts": reading(p.InputW), "OutputPowerWatts": reading(p.OutputW)}, true
	case t.cdu != "" && uri == t.cdu+"/SecondaryCoolantConnectors/1":
		c := lv().Coolant
		if c == nil {
			return nil, true
		}
		return map[string]any{"@odata.id": uri, "@odata.type": "#CoolantConnector.v1_3_0.CoolantConnector", "Id": "1",
			"Name": "Cooling connection to rack equipment", "CoolantConnectorType": "Pair", "Status": map[string]any{"State": "Enabled", "Health": "OK"},
			"SupplyTemperatureCelsius": reading(c.SupplyC), "ReturnTemperatureCelsius": reading(c.ReturnC),
			"DeltaTemperatureCelsius": reading(c.ReturnC - c.SupplyC), "FlowLitersPerMinute": reading(c.FlowLPM),
			"HeatRemovedkW": reading(c.HeatW / 1000)}, true
	}
	return nil, false
}

func reading(v float64) map[string]any { return map[string]any{"Reading": round2(v)} }

func round2(v float64) float64 { return math.Round(v*100) / 100 }

func sensorDoc(uri string, s Sensor) map[string]any {
	return map[string]any{"@odata.id": uri, "@odata.type": "#Sensor.v1_12_0.Sensor", "Id": s.ID, "Name": s.Name,
		"ReadingType": s.ReadingType, "ReadingUnits": s.Units, "Reading": round2(s.Reading), "PhysicalContext": s.PhysicalContext,
		"Status": map[string]any{"State": "Enabled", "Health": "OK"}}
}

// limitDoc is a node's PowerLimit control, after the liquid-cooled
// server mockup's Chassis/1U/Controls/PowerLimit.
func limitDoc(chassis string, l Live) map[string]any {
	return map[string]any{"@odata.id": chassis + "/Controls/PowerLimit", "@odata.type": "#Control.v1_7_0.Control", "Id": "PowerLimit",
		"Name": "System Power Limit", "PhysicalContext": "Chassis", "ControlType": "Power", "ControlMode": l.Limit.Mode,
		"SetPoint": l.Limit.SetPoint, "SetPointUnits": "W", "AllowableMin": l.Limit.Min, "AllowableMax": l.Limit.Max,
		"Sensor": map[string]any{"Reading": round2(l.PowerW), "DataSourceUri": chassis + "/Sensors/TotalPower"},
		"Status": map[string]any{"State": "Enabled", "Health": "OK"}}
}

// limitETag covers what a PATCH changes (the set point, the mode, the
// range), not the reading, which moves between a GET and a PATCH.
func limitETag(doc map[string]any) string {
	h := fnv.New64a()
	fmt.Fprint(h, doc["SetPoint"], doc["ControlMode"], doc["AllowableMin"], doc["AllowableMax"])
	return fmt.Sprintf(`W/"%016x"`, h.Sum64())
}

// post answers a login, and the system's and the Manager's Reset
// actions (an Administrator's only).
func (b *BMC) post(w http.ResponseWriter, r *http.Request, uri string, who caller) {
	if uri == sessionsURI {
		b.login(w, r)
		return
	}
	t, err := b.static()
	if err == nil && t.manager != "" && uri == t.manager+"/Actions/Manager.Reset" {
		b.managerReset(w, r, who)
		return
	}
	if err == nil && t.system != "" && uri == t.system+"/Actions/ComputerSystem.Reset" {
		if b.role(who) != RoleAdministrator {
			forbidden(w)
			return
		}
		var body struct{ ResetType string }
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<14)).Decode(&body); err != nil {
			writeError(w, http.StatusBadRequest, "MalformedJSON", "The request body submitted was malformed JSON and could not be parsed by the receiving service.",
				"Ensure that the request body is valid JSON and resubmit the request.", nil)
			return
		}
		if err := b.src.Reset(body.ResetType); err != nil {
			writeError(w, http.StatusBadRequest, "ActionParameterValueNotInList", err.Error(), "Choose a value from the allowable values.", []string{body.ResetType, "ResetType", "ComputerSystem.Reset"})
			return
		}
		if boots(body.ResetType) {
			b.hostReset()
		}
		w.WriteHeader(http.StatusNoContent)
		return
	}
	notAllowed(w, r, "GET, HEAD")
}

// patch changes a node's power limit: {"SetPoint": W} and/or
// {"ControlMode": "..."}; an If-Match must match the control's ETag.
func (b *BMC) patch(w http.ResponseWriter, r *http.Request, uri string) {
	t, err := b.static()
	if err == nil && b.isLegacy() && t.system != "" && uri == t.chassis+"/Power" && b.src.Live().Limit != nil {
		if !b.writeFault(w) {
			b.patchLegacy(w, r, t)
		}
		return
	}
	if err != nil || b.isLegacy() || t.system == "" || uri != t.chassis+"/Controls/PowerLimit" || b.src.Live().Limit == nil {
		notAllowed(w, r, "GET, HEAD")
		return
	}
	if m := r.Header.Get("If-Match"); m != "" && m != "*" {
		if cur := limitETag(b.limitDoc(t.chassis, b.src.Live())); m != cur {
			writeError(w, http.StatusPreconditionFailed, "PreconditionFailed", "The ETag supplied did not match the ETag required to change this resource.",
				"Try the operation again using the appropriate ETag.", nil)
			return
		}
	}
	if b.writeFault(w) {
		return
	}
	var body map[string]json.RawMessage
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<14)).Decode(&body); err != nil {
		writeError(w, http.StatusBadRequest, "MalformedJSON", "The request body submitted was malformed JSON and could not be parsed by the receiving service.",
			"Ensure that the request body is valid JSON and resubmit the request.", nil)
		return
	}
	var sp *float64
	mode := ""
	for k, v := range body {
		switch k {
		case "SetPoint":
			var f float64
			if err := json.Unmarshal(v, &f); err != nil {
				writeError(w, http.StatusBadRequest, "PropertyValueTypeError", fmt.Sprintf("The value %s for the property SetPoint is of a different type than the property can accept.", v),
					"Correct the value for the property in the request body and resubmit the request if the operation failed.", []string{string(v), "SetPoint"})
				return
			}
			f = b.fromUnits(f, b.src.Live().Limit.Max)
			sp = &f
		case "ControlMode":
			if err := json.Unmarshal(v, &mode); err != nil || !validMode(mode) {
				writeError(w, http.StatusBadRequest, "PropertyValueNotInList", fmt.Sprintf("The value %s for the property ControlMode is not in the list of acceptable values.", v),
					"Choose a value from the enumeration list that the implementation can support and resubmit the request if the operation failed.", []string{string(v), "ControlMode"})
				return
			}
		default:
			writeError(w, http.StatusBadRequest, "PropertyNotWritable", fmt.Sprintf("The property %s is a read only property and cannot be assigned a value.", k),
				"Remove the property from the request body and resubmit the request if the operation failed.", []string{k})
			return
		}
	}
	if err := b.src.SetPowerLimit(sp, mode); err != nil {
		v := ""
		if sp != nil {
			v = fmt.Sprint(*sp)
		}
		writeError(w, http.StatusBadRequest, "PropertyValueNotInList", fmt.Sprintf("The value %s for the property SetPoint is not in the list of acceptable values: %v.", v, err),
			"Choose a value between AllowableMin and AllowableMax and resubmit the request.", []string{v, "SetPoint"})
		return
	}
	b.cfg.Log.Info("power limit set", "bmc", b.cfg.Name, "set_point_watts", sp, "mode", mode)
	doc := b.limitDoc(t.chassis, b.src.Live())
	w.Header().Set("ETag", limitETag(doc))
	writeJSON(w, http.StatusOK, doc)
}

func validMode(m string) bool {
	switch m {
	case "Automatic", "Override", "Manual", "Disabled":
		return true
	}
	return false
}
