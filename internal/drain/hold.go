// Package drain is facilityd's policy: facility alarms turned into holds
// in the one ledger of holds (internal/ledger), the storm guard, flap
// damping, approved releases, suppression by maintenance and running
// plans, checkpoint signals for jobs that opt in, state that survives a
// restart and is reconciled with the scheduler, and a hash-chained
// journal of every action.
//
// Slurm has one DRAIN flag and one reason per node, and several parties
// want a node out. The ledger keeps a hold per owner — a facility alarm
// per domain, burn-in, maintenance, an RMA, a firmware rollout, a
// person — and a node returns only when every hold on it is released.
// facilityd places and releases the facility holds, and the holds
// people ask for through signed requests; where a lifecycle store is the
// ledger, the holds of sat burnin and sat lifecycle are in the same
// ledger, and facilityd never returns a node one of them still holds.
package drain

import (
	"strings"

	"github.com/seamdc/seam/internal/alarm"
	"github.com/seamdc/seam/internal/hold"
)

// Owner names who holds nodes out: kind:name (hold.Owner).
type Owner = hold.Owner

// FacilityOwner is the owner of the hold an alarm places.
func FacilityOwner(t alarm.Type, d alarm.Domain) Owner {
	return hold.Of(hold.Facility, string(t)+":"+d.String())
}

// FacilityOf splits a facility owner into its alarm and domain.
func FacilityOf(o Owner) (alarm.Type, alarm.Domain, bool) {
	parts := strings.SplitN(string(o), ":", 3)
	if len(parts) != 3 || parts[0] != hold.Facility {
		return "", alarm.Domain{}, false
	}
	d, err := alarm.ParseDomain(parts[2])
	if err != nil {
		return "", alarm.Domain{}, false
	}
	return alarm.Type(parts[1]), d, true
}
