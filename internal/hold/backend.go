package hold

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"

	"github.com/seamdc/seam/internal/dryrun"
	"github.com/seamdc/seam/internal/topology/hostlist"
)

// Backend keeps a ledger's holds and node records: facilityd's state
// (Memory, saved in its state file or a Kubernetes ConfigMap), or the
// lifecycle store (SQLite or PostgreSQL).
type Backend interface {
	// Begin starts a session. Until it ends (Commit or Rollback) no
	// other session of the same ledger runs, in this process or, for a
	// store shared between processes, in any other: a ledger reads the
	// holds, acts on the scheduler and records what it did as one step.
	Begin(ctx context.Context) (Session, error)
}

// Session is a ledger's exclusive access to its backend.
type Session interface {
	// Hold is owner's hold, nil when it holds nothing.
	Hold(ctx context.Context, owner Owner) (*Hold, error)
	// Place adds nodes to owner's hold (h names the owner, why, by,
	// when, domain, reservation), creating it; nodes held already stay
	// as they are. It returns the nodes it added.
	Place(ctx context.Context, h Hold) ([]string, error)
	// Release removes nodes (nil: all) from owner's hold, by whom and
	// why, and returns the nodes it removed; the hold ends with its
	// last node.
	Release(ctx context.Context, owner Owner, nodes []string, by, why string) ([]string, error)
	// On lists the holds on each of nodes that any holds.
	On(ctx context.Context, nodes []string) (map[string][]Hold, error)
	// All lists every hold, by owner.
	All(ctx context.Context) ([]Hold, error)
	// Records reads the records of nodes (nil: every node that has one).
	Records(ctx context.Context, nodes []string) (map[string]*Record, error)
	// SetRecords writes records; an empty record deletes the node's.
	SetRecords(ctx context.Context, recs map[string]*Record) error
	// Fence refuses the session with ErrFenced when a writer with a
	// newer epoch has written the ledger, and records epoch otherwise
	// (facilityd's leader on Kubernetes; 0: not fenced).
	Fence(ctx context.Context, epoch int64, leader string) error
	Commit() error
	Rollback()
}

// ErrFenced is a write refused because a newer leader has written the
// ledger: this writer is no longer the leader.
var ErrFenced = errors.New("fenced: the ledger was written by a newer leader")

// Book is a ledger kept in memory: the holds by owner, and the record
// of each node. facilityd's state file holds one.
type Book struct {
	Holds map[Owner]*Hold    `json:"holds"`
	Nodes map[string]*Record `json:"nodes"`
}

// NewBook returns an empty book.
func NewBook() Book { return Book{Holds: map[Owner]*Hold{}, Nodes: map[string]*Record{}} }

// Memory is a Backend over a Book in this process's memory, kept (a
// state file, a ConfigMap) by whoever owns the book.
type Memory struct {
	mu    sync.Mutex
	book  *Book
	save  func() error
	fence func() error
	// rec, when set, is a dry run's: each hold placed or released is
	// recorded as what the real ledger would have been written.
	rec *dryrun.Recorder
}

// NewMemory keeps b. save, if set, runs after every session that
// changed it; fence, if set, runs when a session is fenced, before it
// writes anything, and refuses it with its error (a state shared by
// replicas that another replica has claimed). The Book is not copied:
// whoever marshals it for save reads it under the session.
func NewMemory(b *Book, save, fence func() error) *Memory {
	if b.Holds == nil {
		b.Holds = map[Owner]*Hold{}
	}
	if b.Nodes == nil {
		b.Nodes = map[string]*Record{}
	}
	return &Memory{book: b, save: save, fence: fence}
}

// Copy is a new Memory holding a deep copy of what backend holds now,
// saved nowhere: a dry run's ledger, which reads the real one and
// writes only to itself, recording in rec each hold it would have
// placed or released.
func Copy(ctx context.Context, backend Backend, rec *dryrun.Recorder) (*Memory, error) {
	s, err := backend.Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer s.Rollback()
	holds, err := s.All(ctx)
	if err != nil {
		return nil, err
	}
	recs, err := s.Records(ctx, nil)
	if err != nil {
		return nil, err
	}
	b := NewBook()
	for _, h := range holds {
		h.Nodes = slices.Clone(h.Nodes)
		b.Holds[h.Owner] = &h
	}
	for n, r := range recs {
		rc := *r
		rc.Overridden = slices.Clone(r.Overridden)
		b.Nodes[n] = &rc
	}
	m := NewMemory(&b, nil, nil)
	m.rec = rec
	return m, nil
}

// Begin locks the book until the session ends.
func (m *Memory) Begin(context.Context) (Session, error) {
	m.mu.Lock()
	return &memSession{m: m, holds: map[Owner]*Hold{}, nodes: map[string]*Record{}}, nil
}

// memSession stages its changes and writes them to the book at Commit.
type memSession struct {
	m     *Memory
	holds map[Owner]*Hold    // changed holds; nil value: ended
	nodes map[string]*Record // changed records; nil value: deleted
	done  bool
}

func (s *memSession) hold(o Owner) *Hold {
	if h, ok := s.holds[o]; ok {
		return h
	}
	return s.m.book.Holds[o]
}

func (s *memSession) Hold(_ context.Context, o Owner) (*Hold, error) {
	if h := s.hold(o); h != nil {
		c := *h
		c.Nodes = slices.Clone(h.Nodes)
		return &c, nil
	}
	return nil, nil
}

func (s *memSession) Place(_ context.Context, h Hold) ([]string, error) {
	cur := s.hold(h.Owner)
	var have []string
	if cur != nil {
		have = cur.Nodes
	}
	var added []string
	for _, n := range h.Nodes {
		if _, ok := slices.BinarySearch(have, n); !ok {
			added = append(added, n)
		}
	}
	if cur != nil && len(added) == 0 {
		return nil, nil
	}
	nh := h
	if cur != nil {
		nh = *cur
	}
	nh.Nodes = sortedUnion(have, added)
	s.holds[h.Owner] = &nh
	if s.m.rec.Active() {
		s.m.rec.Would(dryrun.Store, "write to the ledger: hold %s on %d node(s) %s", h.Owner, len(added), hostlist.Compress(added))
	}
	return added, nil
}

func (s *memSession) Release(ctx context.Context, o Owner, nodes []string, by, why string) ([]string, error) {
	removed, err := s.release(o, nodes)
	if len(removed) > 0 && s.m.rec.Active() {
		s.m.rec.Would(dryrun.Store, "write to the ledger: release %s from %d node(s) %s", o, len(removed), hostlist.Compress(removed))
	}
	return removed, err
}

func (s *memSession) release(o Owner, nodes []string) ([]string, error) {
	cur := s.hold(o)
	if cur == nil {
		return nil, nil
	}
	if nodes == nil {
		s.holds[o] = nil
		return slices.Clone(cur.Nodes), nil
	}
	drop := map[string]bool{}
	for _, n := range nodes {
		drop[n] = true
	}
	var kept, removed []string
	for _, n := range cur.Nodes {
		if drop[n] {
			removed = append(removed, n)
		} else {
			kept = append(kept, n)
		}
	}
	if len(removed) == 0 {
		return nil, nil
	}
	if len(kept) == 0 {
		s.holds[o] = nil
		return removed, nil
	}
	nh := *cur
	nh.Nodes = kept
	s.holds[o] = &nh
	return removed, nil
}

func (s *memSession) owners() []Owner {
	set := map[Owner]bool{}
	for o := range s.m.book.Holds {
		set[o] = true
	}
	for o := range s.holds {
		set[o] = true
	}
	return slices.Sorted(maps.Keys(set))
}

func (s *memSession) On(_ context.Context, nodes []string) (map[string][]Hold, error) {
	out := map[string][]Hold{}
	if len(nodes) == 0 {
		return out, nil
	}
	want := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		want[n] = true
	}
	for _, o := range s.owners() {
		h := s.hold(o)
		if h == nil {
			continue
		}
		if len(want)*16 < len(h.Nodes) { // few nodes asked: search the hold
			for n := range want {
				if h.Holds(n) {
					out[n] = append(out[n], *h)
				}
			}
			continue
		}
		for _, n := range h.Nodes {
			if want[n] {
				out[n] = append(out[n], *h)
			}
		}
	}
	return out, nil
}

func (s *memSession) All(context.Context) ([]Hold, error) {
	var out []Hold
	for _, o := range s.owners() {
		if h := s.hold(o); h != nil {
			out = append(out, *h)
		}
	}
	return out, nil
}

func (s *memSession) Records(_ context.Context, nodes []string) (map[string]*Record, error) {
	out := map[string]*Record{}
	get := func(n string) {
		r, ok := s.nodes[n]
		if !ok {
			r = s.m.book.Nodes[n]
		}
		if r != nil {
			c := *r
			c.Overridden = slices.Clone(r.Overridden)
			out[n] = &c
		}
	}
	if nodes == nil {
		for n := range s.m.book.Nodes {
			get(n)
		}
		for n := range s.nodes {
			get(n)
		}
		return out, nil
	}
	for _, n := range nodes {
		get(n)
	}
	return out, nil
}

func (s *memSession) SetRecords(_ context.Context, recs map[string]*Record) error {
	for n, r := range recs {
		if r.Empty() {
			s.nodes[n] = nil
			continue
		}
		c := *r
		s.nodes[n] = &c
	}
	return nil
}

func (s *memSession) Fence(context.Context, int64, string) error {
	if s.m.fence == nil {
		return nil
	}
	return s.m.fence()
}

func (s *memSession) Commit() error {
	if s.done {
		return errors.New("hold: session ended")
	}
	s.done = true
	defer s.m.mu.Unlock()
	if len(s.holds) == 0 && len(s.nodes) == 0 {
		return nil
	}
	for o, h := range s.holds {
		if h == nil {
			delete(s.m.book.Holds, o)
		} else {
			s.m.book.Holds[o] = h
		}
	}
	for n, r := range s.nodes {
		if r == nil {
			delete(s.m.book.Nodes, n)
		} else {
			s.m.book.Nodes[n] = r
		}
	}
	if s.m.save != nil {
		return s.m.save()
	}
	return nil
}

func (s *memSession) Rollback() {
	if s.done {
		return
	}
	s.done = true
	s.m.mu.Unlock()
}

func sortedUnion(a, b []string) []string {
	out := make([]string, 0, len(a)+len(b))
	out = append(append(out, a...), b...)
	slices.Sort(out)
	return slices.Compact(out)
}
