package discover

import (
	"strconv"
	"strings"
	"time"
)

// ReconcileEventType names the event.
const ReconcileEventType = "inventory.reconcile"

// ReconcileEvent is what a discovery tells the lifecycle store. Its JSON
// is the lifecycle store's reconcile report (internal/lifecycle's
// Reconcile, which RecordReconcile records: source, at, scope, checked,
// findings of element, kind, field, declared, discovered, detail), so
// that `sat discover --event FILE` writes a document the store reads as
// it is; the fields after Findings are seam's own, which the store
// ignores: the site, the BMCs walked and the errors that left some
// unseen. Kinds map to the store's: missing, unexpected, serial,
// firmware, other (a tray in another slot or rack: field location).
type ReconcileEvent struct {
	Source   string             `json:"source"` // "sat discover 0.2.0"
	At       time.Time          `json:"at"`
	Scope    []string           `json:"scope,omitempty"` // the racks, when not the whole site
	Checked  int                `json:"checked"`         // declared trays compared
	Findings []ReconcileFinding `json:"findings"`
	Type     string             `json:"type"` // ReconcileEventType
	Site     string             `json:"site"`
	BMCs     int                `json:"bmcs"`
	Answered int                `json:"answered"`
	Errors   []*Error           `json:"errors"`
}

// ReconcileFinding is one finding as the lifecycle store keeps it.
type ReconcileFinding struct {
	Element    string `json:"element"` // a key of the store
	Kind       string `json:"kind"`
	Field      string `json:"field,omitempty"`
	Declared   string `json:"declared,omitempty"`
	Discovered string `json:"discovered,omitempty"`
	Detail     string `json:"detail,omitempty"`
}

// The lifecycle store's finding kinds.
const (
	storeMissing    = "missing"
	storeUnexpected = "unexpected"
	storeSerial     = "serial"
	storeFirmware   = "firmware"
	storeOther      = "other"
)

// Event is the report as a reconcile event, from source (the tool and
// its version), for the racks of scope (none: the site).
func (r *Report) Event(at time.Time, source string, scope ...string) ReconcileEvent {
	ev := ReconcileEvent{Source: source, At: at.UTC(), Scope: scope, Checked: r.Declared, Findings: []ReconcileFinding{},
		Type: ReconcileEventType, Site: r.Site, BMCs: r.BMCs, Answered: r.Answered, Errors: r.Errors}
	for _, f := range r.Findings {
		ev.Findings = append(ev.Findings, storeFinding(f))
	}
	return ev
}

func storeFinding(f Finding) ReconcileFinding {
	out := ReconcileFinding{Element: f.Element, Declared: f.Declared, Discovered: f.Found, Detail: f.Message}
	switch f.Kind {
	case MissingTray, PSUAbsent:
		out.Kind = storeMissing
	case ChangedSerial:
		out.Kind, out.Field = storeSerial, "serial"
	case FirmwareDrift:
		out.Kind, out.Field = storeFirmware, "firmware."+f.Field
	case WrongSlot, WrongRack:
		out.Kind, out.Field = storeOther, "location"
	case ExtraTray:
		// where it was found: the rack, the slot in the field
		rack, slot, _ := strings.Cut(f.Element, " U")
		out.Kind, out.Element, out.Field = storeUnexpected, rack, "slot "+slot
	case ExtraPSU:
		i := strings.LastIndex(f.Element, "/psu-")
		bay, _ := strconv.Atoi(f.Element[i+len("/psu-"):])
		out.Kind, out.Element, out.Field = storeUnexpected, f.Element[:i], "bay "+strconv.Itoa(bay)
	default:
		out.Kind = storeOther
	}
	return out
}
