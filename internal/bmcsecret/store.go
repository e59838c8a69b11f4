package bmcsecret

import (
	"fmt"
	"maps"
	"strings"
	"sync"
)

// Store is a secrets file that many goroutines change at once (a
// rotation of many BMCs): each change is on disk, whole, before Set
// returns, and the changes that arrive while the file is being written
// go together in the next write (a group commit), so that a thousand
// BMCs cost far fewer than a thousand writes.
type Store struct {
	mu      sync.Mutex
	cond    *sync.Cond
	f       *File
	gen     uint64 // changes made
	saved   uint64 // changes on disk
	writing bool
	err     error // the last write's error
}

// NewStore changes f through the store.
func NewStore(f *File) *Store {
	s := &Store{f: f}
	s.cond = sync.NewCond(&s.mu)
	return s
}

// Path is the file's path.
func (s *Store) Path() string { return s.f.Path }

// Entry is the account of the BMC called name now (File.Entry).
func (s *Store) Entry(name string) (Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.f.Entry(name)
}

// Rotation is the rotation under way, or nil.
func (s *Store) Rotation() *Rotation {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f.Rotation == nil {
		return nil
	}
	r := *s.f.Rotation
	return &r
}

// Set gives the BMC called name its entry e and returns once the file
// holding it is on disk.
func (s *Store) Set(name string, e Entry) error {
	s.mu.Lock()
	s.f.BMCs[name] = e
	return s.commitLocked()
}

// SetRotation records the rotation under way (nil: none) and returns
// once it is on disk.
func (s *Store) SetRotation(r *Rotation) error {
	s.mu.Lock()
	s.f.Rotation = r
	return s.commitLocked()
}

// commitLocked waits, with s.mu held (and released on return), until
// the change just made is on disk: it writes the file itself when no
// one else is, else waits for the write under way and, if that began
// before the change, the next.
func (s *Store) commitLocked() error {
	defer s.mu.Unlock()
	s.gen++
	mine := s.gen
	for s.saved < mine {
		if s.writing {
			s.cond.Wait()
			continue
		}
		s.writing = true
		upTo := s.gen
		snap := &File{Path: s.f.Path, Mode: s.f.Mode, BMCs: maps.Clone(s.f.BMCs), Rotation: s.f.Rotation}
		s.mu.Unlock()
		err := snap.Save()
		s.mu.Lock()
		s.writing = false
		s.err = err
		if err == nil {
			s.saved = upTo
		}
		s.cond.Broadcast()
		if err != nil {
			return err
		}
	}
	return nil
}

// Describe says what changes from one entry to the next, naming
// accounts and which secret, never a secret.
func Describe(old, e Entry) string {
	var out []string
	if e.User != old.User {
		out = append(out, fmt.Sprintf("active account %s (was %s)", e.User, old.User))
	}
	if e.Active != old.Active {
		out = append(out, "a new active secret")
	}
	switch {
	case e.Pending != "" && e.Pending != old.Pending:
		out = append(out, "a pending secret")
	case e.Pending == "" && old.Pending != "":
		out = append(out, "no pending secret")
	}
	if e.Standby != old.Standby {
		out = append(out, "standby account "+orNone(e.Standby))
	}
	if !e.Rotated.Equal(old.Rotated) {
		out = append(out, "rotated at "+e.Rotated.UTC().Format("2006-01-02T15:04:05Z"))
	}
	if len(out) == 0 {
		return "unchanged"
	}
	return strings.Join(out, ", ")
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
