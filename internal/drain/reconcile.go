package drain

import (
	"context"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/seamdc/seam/internal/alarm"
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

// Reconcile re-reads the scheduler for every node facilityd holds or
// has drained, places the holds of active alarms that have none (after
// a crash, a suppression that ended, a scheduler that refused), and
// ends expired suppressions. Run it periodically.
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
	names := map[string]bool{}
	for n := range c.st.Nodes {
		names[n] = true
	}
	for _, h := range c.st.Holds {
		for _, n := range h.Nodes {
			names[n] = true
		}
	}
	c.apply(ctx, slices.Sorted(maps.Keys(names)))
}

// foreign reports nodes drained with a facility reason facilityd has no
// record of (a lost state file, another facilityd): they are left
// alone, and named so a person can return them.
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
	c.lock()
	defer c.unlock()
	var found []string
	for _, n := range all {
		ns := st.Nodes[n]
		if ns.Drained && strings.HasPrefix(ns.Reason, OwnerFacility+":") && c.st.Nodes[n] == nil {
			found = append(found, n)
		}
	}
	if len(found) > 0 {
		c.record(RecOverride, map[string]any{"what": "drained with a facility reason facilityd has no record of: left alone", "nodes": hostlist.Compress(found), "count": len(found)})
		c.log.Warn("nodes drained with a facility reason facilityd has no record of: left alone; return them with scontrol update state=undrain once checked",
			"nodes", hostlist.Compress(found))
	}
}

// Snapshot is facilityd's state, for status and the API.
type Snapshot struct {
	Site         string                 `json:"site"`
	At           time.Time              `json:"at"`
	DryRun       bool                   `json:"dry_run,omitempty"`
	AlarmPath    string                 `json:"alarm_path"`
	Holds        []*Hold                `json:"holds"`
	Nodes        map[string]*NodeRecord `json:"nodes"`
	Refused      []*Refusal             `json:"refused,omitempty"`
	Suppressions []Suppression          `json:"suppressions,omitempty"`
	Alarms       []alarm.Alarm          `json:"alarms"`
	Suppressed   map[Owner]string       `json:"suppressed,omitempty"`
}

// Snapshot copies the state.
func (c *Controller) Snapshot() Snapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := Snapshot{Site: c.st.Site, At: c.clk.Now(), DryRun: c.cfg.DryRun, Nodes: map[string]*NodeRecord{}, Alarms: c.stream.Snapshot(),
		Suppressions: slices.Clone(c.st.Suppressions), Suppressed: maps.Clone(c.suppressed)}
	switch {
	case c.cfg.AlarmPath == nil:
		s.AlarmPath = "not watched"
	case c.cfg.AlarmPath():
		s.AlarmPath = "alive"
	default:
		s.AlarmPath = "dead"
	}
	for _, o := range slices.Sorted(maps.Keys(c.st.Holds)) {
		h := *c.st.Holds[o]
		s.Holds = append(s.Holds, &h)
	}
	for n, r := range c.st.Nodes {
		rc := *r
		s.Nodes[n] = &rc
	}
	for _, o := range slices.Sorted(maps.Keys(c.st.Refused)) {
		r := *c.st.Refused[o]
		s.Refused = append(s.Refused, &r)
	}
	return s
}

// State returns a copy of the state's holds by node, for metrics.
func (c *Controller) HeldNodes() map[string][]Owner {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.st.holdsByNode()
}
