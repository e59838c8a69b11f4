package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seamdc/seam/internal/clock"
	"github.com/seamdc/seam/internal/evidence"
	"github.com/seamdc/seam/internal/grade"
	"github.com/seamdc/seam/internal/plan"
	"github.com/seamdc/seam/internal/results"
	"github.com/seamdc/seam/internal/tsa"
	"github.com/seamdc/seam/internal/version"
)

// Config is everything a run needs.
type Config struct {
	Plan      *plan.Plan
	PlanBytes []byte // the plan as read: its digest is recorded, its copy kept
	Site      *Site
	Dir       string // the evidence bundle
	Resume    bool   // continue the bundle in Dir after its last completed case
	Clock     clock.Clock
	// Log receives the run's log besides the bundle's run.log (JSON).
	Log      *slog.Logger
	Operator Operator
	// Progress shows the run to a person: a redrawn status line when
	// Terminal is set, plain lines otherwise; nil shows nothing.
	Progress io.Writer
	Terminal bool
	// Signer, if set, seals the bundle at every case end, at the run's
	// end and at least every minute, and signs the manifest (SSHSIG,
	// namespace seam-evidence); nil writes an unsigned bundle.
	Signer evidence.Signer
	// TimeStamp, if set, time-stamps the run's seals in the background
	// (RFC 3161; evidence.Options.TimeStamp).
	TimeStamp *tsa.Authority
	// ContractsDigest is the digest of the contracts the plan was checked
	// against; Shortened says what the run shortened, for the evidence.
	ContractsDigest string
	Shortened       string
	// Heartbeat is the load banks' heartbeat period (default 1 s of site
	// time); GapSlack is added to twice each channel's sampling period to
	// give the longest gap a graded window may have (default 50 ms × the
	// site's time scale).
	Heartbeat time.Duration
	GapSlack  time.Duration
	// Cases, From and Until choose what this session runs (sat run
	// --case, --from, --until): Cases the cases named, each again when it
	// completed before (a new attempt: the last counts); From the cases
	// from that one on that have not completed; Until stops after that
	// case. Without Cases and From every case not completed runs. A
	// session that leaves cases not run ends in a hand-over: load zeroed,
	// the bundle left to resume, never finished.
	Cases       []string
	From, Until string
	// Retry runs the one case in Cases again in the finished bundle in
	// Dir, as an amendment the Signer signs (sat run --retry).
	Retry bool
	// Observer, if set, sees the run as it goes (sat run --ui); the run
	// never waits for it (observe.go).
	Observer Observer
}

// Runner runs one plan. Interrupt and Kill may be called from another
// goroutine (a signal handler) while Run runs.
type Runner struct {
	cfg   Config
	clk   clock.Clock
	log   *slog.Logger
	b     *evidence.Bundle
	logF  io.Closer
	res   *results.Results
	prog  *progress
	obs   *observeQueue  // nil without an Observer
	index map[string]int // case id → index in res.Cases

	energised atomic.Bool  // the risk was accepted and the banks are being prepared
	aborting  *clock.Group // the abort's zeroing

	mu        sync.Mutex
	current   string // the case running
	caseStop  context.CancelFunc
	abortInfo *results.Abort
	aborted   chan struct{}
	outcomes  map[string]grade.Outcome
	attempts  map[string]int    // case → its attempts that ended
	amender   *evidence.Amender // a retry's amendment
	paused    *pauseState       // a pause asked for or held
	trips     map[string]string // load bank → its watchdog trip, until reset
	tripped   string            // the trip that ended the case running
}

// ErrPreflight is returned (wrapped) when the run stopped before
// energising: preflight problems or no risk acceptance.
var ErrPreflight = errors.New("not energised")

// New checks the configuration and returns a runner.
func New(cfg Config) (*Runner, error) {
	switch {
	case cfg.Plan == nil || len(cfg.PlanBytes) == 0:
		return nil, errors.New("runner: no plan")
	case cfg.Site == nil:
		return nil, errors.New("runner: no site")
	case cfg.Operator == nil:
		return nil, errors.New("runner: no operator")
	case cfg.Dir == "":
		return nil, errors.New("runner: no evidence directory")
	case cfg.Retry && cfg.Signer == nil:
		return nil, errors.New("a retry is a signed amendment of the bundle: give --sign-key KEY")
	case cfg.Retry && cfg.Resume:
		return nil, errors.New("runner: a retry amends a finished run; it does not resume one")
	}
	if err := checkSelection(cfg); err != nil {
		return nil, err
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = time.Second
	}
	if cfg.GapSlack <= 0 {
		cfg.GapSlack = time.Duration(float64(50*time.Millisecond) * cfg.Site.wallScale())
	}
	r := &Runner{cfg: cfg, clk: cfg.Clock, aborted: make(chan struct{}), aborting: clock.NewGroup(cfg.Clock),
		outcomes: map[string]grade.Outcome{}, attempts: map[string]int{}, index: map[string]int{}, trips: map[string]string{}}
	r.prog = newProgress(cfg.Progress, cfg.Terminal, cfg.Plan, r.clk)
	r.obs = newObserveQueue(cfg.Observer, cfg.Plan, r.clk.Now(), observeQueueLen)
	return r, nil
}

// Digest is "sha256:<hex>" of b.
func Digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Run runs the plan and returns the results; their Outcome says how it
// went (Results.ExitCode). An error means the tool failed: the bundle
// could not be written, or the run stopped before energising
// (ErrPreflight), and says why. The run's goroutines are participants
// of its clock (clock.Go): Run must not be called by one.
func (r *Runner) Run(ctx context.Context) (*results.Results, error) {
	var res *results.Results
	var err error
	done := make(chan struct{})
	clock.Go(r.clk, func() {
		defer close(done)
		res, err = r.run(ctx)
	})
	<-done
	return res, err
}

func (r *Runner) run(ctx context.Context) (*results.Results, error) {
	if err := r.open(); err != nil {
		return nil, err
	}
	defer r.closeLog()
	defer r.prog.stop()
	defer r.observeEnd()
	r.observeRun()
	hbCtx, stopBeats := context.WithCancel(context.Background())
	beats := r.startHeartbeats(hbCtx)
	beats.Go(func() { r.syncEverySecond(hbCtx) })
	// the heartbeats live until every bank is zeroed
	halt := func() { stopBeats(); beats.Wait() }
	defer halt()

	if err := r.energise(ctx); err != nil {
		halt()
		return r.stopped(err)
	}
	for i, c := range r.cfg.Plan.Cases {
		if r.isAborted() {
			break
		}
		if !r.selected(i, c) {
			continue
		}
		for r.runCase(ctx, i, c) && r.hold(ctx, c.ID) {
		}
		if c.ID == r.cfg.Until {
			break
		}
	}
	if !r.isAborted() {
		r.handover()
		r.zeroAll("the session ended")
	}
	r.waitZeroed()
	halt()
	return r.finish()
}

// waitZeroed waits for an abort's zeroing and its records.
func (r *Runner) waitZeroed() { r.aborting.Wait() }

// energise preflights, asks for risk acceptance and prepares the banks.
func (r *Runner) energise(ctx context.Context) error {
	if problems := r.preflight(ctx); len(problems) > 0 {
		return fmt.Errorf("%w: preflight found %d problem(s):\n  %s", ErrPreflight, len(problems), joinLines(problems))
	}
	if err := r.acceptRisk(ctx); err != nil {
		return fmt.Errorf("%w: %v", ErrPreflight, err)
	}
	r.energised.Store(true) // from here on, the banks may carry load
	if err := r.prepareBanks(ctx); err != nil {
		r.Abort(results.CauseFatal, err.Error(), nil)
		return nil
	}
	return nil
}

// stopped ends a run that never energised: results with every case not
// run, the bundle synced and left resumable.
func (r *Runner) stopped(cause error) (*results.Results, error) {
	r.log.Info("run stopped before energising", "err", cause)
	r.append("stopped", "", map[string]string{"reason": cause.Error()})
	if r.amender != nil { // nothing ran: the bundle stays as it was
		return r.res, errors.Join(cause, r.amender.Abandon())
	}
	r.fillNotRun("not run: the run stopped before energising")
	r.res.Summarize()
	r.res.Outcome = results.Errored
	if err := r.writeResults(); err != nil {
		return r.res, errors.Join(cause, err)
	}
	return r.res, errors.Join(cause, r.b.Close())
}

// finish writes results.json and, for a run that was not aborted, the
// manifest.
func (r *Runner) finish() (*results.Results, error) {
	now := r.clk.Now().UTC()
	r.res.Run.Ended = &now
	r.waitZeroed()
	r.mu.Lock()
	if r.abortInfo != nil {
		a := *r.abortInfo
		r.res.Abort = &a
	}
	r.mu.Unlock()
	r.fillNotRun(notRunReason(r.res.Abort))
	r.res.Summarize()
	if r.amender != nil {
		return r.finishRetry()
	}
	if err := r.writeResults(); err != nil {
		return r.res, err
	}
	r.prog.done(r.res)
	if r.res.Abort != nil {
		// resumable: no manifest
		return r.res, r.b.Close()
	}
	r.log.Info("run finished", "outcome", r.res.Outcome, "pass", r.res.Counts.Pass, "fail", r.res.Counts.Fail, "error", r.res.Counts.Error)
	r.closeLog()
	_, err := r.b.Finish(evidence.Meta{ToolVersion: version.Version, PlanDigest: r.res.Plan.Digest,
		ContractsDigest: r.cfg.ContractsDigest, BindingDigest: r.cfg.Site.BindingDigest, Outcome: r.res.Outcome})
	return r.res, err
}

func (r *Runner) writeResults() error {
	raw, err := results.Encode(r.res)
	if err != nil {
		return err
	}
	if err := r.b.WriteFile(evidence.ResultsFile, raw); err != nil {
		return err
	}
	return r.b.Seal()
}

// fillNotRun gives every case without a result a SKIPPED one.
func (r *Runner) fillNotRun(reason string) {
	for i := range r.res.Cases {
		c := &r.res.Cases[i]
		if c.Outcome == "" {
			c.Outcome, c.Reason = grade.Skipped, reason
		}
	}
}

// ExitCode maps a run's outcome to sat's exit codes: 0 all passed, 2 a
// test failed, 3 aborted, 1 the tool failed (an ERROR case is the
// harness's or a device's failure, not the product's).
func ExitCode(res *results.Results) int {
	if res.Abort != nil && res.Abort.Cause == results.CauseHandover {
		switch {
		case res.Counts.Fail > 0:
			return 2
		case res.Counts.Error > 0:
			return 1
		}
		return 0
	}
	switch res.Outcome {
	case results.Passed:
		return 0
	case results.Failed:
		return 2
	case results.Aborted:
		return 3
	}
	return 1
}

// syncEverySecond syncs the bundle every second of site time, so that a
// record written before a long quiet wait (an operator's prompt) is
// durable within a second too.
func (r *Runner) syncEverySecond(ctx context.Context) {
	for {
		if err := r.clk.Sleep(ctx, evidence.SyncEvery); err != nil {
			return
		}
		if err := r.b.Sync(); err != nil {
			r.log.Error("evidence: sync", "err", err)
		}
	}
}

func (r *Runner) append(kind, caseID string, data any) {
	if _, err := r.b.Append(kind, caseID, data); err != nil {
		r.log.Error("evidence: cannot append", "kind", kind, "err", err)
	}
}

func (r *Runner) isAborted() bool {
	select {
	case <-r.aborted:
		return true
	default:
		return false
	}
}

func joinLines(xs []string) string {
	out := ""
	for i, x := range xs {
		if i > 0 {
			out += "\n  "
		}
		out += x
	}
	return out
}
