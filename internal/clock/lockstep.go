package clock

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"time"
)

// World is what a Lockstep clock moves: a simulation that is stepped to
// each new time before any participant wakes at it.
type World interface {
	// AdvanceTo steps the world to t. It is called with no participant
	// running, t never earlier than the last call.
	AdvanceTo(t time.Time)
}

// Lockstep is simulated time that moves only when every participant
// waits for it: a discrete-event scheduler for the goroutines of a run
// against a simulated site in the same process.
//
// Participants are goroutines started with Go (or clock.Go, a Group).
// They take turns: one runs at a time, from when it is woken until it
// waits on the clock again (Sleep, a Cond, a Group). Everything a turn
// does — a request to a simulated device and its reply, a record
// written — happens at one instant of site time. When no participant
// can run, the clock advances the world to the earliest deadline any of
// them sleeps until and wakes that one; participants due at the same
// instant run in the order they began to wait. So the same program
// against the same world does the same things at the same site times,
// on an idle machine or a busy one, at any speed: a busy machine only
// makes the run slower in wall time. A turn must therefore not block on
// anything but the clock (a channel another participant sends on, a
// mutex held across a wait) and must not wait on a device that needs
// site time to pass to answer: either deadlocks the run.
//
// limit caps the speed at that many site seconds per wall second (a
// live view, a person watching); 0 runs as fast as the participants
// allow. A goroutine that is not a participant may call Now, Go and
// Cond.Broadcast, and cancel a participant's context; Sleep from it
// panics.
type Lockstep struct {
	world World
	limit float64
	log   *slog.Logger

	mu     sync.Mutex
	now    time.Time
	queue  []*turn // waiting participants, by (at, seq); deadline-less last
	seq    uint64
	holder int64 // goroutine id of the participant running; 0 none, -1 being handed the turn
	closed bool
	poke   chan struct{}
	done   chan struct{}

	// pacing: site time site0 was reached at wall time wall0
	wall0 time.Time
	site0 time.Time

	turns, advances int64
}

// turn is a participant waiting for its turn.
type turn struct {
	at       time.Time // when it is due; zero: only a broadcast or its context wakes it
	seq      uint64
	ctx      context.Context
	cond     *Cond
	ch       chan struct{} // receives the turn
	woken    wake
	deadline bool
}

type wake int

const (
	pending wake = iota
	timedOut
	cancelled
	signalled
)

// NewLockstep starts a clock at start that moves world (nil: nothing
// but the clock), at most limit site seconds per wall second (0: no
// limit). Close it when the run is over.
func NewLockstep(start time.Time, world World, limit float64, log *slog.Logger) *Lockstep {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	l := &Lockstep{world: world, limit: limit, log: log, now: start, poke: make(chan struct{}, 1), done: make(chan struct{}),
		wall0: time.Now(), site0: start}
	go l.schedule()
	return l
}

// Close stops the scheduler; participants still waiting stay blocked.
func (l *Lockstep) Close() {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.closed = true
	l.mu.Unlock()
	l.wakeScheduler()
	<-l.done
}

// Now is the site time.
func (l *Lockstep) Now() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.now
}

// Limit is the most site seconds per wall second (0: none).
func (l *Lockstep) Limit() float64 { return l.limit }

// Stats says how many turns were given and how often time advanced.
func (l *Lockstep) Stats() (turns, advances int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.turns, l.advances
}

// Sleep gives up the turn until d of site time has passed (d ≤ 0: until
// the participants due now have had theirs), or ctx is done.
func (l *Lockstep) Sleep(ctx context.Context, d time.Duration) error {
	l.mu.Lock()
	at := l.now.Add(max(d, 0))
	l.mu.Unlock()
	switch l.wait(ctx, at, true, nil, nil) {
	case cancelled:
		return ctx.Err()
	}
	return nil
}

// After fires once d of site time has passed; it is for a goroutine
// that is not a participant (a participant blocked on the channel would
// hold its turn forever: use Sleep).
func (l *Lockstep) After(d time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	l.Go(func() {
		_ = l.Sleep(context.Background(), d)
		ch <- l.Now()
	})
	return ch
}

// Go runs f as a participant: it gets its first turn after the
// participants already due now.
func (l *Lockstep) Go(f func()) {
	t := &turn{ch: make(chan struct{}, 1), deadline: true}
	l.mu.Lock()
	t.at = l.now
	l.enqueue(t)
	l.mu.Unlock()
	l.wakeScheduler()
	go func() {
		<-t.ch
		gid := goid()
		l.mu.Lock()
		l.holder = gid
		l.mu.Unlock()
		defer l.exit(gid)
		f()
	}()
}

// holds reports whether the calling goroutine holds the turn.
func (l *Lockstep) holds() bool {
	gid := goid()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.holder == gid
}

// exit ends a participant: its turn passes on.
func (l *Lockstep) exit(gid int64) {
	l.mu.Lock()
	if l.holder == gid {
		l.holder = 0
	}
	l.mu.Unlock()
	l.wakeScheduler()
}

// wait gives up the caller's turn until at (when deadline), a broadcast
// of cond, or ctx; unlock, if set, runs once the caller is queued.
func (l *Lockstep) wait(ctx context.Context, at time.Time, deadline bool, cond *Cond, unlock func()) wake {
	gid := goid()
	t := &turn{at: at, deadline: deadline, ctx: ctx, cond: cond, ch: make(chan struct{}, 1)}
	l.mu.Lock()
	if l.holder != gid {
		holder := l.holder
		l.mu.Unlock()
		panic(fmt.Sprintf("clock.Lockstep: goroutine %d waits on the clock without holding the turn (goroutine %d holds it): start it with clock.Go", gid, holder))
	}
	l.enqueue(t)
	l.holder = 0
	l.mu.Unlock()
	if unlock != nil {
		unlock()
	}
	l.wakeScheduler()
	var stop func() bool
	if ctx != nil && ctx.Done() != nil {
		stop = context.AfterFunc(ctx, l.wakeScheduler)
	}
	<-t.ch
	if stop != nil {
		stop()
	}
	l.mu.Lock()
	l.holder = gid
	l.mu.Unlock()
	return t.woken
}

// broadcast makes every participant waiting on c due now.
func (l *Lockstep) broadcast(c *Cond) {
	l.mu.Lock()
	n := 0
	for _, t := range l.queue {
		if t.cond == c && t.woken == pending {
			t.at, t.deadline, t.cond, t.woken = l.now, true, nil, signalled
			n++
		}
	}
	if n > 0 {
		l.sortQueue()
	}
	l.mu.Unlock()
	if n > 0 {
		l.wakeScheduler()
	}
}

func (l *Lockstep) enqueue(t *turn) {
	l.seq++
	t.seq = l.seq
	l.queue = append(l.queue, t)
	l.sortQueue()
}

// sortQueue orders the queue by due time, then by when each began to
// wait; participants without a deadline come last.
func (l *Lockstep) sortQueue() {
	slices.SortFunc(l.queue, func(a, b *turn) int {
		switch {
		case a.deadline != b.deadline:
			if a.deadline {
				return -1
			}
			return 1
		case a.deadline && !a.at.Equal(b.at):
			return a.at.Compare(b.at)
		}
		return cmp.Compare(a.seq, b.seq)
	})
}

func (l *Lockstep) wakeScheduler() {
	select {
	case l.poke <- struct{}{}:
	default:
	}
}

// schedule hands out turns: to the first participant due, or, when none
// is, after advancing the world to the earliest deadline.
func (l *Lockstep) schedule() {
	defer close(l.done)
	var timer *time.Timer
	stuck := time.Now()
	for {
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			return
		}
		next, wait := l.pick()
		if next == nil {
			idle := l.holder == 0 && len(l.queue) > 0 // everyone waits, and nobody can ever be due
			l.mu.Unlock()
			if idle && time.Since(stuck) > time.Minute {
				l.log.Error("clock: every participant of the simulated run waits for another, and none has a deadline", "waiting", len(l.queue))
				stuck = time.Now()
			}
			if wait > 0 {
				if timer == nil {
					timer = time.NewTimer(wait)
				} else {
					timer.Reset(wait)
				}
				select {
				case <-l.poke:
				case <-timer.C:
				}
				timer.Stop()
			} else {
				<-l.poke
			}
			continue
		}
		stuck = time.Now()
		l.holder = -1
		l.turns++
		l.mu.Unlock()
		next.ch <- struct{}{}
	}
}

// pick returns the participant whose turn it is, advancing time if it
// must, or nil and how long to wait (0: until poked). Called with mu
// held.
func (l *Lockstep) pick() (*turn, time.Duration) {
	if l.holder != 0 || len(l.queue) == 0 {
		return nil, 0
	}
	changed := false
	for _, t := range l.queue { // a cancelled participant is due now
		if t.woken == pending && t.ctx != nil && t.ctx.Err() != nil {
			t.at, t.deadline, t.cond, t.woken = l.now, true, nil, cancelled
			changed = true
		}
	}
	if changed {
		l.sortQueue()
	}
	t := l.queue[0]
	if !t.deadline {
		return nil, 0
	}
	if t.at.After(l.now) {
		if wait := l.paceFor(t.at); wait > 0 {
			return nil, wait
		}
		if l.world != nil {
			l.world.AdvanceTo(t.at)
		}
		l.now = t.at
		l.advances++
	}
	if t.woken == pending {
		t.woken = timedOut
	}
	l.queue = l.queue[1:]
	return t, 0
}

// paceFor is how long to wait in wall time before site time may reach
// at, under the speed limit. A clock more than a second behind its pace
// (a busy machine) starts its pace anew rather than racing to catch up.
// Called with mu held.
func (l *Lockstep) paceFor(at time.Time) time.Duration {
	if l.limit <= 0 {
		return 0
	}
	now := time.Now()
	due := l.wall0.Add(time.Duration(float64(at.Sub(l.site0)) / l.limit))
	if now.Sub(due) > time.Second {
		l.wall0, l.site0 = now, l.now
		due = l.wall0.Add(time.Duration(float64(at.Sub(l.site0)) / l.limit))
	}
	return due.Sub(now)
}

// goid is the calling goroutine's id, from its stack header
// ("goroutine 123 [running]:").
func goid() int64 {
	var buf [40]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	if i := bytes.IndexByte(b, ' '); i > 0 {
		b = b[:i]
	}
	id, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		panic("clock: cannot read the goroutine id from " + strconv.Quote(string(buf[:])))
	}
	return id
}
