// Package evidence keeps a run's evidence bundle and reads it back: an
// append-only, hash-chained journal, the raw samples, the files the run
// wrote, signed seals, a manifest, and signed amendments after the end.
//
// Writing: a crash loses at most the last second. The journal and
// samples are synced at least once a second and at every case end, and
// each sync appends a checkpoint record with the samples file's length
// and running digest. With a signer, a seal record (an SSHSIG over a
// statement naming the bundle, a checkpoint and the hash of its record)
// follows the checkpoint of every case end, of the run's end, and at
// least every minute, so a bundle cut short by a crash is authenticated
// up to its last seal.
//
// Reading: Audit is the one reader of a bundle. It streams the journal
// and the samples with bounded memory, checks the chain over the exact
// bytes written, every checkpoint, every seal and the manifest, the
// files against the journal's records of them, results.json against the
// journal, and re-grades every completed case from the raw samples with
// internal/grade. `sat verify`, `sat report` and `sat run --resume` all
// call it, so they cannot disagree about a bundle.
package evidence

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// File names inside a bundle.
const (
	JournalFile   = "journal.jsonl"
	SamplesFile   = "samples.csv"
	ResultsFile   = "results.json"
	ManifestFile  = "manifest.json"
	SignatureFile = "manifest.json.sig"
	LogFile       = "run.log"
	// AttachDir holds files attached after the run by signed amendments.
	AttachDir = "attachments"
	// ReportDir is where sat report writes, outside the evidence.
	ReportDir = "report"
)

// FormatVersion is the bundle format.
const FormatVersion = "seam-evidence/v3"

// FormatV2 is the format before FormatVersion: the same in every byte
// but a record's data, which kept the writer's field order instead of
// one canonical form. sat reads it (verify, report), with the data of
// its records not held to one form, and writes no record into it.
const FormatV2 = "seam-evidence/v2"

// Genesis is the prev hash of the first record.
const Genesis = "sha256:0000000000000000000000000000000000000000000000000000000000000000"

// Record kinds the evidence package itself writes; the runner adds its own.
const (
	KindBundle     = "bundle"     // the first record: format and the bundle's random id
	KindCheckpoint = "checkpoint" // samples.csv's length and digest so far
	KindSeal       = "seal"       // a signature over a checkpoint's record
	KindResume     = "resume"     // the bundle was reopened after a stop
	KindFile       = "file"       // a file written into the bundle, with its digest
	KindRunEnd     = "run_end"    // the run finished; the manifest repeats its data
	KindAmend      = "amend"      // an amendment after the end begins
	KindCaseEnd    = "case_end"   // (the runner's) a case's verdict: see CaseEnd
)

// MaxRecord is the longest journal line a reader accepts.
const MaxRecord = 4 << 20

// Record is one journal line. Hash is the sha256 of the exact bytes of
// the line up to the hash field, closed with "}" (the record's body);
// Prev is the previous record's Hash.
type Record struct {
	Seq  int64           `json:"seq"`
	Time time.Time       `json:"time"`
	Kind string          `json:"kind"`
	Case string          `json:"case,omitempty"`
	Data json.RawMessage `json:"data,omitempty"`
	Prev string          `json:"prev"`
	Hash string          `json:"hash"`
}

// body is a record without its hash, as it is hashed.
type body struct {
	Seq  int64           `json:"seq"`
	Time time.Time       `json:"time"`
	Kind string          `json:"kind"`
	Case string          `json:"case,omitempty"`
	Data json.RawMessage `json:"data,omitempty"`
	Prev string          `json:"prev"`
}

// Checkpoint is the data of a checkpoint record.
type Checkpoint struct {
	SamplesBytes  int64  `json:"samples_bytes"`
	SamplesDigest string `json:"samples_digest"` // sha256 of samples.csv[0:SamplesBytes]
}

// FileRecord is the data of a file record.
type FileRecord struct {
	Name   string `json:"name"`
	Digest string `json:"digest"`
}

// BundleRecord is the data of the first record.
type BundleRecord struct {
	Format string `json:"format"`
	ID     string `json:"id"` // 128 random bits, hex: what every seal and the manifest name
}

// encodeRecord fills r.Hash and returns the line to write: the body's
// bytes with the hash field added before its closing brace, and a
// newline. Readers hash those exact bytes.
func encodeRecord(r *Record) ([]byte, error) {
	b, err := json.Marshal(body{r.Seq, r.Time, r.Kind, r.Case, r.Data, r.Prev})
	if err != nil {
		return nil, err
	}
	r.Hash = hashOf(b)
	return append(withHash(b, r.Hash), '\n'), nil
}

// EncodeRecord is the journal line of r (with its newline), r.Hash
// filled: the format is public and the chain keyless, so anyone can
// write a journal that chains; only a seal's signature says who wrote
// it (see docs/sat-run.md, the threat model). Tests forge with it.
func EncodeRecord(r *Record) ([]byte, error) { return encodeRecord(r) }

// withHash is a record's line (without newline) from its body and hash.
func withHash(body []byte, hash string) []byte {
	line := make([]byte, 0, len(body)+len(hash)+12)
	line = append(line, body[:len(body)-1]...)
	line = append(line, `,"hash":"`...)
	line = append(line, hash...)
	return append(line, `"}`...)
}

func hashOf(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// ChainError says where the journal's chain breaks.
type ChainError struct {
	Line   int
	Reason string
}

func (e *ChainError) Error() string {
	return fmt.Sprintf("%s line %d: %s", JournalFile, e.Line, e.Reason)
}

// journalReader streams a journal, checking each complete line: the
// record's form (strict JSON, no unknown fields, exactly the bytes sat
// writes for it, its data canonical), its hash over those bytes, its
// place in the chain. The format comes from record 1: in a FormatV2
// journal the data of the records after it is not held to the canonical
// form, which v2 did not write; everything else is as strict.
type journalReader struct {
	r      *bufio.Reader
	prev   string
	seq    int64
	line   int
	offset int64 // bytes of complete, checked lines
	buf    []byte
	v2     bool // record 1 says FormatV2
	// Partial is the length of a last line without its newline: a write
	// cut short by a crash. It is not a record.
	Partial int64
}

func newJournalReader(r io.Reader) *journalReader {
	return &journalReader{r: bufio.NewReaderSize(r, 64<<10), prev: Genesis}
}

// next returns the next record and its line, or io.EOF. A broken chain
// is a *ChainError; reading stops there.
func (j *journalReader) next() (Record, []byte, error) {
	raw, err := j.readLine()
	if err != nil {
		return Record{}, nil, err
	}
	j.line++
	r, err := parseRecord(raw, !j.v2)
	if err != nil {
		return r, nil, &ChainError{j.line, err.Error()}
	}
	switch {
	case r.Prev != j.prev:
		return r, nil, &ChainError{j.line, fmt.Sprintf("record %d does not follow the one before: a record was removed, inserted or reordered", r.Seq)}
	case r.Seq != j.seq+1:
		return r, nil, &ChainError{j.line, fmt.Sprintf("record %d is numbered %d", j.seq+1, r.Seq)}
	}
	if r.Seq == 1 && r.Kind == KindBundle {
		var br BundleRecord
		j.v2 = json.Unmarshal(r.Data, &br) == nil && br.Format == FormatV2
	}
	j.prev, j.seq = r.Hash, r.Seq
	j.offset += int64(len(raw)) + 1
	return r, raw, nil
}

// readLine reads one line without its newline, at most MaxRecord long.
func (j *journalReader) readLine() ([]byte, error) {
	j.buf = j.buf[:0]
	for {
		chunk, err := j.r.ReadSlice('\n')
		j.buf = append(j.buf, chunk...)
		if len(j.buf) > MaxRecord {
			return nil, &ChainError{j.line + 1, fmt.Sprintf("the line is longer than %d MiB: not a record sat wrote", MaxRecord>>20)}
		}
		switch {
		case err == nil:
			return j.buf[:len(j.buf)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if len(j.buf) > 0 {
				j.Partial = int64(len(j.buf))
			}
			return nil, io.EOF
		default:
			return nil, fmt.Errorf("%s line %d: %w", JournalFile, j.line+1, err)
		}
	}
}

// parseRecord reads one line strictly and checks that it is exactly
// what encodeRecord writes for its fields, that its hash is the hash of
// its body's bytes, and, with strictData, that its data is in the
// canonical form the writer writes (data.go). Only a FormatV2 journal's
// records after the first are read without strictData.
func parseRecord(line []byte, strictData bool) (Record, error) {
	var r Record
	if err := json.Unmarshal(line, &r); err != nil {
		return r, fmt.Errorf("not a journal record: %v", err)
	}
	b, err := json.Marshal(body{r.Seq, r.Time, r.Kind, r.Case, r.Data, r.Prev})
	if err != nil {
		return r, fmt.Errorf("not a journal record: %v", err)
	}
	if !bytes.Equal(withHash(b, r.Hash), line) {
		return r, formError(line, r)
	}
	if got := hashOf(b); got != r.Hash {
		return r, fmt.Errorf("record %d was altered: its bytes hash to %s, the journal says %s", r.Seq, got, r.Hash)
	}
	if strictData && len(r.Data) > 0 {
		if err := checkData(r.Data); err != nil {
			return r, fmt.Errorf("record %d's data is not in the form sat writes: %w", r.Seq, err)
		}
	}
	return r, nil
}

// formError says why a line is not what sat writes: a field sat does
// not write, data after the record, or another form of what it writes.
func formError(line []byte, r Record) error {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	var strict Record
	if err := dec.Decode(&strict); err != nil {
		if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			return fmt.Errorf("the record has a field sat does not write (%s): it was edited", f)
		}
		return fmt.Errorf("not a journal record: %v", err)
	}
	if dec.More() {
		return errors.New("not a journal record: data after the record")
	}
	return fmt.Errorf("record %d is not in the form sat writes (a field added or reordered, spacing, another time or number format): it was edited", r.Seq)
}

// ReadJournal calls fn with each whole record of the journal in dir, in
// order, each checked as Audit checks it (its form, its hash, its place
// in the chain); a half-written last line is not a record. A tool reads
// back what it journaled this way (a resumed rollout, what it finished).
func ReadJournal(dir string, fn func(Record) error) error {
	f, _, err := openRegular(dir, JournalFile)
	if err != nil {
		return err
	}
	defer f.Close()
	jr := newJournalReader(f)
	for {
		r, _, err := jr.next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s/%s: %w", dir, JournalFile, err)
		}
		if err := fn(r); err != nil {
			return err
		}
	}
}
