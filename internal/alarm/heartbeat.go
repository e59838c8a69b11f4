package alarm

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/seamdc/seam/internal/clock"
)

// Heartbeat is something that must be heard from at least once per
// Timeout: a vendor controller (its silence raises controller_silent
// for its module), or Alertmanager's Watchdog (its silence raises
// alarm_path_dead for the site). A dead controller looks exactly like a
// healthy, quiet one; its silence is the only tell.
type Heartbeat struct {
	Name    string
	Type    Type
	Domain  Domain
	Timeout time.Duration
}

type beat struct {
	Heartbeat
	added  time.Time
	last   time.Time // zero: never heard
	silent bool
}

// Beats watches heartbeats. It is safe for concurrent use.
type Beats struct {
	// Sink takes the observation when a heartbeat falls silent (active)
	// and when it is heard again (clear).
	Sink func(Observation)

	mu    sync.Mutex
	beats map[string]*beat
}

// NewBeats returns a monitor that reports to sink.
func NewBeats(sink func(Observation)) *Beats {
	return &Beats{Sink: sink, beats: map[string]*beat{}}
}

// Add watches h from now: it falls silent if not heard within Timeout.
func (b *Beats) Add(h Heartbeat, now time.Time) error {
	if h.Timeout <= 0 {
		return fmt.Errorf("heartbeat %s: a timeout is needed", h.Name)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.beats[h.Name]; ok {
		return fmt.Errorf("heartbeat %s is watched twice", h.Name)
	}
	b.beats[h.Name] = &beat{Heartbeat: h, added: now}
	return nil
}

// Beat records that name was heard at at.
func (b *Beats) Beat(name string, at time.Time) error {
	b.mu.Lock()
	hb, ok := b.beats[name]
	if !ok {
		b.mu.Unlock()
		return fmt.Errorf("unknown heartbeat %q (known: %v)", name, b.namesLocked())
	}
	if at.After(hb.last) {
		hb.last = at
	}
	wasSilent := hb.silent
	hb.silent = false
	h := hb.Heartbeat
	b.mu.Unlock()
	if wasSilent {
		b.Sink(Observation{Type: h.Type, Domain: h.Domain, Active: false, Kind: FromHeartbeat, Source: h.Name, At: at,
			Detail: fmt.Sprintf("%s heard again", h.Name)})
	}
	return nil
}

func (b *Beats) namesLocked() []string {
	var out []string
	for n := range b.beats {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// Check raises every heartbeat not heard within its timeout.
func (b *Beats) Check(now time.Time) {
	var raised []Observation
	b.mu.Lock()
	for _, name := range b.namesLocked() {
		hb := b.beats[name]
		since := hb.last
		if since.IsZero() {
			since = hb.added
		}
		if hb.silent || now.Sub(since) <= hb.Timeout {
			continue
		}
		hb.silent = true
		what := fmt.Sprintf("%s not heard for %s (timeout %s)", name, now.Sub(since).Round(time.Millisecond), hb.Timeout)
		if hb.last.IsZero() {
			what = fmt.Sprintf("%s never heard since facilityd started %s ago (timeout %s)", name, now.Sub(since).Round(time.Millisecond), hb.Timeout)
		}
		raised = append(raised, Observation{Type: hb.Type, Domain: hb.Domain, Active: true, Kind: FromHeartbeat, Source: name, At: now, Detail: what})
	}
	b.mu.Unlock()
	for _, o := range raised {
		b.Sink(o)
	}
}

// Alive reports whether name has been heard and is not silent.
func (b *Beats) Alive(name string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	hb, ok := b.beats[name]
	return ok && !hb.last.IsZero() && !hb.silent
}

// Last is when name was last heard (zero: never).
func (b *Beats) Last(name string) time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	if hb, ok := b.beats[name]; ok {
		return hb.last
	}
	return time.Time{}
}

// Run checks every period until ctx is done.
func (b *Beats) Run(ctx context.Context, clk clock.Clock, period time.Duration) {
	for clk.Sleep(ctx, period) == nil {
		b.Check(clk.Now())
	}
}
