package drain

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/seamdc/seam/internal/alarm"
)

// StateFormat is the state file's format.
const StateFormat = "seam.facilityd-state/v1"

// State is what facilityd must not forget across a restart.
type State struct {
	Format string `json:"format"`
	Site   string `json:"site"`
	// Holds by owner.
	Holds map[Owner]*Hold `json:"holds"`
	// Nodes facilityd has drained, or means to, or must leave alone.
	Nodes map[string]*NodeRecord `json:"nodes"`
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

// NodeRecord is what facilityd knows of one node.
type NodeRecord struct {
	// Ours: facilityd drained the node (it was not drained before), with
	// Reason.
	Ours   bool      `json:"ours,omitempty"`
	Reason string    `json:"reason,omitempty"`
	Since  time.Time `json:"since,omitzero"`
	// Pending: facilityd means to drain it and has not seen it drained
	// yet (a crash, a scheduler that refused or timed out).
	Pending bool `json:"pending,omitempty"`
	// External is the reason of a drain facilityd did not make: it is
	// never overwritten, and never undone.
	External string `json:"external,omitempty"`
	// Overridden: an operator undrained the node, or drained it with
	// their own reason, while these holds were on it. facilityd leaves
	// it alone until a hold not in the list comes.
	Overridden []Owner   `json:"overridden,omitempty"`
	OverrideAt time.Time `json:"override_at,omitzero"`
	Override   string    `json:"override,omitempty"`
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
	return &State{Format: StateFormat, Site: site, Holds: map[Owner]*Hold{}, Nodes: map[string]*NodeRecord{}, Refused: map[Owner]*Refusal{},
		Nonces: map[string]time.Time{}}
}

// node returns n's record, creating it.
func (s *State) node(n string) *NodeRecord {
	r := s.Nodes[n]
	if r == nil {
		r = &NodeRecord{}
		s.Nodes[n] = r
	}
	return r
}

// HoldsOn lists the owners holding n, sorted.
func (s *State) HoldsOn(n string) []Owner {
	var out []Owner
	for o, h := range s.Holds {
		if _, ok := slices.BinarySearch(h.Nodes, n); ok {
			out = append(out, o)
		}
	}
	slices.Sort(out)
	return out
}

// holdsOf maps each of nodes that a hold holds to its owners, sorted:
// holdsByNode for the nodes an action touches, in time proportional to
// what is held, not to it times the holds (a hold's nodes are sorted).
func (s *State) holdsOf(nodes []string) map[string][]Owner {
	out := map[string][]Owner{}
	if len(nodes) == 0 || len(s.Holds) == 0 {
		return out
	}
	want := make(map[string]struct{}, len(nodes))
	for _, n := range nodes {
		want[n] = struct{}{}
	}
	for _, o := range slices.Sorted(maps.Keys(s.Holds)) {
		held := s.Holds[o].Nodes
		if len(want)*16 < len(held) { // few nodes asked: search the hold
			for n := range want {
				if _, ok := slices.BinarySearch(held, n); ok {
					out[n] = append(out[n], o)
				}
			}
			continue
		}
		for _, n := range held {
			if _, ok := want[n]; ok {
				out[n] = append(out[n], o)
			}
		}
	}
	return out
}

// holdsByNode maps every held node to its owners, sorted.
func (s *State) holdsByNode() map[string][]Owner {
	out := map[string][]Owner{}
	owners := make([]Owner, 0, len(s.Holds))
	for o := range s.Holds {
		owners = append(owners, o)
	}
	slices.Sort(owners)
	for _, o := range owners {
		for _, n := range s.Holds[o].Nodes {
			out[n] = append(out[n], o)
		}
	}
	return out
}

// StateStore keeps the state: a file (Store) for one facilityd, a
// resource both replicas reach for two.
type StateStore interface {
	Save(*State) error
}

// ErrFenced is a save refused because another replica has written the
// state since this one read it: it is no longer the leader.
var ErrFenced = errors.New("fenced: the state was written by another replica")

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
	for _, m := range []any{&s.Holds, &s.Nodes, &s.Refused, &s.Nonces} {
		switch m := m.(type) {
		case *map[Owner]*Hold:
			if *m == nil {
				*m = map[Owner]*Hold{}
			}
		case *map[string]*NodeRecord:
			if *m == nil {
				*m = map[string]*NodeRecord{}
			}
		case *map[Owner]*Refusal:
			if *m == nil {
				*m = map[Owner]*Refusal{}
			}
		case *map[string]time.Time:
			if *m == nil {
				*m = map[string]time.Time{}
			}
		}
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
