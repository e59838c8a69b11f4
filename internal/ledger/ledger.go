// Package ledger is seam's one ledger of holds. Every hold — a
// facility alarm's, a burn-in's, maintenance, an RMA, a firmware
// rollout, a person's — is placed and released through it, and in the
// same call the ledger brings the nodes' scheduler state in line with
// their holds through the one scheduler client: a node is in the pool
// only when no owner holds it. It drains only nodes that are not
// drained, and returns only nodes it drained whose reason is still its
// own: an operator's drain stays, and an operator's undrain is
// respected (the hold stays; the node is not drained again until a new
// hold comes). The holds live in a hold.Backend: the lifecycle store
// where one is configured (every writer shares it), else facilityd's
// state.
package ledger

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/seamdc/seam/internal/clock"
	"github.com/seamdc/seam/internal/hold"
	"github.com/seamdc/seam/internal/scheduler"
	"github.com/seamdc/seam/internal/topology/hostlist"
)

// Journal records what the ledger does (facilityd's hash-chained
// journal); nil records nothing.
type Journal func(kind string, data any)

// Journal record kinds.
const (
	RecHold     = "hold"     // a hold placed
	RecRelease  = "release"  // a hold released
	RecDrain    = "drain"    // nodes drained
	RecUndrain  = "undrain"  // nodes returned
	RecOverride = "override" // an operator's own action seen
	RecError    = "error"    // the scheduler refused or timed out
)

// Metrics counts what the ledger does.
type Metrics interface {
	Action(kind string, nodes int) // hold, release, drain, undrain
	Error(op string)               // the scheduler refused or timed out
}

type noMetrics struct{}

func (noMetrics) Action(string, int) {}
func (noMetrics) Error(string)       {}

// Ledger applies holds to a scheduler.
type Ledger struct {
	Backend hold.Backend
	// Sched is the one scheduler client; in a dry run, its recording
	// twin (it reads the scheduler and records every write). nil: no
	// scheduler in this call; the holds are kept, and whoever reconciles
	// the ledger with the scheduler (facilityd) applies them.
	Sched scheduler.Drainer
	Clock clock.Clock
	Log   *slog.Logger
	// Journal and Metrics may be nil.
	Journal Journal
	Metrics Metrics
	// Epoch and Leader fence every session: a ledger written by a newer
	// epoch refuses this one (facilityd's leader on Kubernetes; 0: not
	// fenced).
	Epoch  int64
	Leader string
	// DryRun words the log as what would be done; the writes are the
	// recording twins' business.
	DryRun bool
}

// Result is what a place, release or apply did.
type Result struct {
	Owner hold.Owner `json:"owner,omitempty"`
	// Changed are the nodes the owner's hold took or gave up.
	Changed []string `json:"changed,omitempty"`
	// Drained and Returned are the nodes taken out of the pool, and
	// given back to it; Reasons the nodes seam had drained whose reason
	// it rewrote (an owner more or less).
	Drained  []string `json:"drained,omitempty"`
	Returned []string `json:"returned,omitempty"`
	Reasons  []string `json:"reasons,omitempty"`
	// Kept are nodes of a release still held, by whom.
	Kept map[string][]hold.Owner `json:"kept,omitempty"`
	// Left are nodes the ledger leaves as an operator set them: an
	// operator's own drain, or an operator's undrain.
	Left []string `json:"left,omitempty"`
	// Failed are nodes whose scheduler state could not be brought in
	// line (the error says why); the next apply tries again.
	Failed []string `json:"failed,omitempty"`
}

func (l *Ledger) clk() clock.Clock {
	if l.Clock == nil {
		return clock.Real{}
	}
	return l.Clock
}

func (l *Ledger) log() *slog.Logger {
	if l.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	if l.DryRun {
		return l.Log.With("dry_run", true)
	}
	return l.Log
}

func (l *Ledger) metrics() Metrics {
	if l.Metrics == nil {
		return noMetrics{}
	}
	return l.Metrics
}

func (l *Ledger) record(kind string, data any) {
	if l.Journal != nil {
		l.Journal(kind, data)
	}
}

// begin starts a fenced session.
func (l *Ledger) begin(ctx context.Context) (hold.Session, error) {
	s, err := l.Backend.Begin(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.Fence(ctx, l.Epoch, l.Leader); err != nil {
		s.Rollback()
		return nil, err
	}
	return s, nil
}

// Place adds nodes to h.Owner's hold and applies their scheduler state
// in the same call: every node it newly holds that nothing else held is
// drained (unless the hold is kept by its own reservation).
func (l *Ledger) Place(ctx context.Context, h hold.Hold) (Result, error) {
	if _, err := hold.Parse(string(h.Owner)); err != nil {
		return Result{}, err
	}
	if h.By == "" {
		return Result{}, fmt.Errorf("hold %s: who places it is needed", h.Owner)
	}
	h.Nodes = sortedSet(h.Nodes)
	if len(h.Nodes) == 0 {
		return Result{}, fmt.Errorf("hold %s would hold no nodes", h.Owner)
	}
	if h.Placed.IsZero() {
		h.Placed = l.clk().Now()
	}
	s, err := l.begin(ctx)
	if err != nil {
		return Result{}, err
	}
	defer s.Rollback()
	added, err := s.Place(ctx, h)
	if err != nil {
		return Result{}, fmt.Errorf("hold %s: %w", h.Owner, err)
	}
	res := Result{Owner: h.Owner, Changed: added}
	if len(added) > 0 {
		l.record(RecHold, map[string]any{"owner": h.Owner, "domain": h.Domain, "nodes": hostlist.Compress(added), "count": len(added), "by": h.By,
			"why": h.Why, "reservation": h.Reservation})
		l.metrics().Action("hold", len(added))
		l.log().Info(l.verb("held", "would hold"), "owner", h.Owner, "nodes", hostlist.Compress(added), "count", len(added), "by", h.By)
	}
	applied, err := l.apply(ctx, s, h.Nodes)
	res.merge(applied)
	if cerr := s.Commit(); cerr != nil {
		return res, fmt.Errorf("hold %s: %w", h.Owner, cerr)
	}
	return res, err
}

// Release removes nodes (nil: every node) from owner's hold and
// applies their scheduler state in the same call: a node returns to the
// pool only when no other owner holds it (Kept names who does) and seam
// drained it (Left: an operator's drain stays).
func (l *Ledger) Release(ctx context.Context, owner hold.Owner, nodes []string, by, why string) (Result, error) {
	s, err := l.begin(ctx)
	if err != nil {
		return Result{}, err
	}
	defer s.Rollback()
	if nodes != nil {
		nodes = sortedSet(nodes)
	}
	removed, err := s.Release(ctx, owner, nodes, by, why)
	if err != nil {
		return Result{}, fmt.Errorf("release %s: %w", owner, err)
	}
	res := Result{Owner: owner, Changed: removed}
	if len(removed) > 0 {
		l.record(RecRelease, map[string]any{"owner": owner, "nodes": hostlist.Compress(removed), "count": len(removed), "by": by, "why": why})
		l.metrics().Action("release", len(removed))
		l.log().Info(l.verb("released", "would release"), "owner", owner, "nodes", hostlist.Compress(removed), "count", len(removed), "by", by)
	}
	applied, err := l.apply(ctx, s, removed)
	res.merge(applied)
	if len(removed) > 0 {
		on, oerr := s.On(ctx, removed)
		if oerr != nil {
			return res, oerr
		}
		res.Kept = map[string][]hold.Owner{}
		for _, n := range removed {
			if slices.Contains(res.Returned, n) {
				continue
			}
			if hs := on[n]; len(hs) > 0 {
				res.Kept[n] = owners(hs)
			} else if !slices.Contains(res.Failed, n) {
				res.Left = append(res.Left, n)
			}
		}
	}
	if cerr := s.Commit(); cerr != nil {
		return res, fmt.Errorf("release %s: %w", owner, cerr)
	}
	return res, err
}

// Apply brings nodes' scheduler state in line with their holds.
func (l *Ledger) Apply(ctx context.Context, nodes []string) (Result, error) {
	s, err := l.begin(ctx)
	if err != nil {
		return Result{}, err
	}
	defer s.Rollback()
	res, err := l.apply(ctx, s, sortedSet(nodes))
	if cerr := s.Commit(); cerr != nil {
		return res, cerr
	}
	return res, err
}

// Reconcile applies the scheduler state of every node the ledger holds
// or has a record of: drift (a drain lost, a reason changed, a node
// returned by hand) is repaired or recorded.
func (l *Ledger) Reconcile(ctx context.Context) (Result, error) {
	s, err := l.begin(ctx)
	if err != nil {
		return Result{}, err
	}
	defer s.Rollback()
	all, err := s.All(ctx)
	if err != nil {
		return Result{}, err
	}
	recs, err := s.Records(ctx, nil)
	if err != nil {
		return Result{}, err
	}
	var nodes []string
	for _, h := range all {
		nodes = append(nodes, h.Nodes...)
	}
	for n := range recs {
		nodes = append(nodes, n)
	}
	res, err := l.apply(ctx, s, sortedSet(nodes))
	if cerr := s.Commit(); cerr != nil {
		return res, cerr
	}
	return res, err
}

// Hold is owner's hold, nil when it holds nothing.
func (l *Ledger) Hold(ctx context.Context, owner hold.Owner) (*hold.Hold, error) {
	s, err := l.Backend.Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer s.Rollback()
	return s.Hold(ctx, owner)
}

// On lists the holds on each of nodes that any holds.
func (l *Ledger) On(ctx context.Context, nodes []string) (map[string][]hold.Hold, error) {
	s, err := l.Backend.Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer s.Rollback()
	return s.On(ctx, nodes)
}

// All lists every hold, by owner.
func (l *Ledger) All(ctx context.Context) ([]hold.Hold, error) {
	s, err := l.Backend.Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer s.Rollback()
	return s.All(ctx)
}

// Records reads what the ledger knows of nodes' scheduler state (nil:
// every node it has a record of).
func (l *Ledger) Records(ctx context.Context, nodes []string) (map[string]*hold.Record, error) {
	s, err := l.Backend.Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer s.Rollback()
	return s.Records(ctx, nodes)
}

func (l *Ledger) verb(done, dry string) string {
	if l.DryRun {
		return dry
	}
	return done
}

func (r *Result) merge(o Result) {
	r.Drained = append(r.Drained, o.Drained...)
	r.Reasons = append(r.Reasons, o.Reasons...)
	r.Returned = append(r.Returned, o.Returned...)
	r.Failed = append(r.Failed, o.Failed...)
	r.Left = append(r.Left, o.Left...)
}

func owners(hs []hold.Hold) []hold.Owner {
	out := make([]hold.Owner, len(hs))
	for i, h := range hs {
		out[i] = h.Owner
	}
	slices.Sort(out)
	return out
}

func sortedSet(ns []string) []string {
	out := slices.Clone(ns)
	slices.Sort(out)
	return slices.Compact(out)
}

// apply brings the nodes' scheduler state in line with their holds,
// inside session s: drain what is held and not drained, update the
// reason of what seam drained, undrain what seam drained and nothing
// holds, and leave every drain and undrain seam did not make alone.
func (l *Ledger) apply(ctx context.Context, s hold.Session, nodes []string) (Result, error) {
	var res Result
	if len(nodes) == 0 || l.Sched == nil {
		return res, nil
	}
	status, err := l.Sched.Status(ctx, nodes)
	if err != nil {
		l.schedError("status", nodes, err)
		res.Failed = nodes
		return res, fmt.Errorf("reading the scheduler's state of %s: %w", hostlist.Compress(nodes), err)
	}
	var errs []error
	if len(status.Unknown) > 0 {
		err := fmt.Errorf("%d node(s) are unknown to the scheduler: %s", len(status.Unknown), hostlist.Compress(status.Unknown))
		l.schedError("unknown", status.Unknown, err)
		errs = append(errs, err)
	}
	on, err := s.On(ctx, nodes)
	if err != nil {
		return res, err
	}
	recs, err := s.Records(ctx, nodes)
	if err != nil {
		return res, err
	}
	now := l.clk().Now()
	changed := map[string]*hold.Record{}
	rec := func(n string) *hold.Record {
		r := recs[n]
		if r == nil {
			r = &hold.Record{}
			recs[n] = r
		}
		changed[n] = r
		return r
	}
	byReason := map[string][]string{}
	rewrite := map[string]bool{} // drained already: only the reason changes
	var undrain []string
	for _, n := range nodes {
		ns, known := status.Nodes[n]
		if !known {
			continue
		}
		hs := on[n]
		want, drain := hold.Drained(hs, scheduler.MaxReason)
		r := recs[n]
		if !drain {
			switch {
			case r != nil && r.Ours && ns.Drained && ns.Reason == r.Reason:
				undrain = append(undrain, n)
			case r != nil:
				recs[n] = &hold.Record{} // nothing to drain, nothing of ours: forget it
				changed[n] = recs[n]
			}
			continue
		}
		held := owners(hs)
		if r != nil && len(r.Overridden) > 0 {
			if subset(held, r.Overridden) {
				continue // an operator's choice, for these holds
			}
			r = rec(n)
			r.Overridden, r.Override, r.OverrideAt = nil, "", time.Time{} // a new hold
		}
		r = rec(n)
		switch {
		case ns.Drained && (r.Ours && ns.Reason == r.Reason || ns.Reason == want):
			if !r.Ours {
				r.Ours, r.Since = true, now // ours: our reason, written before a crash
			}
			r.Reason, r.External = ns.Reason, ""
			if want != ns.Reason {
				byReason[want] = append(byReason[want], n)
				rewrite[n] = true
			}
		case ns.Drained && r.Ours:
			l.override(n, r, held, fmt.Sprintf("drained by %s with reason %q", orSomeone(ns.ReasonBy), ns.Reason))
			r.External = ns.Reason
		case ns.Drained:
			r.External = ns.Reason // never overwritten, never undone
			res.Left = append(res.Left, n)
		case r.Ours:
			l.override(n, r, held, "undrained by an operator")
			res.Left = append(res.Left, n)
		default:
			byReason[want] = append(byReason[want], n)
		}
	}
	drained, failed, derr := l.drain(ctx, byReason, rec, now)
	for _, n := range drained {
		if rewrite[n] {
			res.Reasons = append(res.Reasons, n)
		} else {
			res.Drained = append(res.Drained, n)
		}
	}
	res.Failed = failed
	if derr != nil {
		errs = append(errs, derr)
	}
	returned, uerr := l.undrain(ctx, undrain)
	res.Returned = returned
	for _, n := range returned {
		recs[n] = &hold.Record{}
		changed[n] = recs[n]
	}
	if uerr != nil {
		res.Failed = append(res.Failed, undrain...)
		errs = append(errs, uerr)
	}
	if err := s.SetRecords(ctx, changed); err != nil {
		errs = append(errs, err)
	}
	return res, errors.Join(errs...)
}

func orSomeone(s string) string {
	if s == "" {
		return "someone"
	}
	return s
}

func subset(a, b []hold.Owner) bool {
	for _, o := range a {
		if !slices.Contains(b, o) {
			return false
		}
	}
	return true
}

func (l *Ledger) override(n string, r *hold.Record, held []hold.Owner, what string) {
	r.Ours = false
	r.Overridden, r.Override, r.OverrideAt = slices.Clone(held), what, l.clk().Now()
	l.record(RecOverride, map[string]any{"node": n, "what": what, "holds": held})
	l.log().Warn("an operator's own action on a held node: the ledger leaves it alone", "node", n, "what", what, "holds", held)
}

func (l *Ledger) schedError(op string, nodes []string, err error) {
	l.record(RecError, map[string]any{"op": op, "nodes": hostlist.Compress(nodes), "error": err.Error()})
	l.metrics().Error(op)
	l.log().Error("scheduler", "op", op, "nodes", len(nodes), "error", err)
}

func (l *Ledger) drain(ctx context.Context, byReason map[string][]string, rec func(string) *hold.Record, now time.Time) (drained, failed []string, err error) {
	var errs []error
	for _, reason := range slices.Sorted(maps.Keys(byReason)) {
		nodes := byReason[reason]
		if err := l.Sched.Drain(ctx, nodes, reason); err != nil {
			l.schedError("drain", nodes, err)
			failed = append(failed, nodes...)
			errs = append(errs, err)
			continue
		}
		for _, n := range nodes {
			r := rec(n)
			if !r.Ours {
				r.Ours, r.Since = true, now
			}
			r.Reason, r.External = reason, ""
		}
		drained = append(drained, nodes...)
		l.record(RecDrain, map[string]any{"nodes": hostlist.Compress(nodes), "count": len(nodes), "reason": reason})
		l.metrics().Action("drain", len(nodes))
		l.log().Info(l.verb("drained", "would drain"), "nodes", hostlist.Compress(nodes), "count", len(nodes), "reason", reason)
	}
	slices.Sort(drained)
	return drained, failed, errors.Join(errs...)
}

func (l *Ledger) undrain(ctx context.Context, nodes []string) ([]string, error) {
	if len(nodes) == 0 {
		return nil, nil
	}
	if err := l.Sched.Undrain(ctx, nodes); err != nil {
		l.schedError("undrain", nodes, err)
		return nil, err
	}
	l.record(RecUndrain, map[string]any{"nodes": hostlist.Compress(nodes), "count": len(nodes)})
	l.metrics().Action("undrain", len(nodes))
	l.log().Info(l.verb("returned", "would return"), "nodes", hostlist.Compress(nodes), "count", len(nodes))
	return nodes, nil
}

// Describe is a result as a sentence: what was returned, kept by whom,
// left.
func (r Result) Describe() string {
	var parts []string
	parts = append(parts, fmt.Sprintf("%d node(s) returned", len(r.Returned)))
	if len(r.Kept) > 0 {
		by := map[hold.Owner]int{}
		for _, os := range r.Kept {
			for _, o := range os {
				by[o]++
			}
		}
		var who []string
		for _, o := range slices.Sorted(maps.Keys(by)) {
			who = append(who, fmt.Sprintf("%s (%d)", o, by[o]))
		}
		parts = append(parts, fmt.Sprintf("%d still held by %s", len(r.Kept), strings.Join(who, ", ")))
	}
	if len(r.Left) > 0 {
		parts = append(parts, fmt.Sprintf("%d left as an operator set them", len(r.Left)))
	}
	if len(r.Failed) > 0 {
		parts = append(parts, fmt.Sprintf("%d not brought in line (the scheduler refused: retried at the next reconcile)", len(r.Failed)))
	}
	return strings.Join(parts, ", ")
}
