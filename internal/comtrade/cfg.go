// Package comtrade reads and writes IEEE C37.111 COMTRADE records, the
// format power-quality analysers and protection relays export their
// captures in: a cfg (configuration) file and a dat (data) file, or the
// 2013 revision's single .cff file holding both.
//
// It reads the 1991, 1999 and 2013 revisions; ASCII, BINARY (int16),
// BINARY32 (int32) and FLOAT32 data; cfg files in UTF-8 or Latin-1 with
// LF or CRLF line ends (and the DOS end-of-file character 0x1A); analog
// scaling a·x+b with the primary/secondary flag and ratios; sampling-rate
// sections (nrates, samp/endsamp) or, with nrates 0, the samples' own
// timestamps × timemult; missing-value markers (99999 or an empty field
// in ASCII, 0x8000 / 0x80000000 in BINARY / BINARY32, NaN in FLOAT32,
// 0xFFFFFFFF for a timestamp), status channels packed 16 to a word, and
// the start and trigger times. It is pure: no clock, no file system but
// the Open helpers.
//
// Errors name the file and line (cfg) or the sample number (dat) and
// say what is wrong.
package comtrade

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Data file types (cfg field ft), compared case-insensitively.
const (
	ASCII    = "ASCII"
	Binary   = "BINARY"
	Binary32 = "BINARY32"
	Float32  = "FLOAT32"
)

// Analog is an analog channel as the cfg declares it.
type Analog struct {
	Index   int     // An: the channel's number, from 1
	ID      string  // ch_id, trimmed
	Phase   string  // ph
	Circuit string  // ccbm: the circuit component monitored
	Unit    string  // uu, trimmed: "V", "kV", "A"
	A, B    float64 // a value is A·x + B, x the recorded number
	SkewUS  float64 // the channel's time skew from the sample's time, µs
	Min     float64 // range of the recorded numbers
	Max     float64
	// Primary and Secondary are the transformer ratio's two sides, and
	// PS says which side A·x+B gives: "P" or "S" (1991 records have
	// none: "P" with ratio 1).
	Primary, Secondary float64
	PS                 string
}

// ToPrimary is the factor that turns this channel's scaled values into
// primary values: 1 when they already are, Primary/Secondary otherwise.
func (a Analog) ToPrimary() float64 {
	if strings.EqualFold(a.PS, "S") && a.Secondary != 0 {
		return a.Primary / a.Secondary
	}
	return 1
}

// Status is a status (digital) channel.
type Status struct {
	Index   int
	ID      string
	Phase   string
	Circuit string
	Normal  int // y: the channel's normal state, 0 or 1
}

// Rate is one sampling-rate section: Hz up to and including sample
// EndSample (numbered from 1).
type Rate struct {
	Hz        float64
	EndSample int
}

// Config is a parsed cfg.
type Config struct {
	Station  string
	Device   string
	Revision string // "1991", "1999" or "2013"
	Analogs  []Analog
	Statuses []Status
	LineHz   float64 // lf: the nominal line frequency
	// Rates are the sampling-rate sections; empty when the record has
	// nrates 0 (its timestamps are the times). Samples is the record's
	// sample count as the cfg states it (the last EndSample).
	Rates   []Rate
	Samples int
	// Start is the time of the first sample; Trigger the trigger point's.
	// Both are as the recorder's clock read them, in its local time
	// (LocalCode, when the cfg states one, is its offset from UTC).
	Start, Trigger time.Time
	DataType       string  // ASCII, BINARY, BINARY32 or FLOAT32
	TimeMult       float64 // multiplies the timestamps (1 when absent)
	// TimeBase is the unit of a timestamp: 1 µs, or 1 ns when the cfg's
	// times have nanosecond resolution (2013).
	TimeBase  time.Duration
	TimeCode  string // 2013: the recorder's offset from UTC, "-5h30"
	LocalCode string
	TmqCode   string // 2013: time quality and leap second
	LeapSec   string
}

// cfgParser walks a cfg's lines.
type cfgParser struct {
	name  string
	lines []string
	n     int // index of the next line
}

func (p *cfgParser) errf(line int, format string, args ...any) error {
	return fmt.Errorf("%s:%d: %s", p.name, line, fmt.Sprintf(format, args...))
}

// next returns the next line's fields (trimmed) and its line number.
func (p *cfgParser) next(what string) ([]string, int, error) {
	if p.n >= len(p.lines) {
		return nil, p.n + 1, p.errf(p.n+1, "the cfg ends before its %s line: a cfg lists, in order, station, channel counts, channels, line frequency, sampling rates, start and trigger times and the data file type", what)
	}
	line := p.lines[p.n]
	p.n++
	fs := strings.Split(line, ",")
	for i := range fs {
		fs[i] = strings.TrimSpace(fs[i])
	}
	return fs, p.n, nil
}

// optional returns the next line when there is one that is not blank.
func (p *cfgParser) optional() ([]string, int, bool) {
	if p.n >= len(p.lines) || strings.TrimSpace(p.lines[p.n]) == "" {
		return nil, p.n + 1, false
	}
	fs, n, _ := p.next("")
	return fs, n, true
}

// decodeText turns cfg bytes into a string: UTF-8 when the bytes are
// valid UTF-8, else Latin-1 (ISO-8859-1), one byte to a rune. A BOM and
// DOS end-of-file characters (0x1A) are dropped.
func decodeText(b []byte) string {
	b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
	if i := bytes.IndexByte(b, 0x1A); i >= 0 {
		b = b[:i]
	}
	if utf8.Valid(b) {
		return string(b)
	}
	r := make([]rune, len(b))
	for i, c := range b {
		r[i] = rune(c)
	}
	return string(r)
}

func splitLines(s string) []string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	lines := strings.Split(s, "\n")
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// ParseConfig parses a cfg's bytes; name is the file's name for errors.
func ParseConfig(name string, b []byte) (*Config, error) {
	p := &cfgParser{name: name, lines: splitLines(decodeText(b))}
	c := &Config{TimeMult: 1, TimeBase: time.Microsecond}
	steps := []func(*cfgParser, *Config) error{parseStation, parseCounts, parseChannels, parseRates, parseTimes, parseTail}
	for _, step := range steps {
		if err := step(p, c); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func parseStation(p *cfgParser, c *Config) error {
	fs, ln, err := p.next("station")
	if err != nil {
		return err
	}
	switch {
	case len(fs) == 2:
		c.Station, c.Device, c.Revision = fs[0], fs[1], "1991"
	case len(fs) >= 3:
		// A station name may itself hold commas: the revision is last.
		c.Revision = fs[len(fs)-1]
		c.Device = fs[len(fs)-2]
		c.Station = strings.Join(fs[:len(fs)-2], ",")
	default:
		return p.errf(ln, "station line %q: want station_name,rec_dev_id[,rev_year]", strings.Join(fs, ","))
	}
	switch c.Revision {
	case "1991", "1999", "2013":
	case "":
		c.Revision = "1991"
	default:
		return p.errf(ln, "revision year %q: this reader knows 1991, 1999 and 2013", c.Revision)
	}
	return nil
}

func parseCounts(p *cfgParser, c *Config) error {
	fs, ln, err := p.next("channel count")
	if err != nil {
		return err
	}
	if len(fs) != 3 {
		return p.errf(ln, "channel counts %q: want TT,##A,##D (e.g. 8,4A,4D)", strings.Join(fs, ","))
	}
	tt, err1 := strconv.Atoi(fs[0])
	na, err2 := countField(fs[1], "A")
	nd, err3 := countField(fs[2], "D")
	if err1 != nil || err2 != nil || err3 != nil || tt != na+nd || na < 0 || nd < 0 {
		return p.errf(ln, "channel counts %q: want TT,##A,##D with TT = ##A + ##D", strings.Join(fs, ","))
	}
	if left := len(p.lines) - p.n; na+nd > left {
		return p.errf(ln, "channel counts %q: %d channels, but the cfg has only %d more lines", strings.Join(fs, ","), na+nd, left)
	}
	c.Analogs = make([]Analog, na)
	c.Statuses = make([]Status, nd)
	return nil
}

func countField(s, suffix string) (int, error) {
	if !strings.HasSuffix(strings.ToUpper(s), suffix) {
		return 0, fmt.Errorf("no %s suffix", suffix)
	}
	return strconv.Atoi(strings.TrimSpace(s[:len(s)-1]))
}

func parseChannels(p *cfgParser, c *Config) error {
	for i := range c.Analogs {
		fs, ln, err := p.next(fmt.Sprintf("analog channel %d", i+1))
		if err != nil {
			return err
		}
		a, err := parseAnalog(fs, c.Revision)
		if err != nil {
			return p.errf(ln, "analog channel %d: %v", i+1, err)
		}
		c.Analogs[i] = a
	}
	for i := range c.Statuses {
		fs, ln, err := p.next(fmt.Sprintf("status channel %d", i+1))
		if err != nil {
			return err
		}
		s, err := parseStatus(fs)
		if err != nil {
			return p.errf(ln, "status channel %d: %v", i+1, err)
		}
		c.Statuses[i] = s
	}
	return nil
}

// parseAnalog reads An,ch_id,ph,ccbm,uu,a,b,skew,min,max[,primary,secondary,PS].
func parseAnalog(fs []string, rev string) (Analog, error) {
	if len(fs) != 10 && len(fs) != 13 {
		return Analog{}, fmt.Errorf("%d fields, want 13 (An,ch_id,ph,ccbm,uu,a,b,skew,min,max,primary,secondary,PS) or 10 (1991)", len(fs))
	}
	a := Analog{ID: fs[1], Phase: fs[2], Circuit: fs[3], Unit: fs[4], Primary: 1, Secondary: 1, PS: "P"}
	var err error
	if a.Index, err = strconv.Atoi(fs[0]); err != nil {
		return a, fmt.Errorf("channel number %q is not a whole number", fs[0])
	}
	nums := []struct {
		name string
		dst  *float64
		s    string
	}{{"a", &a.A, fs[5]}, {"b", &a.B, fs[6]}, {"skew", &a.SkewUS, fs[7]}, {"min", &a.Min, fs[8]}, {"max", &a.Max, fs[9]}}
	if len(fs) == 13 {
		nums = append(nums, struct {
			name string
			dst  *float64
			s    string
		}{"primary", &a.Primary, fs[10]}, struct {
			name string
			dst  *float64
			s    string
		}{"secondary", &a.Secondary, fs[11]})
		a.PS = strings.ToUpper(fs[12])
		if a.PS != "P" && a.PS != "S" {
			return a, fmt.Errorf("PS %q: want P (values are primary) or S (secondary)", fs[12])
		}
	}
	for _, n := range nums {
		if n.s == "" && (n.name == "skew" || n.name == "b") {
			continue
		}
		if *n.dst, err = parseFloat(n.s); err != nil {
			return a, fmt.Errorf("%s %q is not a number", n.name, n.s)
		}
	}
	return a, nil
}

// parseStatus reads Dn,ch_id,ph,ccbm,y (1999, 2013) or Dn,ch_id,y (1991).
func parseStatus(fs []string) (Status, error) {
	var s Status
	var y string
	switch len(fs) {
	case 5:
		s.ID, s.Phase, s.Circuit, y = fs[1], fs[2], fs[3], fs[4]
	case 3:
		s.ID, y = fs[1], fs[2]
	default:
		return s, fmt.Errorf("%d fields, want 5 (Dn,ch_id,ph,ccbm,y) or 3 (1991)", len(fs))
	}
	var err error
	if s.Index, err = strconv.Atoi(fs[0]); err != nil {
		return s, fmt.Errorf("channel number %q is not a whole number", fs[0])
	}
	if s.Normal, err = strconv.Atoi(y); err != nil || (s.Normal != 0 && s.Normal != 1) {
		return s, fmt.Errorf("normal state %q: want 0 or 1", y)
	}
	return s, nil
}

func parseFloat(s string) (float64, error) {
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return 0, err
	}
	return v, nil
}

func parseRates(p *cfgParser, c *Config) error {
	fs, ln, err := p.next("line frequency")
	if err != nil {
		return err
	}
	if c.LineHz, err = parseFloat(fs[0]); err != nil || len(fs) != 1 {
		return p.errf(ln, "line frequency %q is not a number (e.g. 50 or 60)", strings.Join(fs, ","))
	}
	fs, ln, err = p.next("nrates")
	if err != nil {
		return err
	}
	nrates, err := strconv.Atoi(fs[0])
	if err != nil || len(fs) != 1 || nrates < 0 {
		return p.errf(ln, "nrates %q: want the number of sampling-rate sections (0 when the timestamps give the times)", strings.Join(fs, ","))
	}
	rows := max(nrates, 1) // nrates 0 still has one "0,endsamp" line
	prevEnd := 0
	for i := 0; i < rows; i++ {
		fs, ln, err = p.next("sampling rate")
		if err != nil {
			return err
		}
		if len(fs) != 2 {
			return p.errf(ln, "sampling rate %q: want samp,endsamp", strings.Join(fs, ","))
		}
		hz, err1 := parseFloat(fs[0])
		end, err2 := strconv.Atoi(fs[1])
		if err1 != nil || err2 != nil || hz < 0 || end < 0 {
			return p.errf(ln, "sampling rate %q: want samp (Hz) and endsamp (the section's last sample number)", strings.Join(fs, ","))
		}
		if nrates > 0 && hz > 0 {
			if end <= prevEnd {
				return p.errf(ln, "sampling rate section ends at sample %d, not after the previous section's %d", end, prevEnd)
			}
			c.Rates = append(c.Rates, Rate{Hz: hz, EndSample: end})
		}
		prevEnd = end
		c.Samples = end
	}
	return nil
}

func parseTimes(p *cfgParser, c *Config) error {
	for i, dst := range []*time.Time{&c.Start, &c.Trigger} {
		what := [...]string{"start time", "trigger time"}[i]
		fs, ln, err := p.next(what)
		if err != nil {
			return err
		}
		if len(fs) != 2 {
			return p.errf(ln, "%s %q: want date,time (dd/mm/yyyy,hh:mm:ss.ssssss in 2013, mm/dd/yyyy before)", what, strings.Join(fs, ","))
		}
		t, ns, err := parseTime(fs[0], fs[1], c.Revision)
		if err != nil {
			return p.errf(ln, "%s %q: %v", what, strings.Join(fs, ","), err)
		}
		if ns {
			c.TimeBase = time.Nanosecond
		}
		*dst = t
	}
	return nil
}

// parseTime reads a cfg date and time. The 2013 revision writes the day
// first, earlier ones the month; a date whose fields only fit the other
// order (a "month" over 12) is read in that order.
func parseTime(date, clock, rev string) (time.Time, bool, error) {
	ds := strings.Split(date, "/")
	if len(ds) != 3 {
		return time.Time{}, false, fmt.Errorf("date %q: want three fields separated by /", date)
	}
	n := make([]int, 3)
	for i, f := range ds {
		v, err := strconv.Atoi(f)
		if err != nil {
			return time.Time{}, false, fmt.Errorf("date %q: %q is not a number", date, f)
		}
		n[i] = v
	}
	day, month, year := n[0], n[1], n[2]
	if rev != "2013" {
		day, month = month, day
	}
	if month > 12 && day <= 12 {
		day, month = month, day
	}
	if year < 100 { // 1991: two-digit years
		year += 1900
		if year < 1970 {
			year += 100
		}
	}
	if month < 1 || month > 12 || day < 1 || day > 31 {
		return time.Time{}, false, fmt.Errorf("date %q is not a calendar date", date)
	}
	hms := strings.Split(clock, ":")
	if len(hms) != 3 {
		return time.Time{}, false, fmt.Errorf("time %q: want hh:mm:ss.ssssss", clock)
	}
	h, err1 := strconv.Atoi(hms[0])
	m, err2 := strconv.Atoi(hms[1])
	secStr, frac, _ := strings.Cut(hms[2], ".")
	s, err3 := strconv.Atoi(secStr)
	if err1 != nil || err2 != nil || err3 != nil || h > 23 || m > 59 || s > 60 || h < 0 || m < 0 || s < 0 {
		return time.Time{}, false, fmt.Errorf("time %q: want hh:mm:ss.ssssss", clock)
	}
	ns := 0
	if frac != "" {
		if len(frac) > 9 {
			return time.Time{}, false, fmt.Errorf("time %q: more than nanosecond resolution", clock)
		}
		f, err := strconv.Atoi(frac)
		if err != nil || f < 0 {
			return time.Time{}, false, fmt.Errorf("time %q: fraction %q is not a number", clock, frac)
		}
		ns = f * int(math.Pow10(9-len(frac)))
	}
	t := time.Date(year, time.Month(month), day, h, m, s, ns, time.UTC)
	return t, len(frac) > 6, nil
}

func parseTail(p *cfgParser, c *Config) error {
	fs, ln, err := p.next("data file type")
	if err != nil {
		return err
	}
	c.DataType = strings.ToUpper(fs[0])
	switch c.DataType {
	case ASCII, Binary, Binary32, Float32:
	default:
		return p.errf(ln, "data file type %q: want ASCII, BINARY, BINARY32 or FLOAT32", fs[0])
	}
	if c.Revision == "1991" && c.DataType != ASCII && c.DataType != Binary {
		return p.errf(ln, "data file type %s needs the 2013 revision; a 1991 record is ASCII or BINARY", c.DataType)
	}
	if c.Revision == "1991" {
		return nil
	}
	fs, ln, ok := p.optional()
	if !ok {
		return nil
	}
	if c.TimeMult, err = parseFloat(fs[0]); err != nil || c.TimeMult <= 0 {
		return p.errf(ln, "timemult %q: want a positive number (the timestamps' multiplier)", fs[0])
	}
	if fs, _, ok = p.optional(); ok && len(fs) == 2 {
		c.TimeCode, c.LocalCode = fs[0], fs[1]
	}
	if fs, _, ok = p.optional(); ok && len(fs) == 2 {
		c.TmqCode, c.LeapSec = fs[0], fs[1]
	}
	return nil
}
