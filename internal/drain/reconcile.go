package drain

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/seamdc/seam/internal/alarm"
	"github.com/seamdc/seam/internal/hold"
	"github.com/seamdc/seam/internal/topology/hostlist"
)

// Start journals the start, puts the saved alarms back into the stream
// and reconciles with the scheduler: facilityd picks up where it
// stopped, and sees what operators did meanwhile.
func (c *Controller) Start(ctx context.Context, info map[string]any) {
	c.stream.Restore(c.st.Alarms)
	c.record(RecStart, info)
	c.Reconcile(ctx)
	c.foreign(ctx)
}

// Reconcile places the holds of active alarms that have none (after a
// crash, a suppression that ended, a scheduler that refused), ends
// expired suppressions, and has the ledger re-read the scheduler for
// every node it holds or has drained: drift is repaired, an operator's
// own action recorded. Run it periodically.
func (c *Controller) Reconcile(ctx context.Context) {
	c.lock()
	defer c.unlock()
	now := c.clk.Now()
	kept := c.st.Suppressions[:0]
	for _, s := range c.st.Suppressions {
		if now.Before(s.Until) {
			kept = append(kept, s)
			continue
		}
		c.record(RecSuppressed, map[string]any{"domain": s.Domain.String(), "ended": "expired", "until": s.Until})
	}
	c.st.Suppressions = kept
	for _, a := range c.stream.Snapshot() {
		if a.Active && c.ActionFor(a.Type) == Drain {
			c.placeFacility(ctx, a, "")
		}
	}
	if c.fenced == nil {
		_, err := c.ledger.Reconcile(ctx)
		c.ledgerErr(err)
	}
	c.save()
}

// foreign reports nodes drained with a facility reason that the ledger
// has no record of (a lost state file, another facilityd): they are
// left alone, and named so a person can return them.
func (c *Controller) foreign(ctx context.Context) {
	all := c.ix.Nodes(alarm.Domain{Kind: alarm.Site, Value: c.ix.Site()})
	if len(all) == 0 {
		return
	}
	st, err := c.sched.Status(ctx, all)
	if err != nil {
		c.log.Warn("the fleet's drains not read at start", "error", err)
		return
	}
	recs, err := c.ledger.Records(ctx, nil)
	if err != nil {
		c.log.Warn("the ledger's records not read at start", "error", err)
		return
	}
	c.lock()
	defer c.unlock()
	var found []string
	for _, n := range all {
		ns := st.Nodes[n]
		if ns.Drained && strings.HasPrefix(ns.Reason, hold.Facility+":") && recs[n] == nil {
			found = append(found, n)
		}
	}
	if len(found) > 0 {
		c.record(RecOverride, map[string]any{"what": "drained with a facility reason the ledger has no record of: left alone", "nodes": hostlist.Compress(found), "count": len(found)})
		c.log.Warn("nodes drained with a facility reason the ledger has no record of: left alone; return them with scontrol update state=undrain once checked",
			"nodes", hostlist.Compress(found))
	}
}

// Snapshot is facilityd's state, for status and the API.
type Snapshot struct {
	Site         string                  `json:"site"`
	At           time.Time               `json:"at"`
	DryRun       bool                    `json:"dry_run,omitempty"`
	AlarmPath    string                  `json:"alarm_path"`
	Holds        []*hold.Hold            `json:"holds"`
	Nodes        map[string]*hold.Record `json:"nodes"`
	Refused      []*Refusal              `json:"refused,omitempty"`
	Suppressions []Suppression           `json:"suppressions,omitempty"`
	Alarms       []alarm.Alarm           `json:"alarms"`
	Suppressed   map[Owner]string        `json:"suppressed,omitempty"`
	// Ledger says where the holds are kept, and Error why they could
	// not be read.
	Ledger string `json:"ledger,omitempty"`
	Error  string `json:"error,omitempty"`
}

// Snapshot copies the state, the ledger's holds and records with it.
func (c *Controller) Snapshot() Snapshot {
	ctx := context.Background()
	holds, herr := c.ledger.All(ctx)
	recs, rerr := c.ledger.Records(ctx, nil)
	c.mu.Lock()
	defer c.mu.Unlock()
	s := Snapshot{Site: c.st.Site, At: c.clk.Now(), DryRun: c.cfg.DryRun, Nodes: map[string]*hold.Record{}, Alarms: c.stream.Snapshot(),
		Suppressions: slices.Clone(c.st.Suppressions), Suppressed: maps.Clone(c.suppressed)}
	if err := errors.Join(herr, rerr); err != nil {
		s.Error = "the ledger could not be read: " + err.Error()
	}
	switch {
	case c.cfg.AlarmPath == nil:
		s.AlarmPath = "not watched"
	case c.cfg.AlarmPath():
		s.AlarmPath = "alive"
	default:
		s.AlarmPath = "dead"
	}
	for i := range holds {
		s.Holds = append(s.Holds, &holds[i])
	}
	if recs != nil {
		s.Nodes = recs
	}
	for _, o := range slices.Sorted(maps.Keys(c.st.Refused)) {
		r := *c.st.Refused[o]
		s.Refused = append(s.Refused, &r)
	}
	return s
}

// HeldNodes maps every held node to its owners, sorted, for metrics.
func (c *Controller) HeldNodes() map[string][]Owner {
	holds, err := c.ledger.All(context.Background())
	out := map[string][]Owner{}
	if err != nil {
		return out
	}
	for _, h := range holds { // by owner, sorted
		for _, n := range h.Nodes {
			out[n] = append(out[n], h.Owner)
		}
	}
	return out
}
