package evidence

import (
	"bufio"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/seamdc/seam/internal/clock"
	"github.com/seamdc/seam/internal/tsa"
)

// SyncEvery is the longest a record or sample may sit unsynced.
const SyncEvery = time.Second

// SealEvery is the longest a signed bundle goes without a seal (site
// time); every case end and the run's end are sealed as well.
const SealEvery = time.Minute

// Options say how a bundle is signed.
type Options struct {
	// Signer seals the bundle; nil writes an unsigned bundle, whose
	// hashes detect accidents but not a deliberate edit.
	Signer Signer
	// By names the signer in the seals (the operator).
	By string
	// SealEvery overrides the package's SealEvery (tests).
	SealEvery time.Duration
	// TimeStamp, if set, time-stamps the seals in the background
	// (stamp.go); StampTimeout bounds one request (0: StampTimeout).
	TimeStamp    *tsa.Authority
	StampTimeout time.Duration
}

// Bundle is an open evidence bundle being written. Its methods are safe
// for concurrent use: the sampler and the step program write at once.
type Bundle struct {
	dir   string
	clock clock.Clock
	opt   Options
	id    string

	mu       sync.Mutex
	journal  *os.File
	jw       *bufio.Writer
	seq      int64
	prev     string
	samples  *os.File
	sw       *bufio.Writer
	sampled  hash.Hash // running sha256 of samples.csv
	nSamples int64     // bytes written to samples.csv
	lastSync time.Time
	dirty    bool
	cp       cpRef // the last checkpoint written
	err      error // the first write error: the bundle is unusable after it
	// deferred keeps the journal in memory until it is sealed: what an
	// amendment or the run's end writes becomes durable with its
	// signature, or not at all.
	deferred bool

	sealMu   sync.Mutex // one seal at a time; held while signing, never across a clock wait
	sealed   int64      // the seq the last seal covers
	sealRec  int64      // the seq of the last seal record
	lastSeal time.Time

	st stamper
}

// cpRef is a checkpoint record as a seal names it.
type cpRef struct {
	seq   int64
	hash  string
	bytes int64
	dig   string
}

// Create starts a new bundle in dir, which must be empty or missing.
func Create(dir string, c clock.Clock, opt Options) (*Bundle, error) {
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return nil, fmt.Errorf("evidence directory %s is not empty: choose a new --out, or resume it with --resume", dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("evidence directory: %w", err)
	}
	return createIn(dir, c, opt)
}

// createIn starts a bundle in dir, which holds no journal or samples.
func createIn(dir string, c clock.Clock, opt Options) (*Bundle, error) {
	var id [16]byte
	if _, err := rand.Read(id[:]); err != nil {
		return nil, err
	}
	b := newBundle(dir, c, opt)
	b.id = hex.EncodeToString(id[:])
	var err error
	if b.journal, err = os.OpenFile(filepath.Join(dir, JournalFile), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644); err != nil {
		return nil, fmt.Errorf("evidence: %w", err)
	}
	if b.samples, err = os.OpenFile(filepath.Join(dir, SamplesFile), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644); err != nil {
		return nil, fmt.Errorf("evidence: %w", err)
	}
	b.jw, b.sw = newWriters(b.journal, b.samples)
	b.mu.Lock()
	if _, err := b.appendLocked(KindBundle, "", BundleRecord{Format: FormatVersion, ID: b.id}); err != nil {
		b.mu.Unlock()
		return nil, err
	}
	if err := b.writeSamples([]byte(samplesHeader)); err != nil {
		b.mu.Unlock()
		return nil, err
	}
	b.mu.Unlock()
	return b, b.Seal() // a signed bundle is signed from its first record
}

// newWriters buffer the journal and samples between syncs; the
// journal's buffer holds what Finish writes before the manifest.
func newWriters(journal, samples *os.File) (*bufio.Writer, *bufio.Writer) {
	return bufio.NewWriterSize(journal, 64<<10), bufio.NewWriterSize(samples, 64<<10)
}

func newBundle(dir string, c clock.Clock, opt Options) *Bundle {
	if opt.SealEvery <= 0 {
		opt.SealEvery = SealEvery
	}
	now := c.Now()
	return &Bundle{dir: dir, clock: c, opt: opt, prev: Genesis, sampled: sha256.New(), lastSync: now, lastSeal: now}
}

// Dir is the bundle's directory.
func (b *Bundle) Dir() string { return b.dir }

// ID is the bundle's random id, which every seal and the manifest name.
func (b *Bundle) ID() string { return b.id }

// Signed reports whether the bundle is being sealed.
func (b *Bundle) Signed() bool { return b.opt.Signer != nil }

// SamplesSize is how many bytes of samples.csv have been written,
// synced or not: a runner notes it at a case's start, and after a Sync
// reads the case's samples back from there.
func (b *Bundle) SamplesSize() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.nSamples
}

// Append adds a record of kind with data marshalled to JSON in the
// canonical form (data.go), and syncs if the last sync is a second old.
func (b *Bundle) Append(kind, caseID string, data any) (Record, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r, err := b.appendLocked(kind, caseID, data)
	if err != nil {
		return r, err
	}
	return r, b.maybeSyncLocked()
}

func (b *Bundle) appendLocked(kind, caseID string, data any) (Record, error) {
	if b.err != nil {
		return Record{}, b.err
	}
	r := Record{Seq: b.seq + 1, Time: b.clock.Now().UTC(), Kind: kind, Case: caseID, Prev: b.prev}
	if data != nil {
		raw, err := marshalData(data)
		if err != nil {
			return r, fmt.Errorf("evidence: %s record: %w", kind, err)
		}
		r.Data = raw
	}
	line, err := encodeRecord(&r)
	if err != nil {
		return r, err
	}
	if _, err := b.jw.Write(line); err != nil {
		b.err = fmt.Errorf("evidence: journal: %w", err)
		return r, b.err
	}
	b.seq, b.prev, b.dirty = r.Seq, r.Hash, true
	return r, nil
}

// Sample appends readings to samples.csv. A value that is NaN or
// infinite is refused, and none of the readings is written.
func (b *Bundle) Sample(samples ...Sample) error {
	for _, s := range samples {
		if err := checkSample(s); err != nil {
			return fmt.Errorf("evidence: %w", err)
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	var buf []byte
	for _, s := range samples {
		buf = appendSample(buf, s)
	}
	if err := b.writeSamples(buf); err != nil {
		return err
	}
	return b.maybeSyncLocked()
}

func (b *Bundle) writeSamples(p []byte) error {
	if b.err != nil {
		return b.err
	}
	if _, err := b.sw.Write(p); err != nil {
		b.err = fmt.Errorf("evidence: samples: %w", err)
		return b.err
	}
	b.sampled.Write(p)
	b.nSamples += int64(len(p))
	b.dirty = true
	return nil
}

func (b *Bundle) maybeSyncLocked() error {
	if b.clock.Now().Sub(b.lastSync) < SyncEvery {
		return nil
	}
	return b.syncLocked()
}

// Sync writes a checkpoint and makes everything so far durable; a
// signed bundle whose last seal is SealEvery old is sealed too. The
// runner calls it at every case end and from a one-second tick; Append
// and Sample sync (without sealing) when the last sync is a second old.
func (b *Bundle) Sync() error {
	b.mu.Lock()
	err := b.syncLocked()
	due := b.opt.Signer != nil && !b.deferred && b.clock.Now().Sub(b.lastSeal) >= b.opt.SealEvery
	b.mu.Unlock()
	if err != nil || !due {
		return err
	}
	return b.Seal()
}

func (b *Bundle) syncLocked() error {
	b.lastSync = b.clock.Now()
	if !b.dirty {
		return nil
	}
	if err := b.checkpointLocked(); err != nil {
		return err
	}
	b.dirty = false
	return nil
}

// checkpointLocked writes a checkpoint record and makes the journal and
// samples durable.
func (b *Bundle) checkpointLocked() error {
	if b.err != nil {
		return b.err
	}
	if err := b.sw.Flush(); err != nil {
		b.err = fmt.Errorf("evidence: samples: %w", err)
		return b.err
	}
	if err := b.samples.Sync(); err != nil {
		b.err = fmt.Errorf("evidence: samples: %w", err)
		return b.err
	}
	cp := Checkpoint{SamplesBytes: b.nSamples, SamplesDigest: digestOf(b.sampled)}
	r, err := b.appendLocked(KindCheckpoint, "", cp)
	if err != nil {
		return err
	}
	b.cp = cpRef{seq: r.Seq, hash: r.Hash, bytes: cp.SamplesBytes, dig: cp.SamplesDigest}
	if b.deferred {
		return nil
	}
	return b.flushLocked()
}

func (b *Bundle) flushLocked() error {
	if err := b.jw.Flush(); err != nil {
		b.err = fmt.Errorf("evidence: journal: %w", err)
		return b.err
	}
	if err := b.journal.Sync(); err != nil {
		b.err = fmt.Errorf("evidence: journal: %w", err)
		return b.err
	}
	return nil
}

// Seal syncs and, in a signed bundle, signs the checkpoint it wrote: a
// seal record follows with the statement and its SSHSIG. The signature
// is made outside the bundle's lock (a hardware key may take its time),
// so records written meanwhile come between the checkpoint and its seal;
// the next seal covers them. An unsigned bundle only syncs.
func (b *Bundle) Seal() error {
	if b.deferred { // an amendment: only Amender.Close signs it
		return b.Sync()
	}
	return b.seal(RoleRun)
}

func (b *Bundle) seal(role string) error {
	if b.opt.Signer == nil {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.syncLocked()
	}
	b.sealMu.Lock()
	defer b.sealMu.Unlock()
	b.mu.Lock()
	if b.seq == b.sealRec && !b.dirty { // nothing since the last seal
		b.mu.Unlock()
		return nil
	}
	err := b.checkpointLocked()
	b.dirty = false
	b.lastSync = b.clock.Now()
	cp := b.cp
	b.mu.Unlock()
	if err != nil {
		return err
	}
	st := Statement{Type: StatementType, Bundle: b.id, Seq: cp.seq, Head: cp.hash, SamplesBytes: cp.bytes, SamplesDigest: cp.dig,
		Role: role, By: b.opt.By, At: b.clock.Now().UTC()}
	data, _, err := sign(b.opt.Signer, st)
	if err != nil {
		return err
	}
	b.mu.Lock()
	r, err := b.appendLocked(KindSeal, "", data)
	if err != nil {
		b.mu.Unlock()
		return err
	}
	b.sealed, b.sealRec, b.lastSeal = cp.seq, r.Seq, b.clock.Now()
	b.sealedLocked(r.Seq, data.Statement)
	err = b.flushLocked()
	b.mu.Unlock()
	if err == nil {
		b.stampSoon()
	}
	return err
}

// Close seals (or syncs) and closes the files.
func (b *Bundle) Close() error {
	err := b.Seal()
	if err == nil && !b.deferred {
		b.stampLast() // the last seal's stamp, bounded by the timeout
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stopStampsLocked()
	if err == nil && !b.deferred && b.opt.TimeStamp != nil {
		err = b.flushLocked()
	}
	return errors.Join(err, b.journal.Close(), b.samples.Close())
}

// WriteFile writes a whole file into the bundle (results, the plan as
// read, the binding without secrets) and records its digest in the
// journal. The journal's last record of a file is what verify holds the
// file to, so the order survives a crash at any moment: the new content
// goes to a temporary file first (synced), then its record is made
// durable, then the file is renamed into place. A crash before the
// record leaves a temporary file (Resume removes it); one after leaves
// the recorded content in it (Resume puts it in place).
func (b *Bundle) WriteFile(name string, data []byte) error {
	_, err := b.WriteFileFrom(name, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
	return err
}

// WriteFileFrom is WriteFile of what write writes, streamed to the
// file as it is hashed: a file of hundreds of megabytes (10,000 nodes'
// burn-in outputs) is never held whole. It returns the file's digest.
func (b *Bundle) WriteFileFrom(name string, write func(io.Writer) error) (string, error) {
	if err := checkName(name); err != nil {
		return "", fmt.Errorf("evidence: %w", err)
	}
	path := filepath.Join(b.dir, filepath.FromSlash(name))
	tmp := tmpPath(path)
	digest, err := writeSynced(tmp, write)
	if err != nil {
		return "", fmt.Errorf("evidence: %s: %w", name, err)
	}
	b.mu.Lock()
	_, err = b.appendLocked(KindFile, "", FileRecord{Name: name, Digest: digest})
	if err == nil {
		err = b.checkpointLocked()
		b.dirty = false
		b.lastSync = b.clock.Now()
	}
	b.mu.Unlock()
	if err != nil {
		return "", err
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", fmt.Errorf("evidence: %w", err)
	}
	return digest, syncDir(filepath.Dir(path))
}

// tmpPrefix marks a file being written: one left by a crash is noted by
// Audit and removed by Resume.
// PlanIn is the path of the plan a bundle holds: plan.json, or, when a
// stop came between recording it and putting it in place, the temporary
// file that holds its recorded content (Resume puts it in place; its
// digest is checked there).
func PlanIn(dir string) string {
	path := filepath.Join(dir, PlanFile)
	if _, err := os.Lstat(path); err != nil {
		if _, terr := os.Lstat(tmpPath(path)); terr == nil {
			return tmpPath(path)
		}
	}
	return path
}

const tmpPrefix = ".tmp-"

func tmpPath(path string) string {
	return filepath.Join(filepath.Dir(path), tmpPrefix+filepath.Base(path))
}

// writeSynced writes a file durably, through a buffer and a hash, and
// returns its digest.
func writeSynced(path string, write func(io.Writer) error) (string, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	w := bufio.NewWriterSize(io.MultiWriter(f, h), 64<<10)
	if err := write(w); err != nil {
		f.Close()
		return "", err
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return "", err
	}
	return digestOf(h), errors.Join(f.Sync(), f.Close())
}

// writeBytesSynced writes data to a file durably.
func writeBytesSynced(path string, data []byte) error {
	_, err := writeSynced(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
	return err
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	_ = d.Sync() // not every file system syncs a directory
	return nil
}
