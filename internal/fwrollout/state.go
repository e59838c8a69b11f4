package fwrollout

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/seamdc/seam/internal/evidence"
)

// State is what an interrupted rollout's journal says it finished and
// began.
type State struct {
	Start *StartRecord
	// StagesDone are the stages that passed.
	StagesDone map[int]bool
	// Trays are the trays whose updates all ended well, by key.
	Trays map[string]TrayRecord
	// Updates are the updates begun and not known to have ended, by
	// tray and component.
	Updates map[string]Pending
	// Ended is set when the rollout recorded its end (every stage passed).
	Ended bool
	// Records counts the records read.
	Records int
}

// Pending is an update an interrupted run began: the task monitor the
// BMC gave it, or when it was about to be sent without an answer seen.
type Pending struct {
	Monitor string
	Sending time.Time
}

// NewState is a new rollout's: nothing done.
func NewState() *State {
	return &State{StagesDone: map[int]bool{}, Trays: map[string]TrayRecord{}, Updates: map[string]Pending{}}
}

// ReadState reads the rollout's journal in dir (as a resumed bundle
// kept it).
func ReadState(dir string) (*State, error) {
	st := NewState()
	err := evidence.ReadJournal(dir, func(r evidence.Record) error {
		st.Records++
		if err := st.add(r); err != nil {
			return fmt.Errorf("%s: record %d (%s): %w", dir, r.Seq, r.Kind, err)
		}
		return nil
	})
	return st, err
}

// add takes one record into the state.
func (st *State) add(r evidence.Record) error {
	switch r.Kind {
	case KindStart:
		if st.Start != nil {
			return nil // a resume's: the first one names the rollout
		}
		st.Start = &StartRecord{}
		return json.Unmarshal(r.Data, st.Start)
	case KindRolloutOK:
		st.Ended = true
	case KindStageEnd:
		var s StageRecord
		if err := json.Unmarshal(r.Data, &s); err != nil {
			return err
		}
		if s.OK {
			st.StagesDone[s.Stage] = true
		}
	case KindTray:
		var t TrayRecord
		if err := json.Unmarshal(r.Data, &t); err != nil {
			return err
		}
		for _, u := range t.Results {
			delete(st.Updates, updateKey(t.Tray, u.Component))
		}
		if t.Error == "" {
			st.Trays[t.Tray] = t
		}
	case KindEvent:
		var e EventRecord
		if err := json.Unmarshal(r.Data, &e); err != nil {
			return err
		}
		k := updateKey(e.Tray, e.Component)
		p := st.Updates[k]
		switch {
		case e.TaskMonitor != "":
			p.Monitor = e.TaskMonitor
		case e.Sending:
			p = Pending{Sending: e.At}
		default:
			return nil
		}
		st.Updates[k] = p
	}
	return nil
}
