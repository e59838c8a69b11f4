// Package fwupdate applies one node's firmware updates on its BMC
// through Redfish, step by step: check (the FirmwareInventory already
// at the target: nothing written, so a resumed rollout repeats no
// update), update (SimpleUpdate with the granted ImageURI, or a
// multipart push), task (its monitor followed to Completed on a
// Clock), reboot (a BMC that reboots after its own update: waited for,
// logged in again), reset (the system's, the Manager's or the
// chassis's, as the update needs) and readback (the version must be
// the target's). It writes only what the binding declares writable
// (Firmware, Reset), records instead of writing in a dry run, and
// reports every step through an observer: the stage engine journals
// what it reports. No ledger, no scheduler, no files.
package fwupdate

import (
	"context"
	"fmt"
	"time"

	"github.com/stmcginnis/gofish"

	"github.com/seamdc/seam/internal/binding"
	"github.com/seamdc/seam/internal/clock"
	"github.com/seamdc/seam/internal/dryrun"
	"github.com/seamdc/seam/internal/firmware"
)

// Steps an Event or an Error names.
const (
	StepCheck    = "check"
	StepUpdate   = "update"
	StepTask     = "task"
	StepReboot   = "reboot"
	StepReset    = "reset"
	StepReadback = "readback"
)

// Update is one component's update on the BMC, in the plan's order.
type Update struct {
	Component string
	From, To  string
	// ImageURI is the URL the BMC fetches the image from, granted by
	// the caller for this update (fwimage.Server.Grant): its token is
	// never shown.
	ImageURI string
	// ImageFile is the image's file, for a multipart push
	// (Options.Push); SHA256 (bare hex) is checked against it first.
	ImageFile string
	SHA256    string
	Targets   []string // FirmwareInventory members; none or unknown: resolved by component
	ApplyTime string   // firmware.Immediate, firmware.OnReset
	Reset     string   // firmware.ResetNone, ResetSystem, ResetManager, ResetChassis
	// Resume is a task monitor of an interrupted run's update: it is
	// followed instead of starting a new update.
	Resume string
	// MaybeSent is when an interrupted run was about to send this update
	// without learning its task monitor (zero: it never was). Before
	// sending it again, Apply adopts the BMC's update task begun since
	// then, if there is one, and follows it instead.
	MaybeSent time.Time
}

// FromPlan is a plan's update with the URL granted for it.
func FromPlan(u firmware.Update, imageURI string) Update {
	return Update{Component: u.Component, From: u.From, To: u.To, ImageURI: imageURI, SHA256: u.SHA256,
		Targets: u.Targets, ApplyTime: u.ApplyTime, Reset: u.Reset}
}

// Options are how Apply reaches the BMC, what it may write and how
// long it waits.
type Options struct {
	// Login logs in to the BMC again (after its reboot ended the
	// session, or when Apply is given no client): bmchttp.Access's
	// Connect with the BMC's name and URL. Apply logs out of the
	// sessions it made.
	Login func(ctx context.Context) (*gofish.APIClient, error)
	// Writable is the binding's allow-list (binding.BMCs.Writable): an
	// update needs binding.ControlFirmware, a reset binding.ControlReset.
	// nil allows nothing.
	Writable func(bmc, control string) error
	// DryRun, when set, reads the BMC as for the updates and records
	// the requests it would send there instead.
	DryRun *dryrun.Recorder
	// Push sends the image in a multipart push where the BMC offers one
	// and the update names its file; else SimpleUpdate.
	Push bool
	// URL is the BMC's, for the dry run's record.
	URL string
	// TaskTimeout bounds an update's task (default 30 min),
	// ResetTimeout a reboot or reset until the BMC answers and the
	// version reads back (default 15 min), on the clock; Poll is the
	// wait between reads (default 5 s; a task monitor's Retry-After
	// wins).
	TaskTimeout, ResetTimeout, Poll time.Duration
}

func (o Options) withDefaults() Options {
	if o.TaskTimeout <= 0 {
		o.TaskTimeout = 30 * time.Minute
	}
	if o.ResetTimeout <= 0 {
		o.ResetTimeout = 15 * time.Minute
	}
	if o.Poll <= 0 {
		o.Poll = 5 * time.Second
	}
	return o
}

// Event is one step's news, for the journal and for people.
type Event struct {
	At        time.Time `json:"at"`
	Node      string    `json:"node"`
	BMC       string    `json:"bmc"`
	Component string    `json:"component"`
	Step      string    `json:"step"`
	What      string    `json:"what"`
	// Percent is a task's progress (step task).
	Percent int `json:"percent,omitempty"`
	// TaskMonitor is the update's resume point once the BMC took it.
	TaskMonitor string `json:"task_monitor,omitempty"`
	// Sending is set on the event just before an update is sent: a
	// journal makes it durable first, so that a run stopped after it
	// knows the update may have been taken (Update.MaybeSent).
	Sending bool `json:"sending,omitempty"`
}

// Result is one update's outcome.
type Result struct {
	Component string   `json:"component"`
	From      string   `json:"from"`
	To        string   `json:"to"`
	Found     string   `json:"found"` // the version the check read
	Version   string   `json:"version,omitempty"`
	Targets   []string `json:"targets"`
	// Current: already at the target; nothing was written.
	Current bool `json:"current,omitempty"`
	// Sent: this run sent the update (not a resumed one's).
	Sent        bool   `json:"sent,omitempty"`
	TaskMonitor string `json:"task_monitor,omitempty"`
	Reset       string `json:"reset,omitempty"` // the reset sent
	Would       bool   `json:"would,omitempty"` // a dry run's
	Err         error  `json:"-"`
}

// Apply applies node's updates on the BMC called bmcName, in order,
// through c (nil: Apply logs in through opt.Login), and stops at the
// first that fails; the results are those it reached. Nothing is sent
// unless the binding allows every write the updates need. obs (may be
// nil) hears every step.
func Apply(ctx context.Context, clk clock.Clock, c *gofish.APIClient, node, bmcName string, updates []Update, opt Options, obs func(Event)) ([]Result, error) {
	opt = opt.withDefaults()
	a := &applier{ctx: ctx, clk: clk, node: node, bmc: bmcName, opt: opt, obs: obs, red: newRedactor(updates)}
	if err := a.allowed(updates); err != nil {
		return nil, err
	}
	a.conn = &conn{ctx: ctx, c: c, login: opt.Login}
	defer a.conn.logout()
	var out []Result
	for _, u := range updates {
		r, err := a.one(u)
		out = append(out, r)
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// allowed checks every write the updates need against the allow-list,
// before any request.
func (a *applier) allowed(updates []Update) error {
	if a.opt.Writable == nil {
		return &Error{Node: a.node, BMC: a.bmc, Step: StepCheck, Msg: "no allow-list given: nothing is written",
			Next: "pass the binding's bmcs.writable (binding.BMCs.Writable)"}
	}
	needs := []string{binding.ControlFirmware}
	for _, u := range updates {
		if u.Reset != "" && u.Reset != firmware.ResetNone {
			needs = append(needs, binding.ControlReset)
			break
		}
	}
	for _, ctl := range needs {
		if err := a.opt.Writable(a.bmc, ctl); err != nil {
			return &Error{Node: a.node, BMC: a.bmc, Step: StepCheck, Msg: "refused before any request", Err: err,
				Next: "declare it in the binding, or leave this BMC out of the rollout"}
		}
	}
	return nil
}

// applier is one Apply's state.
type applier struct {
	ctx       context.Context
	clk       clock.Clock
	node, bmc string
	opt       Options
	obs       func(Event)
	red       *redactor
	conn      *conn
	inventory []member // the FirmwareInventory, read once
}

// emit reports an event, redacted.
func (a *applier) emit(u Update, step, what string, f func(*Event)) {
	if a.obs == nil {
		return
	}
	e := Event{At: a.clk.Now(), Node: a.node, BMC: a.bmc, Component: u.Component, Step: step, What: a.red.text(what)}
	if f != nil {
		f(&e)
	}
	a.obs(e)
}

// fail is an error of the update at step.
func (a *applier) fail(u Update, step, msg, bmcMsg, next string, err error) *Error {
	return &Error{Node: a.node, BMC: a.bmc, Component: u.Component, Version: u.To, Step: step, Msg: msg, BMCMessage: bmcMsg, Next: next, Err: err, red: a.red}
}

// since is the time elapsed on the clock since start.
func (a *applier) since(start time.Time) time.Duration { return a.clk.Now().Sub(start) }

// sleep waits d on the clock.
func (a *applier) sleep(d time.Duration) error { return a.clk.Sleep(a.ctx, d) }

// one is one update, step by step.
func (a *applier) one(u Update) (Result, error) {
	r := Result{Component: u.Component, From: u.From, To: u.To}
	targets, found, err := a.check(u)
	r.Targets, r.Found = memberIDs(targets), found
	if err != nil {
		r.Err = err
		return r, err
	}
	if allAt(targets, u.To) {
		r.Current, r.Version = true, u.To
		a.emit(u, StepCheck, fmt.Sprintf("already at %s: nothing to do", u.To), nil)
		return r, nil
	}
	if err := a.install(u, targets, &r); err != nil {
		r.Err = err
		return r, err
	}
	return r, nil
}

// install updates the targets (or follows an interrupted run's
// update), follows the task, resets and reads back.
func (a *applier) install(u Update, targets []member, r *Result) error {
	monitor := u.Resume
	if monitor == "" && !u.MaybeSent.IsZero() {
		m, err := a.adopt(u)
		if err != nil {
			return err
		}
		u.Resume, monitor = m, m
	}
	if monitor == "" {
		m, err := a.start(u, targets, r)
		if err != nil {
			return err
		}
		if r.Would {
			_, err := a.reset(u, targets, u.ApplyTime != firmware.OnReset && rebootsBMC(targets))
			return err
		}
		monitor = m
	} else {
		a.emit(u, StepTask, "resuming: following the task of an interrupted run", func(e *Event) { e.TaskMonitor = monitor })
	}
	r.TaskMonitor = monitor
	if monitor == "" { // taken at once, no task: the version decides
		return a.activate(u, targets, r, outcome{})
	}
	out, err := a.follow(u, monitor)
	if err != nil {
		return err
	}
	if out.gone && monitor == u.Resume {
		if monitor, err = a.resumeGone(u, targets, r); err != nil || monitor == "" {
			return err
		}
		r.TaskMonitor = monitor
		if out, err = a.follow(u, monitor); err != nil {
			return err
		}
	}
	if out.gone {
		a.emit(u, StepTask, fmt.Sprintf("the BMC no longer knows task %s (404): the version read back decides", monitor), nil)
	}
	return a.activate(u, targets, r, out)
}

// activate resets as the update needs and reads the version back. A
// BMC's own firmware applied at once reboots the BMC by itself: that
// reboot is the update's manager reset. The version decides at once
// for an update applied live, once the BMC is back from a reboot seen,
// or at the reset timeout.
func (a *applier) activate(u Update, targets []member, r *Result, out outcome) error {
	selfReboot := u.ApplyTime != firmware.OnReset && rebootsBMC(targets)
	sent, err := a.reset(u, targets, selfReboot || out.rebooted)
	if err != nil {
		return err
	}
	r.Reset = sent
	rb := readback{decisive: out.rebooted, expectDown: selfReboot && !out.rebooted}
	if sent == firmware.ResetManager || sent == firmware.ResetChassis {
		rb.decisive, rb.expectDown = false, true
	}
	if selfReboot || sent != "" {
		rb.wait = a.opt.ResetTimeout
	}
	if sent != "" {
		rb.after = "the " + sent + " reset"
	}
	v, err := a.readback(u, targets, rb)
	r.Version = v
	return err
}

// rebootsBMC reports whether an update of the targets reboots the BMC
// when applied at once: its own firmware (the member belongs to a
// Manager, or is the BMC's).
func rebootsBMC(targets []member) bool {
	for _, m := range targets {
		if m.manager || m.software == "bmc" {
			return true
		}
	}
	return false
}
