// Package fwrollout applies a firmware plan (package firmware) stage by
// stage: the stage's nodes held in the ledger by the stage's owner
// (firmware:ROLLOUT-sNN), which drains them; the jobs left on them
// waited for, up to a deadline (drained, never killed); each tray's
// updates through its BMC (package fwupdate), so many at once, each
// with a one-time image URL; then the updated nodes moved from the
// firmware hold to a burn-in hold (burnin:ROLLOUT), which only a
// passing burn-in releases, and the nodes the stage only stopped given
// back. A failed update stops the rollout after its stage.
//
// Every step is journaled (an evidence bundle): an update's intent is
// made durable before it is sent and its task monitor as soon as the
// BMC answers, so that a rollout resumed from its journal after a
// crash at any moment skips what finished, follows the tasks it began
// and sends no update twice. No files, no flags: the command wires the
// ledger, the BMCs, the image server and the journal.
package fwrollout

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/stmcginnis/gofish"

	"github.com/seamdc/seam/internal/burnin"
	"github.com/seamdc/seam/internal/clock"
	"github.com/seamdc/seam/internal/firmware"
	"github.com/seamdc/seam/internal/fwupdate"
	"github.com/seamdc/seam/internal/hold"
	"github.com/seamdc/seam/internal/ledger"
)

// Journal is where the rollout records each step: an evidence bundle.
// Seal makes what was appended durable (and signed, in a signed
// bundle): a resumed bundle keeps no record after its last seal.
type Journal interface {
	Append(kind string, data any) error
	Seal() error
}

// Target is how a tray's BMC is reached.
type Target struct {
	BMC, URL string
	// Login logs in to it (bmchttp.Access.Connect).
	Login func(ctx context.Context) (*gofish.APIClient, error)
}

// Config is one rollout's.
type Config struct {
	Plan *firmware.Plan
	// PlanDigest is the plan file's, for the journal; Signatures the
	// baseline's, as checked.
	PlanDigest string
	Signatures []firmware.Signature
	// Stages limits the rollout to these stage numbers (nil: every one).
	Stages []int
	// Ledger holds the stages' nodes and drains them (its Sched may be
	// nil: the holds are kept and facilityd's reconcile drains).
	Ledger *ledger.Ledger
	// Journal records every step; State is an interrupted run's, read
	// from its journal (nil: a new rollout).
	Journal Journal
	State   *State
	Clock   clock.Clock
	Log     *slog.Logger
	// By names who runs the rollout in its holds.
	By string
	// Target is a tray's BMC (by tray key).
	Target func(tray string) (Target, error)
	// Grant gives an update of a tray its image URL, one-time, just
	// before it is sent.
	Grant func(tray, bmc string, u firmware.Update) (string, error)
	// Update are fwupdate's options for every BMC (Login and URL are
	// set per tray). With Update.Push, ImageFiles (by bare sha256) are
	// the files pushed.
	Update     fwupdate.Options
	ImageFiles map[string]string
	// Parallel is how many trays are updated at once (default 64).
	Parallel int
	// JobsDeadline is how long a stage waits for the jobs on its drained
	// nodes to end (default 1 h); JobsPoll how often it looks (30 s).
	JobsDeadline, JobsPoll time.Duration
	// DryRun: read, and record what would be written (the ledger's and
	// fwupdate's recorders do); nothing is journaled as done.
	DryRun bool
	// Progress, if set, hears each stage's news for people.
	Progress func(format string, args ...any)
}

// Journal record kinds.
const (
	KindStart     = "fw.rollout" // the rollout starts, or resumes
	KindStage     = "fw.stage"   // a stage starts
	KindHold      = "fw.hold"    // holds placed or released, nodes drained or returned
	KindJobs      = "fw.jobs"    // the jobs a stage waits for
	KindEvent     = "fw.event"   // an update's step (fwupdate.Event)
	KindTray      = "fw.tray"    // a tray's updates ended
	KindStageEnd  = "fw.stage_end"
	KindRolloutOK = "fw.end"
)

// StartRecord is a KindStart record's data.
type StartRecord struct {
	Rollout  string `json:"rollout"`
	Site     string `json:"site"`
	Baseline string `json:"baseline"` // the plan's baseline digest
	Plan     string `json:"plan"`     // the plan's digest
	Stages   []int  `json:"stages"`
	By       string `json:"by"`
	Resumed  bool   `json:"resumed,omitempty"`
	// Signatures are the baseline's (none: its policy names no signer).
	Signatures []firmware.Signature `json:"signatures,omitempty"`
}

// StageRecord is a KindStage or KindStageEnd record's data.
type StageRecord struct {
	Stage  int      `json:"stage"`
	Racks  []string `json:"racks"`
	Nodes  int      `json:"nodes"`
	OK     bool     `json:"ok,omitempty"`
	Failed []string `json:"failed,omitempty"` // trays
	Error  string   `json:"error,omitempty"`
}

// HoldRecord is a KindHold record's data.
type HoldRecord struct {
	Stage  int           `json:"stage"`
	Action string        `json:"action"` // place, release
	Owner  hold.Owner    `json:"owner"`
	Nodes  []string      `json:"nodes"`
	Result ledger.Result `json:"result"`
}

// JobsRecord is a KindJobs record's data.
type JobsRecord struct {
	Stage int      `json:"stage"`
	Jobs  []string `json:"jobs"` // id@node
	Left  bool     `json:"left"` // every job has left
}

// EventRecord is a KindEvent record's data.
type EventRecord struct {
	Stage int    `json:"stage"`
	Tray  string `json:"tray"`
	fwupdate.Event
}

// TrayRecord is a KindTray record's data.
type TrayRecord struct {
	Stage   int               `json:"stage"`
	Tray    string            `json:"tray"`
	Node    string            `json:"node,omitempty"`
	BMC     string            `json:"bmc"`
	Results []fwupdate.Result `json:"results"`
	Error   string            `json:"error,omitempty"`
}

// Result is what a rollout did, stage by stage.
type Result struct {
	Stages []StageResult
}

// StageResult is one stage's outcome.
type StageResult struct {
	Stage   int
	Skipped bool // finished by an interrupted run
	Trays   []TrayRecord
	Updated []string // nodes moved to the burn-in hold
	Failed  []string // trays whose update failed
}

// BurninOwner is the hold a rollout's updated nodes wait in until a
// burn-in passes them: burnin:ROLLOUT (the burn-in's gate releases it).
func BurninOwner(p *firmware.Plan) hold.Owner { return burnin.Owner(p.Rollout) }

func (c *Config) defaults() {
	if c.Parallel <= 0 {
		c.Parallel = 64
	}
	if c.JobsDeadline <= 0 {
		c.JobsDeadline = time.Hour
	}
	if c.JobsPoll <= 0 {
		c.JobsPoll = 30 * time.Second
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	if c.State == nil {
		c.State = NewState()
	}
	if c.Progress == nil {
		c.Progress = func(string, ...any) {}
	}
}

// Run applies the plan's stages in order and stops after the first
// stage that fails. Its error is the reason it stopped; the result says
// what each stage did.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	cfg.defaults()
	r := &rollout{cfg: cfg}
	res := &Result{}
	start := StartRecord{Rollout: cfg.Plan.Rollout, Site: cfg.Plan.Site, Baseline: cfg.Plan.Baseline.Digest, Plan: cfg.PlanDigest,
		Stages: cfg.Stages, By: cfg.By, Resumed: cfg.State.Start != nil, Signatures: cfg.Signatures}
	if err := r.record(KindStart, start, true); err != nil {
		return res, err
	}
	for _, st := range cfg.Plan.Stages {
		if cfg.Stages != nil && !slices.Contains(cfg.Stages, st.Number) {
			continue
		}
		sr, err := r.stage(ctx, st)
		res.Stages = append(res.Stages, sr)
		if err != nil {
			return res, err
		}
	}
	if !cfg.DryRun {
		if err := r.record(KindRolloutOK, map[string]any{"rollout": cfg.Plan.Rollout, "stages": len(res.Stages)}, true); err != nil {
			return res, err
		}
	}
	return res, nil
}

// rollout is one Run's state.
type rollout struct {
	cfg Config
	mu  sync.Mutex // the journal's appends from the trays' goroutines
}

// record appends to the journal (nothing in a dry run), sealed when
// durable must hold.
func (r *rollout) record(kind string, data any, durable bool) error {
	if r.cfg.DryRun {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.cfg.Journal.Append(kind, data); err != nil {
		return fmt.Errorf("the rollout's journal: %w", err)
	}
	if durable {
		if err := r.cfg.Journal.Seal(); err != nil {
			return fmt.Errorf("the rollout's journal: %w", err)
		}
	}
	return nil
}

// names maps the stage's node keys to the names the ledger and the
// scheduler know them by.
func names(st *firmware.Stage, keys []string) []string {
	byKey := map[string]string{}
	for _, n := range st.Nodes {
		byKey[n.Key] = n.Name
	}
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		if n := byKey[k]; n != "" {
			k = n
		}
		out = append(out, k)
	}
	return out
}

// stage runs one stage: holds, jobs, updates, then the burn-in hold.
func (r *rollout) stage(ctx context.Context, st *firmware.Stage) (StageResult, error) {
	sr := StageResult{Stage: st.Number}
	if r.cfg.State.StagesDone[st.Number] {
		sr.Skipped = true
		r.cfg.Progress("stage %d: finished by the interrupted run", st.Number)
		return sr, nil
	}
	r.cfg.Progress("stage %d: racks %s, %d node(s) out of the pool", st.Number, strings.Join(st.Racks, ", "), len(st.Nodes))
	if err := r.record(KindStage, StageRecord{Stage: st.Number, Racks: st.Racks, Nodes: len(st.Nodes)}, true); err != nil {
		return sr, err
	}
	if err := r.hold(ctx, st); err != nil {
		return sr, r.stageEnd(st, sr, err)
	}
	if err := r.waitJobs(ctx, st); err != nil {
		return sr, r.stageEnd(st, sr, err)
	}
	sr.Trays = r.trays(ctx, st)
	var failed []string
	for _, t := range sr.Trays {
		if t.Error != "" {
			sr.Failed = append(sr.Failed, t.Tray)
			failed = append(failed, t.Error)
		}
	}
	if err := ctx.Err(); err != nil {
		return sr, err
	}
	updated, err := r.release(ctx, st, sr)
	sr.Updated = updated
	if err == nil && len(failed) > 0 {
		err = fmt.Errorf("stage %d: %d of %d tray(s) failed, the rollout stops after this stage (their nodes stay held by %s; the others moved to %s):\n  %s",
			st.Number, len(failed), len(sr.Trays), stageOwner(st), BurninOwner(r.cfg.Plan), strings.Join(failed, "\n  "))
	}
	return sr, r.stageEnd(st, sr, err)
}

// stageEnd journals the stage's end (err nil: passed) and returns err.
func (r *rollout) stageEnd(st *firmware.Stage, sr StageResult, err error) error {
	rec := StageRecord{Stage: st.Number, Racks: st.Racks, Nodes: len(st.Nodes), OK: err == nil, Failed: sr.Failed}
	if err != nil {
		rec.Error = err.Error()
	}
	if jerr := r.record(KindStageEnd, rec, true); jerr != nil && err == nil {
		err = jerr
	}
	if err == nil {
		r.cfg.Progress("stage %d: passed: %d node(s) updated, held %s until their burn-in", st.Number, len(sr.Updated), BurninOwner(r.cfg.Plan))
	}
	return err
}

// stageOwner is the stage's hold owner.
func stageOwner(st *firmware.Stage) hold.Owner {
	if len(st.Holds) > 0 {
		return st.Holds[0].Owner
	}
	return ""
}

// hold places the stage's holds: the ledger drains the nodes.
func (r *rollout) hold(ctx context.Context, st *firmware.Stage) error {
	for _, h := range st.Holds {
		nodes := names(st, h.Nodes)
		res, err := r.cfg.Ledger.Place(ctx, hold.Hold{Owner: h.Owner, Nodes: nodes, Why: h.Why, By: r.cfg.By})
		if jerr := r.record(KindHold, HoldRecord{Stage: st.Number, Action: "place", Owner: h.Owner, Nodes: nodes, Result: res}, true); jerr != nil && err == nil {
			err = jerr
		}
		if err != nil {
			return fmt.Errorf("stage %d: holding %d node(s) as %s: %w", st.Number, len(nodes), h.Owner, err)
		}
		drained := "no scheduler in this run: facilityd's reconcile drains them"
		if r.cfg.Ledger.Sched != nil {
			drained = fmt.Sprintf("%d drained, %d drained already", len(res.Drained), len(res.Reasons)+len(res.Left))
		}
		r.cfg.Progress("stage %d: %s holds %d node(s) (%s)", st.Number, h.Owner, len(nodes), drained)
	}
	return nil
}

// waitJobs waits until no job runs on the stage's nodes, up to the
// deadline: drained nodes take no new work, and their jobs are never
// killed.
func (r *rollout) waitJobs(ctx context.Context, st *firmware.Stage) error {
	sched := r.cfg.Ledger.Sched
	if sched == nil || len(st.Nodes) == 0 {
		return nil
	}
	nodes := make([]string, len(st.Nodes))
	for i, n := range st.Nodes {
		nodes[i] = n.Name
		if nodes[i] == "" {
			nodes[i] = n.Key
		}
	}
	clk := r.cfg.Clock
	start := clk.Now()
	for waited := false; ; waited = true {
		jobs, err := sched.Jobs(ctx, nodes)
		if err != nil {
			return fmt.Errorf("stage %d: listing the jobs on its %d drained node(s): %w", st.Number, len(nodes), err)
		}
		ids := make([]string, len(jobs))
		for i, j := range jobs {
			ids[i] = j.ID + "@" + strings.Join(j.Nodes, "+")
		}
		if len(jobs) == 0 {
			if waited {
				_ = r.record(KindJobs, JobsRecord{Stage: st.Number, Left: true}, false)
				r.cfg.Progress("stage %d: the jobs have left its nodes after %s", st.Number, clk.Now().Sub(start).Round(time.Second))
			}
			return nil
		}
		if r.cfg.DryRun {
			r.cfg.Progress("stage %d: would wait up to %s for %d job(s) to leave its drained nodes: %s", st.Number, r.cfg.JobsDeadline, len(jobs), strings.Join(ids, ", "))
			return nil
		}
		if !waited {
			_ = r.record(KindJobs, JobsRecord{Stage: st.Number, Jobs: ids}, false)
			r.cfg.Progress("stage %d: waiting up to %s for %d job(s) to leave its drained nodes: %s", st.Number, r.cfg.JobsDeadline, len(jobs), strings.Join(ids, ", "))
		}
		if clk.Now().Sub(start) >= r.cfg.JobsDeadline {
			return fmt.Errorf("stage %d: %d job(s) still run on its drained nodes after %s: %s; nothing was updated. The nodes stay held by %s and drained: let the jobs end (or end them yourself), then resume the rollout",
				st.Number, len(jobs), r.cfg.JobsDeadline, strings.Join(ids, ", "), stageOwner(st))
		}
		if err := clk.Sleep(ctx, min(r.cfg.JobsPoll, r.cfg.JobsDeadline-clk.Now().Sub(start))); err != nil {
			return err
		}
	}
}

// release ends the stage's hold: the nodes it updated move to the
// burn-in hold, the nodes it only stopped return to the pool, and a
// failed tray's node stays held by the stage.
func (r *rollout) release(ctx context.Context, st *firmware.Stage, sr StageResult) ([]string, error) {
	failed := map[string]bool{}
	for _, t := range sr.Trays {
		if t.Error != "" && t.Node != "" {
			failed[t.Node] = true
		}
	}
	var updated []string
	for _, n := range st.Nodes {
		if n.Action == firmware.NodeUpdate && !failed[n.Key] {
			updated = append(updated, n.Key)
		}
	}
	updatedNames := names(st, updated)
	if len(updatedNames) > 0 {
		owner := BurninOwner(r.cfg.Plan)
		why := fmt.Sprintf("firmware updated by %s stage %d: it returns when a burn-in passes it (sat burnin with the lifecycle store)", r.cfg.Plan.Rollout, st.Number)
		res, err := r.cfg.Ledger.Place(ctx, hold.Hold{Owner: owner, Nodes: updatedNames, Why: why, By: r.cfg.By})
		if jerr := r.record(KindHold, HoldRecord{Stage: st.Number, Action: "place", Owner: owner, Nodes: updatedNames, Result: res}, true); jerr != nil && err == nil {
			err = jerr
		}
		if err != nil {
			return nil, fmt.Errorf("stage %d: holding its %d updated node(s) for burn-in as %s: %w", st.Number, len(updatedNames), owner, err)
		}
	}
	for _, h := range st.Holds {
		var keep []string
		for _, k := range h.Nodes {
			if !failed[k] {
				keep = append(keep, k)
			}
		}
		nodes := names(st, keep)
		if len(nodes) == 0 {
			continue
		}
		res, err := r.cfg.Ledger.Release(ctx, h.Owner, nodes, r.cfg.By, fmt.Sprintf("stage %d ended", st.Number))
		if jerr := r.record(KindHold, HoldRecord{Stage: st.Number, Action: "release", Owner: h.Owner, Nodes: nodes, Result: res}, true); jerr != nil && err == nil {
			err = jerr
		}
		if err != nil {
			return updatedNames, fmt.Errorf("stage %d: releasing %s: %w", st.Number, h.Owner, err)
		}
	}
	return updatedNames, nil
}
