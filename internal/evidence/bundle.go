package evidence

import (
	"bufio"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/seamdc/seam/internal/clock"
)

// SyncEvery is the longest a record or sample may sit unsynced.
const SyncEvery = time.Second

// Bundle is an open evidence bundle being written. Its methods are safe
// for concurrent use: the sampler and the step program write at once.
type Bundle struct {
	dir   string
	clock clock.Clock

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
}

// Sample is one reading as stored: channel, site time, value in the
// channel's canonical unit, quality ("good", "stale", "error").
type Sample struct {
	Channel string
	Time    time.Time
	Value   float64
	Quality string
}

const samplesHeader = "channel,time,value,quality\n"

// Create starts a new bundle in dir, which must be empty or missing.
func Create(dir string, c clock.Clock) (*Bundle, error) {
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return nil, fmt.Errorf("evidence directory %s is not empty: choose a new --out, or resume it with --resume", dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("evidence directory: %w", err)
	}
	b := &Bundle{dir: dir, clock: c, prev: Genesis, sampled: sha256.New(), lastSync: c.Now()}
	var err error
	if b.journal, err = os.OpenFile(filepath.Join(dir, JournalFile), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644); err != nil {
		return nil, fmt.Errorf("evidence: %w", err)
	}
	if b.samples, err = os.OpenFile(filepath.Join(dir, SamplesFile), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644); err != nil {
		return nil, fmt.Errorf("evidence: %w", err)
	}
	b.jw, b.sw = bufio.NewWriter(b.journal), bufio.NewWriter(b.samples)
	b.writeSamples([]byte(samplesHeader))
	return b, nil
}

// Dir is the bundle's directory.
func (b *Bundle) Dir() string { return b.dir }

// SamplesSize is how many bytes of samples.csv have been written,
// synced or not: a runner notes it at a case's start, and after a Sync
// reads the case's samples back from there.
func (b *Bundle) SamplesSize() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.nSamples
}

// Append adds a record of kind with data marshalled to JSON, and syncs
// if the last sync is a second old.
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
	r := Record{Seq: b.seq + 1, Time: b.clock.Now().UTC(), Kind: kind, Case: caseID, Prev: b.prev}
	if data != nil {
		raw, err := json.Marshal(data)
		if err != nil {
			return r, fmt.Errorf("evidence: %s record: %w", kind, err)
		}
		r.Data = raw
	}
	line, err := seal(&r)
	if err != nil {
		return r, err
	}
	if _, err := b.jw.Write(line); err != nil {
		return r, fmt.Errorf("evidence: journal: %w", err)
	}
	b.seq, b.prev, b.dirty = r.Seq, r.Hash, true
	return r, nil
}

// Sample appends readings to samples.csv.
func (b *Bundle) Sample(samples ...Sample) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	var buf []byte
	for _, s := range samples {
		buf = append(buf, s.Channel...)
		buf = append(buf, ',')
		buf = s.Time.UTC().AppendFormat(buf, time.RFC3339Nano)
		buf = append(buf, ',')
		buf = strconv.AppendFloat(buf, s.Value, 'g', -1, 64)
		buf = append(buf, ',')
		buf = append(buf, s.Quality...)
		buf = append(buf, '\n')
	}
	if err := b.writeSamples(buf); err != nil {
		return err
	}
	return b.maybeSyncLocked()
}

func (b *Bundle) writeSamples(p []byte) error {
	if _, err := b.sw.Write(p); err != nil {
		return fmt.Errorf("evidence: samples: %w", err)
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

// Sync writes a checkpoint and makes everything so far durable. The
// runner calls it at every case end; Append and Sample call it when the
// last sync is a second old; a runner with nothing to write calls it from
// a one-second tick.
func (b *Bundle) Sync() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.syncLocked()
}

func (b *Bundle) syncLocked() error {
	b.lastSync = b.clock.Now()
	if !b.dirty {
		return nil
	}
	if err := b.sw.Flush(); err != nil {
		return fmt.Errorf("evidence: samples: %w", err)
	}
	if err := b.samples.Sync(); err != nil {
		return fmt.Errorf("evidence: samples: %w", err)
	}
	cp := Checkpoint{SamplesBytes: b.nSamples, SamplesDigest: digestOf(b.sampled)}
	if _, err := b.appendLocked(KindCheckpoint, "", cp); err != nil {
		return err
	}
	if err := b.jw.Flush(); err != nil {
		return fmt.Errorf("evidence: journal: %w", err)
	}
	if err := b.journal.Sync(); err != nil {
		return fmt.Errorf("evidence: journal: %w", err)
	}
	b.dirty = false
	return nil
}

func digestOf(h hash.Hash) string {
	return "sha256:" + fmt.Sprintf("%x", h.Sum(nil))
}

// Close syncs and closes the files.
func (b *Bundle) Close() error {
	err := b.Sync()
	b.mu.Lock()
	defer b.mu.Unlock()
	return errors.Join(err, b.journal.Close(), b.samples.Close())
}

// WriteFile writes a whole file into the bundle (results, the run log's
// copy of the plan, the binding without secrets) and records its digest
// in the journal.
func (b *Bundle) WriteFile(name string, data []byte) error {
	if err := os.WriteFile(filepath.Join(b.dir, name), data, 0o644); err != nil {
		return fmt.Errorf("evidence: %w", err)
	}
	_, err := b.Append("file", "", map[string]string{"name": name, "digest": hashOf(data)})
	return err
}

// State is what a resumed bundle already holds.
type State struct {
	Records []Record
	// Completed lists the cases with a "case_end" record, in order.
	Completed []string
	// Dropped is how many bytes of an unfinished last write, and of
	// samples after the last checkpoint, were cut on reopening.
	DroppedJournal, DroppedSamples int64
}

// Resume reopens a bundle after a crash or abort: it checks the chain,
// cuts a journal line the crash left half-written and samples after the
// last checkpoint (they belong to a case that will run again), and
// appends a resume record so the chain stays intact.
func Resume(dir string, c clock.Clock) (*Bundle, *State, error) {
	jpath, spath := filepath.Join(dir, JournalFile), filepath.Join(dir, SamplesFile)
	records, good, partial, err := readJournal(jpath)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot resume %s: %w", dir, err)
	}
	if _, err := os.Stat(filepath.Join(dir, ManifestFile)); err == nil {
		return nil, nil, fmt.Errorf("cannot resume %s: the run finished (it has a manifest)", dir)
	}
	st := &State{Records: records, DroppedJournal: partial}
	cp := lastCheckpoint(records)
	for _, r := range records {
		if r.Kind == "case_end" {
			st.Completed = append(st.Completed, r.Case)
		}
	}
	if err := os.Truncate(jpath, good); err != nil {
		return nil, nil, fmt.Errorf("cannot resume: %w", err)
	}
	info, err := os.Stat(spath)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot resume: %w", err)
	}
	st.DroppedSamples = info.Size() - cp.SamplesBytes
	if err := os.Truncate(spath, cp.SamplesBytes); err != nil {
		return nil, nil, fmt.Errorf("cannot resume: %w", err)
	}
	b := &Bundle{dir: dir, clock: c, prev: Genesis, sampled: sha256.New(), lastSync: c.Now()}
	if n := len(records); n > 0 {
		b.seq, b.prev = records[n-1].Seq, records[n-1].Hash
	}
	if b.journal, err = os.OpenFile(jpath, os.O_APPEND|os.O_WRONLY, 0o644); err != nil {
		return nil, nil, err
	}
	if b.samples, err = os.OpenFile(spath, os.O_APPEND|os.O_RDWR, 0o644); err != nil {
		return nil, nil, err
	}
	if _, err := io.Copy(b.sampled, io.NewSectionReader(b.samples, 0, cp.SamplesBytes)); err != nil {
		return nil, nil, err
	}
	b.nSamples = cp.SamplesBytes
	b.jw, b.sw = bufio.NewWriter(b.journal), bufio.NewWriter(b.samples)
	if cp.SamplesBytes == 0 {
		b.writeSamples([]byte(samplesHeader))
	}
	if _, err := b.Append(KindResume, "", map[string]any{"completed": st.Completed,
		"dropped_journal_bytes": st.DroppedJournal, "dropped_sample_bytes": st.DroppedSamples}); err != nil {
		return nil, nil, err
	}
	return b, st, b.Sync()
}

func lastCheckpoint(records []Record) Checkpoint {
	var cp Checkpoint
	for _, r := range records {
		if r.Kind == KindCheckpoint {
			_ = json.Unmarshal(r.Data, &cp)
		}
	}
	return cp
}
