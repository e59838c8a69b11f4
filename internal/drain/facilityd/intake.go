package facilityd

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/seamdc/seam/internal/alarm"
)

// intake orders what the stream's events do. Every observation goes
// into the stream and, when it changed an alarm, onto one queue, both
// at once; the queue is handled in its order by one handler at a time.
// A source's Observe waits for its event to be handled; the webhook
// does not: it answers once the alarms it changed are durable in
// facilityd's state, and the handler drains behind it (a crash in
// between is replayed at start: Start's reconcile places the holds of
// the active alarms the state holds).
type intake struct {
	qmu   sync.Mutex // the stream's observation and the queue, at once
	queue []alarm.Event
	hmu   sync.Mutex // one handler at a time
	wake  chan struct{}
	dirty atomic.Bool // the webhook changed an alarm not yet made durable
}

func newIntake() *intake { return &intake{wake: make(chan struct{}, 1)} }

// take observes o and queues its event when it changed an alarm.
func (d *Daemon) take(o alarm.Observation) (alarm.Event, bool) {
	if !d.Cfg.Accepts(o.Type, o.Kind) {
		d.Log.Debug("observation not taken from this source (intake)", "type", o.Type, "source", o.SourceID())
		return alarm.Event{}, false
	}
	d.Metrics.Observed(o)
	d.in.qmu.Lock()
	defer d.in.qmu.Unlock()
	ev := d.Stream.Observe(o)
	if ev.Change == alarm.Seen {
		return ev, false
	}
	d.in.queue = append(d.in.queue, ev)
	return ev, true
}

// handle handles every queued event, in order, until none is left
// (what the handlers raise themselves is queued and handled too).
func (d *Daemon) handle() {
	d.in.hmu.Lock()
	defer d.in.hmu.Unlock()
	d.handleLocked()
}

func (d *Daemon) handleLocked() {
	ctx := context.Background()
	if p := d.ctx.Load(); p != nil {
		ctx = *p
	}
	for {
		d.in.qmu.Lock()
		batch := d.in.queue
		d.in.queue = nil
		d.in.qmu.Unlock()
		if len(batch) == 0 {
			return
		}
		for _, ev := range batch {
			if d.Deadlines != nil {
				d.Deadlines.Observe(ev)
			}
			d.Ctl.Handle(ctx, ev)
		}
	}
}

// Observe takes an observation from a source and returns once what it
// changed is handled.
func (d *Daemon) Observe(o alarm.Observation) {
	if _, queued := d.take(o); queued {
		d.handle()
	}
}

// raise takes what the controller and the deadlines raise (a refused
// drain, a late expectation). Raised while a handler runs (from within
// one, most often) it is queued for that handler; otherwise it is
// handled at once, as a source's observation is.
func (d *Daemon) raise(o alarm.Observation) {
	if _, queued := d.take(o); !queued {
		return
	}
	if d.in.hmu.TryLock() {
		d.handleLocked()
		d.in.hmu.Unlock()
		return
	}
	d.wakeHandler() // for a handler that may have looked before it was queued
}

func (d *Daemon) wakeHandler() {
	select {
	case d.in.wake <- struct{}{}:
	default:
	}
}

// handler handles what the webhook and raise queued, until ctx ends.
func (d *Daemon) handler(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-d.in.wake:
			d.handle()
		}
	}
}

// webhookSink takes an Alertmanager alert without handling it.
func (d *Daemon) webhookSink(o alarm.Observation) error {
	if !d.ready.Load() {
		return errStarting
	}
	if _, queued := d.take(o); queued {
		d.in.dirty.Store(true)
	}
	return nil
}

// webhookTaken makes what a delivery changed durable, then has the
// handler drain behind the answer. A state that cannot be saved is no
// reason to lose the alarm: it is handled before the answer instead.
func (d *Daemon) webhookTaken() {
	if d.in.dirty.Swap(false) {
		if err := d.Ctl.Persist(); err != nil {
			d.Log.Error("the alarms could not be made durable: handled before answering", "error", err)
			d.handle()
			return
		}
	}
	d.wakeHandler()
}
