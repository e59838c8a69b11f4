package evidence

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/seamdc/seam/internal/clock"
)

// State is what a resumed bundle already holds.
type State struct {
	// Report is the audit the bundle passed before it was reopened.
	Report *Report
	// Ends are the completed cases, in order.
	Ends []CaseEnd
	// RunStart is the data of the bundle's first run_start record, and
	// Started its time.
	RunStart json.RawMessage
	Started  time.Time
	// Resumes counts the resume records before this one.
	Resumes int
	// LastTime is the time of the last record kept.
	LastTime time.Time
	// DroppedJournal and DroppedSamples are the bytes cut on reopening:
	// a half-written record, records after the last seal of a signed
	// bundle, samples after the last (sealed) checkpoint.
	DroppedJournal, DroppedSamples int64
	DroppedRecords                 int
}

// ResumeError says why a bundle may not be resumed.
type ResumeError struct {
	Dir     string
	Reasons []string
}

func (e *ResumeError) Error() string {
	return fmt.Sprintf("cannot resume %s: %s", e.Dir, strings.Join(e.Reasons, "; "))
}

// Resume reopens a bundle after a crash or an abort, only if it is of
// FormatVersion (FormatV2 is read, never written) and verifies: Audit
// must find nothing wrong with what it holds, the run must not have
// ended, and a signed bundle resumes signed (an unsigned one unsigned).
// It then cuts what no checkpoint covers: a half-written last line, the
// samples after the last checkpoint, and in a signed bundle everything
// after its last seal's checkpoint (the seal itself is kept), so that
// nothing unsigned is signed later. It never extends
// a file: a file shorter than its checkpoint does not verify in the
// first place. A resume record keeps the chain and says what was cut.
//
// accept, if not nil, sees the state before anything is changed and may
// refuse (another plan, another site): the bundle is then left as it was.
func Resume(dir string, c clock.Clock, opt Options, accept func(*State) error) (*Bundle, *State, error) {
	rep, err := Audit(dir, AuditOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("cannot resume %s: %w", dir, err)
	}
	if len(rep.pending) > 0 && rep.OK() && rep.Format != FormatV2 {
		// a stop between recording a file (or the run's end) and putting
		// it in place: finish what was recorded, then look again
		if err := completePending(dir, rep.pending); err != nil {
			return nil, nil, fmt.Errorf("cannot resume %s: %w", dir, err)
		}
		if rep, err = Audit(dir, AuditOptions{}); err != nil {
			return nil, nil, fmt.Errorf("cannot resume %s: %w", dir, err)
		}
	}
	if st, err := os.Lstat(filepath.Join(dir, JournalFile)); err == nil && rep.Records == 0 && st.Size() == rep.PartialJournal && onlyStarted(dir) {
		// stopped before its first record was whole: start it again
		for _, n := range []string{JournalFile, SamplesFile} {
			if err := os.Remove(filepath.Join(dir, n)); err != nil && !os.IsNotExist(err) {
				return nil, nil, fmt.Errorf("cannot resume %s: %w", dir, err)
			}
		}
		st := &State{Report: rep}
		if accept != nil {
			if err := accept(st); err != nil {
				return nil, nil, &ResumeError{dir, []string{err.Error()}}
			}
		}
		b, err := createIn(dir, c, opt)
		if err != nil {
			return nil, nil, fmt.Errorf("cannot resume %s: %w", dir, err)
		}
		return b, st, nil
	}
	if reasons := resumable(rep, opt); len(reasons) > 0 {
		return nil, nil, &ResumeError{dir, reasons}
	}
	// continue after the last checkpoint, or in a signed bundle after the
	// checkpoint of its last seal (whose record is written again)
	cut := cutPoint{cp: rep.state.lastCP, seq: rep.state.lastCP.seq, offset: rep.state.lastCP.offset}
	if s := rep.state.sealed; s != nil {
		cut = cutPoint{cp: s.cp, seq: s.cp.seq, offset: s.cp.offset, reseal: &s.data}
	}
	// a file recorded after the cut loses its record with it: the run
	// must write it again (FileDigest no longer has it)
	for n, seq := range rep.state.fileSeqs {
		if seq > cut.seq {
			delete(rep.state.files, n)
		}
	}
	st := &State{Report: rep, RunStart: rep.state.runStart, Started: rep.state.started, Resumes: rep.state.resumes, LastTime: rep.state.lastTime}
	st.DroppedRecords = rep.Records - int(cut.seq)
	if cut.reseal != nil {
		st.DroppedRecords-- // the seal is written again
	}
	for _, ac := range rep.CaseAudits {
		if ac.Record <= cut.seq {
			st.Ends = append(st.Ends, ac.End)
		}
	}
	if accept != nil {
		if err := accept(st); err != nil {
			return nil, nil, &ResumeError{dir, []string{err.Error()}}
		}
	}
	b, err := reopen(dir, c, opt, rep, cut, st)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot resume %s: %w", dir, err)
	}
	return b, st, nil
}

// resumable lists why a bundle may not be resumed.
func resumable(rep *Report, opt Options) []string {
	var out []string
	for _, p := range rep.Problems {
		out = append(out, "it does not verify: "+p)
	}
	for _, m := range rep.Mismatches {
		out = append(out, "it does not re-grade: "+m.String())
	}
	switch {
	case rep.Complete:
		out = append(out, fmt.Sprintf("the run finished (run_end is record %d): a finished bundle is extended only by a signed amendment", rep.RunEnd))
	case rep.Manifest != nil:
		out = append(out, "it has a manifest: the run finished")
	}
	if rep.Bundle == "" {
		out = append(out, "it is not a "+FormatVersion+" bundle")
	}
	if rep.Format == FormatV2 {
		out = append(out, v2Unwritable)
	}
	switch {
	case rep.Signed && opt.Signer == nil:
		out = append(out, fmt.Sprintf("it is signed (by %s): resume it signed, with --sign-key", keyList(rep.state.runKeys)))
	case !rep.Signed && opt.Signer != nil && rep.Cases+rep.state.resumes > 0 || !rep.Signed && opt.Signer != nil && rep.state.runStart != nil:
		out = append(out, "it is unsigned: resume it unsigned (--unsigned), or start a new bundle; a signature now would vouch for records nobody signed")
	}
	return out
}

// v2Unwritable says why a FormatV2 bundle is neither resumed nor
// amended.
const v2Unwritable = "it is a " + FormatV2 + " bundle: this sat reads it but writes only " + FormatVersion +
	" records, and a journal of both would hold records' data in two forms; go on with the sat that wrote it, or start a new bundle"

// cutPoint is where a resumed journal continues.
type cutPoint struct {
	cp     cpEntry
	seq    int64 // the last record kept
	offset int64 // journal bytes kept
	reseal *SealData
}

func reopen(dir string, c clock.Clock, opt Options, rep *Report, cut cutPoint, st *State) (*Bundle, error) {
	jpath, spath := filepath.Join(dir, JournalFile), filepath.Join(dir, SamplesFile)
	jinfo, err := os.Lstat(jpath)
	if err != nil {
		return nil, err
	}
	sinfo, err := os.Lstat(spath)
	if err != nil {
		return nil, err
	}
	if !jinfo.Mode().IsRegular() || !sinfo.Mode().IsRegular() {
		return nil, fmt.Errorf("%s and %s must be regular files", JournalFile, SamplesFile)
	}
	if jinfo.Size() < cut.offset || sinfo.Size() < cut.cp.bytes {
		return nil, fmt.Errorf("a file is shorter than what verified: it changed while being resumed")
	}
	prev, err := hashAt(jpath, cut.offset)
	if err != nil {
		return nil, err
	}
	st.DroppedJournal = jinfo.Size() - cut.offset
	st.DroppedSamples = sinfo.Size() - cut.cp.bytes
	if err := os.Truncate(jpath, cut.offset); err != nil {
		return nil, err
	}
	if err := os.Truncate(spath, cut.cp.bytes); err != nil {
		return nil, err
	}
	removeLeftovers(dir)
	b := newBundle(dir, c, opt)
	b.id, b.seq, b.prev = rep.Bundle, cut.seq, prev
	b.cp = cpRef{seq: cut.cp.seq, hash: cut.cp.hash, bytes: cut.cp.bytes, dig: cut.cp.digest}
	if b.journal, err = os.OpenFile(jpath, os.O_APPEND|os.O_WRONLY, 0o644); err != nil {
		return nil, err
	}
	if b.samples, err = os.OpenFile(spath, os.O_APPEND|os.O_RDWR, 0o644); err != nil {
		return nil, err
	}
	if _, err := io.Copy(b.sampled, io.NewSectionReader(b.samples, 0, cut.cp.bytes)); err != nil {
		return nil, err
	}
	b.nSamples = cut.cp.bytes
	b.jw, b.sw = newWriters(b.journal, b.samples)
	b.mu.Lock()
	defer b.mu.Unlock()
	if cut.reseal != nil {
		r, err := b.appendLocked(KindSeal, "", *cut.reseal)
		if err != nil {
			return nil, err
		}
		b.sealed, b.sealRec = cut.cp.seq, r.Seq
	}
	completed := []string{}
	for _, e := range st.Ends {
		completed = append(completed, e.Result.ID)
	}
	if _, err := b.appendLocked(KindResume, "", map[string]any{"completed": completed, "dropped_journal_bytes": st.DroppedJournal,
		"dropped_records": st.DroppedRecords, "dropped_sample_bytes": st.DroppedSamples}); err != nil {
		return nil, err
	}
	return b, b.syncLocked()
}

// hashAt is the hash of the record that ends at byte offset of the
// journal (Genesis at 0), read from its last line.
func hashAt(path string, offset int64) (string, error) {
	if offset == 0 {
		return Genesis, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	start := max(0, offset-MaxRecord-1)
	buf := make([]byte, offset-start)
	if _, err := f.ReadAt(buf, start); err != nil {
		return "", err
	}
	buf = buf[:len(buf)-1] // its newline
	if i := lastIndexByte(buf, '\n'); i >= 0 {
		buf = buf[i+1:]
	}
	r, err := parseRecord(buf, true)
	if err != nil {
		return "", err
	}
	return r.Hash, nil
}

func lastIndexByte(b []byte, c byte) int {
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == c {
			return i
		}
	}
	return -1
}

// onlyStarted reports whether dir holds nothing but what a bundle holds
// in its first moments: the journal, the samples, the run's log.
func onlyStarted(dir string) bool {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range entries {
		switch n := e.Name(); {
		case n == JournalFile || n == SamplesFile || n == LogFile || strings.HasPrefix(n, tmpPrefix):
		default:
			return false
		}
	}
	return true
}

// completePending renames into place what the journal recorded but a
// stop left in its temporary file.
func completePending(dir string, names []string) error {
	for _, n := range names {
		path := filepath.Join(dir, filepath.FromSlash(n))
		if _, err := os.Lstat(tmpPath(path)); err != nil {
			continue
		}
		if n == ManifestFile || n == SignatureFile {
			continue // placePending, in its order
		}
		if err := os.Rename(tmpPath(path), path); err != nil {
			return err
		}
	}
	return placePending(dir)
}

// removeLeftovers deletes files a crash left half-written.
func removeLeftovers(dir string) {
	for _, d := range []string{dir, filepath.Join(dir, AttachDir)} {
		entries, _ := os.ReadDir(d)
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), tmpPrefix) && e.Type().IsRegular() {
				_ = os.Remove(filepath.Join(d, e.Name()))
			}
		}
	}
}

// LastTime is the time of the journal's last complete record, read from
// the end of the file: a resumed simulation starts after it, so that
// site time never goes back within a bundle.
func LastTime(dir string) (time.Time, error) {
	f, size, err := openRegular(dir, JournalFile)
	if err != nil {
		return time.Time{}, err
	}
	defer f.Close()
	start := max(0, size-MaxRecord-1)
	buf := make([]byte, size-start)
	if _, err := f.ReadAt(buf, start); err != nil && !errors.Is(err, io.EOF) {
		return time.Time{}, err
	}
	end := lastIndexByte(buf, '\n')
	if end < 0 {
		return time.Time{}, fmt.Errorf("%s has no complete record", JournalFile)
	}
	buf = buf[:end]
	if i := lastIndexByte(buf, '\n'); i >= 0 {
		buf = buf[i+1:]
	}
	var r Record
	if err := json.Unmarshal(buf, &r); err != nil {
		return time.Time{}, fmt.Errorf("%s: its last record: %w", JournalFile, err)
	}
	return r.Time, nil
}
