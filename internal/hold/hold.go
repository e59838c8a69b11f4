// Package hold is seam's one vocabulary of holds: who keeps a node out
// of the scheduler's pool (an owner, kind:name), on which nodes, why,
// since when and placed by whom; the reason a scheduler shows for a
// node under holds, the same in Slurm's reason, in Kubernetes' taints
// and in --owner; what a ledger knows of each node's scheduler state;
// and the storage a ledger is kept in (Backend: facilityd's state file,
// or the lifecycle store). internal/ledger applies it to a scheduler.
package hold

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Owner names who holds nodes out: kind:name.
type Owner string

// Owner kinds.
const (
	Facility    = "facility"    // facility:cooling_redundancy_lost:cooling_loop=l2, placed by facilityd for an alarm
	Burnin      = "burnin"      // burnin:seam-burnin-ma (a burn-in run), burnin:swap (a part swapped under RMA, until a new baseline)
	Maintenance = "maintenance" // maintenance:CHG-1234, maintenance:lifecycle (an element in state maintenance)
	RMA         = "rma"         // rma:CASE-77, rma:lifecycle (a part in state rma)
	Firmware    = "firmware"    // firmware:ROLLOUT-STAGE
	Person      = "person"      // person:alice
)

// Kinds lists the owner kinds.
var Kinds = []string{Facility, Burnin, Maintenance, RMA, Firmware, Person}

// Names the lifecycle store gives the holds its state machine places.
const (
	// StateName is the name of the maintenance and rma holds of an
	// element in that state: maintenance:lifecycle, rma:lifecycle.
	StateName = "lifecycle"
	// Swap is the burn-in hold of a node one of whose parts was
	// swapped under RMA: burnin:swap, released on a baseline taken
	// after the swap.
	Swap Owner = Burnin + ":swap"
)

// Parse checks an owner's form: kind:name, the kind one of Kinds, the
// name without spaces, commas or semicolons (it travels in scheduler
// reasons and lists).
func Parse(s string) (Owner, error) {
	kind, name, ok := strings.Cut(s, ":")
	if !ok || name == "" || !slices.Contains(Kinds, kind) {
		return "", fmt.Errorf("owner %q: want kind:name with kind one of %s (maintenance:CHG-1234, person:alice)", s, strings.Join(Kinds, ", "))
	}
	if strings.ContainsAny(name, " \t\n\r,;") {
		return "", fmt.Errorf("owner %q: no spaces, commas or semicolons in the name", s)
	}
	return Owner(s), nil
}

// Of is the owner of kind and name.
func Of(kind, name string) Owner { return Owner(kind + ":" + name) }

// Kind is the owner's kind.
func (o Owner) Kind() string { k, _, _ := strings.Cut(string(o), ":"); return k }

// Name is the owner's name, after its kind.
func (o Owner) Name() string { _, n, _ := strings.Cut(string(o), ":"); return n }

// Tag is how the owner appears in a node's reason: a facility hold
// with its domain's value only (the design brief's
// facility:cooling_redundancy_lost:l2), any other owner as it is.
func (o Owner) Tag() string {
	if o.Kind() != Facility {
		return string(o)
	}
	parts := strings.SplitN(string(o), ":", 3)
	if len(parts) == 3 {
		if _, v, ok := strings.Cut(parts[2], "="); ok {
			return parts[0] + ":" + parts[1] + ":" + v
		}
	}
	return string(o)
}

// Join writes owners as a list a person reads: "burnin:swap, rma:CASE-7".
func Join(owners []Owner) string {
	out := make([]string, len(owners))
	for i, o := range owners {
		out[i] = string(o)
	}
	return strings.Join(out, ", ")
}

// Reason is the reason string of a node under holds: their tags,
// facility holds first, within the scheduler's reason length; when they
// do not fit, the first ones and how many more.
func Reason(owners []Owner, limit int) string {
	tags := make([]string, len(owners))
	for i, o := range owners {
		tags[i] = o.Tag()
	}
	slices.SortFunc(tags, func(a, b string) int {
		fa, fb := strings.HasPrefix(a, Facility+":"), strings.HasPrefix(b, Facility+":")
		if fa != fb {
			if fa {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	tags = slices.Compact(tags)
	s := strings.Join(tags, " ")
	if len(s) <= limit {
		return s
	}
	for n := len(tags) - 1; n >= 1; n-- {
		s = strings.Join(tags[:n], " ") + fmt.Sprintf(" +%d more", len(tags)-n)
		if len(s) <= limit {
			return s
		}
	}
	cut := min(len(tags[0]), max(limit-6, 0))
	return tags[0][:cut] + " +more"
}

// Hold is one owner's hold on nodes.
type Hold struct {
	Owner Owner `json:"owner"`
	// Domain is the failure domain a facility hold is for
	// (cooling_loop=l2), "" for others.
	Domain string    `json:"domain,omitempty"`
	Nodes  []string  `json:"nodes"` // sorted, once each
	Why    string    `json:"why,omitempty"`
	Placed time.Time `json:"placed"`
	// By is who placed it: facilityd, an SSH principal (ssh:alice), a
	// database role (db:ops), the approving person, or lifecycle.
	By string `json:"by"`
	// Reservation, when set, is the scheduler reservation (Slurm) or
	// taint (Kubernetes) through which the owner keeps the nodes out
	// itself, because it runs its own work on them: a burn-in. A node
	// whose every hold is of a kind with such a hold on it is kept out
	// by the reservation and not drained (drained, the burn-in's jobs
	// could not run); any other hold drains it.
	Reservation string `json:"reservation,omitempty"`
}

// Holds reports whether h holds node.
func (h *Hold) Holds(node string) bool {
	_, ok := slices.BinarySearch(h.Nodes, node)
	return ok
}

// Record is what a ledger knows of one node's scheduler state: whether
// seam drained it, with which reason, or whose drain or undrain it
// leaves alone.
type Record struct {
	// Ours: seam drained the node (it was not drained before), with
	// Reason.
	Ours   bool      `json:"ours,omitempty"`
	Reason string    `json:"reason,omitempty"`
	Since  time.Time `json:"since,omitzero"`
	// External is the reason of a drain seam did not make: it is never
	// overwritten, and never undone.
	External string `json:"external,omitempty"`
	// Overridden: an operator undrained the node, or drained it with
	// their own reason, while these holds were on it. The ledger leaves
	// it alone until a hold not in the list comes.
	Overridden []Owner   `json:"overridden,omitempty"`
	OverrideAt time.Time `json:"override_at,omitzero"`
	Override   string    `json:"override,omitempty"`
}

// Empty reports whether the record says nothing worth keeping.
func (r *Record) Empty() bool {
	return r == nil || (!r.Ours && r.External == "" && len(r.Overridden) == 0)
}

// Drained is what the holds on one node ask of the scheduler: drained
// with a reason, or not drained (no hold; or each hold is of a kind
// whose owner keeps the node out through its own reservation).
func Drained(holds []Hold, limit int) (reason string, drain bool) {
	if len(holds) == 0 {
		return "", false
	}
	reserved := map[string]bool{}
	for _, h := range holds {
		if h.Reservation != "" {
			reserved[h.Owner.Kind()] = true
		}
	}
	owners := make([]Owner, 0, len(holds))
	for _, h := range holds {
		owners = append(owners, h.Owner)
		if !reserved[h.Owner.Kind()] {
			drain = true
		}
	}
	if !drain {
		return "", false
	}
	return Reason(owners, limit), true
}
