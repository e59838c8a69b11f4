package alarm

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/seamdc/seam/internal/clock"
)

// Expectation is a failure clause's alarm promise, at run time: when
// Precursor is raised for Domain (a pump faulted: the failure
// happened), Expect must follow within Within (the clause's
// alarm_within), or the missing alarm is itself reported as AlarmLate.
type Expectation struct {
	Clause    string // where it is promised: boundaries."l2-mb".failure."pump-trip"
	Event     string
	Precursor Type
	Expect    Type
	Domain    Domain
	Within    time.Duration
}

// Deadlines watches expectations. It is safe for concurrent use.
type Deadlines struct {
	Sink func(Observation)
	// Active reports whether an alarm is active now (the stream's view).
	Active func(Type, Domain) bool

	mu      sync.Mutex
	exps    []Expectation
	started []time.Time // per expectation: when the precursor rose; zero: not waiting
	late    []bool
}

// NewDeadlines watches exps.
func NewDeadlines(exps []Expectation, active func(Type, Domain) bool, sink func(Observation)) *Deadlines {
	return &Deadlines{Sink: sink, Active: active, exps: exps, started: make([]time.Time, len(exps)), late: make([]bool, len(exps))}
}

// Observe follows the stream's events.
func (d *Deadlines) Observe(ev Event) {
	if ev.Change == Seen {
		return
	}
	var out []Observation
	d.mu.Lock()
	for i, e := range d.exps {
		if ev.Alarm.Domain != e.Domain {
			continue
		}
		switch {
		case ev.Alarm.Type == e.Precursor && ev.Change == Raised:
			if !d.Active(e.Expect, e.Domain) {
				d.started[i] = ev.Alarm.LastSeen
			}
		case ev.Alarm.Type == e.Expect && ev.Change == Raised, ev.Alarm.Type == e.Precursor && ev.Change == Cleared:
			d.started[i] = time.Time{}
			if d.late[i] {
				d.late[i] = false
				out = append(out, d.obs(e, false, ev.Observation.At, fmt.Sprintf("%s after %s: %s", e.Expect, e.Precursor, ev.Change)))
			}
		}
	}
	d.mu.Unlock()
	for _, o := range out {
		d.Sink(o)
	}
}

func (d *Deadlines) obs(e Expectation, active bool, at time.Time, detail string) Observation {
	return Observation{Type: AlarmLate, Domain: e.Domain, Active: active, Kind: FromFacilityd, Source: "deadline:" + e.Clause + ":" + string(e.Expect),
		At: at, Detail: detail}
}

// Check reports every expectation past its deadline.
func (d *Deadlines) Check(now time.Time) {
	var out []Observation
	d.mu.Lock()
	for i, e := range d.exps {
		if d.started[i].IsZero() || d.late[i] || now.Sub(d.started[i]) <= e.Within {
			continue
		}
		d.late[i] = true
		out = append(out, d.obs(e, true, now, fmt.Sprintf("%s raised for %s %s ago, and no %s yet: %s promises it within %s",
			e.Precursor, e.Domain, now.Sub(d.started[i]).Round(time.Millisecond), e.Expect, e.Clause, e.Within)))
	}
	d.mu.Unlock()
	for _, o := range out {
		d.Sink(o)
	}
}

// Run checks every period until ctx is done.
func (d *Deadlines) Run(ctx context.Context, clk clock.Clock, period time.Duration) {
	for clk.Sleep(ctx, period) == nil {
		d.Check(clk.Now())
	}
}
