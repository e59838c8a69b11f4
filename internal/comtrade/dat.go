package comtrade

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Capture is a record: its configuration and its samples.
type Capture struct {
	Config
	// Time is each sample's time in seconds after Start: from the
	// sampling-rate sections, or from the timestamps × TimeMult when
	// the record has none.
	Time []float64
	// Analog holds, per analog channel, the scaled values A·x+B in the
	// channel's unit on the side its PS flag names (Analog.ToPrimary
	// turns them primary); NaN where the recorder marked a value missing.
	Analog [][]float64
	// Status holds, per status channel, each sample's state.
	Status [][]bool
}

// Missing-value markers.
const (
	missingASCII     = 99999
	missingInt16     = math.MinInt16 // 0x8000
	missingInt32     = math.MinInt32 // 0x80000000
	missingTimestamp = 0xFFFFFFFF
)

// SampleRate is the record's highest sampling rate in Hz, or, without
// rate sections, the rate its timestamps show (samples over the span).
func (c *Capture) SampleRate() float64 {
	hz := 0.0
	for _, r := range c.Rates {
		hz = max(hz, r.Hz)
	}
	if hz == 0 && len(c.Time) > 1 {
		if span := c.Time[len(c.Time)-1] - c.Time[0]; span > 0 {
			hz = float64(len(c.Time)-1) / span
		}
	}
	return hz
}

// TriggerOffset is the trigger's time in seconds after Start.
func (c *Capture) TriggerOffset() float64 { return c.Trigger.Sub(c.Start).Seconds() }

// Channel returns the index of the analog channel whose id is id
// (compared without case or padding), or -1.
func (c *Capture) Channel(id string) int {
	for i, a := range c.Analogs {
		if strings.EqualFold(strings.TrimSpace(a.ID), strings.TrimSpace(id)) {
			return i
		}
	}
	return -1
}

// datReader decodes one record after another.
type datReader struct {
	name  string
	cfg   *Config
	cap   *Capture
	stamp []float64 // raw timestamps, NaN where missing
}

func newCapture(c *Config, n int) *Capture {
	cp := &Capture{Config: *c, Analog: make([][]float64, len(c.Analogs)), Status: make([][]bool, len(c.Statuses))}
	for i := range cp.Analog {
		cp.Analog[i] = make([]float64, 0, n)
	}
	for i := range cp.Status {
		cp.Status[i] = make([]bool, 0, n)
	}
	return cp
}

// ParseData decodes a dat's bytes against its cfg; name is the dat
// file's name for errors.
func ParseData(c *Config, name string, b []byte) (*Capture, error) {
	r := &datReader{name: name, cfg: c}
	var err error
	if c.DataType == ASCII {
		err = r.ascii(b)
	} else {
		err = r.binary(b)
	}
	if err != nil {
		return nil, err
	}
	if err := r.times(); err != nil {
		return nil, err
	}
	return r.cap, nil
}

func (r *datReader) errf(sample int, format string, args ...any) error {
	return fmt.Errorf("%s: sample %d: %s", r.name, sample, fmt.Sprintf(format, args...))
}

func (r *datReader) ascii(b []byte) error {
	if i := bytes.IndexByte(b, 0x1A); i >= 0 {
		b = b[:i]
	}
	text := strings.ReplaceAll(string(b), "\r", "")
	lines := strings.Split(text, "\n")
	r.cap = newCapture(r.cfg, len(lines))
	want := 2 + len(r.cfg.Analogs) + len(r.cfg.Statuses)
	row := 0
	for _, line := range lines {
		if strings.TrimSpace(line) == "" {
			continue
		}
		row++
		fs := strings.Split(line, ",")
		if len(fs) != want {
			return r.errf(row, "%d fields, want %d (n, timestamp, %d analog, %d status)", len(fs), want, len(r.cfg.Analogs), len(r.cfg.Statuses))
		}
		if err := r.asciiRow(row, fs); err != nil {
			return err
		}
	}
	return nil
}

func (r *datReader) asciiRow(row int, fs []string) error {
	ts := strings.TrimSpace(fs[1])
	if ts == "" {
		r.stamp = append(r.stamp, math.NaN())
	} else {
		v, err := strconv.ParseFloat(ts, 64)
		if err != nil {
			return r.errf(row, "timestamp %q is not a number", ts)
		}
		r.stamp = append(r.stamp, v)
	}
	for i, a := range r.cfg.Analogs {
		f := strings.TrimSpace(fs[2+i])
		if f == "" {
			r.cap.Analog[i] = append(r.cap.Analog[i], math.NaN())
			continue
		}
		x, err := strconv.ParseFloat(f, 64)
		if err != nil {
			return r.errf(row, "analog channel %d (%s): %q is not a number", i+1, a.ID, f)
		}
		if x == missingASCII && r.cfg.DataType == ASCII {
			r.cap.Analog[i] = append(r.cap.Analog[i], math.NaN())
			continue
		}
		r.cap.Analog[i] = append(r.cap.Analog[i], a.A*x+a.B)
	}
	for i, s := range r.cfg.Statuses {
		f := strings.TrimSpace(fs[2+len(r.cfg.Analogs)+i])
		if f != "0" && f != "1" {
			return r.errf(row, "status channel %d (%s): %q, want 0 or 1", i+1, s.ID, f)
		}
		r.cap.Status[i] = append(r.cap.Status[i], f == "1")
	}
	return nil
}

// recordSize is the bytes one binary sample takes.
func recordSize(c *Config) (size, width int) {
	width = 2
	if c.DataType == Binary32 || c.DataType == Float32 {
		width = 4
	}
	words := (len(c.Statuses) + 15) / 16
	return 8 + width*len(c.Analogs) + 2*words, width
}

func (r *datReader) binary(b []byte) error {
	size, width := recordSize(r.cfg)
	n := len(b) / size
	if rest := len(b) % size; rest != 0 {
		return r.errf(n+1, "the dat ends %d bytes into a sample of %d bytes (%s, %d analog, %d status): a truncated file, or the cfg's channel counts or data type do not match it",
			rest, size, r.cfg.DataType, len(r.cfg.Analogs), len(r.cfg.Statuses))
	}
	r.cap = newCapture(r.cfg, n)
	r.stamp = make([]float64, 0, n)
	le := binary.LittleEndian
	for k := 0; k < n; k++ {
		rec := b[k*size : (k+1)*size]
		if ts := le.Uint32(rec[4:]); ts == missingTimestamp {
			r.stamp = append(r.stamp, math.NaN())
		} else {
			r.stamp = append(r.stamp, float64(ts))
		}
		off := 8
		for i, a := range r.cfg.Analogs {
			r.cap.Analog[i] = append(r.cap.Analog[i], r.value(a, rec[off:off+width]))
			off += width
		}
		for i := range r.cfg.Statuses {
			w := le.Uint16(rec[off+2*(i/16):])
			r.cap.Status[i] = append(r.cap.Status[i], w&(1<<(i%16)) != 0)
		}
	}
	return nil
}

func (r *datReader) value(a Analog, b []byte) float64 {
	le := binary.LittleEndian
	switch r.cfg.DataType {
	case Binary:
		x := int16(le.Uint16(b))
		if x == missingInt16 {
			return math.NaN()
		}
		return a.A*float64(x) + a.B
	case Binary32:
		x := int32(le.Uint32(b))
		if x == missingInt32 {
			return math.NaN()
		}
		return a.A*float64(x) + a.B
	default:
		x := math.Float32frombits(le.Uint32(b))
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return math.NaN()
		}
		return a.A*float64(x) + a.B
	}
}

// times fills Capture.Time: from the rate sections, or the timestamps.
func (r *datReader) times() error {
	c, n := r.cfg, len(r.stamp)
	r.cap.Time = make([]float64, n)
	if len(c.Rates) > 0 {
		if last := c.Rates[len(c.Rates)-1].EndSample; n < last {
			return r.errf(n+1, "the dat holds %d samples, the cfg's sampling rates end at sample %d: a truncated dat", n, last)
		}
		t, k := 0.0, 0
		for _, rt := range c.Rates {
			for ; k < rt.EndSample && k < n; k++ {
				r.cap.Time[k] = t
				t += 1 / rt.Hz
			}
		}
		// Samples past the last section keep its rate.
		for ; k < n; k++ {
			r.cap.Time[k] = t
			t += 1 / c.Rates[len(c.Rates)-1].Hz
		}
		return nil
	}
	unit := c.TimeBase.Seconds() * c.TimeMult
	for k, s := range r.stamp {
		if math.IsNaN(s) {
			return r.errf(k+1, "the timestamp is missing and the cfg has no sampling rate (nrates 0): the sample's time is unknown")
		}
		r.cap.Time[k] = s * unit
		if k > 0 && r.cap.Time[k] < r.cap.Time[k-1] {
			return r.errf(k+1, "timestamp %g is before the previous sample's %g", s, r.stamp[k-1])
		}
	}
	return nil
}
