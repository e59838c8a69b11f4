package evidence

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"sort"
	"strings"

	"golang.org/x/crypto/ssh"

	"github.com/seamdc/seam/internal/canon/canonjson"
	"github.com/seamdc/seam/internal/results"
)

// checkSeals works out who signed the run and up to where: the last
// valid seal of the run (by a trusted key, when keys are given).
func (a *auditor) checkSeals() {
	rep := a.rep
	last := a.lastRunSeal
	keys := a.runKeys
	rep.Signed = len(keys) > 0
	rep.SealsNotListed = a.droppedSeals
	for i := range a.seals {
		s := &a.seals[i]
		if s.sig.key != nil {
			s.sig.Trusted = trustedKey(s.sig.key, a.opt.Trusted)
		}
		rep.Signatures = append(rep.Signatures, s.sig)
	}
	if last != nil {
		rep.SignedBy, rep.By = last.sig.Key, last.sig.By
		rep.SignedUpTo, rep.SignedSamples = last.cp.seq, last.cp.bytes
		rep.Uncovered = a.nonSeal - last.cp.nonSeal
		rep.state.sealed = last
	} else {
		rep.Uncovered = a.nonSeal
	}
	rep.state.runKeys = keys
	rep.state.files, rep.state.fileSeqs = map[string]string{}, map[string]int64{}
	for n, f := range a.files {
		rep.state.files[n], rep.state.fileSeqs[n] = f.digest, f.seq
	}
	rep.state.lastSamples, rep.state.lastCP, rep.state.lastTime = a.lastCP.bytes, a.lastCP, a.lastTime
	rep.state.lastSeal = a.lastSeal
	for _, seg := range a.segs {
		if seg.Seal != nil && seg.Seal.key != nil {
			seg.Seal.Trusted = trustedKey(seg.Seal.key, a.opt.Trusted)
		}
		rep.Segments = append(rep.Segments, *seg)
	}
	if rep.Signed && a.opt.Trusted != nil {
		for _, s := range a.untrusted {
			a.problem("seal record %d is signed by %s, which is not among the trusted keys", s.seq, s.key)
		}
	}
}

// checkManifest checks manifest.json against the journal, and its
// signature.
func (a *auditor) checkManifest() {
	rep := a.rep
	if a.pendingManifest && !rep.Complete {
		// Finish writes the manifest's temporary file before the
		// journal's end is durable: a stop in between leaves it, whole
		// or not, beside a journal without run_end. It is not evidence.
		a.note("%s was being written when the run stopped, before its end was recorded: it is ignored (a resumed run removes it)", tmpPrefix+ManifestFile)
		rep.Manifest, rep.ManifestDigest, a.manifestRaw = nil, "", nil
		return
	}
	if a.pendingErr != nil {
		// the journal's end is durable, so the manifest written before
		// it was whole: one that does not parse was changed since
		a.problem("%s: %v", tmpPrefix+ManifestFile, a.pendingErr)
	}
	m := rep.Manifest
	if m == nil {
		if _, ok := a.entries[ManifestFile]; !ok && rep.Complete && !a.pendingManifest {
			a.problem("the journal has a run_end record (record %d) but %s is missing: the manifest was deleted", rep.RunEnd, ManifestFile)
		}
		if _, ok := a.entries[SignatureFile]; ok && a.manifestRaw == nil {
			a.problem("%s is there without %s", SignatureFile, ManifestFile)
		}
		return
	}
	if !rep.Complete {
		a.problem("%s is there, but the journal has no run_end record: the journal was cut short after the run ended, or the manifest belongs to another run", ManifestFile)
	}
	if a.pendingManifest {
		a.note("the run was stopped while its end was written: its manifest is in %s (sat run --resume puts it in place)", tmpPrefix+ManifestFile)
		rep.pending = append(rep.pending, ManifestFile, SignatureFile)
	}
	if rep.Bundle != "" && m.Bundle != rep.Bundle {
		a.problem("%s belongs to bundle %s, not this bundle %s: it was copied from another bundle", ManifestFile, m.Bundle, rep.Bundle)
	}
	if rep.Format != "" && m.Format != rep.Format {
		a.problem("%s is of format %s, but the journal's record 1 says %s: one of them was edited", ManifestFile, m.Format, rep.Format)
	}
	at := a.atManifest
	switch {
	case !at.seen || at.hash != m.JournalHead:
		a.problem("%s: the journal's record %d is not the head the manifest recorded (%s): records were changed, added or removed", ManifestFile, m.Records, short(m.JournalHead))
	case m.Records != a.runLast:
		a.problem("%s: it ends the run at record %d, but the run's records go on to %d: records were appended after the manifest outside an amendment", ManifestFile, m.Records, a.runLast)
	case at.offset != m.JournalBytes:
		a.problem("%s: the journal is %d bytes at record %d, the manifest says %d", ManifestFile, at.offset, m.Records, m.JournalBytes)
	case at.cp.bytes != m.SamplesBytes || at.cp.digest != m.SamplesDigest:
		a.problem("%s: it covers %d sample bytes (%s), the journal's last checkpoint %d (%s)", ManifestFile, m.SamplesBytes, short(m.SamplesDigest), at.cp.bytes, short(at.cp.digest))
	default:
		a.manifestOK = true
	}
	if want, _ := json.Marshal(m.Meta); a.metaRaw != nil && !bytes.Equal(canonicalJSON(a.metaRaw), canonicalJSON(want)) {
		a.problem("%s: its run details differ from the journal's run_end record: the manifest was edited", ManifestFile)
	}
	a.checkManifestSignature()
}

func (a *auditor) checkManifestSignature() {
	rep := a.rep
	sigName := SignatureFile
	if _, ok := a.entries[SignatureFile]; !ok && a.regular(tmpPrefix+SignatureFile) {
		sigName = tmpPrefix + SignatureFile
	}
	if _, ok := a.entries[sigName]; !ok {
		switch {
		case a.opt.Trusted != nil:
			a.problem("%s is not signed (no %s), but a trusted signature was required", ManifestFile, SignatureFile)
		case rep.Signed:
			a.problem("the run is signed (by %s) but %s is missing: the manifest's signature was deleted", keyList(rep.state.runKeys), SignatureFile)
		}
		return
	}
	armored, err := readRegular(a.dir, sigName, maxSig)
	if err != nil {
		a.problem("%s: %v", SignatureFile, err)
		return
	}
	key, err := checkSignature(a.manifestRaw, armored)
	if err != nil {
		a.problem("%s: its signature %v", SignatureFile, err)
		return
	}
	sig := Signature{Covers: rep.Manifest.Records, Samples: rep.Manifest.SamplesBytes, Role: "manifest", Key: ssh.FingerprintSHA256(key),
		key: key, Trusted: trustedKey(key, a.opt.Trusted)}
	rep.Signatures = append(rep.Signatures, sig)
	switch {
	case !sig.Trusted:
		a.problem("%s: signed by %s, which is not among the trusted keys", SignatureFile, sig.Key)
	case rep.Signed && !rep.state.runKeys[sig.Key]:
		a.problem("%s: signed by %s, but the run's seals are by %s: the manifest was signed by someone else", SignatureFile, sig.Key, keyList(rep.state.runKeys))
	}
	if sig.Trusted && a.manifestOK && rep.Manifest.Records > rep.SignedUpTo {
		rep.SignedUpTo, rep.SignedSamples, rep.Uncovered = rep.Manifest.Records, rep.Manifest.SamplesBytes, 0
		if rep.SignedBy == "" {
			rep.SignedBy = sig.Key
		}
	}
}

func keyList(keys map[string]bool) string {
	var out []string
	for k := range keys {
		out = append(out, k)
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// checkFiles holds every file to the journal's last record of it (and
// run.log to the manifest), and refuses files nobody recorded.
func (a *auditor) checkFiles() {
	for _, name := range sortedFileNames(a.files) {
		fr := a.files[name]
		if _, ok := a.entries[name]; !ok {
			if !a.pendingWrite(name, fr) {
				a.problem("%s: recorded in the journal (record %d) but missing: it was deleted", name, fr.seq)
			}
			continue
		}
		if !a.regular(name) {
			continue // said in listDir
		}
		got, err := fileDigest(a.dir, name)
		switch {
		case err != nil:
			a.problem("%s: %v", name, err)
		case got != fr.digest && a.pendingWrite(name, fr):
		case got != fr.digest:
			a.problem("%s: digest %s, the journal recorded %s (record %d): the file was altered", name, short(got), short(fr.digest), fr.seq)
		}
	}
	var names []string
	for name := range a.entries {
		names = append(names, name)
	}
	sort.Strings(names)
	m := a.rep.Manifest
	for _, name := range names {
		if _, recorded := a.files[name]; recorded || !a.regular(name) {
			continue
		}
		switch {
		case name == JournalFile || name == SamplesFile || name == ManifestFile || name == SignatureFile:
		case strings.HasPrefix(name, tmpPrefix) || strings.Contains(name, "/"+tmpPrefix):
			if !a.pendingName(name) {
				a.note("%s: a file a stop left half-written, not evidence (resume removes it)", name)
			}
		case name == LogFile && m != nil:
			a.checkListed(name, m)
		case name == LogFile:
			a.note("%s: the run's log is covered only once the run finishes (by the manifest)", name)
		case m != nil && m.Files[name] != "":
			a.checkListed(name, m)
		default:
			a.problem("%s: neither the journal nor the manifest records it: it was added after the run", name)
		}
	}
	if m != nil {
		for _, name := range sortedKeys(m.Files) {
			fr, recorded := a.runFiles[name]
			switch {
			case recorded && fr.digest != m.Files[name]:
				a.problem("%s: the manifest lists digest %s, the journal recorded %s (record %d): the manifest was edited", name, short(m.Files[name]), short(fr.digest), fr.seq)
			case !recorded && a.files[name].digest == "":
				if _, ok := a.entries[name]; !ok {
					a.problem("%s: listed in the manifest but missing: it was deleted", name)
				}
			}
		}
		for _, name := range sortedFileNames(a.runFiles) {
			if _, ok := m.Files[name]; !ok {
				a.problem("%s: recorded in the journal (record %d) but not listed in the manifest: the manifest was edited", name, a.runFiles[name].seq)
			}
		}
	}
}

// pendingWrite reports whether the recorded content of name is in its
// temporary file: the run was stopped between recording a file and
// renaming it into place (Resume completes the rename).
func (a *auditor) pendingWrite(name string, fr fileRec) bool {
	tmp := filepath.ToSlash(tmpPath(filepath.FromSlash(name)))
	if !a.regular(tmp) {
		return false
	}
	if d, err := fileDigest(a.dir, tmp); err != nil || d != fr.digest {
		return false
	}
	a.note("%s: the run was stopped while writing it; its recorded content is in %s (sat run --resume puts it in place)", name, tmp)
	a.rep.pending = append(a.rep.pending, name)
	return true
}

func (a *auditor) pendingName(tmp string) bool {
	for _, p := range a.rep.pending {
		if filepath.ToSlash(tmpPath(filepath.FromSlash(p))) == tmp {
			return true
		}
	}
	return false
}

func (a *auditor) checkListed(name string, m *Manifest) {
	want, ok := m.Files[name]
	if !ok {
		a.problem("%s: not listed in the manifest: added after the run", name)
		return
	}
	got, err := fileDigest(a.dir, name)
	switch {
	case err != nil:
		a.problem("%s: %v", name, err)
	case got != want:
		a.problem("%s: digest %s, the manifest says %s: the file was altered", name, short(got), short(want))
	}
}

func sortedFileNames(m map[string]fileRec) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// checkResults reads results.json and holds it to the journal: the plan
// it names is the plan in the bundle, its completed cases are the
// journal's case_end results, its outcome the run_end's.
func (a *auditor) checkResults() {
	rep := a.rep
	if !a.regular(ResultsFile) {
		return
	}
	raw, err := readRegular(a.dir, ResultsFile, maxResults)
	if err != nil {
		a.problem("%s: %v", ResultsFile, err)
		return
	}
	res, err := results.Decode(raw)
	if err != nil {
		a.problem("%s: %v", ResultsFile, err)
		return
	}
	rep.Results = res
	if a.regular(PlanFile) {
		if d, err := fileDigest(a.dir, PlanFile); err == nil && d != res.Plan.Digest {
			a.problem("%s: digest %s, but %s says the plan that ran was %s", PlanFile, short(d), ResultsFile, short(res.Plan.Digest))
		}
	}
	if a.meta != nil && a.meta.Outcome != res.Outcome {
		a.problem("%s: outcome %s, the journal's run_end says %s", ResultsFile, res.Outcome, a.meta.Outcome)
	}
	byID := map[string]*results.Case{}
	for i := range res.Cases {
		byID[res.Cases[i].ID] = &res.Cases[i]
	}
	run, retried := lastAttempts(rep)
	for _, ac := range run {
		rc := byID[ac.End.Result.ID]
		switch {
		case rc == nil:
			a.problem("%s has no case %s, which the journal completed (record %d)", ResultsFile, ac.End.Result.ID, ac.Record)
		case !sameCase(*rc, ac.End.Result):
			a.problem("%s: case %s differs from its case_end record %d: the results were edited", ResultsFile, rc.ID, ac.Record)
		}
	}
	if a.resultsAt > 0 && !rep.Complete {
		rep.Stopped = true
	}
	for _, ac := range retried {
		if rc := byID[ac.End.Result.ID]; rc != nil {
			*rc = ac.End.Result
			rep.Retried = append(rep.Retried, rc.ID)
		}
	}
	if len(rep.Retried) > 0 {
		res.Summarize()
	}
}

// Counting maps each completed case to its attempt that counts: the
// last of a signed retry amendment, else the run's last.
func (r *Report) Counting() map[string]*AuditCase {
	run, retried := lastAttempts(r)
	out := make(map[string]*AuditCase, len(run))
	for _, ac := range append(run, retried...) {
		out[ac.End.Result.ID] = ac
	}
	return out
}

// lastAttempts are each case's last attempt in the run, in the order
// the run completed them, and the last attempts of signed retry
// amendments after it (a retry no signature closed is not evidence).
func lastAttempts(rep *Report) (run, retried []*AuditCase) {
	closed := map[int]bool{}
	for _, s := range rep.Segments {
		closed[s.N] = s.Seal != nil
	}
	inRun, inRetry := map[string]int{}, map[string]int{}
	for _, ac := range rep.CaseAudits {
		id := ac.End.Result.ID
		switch {
		case ac.Segment == 0:
			if i, ok := inRun[id]; ok {
				run[i] = ac
				continue
			}
			inRun[id] = len(run)
			run = append(run, ac)
		case closed[ac.Segment]:
			if i, ok := inRetry[id]; ok {
				retried[i] = ac
				continue
			}
			inRetry[id] = len(retried)
			retried = append(retried, ac)
		}
	}
	return run, retried
}

func sameCase(a, b results.Case) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	var u, v any
	_ = json.Unmarshal(x, &u)
	_ = json.Unmarshal(y, &v)
	return reflect.DeepEqual(u, v)
}

// trustedSamples are the sample bytes a trusted signature covers: the
// run's, or a signed amendment's (a retry writes samples after the
// run's end, and its seal covers them).
func (a *auditor) trustedSamples() int64 {
	n := a.rep.SignedSamples
	for _, seg := range a.segs {
		if seg.Seal != nil && seg.Seal.Trusted {
			n = max(n, seg.Seal.Samples)
		}
	}
	return n
}

// checkTrust: with trusted keys, everything must be covered by one.
func (a *auditor) checkTrust() {
	rep := a.rep
	if a.opt.Trusted == nil {
		return
	}
	switch {
	case !rep.Signed:
		a.problem("the bundle is not signed: nothing in it is covered by a trusted signature")
		return
	case rep.SignedUpTo == 0:
		a.problem("no seal of the run is by a trusted key")
		return
	}
	if rep.Uncovered > 0 {
		a.problem("%d record(s) after record %d, the last a trusted signature covers, are not covered by one", rep.Uncovered, rep.SignedUpTo)
	}
	if tail := a.lastCP.bytes - a.trustedSamples(); tail > 0 {
		a.problem("%d sample byte(s) after the last signed checkpoint (record %d) are not covered by a signature", tail, rep.SignedUpTo)
	}
	if rep.Unverified > 0 {
		a.problem("%d sample byte(s) after the last checkpoint are not covered by a signature", rep.Unverified)
	}
	if rep.PartialJournal > 0 {
		a.problem("%s ends in %d bytes no signature covers", JournalFile, rep.PartialJournal)
	}
	switch {
	case !rep.Complete && a.resultsAt == 0:
		a.problem("the run did not end: the signed part stops at record %d without the run's results or end (a crash, or the journal was truncated): it proves only the cases it completed", rep.SignedUpTo)
	case !rep.Complete && a.resultsAt > rep.SignedUpTo:
		a.problem("%s is recorded (record %d) only after the last trusted signature", ResultsFile, a.resultsAt)
	case !rep.Complete && rep.Results != nil && rep.Results.Outcome != results.Aborted && rep.Results.Outcome != results.Errored:
		a.problem("%s says the run %s, but the journal has no run_end: it was cut short after its results, or truncated", ResultsFile, rep.Results.Outcome)
	}
	for _, seg := range a.segs {
		if seg.Seal != nil && !seg.Seal.Trusted {
			a.problem("amendment %d (%s by %s) is signed by %s, which is not among the trusted keys", seg.N, seg.Purpose, seg.By, seg.Seal.Key)
		}
	}
}

// canonicalJSON is b in the canonical form (internal/canon/canonjson), or b as it
// is when it is not JSON: for comparing two documents' meaning.
func canonicalJSON(b []byte) []byte {
	c, err := canonjson.Bytes(b)
	if err != nil {
		return b
	}
	return c
}

// Describe says in one line, part by part, what is signed: the run (by
// whom and up to where, or UNSIGNED), then each amendment (by whom, or
// UNSIGNED). It is the first line of sat verify and the report's
// "signed" row.
func (r *Report) Describe() string {
	s := r.describeRun()
	for i, seg := range r.Segments {
		if seg.Last == 0 { // no seal closed it: it runs to the next, or the end
			seg.Last = int64(r.Records)
			if i+1 < len(r.Segments) {
				seg.Last = r.Segments[i+1].First - 1
			}
		}
		s += "; " + seg.describe()
	}
	return s
}

func (r *Report) describeRun() string {
	switch {
	case !r.Signed && r.SignedBy == "" && !r.anySegmentSigned():
		return "UNSIGNED: nothing in this bundle is signed; its hashes detect accidental damage only, since anyone who edits it can recompute them"
	case !r.Signed && r.SignedBy == "":
		return "UNSIGNED run: the run itself is not signed; its hashes detect accidental damage only, since anyone who edits it can recompute them"
	case r.SignedUpTo == 0:
		n := 0
		for _, sig := range r.Signatures {
			if sig.Segment == 0 {
				n++
			}
		}
		return fmt.Sprintf("SIGNED, but by no trusted key (%d signature(s) of the run)", n)
	}
	who := r.SignedBy
	if r.By != "" {
		who += " (" + r.By + ")"
	}
	s := fmt.Sprintf("signed by %s up to record %d of %d", who, r.SignedUpTo, r.Records)
	switch {
	case r.Complete && r.Uncovered == 0:
		s += ": the whole run, to its end"
	case r.Uncovered > 0 || r.Unverified > 0 || r.PartialJournal > 0:
		s += fmt.Sprintf(": %d record(s) and %d sample byte(s) after it are not covered", r.Uncovered, r.Unverified+max(0, r.lastSamples()-r.SignedSamples))
	default:
		s += ": everything the run wrote before it stopped"
	}
	return s
}

func (r *Report) anySegmentSigned() bool {
	for _, seg := range r.Segments {
		if seg.Seal != nil {
			return true
		}
	}
	return false
}

// describe says who signed the amendment, or that nobody did.
func (s Segment) describe() string {
	head := fmt.Sprintf("amendment %d (%s as %s, records %d–%d)", s.N, s.Purpose, s.Role, s.First, s.Last)
	if s.Seal == nil {
		return head + ": UNSIGNED: no seal closes it"
	}
	head += ": signed by " + s.Seal.Key
	if s.Seal.By != "" {
		head += " (" + s.Seal.By + ")"
	}
	if !s.Seal.Trusted {
		head += ", which is not a trusted key"
	}
	return head
}

func (r *Report) lastSamples() int64 { return r.state.lastSamples }
