package evidence

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"
)

// Sample is one reading as stored: channel, site time, value in the
// channel's canonical unit (a finite number: never NaN or infinite),
// quality ("good", "stale", "error").
type Sample struct {
	Channel string
	Time    time.Time
	Value   float64
	Quality string
}

// Qualities a sample may have.
const (
	Good  = "good"
	Stale = "stale"
	Bad   = "error"
)

const samplesHeader = "channel,time,value,quality\n"

// maxSampleRow is the longest row a reader accepts.
const maxSampleRow = 64 << 10

// checkSample refuses a sample sat must not write: a value that is NaN
// or infinite is no reading.
func checkSample(s Sample) error {
	if math.IsNaN(s.Value) || math.IsInf(s.Value, 0) {
		return fmt.Errorf("%s: %s at %s: value %v is not a finite number", SamplesFile, s.Channel, s.Time.UTC().Format(time.RFC3339Nano), s.Value)
	}
	return nil
}

func appendSample(buf []byte, s Sample) []byte {
	buf = append(buf, s.Channel...)
	buf = append(buf, ',')
	buf = s.Time.UTC().AppendFormat(buf, time.RFC3339Nano)
	buf = append(buf, ',')
	buf = strconv.AppendFloat(buf, s.Value, 'g', -1, 64)
	buf = append(buf, ',')
	buf = append(buf, s.Quality...)
	return append(buf, '\n')
}

// sampleScanner reads rows of samples.csv from a byte offset to another,
// with each row's offset; it never holds more than a row.
type sampleScanner struct {
	r      *bufio.Reader
	name   string
	at     int64 // the offset of the next row
	end    int64
	line   int // of the next row, when known (scanning from 0); else 0
	intern map[string]string
	buf    []byte
}

func newSampleScanner(r io.Reader, name string, from, to int64) *sampleScanner {
	s := &sampleScanner{r: bufio.NewReaderSize(r, 256<<10), name: name, at: from, end: to, intern: map[string]string{}}
	if from == 0 {
		s.line = 1
	}
	return s
}

// next returns the next row that starts before the range's end, and
// its offset; io.EOF after it. The header row is checked and skipped. An error names the file
// and line (or byte offset, when the range starts inside the file).
func (s *sampleScanner) next() (Sample, int64, error) {
	for s.at < s.end {
		row, err := s.readRow()
		if err != nil {
			return Sample{}, 0, err
		}
		at, line := s.at, s.line
		s.at += int64(len(row)) + 1
		if s.line > 0 {
			s.line++
		}
		if at == 0 {
			if string(row) != samplesHeader[:len(samplesHeader)-1] {
				return Sample{}, 0, fmt.Errorf("%s line 1: header %q, want %q", s.name, row, samplesHeader[:len(samplesHeader)-1])
			}
			continue
		}
		smp, err := parseSample(row, s.intern)
		if err != nil {
			return Sample{}, 0, fmt.Errorf("%s %s: %w", s.name, s.where(line, at), err)
		}
		return smp, at, nil
	}
	return Sample{}, 0, io.EOF
}

func (s *sampleScanner) where(line int, at int64) string {
	if line > 0 {
		return fmt.Sprintf("line %d", line)
	}
	return fmt.Sprintf("row at byte %d", at)
}

func (s *sampleScanner) readRow() ([]byte, error) {
	s.buf = s.buf[:0]
	for {
		chunk, err := s.r.ReadSlice('\n')
		s.buf = append(s.buf, chunk...)
		if len(s.buf) > maxSampleRow {
			return nil, fmt.Errorf("%s row at byte %d is longer than %d KiB: not a row sat wrote", s.name, s.at, maxSampleRow>>10)
		}
		switch {
		case err == nil:
			return s.buf[:len(s.buf)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			return nil, fmt.Errorf("%s: ends at byte %d, inside a row", s.name, s.at+int64(len(s.buf)))
		default:
			return nil, fmt.Errorf("%s: %w", s.name, err)
		}
	}
}

// parseSample splits a row from the right: the channel is everything
// before the last three fields.
func parseSample(row []byte, intern map[string]string) (Sample, error) {
	var f [4][]byte
	for i := 3; i > 0; i-- {
		j := bytes.LastIndexByte(row, ',')
		if j < 0 {
			return Sample{}, fmt.Errorf("%d fields, want 4 (channel,time,value,quality)", 4-i)
		}
		f[i], row = row[j+1:], row[:j]
	}
	f[0] = row
	if len(f[0]) == 0 {
		return Sample{}, errors.New("empty channel")
	}
	t, err := parseTime(f[1])
	if err != nil {
		return Sample{}, fmt.Errorf("channel %s: time %q: not RFC 3339", f[0], f[1])
	}
	v, err := strconv.ParseFloat(string(f[2]), 64)
	if err != nil {
		return Sample{}, fmt.Errorf("channel %s: value %q: not a number", f[0], f[2])
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return Sample{}, fmt.Errorf("channel %s: value %q: not a finite number, which sat never writes", f[0], f[2])
	}
	q := string(f[3])
	switch q {
	case Good, Stale, Bad:
	default:
		return Sample{}, fmt.Errorf("channel %s: quality %q: want good, stale or error", f[0], f[3])
	}
	ch, ok := intern[string(f[0])]
	if !ok {
		ch = string(f[0])
		if len(intern) < 1<<16 {
			intern[ch] = ch
		}
	}
	return Sample{Channel: ch, Time: t, Value: v, Quality: q}, nil
}

// parseTime reads the times sat writes (RFC 3339 in UTC, up to
// nanoseconds) without allocating, and anything else RFC 3339 through
// time.Parse.
func parseTime(b []byte) (time.Time, error) {
	if len(b) >= 20 && b[len(b)-1] == 'Z' && b[4] == '-' && b[7] == '-' && b[10] == 'T' && b[13] == ':' && b[16] == ':' {
		if t, ok := fastTime(b); ok {
			return t, nil
		}
	}
	return time.Parse(time.RFC3339Nano, string(b))
}

func fastTime(b []byte) (time.Time, bool) {
	num := func(s []byte) (int, bool) {
		n := 0
		for _, c := range s {
			if c < '0' || c > '9' {
				return 0, false
			}
			n = n*10 + int(c-'0')
		}
		return n, true
	}
	y, ok1 := num(b[0:4])
	mo, ok2 := num(b[5:7])
	d, ok3 := num(b[8:10])
	h, ok4 := num(b[11:13])
	mi, ok5 := num(b[14:16])
	s, ok6 := num(b[17:19])
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 59 {
		return time.Time{}, false
	}
	ns := 0
	rest := b[19 : len(b)-1]
	if len(rest) > 0 {
		if rest[0] != '.' || len(rest) < 2 || len(rest) > 10 {
			return time.Time{}, false
		}
		frac, ok := num(rest[1:])
		if !ok {
			return time.Time{}, false
		}
		for i := len(rest) - 1; i < 9; i++ {
			frac *= 10
		}
		ns = frac
	}
	t := time.Date(y, time.Month(mo), d, h, mi, s, ns, time.UTC)
	if t.Day() != d { // 31 February
		return time.Time{}, false
	}
	return t, true
}

// ScanSamples streams a bundle's samples.csv, calling fn for each row in
// file order; it never holds the file whole. An error names the file
// and line; fn's error stops the scan and is returned as is.
func ScanSamples(dir string, fn func(Sample) error) error {
	f, size, err := openRegular(dir, SamplesFile)
	if err != nil {
		return fmt.Errorf("samples: %w", err)
	}
	defer f.Close()
	sc := newSampleScanner(f, SamplesFile, 0, size)
	for {
		s, _, err := sc.next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := fn(s); err != nil {
			return err
		}
	}
}
