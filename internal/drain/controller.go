package drain

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/seamdc/seam/internal/alarm"
	"github.com/seamdc/seam/internal/clock"
	"github.com/seamdc/seam/internal/dryrun"
	"github.com/seamdc/seam/internal/hold"
	"github.com/seamdc/seam/internal/ledger"
	"github.com/seamdc/seam/internal/scheduler"
	"github.com/seamdc/seam/internal/topology/hostlist"
)

// Action is what an alarm type makes facilityd do.
type Action string

// Actions for alarm types.
const (
	Drain  Action = "drain"  // hold the domain's nodes
	Notify Action = "notify" // record, count and export; no drain
)

// Config is the policy.
type Config struct {
	// Actions per alarm type; a type not listed drains if it is severe
	// (the design brief's set) and only notifies otherwise.
	Actions map[alarm.Type]Action
	Storm   Storm
	Flap    Flap
	// ClearFor is how long an alarm must have been clear before its
	// hold may be released (default 1 min).
	ClearFor   time.Duration
	Checkpoint Checkpoint
	// DryRun: the scheduler is a recording twin (scheduler.DryRun), the
	// ledger a copy in memory of the real one; the journal records what
	// it would have done.
	DryRun bool
	// AlarmPath reports whether the alarm path (Alertmanager's Watchdog)
	// is alive; nil: not watched. While it is dead every release is
	// refused.
	AlarmPath func() bool
}

// Storm is the storm guard: how many nodes facilityd may drain in a
// window without a person's approval.
type Storm struct {
	// MaxNodes caps the distinct nodes drained in Window (default: the
	// largest module's node count).
	MaxNodes int
	// MaxFraction caps them as a share of the fleet (0: no cap).
	MaxFraction float64
	Window      time.Duration // default 10 min
}

// Flap is flap damping: an alarm raised Raises times within Within is
// flapping, and its hold stays until it has been clear for HoldDown.
type Flap struct {
	Raises   int           // default 3
	Within   time.Duration // default 10 min
	HoldDown time.Duration // default 15 min
}

// Checkpoint is checkpoint_now: a signal to the batch shell of the
// running jobs that opted in (a Comment holding Tag, or a QOS listed).
type Checkpoint struct {
	Enabled bool
	Tag     string   // default seam:checkpoint_now; Tag=full also signals every step
	QOS     []string // QOS names that opt in
	Signal  string   // default USR1
}

// Silencer says whether an Alertmanager silence covers an alarm.
type Silencer interface {
	Matching(ctx context.Context, t alarm.Type, d alarm.Domain) (*alarm.Silence, error)
}

// Metrics counts what the controller does.
type Metrics interface {
	Action(kind string, nodes int) // drain, undrain, reason, signal, hold, release
	Refusal(reason string)         // storm, release, request, unmapped
	Error(op string)               // the scheduler refused or timed out
	Latency(d time.Duration)       // alarm raised to its domain drained
}

type noMetrics struct{}

func (noMetrics) Action(string, int)    {}
func (noMetrics) Refusal(string)        {}
func (noMetrics) Error(string)          {}
func (noMetrics) Latency(time.Duration) {}

// Controller applies the policy to the alarm stream and the requests.
type Controller struct {
	cfg      Config
	ix       *alarm.Index
	sched    scheduler.Drainer
	ledger   *ledger.Ledger
	stream   *alarm.Stream
	journal  Journal
	store    StateStore
	clk      clock.Clock
	log      *slog.Logger
	silences Silencer
	raise    func(alarm.Observation)
	metrics  Metrics
	out      io.Writer

	mu         sync.Mutex
	st         *State
	emit       []alarm.Observation
	suppressed map[Owner]string
	fenced     error // set once a save was refused as fenced: no scheduler write after it
	onFenced   func(error)
	ctx        context.Context // for the ledger's writes made under the lock
}

// Deps are what a controller works with.
type Deps struct {
	Index *alarm.Index
	// Scheduler is the one scheduler client the ledger applies holds
	// through; in a dry run, its recording twin.
	Scheduler scheduler.Drainer
	// Ledger keeps the holds: the lifecycle store's, shared with sat
	// burnin and sat lifecycle. nil: the state's own book (the state
	// file, or the replicas' ConfigMap). A dry run works on a copy of
	// it in memory.
	Ledger hold.Backend
	// Epoch and Leader fence the ledger's writes (facilityd's leader on
	// Kubernetes).
	Epoch   int64
	Leader  string
	Stream  *alarm.Stream
	Journal Journal // nil: none
	Store   *Store  // nil: the state lives in memory only
	// StateStore replaces Store: a store shared by replicas, whose Save
	// fails with ErrFenced once another replica has written (the
	// Kubernetes backend's ConfigMap).
	StateStore StateStore
	// Fenced is called once when a save is fenced: this replica is no
	// longer the leader, and the controller writes nothing more.
	Fenced   func(error)
	State    *State // the loaded state (nil: empty)
	Clock    clock.Clock
	Log      *slog.Logger
	Silences Silencer // nil: no Alertmanager silences
	// Raise feeds facilityd's own alarms (drain_refused,
	// unmapped_alarm) back into the stream; called without locks held.
	Raise   func(alarm.Observation)
	Metrics Metrics
	// Out takes a dry run's commands (default: discarded).
	Out io.Writer
}

// New returns a controller.
func New(cfg Config, d Deps) *Controller {
	if cfg.ClearFor <= 0 {
		cfg.ClearFor = time.Minute
	}
	if cfg.Storm.Window <= 0 {
		cfg.Storm.Window = 10 * time.Minute
	}
	if cfg.Storm.MaxNodes <= 0 {
		cfg.Storm.MaxNodes = d.Index.LargestModule()
	}
	if cfg.Flap.Raises <= 0 {
		cfg.Flap.Raises = 3
	}
	if cfg.Flap.Within <= 0 {
		cfg.Flap.Within = 10 * time.Minute
	}
	if cfg.Flap.HoldDown <= 0 {
		cfg.Flap.HoldDown = 15 * time.Minute
	}
	if cfg.Checkpoint.Tag == "" {
		cfg.Checkpoint.Tag = "seam:checkpoint_now"
	}
	if cfg.Checkpoint.Signal == "" {
		cfg.Checkpoint.Signal = "USR1"
	}
	c := &Controller{cfg: cfg, ix: d.Index, sched: d.Scheduler, stream: d.Stream, journal: d.Journal, clk: d.Clock, log: d.Log,
		silences: d.Silences, raise: d.Raise, metrics: d.Metrics, out: d.Out, st: d.State, suppressed: map[Owner]string{}, onFenced: d.Fenced}
	switch { // never a nil *Store in the interface: no store is nil
	case d.StateStore != nil:
		c.store = d.StateStore
	case d.Store != nil:
		c.store = d.Store
	}
	if c.journal == nil {
		c.journal = nop{}
	}
	if c.clk == nil {
		c.clk = clock.Real{}
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if c.metrics == nil {
		c.metrics = noMetrics{}
	}
	if c.out == nil {
		c.out = io.Discard
	}
	if c.st == nil {
		c.st = NewState(d.Index.Site())
	}
	if c.raise == nil {
		c.raise = func(alarm.Observation) {}
	}
	backend := d.Ledger
	if backend == nil {
		backend = hold.NewMemory(&c.st.Book, c.persist, c.stillLeads)
	}
	if cfg.DryRun {
		rec := dryrun.New(c.out, c.log)
		if r, ok := c.sched.(*scheduler.Recording); ok {
			rec = r.Rec
		} else {
			c.sched = scheduler.DryRun(c.sched, rec, "")
		}
		if cp, err := hold.Copy(context.Background(), backend, rec); err == nil {
			backend = cp
		} else {
			c.log.Error("the ledger could not be read: the dry run starts from no holds", "error", err)
			backend = hold.NewMemory(&hold.Book{}, nil, nil)
		}
	}
	c.ledger = &ledger.Ledger{Backend: backend, Sched: c.sched, Clock: c.clk, Log: c.log, Journal: func(kind string, data any) { c.record(kind, data) },
		Metrics: c.metrics, Epoch: d.Epoch, Leader: d.Leader, DryRun: cfg.DryRun}
	return c
}

// Ledger is the ledger of holds the controller writes to.
func (c *Controller) Ledger() *ledger.Ledger { return c.ledger }

// Config is the policy in force, with its defaults filled.
func (c *Controller) Config() Config { return c.cfg }

// ActionFor is what alarms of type t make facilityd do.
func (c *Controller) ActionFor(t alarm.Type) Action {
	if a, ok := c.cfg.Actions[t]; ok {
		return a
	}
	if d, ok := alarm.Lookup(t); ok && d.Severity == alarm.Severe {
		return Drain
	}
	return Notify
}

// lock and unlock: what was raised under the lock goes out after it.
func (c *Controller) lock() { c.mu.Lock() }

func (c *Controller) unlock() {
	out := c.emit
	c.emit = nil
	c.mu.Unlock()
	for _, o := range out {
		c.raise(o)
	}
}

func (c *Controller) record(kind string, data any) {
	if c.cfg.DryRun && kind != RecDryRun && kind != RecAlarm && kind != RecStart {
		data = map[string]any{"would": kind, "data": data}
		kind = RecDryRun
	}
	if err := c.journal.Record(kind, data); err != nil {
		c.log.Error("journal write failed", "kind", kind, "error", err)
		c.metrics.Error("journal")
	}
}

// save commits the state before the scheduler is touched. A save
// refused as fenced (another replica leads now) stops every scheduler
// write of this controller for good; any other failure is logged and
// counted, and the action goes ahead (a local disk that fails must not
// hold a drain back).
func (c *Controller) save() {
	if err := c.persist(); err != nil && !errors.Is(err, ErrFenced) {
		c.log.Error("state not saved", "error", err)
		c.metrics.Error("state")
	}
}

// persist writes the state (the ledger's book with it, when the state
// keeps the ledger); a save refused as fenced fences the controller.
func (c *Controller) persist() error {
	if c.store == nil || c.cfg.DryRun || c.fenced != nil {
		return c.fenced
	}
	c.st.Alarms = c.stream.Snapshot()
	err := c.store.Save(c.st)
	if errors.Is(err, ErrFenced) {
		c.fence(err)
	}
	return err
}

// Persist makes the state durable now, the alarms with it: the webhook
// answers once the alarms it changed are (a crash after the answer
// replays them at Start).
func (c *Controller) Persist() error {
	c.lock()
	defer c.unlock()
	return c.persist()
}

// stillLeads saves the state before the ledger writes anything: a
// replica another has fenced learns it before it touches the scheduler
// (the intent first). Only a fence refuses: a disk that fails must not
// hold a drain back.
func (c *Controller) stillLeads() error {
	if err := c.persist(); errors.Is(err, ErrFenced) {
		return err
	}
	return nil
}

// fence stops every write of this controller for good: another replica
// leads now.
func (c *Controller) fence(err error) {
	if c.fenced != nil {
		return
	}
	c.fenced = err
	c.log.Error("fenced: another replica leads, this one writes nothing more", "error", err)
	c.metrics.Error("fenced")
	if c.onFenced != nil {
		c.onFenced(err)
	}
}

// ledgerErr takes an error of the ledger: a fenced write fences the
// controller; the others are in the journal and the log already.
func (c *Controller) ledgerErr(err error) {
	switch {
	case err == nil:
	case errors.Is(err, ErrFenced):
		c.fence(err)
	default:
		c.log.Error("ledger", "error", err)
	}
}

// Fenced is the error that fenced the controller, or nil.
func (c *Controller) Fenced() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.fenced
}

// Handle acts on one event of the alarm stream.
func (c *Controller) Handle(ctx context.Context, ev alarm.Event) {
	if ev.Change == alarm.Seen {
		return
	}
	a := ev.Alarm
	c.record(RecAlarm, map[string]any{"change": ev.Change.String(), "type": a.Type, "domain": a.Domain.String(), "source": ev.Observation.SourceID(),
		"at": ev.Observation.At, "detail": ev.Observation.Detail})
	c.log.Info("alarm "+ev.Change.String(), "type", a.Type, "domain", a.Domain.String(), "source", ev.Observation.SourceID(), "detail", ev.Observation.Detail)
	if c.ActionFor(a.Type) != Drain {
		return
	}
	c.lock()
	defer c.unlock()
	switch ev.Change {
	case alarm.Raised:
		c.placeFacility(ctx, a, "")
	case alarm.Cleared:
		if h, _ := c.ledger.Hold(ctx, FacilityOwner(a.Type, a.Domain)); h != nil {
			c.log.Info("alarm cleared: its hold stays until a person approves the release", "owner", h.Owner, "nodes", len(h.Nodes))
		}
		c.save()
	}
}

// placeFacility places the hold of an active alarm: its domain's nodes,
// unless the domain has none, a suppression covers it, or the storm
// guard refuses. approvedBy bypasses the storm guard.
func (c *Controller) placeFacility(ctx context.Context, a alarm.Alarm, approvedBy string) {
	owner := FacilityOwner(a.Type, a.Domain)
	if approvedBy == "" && c.st.Refused[owner] != nil {
		return // waiting for approval
	}
	if h, err := c.ledger.Hold(ctx, owner); err != nil {
		c.log.Error("the ledger could not be read: the hold is placed at the next reconcile", "owner", owner, "error", err)
		return
	} else if h != nil {
		return // idempotent: held already
	}
	nodes := c.ix.Nodes(a.Domain)
	if len(nodes) == 0 {
		why := fmt.Sprintf("%s for %s: the inventory maps %s to no nodes, so nothing is drained", a.Type, a.Domain, a.Domain)
		c.refuse("unmapped", owner, why)
		c.emit = append(c.emit, alarm.Observation{Type: alarm.UnmappedAlarm, Domain: a.Domain, Active: true, Kind: alarm.FromFacilityd,
			Source: "drain:" + string(a.Type), At: c.clk.Now(), Detail: why})
		return
	}
	if why := c.suppressedBy(ctx, a.Type, a.Domain, nodes); why != "" {
		if c.suppressed[owner] != why {
			c.suppressed[owner] = why
			c.record(RecSuppressed, map[string]any{"owner": owner, "nodes": len(nodes), "why": why})
			c.log.Warn("drain suppressed", "owner", owner, "why", why)
		}
		return
	}
	delete(c.suppressed, owner)
	if approvedBy == "" {
		why, err := c.stormCheck(ctx, nodes)
		if err != nil {
			c.log.Error("the ledger could not be read: the hold is placed at the next reconcile", "owner", owner, "error", err)
			return
		}
		if why != "" {
			c.st.Refused[owner] = &Refusal{Owner: owner, Domain: a.Domain, Nodes: nodes, At: c.clk.Now(), Why: why}
			detail := why + ": approve it with " + ApproveDrainCommand(owner)
			c.refuse("storm", owner, detail)
			c.emit = append(c.emit, alarm.Observation{Type: alarm.DrainRefused, Domain: a.Domain, Active: true, Kind: alarm.FromFacilityd,
				Source: "storm:" + string(owner), At: c.clk.Now(), Detail: detail})
			c.save()
			return
		}
	}
	by := "facilityd"
	if approvedBy != "" {
		by = approvedBy
	}
	if _, err := c.addHold(ctx, hold.Hold{Owner: owner, Domain: a.Domain.String(), Nodes: slices.Clone(nodes), Why: a.Detail, Placed: c.clk.Now(), By: by}); err != nil {
		return
	}
	if !a.FirstSeen.IsZero() && !a.LastSeen.IsZero() {
		c.metrics.Latency(c.clk.Now().Sub(latestRaise(a)))
	}
	c.checkpoint(ctx, owner, nodes)
}

func latestRaise(a alarm.Alarm) time.Time {
	if n := len(a.Raises); n > 0 {
		return a.Raises[n-1]
	}
	return a.FirstSeen
}

// addHold places h in the ledger, which drains its nodes in the same
// call; a facility hold's newly drained nodes count in the storm window.
func (c *Controller) addHold(ctx context.Context, h hold.Hold) (ledger.Result, error) {
	if c.fenced != nil {
		return ledger.Result{}, c.fenced
	}
	res, err := c.ledger.Place(ctx, h)
	c.ledgerErr(err)
	if h.Owner.Kind() == hold.Facility && len(res.Drained) > 0 {
		c.st.Drains = append(c.st.Drains, DrainMark{At: c.clk.Now(), Nodes: res.Drained})
	}
	c.save()
	return res, err
}

func (c *Controller) refuse(reason string, owner Owner, why string) {
	c.record(RecRefused, map[string]any{"reason": reason, "owner": owner, "why": why})
	c.metrics.Refusal(reason)
	c.log.Warn("refused", "reason", reason, "owner", owner, "why", why)
}

// suppressedBy names what suppresses drains for d, or "".
func (c *Controller) suppressedBy(ctx context.Context, t alarm.Type, d alarm.Domain, nodes []string) string {
	now := c.clk.Now()
	for _, s := range c.st.Suppressions {
		if !now.Before(s.Until) {
			continue
		}
		if s.Domain == d || covers(c.ix.Nodes(s.Domain), nodes) {
			return fmt.Sprintf("suppression of %s until %s by %s: %s", s.Domain, s.Until.UTC().Format(time.RFC3339), s.By, s.Why)
		}
	}
	if c.silences == nil {
		return ""
	}
	sil, err := c.silences.Matching(ctx, t, d)
	if err != nil {
		c.log.Warn("Alertmanager's silences not read: the drain goes ahead", "error", err)
		c.metrics.Error("silences")
		return ""
	}
	if sil != nil {
		return fmt.Sprintf("Alertmanager silence %s by %s until %s: %s", sil.ID, sil.By, sil.EndsAt.UTC().Format(time.RFC3339), sil.Comment)
	}
	return ""
}

// covers reports whether every name of sub is in set (both sorted).
func covers(set, sub []string) bool {
	if len(set) == 0 {
		return false
	}
	for _, n := range sub {
		if _, ok := slices.BinarySearch(set, n); !ok {
			return false
		}
	}
	return true
}

// stormCheck says why draining nodes now would exceed the storm guard,
// or "".
func (c *Controller) stormCheck(ctx context.Context, nodes []string) (string, error) {
	now := c.clk.Now()
	held, err := c.ledger.On(ctx, nodes)
	if err != nil {
		return "", err
	}
	kept := c.st.Drains[:0]
	size := 0
	for _, m := range c.st.Drains {
		if now.Sub(m.At) < c.cfg.Storm.Window {
			kept = append(kept, m)
			size += len(m.Nodes)
		}
	}
	c.st.Drains = kept
	recent := make(map[string]bool, size)
	for _, m := range kept {
		for _, n := range m.Nodes {
			recent[n] = true
		}
	}
	fresh := 0
	for _, n := range nodes {
		if len(held[n]) == 0 && !recent[n] {
			fresh++
		}
	}
	total := len(recent) + fresh
	limit := c.cfg.Storm.MaxNodes
	what := fmt.Sprintf("%d nodes", limit)
	if f := c.cfg.Storm.MaxFraction; f > 0 {
		if byShare := int(f * float64(c.ix.FleetSize())); byShare < limit {
			limit, what = byShare, fmt.Sprintf("%.0f %% of the fleet's %d nodes (%d)", f*100, c.ix.FleetSize(), byShare)
		}
	}
	if total <= limit {
		return "", nil
	}
	return fmt.Sprintf("draining %d more nodes would make %d drained within %s, above the storm guard's %s",
		fresh, total, c.cfg.Storm.Window, what), nil
}

// ApproveDrainCommand is the whole command that approves a drain the
// storm guard refused: its owner, and who approves with which key. The
// refusal's log line and alarm end with it; facilityd's status and
// drill print it under the refusal.
func ApproveDrainCommand(owner Owner) string {
	return fmt.Sprintf("facilityd approve --action drain --owner %s --by NAME --key ~/.ssh/id_ed25519 --why WHY", owner)
}

// checkpoint sends checkpoint_now to the running jobs on nodes that
// opted in, once per job.
func (c *Controller) checkpoint(ctx context.Context, owner Owner, nodes []string) {
	cp := c.cfg.Checkpoint
	if !cp.Enabled || c.fenced != nil {
		return
	}
	jobs, err := c.sched.Jobs(ctx, nodes)
	if err != nil {
		c.schedError("jobs", nodes, err)
		return
	}
	if c.save(); c.fenced != nil { // a replica that no longer leads signals nothing
		return
	}
	if c.st.Signaled == nil {
		c.st.Signaled = map[string]time.Time{}
	}
	for _, j := range jobs {
		full, ok := optedIn(j, cp)
		if !ok || !c.st.Signaled[j.ID].IsZero() {
			continue
		}
		if err := c.sched.Signal(ctx, j.ID, cp.Signal, full); err != nil {
			c.schedError("signal", j.Nodes, fmt.Errorf("job %s: %w", j.ID, err))
			continue
		}
		c.st.Signaled[j.ID] = c.clk.Now()
		c.record(RecSignal, map[string]any{"job": j.ID, "signal": cp.Signal, "full": full, "owner": owner, "nodes": hostlist.Compress(j.Nodes)})
		c.metrics.Action("signal", 1)
	}
	c.save()
}

// optedIn: a comment word Tag (Tag=full: every step too), or a listed
// QOS.
func optedIn(j scheduler.Job, cp Checkpoint) (full, ok bool) {
	for _, w := range strings.FieldsFunc(j.Comment, func(r rune) bool { return r == ' ' || r == ',' || r == ';' }) {
		switch w {
		case cp.Tag:
			return false, true
		case cp.Tag + "=full":
			return true, true
		}
	}
	return false, j.QOS != "" && slices.Contains(cp.QOS, j.QOS)
}

func (c *Controller) schedError(op string, nodes []string, err error) {
	c.record(RecError, map[string]any{"op": op, "nodes": hostlist.Compress(nodes), "error": err.Error()})
	c.metrics.Error(op)
	c.log.Error("scheduler", "op", op, "nodes", len(nodes), "error", err)
}
