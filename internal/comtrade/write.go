package comtrade

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"
)

// Write writes c as a cfg and a dat in c.Revision and c.DataType (2013
// and BINARY when empty). Values are encoded as x = (v−B)/A, rounded for
// the integer types; NaN is written as the type's missing-value marker.
// Time comes from c.Rates, or, without them, from c.Time as timestamps.
func Write(cfg, dat io.Writer, c *Capture) error {
	if c.Revision == "" {
		c.Revision = "2013"
	}
	if c.DataType == "" {
		c.DataType = Binary
	}
	if c.TimeMult == 0 {
		c.TimeMult = 1
	}
	if c.TimeBase == 0 {
		c.TimeBase = time.Microsecond
	}
	if err := writeConfig(cfg, c); err != nil {
		return err
	}
	bw := bufio.NewWriter(dat)
	var err error
	if c.DataType == ASCII {
		err = writeASCII(bw, c)
	} else {
		err = writeBinary(bw, c)
	}
	if err != nil {
		return err
	}
	return bw.Flush()
}

func g(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

func writeConfig(w io.Writer, c *Capture) error {
	bw := bufio.NewWriter(w)
	p := func(format string, args ...any) { fmt.Fprintf(bw, format+"\r\n", args...) }
	if c.Revision == "1991" {
		p("%s,%s", c.Station, c.Device)
	} else {
		p("%s,%s,%s", c.Station, c.Device, c.Revision)
	}
	na, nd := len(c.Analogs), len(c.Statuses)
	p("%d,%dA,%dD", na+nd, na, nd)
	for i, a := range c.Analogs {
		if c.Revision == "1991" {
			p("%d,%s,%s,%s,%s,%s,%s,%s,%s,%s", i+1, a.ID, a.Phase, a.Circuit, a.Unit, g(a.A), g(a.B), g(a.SkewUS), g(a.Min), g(a.Max))
			continue
		}
		ps := a.PS
		if ps == "" {
			ps = "P"
		}
		p("%d,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s", i+1, a.ID, a.Phase, a.Circuit, a.Unit, g(a.A), g(a.B), g(a.SkewUS), g(a.Min), g(a.Max),
			g(nonzero(a.Primary)), g(nonzero(a.Secondary)), ps)
	}
	for i, s := range c.Statuses {
		if c.Revision == "1991" {
			p("%d,%s,%d", i+1, s.ID, s.Normal)
		} else {
			p("%d,%s,%s,%s,%d", i+1, s.ID, s.Phase, s.Circuit, s.Normal)
		}
	}
	p("%s", g(c.LineHz))
	n := len(c.Time)
	if len(c.Rates) == 0 {
		p("0")
		p("0,%d", n)
	} else {
		p("%d", len(c.Rates))
		for _, r := range c.Rates {
			p("%s,%d", g(r.Hz), r.EndSample)
		}
	}
	p("%s", cfgTime(c.Start, c.Revision, c.TimeBase))
	p("%s", cfgTime(c.Trigger, c.Revision, c.TimeBase))
	p("%s", c.DataType)
	if c.Revision != "1991" {
		p("%s", g(c.TimeMult))
	}
	if c.Revision == "2013" {
		p("%s,%s", orZero(c.TimeCode), orZero(c.LocalCode))
		p("%s,%s", orZero(c.TmqCode), orZero(c.LeapSec))
	}
	return bw.Flush()
}

func nonzero(v float64) float64 {
	if v == 0 {
		return 1
	}
	return v
}

func orZero(s string) string {
	if s == "" {
		return "0"
	}
	return s
}

func cfgTime(t time.Time, rev string, base time.Duration) string {
	layout := "01/02/2006,15:04:05.000000"
	if rev == "2013" {
		layout = "02/01/2006,15:04:05.000000"
		if base == time.Nanosecond {
			layout += "000"
		}
	}
	return t.Format(layout)
}

// stamp is sample k's timestamp in the record's units.
func stamp(c *Capture, k int) float64 {
	return math.Round(c.Time[k] / (c.TimeBase.Seconds() * c.TimeMult))
}

func raw(a Analog, v float64) float64 {
	if a.A == 0 {
		return v - a.B
	}
	return (v - a.B) / a.A
}

func writeASCII(w *bufio.Writer, c *Capture) error {
	for k := range c.Time {
		w.WriteString(strconv.Itoa(k + 1))
		w.WriteByte(',')
		w.WriteString(strconv.FormatFloat(stamp(c, k), 'f', 0, 64))
		for i, a := range c.Analogs {
			w.WriteByte(',')
			v := c.Analog[i][k]
			switch {
			case math.IsNaN(v) && c.Revision == "2013":
				// 2013: a missing ASCII value is an empty field.
			case math.IsNaN(v):
				w.WriteString("99999")
			default:
				w.WriteString(strconv.FormatFloat(math.Round(raw(a, v)), 'f', 0, 64))
			}
		}
		for i := range c.Statuses {
			w.WriteByte(',')
			if c.Status[i][k] {
				w.WriteByte('1')
			} else {
				w.WriteByte('0')
			}
		}
		w.WriteString("\r\n")
	}
	return nil
}

func writeBinary(w *bufio.Writer, c *Capture) error {
	size, width := recordSize(&c.Config)
	rec := make([]byte, size)
	le := binary.LittleEndian
	for k := range c.Time {
		clear(rec)
		le.PutUint32(rec, uint32(k+1))
		le.PutUint32(rec[4:], uint32(stamp(c, k)))
		off := 8
		for i, a := range c.Analogs {
			putValue(rec[off:off+width], c.DataType, raw(a, c.Analog[i][k]))
			off += width
		}
		for i := range c.Statuses {
			if c.Status[i][k] {
				o := off + 2*(i/16)
				le.PutUint16(rec[o:], le.Uint16(rec[o:])|1<<(i%16))
			}
		}
		if _, err := w.Write(rec); err != nil {
			return fmt.Errorf("comtrade: writing sample %d: %w", k+1, err)
		}
	}
	return nil
}

func putValue(b []byte, typ string, x float64) {
	le := binary.LittleEndian
	switch typ {
	case Binary:
		v := uint16(0x8000)
		if !math.IsNaN(x) {
			v = uint16(int16(max(-32767, min(32767, math.Round(x)))))
		}
		le.PutUint16(b, v)
	case Binary32:
		v := uint32(0x80000000)
		if !math.IsNaN(x) {
			v = uint32(int32(max(-2147483647, min(2147483647, math.Round(x)))))
		}
		le.PutUint32(b, v)
	default:
		le.PutUint32(b, math.Float32bits(float32(x)))
	}
}
