package alarm

import (
	"slices"
	"strings"
	"sync"
	"time"
)

// SourceKind is where observations come from.
type SourceKind string

// Source kinds.
const (
	FromDevice       SourceKind = "device"       // a polled alarm point
	FromTrap         SourceKind = "trap"         // an SNMP trap or inform
	FromAlertmanager SourceKind = "alertmanager" // Alertmanager's webhook
	FromHeartbeat    SourceKind = "heartbeat"    // a heartbeat's silence
	FromFacilityd    SourceKind = "facilityd"    // facilityd itself (refusals, late alarms)
)

// SourceKinds lists the source kinds.
var SourceKinds = []SourceKind{FromDevice, FromTrap, FromAlertmanager, FromHeartbeat, FromFacilityd}

// Observation is one source saying an alarm is active or clear.
type Observation struct {
	Type   Type
	Domain Domain
	Active bool
	Kind   SourceKind
	// Source names the source within its kind: the device and point,
	// the trap's agent, the alert's fingerprint.
	Source string
	At     time.Time
	Detail string
}

// SourceID is the observation's source, kind:source.
func (o Observation) SourceID() string { return string(o.Kind) + ":" + o.Source }

// alertSourcePrefix begins the SourceID of an Alertmanager alert.
const alertSourcePrefix = string(FromAlertmanager) + ":"

// Alarm is one (domain, type) merged over every source that reports it.
type Alarm struct {
	Type     Type     `json:"type"`
	Domain   Domain   `json:"domain"`
	Severity Severity `json:"-"`
	Active   bool     `json:"active"`
	// Sources are the sources that report it active now: every device,
	// trap, heartbeat and facilityd source, and at most MaxAlertSources
	// of Alertmanager's; SourcesMore counts the Alertmanager alerts past
	// that (a storm of 60,000 alerts for one alarm is one alarm).
	Sources     []string    `json:"sources,omitempty"`
	SourcesMore int         `json:"sources_more,omitempty"`
	FirstSeen   time.Time   `json:"first_seen"`
	LastSeen    time.Time   `json:"last_seen"`        // the last observation of it active
	Cleared     time.Time   `json:"cleared,omitzero"` // when it last cleared; zero while active
	Raises      []time.Time `json:"raises,omitempty"` // recent raises, for flap damping
	Detail      string      `json:"detail,omitempty"`
}

// maxRaises bounds the raises an alarm remembers.
const maxRaises = 32

// MaxAlertSources bounds the Alertmanager alerts an alarm lists by
// fingerprint; past it they are counted (Alarm.SourcesMore). An alert
// counted so is cleared by any resolved alert the alarm does not list:
// the webhook takes each alert's transition once (its fingerprint and
// status are remembered), so a count neither grows nor shrinks twice
// for one alert.
const MaxAlertSources = 64

// Change is what an observation did to its alarm.
type Change int

// Changes.
const (
	Seen    Change = iota // nothing changed: a repeat, or another source of an active alarm
	Raised                // clear (or new) to active
	Cleared               // active to clear: every source says clear
)

func (c Change) String() string { return [...]string{"seen", "raised", "cleared"}[c] }

// Event is an observation and what it did.
type Event struct {
	Change      Change
	Alarm       Alarm // after the observation
	Observation Observation
}

type key struct {
	t Type
	d Domain
}

type entry struct {
	Alarm
	sources map[string]bool // source → active: the listed ones
	alerts  int             // of them, Alertmanager's
}

// Stream merges observations into alarms, deduplicated by (domain,
// type): an alarm is active while any source says so, and clears when
// every source that raised it has cleared. It is safe for concurrent
// use.
type Stream struct {
	// Horizon is how long raises are remembered (flap damping looks
	// back this far); default one hour.
	Horizon time.Duration

	mu     sync.Mutex
	alarms map[key]*entry
}

// NewStream returns an empty stream.
func NewStream() *Stream { return &Stream{alarms: map[key]*entry{}} }

// Observe merges o and returns what it changed.
func (s *Stream) Observe(o Observation) Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := key{o.Type, o.Domain}
	e := s.alarms[k]
	if e == nil {
		if !o.Active {
			// a clear of an alarm never seen: nothing to do
			return Event{Change: Seen, Alarm: Alarm{Type: o.Type, Domain: o.Domain, Severity: severityOf(o.Type)}, Observation: o}
		}
		e = &entry{Alarm: Alarm{Type: o.Type, Domain: o.Domain, Severity: severityOf(o.Type), FirstSeen: o.At}, sources: map[string]bool{}}
		s.alarms[k] = e
	}
	was := e.Active
	if o.Active {
		e.LastSeen = o.At
		if o.Detail != "" {
			e.Detail = o.Detail
		}
	}
	if e.track(o) { // the listed sources changed: at most a few dozen
		e.Sources = e.Sources[:0]
		for src := range e.sources {
			e.Sources = append(e.Sources, src)
		}
		slices.Sort(e.Sources)
	}
	e.Active = len(e.sources) > 0 || e.SourcesMore > 0
	change := Seen
	switch {
	case e.Active && !was:
		change = Raised
		e.Cleared = time.Time{}
		e.Raises = append(s.recent(e.Raises, o.At), o.At)
	case !e.Active && was:
		change = Cleared
		e.Cleared = o.At
	}
	return Event{Change: change, Alarm: e.copy(), Observation: o}
}

// track applies o to the alarm's sources, listed or counted, and
// reports whether the listed ones changed.
func (e *entry) track(o Observation) bool {
	id := o.SourceID()
	alert := o.Kind == FromAlertmanager
	_, listed := e.sources[id]
	switch {
	case o.Active && listed, !o.Active && !listed && !alert:
		return false
	case o.Active && alert && e.alerts >= MaxAlertSources:
		e.SourcesMore++
		return false
	case !o.Active && !listed: // an alert counted, not listed
		e.SourcesMore = max(e.SourcesMore-1, 0)
		return false
	case o.Active:
		e.sources[id] = true
		if alert {
			e.alerts++
		}
	default:
		delete(e.sources, id)
		if alert {
			e.alerts--
		}
	}
	return true
}

func (s *Stream) recent(ts []time.Time, now time.Time) []time.Time {
	h := s.Horizon
	if h <= 0 {
		h = time.Hour
	}
	i := 0
	for i < len(ts) && now.Sub(ts[i]) > h {
		i++
	}
	// flap damping needs a few recent raises, not all of them
	i = max(i, len(ts)-maxRaises+1)
	return append([]time.Time(nil), ts[i:]...)
}

func (e *entry) copy() Alarm {
	a := e.Alarm
	a.Sources = slices.Clone(e.Sources)
	a.Raises = slices.Clone(e.Raises)
	return a
}

func severityOf(t Type) Severity {
	d, _ := Lookup(t)
	return d.Severity
}

// Get returns the alarm (t, d).
func (s *Stream) Get(t Type, d Domain) (Alarm, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.alarms[key{t, d}]
	if !ok {
		return Alarm{}, false
	}
	return e.copy(), true
}

// Snapshot lists every alarm, active first, then by domain and type.
func (s *Stream) Snapshot() []Alarm {
	s.mu.Lock()
	out := make([]Alarm, 0, len(s.alarms))
	for _, e := range s.alarms {
		out = append(out, e.copy())
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b Alarm) int {
		if a.Active != b.Active {
			if a.Active {
				return -1
			}
			return 1
		}
		if c := strings.Compare(a.Domain.String(), b.Domain.String()); c != 0 {
			return c
		}
		return strings.Compare(string(a.Type), string(b.Type))
	})
	return out
}

// Restore puts alarms saved before a restart back, with the sources
// that reported them active: a source that has gone says so again, or
// the alarm stays active (unknown is not clear).
func (s *Stream) Restore(alarms []Alarm) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range alarms {
		e := &entry{Alarm: a, sources: map[string]bool{}}
		e.Severity = severityOf(a.Type)
		for _, src := range a.Sources {
			e.sources[src] = true
			if strings.HasPrefix(src, alertSourcePrefix) {
				e.alerts++
			}
		}
		e.Active = len(e.sources) > 0 || e.SourcesMore > 0
		s.alarms[key{a.Type, a.Domain}] = e
	}
}
