package evidence

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// FuzzJournal: the journal reader takes any bytes without a panic or an
// unbounded read, and accepts a line only if it is exactly what
// EncodeRecord writes for it. Seeds: testdata/fuzz/FuzzJournal.
func FuzzJournal(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		jr := newJournalReader(bytes.NewReader(data))
		for {
			r, line, err := jr.next()
			if err != nil {
				return
			}
			again, err := EncodeRecord(&r)
			if err != nil || !bytes.Equal(again[:len(again)-1], line) {
				t.Fatalf("accepted %q, which encodes as %q (%v)", line, again, err)
			}
		}
	})
}

// FuzzSamples: the samples reader takes any bytes without a panic; a
// row it reads is one sat could have written (a finite value), and
// reads back the same.
func FuzzSamples(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		sc := newSampleScanner(bytes.NewReader(data), SamplesFile, 0, int64(len(data)))
		for {
			s, _, err := sc.next()
			if errors.Is(err, io.EOF) || err != nil {
				return
			}
			row := appendSample(nil, s)
			back, err := parseSample(row[:len(row)-1], map[string]string{})
			if err != nil {
				t.Fatalf("%+v writes %q, which does not read back: %v", s, row, err)
			}
			if checkSample(s) != nil {
				t.Fatalf("read %+v, which sat never writes", s)
			}
			if !back.Time.Equal(s.Time) || back.Channel != s.Channel || back.Quality != s.Quality || back.Value != s.Value {
				t.Fatalf("%+v writes %q, which reads %+v", s, row, back)
			}
		}
	})
}

// FuzzAudit: a bundle of any journal and samples is audited without a
// panic or a hang, and an audit that finds nothing wrong has a chain
// that the journal reader accepts in full.
func FuzzAudit(f *testing.F) {
	f.Fuzz(func(t *testing.T, journal, samples []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, JournalFile), journal, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, SamplesFile), samples, 0o644); err != nil {
			t.Fatal(err)
		}
		rep, err := Audit(dir, AuditOptions{})
		if err != nil {
			return
		}
		_ = rep.Describe()
		if rep.OK() && rep.Records > 0 && rep.JournalBytes+rep.PartialJournal != int64(len(journal)) {
			t.Fatalf("an intact audit read %d+%d of %d journal bytes", rep.JournalBytes, rep.PartialJournal, len(journal))
		}
	})
}
