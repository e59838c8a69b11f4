package evidence

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/seamdc/seam/internal/clock"
)

// Purposes of an amendment.
const (
	PurposeSignOff = "sign-off" // a witness or the accepting engineer signs the run
	PurposeAttach  = "attach"   // a file attached after the run (a photo, a calibration certificate)
	PurposeRetry   = "retry"    // a case run again after the end
)

// Amendment is the data of an amend record: what the segment is for,
// who signs it in which role, and the manifest it follows.
type Amendment struct {
	Purpose string `json:"purpose"`
	Role    string `json:"role"`
	By      string `json:"by"`
	Note    string `json:"note,omitempty"`
	// Case is the case a retry runs again.
	Case     string `json:"case,omitempty"`
	Manifest string `json:"manifest"`
}

// Amender writes one amendment segment after a finished run's end:
// records and files chained after everything signed, closed with a seal
// by its signer. Nothing written before is changed.
type Amender struct {
	b     *Bundle
	am    Amendment
	start int64 // journal bytes before the amendment
	// samples.csv's bytes before it (a retry appends samples)
	startSamples int64
	files        []string // written, for Abandon
	closed       bool
	rep          *Report // the bundle's audit before the amendment
	Segment      int     // its number, 1 for the first
}

// Report is the audit of the bundle the amendment follows.
func (a *Amender) Report() *Report { return a.rep }

// Bundle is the bundle the amendment writes to, for a retry that runs a
// case: its records and samples are the amendment's, made durable only
// when Close signs it (its Seal and Sync checkpoint, never sign).
func (a *Amender) Bundle() *Bundle { return a.b }

// ErrNotFinished is returned (wrapped) by Amend for a run that has not
// ended: resume it instead.
var ErrNotFinished = errors.New("the run has not finished")

// Amend opens a finished bundle for a signed amendment. The bundle must
// be of FormatVersion (a FormatV2 bundle is read, never written) and
// verify, in full, with its manifest; am.Manifest is filled in. The
// signer signs the segment when it is closed; Abandon undoes it. An
// amendment's records take their times from c.
func Amend(dir string, signer Signer, am Amendment, c clock.Clock) (*Amender, error) {
	if signer == nil {
		return nil, errors.New("an amendment must be signed: give a key")
	}
	if am.Purpose == "" || am.Role == "" || am.By == "" {
		return nil, errors.New("an amendment needs a purpose, a role and who signs it")
	}
	rep, err := Audit(dir, AuditOptions{})
	if err != nil {
		return nil, err
	}
	if rep.Format == FormatV2 {
		return nil, fmt.Errorf("cannot amend %s: %s", dir, v2Unwritable)
	}
	if am.Purpose == PurposeRetry {
		if rep, err = cutInterruptedRetry(dir, rep); err != nil {
			return nil, err
		}
	}
	var reasons []string
	for _, p := range rep.All() {
		reasons = append(reasons, "it does not verify: "+p)
	}
	if !rep.Complete || rep.Manifest == nil {
		reasons = append(reasons, fmt.Errorf("%w: it has no run_end and manifest (resume it with sat run --resume)", ErrNotFinished).Error())
	}
	if rep.PartialJournal > 0 {
		reasons = append(reasons, "its journal ends in a half-written record")
	}
	if len(reasons) > 0 {
		return nil, fmt.Errorf("cannot amend %s: %s", dir, strings.Join(reasons, "; "))
	}
	am.Manifest = rep.ManifestDigest
	jpath := filepath.Join(dir, JournalFile)
	prev, err := hashAt(jpath, rep.JournalBytes)
	if err != nil {
		return nil, err
	}
	b := newBundle(dir, c, Options{Signer: signer, By: am.By})
	b.id, b.seq, b.prev = rep.Bundle, int64(rep.Records), prev
	b.deferred = true // nothing is durable until the amendment is signed
	lc := rep.state.lastCP
	b.cp = cpRef{seq: lc.seq, hash: lc.hash, bytes: lc.bytes, dig: lc.digest}
	if b.journal, err = os.OpenFile(jpath, os.O_APPEND|os.O_WRONLY, 0o644); err != nil {
		return nil, err
	}
	if b.samples, err = os.OpenFile(filepath.Join(dir, SamplesFile), os.O_APPEND|os.O_RDWR, 0o644); err != nil {
		b.journal.Close()
		return nil, err
	}
	b.nSamples = lc.bytes
	b.jw, b.sw = newWriters(b.journal, b.samples)
	if err := hashPrefix(b, lc.bytes); err != nil {
		return nil, err
	}
	a := &Amender{b: b, am: am, start: rep.JournalBytes, startSamples: lc.bytes, rep: rep, Segment: len(rep.Segments) + 1}
	if _, err := b.Append(KindAmend, "", am); err != nil {
		return nil, errors.Join(err, a.Abandon())
	}
	return a, nil
}

// Append adds a record to the amendment.
func (a *Amender) Append(kind, caseID string, data any) error {
	switch kind {
	case KindBundle, KindSeal, KindCheckpoint, KindRunEnd, KindAmend, KindResume:
		return fmt.Errorf("evidence: an amendment cannot write a %s record", kind)
	}
	_, err := a.b.Append(kind, caseID, data)
	return err
}

// Attach writes a file under attachments/ and records its digest.
func (a *Amender) Attach(name string, data []byte) error {
	if strings.ContainsAny(name, "/\\") || name == "" || strings.HasPrefix(name, ".") {
		return fmt.Errorf("attachment name %q: a plain file name, not hidden", name)
	}
	if err := os.MkdirAll(filepath.Join(a.b.dir, AttachDir), 0o755); err != nil {
		return err
	}
	rel := AttachDir + "/" + name
	if _, err := os.Lstat(filepath.Join(a.b.dir, AttachDir, name)); err == nil {
		return fmt.Errorf("%s is already attached: attach it under another name", rel)
	}
	path := filepath.Join(a.b.dir, AttachDir, name)
	if err := writeBytesSynced(tmpPath(path), data); err != nil {
		return err
	}
	a.files = append(a.files, rel)
	_, err := a.b.Append(KindFile, "", FileRecord{Name: rel, Digest: hashOf(data)})
	return err
}

// Close ends the amendment: a checkpoint, then a seal by its signer in
// its role. If signing fails (a prepared signature, a key that
// refuses), the amendment is abandoned and the bundle is as it was.
func (a *Amender) Close() error {
	if a.closed {
		return nil
	}
	err := a.b.seal(a.am.Role)
	if err != nil {
		return errors.Join(err, a.Abandon())
	}
	a.closed = true
	a.b.mu.Lock()
	err = errors.Join(a.b.journal.Close(), a.b.samples.Close())
	a.b.mu.Unlock()
	// the files are recorded and signed: now they go in place
	for _, f := range a.files {
		path := filepath.Join(a.b.dir, filepath.FromSlash(f))
		err = errors.Join(err, os.Rename(tmpPath(path), path))
	}
	if len(a.files) > 0 {
		err = errors.Join(err, syncDir(filepath.Join(a.b.dir, AttachDir)))
	}
	return err
}

// Abandon undoes the amendment: the journal is cut back and the files
// it attached are removed.
func (a *Amender) Abandon() error {
	if a.closed {
		return errors.New("evidence: the amendment is closed and signed")
	}
	a.closed = true
	a.b.mu.Lock()
	defer a.b.mu.Unlock()
	errs := []error{a.b.journal.Close(), a.b.samples.Close(), os.Truncate(filepath.Join(a.b.dir, JournalFile), a.start),
		os.Truncate(filepath.Join(a.b.dir, SamplesFile), a.startSamples)}
	for _, f := range a.files {
		if err := os.Remove(tmpPath(filepath.Join(a.b.dir, filepath.FromSlash(f)))); err != nil && !os.IsNotExist(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// cutInterruptedRetry cuts a retry amendment that no signature closed
// (the retry was killed) back off the bundle's end, journal and samples,
// and audits it again: what it held was never signed, so it is not
// evidence, and the retry runs again from where the bundle was signed.
func cutInterruptedRetry(dir string, rep *Report) (*Report, error) {
	n := len(rep.Segments)
	if n == 0 || rep.Segments[n-1].Seal != nil || rep.Segments[n-1].Purpose != PurposeRetry {
		return rep, nil
	}
	seg := rep.Segments[n-1]
	if err := os.Truncate(filepath.Join(dir, JournalFile), seg.offset); err != nil {
		return nil, fmt.Errorf("cutting back the interrupted retry of %s: %w", seg.Case, err)
	}
	if err := os.Truncate(filepath.Join(dir, SamplesFile), seg.samples); err != nil {
		return nil, fmt.Errorf("cutting back the interrupted retry of %s: %w", seg.Case, err)
	}
	return Audit(dir, AuditOptions{})
}

// hashPrefix sets the bundle's running samples digest to the first n
// bytes of samples.csv.
func hashPrefix(b *Bundle, n int64) error {
	buf := make([]byte, 256<<10)
	for off := int64(0); off < n; {
		k := min(int64(len(buf)), n-off)
		m, err := b.samples.ReadAt(buf[:k], off)
		b.sampled.Write(buf[:m])
		off += int64(m)
		if err != nil && off < n {
			return err
		}
	}
	return nil
}
