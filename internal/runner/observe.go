package runner

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seamdc/seam/internal/evidence"
	"github.com/seamdc/seam/internal/plan"
	"github.com/seamdc/seam/internal/results"
)

// Observer sees a run as it goes (sat run --ui: the live view). The
// runner never waits for it: events go through a bounded queue that a
// goroutine of its own drains into Observe, and an event that finds
// the queue full is dropped and counted (Event.Dropped). An observer
// only watches: it controls the run through Pause, Unpause and AbortBy,
// the paths the terminal uses.
type Observer interface {
	Observe(Event)
}

// EventKind says what an Event reports.
type EventKind string

// The kinds of events.
const (
	EventRun     EventKind = "run"      // the run started: Cases lists the plan
	EventCase    EventKind = "case"     // a case started: Case
	EventStep    EventKind = "step"     // a step started: Step
	EventSamples EventKind = "samples"  // one read of one device: Samples, Margins
	EventCaseEnd EventKind = "case_end" // a case ended: Outcome, Text (its reason)
	EventPause   EventKind = "pause"    // a pause was asked: By
	EventPaused  EventKind = "paused"   // the load is at 0 kW and the run holds: By
	EventResume  EventKind = "resume"   // the hold ended: By
	EventAbort   EventKind = "abort"    // an abort was asked from an observer (By), or an interlock tripped: Text
	EventEnd     EventKind = "end"      // the run ended: Outcome, Text (the abort's reason, if any)
)

// Event is one thing that happened in the run, at site time At.
type Event struct {
	Kind    EventKind         `json:"kind"`
	At      time.Time         `json:"at"`
	Seq     int64             `json:"seq"`               // 1, 2, …: in the order the runner sent them
	Dropped int64             `json:"dropped,omitempty"` // events dropped so far because the observer fell behind
	Cases   []CaseSummary     `json:"cases,omitempty"`
	Case    *CaseView         `json:"case,omitempty"`
	Step    *StepView         `json:"step,omitempty"`
	Samples []evidence.Sample `json:"samples,omitempty"`
	Margins []Margin          `json:"margins,omitempty"`
	Left    *Left             `json:"left,omitempty"`
	By      string            `json:"by,omitempty"`
	Outcome string            `json:"outcome,omitempty"`
	Text    string            `json:"text,omitempty"`
}

// CaseSummary is one case of the plan.
type CaseSummary struct {
	ID         string  `json:"id"`
	Title      string  `json:"title"`
	EstimatedS float64 `json:"estimated_s"`
}

// CaseView is a case as a live view draws it: its steps, the envelopes
// its checks grade and the interlocks that guard it.
type CaseView struct {
	ID         string           `json:"id"`
	Title      string           `json:"title"`
	Clause     string           `json:"clause"`
	Index      int              `json:"index"` // 1-based
	Of         int              `json:"of"`
	EstimatedS float64          `json:"estimated_s"`
	Steps      []StepView       `json:"steps"`
	Envelopes  []Envelope       `json:"envelopes"`
	Interlocks []plan.Interlock `json:"interlocks"`
}

// StepView is one step of a case.
type StepView struct {
	N          int     `json:"n"` // 1-based
	ID         string  `json:"id"`
	Op         string  `json:"op"`
	EstimatedS float64 `json:"estimated_s"`
}

// Envelope is the band a check holds a channel in: Lo and Hi are the
// limits a plot draws (reference ± max_deviation for a deviation
// check); either may be absent.
type Envelope struct {
	Check   string   `json:"check"`
	Channel string   `json:"channel"`
	Kind    string   `json:"kind"`
	Unit    string   `json:"unit,omitempty"`
	Lo      *float64 `json:"lo,omitempty"`
	Hi      *float64 `json:"hi,omitempty"`
}

// Margin is how far an interlock's channel is from its nearest limit,
// in the interlock's unit: negative is outside (a trip).
type Margin struct {
	Interlock string   `json:"interlock"`
	Channel   string   `json:"channel"`
	Value     float64  `json:"value"`
	Quality   string   `json:"quality"`
	Min       *float64 `json:"min,omitempty"`
	Max       *float64 `json:"max,omitempty"`
	Unit      string   `json:"unit,omitempty"`
	Margin    float64  `json:"margin"`
}

// Left is the site time left by the plan's estimates, in seconds: of
// the case running and of the whole run (this case and those after).
type Left struct {
	ElapsedS float64 `json:"elapsed_s"`
	CaseS    float64 `json:"case_s"`
	RunS     float64 `json:"run_s"`
}

// observeQueue is the runner's side of an Observer: send never blocks.
type observeQueue struct {
	o       Observer
	q       chan Event
	sendMu  sync.Mutex
	seq     int64
	dropped atomic.Int64
	closed  bool // with sendMu

	mu       sync.Mutex // the time left
	p        *plan.Plan
	runStart time.Time
	caseT0   time.Time
	index    int
	running  bool
}

// observeQueueLen is how many events wait for a slow observer before
// the next are dropped: some seconds of samples of a large case.
const observeQueueLen = 4096

func newObserveQueue(o Observer, p *plan.Plan, start time.Time, n int) *observeQueue {
	if o == nil {
		return nil
	}
	oq := &observeQueue{o: o, q: make(chan Event, n), p: p, runStart: start}
	go func() {
		for ev := range oq.q {
			oq.o.Observe(ev)
		}
	}()
	return oq
}

// send queues ev, or drops it when the observer is behind.
func (oq *observeQueue) send(ev Event) {
	if oq == nil {
		return
	}
	oq.sendMu.Lock() // numbered in the order queued
	defer oq.sendMu.Unlock()
	if oq.closed {
		return
	}
	oq.seq++
	ev.Seq, ev.Dropped = oq.seq, oq.dropped.Load()
	select {
	case oq.q <- ev:
	default:
		oq.dropped.Add(1)
	}
}

// close ends the queue after the events already in it; it does not
// wait for a slow observer.
func (oq *observeQueue) close() {
	if oq == nil {
		return
	}
	oq.sendMu.Lock()
	defer oq.sendMu.Unlock()
	if !oq.closed {
		oq.closed = true
		close(oq.q)
	}
}

// left is the time left at now by the plan's estimates.
func (oq *observeQueue) left(now time.Time) *Left {
	oq.mu.Lock()
	defer oq.mu.Unlock()
	l := &Left{ElapsedS: now.Sub(oq.runStart).Seconds()}
	from := 0
	if oq.running {
		c := oq.p.Cases[oq.index]
		l.CaseS = max(0, c.EstimatedS-now.Sub(oq.caseT0).Seconds())
		l.RunS = l.CaseS
		from = oq.index + 1
	}
	for _, c := range oq.p.Cases[min(from, len(oq.p.Cases)):] {
		l.RunS += c.EstimatedS
	}
	return l
}

// ObserverDropped is how many events the observer missed because it
// fell behind.
func (r *Runner) ObserverDropped() int64 {
	if r.obs == nil {
		return 0
	}
	return r.obs.dropped.Load()
}

// AbortBy aborts the run on a person's word from outside the terminal
// (the live view): the same abort as the first Ctrl-C (cause
// interrupt: every load bank zeroed and confirmed), its reason naming
// who asked and from where.
func (r *Runner) AbortBy(by, via string) {
	reason := fmt.Sprintf("aborted by %s from %s", by, via)
	r.obs.send(Event{Kind: EventAbort, At: r.clk.Now(), By: by, Text: reason})
	r.Abort(results.CauseInterrupt, reason, nil)
}

func (r *Runner) observeRun() {
	if r.obs == nil {
		return
	}
	cs := make([]CaseSummary, 0, len(r.cfg.Plan.Cases))
	for _, c := range r.cfg.Plan.Cases {
		cs = append(cs, CaseSummary{ID: c.ID, Title: c.Title, EstimatedS: c.EstimatedS})
	}
	now := r.clk.Now()
	r.obs.send(Event{Kind: EventRun, At: now, Cases: cs, Left: r.obs.left(now)})
}

func (r *Runner) observeCase(i int, c plan.Case) {
	if r.obs == nil {
		return
	}
	now := r.clk.Now()
	r.obs.mu.Lock()
	r.obs.index, r.obs.caseT0, r.obs.running = i, now, true
	r.obs.mu.Unlock()
	r.obs.send(Event{Kind: EventCase, At: now, Case: caseView(r.cfg.Plan, i, c), Left: r.obs.left(now)})
}

func (r *Runner) observeStep(i int, s plan.Step) {
	if r.obs == nil {
		return
	}
	now := r.clk.Now()
	r.obs.send(Event{Kind: EventStep, At: now, Step: &StepView{N: i + 1, ID: s.ID, Op: s.Op, EstimatedS: s.EstimatedS}, Left: r.obs.left(now)})
}

func (r *Runner) observeCaseEnd(c plan.Case, res results.Case) {
	if r.obs == nil {
		return
	}
	now := r.clk.Now()
	r.obs.mu.Lock()
	r.obs.running = false
	r.obs.mu.Unlock()
	r.obs.send(Event{Kind: EventCaseEnd, At: now, Case: &CaseView{ID: c.ID, Title: c.Title}, Outcome: string(res.Outcome), Text: res.Reason, Left: r.obs.left(now)})
}

// observeSamples sends one read of one device with the margins of the
// interlocks on its channels.
func (s *sampler) observeSamples(out []evidence.Sample) {
	oq := s.r.obs
	if oq == nil {
		return
	}
	var margins []Margin
	for _, smp := range out {
		for _, l := range s.locks[smp.Channel] {
			margins = append(margins, margin(l.il, smp))
		}
	}
	now := s.r.clk.Now()
	oq.send(Event{Kind: EventSamples, At: now, Samples: out, Margins: margins, Left: oq.left(now)})
}

// observeTrip tells the page at once that an interlock tripped: the
// run's end, once every bank is zeroed, comes later.
func (r *Runner) observeTrip(reason string) {
	r.obs.send(Event{Kind: EventAbort, At: r.clk.Now(), Text: reason})
}

func (r *Runner) observe(kind EventKind, by string) {
	r.obs.send(Event{Kind: kind, At: r.clk.Now(), By: by})
}

// observeEnd sends how the run ended and closes the queue.
func (r *Runner) observeEnd() {
	res := r.res
	if r.obs == nil || res == nil {
		return
	}
	ev := Event{Kind: EventEnd, At: r.clk.Now(), Outcome: string(res.Outcome)}
	if res.Abort != nil {
		ev.Text = res.Abort.Cause + ": " + res.Abort.Reason
	}
	r.obs.mu.Lock()
	r.obs.running = false
	r.obs.mu.Unlock()
	ev.Left = r.obs.left(ev.At)
	r.obs.send(ev)
	if n := r.obs.dropped.Load(); n > 0 {
		r.log.Warn("the live view fell behind and missed events", "dropped", n)
	}
	r.obs.close()
}

// margin is how far smp is inside il's limits.
func margin(il plan.Interlock, smp evidence.Sample) Margin {
	m := Margin{Interlock: il.ID, Channel: il.Channel, Value: smp.Value, Quality: smp.Quality, Min: il.Min, Max: il.Max, Unit: il.Unit}
	first := true
	if il.Min != nil {
		m.Margin, first = smp.Value-*il.Min, false
	}
	if il.Max != nil {
		d := *il.Max - smp.Value
		if first || d < m.Margin {
			m.Margin = d
		}
	}
	return m
}

func caseView(p *plan.Plan, i int, c plan.Case) *CaseView {
	v := &CaseView{ID: c.ID, Title: c.Title, Clause: c.Clause.Path, Index: i + 1, Of: len(p.Cases), EstimatedS: c.EstimatedS,
		Steps: make([]StepView, 0, len(c.Steps)), Envelopes: make([]Envelope, 0, len(c.Checks)), Interlocks: []plan.Interlock{}}
	for n, s := range c.Steps {
		v.Steps = append(v.Steps, StepView{N: n + 1, ID: s.ID, Op: s.Op, EstimatedS: s.EstimatedS})
	}
	for _, k := range c.Checks {
		v.Envelopes = append(v.Envelopes, envelope(k))
	}
	for _, id := range c.Interlocks {
		for _, il := range p.Interlocks {
			if il.ID == id {
				v.Interlocks = append(v.Interlocks, il)
			}
		}
	}
	return v
}

// envelope is the band a check draws.
func envelope(k plan.Check) Envelope {
	e := Envelope{Check: k.ID, Channel: k.Channel, Kind: k.Kind, Unit: k.Unit}
	// an alarm's deadline, a grid check's bound on a measure (a ramp, a
	// spectral line) or a share of a measured reference is no band the
	// live view could draw around the samples
	if lo, hi, band := k.Accepted(); band {
		if !math.IsInf(lo, -1) {
			e.Lo = &lo
		}
		if !math.IsInf(hi, 1) {
			e.Hi = &hi
		}
	}
	return e
}
