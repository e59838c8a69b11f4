package evidence

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"time"

	"golang.org/x/crypto/ssh"
)

// keepCheckpoints is how many recent checkpoints a seal may refer to.
const keepCheckpoints = 256

// samplesCursor hashes samples.csv in step with the journal's
// checkpoints, so that the samples are checked in one sequential read
// with constant memory.
type samplesCursor struct {
	f      *os.File
	size   int64
	h      hash.Hash
	read   int64
	broken bool // a checkpoint failed: later ones are not checked
}

// readJournal streams the journal once, checking every record's form,
// hash and place in the chain, the samples at every checkpoint, and
// collecting what the later checks need.
func (a *auditor) readJournal() error {
	f, _, err := openRegular(a.dir, JournalFile)
	if err != nil {
		return fmt.Errorf("%s is not an evidence bundle: %w", a.dir, err)
	}
	defer f.Close()
	var sc *samplesCursor
	if a.regular(SamplesFile) {
		sf, size, err := openRegular(a.dir, SamplesFile)
		if err != nil {
			a.problem("%s: %v", SamplesFile, err)
		} else {
			defer sf.Close()
			sc = &samplesCursor{f: sf, size: size, h: sha256.New()}
		}
	} else if _, ok := a.entries[SamplesFile]; !ok {
		a.problem("%s is missing: it was deleted", SamplesFile)
	}
	jr := newJournalReader(f)
	for {
		r, _, err := jr.next()
		if errors.Is(err, io.EOF) {
			break
		}
		var chain *ChainError
		if errors.As(err, &chain) {
			a.problem("%s", chain.Error())
			break
		}
		if err != nil {
			return err
		}
		a.rep.Records++
		a.recStart, a.rep.JournalBytes = a.rep.JournalBytes, jr.offset
		a.record(r, jr.offset, sc)
	}
	a.rep.PartialJournal = jr.Partial
	if a.segOpen != nil {
		if a.segOpen.Purpose == PurposeRetry {
			a.problem("amendment %d (from record %d), a retry of case %s, is not closed by a signature: the retry was interrupted (sat run --retry cuts it back and runs it again), or records were appended after the run", a.segOpen.N, a.segOpen.First, a.segOpen.Case)
		} else {
			a.problem("amendment %d (from record %d) is not closed by a signature: it was cut short, or records were appended after the run without one", a.segOpen.N, a.segOpen.First)
		}
	}
	if a.rep.Bundle == "" && a.rep.Records > 0 {
		a.problem("%s: record 1 is not a bundle record: not a %s journal (an older sat wrote it, or its start was removed)", JournalFile, FormatVersion)
	}
	if sc != nil && !sc.broken {
		a.rep.Unverified = sc.size - a.lastCP.bytes
		if a.rep.Unverified > 0 && a.rep.Complete {
			a.problem("%s has %d bytes after the run's last checkpoint (record %d): they were appended after the run", SamplesFile, a.rep.Unverified, a.lastCP.seq)
		}
	}
	if jr.Partial > 0 && a.rep.Complete {
		a.problem("%s ends in a half-written record after the run finished", JournalFile)
	} else if jr.Partial > 0 {
		a.note("%s ends in %d bytes of a half-written record (a crash): not evidence", JournalFile, jr.Partial)
	}
	return nil
}

// record takes one checked record.
func (a *auditor) record(r Record, offset int64, sc *samplesCursor) {
	a.lastTime = r.Time
	a.rep.HeadHash, a.rep.HeadAt = r.Hash, r.Time
	if an := a.opt.Anchor; an != nil && r.Seq == an.Records {
		a.anchorHash = r.Hash
	}
	if r.Seq == 1 {
		a.bundleRecord(r)
	}
	if m := a.rep.Manifest; m != nil && r.Seq == m.Records {
		a.atManifest.seen, a.atManifest.hash, a.atManifest.offset, a.atManifest.cp = true, r.Hash, offset, a.lastCP
	}
	if a.rep.Complete && a.segOpen == nil && r.Kind != KindAmend && r.Kind != KindCheckpoint && r.Kind != KindSeal && r.Kind != KindStamp {
		a.problem("record %d (%s) was appended after the run's end outside a signed amendment", r.Seq, r.Kind)
	}
	inRun := a.segOpen == nil && len(a.segs) == 0 && r.Kind != KindAmend
	if inRun {
		a.runLast = r.Seq
		if r.Kind != KindSeal && r.Kind != KindStamp { // a stamp proves itself, over its seal
			a.nonSeal++
		}
	}
	switch r.Kind {
	case KindCheckpoint:
		a.checkpoint(r, offset, sc)
	case KindSeal:
		a.seal(r)
	case KindStamp:
		a.stamp(r)
	case KindFile:
		var fr FileRecord
		if err := strictJSON(r.Data, &fr); err != nil {
			a.problem("file record %d: %v", r.Seq, err)
			return
		}
		if err := checkName(fr.Name); err != nil {
			a.problem("file record %d: %v", r.Seq, err)
			return
		}
		if _, known := a.files[fr.Name]; !known && len(a.files) >= maxListed {
			a.problem("file record %d: more than %d files recorded: not a journal sat wrote", r.Seq, maxListed)
			return
		}
		a.files[fr.Name] = fileRec{fr.Digest, r.Seq}
		if inRun {
			a.runFiles[fr.Name] = fileRec{fr.Digest, r.Seq}
		}
		if fr.Name == ResultsFile {
			a.resultsAt = r.Seq
		}
		if a.segOpen != nil {
			a.segOpen.Adds = append(a.segOpen.Adds, fr.Name)
		}
	case KindCaseEnd:
		a.caseEnd(r)
	case KindRunEnd:
		if a.rep.Complete {
			a.problem("record %d is a second run_end (the first is record %d): the run was resumed after it ended", r.Seq, a.rep.RunEnd)
			return
		}
		var m Meta
		if err := strictJSON(r.Data, &m); err != nil {
			a.problem("run_end record %d: %v", r.Seq, err)
		}
		a.rep.Complete, a.rep.RunEnd, a.meta, a.metaRaw = true, r.Seq, &m, r.Data
	case KindResume:
		if a.rep.Complete {
			a.problem("record %d: the bundle was resumed after its run ended (run_end is record %d)", r.Seq, a.rep.RunEnd)
		}
		a.rep.state.resumes++
	case KindAmend:
		a.amend(r)
	case KindCapture:
		a.capture(r)
	case "run_start":
		if a.rep.state.runStart == nil {
			a.rep.state.runStart, a.rep.state.started = r.Data, r.Time
		}
	}
	if a.segOpen != nil && r.Kind != KindAmend && r.Kind != KindFile && r.Kind != KindCheckpoint && r.Kind != KindSeal && r.Kind != KindStamp {
		a.segOpen.Adds = append(a.segOpen.Adds, fmt.Sprintf("a %s record", r.Kind))
	}
}

func (a *auditor) bundleRecord(r Record) {
	if r.Kind != KindBundle {
		return
	}
	var br BundleRecord
	if err := strictJSON(r.Data, &br); err != nil {
		a.problem("bundle record 1: %v", err)
		return
	}
	switch br.Format {
	case FormatVersion:
	case FormatV2:
		a.note("bundle format %s, written before a record's data had one form: its records' data is read as the writer wrote it, in its fields' order, so an edit that gives a record's data a key twice (read as its last) or reorders its keys is not detected in this bundle (a %s bundle refuses it)", FormatV2, FormatVersion)
	default:
		a.problem("bundle format %q: this sat reads %q (and %q)", br.Format, FormatVersion, FormatV2)
	}
	a.rep.Bundle, a.rep.Format = br.ID, br.Format
}

// checkpoint checks the samples up to the checkpoint's length against
// its digest, reading on from where the last one left off.
func (a *auditor) checkpoint(r Record, offset int64, sc *samplesCursor) {
	var cp Checkpoint
	if err := strictJSON(r.Data, &cp); err != nil {
		a.problem("checkpoint record %d: %v", r.Seq, err)
		return
	}
	if cp.SamplesBytes < a.lastCP.bytes {
		a.problem("checkpoint record %d counts %d sample bytes, fewer than record %d before it (%d): the journal was edited", r.Seq, cp.SamplesBytes, a.lastCP.seq, a.lastCP.bytes)
		return
	}
	e := cpEntry{seq: r.Seq, hash: r.Hash, bytes: cp.SamplesBytes, digest: cp.SamplesDigest, offset: offset, nonSeal: a.nonSeal}
	a.lastCP = e
	a.cps = append(a.cps, e)
	if len(a.cps) > keepCheckpoints {
		a.cps = a.cps[1:]
	}
	if sc == nil || sc.broken {
		return
	}
	n, err := io.CopyN(sc.h, sc.f, cp.SamplesBytes-sc.read)
	sc.read += n
	switch {
	case err != nil && !errors.Is(err, io.EOF):
		a.problem("%s: %v", SamplesFile, err)
		sc.broken = true
	case sc.read < cp.SamplesBytes:
		a.problem("%s is %d bytes long but checkpoint record %d checkpointed %d: samples were removed (the file was truncated)", SamplesFile, sc.size, r.Seq, cp.SamplesBytes)
		sc.broken = true
	case digestOf(sc.h) != cp.SamplesDigest:
		a.problem("%s bytes 0..%d do not match checkpoint record %d: samples were altered", SamplesFile, cp.SamplesBytes, r.Seq)
		sc.broken = true
	}
}

// seal checks a seal record: its statement names this bundle and a
// recent checkpoint whose record hashes as the statement says, and its
// signature verifies over the statement.
func (a *auditor) seal(r Record) {
	s := sealRec{seq: r.Seq, sig: Signature{Record: r.Seq, Segment: len(a.segs)}}
	if a.segOpen != nil {
		s.sig.Segment = a.segOpen.N
	}
	defer func() { a.keepSeal(s) }()
	if err := strictJSON(r.Data, &s.data); err != nil {
		a.problem("seal record %d: %v", r.Seq, err)
		return
	}
	st, err := parseStatement(s.data.Statement)
	if err != nil {
		a.problem("seal record %d: %v", r.Seq, err)
		return
	}
	s.st = st
	s.sig.Covers, s.sig.Samples, s.sig.Role, s.sig.By, s.sig.At = st.Seq, st.SamplesBytes, st.Role, st.By, st.At
	key, err := checkSignature([]byte(s.data.Statement), []byte(s.data.Signature))
	if key != nil {
		s.sig.key, s.sig.Key = key, ssh.FingerprintSHA256(key)
	}
	if err != nil {
		a.problem("seal record %d: its signature %v", r.Seq, err)
		return
	}
	if a.rep.Bundle != "" && st.Bundle != a.rep.Bundle {
		a.problem("seal record %d was made for bundle %s, not this bundle %s: it was moved from another bundle", r.Seq, st.Bundle, a.rep.Bundle)
		return
	}
	var cp *cpEntry
	for i := len(a.cps) - 1; i >= 0; i-- {
		if a.cps[i].seq == st.Seq {
			cp = &a.cps[i]
			break
		}
	}
	switch {
	case st.Seq >= r.Seq:
		a.problem("seal record %d claims to sign record %d, which comes after it", r.Seq, st.Seq)
		return
	case cp == nil:
		a.problem("seal record %d signs record %d, which is not a recent checkpoint of this journal: the journal was changed after it was signed", r.Seq, st.Seq)
		return
	case cp.hash != st.Head:
		a.problem("seal record %d signs record %d with hash %s, but record %d now hashes to %s: the journal was changed after it was signed (re-chained)", r.Seq, st.Seq, short(st.Head), st.Seq, short(cp.hash))
		return
	case cp.bytes != st.SamplesBytes || cp.digest != st.SamplesDigest:
		a.problem("seal record %d signs %d sample bytes (%s), but checkpoint record %d says %d (%s): the samples were changed after they were signed", r.Seq, st.SamplesBytes, short(st.SamplesDigest), st.Seq, cp.bytes, short(cp.digest))
		return
	}
	s.cp, s.ok = *cp, true
	if s.sig.Segment == 0 {
		a.runKeys[s.sig.Key] = true
		if !trustedKey(key, a.opt.Trusted) && len(a.untrusted) < maxListed {
			a.untrusted = append(a.untrusted, untrustedSeal{r.Seq, s.sig.Key})
		}
	}
	if a.segOpen != nil && s.ok {
		a.closeSegment(r, &s)
	}
}

// keepSeal keeps what the report needs of a seal: its signature (the
// first and the last maxListed/2 of each kind are listed), and the data
// of the run's last valid seal, which Resume writes again.
func (a *auditor) keepSeal(s sealRec) {
	a.recentSeal(s)
	if s.ok {
		sig := s.sig
		a.lastSeal = &sig
	}
	if s.ok && s.sig.Segment == 0 && trustedKey(s.sig.key, a.opt.Trusted) {
		last := s
		a.lastRunSeal = &last
	}
	s.data = SealData{}
	if len(a.seals) < maxListed {
		a.seals = append(a.seals, s)
		return
	}
	// keep the first half, and the newest of the rest
	copy(a.seals[maxListed/2:], a.seals[maxListed/2+1:])
	a.seals[len(a.seals)-1] = s
	a.droppedSeals++
}

func (a *auditor) caseEnd(r Record) {
	var ce CaseEnd
	if err := strictJSON(r.Data, &ce); err != nil {
		a.problem("case_end record %d (%s): %v", r.Seq, r.Case, err)
		return
	}
	a.rep.Cases++
	if ce.Result.ID != r.Case {
		a.problem("case_end record %d is of case %s but its result is of %s", r.Seq, r.Case, ce.Result.ID)
	}
	attempt, seg := max(ce.Attempt, 1), 0
	if a.segOpen != nil {
		seg = a.segOpen.N
		if a.segOpen.Purpose != PurposeRetry || a.segOpen.Case != r.Case {
			a.problem("case_end record %d (%s) is inside amendment %d (%s%s): only a retry amendment of that case runs a case after the run's end", r.Seq, r.Case, seg, a.segOpen.Purpose, caseOf(a.segOpen.Case))
			return
		}
	}
	prev, again := a.byCase[r.Case]
	switch {
	case again && attempt != prev.Attempt+1:
		a.problem("case %s ended twice (records %d and %d) without a new attempt", r.Case, prev.Record, r.Seq)
		return
	case !again && attempt != 1:
		a.problem("case_end record %d is attempt %d of case %s, but no earlier attempt of it ended", r.Seq, attempt, r.Case)
		return
	}
	ac := &AuditCase{Record: r.Seq, End: ce, Attempt: attempt, Segment: seg}
	if a.rep.Plan != nil {
		for i := range a.rep.Plan.Cases {
			if a.rep.Plan.Cases[i].ID == r.Case {
				ac.Plan = &a.rep.Plan.Cases[i]
			}
		}
		if ac.Plan == nil {
			a.rep.Mismatches = append(a.rep.Mismatches, Mismatch{Case: r.Case, Recorded: string(ce.Result.Outcome), Regrade: "—", Detail: "the plan in the bundle has no such case"})
		}
	}
	if ac.Plan == nil && len(a.byCase) >= 1<<16 {
		return // without a plan to bound them, keep at most 65536
	}
	a.byCase[r.Case] = ac
	a.rep.CaseAudits = append(a.rep.CaseAudits, ac)
}

func (a *auditor) amend(r Record) {
	if !a.rep.Complete {
		a.problem("record %d starts an amendment, but the run has not ended: amendments follow run_end", r.Seq)
	}
	if a.segOpen != nil {
		a.problem("record %d starts an amendment inside amendment %d, which no signature closed", r.Seq, a.segOpen.N)
	}
	var am Amendment
	if err := strictJSON(r.Data, &am); err != nil {
		a.problem("amend record %d: %v", r.Seq, err)
	}
	seg := &Segment{N: len(a.segs) + 1, First: r.Seq, Purpose: am.Purpose, Role: am.Role, By: am.By, Note: am.Note, Case: am.Case, Manifest: am.Manifest, offset: a.recStart, samples: a.lastCP.bytes}
	if a.rep.ManifestDigest != "" && am.Manifest != a.rep.ManifestDigest {
		a.problem("amendment %d (record %d) follows manifest %s, but manifest.json digests to %s", seg.N, r.Seq, short(am.Manifest), short(a.rep.ManifestDigest))
	}
	a.segs = append(a.segs, seg)
	a.segOpen = seg
}

func caseOf(id string) string {
	if id == "" {
		return ""
	}
	return " of " + id
}

// closeSegment ends the open amendment at a seal that signs its last
// record before the seal.
func (a *auditor) closeSegment(r Record, s *sealRec) {
	seg := a.segOpen
	if s.st.Seq != r.Seq-1 {
		a.problem("amendment %d: its seal (record %d) signs record %d, not its last record %d", seg.N, r.Seq, s.st.Seq, r.Seq-1)
	}
	if s.st.Role != seg.Role {
		a.problem("amendment %d: its seal is in the role %q, the amendment says %q", seg.N, s.st.Role, seg.Role)
	}
	seg.Last = r.Seq
	sig := s.sig
	seg.Seal = &sig
	a.segOpen = nil
}

// strictJSON decodes raw into v refusing unknown fields.
func strictJSON(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("data after the value")
	}
	return nil
}

func short(d string) string {
	if len(d) > 19 {
		return d[:19] + "…"
	}
	return d
}

type untrustedSeal struct {
	seq int64
	key string
}

// resumeState is what Resume needs from the audit.
type resumeState struct {
	runStart    json.RawMessage
	started     time.Time
	resumes     int
	sealed      *sealRec // the run's last valid seal
	runKeys     map[string]bool
	lastSamples int64
	lastCP      cpEntry
	lastTime    time.Time
	lastSeal    *Signature        // the last valid seal: who sealed the head
	files       map[string]string // the journal's last digest of each file
	fileSeqs    map[string]int64  // the record of each file's last digest
}
