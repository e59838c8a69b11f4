// Package drain is facilityd's policy: holds with owners over the
// scheduler's one drain flag, the storm guard, flap damping, approved
// releases, suppression by maintenance and running plans, checkpoint
// signals for jobs that opt in, state that survives a restart and is
// reconciled with the scheduler, and a hash-chained journal of every
// action.
//
// Slurm has one DRAIN flag and one reason per node, and several parties
// want a node out. facilityd keeps a hold per owner — a facility alarm
// per domain, burn-in admission, maintenance, an RMA, a person — and a
// node returns only when every hold on it is released. facilityd drains
// only nodes that are not drained, and returns only nodes it drained
// whose reason is still its own: an operator's drain stays, and an
// operator's undrain is respected (the hold stays, the node is not
// drained again until a new hold comes).
package drain

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/seamdc/seam/internal/alarm"
)

// Owner names who holds nodes out: kind:name.
type Owner string

// Owner kinds.
const (
	OwnerFacility    = "facility"    // facility:cooling_redundancy_lost:cooling_loop=l2, placed by facilityd
	OwnerBurnin      = "burnin"      // burnin:<admission>
	OwnerMaintenance = "maintenance" // maintenance:<ticket>
	OwnerRMA         = "rma"         // rma:<case>
	OwnerPerson      = "person"      // person:<name>
)

// OwnerKinds lists the owner kinds.
var OwnerKinds = []string{OwnerFacility, OwnerBurnin, OwnerMaintenance, OwnerRMA, OwnerPerson}

// FacilityOwner is the owner of the hold an alarm places.
func FacilityOwner(t alarm.Type, d alarm.Domain) Owner {
	return Owner(OwnerFacility + ":" + string(t) + ":" + d.String())
}

// ParseOwner checks an owner's form.
func ParseOwner(s string) (Owner, error) {
	kind, name, ok := strings.Cut(s, ":")
	if !ok || name == "" || !slices.Contains(OwnerKinds, kind) {
		return "", fmt.Errorf("owner %q: want kind:name with kind one of %s (maintenance:CHG-1234, person:alice)", s, strings.Join(OwnerKinds, ", "))
	}
	if strings.ContainsAny(name, " \t\n,;") {
		return "", fmt.Errorf("owner %q: no spaces, commas or semicolons", s)
	}
	return Owner(s), nil
}

// Kind is the owner's kind.
func (o Owner) Kind() string { k, _, _ := strings.Cut(string(o), ":"); return k }

// Facility splits a facility owner into its alarm and domain.
func (o Owner) Facility() (alarm.Type, alarm.Domain, bool) {
	parts := strings.SplitN(string(o), ":", 3)
	if len(parts) != 3 || parts[0] != OwnerFacility {
		return "", alarm.Domain{}, false
	}
	d, err := alarm.ParseDomain(parts[2])
	if err != nil {
		return "", alarm.Domain{}, false
	}
	return alarm.Type(parts[1]), d, true
}

// Tag is how the owner appears in a node's reason: the design brief's
// facility:cooling_redundancy_lost:l2 for a facility hold (the domain's
// value only), the owner itself for the others.
func (o Owner) Tag() string {
	if t, d, ok := o.Facility(); ok {
		return OwnerFacility + ":" + string(t) + ":" + d.Value
	}
	return string(o)
}

// Hold is one owner's hold on nodes.
type Hold struct {
	Owner  Owner        `json:"owner"`
	Domain alarm.Domain `json:"domain,omitzero"`
	Nodes  []string     `json:"nodes"` // sorted
	Why    string       `json:"why,omitempty"`
	Placed time.Time    `json:"placed"`
	By     string       `json:"by"` // facilityd, or the approving person
}

// Reason is the reason string for a node under holds: their tags,
// facility holds first, within the scheduler's reason length; when they
// do not fit, the first ones and how many more.
func Reason(holds []Owner, limit int) string {
	tags := make([]string, len(holds))
	for i, o := range holds {
		tags[i] = o.Tag()
	}
	slices.SortFunc(tags, func(a, b string) int {
		fa, fb := strings.HasPrefix(a, OwnerFacility+":"), strings.HasPrefix(b, OwnerFacility+":")
		if fa != fb {
			if fa {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
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
