package drain

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/seamdc/seam/internal/alarm"
	"github.com/seamdc/seam/internal/hold"
	"github.com/seamdc/seam/internal/topology/hostlist"
)

// Result is what a request did.
type Result struct {
	Action string `json:"action"`
	Owner  Owner  `json:"owner,omitempty"`
	// Returned are the nodes given back to the scheduler.
	Returned []string `json:"returned,omitempty"`
	// Kept are nodes still held, by whom: facilityd never returns a
	// node another owner of the ledger still holds.
	Kept map[string][]Owner `json:"kept,omitempty"`
	// Left are nodes facilityd leaves as they are: an operator's own
	// drain, or an operator's undrain.
	Left    []string `json:"left,omitempty"`
	Drained int      `json:"drained,omitempty"`
	// DryRun: nothing was written; Returned are the nodes a run would
	// have returned.
	DryRun  bool   `json:"dry_run,omitempty"`
	Message string `json:"message"`
}

// RefusedError is a request facilityd refuses, and why.
type RefusedError struct{ Reasons []string }

func (e *RefusedError) Error() string { return "refused: " + strings.Join(e.Reasons, "; ") }

// Take carries out an approved request, recorded with who approved it.
func (c *Controller) Take(ctx context.Context, a Approval) (Result, error) {
	c.lock()
	defer c.unlock()
	now := c.clk.Now()
	if at, ok := c.st.Nonces[a.Nonce]; ok {
		return c.refuseRequest(a, fmt.Sprintf("request %s was taken already (issued %s): sign a new one", a.Nonce, at.Format(time.RFC3339)))
	}
	for n, at := range c.st.Nonces {
		if now.Sub(at) > 24*time.Hour {
			delete(c.st.Nonces, n)
		}
	}
	c.st.Nonces[a.Nonce] = a.Issued
	c.record(RecRequest, map[string]any{"action": a.Action, "owner": a.Owner, "domain": a.Domain, "nodes": a.Nodes, "until": a.Until,
		"why": a.Why, "by": a.By, "key": a.Key, "nonce": a.Nonce, "issued": a.Issued})
	var res Result
	var err error
	switch a.Action {
	case ActRelease:
		res, err = c.release(ctx, a)
	case ActHold:
		res, err = c.hold(ctx, a)
	case ActDrain:
		res, err = c.approveDrain(ctx, a)
	case ActSuppress:
		res, err = c.suppress(a)
	case ActUnsuppress:
		res, err = c.unsuppress(a)
	default:
		err = fmt.Errorf("unknown action %q", a.Action)
	}
	c.save()
	var re *RefusedError
	if errors.As(err, &re) {
		c.metrics.Refusal("request")
	}
	return res, err
}

func (c *Controller) refuseRequest(a Approval, reasons ...string) (Result, error) {
	c.record(RecRefused, map[string]any{"reason": "request", "action": a.Action, "owner": a.Owner, "by": a.By, "why": reasons})
	c.log.Warn("request refused", "action", a.Action, "owner", a.Owner, "by", a.By, "why", strings.Join(reasons, "; "))
	return Result{}, &RefusedError{reasons}
}

// releaseBlockers says why h may not be released now.
func (c *Controller) releaseBlockers(h *hold.Hold) []string {
	now := c.clk.Now()
	var why []string
	if c.cfg.AlarmPath != nil && !c.cfg.AlarmPath() {
		why = append(why, "the alarm path is dead (Alertmanager's Watchdog is not arriving): no release until it is heard again")
	}
	for _, a := range c.stream.Snapshot() {
		if a.Active && a.Type == alarm.AlarmPathDead {
			why = append(why, "alarm_path_dead is active: "+a.Detail)
		}
	}
	t, d, facility := FacilityOf(h.Owner)
	if !facility {
		return why
	}
	for _, a := range c.stream.Snapshot() {
		if a.Domain != d || !a.Active {
			continue
		}
		switch {
		case a.Type == alarm.DeviceSilent:
			why = append(why, fmt.Sprintf("a device of %s is silent, so its alarms are unknown: %s", d, a.Detail))
		case c.ActionFor(a.Type) == Drain:
			from := strings.Join(a.Sources, ", ")
			if a.SourcesMore > 0 {
				from += fmt.Sprintf(" and %d more alerts", a.SourcesMore)
			}
			why = append(why, fmt.Sprintf("%s is active for %s (since %s, from %s)", a.Type, d, latestRaise(a).UTC().Format(time.RFC3339), from))
		}
	}
	a, ok := c.stream.Get(t, d)
	if !ok || a.Active {
		return why
	}
	if recent := inWindow(a.Raises, now, c.cfg.Flap.Within); recent >= c.cfg.Flap.Raises {
		if clear := now.Sub(a.Cleared); clear < c.cfg.Flap.HoldDown {
			why = append(why, fmt.Sprintf("%s for %s is flapping (raised %d times within %s): it is held down until it has been clear for %s (clear for %s so far)",
				t, d, recent, c.cfg.Flap.Within, c.cfg.Flap.HoldDown, clear.Round(time.Second)))
			return why
		}
	}
	if clear := now.Sub(a.Cleared); clear < c.cfg.ClearFor {
		why = append(why, fmt.Sprintf("%s for %s cleared only %s ago: it must be clear for %s", t, d, clear.Round(time.Second), c.cfg.ClearFor))
	}
	return why
}

func inWindow(ts []time.Time, now time.Time, w time.Duration) int {
	n := 0
	for _, t := range ts {
		if now.Sub(t) <= w {
			n++
		}
	}
	return n
}

func (c *Controller) release(ctx context.Context, a Approval) (Result, error) {
	h, err := c.ledger.Hold(ctx, a.Owner)
	if err != nil {
		return Result{}, fmt.Errorf("the ledger could not be read: %w", err)
	}
	if h == nil {
		return c.refuseRequest(a, fmt.Sprintf("no hold of %s (holds: %s)", a.Owner, c.ownerList(ctx)))
	}
	if why := c.releaseBlockers(h); len(why) > 0 {
		return c.refuseRequest(a, why...)
	}
	if c.fenced != nil {
		return Result{}, c.fenced
	}
	lr, err := c.ledger.Release(ctx, a.Owner, nil, a.By, a.Why)
	c.ledgerErr(err)
	c.save()
	res := Result{Action: ActRelease, Owner: a.Owner, Returned: lr.Returned, Kept: lr.Kept, Left: lr.Left, DryRun: c.cfg.DryRun}
	verb := "released"
	if c.cfg.DryRun {
		verb = "would release"
	}
	res.Message = fmt.Sprintf("%s %s, approved by %s: %s", verb, a.Owner, a.By, lr.Describe())
	if err != nil {
		res.Message += "; " + err.Error()
	}
	return res, nil
}

func (c *Controller) ownerList(ctx context.Context) string {
	holds, err := c.ledger.All(ctx)
	if err != nil {
		return "unknown: " + err.Error()
	}
	var out []string
	for _, h := range holds {
		out = append(out, string(h.Owner))
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

func (c *Controller) hold(ctx context.Context, a Approval) (Result, error) {
	if h, err := c.ledger.Hold(ctx, a.Owner); err != nil {
		return Result{}, fmt.Errorf("the ledger could not be read: %w", err)
	} else if h != nil {
		return c.refuseRequest(a, fmt.Sprintf("%s holds nodes already: release it first, or use another owner name", a.Owner))
	}
	var nodes []string
	var d alarm.Domain
	if a.Domain != "" {
		var err error
		if d, err = c.ix.Resolve(a.Domain); err != nil {
			return c.refuseRequest(a, err.Error())
		}
		nodes = slices.Clone(c.ix.Nodes(d))
	} else {
		var err error
		if nodes, err = hostlist.Expand(a.Nodes); err != nil {
			return c.refuseRequest(a, fmt.Sprintf("nodes %q: %v", a.Nodes, err))
		}
		slices.Sort(nodes)
		nodes = slices.Compact(nodes)
	}
	if len(nodes) == 0 {
		return c.refuseRequest(a, "the hold would hold no nodes")
	}
	domain := ""
	if !d.IsZero() {
		domain = d.String()
	}
	lr, err := c.addHold(ctx, hold.Hold{Owner: a.Owner, Domain: domain, Nodes: nodes, Why: a.Why, Placed: c.clk.Now(), By: a.By})
	res := Result{Action: ActHold, Owner: a.Owner, Drained: len(lr.Drained), DryRun: c.cfg.DryRun,
		Message: fmt.Sprintf("%s holds %d node(s), placed by %s: %d drained", a.Owner, len(nodes), a.By, len(lr.Drained))}
	if err != nil {
		res.Message += "; " + err.Error()
	}
	return res, nil
}

func (c *Controller) approveDrain(ctx context.Context, a Approval) (Result, error) {
	r := c.st.Refused[a.Owner]
	if r == nil {
		return c.refuseRequest(a, fmt.Sprintf("no refused drain of %s", a.Owner))
	}
	t, d, _ := FacilityOf(a.Owner)
	al, ok := c.stream.Get(t, d)
	if !ok || !al.Active {
		delete(c.st.Refused, a.Owner)
		return c.refuseRequest(a, fmt.Sprintf("%s is no longer active: nothing to drain", a.Owner))
	}
	delete(c.st.Refused, a.Owner)
	c.placeFacility(ctx, al, a.By)
	c.emit = append(c.emit, alarm.Observation{Type: alarm.DrainRefused, Domain: d, Active: false, Kind: alarm.FromFacilityd, Source: "storm:" + string(a.Owner),
		At: c.clk.Now(), Detail: "approved by " + a.By})
	return Result{Action: ActDrain, Owner: a.Owner, Drained: len(r.Nodes), Message: fmt.Sprintf("drain of %s approved by %s: %d node(s)", a.Owner, a.By, len(r.Nodes))}, nil
}

func (c *Controller) suppress(a Approval) (Result, error) {
	d, err := c.ix.Resolve(a.Domain)
	if err != nil {
		return c.refuseRequest(a, err.Error())
	}
	c.st.Suppressions = append(c.st.Suppressions, Suppression{Domain: d, Until: a.Until, Why: a.Why, By: a.By})
	c.record(RecSuppressed, map[string]any{"domain": d.String(), "until": a.Until, "why": a.Why, "by": a.By})
	return Result{Action: ActSuppress, Message: fmt.Sprintf("drains for %s suppressed until %s by %s", d, a.Until.UTC().Format(time.RFC3339), a.By)}, nil
}

func (c *Controller) unsuppress(a Approval) (Result, error) {
	d, err := c.ix.Resolve(a.Domain)
	if err != nil {
		return c.refuseRequest(a, err.Error())
	}
	kept := c.st.Suppressions[:0]
	n := 0
	for _, s := range c.st.Suppressions {
		if s.Domain == d {
			n++
			continue
		}
		kept = append(kept, s)
	}
	c.st.Suppressions = kept
	if n == 0 {
		return c.refuseRequest(a, fmt.Sprintf("no suppression of %s", d))
	}
	c.record(RecSuppressed, map[string]any{"domain": d.String(), "ended_by": a.By})
	return Result{Action: ActUnsuppress, Message: fmt.Sprintf("%d suppression(s) of %s ended by %s", n, d, a.By)}, nil
}
