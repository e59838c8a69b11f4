package drain

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/seamdc/seam/internal/alarm"
	"github.com/seamdc/seam/internal/hold"
)

// StateFormat is the state file's format.
const StateFormat = "seam.facilityd-state/v1"

// State is what facilityd must not forget across a restart.
type State struct {
	Format string `json:"format"`
	Site   string `json:"site"`
	// Book is the ledger of holds when no lifecycle store keeps it: the
	// holds by owner, and what the ledger knows of each node (whether
	// seam drained it, or whose drain or undrain it leaves alone).
	hold.Book
	// Refused are drains the storm guard refused, waiting for approval.
	Refused map[Owner]*Refusal `json:"refused,omitempty"`
	// Suppressions in force: planned maintenance, running plans.
	Suppressions []Suppression `json:"suppressions,omitempty"`
	// Drains are the drains of the storm window: when and how many.
	Drains []DrainMark `json:"drains,omitempty"`
	// Nonces of the requests taken, with when they were issued: a
	// request is taken once.
	Nonces map[string]time.Time `json:"nonces,omitempty"`
	// Signaled are the jobs sent checkpoint_now, once each.
	Signaled map[string]time.Time `json:"signaled,omitempty"`
	// Alarms as the stream had them.
	Alarms []alarm.Alarm `json:"alarms,omitempty"`
}

// Refusal is a drain the storm guard refused.
type Refusal struct {
	Owner  Owner        `json:"owner"`
	Domain alarm.Domain `json:"domain"`
	Nodes  []string     `json:"nodes"`
	At     time.Time    `json:"at"`
	Why    string       `json:"why"`
}

// Suppression holds drains back for a domain: planned maintenance, or a
// SAT or IST plan running on it.
type Suppression struct {
	Domain alarm.Domain `json:"domain"`
	Until  time.Time    `json:"until"`
	Why    string       `json:"why"`
	By     string       `json:"by"`
}

// DrainMark is one drain in the storm window.
type DrainMark struct {
	At    time.Time `json:"at"`
	Nodes []string  `json:"nodes"`
}

// NewState returns an empty state for site.
func NewState(site string) *State {
	return &State{Format: StateFormat, Site: site, Book: hold.NewBook(), Refused: map[Owner]*Refusal{}, Nonces: map[string]time.Time{}}
}

// StateStore keeps the state: a file (Store) for one facilityd, a
// resource both replicas reach for two.
type StateStore interface {
	Save(*State) error
}

// ErrFenced is a save refused because another replica has written the
// state since this one read it, or a ledger write refused because a
// newer leader has written the ledger: this replica is no longer the
// leader.
var ErrFenced = hold.ErrFenced

// Store keeps the state in a file, replaced atomically.
type Store struct {
	Path string
}

// Load reads the state, or returns an empty one when there is none.
func (st Store) Load(site string) (*State, error) {
	b, err := os.ReadFile(st.Path)
	if errors.Is(err, os.ErrNotExist) {
		return NewState(site), nil
	}
	if err != nil {
		return nil, fmt.Errorf("facilityd state: %w", err)
	}
	return DecodeState(st.Path, b, site)
}

// DecodeState reads a state's JSON (from what, for errors) and checks
// its format and site.
func DecodeState(what string, b []byte, site string) (*State, error) {
	s := NewState(site)
	if err := json.Unmarshal(b, s); err != nil {
		return nil, fmt.Errorf("facilityd state %s: %w (move it aside to start afresh: facilityd then knows no holds, and leaves every drain it finds alone)", what, err)
	}
	switch {
	case s.Format != StateFormat:
		return nil, fmt.Errorf("facilityd state %s: format %q, want %q", what, s.Format, StateFormat)
	case s.Site != site:
		return nil, fmt.Errorf("facilityd state %s is of site %q, not %q", what, s.Site, site)
	}
	if s.Holds == nil {
		s.Holds = map[Owner]*hold.Hold{}
	}
	if s.Nodes == nil {
		s.Nodes = map[string]*hold.Record{}
	}
	if s.Refused == nil {
		s.Refused = map[Owner]*Refusal{}
	}
	if s.Nonces == nil {
		s.Nonces = map[string]time.Time{}
	}
	return s, nil
}

// Save writes the state through a temporary file, synced, and a rename.
func (st Store) Save(s *State) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("facilityd state: %w", err)
	}
	dir := filepath.Dir(st.Path)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("facilityd state: %w", err)
	}
	f, err := os.CreateTemp(dir, ".state-*.json")
	if err != nil {
		return fmt.Errorf("facilityd state: %w", err)
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return fmt.Errorf("facilityd state: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("facilityd state: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("facilityd state: %w", err)
	}
	if err := os.Rename(f.Name(), st.Path); err != nil {
		return fmt.Errorf("facilityd state: %w", err)
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}
