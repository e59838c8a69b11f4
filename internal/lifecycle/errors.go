package lifecycle

import (
	"errors"
	"fmt"
	"time"
)

// The errors a change can meet, each saying what to do. errors.As finds
// them through any wrapping.

// NotAllowedError is a transition the state machine does not have.
type NotAllowedError struct {
	Element  string
	From, To State
	Detail   string
}

func (e *NotAllowedError) Error() string {
	what := "an element"
	if e.Element != "" {
		what = e.Element
	}
	return fmt.Sprintf("%s cannot go from %s to %s: %s", what, e.From, e.To, e.Detail)
}

// ConflictError is a change that lost a race: the element moved after
// the change was prepared (and signed). Nothing of the change was
// written; look again, and prepare it anew if it still applies.
type ConflictError struct {
	Element string
	// Expected is what the change was prepared against; Now what the
	// element is.
	Expected, Now State
	Version       int64 // the element's version the change expected
	NowVersion    int64
	Since         time.Time
	By            string // who made the element's last change
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("conflict: %s changed after this change was prepared (it expected %s at version %d; it is %s at version %d, since %s, by %s): nothing was written; look again and retry if the change still applies",
		e.Element, e.Expected, e.Version, e.Now, e.NowVersion, fmtTime(e.Since), e.By)
}

// EvidenceError is evidence a transition needs that is missing or does
// not hold.
type EvidenceError struct {
	Element string
	Need    Need
	Detail  string
}

func (e *EvidenceError) Error() string {
	return fmt.Sprintf("%s: evidence (%s) refused: %s", e.Element, e.Need, e.Detail)
}

// AccessError is a change its maker may not make, or whose maker could
// not be authenticated.
type AccessError struct {
	Actor  string
	Action string
	Detail string
}

func (e *AccessError) Error() string {
	who := e.Actor
	if who == "" {
		who = "the signer"
	}
	return fmt.Sprintf("access: %s may not %s: %s", who, e.Action, e.Detail)
}

// ClockError is a change timed before the last event of an element:
// this machine's clock is behind, or went backwards.
type ClockError struct {
	Element   string
	At, Last  time.Time
	LastActor string
}

func (e *ClockError) Error() string {
	return fmt.Sprintf("the clock reads %s, before the last event of %s (%s, by %s): this machine's clock is behind or went backwards; fix it (NTP) and retry: history is kept in time order",
		fmtTime(e.At), e.Element, fmtTime(e.Last), e.LastActor)
}

// NotFoundError is a name that is no element, node or serial of the
// store.
type NotFoundError struct {
	Name string
}

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("%q is not an element, node name or serial of this store", e.Name)
}

// StoreError is a store that cannot serve: locked by another writer,
// gone in the middle of a transaction, of a newer version, or not a
// lifecycle store. Nothing of the change was written.
type StoreError struct {
	Store string
	Kind  string // locked, gone, newer, schema, open
	Err   error
}

// Store error kinds.
const (
	StoreLocked = "locked"
	StoreGone   = "gone"
	StoreNewer  = "newer"
	StoreSchema = "schema"
	StoreOpen   = "open"
)

func (e *StoreError) Error() string { return fmt.Sprintf("lifecycle store %s: %v", e.Store, e.Err) }

func (e *StoreError) Unwrap() error { return e.Err }

// IsConflict reports whether err is a lost race (retry after a look).
func IsConflict(err error) bool {
	var c *ConflictError
	var lc *LogConflictError
	return errors.As(err, &c) || errors.As(err, &lc)
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return t.UTC().Format("2006-01-02T15:04:05.000000Z")
}
