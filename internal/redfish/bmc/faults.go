package bmc

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
)

// Faults: how a broken BMC misbehaves.
const (
	FaultUnauthorized = "unauthorized"   // 401 to every request, as after a password change
	FaultNotFound     = "not_found"      // its chassis is listed but answers 404
	FaultGarbage      = "garbage"        // 200 with bodies that are not JSON
	FaultRedirectLoop = "redirect_loop"  // every request is redirected to itself
	FaultTimeout      = "timeout"        // requests get no answer until the fault clears
	FaultBusy         = "busy"           // 503 with Retry-After to every request
	FaultContainsLoop = "contains_loop"  // its chassis contains a chassis that contains it
	FaultReadOnly     = "read_only"      // a PATCH of the power limit is refused (403)
	FaultResetOnWrite = "reset_on_write" // a PATCH of the power limit resets the BMC: no answer, the cap not applied
	// FaultPasswordRefused refuses every password change or account
	// creation with 400 and a policy message (a password used
	// recently).
	FaultPasswordRefused = "password_refused"
	// FaultResetOnPassword applies a password PATCH, then resets the
	// BMC without answering (the connection drops; sessions end).
	FaultResetOnPassword = "reset_on_password"
)

// Firmware update faults (update.go, tasks.go): an update's fate is the
// fault in force when the BMC accepted it; a reset's, the fault in
// force when it began (for the reboot a BMC update ends with, when the
// update was accepted).
const (
	// FaultUpdateFails fails an update half-way: its task ends in
	// Exception at 50 % with ApplyFailed; the component keeps its
	// firmware.
	FaultUpdateFails = "update_fails"
	// FaultSlowReset makes a reset take Config.SlowResetDuration
	// (minutes) instead of Config.ResetDuration.
	FaultSlowReset = "slow_reset"
	// FaultVersionUnchanged completes an update (Completed,
	// UpdateSuccessful) without changing the version.
	FaultVersionUnchanged = "version_unchanged"
	// FaultStuckTask leaves an update's task Running at 40 % for ever
	// (until cancelled or the BMC resets).
	FaultStuckTask = "stuck_task"
	// FaultImageRefused refuses every image: 400 VerificationFailed.
	FaultImageRefused = "image_refused"
	// FaultForgetsTasks makes the BMC forget its tasks across its own
	// reboot: their task monitors answer 404 once it is back.
	FaultForgetsTasks = "forgets_tasks"
)

// Faults lists the faults.
var Faults = []string{FaultUnauthorized, FaultNotFound, FaultGarbage, FaultRedirectLoop, FaultTimeout, FaultBusy, FaultContainsLoop, FaultReadOnly, FaultResetOnWrite,
	FaultPasswordRefused, FaultResetOnPassword,
	FaultUpdateFails, FaultSlowReset, FaultVersionUnchanged, FaultStuckTask, FaultImageRefused, FaultForgetsTasks}

// SetFault puts a fault in force (on) or clears it; one at a time.
func (b *BMC) SetFault(kind string, on bool) error {
	if !slices.Contains(Faults, kind) {
		return fmt.Errorf("BMC %s: unknown fault %q (faults: %s)", b.cfg.Name, kind, strings.Join(Faults, ", "))
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if on {
		b.fault = kind
		return nil
	}
	if b.fault == kind {
		b.fault = ""
		if kind == FaultTimeout {
			close(b.release)
			b.release = make(chan struct{})
		}
	}
	return nil
}

// Fault is the fault in force, or "".
func (b *BMC) Fault() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.fault
}

// faulty answers a request as the fault in force makes it (true), or
// leaves it to the BMC.
func (b *BMC) faulty(w http.ResponseWriter, r *http.Request, fault string, release chan struct{}) bool {
	switch fault {
	case FaultUnauthorized:
		b.mu.Lock()
		b.stats.Unauthorized++
		b.mu.Unlock()
		unauthorized(w, "ResourceAtUriUnauthorized", fmt.Sprintf("While accessing the resource at %s, the service received an authorization error unauthorized.", r.URL.Path),
			"Ensure that the appropriate access is provided for the service in order for it to access the URI.", []string{r.URL.Path, "unauthorized"})
	case FaultGarbage:
		w.Header().Set("Content-Type", "application/json;charset=utf-8")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte("{\"@odata.id\": \"" + r.URL.Path + "\", \"Members\": [ {\"@odata.id\": \x00\x13garbage"))
	case FaultRedirectLoop:
		http.Redirect(w, r, r.URL.Path, http.StatusFound)
	case FaultTimeout:
		select {
		case <-release:
		case <-r.Context().Done():
			return true
		}
		return false
	case FaultBusy:
		b.mu.Lock()
		b.stats.Busy++
		b.mu.Unlock()
		busy(w, 1)
	default:
		return false
	}
	return true
}

// faultDoc is the chassis document as a fault leaves it.
func (b *BMC) faultDoc(t *static, doc map[string]any) map[string]any {
	switch b.Fault() {
	case FaultNotFound:
		return nil
	case FaultContainsLoop:
		links := maps.Clone(asMap(doc["Links"]))
		if links == nil {
			links = map[string]any{}
		}
		links["Contains"] = []any{ref(t.chassis + "-enclosure")}
		doc["Links"] = links
	}
	return doc
}
