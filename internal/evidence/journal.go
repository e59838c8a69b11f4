// Package evidence keeps a run's evidence bundle: an append-only,
// hash-chained journal, the raw samples, and at the end a manifest of
// digests that an engineer may sign. A crash loses at most the last
// second: the journal and samples are synced at least once a second and
// at every case end, and each sync appends a checkpoint record that
// carries the samples file's length and running digest, so that `sat
// verify` can prove every byte up to the last checkpoint.
package evidence

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
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
)

// Genesis is the prev hash of the first record.
const Genesis = "sha256:0000000000000000000000000000000000000000000000000000000000000000"

// Record kinds the evidence package itself writes; the runner adds its own.
const (
	KindCheckpoint = "checkpoint"
	KindResume     = "resume"
)

// Record is one journal line. Hash is the sha256 of the line written with
// Hash empty; Prev is the previous record's Hash.
type Record struct {
	Seq  int64           `json:"seq"`
	Time time.Time       `json:"time"`
	Kind string          `json:"kind"`
	Case string          `json:"case,omitempty"`
	Data json.RawMessage `json:"data,omitempty"`
	Prev string          `json:"prev"`
	Hash string          `json:"hash"`
}

// Checkpoint is the data of a checkpoint record.
type Checkpoint struct {
	SamplesBytes  int64  `json:"samples_bytes"`
	SamplesDigest string `json:"samples_digest"` // sha256 of samples.csv[0:SamplesBytes]
}

// seal fills r.Hash and returns the line to write (with newline).
func seal(r *Record) ([]byte, error) {
	r.Hash = ""
	b, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	r.Hash = hashOf(b)
	line, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	return append(line, '\n'), nil
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

// readJournal reads and checks every complete line. A last line without
// its newline is a write cut short by a crash: it is reported through
// partial (its byte length) and not returned.
func readJournal(path string) (records []Record, good int64, partial int64, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, 0, 0, err
	}
	prev := Genesis
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	line := 0
	for sc.Scan() {
		line++
		raw := sc.Bytes()
		if good+int64(len(raw)) == int64(len(b)) && len(b) > 0 && b[len(b)-1] != '\n' {
			return records, good, int64(len(raw)), nil
		}
		var r Record
		if err := json.Unmarshal(raw, &r); err != nil {
			return records, good, 0, &ChainError{line, "not a journal record: " + err.Error()}
		}
		want := r.Hash
		if _, err := seal(&r); err != nil {
			return records, good, 0, &ChainError{line, err.Error()}
		}
		switch {
		case r.Hash != want:
			return records, good, 0, &ChainError{line, fmt.Sprintf("record %d was altered: its hash is %s, the journal says %s", r.Seq, r.Hash, want)}
		case r.Prev != prev:
			return records, good, 0, &ChainError{line, fmt.Sprintf("record %d does not follow the one before: a record was removed, inserted or reordered", r.Seq)}
		case r.Seq != int64(len(records)+1):
			return records, good, 0, &ChainError{line, fmt.Sprintf("record %d is numbered %d", len(records)+1, r.Seq)}
		}
		records = append(records, r)
		prev = r.Hash
		good += int64(len(raw)) + 1
	}
	return records, good, 0, sc.Err()
}
