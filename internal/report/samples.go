package report

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/seamdc/seam/internal/evidence"
)

const samplesHeader = "channel,time,value,quality"

// ScanSamples streams a bundle's samples.csv, calling fn for each row in
// file order; it never holds the file whole. An error names the file
// and line. fn's error stops the scan and is returned as is.
func ScanSamples(dir string, fn func(evidence.Sample) error) error {
	return scanSamplesAt(dir, func(s evidence.Sample, _ int64) error { return fn(s) })
}

// scanSamplesAt is ScanSamples that also passes each row's byte offset
// in the file, which case_end records use to say which rows a case
// wrote.
func scanSamplesAt(dir string, fn func(evidence.Sample, int64) error) error {
	path := filepath.Join(dir, evidence.SamplesFile)
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("samples: %w", err)
	}
	defer f.Close()
	return scanSamples(f, path, fn)
}

func scanSamples(r io.Reader, name string, fn func(evidence.Sample, int64) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	names := map[string]string{} // interned channel and quality names
	intern := func(b []byte) string {
		if s, ok := names[string(b)]; ok {
			return s
		}
		s := string(b)
		names[s] = s
		return s
	}
	line, offset := 0, int64(0)
	for sc.Scan() {
		line++
		row := sc.Bytes()
		at := offset
		offset += int64(len(row)) + 1
		if line == 1 {
			if string(row) != samplesHeader {
				return fmt.Errorf("%s line 1: header %q, want %q", name, row, samplesHeader)
			}
			continue
		}
		s, err := parseSample(row, intern)
		if err != nil {
			return fmt.Errorf("%s line %d: %w", name, line, err)
		}
		if err := fn(s, at); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s line %d: %w", name, line+1, err)
	}
	if line == 0 {
		return fmt.Errorf("%s: empty, not even a header", name)
	}
	return nil
}

// parseSample splits a row from the right, as the runner does: the
// channel is everything before the last three fields.
func parseSample(row []byte, intern func([]byte) string) (evidence.Sample, error) {
	var f [4][]byte
	for i := 3; i > 0; i-- {
		j := bytes.LastIndexByte(row, ',')
		if j < 0 {
			return evidence.Sample{}, fmt.Errorf("%d fields, want 4 (channel,time,value,quality)", 4-i)
		}
		f[i], row = row[j+1:], row[:j]
	}
	f[0] = row
	if len(f[0]) == 0 {
		return evidence.Sample{}, fmt.Errorf("empty channel")
	}
	t, err := time.Parse(time.RFC3339Nano, string(f[1]))
	if err != nil {
		return evidence.Sample{}, fmt.Errorf("channel %s: time %q: not RFC 3339", f[0], f[1])
	}
	v, err := strconv.ParseFloat(string(f[2]), 64)
	if err != nil {
		return evidence.Sample{}, fmt.Errorf("channel %s: value %q: not a number", f[0], f[2])
	}
	return evidence.Sample{Channel: intern(f[0]), Time: t, Value: v, Quality: intern(f[3])}, nil
}
