package liveview

import (
	"github.com/seamdc/seam/internal/runner"
)

// Point is one sample of a trace: T in milliseconds since the Unix epoch
// (site time), V its value, Q its quality.
type Point struct {
	T int64   `json:"t"`
	V float64 `json:"v"`
	Q string  `json:"q"`
}

// State is what a page needs to draw the run from nothing: what a new
// client is sent first, and what /api/state answers.
type State struct {
	Seq      int64                    `json:"seq"` // the last event applied
	Status   string                   `json:"status"`
	By       string                   `json:"by,omitempty"` // who paused
	Cases    []runner.CaseSummary     `json:"cases"`
	Outcomes map[string]string        `json:"outcomes"` // case → outcome, of the cases that ended
	Case     *runner.CaseView         `json:"case,omitempty"`
	Step     *runner.StepView         `json:"step,omitempty"`
	Traces   map[string][]Point       `json:"traces"`  // the current case's channels
	Margins  map[string]runner.Margin `json:"margins"` // by interlock
	Left     *runner.Left             `json:"left,omitempty"`
	Log      []string                 `json:"log"` // the latest notable events, oldest first
	Outcome  string                   `json:"outcome,omitempty"`
	Text     string                   `json:"text,omitempty"`
	// Dropped is how many events the runner dropped because the view
	// fell behind; DroppedClients how many slow clients were cut off.
	Dropped        int64 `json:"dropped"`
	DroppedClients int64 `json:"dropped_clients"`
	Samples        int64 `json:"samples"` // samples seen in the run
}

// The statuses of a run.
const (
	Waiting = "waiting" // nothing has happened yet
	Running = "running"
	Pausing = "pausing" // asked: the case stops, its load goes to 0 kW
	Paused  = "paused"  // load at 0 kW, holding
	Ended   = "ended"
)

const (
	maxPoints = 2000 // per trace: the latest
	maxLog    = 50
)

func newState() *State {
	return &State{Status: Waiting, Outcomes: map[string]string{}, Traces: map[string][]Point{}, Margins: map[string]runner.Margin{}, Log: []string{}}
}

// apply changes s by ev (the page's app.js does the same).
func (s *State) apply(ev runner.Event) {
	s.Seq, s.Dropped = ev.Seq, ev.Dropped
	if ev.Left != nil {
		s.Left = ev.Left
	}
	switch ev.Kind {
	case runner.EventRun:
		s.Cases, s.Status = ev.Cases, Running
	case runner.EventCase:
		s.Case, s.Step = ev.Case, nil
		s.Traces, s.Margins = map[string][]Point{}, map[string]runner.Margin{}
		if s.Status == Waiting {
			s.Status = Running
		}
		s.log(ev, "case "+ev.Case.ID+" started")
	case runner.EventStep:
		s.Step = ev.Step
	case runner.EventSamples:
		for _, smp := range ev.Samples {
			tr := append(s.Traces[smp.Channel], Point{T: smp.Time.UnixMilli(), V: smp.Value, Q: smp.Quality})
			if len(tr) > maxPoints {
				tr = tr[len(tr)-maxPoints:]
			}
			s.Traces[smp.Channel] = tr
			s.Samples++
		}
		for _, m := range ev.Margins {
			s.Margins[m.Interlock] = m
		}
	case runner.EventCaseEnd:
		s.Outcomes[ev.Case.ID] = ev.Outcome
		s.log(ev, ev.Case.ID+": "+ev.Outcome+reasonText(ev.Text))
	case runner.EventPause:
		s.Status, s.By = Pausing, ev.By
		s.log(ev, "pause asked by "+ev.By)
	case runner.EventPaused:
		s.Status, s.By = Paused, ev.By
		s.log(ev, "paused by "+ev.By+": load at 0 kW")
	case runner.EventResume:
		s.Status, s.By = Running, ""
		s.log(ev, "resumed by "+ev.By)
	case runner.EventAbort:
		s.log(ev, ev.Text)
	case runner.EventEnd:
		s.Status, s.Outcome, s.Text = Ended, ev.Outcome, ev.Text
		s.log(ev, "run "+ev.Outcome+reasonText(ev.Text))
	}
}

func (s *State) log(ev runner.Event, line string) {
	s.Log = append(s.Log, ev.At.UTC().Format("15:04:05")+" "+line)
	if len(s.Log) > maxLog {
		s.Log = s.Log[len(s.Log)-maxLog:]
	}
}

func reasonText(s string) string {
	if s == "" {
		return ""
	}
	return " (" + s + ")"
}
