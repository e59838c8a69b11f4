package evidence

import (
	"crypto/x509"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/seamdc/seam/internal/grade"
	"github.com/seamdc/seam/internal/plan"
	"github.com/seamdc/seam/internal/results"
)

// Limits on the whole files a bundle holds besides the streamed journal
// and samples.
const (
	maxPlan     = 256 << 20
	maxResults  = 256 << 20
	maxManifest = 16 << 20
	maxSig      = 64 << 10
)

// AuditOptions tune Audit.
type AuditOptions struct {
	// Trusted, if not nil, are the only keys whose signatures count, and
	// everything must be covered by one: the run to its end, its
	// manifest, every amendment. A bundle cut short, a tail after the
	// last seal or a missing manifest is then a problem.
	Trusted []ssh.PublicKey
	// Observe, if set, sees every sample a re-graded case takes (its
	// byte range, its timeline), in file order: the report's plots.
	Observe func(c *AuditCase, s Sample)
	// Anchor, if set, is a head of this bundle kept outside it (sat
	// verify --head-out): the journal must still hold its record, with
	// its hash. A tail cut back to before it is then a problem.
	Anchor *Anchor
	// TimeStampRoots, if set, are the roots of the time-stamping
	// authorities the site trusts: every stamp record's token must verify
	// over its seal's statement and chain to them (stamp.go). Without
	// them stamps are counted, not verified.
	TimeStampRoots *x509.CertPool
}

// Report is what Audit found.
type Report struct {
	Dir    string
	Bundle string // the bundle's id
	// Format is the bundle's format, as its record 1 says: FormatVersion,
	// or FormatV2, which sat reads but writes no record into.
	Format string
	// Records counts the records read, up to a break in the chain;
	// HeadHash and HeadAt are the last one's hash and time.
	Records      int
	HeadHash     string
	HeadAt       time.Time
	JournalBytes int64
	// Cases counts the completed cases (case_end records).
	Cases int
	// Complete is set when the journal has a run_end: the run finished.
	Complete bool
	// RunEnd is the run_end record's seq (0: none).
	RunEnd int64
	// Stopped is set when the run recorded its results without ending:
	// aborted, or stopped before energising; it may be resumed.
	Stopped bool
	// Manifest is manifest.json (nil: none); ManifestDigest its sha256.
	Manifest       *Manifest
	ManifestDigest string
	// Unverified counts sample bytes after the last checkpoint (a crash
	// loses them); PartialJournal the bytes of a half-written last line.
	Unverified     int64
	PartialJournal int64
	// Signatures lists the seals and the manifest's signature: all of
	// them up to a thousand, then the first and the newest (the rest are
	// counted in SealsNotListed).
	Signatures     []Signature
	SealsNotListed int
	// Signed is set when the run carries a valid seal; SignedBy is the
	// key of its last one, By its signer's name.
	Signed   bool
	SignedBy string
	By       string
	// SignedUpTo is the last record a valid (with Trusted: trusted)
	// signature of the run covers, SignedSamples the sample bytes;
	// Uncovered counts the run's records after it (seals aside).
	SignedUpTo    int64
	SignedSamples int64
	Uncovered     int
	// Segments are the signed amendments after the run's end.
	Segments []Segment
	// CaseAudits are the completed cases' attempts, in journal order,
	// re-graded.
	CaseAudits []*AuditCase
	// Results is results.json, with the last attempt of every case a
	// signed retry amendment ran again in place of the run's (Retried
	// lists those cases) and its counts and outcome summarized again.
	Results *results.Results
	Retried []string
	// FailedByCapture are the cases whose signed capture fails its mask:
	// Results has them FAIL, whatever results.json says, since the
	// capture is later evidence of the same clause.
	FailedByCapture []string
	Plan            *plan.Plan
	// Regraded and Checks count the cases and checks re-graded.
	Regraded, Checks int
	// Captures are the waveform captures signed amendments attached,
	// aligned and graded against their masks (capture.go).
	Captures []*AuditCapture
	// Problems say what is wrong with the evidence; Mismatches are the
	// recorded verdicts the raw samples do not reproduce; Notes are what
	// a reader should know but is not wrong (a tail a crash left).
	Problems   []string
	Mismatches []Mismatch
	Notes      []string
	// Anchored is set when the audit was given an anchor.
	Anchored bool
	// Stamps counts the stamp records, StampsUnverified those not
	// verified (no TimeStampRoots). StampedSeal is the newest seal record
	// a verified stamp covers (0: none), StampedCovers the record that
	// seal signs, StampedAt and StampedBy the authority's time and name.
	// Unstamped lists the valid seals after it (with TimeStampRoots), up
	// to a thousand; UnstampedSeals counts them.
	Stamps, StampsUnverified int
	StampedSeal              int64
	StampedCovers            int64
	StampedAt                time.Time
	StampedBy                string
	Unstamped                []int64
	UnstampedSeals           int

	// for Resume
	state   resumeState
	pending []string // files (and the manifest) a crash left in their temporary files
}

// FileDigest is the journal's last record of a file's digest.
func (r *Report) FileDigest(name string) (string, bool) {
	d, ok := r.state.files[name]
	return d, ok
}

// RunStart is the data of the run's first run_start record.
func (r *Report) RunStart() json.RawMessage { return r.state.runStart }

// OK reports whether nothing is wrong.
func (r *Report) OK() bool { return len(r.Problems) == 0 && len(r.Mismatches) == 0 }

// All lists the problems and the mismatches, as verify prints them.
func (r *Report) All() []string {
	out := append([]string(nil), r.Problems...)
	for _, m := range r.Mismatches {
		out = append(out, m.String())
	}
	return out
}

// AddsText says what an amendment adds: its files by name, then how
// many records (a retry's run of a case is many).
func (s Segment) AddsText() string {
	var out []string
	records := 0
	for _, a := range s.Adds {
		if strings.HasPrefix(a, "a ") && strings.HasSuffix(a, " record") {
			records++
			continue
		}
		out = append(out, a)
	}
	switch records {
	case 0:
	case 1:
		out = append(out, "1 record")
	default:
		out = append(out, fmt.Sprintf("%d records", records))
	}
	return strings.Join(out, ", ")
}

// Signature is one signature in a bundle: a seal, or the manifest's.
type Signature struct {
	Record  int64  // the seal record (0: manifest.json.sig)
	Covers  int64  // the last record it covers
	Samples int64  // the sample bytes it covers
	Segment int    // 0: the run; n: amendment n
	Role    string // run, witness, acceptance, attach; "manifest"
	By      string
	At      time.Time
	Key     string // SHA256 fingerprint
	Trusted bool   // by a trusted key (any key without Trusted)
	key     ssh.PublicKey
}

// Segment is a signed amendment after the run's end.
type Segment struct {
	N                       int
	First, Last             int64 // records
	Purpose, Role, By, Note string
	Case                    string   // the case a retry runs again
	Manifest                string   // the manifest it follows
	Adds                    []string // what it adds: files, records
	Seal                    *Signature
	// where it starts: the journal's bytes and the samples checkpointed
	// before it (an interrupted retry is cut back to them)
	offset, samples int64
}

// AuditCase is a completed attempt of a case and its re-grade. A case
// ends more than once when it is run again: in the run (sat run
// --resume --case) or in a signed retry amendment after the run's end
// (sat run --retry); the last attempt counts.
type AuditCase struct {
	Record int64 // the case_end record
	End    CaseEnd
	// Attempt counts the case's attempts from 1; Segment is the
	// amendment the attempt was made in (0: the run).
	Attempt, Segment int
	Plan             *plan.Case // nil when the plan has no such case
	// Verdicts are the re-graded verdicts, in the plan's check order
	// (nil when the case was not re-graded).
	Verdicts []grade.Verdict
	grader   *caseGrader
}

// Verify audits a bundle: Audit without observers.
func Verify(dir string, trusted []ssh.PublicKey) (*Report, error) {
	return Audit(dir, AuditOptions{Trusted: trusted})
}

// Audit reads the bundle in dir once and checks everything in it: the
// journal's chain over the exact bytes written, the samples against
// every checkpoint, every seal and signature, the manifest, each file
// against the journal's last record of it (the plan and binding of an
// unfinished run too), results.json against its schema and the
// journal, and re-grades every completed case from the raw samples.
// Only regular files are read; memory stays bounded however long the
// journal and samples are. An error means dir is not a bundle at all;
// everything else is in the Report.
func Audit(dir string, opt AuditOptions) (*Report, error) {
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("%s is not an evidence bundle: not a directory", dir)
	}
	a := &auditor{dir: dir, opt: opt, rep: &Report{Dir: dir}, files: map[string]fileRec{}, runFiles: map[string]fileRec{}, runKeys: map[string]bool{},
		byCase: map[string]*AuditCase{}}
	if err := a.listDir(); err != nil {
		return nil, err
	}
	a.readPlan()
	a.readManifest()
	if err := a.readJournal(); err != nil {
		return nil, err
	}
	if a.opt.Anchor != nil {
		a.checkAnchor(a.anchorHash)
	}
	a.checkSeals()
	a.checkStamps()
	a.checkManifest()
	a.checkFiles()
	a.checkResults()
	a.checkTrust()
	a.regrade()
	if a.moreProblems > 0 {
		a.rep.Problems = append(a.rep.Problems, fmt.Sprintf("and %d more problems", a.moreProblems))
	}
	return a.rep, nil
}

// auditor holds what Audit learns as it reads.
type auditor struct {
	dir string
	opt AuditOptions
	rep *Report

	entries  map[string]os.FileMode // top-level names and attachments/NAME
	files    map[string]fileRec     // the journal's last record of each file
	runFiles map[string]fileRec     // the same, before the run's end
	byCase   map[string]*AuditCase
	meta     *Meta
	metaRaw  json.RawMessage

	moreProblems    int
	manifestRaw     []byte
	manifestOK      bool
	pendingManifest bool     // the manifest is still in its temporary file
	pendingErr      error    // why that temporary file does not parse
	pendingFiles    []string // files whose recorded content is still in their temporary file
	atManifest      struct { // the journal as the manifest saw it
		seen   bool
		hash   string
		offset int64
		cp     cpEntry
	}

	cps          []cpEntry // the last checkpoints, newest last
	lastCP       cpEntry
	nonSeal      int // the run's records that are not seals
	runLast      int64
	seals        []sealRec
	lastRunSeal  *sealRec // the run's last valid (trusted) seal, with its data
	droppedSeals int      // seals not listed (beyond maxListed)
	runKeys      map[string]bool
	untrusted    []untrustedSeal
	segs         []*Segment
	segOpen      *Segment
	recStart     int64 // the journal offset where the record being read starts
	lastTime     time.Time
	lastSeal     *Signature   // the last valid seal, of the run or an amendment
	anchorHash   string       // the hash of the anchored record (opt.Anchor)
	resultsAt    int64        // the journal's last record of results.json (0: none)
	stampable    []stampCheck // the last seals, for the stamp records after them
	unstamped    []int64      // valid seals after the newest verified stamp
}

type fileRec struct {
	digest string
	seq    int64
}

// cpEntry is a checkpoint as later records refer to it.
type cpEntry struct {
	seq     int64
	hash    string
	bytes   int64
	digest  string
	offset  int64 // journal bytes through its line
	nonSeal int   // the run's non-seal records up to it
}

type sealRec struct {
	seq  int64
	data SealData
	st   Statement
	sig  Signature
	cp   cpEntry
	ok   bool
}

// maxListed bounds what a report lists of one thing (problems, notes,
// signatures): a journal made to be read can hold millions.
const maxListed = 1000

func (a *auditor) problem(format string, args ...any) {
	if len(a.rep.Problems) < maxListed {
		a.rep.Problems = append(a.rep.Problems, fmt.Sprintf(format, args...))
		return
	}
	a.moreProblems++
}

func (a *auditor) note(format string, args ...any) {
	if len(a.rep.Notes) < maxListed {
		a.rep.Notes = append(a.rep.Notes, fmt.Sprintf(format, args...))
	}
}

// listDir notes every name in the bundle and refuses what is not a
// regular file (a FIFO would block a reader, a link could point outside).
func (a *auditor) listDir() error {
	a.entries = map[string]os.FileMode{}
	entries, err := os.ReadDir(a.dir)
	if err != nil {
		return fmt.Errorf("evidence bundle %s: %w", a.dir, err)
	}
	for _, e := range entries {
		name, mode := e.Name(), e.Type()
		switch {
		case mode.IsDir() && name == ReportDir:
			continue // the reports, outside the evidence
		case mode.IsDir() && name == AttachDir:
			sub, err := os.ReadDir(filepath.Join(a.dir, name))
			if err != nil {
				a.problem("%s: %v", name, err)
				continue
			}
			for _, s := range sub {
				a.entries[name+"/"+s.Name()] = s.Type()
			}
			continue
		}
		a.entries[name] = mode
	}
	if m, ok := a.entries[JournalFile]; !ok {
		return fmt.Errorf("%s is not an evidence bundle: no %s", a.dir, JournalFile)
	} else if !m.IsRegular() {
		return fmt.Errorf("%s is not an evidence bundle: %w", a.dir, &NotRegularError{JournalFile, m})
	}
	for name, mode := range a.entries {
		if !mode.IsRegular() {
			a.problem("%v", &NotRegularError{name, mode})
		}
	}
	return nil
}

// regular reports whether name is a regular file of the bundle.
func (a *auditor) regular(name string) bool {
	m, ok := a.entries[name]
	return ok && m.IsRegular()
}

func (a *auditor) readPlan() {
	if !a.regular(PlanFile) {
		return
	}
	raw, err := readRegular(a.dir, PlanFile, maxPlan)
	if err != nil {
		a.problem("%s: %v", PlanFile, err)
		return
	}
	p, err := plan.Decode(raw)
	if err != nil {
		a.problem("%s: %v", PlanFile, err)
		return
	}
	a.rep.Plan = p
}

func (a *auditor) readManifest() {
	name := ManifestFile
	if _, ok := a.entries[ManifestFile]; !ok && a.regular(tmpPrefix+ManifestFile) {
		// the run was killed between its end and the manifest's rename
		name, a.pendingManifest = tmpPrefix+ManifestFile, true
	}
	if !a.regular(name) {
		return
	}
	raw, err := readRegular(a.dir, name, maxManifest)
	if err != nil {
		a.problem("%s: %v", ManifestFile, err)
		return
	}
	a.manifestRaw = raw
	a.rep.ManifestDigest = hashOf(raw)
	m, err := parseManifest(raw)
	switch {
	case err != nil && a.pendingManifest:
		a.pendingErr = err // checkManifest decides, once the journal is read
	case err != nil:
		a.problem("%s: %v", ManifestFile, err)
	}
	a.rep.Manifest = m
}

// PlanFile and BindingFile are the copies of the plan and the binding
// that a run writes into its bundle.
const (
	PlanFile    = "plan.json"
	BindingFile = "binding.cue"
)
