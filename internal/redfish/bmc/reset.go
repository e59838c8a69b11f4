package bmc

// The BMC's own reset (Manager.Reset) and the host's: what firmware
// waiting for a reset needs to install.

import (
	"cmp"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"net/http"
)

// managerReset is Manager.Reset (ForceRestart or GracefulRestart, the
// default): the BMC answers, then reboots for its reset duration,
// answering nothing; what waits for its reset installs when it is
// back. An Administrator's only.
func (b *BMC) managerReset(w http.ResponseWriter, r *http.Request, who caller) {
	if b.role(who) != RoleAdministrator {
		forbidden(w)
		return
	}
	var body struct{ ResetType string }
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<14)).Decode(&body); err != nil && !errors.Is(err, io.EOF) {
		malformed(w)
		return
	}
	switch body.ResetType {
	case "", "ForceRestart", "GracefulRestart":
	default:
		writeMsg(w, http.StatusBadRequest, withResolution(regMsg("Base.1.5.0.PropertyValueNotInList", body.ResetType, "ResetType"),
			"Choose ForceRestart or GracefulRestart."))
		return
	}
	now := b.src.Now()
	b.mu.Lock()
	d := b.resetDuration(b.fault)
	b.rebootLocked(now, d, b.fault == FaultForgetsTasks)
	b.mu.Unlock()
	b.cfg.Log.Info("BMC reset", "bmc", b.cfg.Name, "reset_type", cmp.Or(body.ResetType, "GracefulRestart"), "duration_seconds", d.Seconds())
	if err := b.limitToDefault(); err != nil {
		b.cfg.Log.Warn("BMC reset: the power limit", "bmc", b.cfg.Name, "error", err.Error())
	}
	w.WriteHeader(http.StatusNoContent)
}

// boots reports whether a ComputerSystem.Reset boots the host (what is
// staged for its next boot installs).
func boots(resetType string) bool {
	switch resetType {
	case "On", "ForceOn", "ForceRestart", "GracefulRestart", "PowerCycle":
		return true
	}
	return false
}

// hostReset begins the system's reset: what is staged for its boot
// installs when the reset ends, its reset duration from now.
func (b *BMC) hostReset() {
	now := b.src.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	maps.Copy(b.fw.booting, b.fw.onHost)
	b.fw.onHost = map[string]string{}
	b.fw.hostDone = now.Add(b.resetDuration(b.fault))
}
