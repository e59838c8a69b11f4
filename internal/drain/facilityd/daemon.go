// Package facilityd is the facilityd daemon and its command: one
// collector and one alarm stream (device points through the site's
// profiles and binding, SNMP traps and informs, Alertmanager's webhook,
// controller heartbeats), domains resolved to nodes through the
// inventory, and internal/drain's policy acting on a scheduler; with
// /metrics, /healthz, /readyz and the API that takes signed requests.
package facilityd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/seamdc/seam/internal/alarm"
	"github.com/seamdc/seam/internal/alarm/poll"
	"github.com/seamdc/seam/internal/alarm/trap"
	"github.com/seamdc/seam/internal/binding"
	"github.com/seamdc/seam/internal/clock"
	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/diag"
	"github.com/seamdc/seam/internal/drain"
	"github.com/seamdc/seam/internal/dryrun"
	"github.com/seamdc/seam/internal/lifecycle"
	"github.com/seamdc/seam/internal/probe"
	"github.com/seamdc/seam/internal/scheduler"
	"github.com/seamdc/seam/internal/sign"
	"github.com/seamdc/seam/internal/version"
)

// WatchdogBeat is the heartbeat name of Alertmanager's Watchdog.
const WatchdogBeat = "alertmanager-watchdog"

// Daemon is a configured facilityd.
type Daemon struct {
	Cfg       *Config
	Log       *slog.Logger
	Clock     clock.Clock
	Index     *alarm.Index
	Stream    *alarm.Stream
	Ctl       *drain.Controller
	Beats     *alarm.Beats
	Deadlines *alarm.Deadlines
	Webhook   *alarm.Webhook
	doors     *doors  // the HTTP interface's tokens
	in        *intake // the order events are handled in
	Traps     *trap.Receiver
	Poller    *poll.Poller
	Metrics   *Metrics
	Verifier  drain.Verifier
	Sched     scheduler.Drainer

	contracts *contract.Contracts
	site      *probe.Site
	journal   *drain.Bundle
	journalAt string
	ready     atomic.Bool
	ctx       atomic.Pointer[context.Context]
	loopAt    atomic.Int64 // unix nanoseconds of the main loop's last turn
	dryRun    bool
	lookupEnv func(string) (string, bool)
	problems  []string   // startup problems that do not stop it
	chem      *chemWatch // the loops' water chemistry (chem.go), or nil
	caps      *capWatch  // the power caps kept applied (caps.go), or nil
	// rec is a dry run's: every write facilityd would make (the
	// scheduler, the ledger, the BMCs' caps) is recorded there.
	rec         *dryrun.Recorder
	ledgerStore *lifecycle.Store // the ledger's store, or nil
	// reach checks the scheduler's controller (Slurm's), or is nil;
	// schedDown is why it did not answer at the last check (nil: it did).
	reach     reacher
	schedDown atomic.Pointer[string]
}

// reacher is a scheduler whose controller can be checked: Slurm's.
type reacher interface {
	Reachable(ctx context.Context) error
}

// Options are what New needs beyond the configuration.
type Options struct {
	DryRun bool
	Out    io.Writer // a dry run's commands
	Log    *slog.Logger
	Clock  clock.Clock
	// LookupEnv resolves env: references (default os.LookupEnv).
	LookupEnv func(string) (string, bool)
	// Scheduler replaces the configured one (tests, benchmarks).
	Scheduler scheduler.Drainer
	// Shared replaces the state file and the journal with ones every
	// replica reaches (Kubernetes, kube.go).
	Shared *Shared
}

// dryPeer is the kind of peer the configured scheduler's writes go to.
func (c *Config) dryPeer() string {
	if c.Scheduler.Kind == "kubernetes" {
		return dryrun.Kubernetes
	}
	return dryrun.Scheduler
}

// Shared are a leader's state and journal where both replicas reach
// them, and what to do once fenced.
type Shared struct {
	Store drain.StateStore
	// Claim reads the state and claims it for this leader (the last
	// step before facilityd acts).
	Claim   func(site string) (*drain.State, error)
	Journal drain.Journal
	Fenced  func(error)
	// Epoch and Leader fence the ledger's writes when a lifecycle store
	// keeps the holds (the Lease's transitions, this replica).
	Epoch  int64
	Leader string
}

// New loads the site and builds the daemon; nothing runs yet.
func New(cfg *Config, opt Options) (*Daemon, error) {
	d := &Daemon{Cfg: cfg, Log: opt.Log, Clock: opt.Clock, Metrics: NewMetrics(), Stream: alarm.NewStream(), in: newIntake(), lookupEnv: opt.LookupEnv, dryRun: opt.DryRun}
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	if opt.DryRun {
		d.Log = d.Log.With("dry_run", true)
		d.rec = dryrun.New(opt.Out, d.Log)
	}
	if d.Clock == nil {
		d.Clock = clock.Real{}
	}
	doors, err := loadDoors(cfg)
	if err != nil {
		return nil, err
	}
	d.doors = doors
	if d.lookupEnv == nil {
		d.lookupEnv = os.LookupEnv
	}
	if err := d.loadSite(); err != nil {
		return nil, err
	}
	d.Sched = opt.Scheduler
	if d.Sched == nil {
		d.Sched = d.scheduler()
	}
	d.reach, _ = d.Sched.(reacher)
	switch {
	case d.rec.Active():
		d.Sched = scheduler.DryRun(d.Sched, d.rec, cfg.dryPeer())
	case cfg.Scheduler.Kind == "none" && opt.Scheduler == nil:
		// no scheduler to write: each drain and undrain is printed as it
		// would be sent, the rest (the ledger, the journal) is real
		d.Sched = scheduler.DryRun(d.Sched, dryrun.New(opt.Out, d.Log), "")
		fmt.Fprintln(orDiscard(opt.Out), "facilityd: scheduler none: nothing is sent to a scheduler; each drain and undrain is printed as it would be")
	}
	if err := d.buildController(opt); err != nil {
		d.Close()
		return nil, err
	}
	if err := d.buildSources(); err != nil {
		d.Close()
		return nil, err
	}
	if err := d.buildChemistry(); err != nil {
		d.Close()
		return nil, err
	}
	if err := d.buildCaps(); err != nil {
		d.Close()
		return nil, err
	}
	d.checkMappings()
	return d, nil
}

func (d *Daemon) loadSite() error {
	dir := d.Cfg.Path(d.Cfg.Contracts)
	c, diags, err := contract.Load(dir)
	if err != nil {
		return fmt.Errorf("contracts %s: %w", dir, err)
	}
	if c == nil || diags.Count(diag.Error) > 0 {
		return fmt.Errorf("contracts %s do not load: %s", dir, firstErrors(diags, 3))
	}
	var paths []string
	for _, p := range d.Cfg.Inventory {
		paths = append(paths, d.Cfg.Path(p))
	}
	hd, err := c.ReadInventory(paths)
	if err != nil {
		return err
	}
	if hd.Count(diag.Error) > 0 {
		return fmt.Errorf("handover inventory: %s", firstErrors(hd, 3))
	}
	g, gd := c.Graph()
	if gd.Count(diag.Error) > 0 {
		return fmt.Errorf("inventory graph: %s", firstErrors(gd, 3))
	}
	for _, f := range contract.VetAlarms(c) {
		d.problem("%s: %s", f.Pos, f.Message)
	}
	d.contracts, d.Index = c, alarm.NewIndex(g)
	d.Log.Info("site loaded", "site", d.Index.Site(), "nodes", d.Index.FleetSize(), "largest_module_nodes", d.Index.LargestModule(), "domains", len(d.Index.Domains()))
	return nil
}

func firstErrors(l diag.List, n int) string {
	var out []string
	for _, x := range l {
		if x.Severity == diag.Error && len(out) < n {
			out = append(out, fmt.Sprintf("%s: %s %s", x.Pos, x.Rule, x.Message))
		}
	}
	return strings.Join(out, "; ")
}

func (d *Daemon) problem(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	d.problems = append(d.problems, msg)
	d.Log.Error("configuration", "problem", msg)
	d.Metrics.Refused("config", "mapping")
}

func (d *Daemon) scheduler() scheduler.Drainer {
	switch d.Cfg.Scheduler.Kind {
	case "slurm":
		return &scheduler.Slurm{Conf: d.Cfg.Path(d.Cfg.Scheduler.SlurmConf), Bin: d.Cfg.Path(d.Cfg.Scheduler.Bin),
			Command: scheduler.Command{Timeout: d.Cfg.Scheduler.Timeout.D(30 * time.Second), Log: d.Log.With("scheduler", "slurm")}}
	}
	return noScheduler{}
}

func (d *Daemon) buildController(opt Options) error {
	var store *drain.Store
	st := drain.NewState(d.Index.Site())
	var shared drain.StateStore
	var sharedJournal drain.Journal
	var fenced func(error)
	backend, err := d.openLedger(context.Background())
	if err != nil {
		return err
	}
	var epoch int64
	var leader string
	if sh := opt.Shared; sh != nil && !opt.DryRun {
		shared, sharedJournal, fenced = sh.Store, sh.Journal, sh.Fenced
		epoch, leader = sh.Epoch, sh.Leader
		var err error
		if st, err = sh.Claim(d.Index.Site()); err != nil {
			return err
		}
	} else if d.Cfg.Scheduler.Kind != "kubernetes" || !opt.DryRun {
		// a dry run reads the state (its holds, its refusals), and writes
		// neither it nor a journal
		store = &drain.Store{Path: filepath.Join(d.Cfg.Path(d.Cfg.StateDir), "state.json")}
		var err error
		if st, err = store.Load(d.Index.Site()); err != nil {
			return err
		}
		if opt.DryRun {
			store = nil
		} else {
			j, at, err := drain.OpenJournal(d.Cfg.Path(d.Cfg.StateDir), d.Clock)
			if err != nil {
				return err
			}
			d.journal, d.journalAt = j, at
		}
	}
	var sil drain.Silencer
	if d.Cfg.Alertmanager != "" {
		sil = &alarm.Silences{URL: d.Cfg.Alertmanager, Now: d.Clock.Now}
	}
	pcfg := drain.Config{Actions: d.Cfg.Actions, ClearFor: d.Cfg.ClearFor.D(0), DryRun: opt.DryRun,
		Storm:      drain.Storm{MaxNodes: d.Cfg.Storm.MaxNodes, MaxFraction: d.Cfg.Storm.MaxFraction, Window: d.Cfg.Storm.Window.D(0)},
		Flap:       drain.Flap{Raises: d.Cfg.Flap.Raises, Within: d.Cfg.Flap.Within.D(0), HoldDown: d.Cfg.Flap.HoldDown.D(0)},
		Checkpoint: drain.Checkpoint{Enabled: d.Cfg.Checkpoint.Enabled, Tag: d.Cfg.Checkpoint.Tag, QOS: d.Cfg.Checkpoint.QOS, Signal: d.Cfg.Checkpoint.Signal},
	}
	d.Beats = alarm.NewBeats(d.Observe)
	if d.watchesAlarmPath() {
		pcfg.AlarmPath = func() bool { return d.Beats.Alive(WatchdogBeat) }
	}
	var journal drain.Journal
	switch {
	case sharedJournal != nil:
		journal = sharedJournal
	case d.journal != nil:
		journal = d.journal
	default:
		journal = &printJournal{w: opt.Out}
	}
	d.Ctl = drain.New(pcfg, drain.Deps{Index: d.Index, Scheduler: d.Sched, Ledger: backend, Epoch: epoch, Leader: leader, Stream: d.Stream, Journal: journal, Store: store,
		StateStore: shared, Fenced: fenced, State: st, Clock: d.Clock, Log: d.Log.With("part", "drain"), Silences: sil, Raise: d.raise, Metrics: d.Metrics, Out: opt.Out})
	d.Metrics.attach(d.Stream, d.Ctl)
	if f := d.Cfg.Approvals.AllowedSigners; f != "" {
		as, err := sign.ReadAllowedSigners(d.Cfg.Path(f))
		if err != nil {
			return err
		}
		d.Verifier = drain.Verifier{Allowed: as, Site: d.Index.Site(), MaxAge: d.Cfg.Approvals.MaxAge.D(0)}
	}
	return nil
}

func (d *Daemon) watchesAlarmPath() bool {
	return d.Cfg.AlarmPath.Required || d.Cfg.AlarmPath.Watchdog > 0
}

func (d *Daemon) buildSources() error {
	now := d.Clock.Now()
	siteDomain := alarm.Domain{Kind: alarm.Site, Value: d.Index.Site()}
	if d.watchesAlarmPath() {
		if err := d.Beats.Add(alarm.Heartbeat{Name: WatchdogBeat, Type: alarm.AlarmPathDead, Domain: siteDomain, Timeout: d.Cfg.AlarmPath.Watchdog.D(3 * time.Minute)}, now); err != nil {
			return err
		}
	}
	for _, h := range d.Cfg.Heartbeats {
		dom, err := d.Index.Resolve("module=" + h.Module)
		if err != nil {
			return fmt.Errorf("heartbeat %s: %w", h.Name, err)
		}
		if err := d.Beats.Add(alarm.Heartbeat{Name: h.Name, Type: alarm.ControllerSilent, Domain: dom, Timeout: h.Timeout.D(0)}, now); err != nil {
			return err
		}
	}
	d.Webhook = &alarm.Webhook{Domains: d.Index, Sink: d.webhookSink, Taken: d.webhookTaken, Watchdog: d.watchdog, Now: d.Clock.Now, Log: d.Log.With("source", "alertmanager"),
		DedupTTL: d.Cfg.DedupTTL.D(0),
		Reject:   func(reason string, err error) { d.Metrics.Refused("alertmanager", reason) }}
	if err := d.buildPoller(); err != nil {
		return err
	}
	if err := d.buildTraps(); err != nil {
		return err
	}
	d.buildDeadlines()
	return nil
}

func (d *Daemon) buildPoller() error {
	if d.Cfg.Binding == "" {
		return nil
	}
	b, diags, err := binding.Load(d.Cfg.Path(d.Cfg.Binding))
	if err != nil {
		return fmt.Errorf("binding: %w", err)
	}
	if diags.Count(diag.Error) > 0 {
		return fmt.Errorf("binding %s: %s", d.Cfg.Binding, firstErrors(diags, 3))
	}
	var channels []poll.Channel
	for _, bd := range d.contracts.Boundaries {
		for _, ch := range bd.Channels {
			channels = append(channels, poll.Channel{Name: ch.Name, Quantity: string(ch.Quantity), At: ch.At.To, Consumer: bd.Consumer.To})
		}
	}
	points, errs := poll.Points(channels, b, d.Index)
	for _, err := range errs {
		d.problem("%v", err)
	}
	points = append(points, poll.Siblings(points, b)...)
	for _, pc := range d.Cfg.Points {
		dom, err := d.Index.Resolve(pc.Domain)
		if err != nil {
			return fmt.Errorf("points: %s/%s: %w", pc.Device, pc.Point, err)
		}
		t := pc.Type
		if t == "" {
			def, ok := alarm.ForPoint(pc.Point)
			if !ok {
				return fmt.Errorf("points: %s/%s: the point's name is no alarm of the vocabulary: give its type", pc.Device, pc.Point)
			}
			t = def.Type
		}
		points = append(points, poll.Point{Device: pc.Device, Point: pc.Point, Type: t, Domain: dom})
	}
	var counters []poll.Counter
	for _, h := range d.Cfg.Heartbeats {
		if h.Device != "" {
			counters = append(counters, poll.Counter{Device: h.Device, Point: h.Point, Heartbeat: h.Name})
		}
	}
	site, err := probe.OpenSite(b, probe.Options{Clock: d.Clock, Logger: d.Log.With("part", "probe"), LookupEnv: d.lookupEnv})
	if err != nil {
		return err
	}
	d.site = site
	byPoint := map[string][]string{}
	for _, ch := range b.Channels {
		byPoint[ch.DeviceName+"/"+ch.PointName] = append(byPoint[ch.DeviceName+"/"+ch.PointName], ch.Name)
	}
	pointsBy := map[string][]poll.Point{}
	for _, pt := range points {
		pointsBy[pt.Device+"/"+pt.Point] = append(pointsBy[pt.Device+"/"+pt.Point], pt)
	}
	d.Poller = &poll.Poller{Devices: site.Devices, Points: points, Counters: counters, Period: d.Cfg.Poll.Period.D(500 * time.Millisecond),
		Silence: d.Cfg.Poll.Silence.D(5 * time.Second), Sink: d.Observe, Beat: d.beat, Sample: d.withHeadroom(d.Metrics.sampler(byPoint, pointsBy), byPoint, site.Devices), Log: d.Log.With("part", "poll")}
	return nil
}

func (d *Daemon) beat(name string, at time.Time) {
	if err := d.Beats.Beat(name, at); err != nil {
		d.Log.Warn("heartbeat", "error", err)
	}
}

func (d *Daemon) buildTraps() error {
	tc := d.Cfg.Traps
	if tc == nil {
		return nil
	}
	resolve := func(ref, what string) (string, error) {
		return binding.Secret{Ref: ref, What: what, Dir: d.Cfg.dir}.Resolve(d.lookupEnv)
	}
	r := &trap.Receiver{Listen: tc.Listen, EngineID: tc.EngineID, Agents: tc.Agents, Domains: d.Index, Sink: d.Observe, Log: d.Log.With("source", "trap"),
		Now: d.Clock.Now, Reject: func(reason string, err error) { d.Metrics.Refused("trap", reason) }}
	for i, ref := range tc.Communities {
		c, err := resolve(ref, fmt.Sprintf("traps.communities[%d]", i))
		if err != nil {
			return err
		}
		r.Communities = append(r.Communities, c)
	}
	for _, u := range tc.Users {
		auth, err := resolve(u.AuthPass, "auth passphrase of trap user "+u.Name)
		if err != nil {
			return err
		}
		priv, err := resolve(u.PrivPass, "priv passphrase of trap user "+u.Name)
		if err != nil {
			return err
		}
		r.Users = append(r.Users, trap.User{Name: u.Name, AuthProtocol: u.AuthProtocol, AuthPassword: auth, PrivProtocol: u.PrivProtocol, PrivPassword: priv})
	}
	for _, ru := range tc.Rules {
		if ru.Domain != "" {
			if _, err := d.Index.Resolve(ru.Domain); err != nil {
				return fmt.Errorf("traps: rule %s: %w", ru.OID, err)
			}
		}
		r.Rules = append(r.Rules, trap.Rule{OID: ru.OID, Type: ru.Type, Active: ru.Active, Domain: ru.Domain})
	}
	d.Traps = r
	return nil
}

// buildDeadlines turns the contract's alarm promises into deadlines:
// for each failure event whose precursor the vocabulary knows (a pump
// fault for a pump trip), the alarm must follow within alarm_within.
func (d *Daemon) buildDeadlines() {
	type key struct {
		pre, exp alarm.Type
		dom      alarm.Domain
	}
	best := map[key]alarm.Expectation{}
	for _, p := range d.contracts.AlarmPromises() {
		ev, ok := alarm.ForEvent(p.Event)
		exp, ok2 := alarm.ForPoint(p.Channel)
		if !ok || !ok2 || ev.Precursor == "" {
			continue
		}
		dom, ok := d.Index.OfElement(p.At)
		if !ok {
			continue
		}
		k := key{ev.Precursor, exp.Type, dom}
		if e, ok := best[k]; !ok || p.Within < e.Within {
			best[k] = alarm.Expectation{Clause: p.Clause, Event: p.Event, Precursor: ev.Precursor, Expect: exp.Type, Domain: dom, Within: p.Within}
		}
	}
	var exps []alarm.Expectation
	for _, e := range best {
		exps = append(exps, e)
	}
	slices.SortFunc(exps, func(a, b alarm.Expectation) int {
		return strings.Compare(a.Domain.String()+a.Clause, b.Domain.String()+b.Clause)
	})
	d.Deadlines = alarm.NewDeadlines(exps, func(t alarm.Type, dom alarm.Domain) bool {
		a, ok := d.Stream.Get(t, dom)
		return ok && a.Active
	}, d.raise) // from the handler, or its own ticker: queued
}

// checkMappings reports every alarm point, trap rule and heartbeat whose
// alarm drains and whose domain has no nodes: such an alarm could never
// drain anything. facilityd starts anyway (the rest of the site is
// covered) and raises unmapped_alarm for each.
func (d *Daemon) checkMappings() {
	check := func(t alarm.Type, dom alarm.Domain, what string) {
		if d.Ctl.ActionFor(t) == drain.Drain && len(d.Index.Nodes(dom)) == 0 {
			d.problem("%s raises %s for %s, which the inventory maps to no nodes: it can never drain anything", what, t, dom)
			d.Observe(alarm.Observation{Type: alarm.UnmappedAlarm, Domain: dom, Active: true, Kind: alarm.FromFacilityd, Source: "config:" + what, At: d.Clock.Now(),
				Detail: fmt.Sprintf("%s raises %s for %s, which has no nodes", what, t, dom)})
		}
	}
	if d.Poller != nil {
		for _, p := range d.Poller.Points {
			check(p.Type, p.Domain, "point "+p.Device+"/"+p.Point)
		}
	}
	if d.Traps != nil {
		for _, r := range d.Traps.Rules {
			if dom, err := d.Index.Resolve(r.Domain); err == nil && r.Active {
				check(r.Type, dom, "trap rule "+r.OID)
			}
		}
	}
}

// Problems are the start-up problems that did not stop facilityd.
func (d *Daemon) Problems() []string { return slices.Clone(d.problems) }

// Observe is the one intake: every source's observation goes through
// it into the stream, the deadlines and the controller.
// errStarting answers a delivery before facilityd takes alarms: 503,
// and Alertmanager sends it again.
var errStarting = fmt.Errorf("facilityd is starting: %w", alarm.ErrTransient)

func (d *Daemon) watchdog(at time.Time) {
	d.Metrics.Watchdog(at)
	if d.watchesAlarmPath() {
		d.beat(WatchdogBeat, at)
	}
}

// Run starts every source and runs until ctx is done.
func (d *Daemon) Run(ctx context.Context) error {
	d.ctx.Store(&ctx)
	if d.reach != nil {
		d.checkScheduler(ctx)
	}
	d.Ctl.Start(ctx, map[string]any{"version": version.Version, "site": d.Index.Site(), "nodes": d.Index.FleetSize(), "journal": d.journalAt,
		"dry_run": d.dryRun, "problems": d.problems})
	if d.Traps != nil {
		if err := d.Traps.Start(); err != nil {
			return err
		}
	}
	g := clock.NewGroup(d.Clock)
	if d.Poller != nil {
		g.Go(func() { d.Poller.Run(ctx, d.Clock) })
	}
	g.Go(func() { d.Beats.Run(ctx, d.Clock, time.Second) })
	g.Go(func() { d.Deadlines.Run(ctx, d.Clock, 100*time.Millisecond) })
	g.Go(func() { d.loop(ctx) })
	g.Go(func() { d.handler(ctx) })
	if d.chem != nil {
		g.Go(func() { d.chem.run(ctx) })
	}
	if d.caps != nil {
		g.Go(func() { d.caps.run(ctx) })
	}
	d.ready.Store(true)
	d.Log.Info("facilityd running", "site", d.Index.Site(), "listen", d.Cfg.Listen, "journal", d.journalAt)
	g.Wait()
	return nil
}

// loop beats facilityd's own heartbeat every second and, every
// Reconcile, checks the scheduler's controller and reconciles with it.
func (d *Daemon) loop(ctx context.Context) {
	every := d.Cfg.Reconcile.D(30 * time.Second)
	next := d.Clock.Now().Add(every)
	for {
		now := d.Clock.Now()
		d.Metrics.Beat(now)
		d.loopAt.Store(now.UnixNano())
		if err := d.Clock.Sleep(ctx, time.Second); err != nil {
			return
		}
		if now := d.Clock.Now(); !now.Before(next) {
			if d.reach != nil {
				d.checkScheduler(ctx)
			}
			d.Ctl.Reconcile(ctx)
			next = now.Add(every)
		}
	}
}

// checkScheduler checks the scheduler's controller once (at start, then
// before each reconcile), keeps the answer for /metrics and /v1/status,
// and logs it when it changed. Unreachable, facilityd runs on as it
// always has: each hold is placed in the ledger, and the drains that
// could not be sent go out when the ledger reconciles with a scheduler
// that answers.
func (d *Daemon) checkScheduler(ctx context.Context) {
	err := d.reach.Reachable(ctx)
	if ctx.Err() != nil {
		return // stopping: no answer is no news
	}
	was := d.schedDown.Load() != nil
	if err == nil {
		d.schedDown.Store(nil)
		d.Metrics.SchedulerUnreachable(false)
		if was {
			d.Log.Info("the scheduler answers again: the drains that waited are sent now", "scheduler", d.Cfg.Scheduler.Kind)
		}
		return
	}
	var u *scheduler.UnreachableError
	if errors.As(err, &u) {
		u.Hint = "check scheduler.slurm_conf in facilityd's configuration, and that slurmctld runs"
	}
	msg := err.Error()
	d.schedDown.Store(&msg)
	d.Metrics.SchedulerUnreachable(true)
	if !was {
		d.Log.Error("the scheduler is unreachable: facilityd runs on, keeps each hold in its ledger, and sends the drains when it answers (checked every reconcile period)",
			"scheduler", d.Cfg.Scheduler.Kind, "error", msg)
	}
}

// Ready reports whether facilityd takes alarms.
func (d *Daemon) Ready() bool { return d.ready.Load() }

// Close stops the sources and closes the journal.
func (d *Daemon) Close() error {
	var errs []error
	if d.Traps != nil {
		d.Traps.Close()
	}
	if d.chem != nil {
		d.chem.close()
	}
	if d.site != nil {
		errs = append(errs, d.site.Close())
	}
	if d.journal != nil {
		errs = append(errs, d.journal.Close())
	}
	if d.ledgerStore != nil {
		errs = append(errs, d.ledgerStore.Close())
	}
	return errors.Join(errs...)
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

// noScheduler is "scheduler: none": every node reads idle, and it is
// only ever used through its recording twin, which prints each drain
// and undrain instead of sending it (a laptop, the demo).
type noScheduler struct{}

func (noScheduler) Status(_ context.Context, names []string) (scheduler.Status, error) {
	st := scheduler.Status{Nodes: map[string]scheduler.NodeStatus{}}
	for _, n := range names {
		st.Nodes[n] = scheduler.NodeStatus{Name: n, State: "idle"}
	}
	return st, nil
}
func (noScheduler) Drain(context.Context, []string, string) error {
	return errors.New("no scheduler configured (scheduler.kind none)")
}
func (noScheduler) Undrain(context.Context, []string) error {
	return errors.New("no scheduler configured (scheduler.kind none)")
}
func (noScheduler) Jobs(context.Context, []string) ([]scheduler.Job, error) { return nil, nil }
func (noScheduler) Signal(context.Context, string, string, bool) error {
	return errors.New("no scheduler configured (scheduler.kind none)")
}
func (noScheduler) Commands(op scheduler.Op) []string { return (&scheduler.Slurm{}).Commands(op) }

// printJournal is a dry run's journal: each record on a line.
type printJournal struct{ w io.Writer }

func (p *printJournal) Record(kind string, data any) error { return nil }
