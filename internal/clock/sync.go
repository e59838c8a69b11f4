package clock

import (
	"context"
	"sync"
	"time"
)

// Go runs f on a new goroutine: a participant of clk when clk is a
// Lockstep, a plain goroutine otherwise. Every goroutine that waits on
// a clock that may be a Lockstep is started this way.
func Go(clk Clock, f func()) {
	if l, ok := clk.(*Lockstep); ok {
		l.Go(f)
		return
	}
	go f()
}

// Group is a sync.WaitGroup whose goroutines are participants of its
// clock: Wait gives up the turn of a Lockstep until they are done.
type Group struct {
	mu   sync.Mutex
	n    int
	cond *Cond
}

// NewGroup returns an empty group on clk.
func NewGroup(clk Clock) *Group {
	g := &Group{}
	g.cond = NewCond(clk, &g.mu)
	return g
}

// Go runs f in the group.
func (g *Group) Go(f func()) {
	g.mu.Lock()
	g.n++
	g.mu.Unlock()
	Go(g.cond.clk, func() {
		defer g.done()
		f()
	})
}

func (g *Group) done() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.n--; g.n == 0 {
		g.cond.Broadcast()
	}
}

// Wait waits until every goroutine of the group has returned.
func (g *Group) Wait() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for g.n > 0 {
		_, _ = g.cond.Wait(context.Background(), 0)
	}
}

// Cond is a condition variable that waits in a clock's time: a
// participant of a Lockstep gives up its turn while it waits, and a
// broadcast makes it due at once; a goroutine outside the run waits on
// a channel. L is held while the condition is checked or changed.
type Cond struct {
	L   sync.Locker
	clk Clock
	ch  chan struct{} // closed by Broadcast (clocks other than Lockstep)
}

// NewCond returns a condition on clk, guarded by l.
func NewCond(clk Clock, l sync.Locker) *Cond {
	return &Cond{L: l, clk: clk, ch: make(chan struct{})}
}

// Wait releases L, waits for a Broadcast, for timeout of the clock's
// time (timeout ≤ 0: no limit) or for ctx, and takes L again. It
// reports whether a broadcast woke it; ctx's error when ctx ended it.
// The caller holds L.
func (c *Cond) Wait(ctx context.Context, timeout time.Duration) (bool, error) {
	if l, ok := c.clk.(*Lockstep); ok && l.holds() {
		at := l.Now().Add(timeout)
		w := l.wait(ctx, at, timeout > 0, c, c.L.Unlock)
		c.L.Lock()
		if w == cancelled {
			return false, ctx.Err()
		}
		return w == signalled, nil
	}
	ch := c.ch
	c.L.Unlock()
	defer c.L.Lock()
	var expired <-chan struct{}
	if timeout > 0 {
		tctx, stop := context.WithCancel(ctx)
		defer stop()
		done := make(chan struct{})
		Go(c.clk, func() { _ = c.clk.Sleep(tctx, timeout); close(done) })
		expired = done
	}
	select {
	case <-ch:
		return true, nil
	case <-ctx.Done():
		return false, ctx.Err()
	case <-expired:
		return false, ctx.Err()
	}
}

// Broadcast wakes every goroutine waiting on c. The caller holds L.
func (c *Cond) Broadcast() {
	if l, ok := c.clk.(*Lockstep); ok {
		l.broadcast(c)
	}
	close(c.ch)
	c.ch = make(chan struct{})
}

// Mutex is a mutual exclusion lock that may be held across waits on its
// clock: a participant of a Lockstep that finds it locked gives up its
// turn until it is unlocked (a sync.Mutex would hold the turn, and the
// run, forever).
type Mutex struct {
	mu     sync.Mutex
	locked bool
	cond   *Cond
}

// NewMutex returns an unlocked mutex on clk.
func NewMutex(clk Clock) *Mutex {
	m := &Mutex{}
	m.cond = NewCond(clk, &m.mu)
	return m
}

// Lock locks m, waiting while another holds it.
func (m *Mutex) Lock() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for m.locked {
		_, _ = m.cond.Wait(context.Background(), 0)
	}
	m.locked = true
}

// Unlock unlocks m.
func (m *Mutex) Unlock() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.locked {
		panic("clock: unlock of an unlocked Mutex")
	}
	m.locked = false
	m.cond.Broadcast()
}
