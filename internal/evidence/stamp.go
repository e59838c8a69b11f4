package evidence

import (
	"context"
	"encoding/base64"
	"fmt"
	"sync"
	"time"

	"github.com/seamdc/seam/internal/tsa"
)

// RFC 3161 time-stamps of seals, as the lifecycle store keeps them
// (docs/lifecycle.md): with Options.TimeStamp, the newest seal is
// stamped in the background after each seal, outside the bundle's locks,
// so that an authority's outage never blocks or slows a step or a seal.
// One request at a time, the newest seal first, bounded by a timeout; a
// stamp that fails is tried again at the next seal. The token comes back
// into the journal as a stamp record, chained like every record; it is
// checked offline (tsa.Verify) over the seal's statement bytes against
// the roots a reader names. A stamp of a seal proves the statement, and
// through its checkpoint every record and sample byte before it, existed
// by the authority's time.

// KindStamp is a time-stamp of a seal record.
const KindStamp = "stamp"

// StampTimeout bounds one request to the authority.
const StampTimeout = 5 * time.Second

// StampData is the data of a stamp record.
type StampData struct {
	// Seal is the seq of the seal record stamped.
	Seal int64 `json:"seal"`
	// Token is the RFC 3161 TimeStampToken (DER, base64) over the seal's
	// statement bytes.
	Token string `json:"token"`
}

// stamper is a bundle's background time-stamping.
type stamper struct {
	mu      sync.Mutex
	running bool
	again   bool
	err     error // what the last attempt said (nil: it succeeded, or none was tried)
	wg      sync.WaitGroup
	newest  int64  // the newest seal record (under Bundle.mu)
	stmt    []byte // its statement
	stamped int64  // the newest seal stamped (under Bundle.mu)
	stopped bool   // no more stamp records: the bundle is closing (under Bundle.mu)
}

// sealedLocked notes a seal record for the stamper (Bundle.mu held).
func (b *Bundle) sealedLocked(seq int64, statement string) {
	if b.opt.TimeStamp == nil {
		return
	}
	b.st.newest, b.st.stmt = seq, []byte(statement)
}

// stampSoon stamps the newest seal in the background: one request at a
// time; a seal while one runs makes it go again for the newest.
func (b *Bundle) stampSoon() {
	if b.opt.TimeStamp == nil {
		return
	}
	s := &b.st
	s.mu.Lock()
	if s.running {
		s.again = true
		s.mu.Unlock()
		return
	}
	s.running = true
	s.wg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		for {
			err := b.stampNewest()
			s.mu.Lock()
			s.err = err
			again := s.again
			s.again = false
			if !again {
				s.running = false
				s.mu.Unlock()
				return
			}
			s.mu.Unlock()
		}
	}()
}

// stampNewest stamps the newest seal if it is not stamped yet and
// appends the stamp record.
func (b *Bundle) stampNewest() error {
	b.mu.Lock()
	seq, stmt, done := b.st.newest, b.st.stmt, b.st.stopped || b.st.stamped >= b.st.newest
	b.mu.Unlock()
	if done {
		return nil
	}
	timeout := b.opt.StampTimeout
	if timeout <= 0 {
		timeout = StampTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	st, err := b.opt.TimeStamp.Stamp(ctx, stmt)
	if err != nil {
		return fmt.Errorf("evidence: seal record %d is not time-stamped: %w", seq, err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.st.stopped || b.st.stamped >= seq {
		return nil
	}
	if _, err := b.appendLocked(KindStamp, "", StampData{Seal: seq, Token: base64.StdEncoding.EncodeToString(st.Token)}); err != nil {
		return err
	}
	b.st.stamped = seq
	b.dirty = true // the next sync makes it durable
	return nil
}

// StampError is what the last background stamp said (nil: it
// succeeded, or none was tried).
func (b *Bundle) StampError() error {
	b.st.mu.Lock()
	defer b.st.mu.Unlock()
	return b.st.err
}

// stampLast stamps the newest seal before the bundle closes: it waits
// for the stamp in flight, and tries once more for the newest seal, each
// bounded by the timeout (an authority that refuses answers at once).
func (b *Bundle) stampLast() {
	if b.opt.TimeStamp == nil {
		return
	}
	b.stampSoon()
	b.st.wg.Wait()
}

// stopStamps ends stamp records (Bundle.mu held): what a stamp in
// flight brings back is dropped.
func (b *Bundle) stopStampsLocked() { b.st.stopped = true }

// stampCheck is a seal as a later stamp record refers to it.
type stampCheck struct {
	seq       int64
	statement string
	covers    int64
	ok        bool
}

// keepStamps is how many recent seals a stamp record may name.
const keepStamps = 256

// recentSeal keeps a seal's statement for the stamp records after it.
func (a *auditor) recentSeal(s sealRec) {
	a.stampable = append(a.stampable, stampCheck{seq: s.seq, statement: s.data.Statement, covers: s.st.Seq, ok: s.ok})
	if len(a.stampable) > keepStamps {
		a.stampable = a.stampable[1:]
	}
	if s.ok {
		a.unstamped = append(a.unstamped, s.seq)
	}
}

// stamp checks a stamp record: it names a recent valid seal, and with
// AuditOptions.TimeStampRoots its token verifies over that seal's
// statement, from an authority under the roots.
func (a *auditor) stamp(r Record) {
	var sd StampData
	if err := strictJSON(r.Data, &sd); err != nil {
		a.problem("stamp record %d: %v", r.Seq, err)
		return
	}
	a.rep.Stamps++
	var seal *stampCheck
	for i := len(a.stampable) - 1; i >= 0; i-- {
		if a.stampable[i].seq == sd.Seal {
			seal = &a.stampable[i]
			break
		}
	}
	switch {
	case seal == nil:
		a.problem("stamp record %d stamps record %d, which is not a recent seal of this journal", r.Seq, sd.Seal)
		return
	case !seal.ok:
		return // the seal's problem is said
	}
	der, err := base64.StdEncoding.DecodeString(sd.Token)
	if err != nil {
		a.problem("stamp record %d (of seal record %d): its token is not base64: %v", r.Seq, sd.Seal, err)
		return
	}
	if a.opt.TimeStampRoots == nil {
		a.rep.StampsUnverified++
		return
	}
	st, err := tsa.Verify(der, []byte(seal.statement), a.opt.TimeStampRoots)
	if err != nil {
		a.problem("stamp record %d (of seal record %d): %v", r.Seq, sd.Seal, err)
		return
	}
	if sd.Seal > a.rep.StampedSeal {
		a.rep.StampedSeal, a.rep.StampedCovers, a.rep.StampedAt, a.rep.StampedBy = sd.Seal, seal.covers, st.Time, st.Authority
		i := 0
		for i < len(a.unstamped) && a.unstamped[i] <= sd.Seal {
			i++
		}
		a.unstamped = a.unstamped[i:]
	}
}

// checkStamps lists the valid seals after the newest verified stamp.
func (a *auditor) checkStamps() {
	if a.opt.TimeStampRoots == nil {
		return
	}
	a.rep.UnstampedSeals = len(a.unstamped)
	a.rep.Unstamped = a.unstamped[:min(len(a.unstamped), maxListed)]
}

// StampLine is what sat verify says of the bundle's time-stamps: the
// newest seal a verified stamp covers, and the seals after it without
// one; "" when there is nothing to say (no stamps, no roots).
func (r *Report) StampLine(rootsGiven bool) string {
	switch {
	case !rootsGiven && r.Stamps == 0:
		return ""
	case !rootsGiven:
		return fmt.Sprintf("time-stamps: %d present, not verified (give --time-stamp-roots FILE)", r.Stamps)
	}
	s := "time-stamped: no seal has a verified time-stamp"
	if r.StampedSeal > 0 {
		s = fmt.Sprintf("time-stamped: seal record %d (up to record %d) at %s by %s", r.StampedSeal, r.StampedCovers,
			r.StampedAt.UTC().Format(time.RFC3339), r.StampedBy)
	}
	if r.UnstampedSeals > 0 {
		s += fmt.Sprintf("; %d seal(s) after it have no time-stamp: seal record(s) %s", r.UnstampedSeals, seqList(r.Unstamped, r.UnstampedSeals))
	}
	return s
}

func seqList(seqs []int64, total int) string {
	const show = 10
	s := ""
	for i, q := range seqs {
		if i == show {
			break
		}
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprint(q)
	}
	if total > show {
		s += fmt.Sprintf(" and %d more", total-show)
	}
	return s
}
