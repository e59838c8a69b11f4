package bmc

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// The power cap's variants of real BMCs: a control in % or kW, the
// legacy Power resource, 503s for a while, a reset that drops the cap.

// limitDoc is the PowerLimit control in the BMC's units.
func (b *BMC) limitDoc(chassis string, l Live) map[string]any {
	doc := limitDoc(chassis, l)
	switch b.limitUnits() {
	case "", "W":
	case "%":
		doc["SetPointUnits"] = "%"
		doc["SetPoint"] = round2(l.Limit.SetPoint / l.Limit.Max * 100)
		doc["AllowableMin"] = round2(l.Limit.Min / l.Limit.Max * 100)
		doc["AllowableMax"] = 100.0
	case "kW":
		doc["SetPointUnits"] = "kW"
		doc["SetPoint"] = l.Limit.SetPoint / 1000
		doc["AllowableMin"] = l.Limit.Min / 1000
		doc["AllowableMax"] = l.Limit.Max / 1000
	default:
		doc["SetPointUnits"] = b.limitUnits()
	}
	return doc
}

// fromUnits is a PATCHed SetPoint in W.
func (b *BMC) fromUnits(v, maxW float64) float64 {
	switch b.limitUnits() {
	case "%":
		return v / 100 * maxW
	case "kW":
		return v * 1000
	}
	return v
}

// legacyPowerDoc is the deprecated Power resource of a node: one
// PowerControl with its PowerLimit, after DMTF's public-rackmount1
// mockup.
func legacyPowerDoc(chassis string, l Live) map[string]any {
	uri := chassis + "/Power"
	return map[string]any{"@odata.id": uri, "@odata.type": "#Power.v1_7_1.Power", "Id": "Power", "Name": "Power",
		"PowerControl": []any{map[string]any{"@odata.id": uri + "#/PowerControl/0", "MemberId": "0", "Name": "System Power Control",
			"PowerConsumedWatts": round2(l.PowerW), "PowerCapacityWatts": l.Limit.Max,
			"PowerLimit": map[string]any{"LimitInWatts": l.Limit.SetPoint, "LimitException": "LogEventOnly"},
			"Status":     map[string]any{"State": "Enabled", "Health": "OK"}}}}
}

// patchLegacy changes the limit through the Power resource:
// {"PowerControl": [{"PowerLimit": {"LimitInWatts": W}}]}.
func (b *BMC) patchLegacy(w http.ResponseWriter, r *http.Request, t *static) {
	var body struct {
		PowerControl []struct {
			PowerLimit *struct {
				LimitInWatts *float64
			}
		}
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<14))
	if err := dec.Decode(&body); err != nil || len(body.PowerControl) != 1 || body.PowerControl[0].PowerLimit == nil ||
		body.PowerControl[0].PowerLimit.LimitInWatts == nil {
		writeError(w, http.StatusBadRequest, "MalformedJSON", "The request body submitted was malformed JSON and could not be parsed by the receiving service.",
			`Send {"PowerControl": [{"PowerLimit": {"LimitInWatts": W}}]} and resubmit the request.`, nil)
		return
	}
	sp := *body.PowerControl[0].PowerLimit.LimitInWatts
	if err := b.src.SetPowerLimit(&sp, ""); err != nil {
		writeError(w, http.StatusBadRequest, "PropertyValueNotInList", fmt.Sprintf("The value %v for the property LimitInWatts is not in the list of acceptable values: %v.", sp, err),
			"Choose a value the power control supports and resubmit the request.", []string{fmt.Sprint(sp), "LimitInWatts"})
		return
	}
	b.cfg.Log.Info("power limit set (legacy Power)", "bmc", b.cfg.Name, "limit_watts", sp)
	writeJSON(w, http.StatusOK, legacyPowerDoc(t.chassis, b.src.Live()))
}

// writeFault answers a power limit PATCH as a fault makes it (true):
// refused, or the BMC resets under it.
func (b *BMC) writeFault(w http.ResponseWriter) bool {
	switch b.Fault() {
	case FaultReadOnly:
		writeError(w, http.StatusForbidden, "InsufficientPrivilege", "There are insufficient privileges for the account or credentials associated with the current session to perform the requested operation.",
			"Either abandon the operation or change the associated access rights and resubmit the request if the operation failed.", nil)
		return true
	case FaultResetOnWrite:
		_ = b.Reboot()
		if hj, ok := w.(http.Hijacker); ok {
			if c, _, err := hj.Hijack(); err == nil {
				_ = c.Close()
				return true
			}
		}
		panic(http.ErrAbortHandler)
	}
	return false
}

// SetBusyFor answers the next n requests 503 with Retry-After of
// retryAfter seconds, as a BMC busy with an update does.
func (b *BMC) SetBusyFor(n, retryAfter int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.busyFor, b.busyWait = n, retryAfter
}

// Reboot resets the BMC at once: its sessions end, its running update
// tasks are killed, firmware staged for its reset installs, and the
// node's power limit returns to its default (the allowable maximum,
// enforced), as a BMC reset or a firmware update leaves it.
func (b *BMC) Reboot() error {
	now := b.src.Now()
	b.mu.Lock()
	b.settle(now)
	b.rebootLocked(now, 0, b.fault == FaultForgetsTasks)
	b.mu.Unlock()
	return b.limitToDefault()
}

// limitToDefault returns the node's power limit to its default, as a
// BMC's reset does.
func (b *BMC) limitToDefault() error {
	l := b.src.Live().Limit
	if l == nil {
		return nil
	}
	top := l.Max
	b.cfg.Log.Info("BMC reset: the power limit is back to its default", "bmc", b.cfg.Name, "set_point_watts", top)
	return b.src.SetPowerLimit(&top, "Automatic")
}

// Reboots counts the resets so far.
func (b *BMC) Reboots() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.reboots
}

// SetLimitStyle changes how the BMC serves the power limit: the legacy
// Power resource only, and the control's units (see Config).
func (b *BMC) SetLimitStyle(legacy bool, units string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.legacy, b.units = legacy, units
}

func (b *BMC) isLegacy() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.legacy
}

func (b *BMC) limitUnits() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.units
}

// LimitStyleLegacy is whether the BMC serves only the legacy Power
// resource now.
func (b *BMC) LimitStyleLegacy() bool { return b.isLegacy() }

// LimitStyleUnits are the PowerLimit control's units now ("": W).
func (b *BMC) LimitStyleUnits() string { return b.limitUnits() }
