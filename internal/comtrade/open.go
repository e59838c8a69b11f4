package comtrade

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Parse reads a record from its cfg and dat bytes; the names are the
// files' for errors.
func Parse(cfgName string, cfg []byte, datName string, dat []byte) (*Capture, error) {
	c, err := ParseConfig(cfgName, cfg)
	if err != nil {
		return nil, err
	}
	return ParseData(c, datName, dat)
}

// Open reads a record from a file: a .cff, or a .cfg with its .dat
// beside it (the same name, .dat or .DAT).
func Open(path string) (*Capture, error) {
	if strings.EqualFold(filepath.Ext(path), ".cff") {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("comtrade: %w", err)
		}
		return ParseCFF(path, b)
	}
	dat, err := DataFile(path)
	if err != nil {
		return nil, err
	}
	cb, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("comtrade: %w", err)
	}
	db, err := os.ReadFile(dat)
	if err != nil {
		return nil, fmt.Errorf("comtrade: %w", err)
	}
	return Parse(path, cb, dat, db)
}

// DataFile is the dat file beside cfg: the same name with .dat, .DAT or
// .Dat; an error says what was looked for when there is none.
func DataFile(cfg string) (string, error) {
	ext := filepath.Ext(cfg)
	if !strings.EqualFold(ext, ".cfg") {
		return "", fmt.Errorf("%s: not a .cfg or .cff file: a COMTRADE record is NAME.cfg with NAME.dat, or NAME.cff", cfg)
	}
	base := strings.TrimSuffix(cfg, ext)
	for _, e := range []string{".dat", ".DAT", ".Dat"} {
		if _, err := os.Stat(base + e); err == nil {
			return base + e, nil
		}
	}
	return "", fmt.Errorf("%s: no %s.dat beside it: export the record's cfg and dat together", cfg, filepath.Base(base))
}

// cffHeader is a .cff section line: "--- file type: DAT BINARY: 4214 ---".
const cffHeader = "--- file type:"

// ParseCFF reads a 2013 single-file record: CFG, INF, HDR and DAT
// sections, the DAT last; a binary DAT header states its byte count.
func ParseCFF(name string, b []byte) (*Capture, error) {
	type section struct {
		kind, arg   string
		start, line int // body offset; the header's line number
	}
	var secs []section
	line, off := 1, 0
	for off < len(b) {
		end := bytes.IndexByte(b[off:], '\n')
		next := len(b)
		if end >= 0 {
			next = off + end + 1
		}
		text := strings.TrimSpace(string(b[off:min(next, len(b))]))
		if rest, ok := strings.CutPrefix(text, cffHeader); ok {
			fs := strings.Fields(strings.TrimSuffix(strings.TrimSpace(rest), "---"))
			if len(fs) == 0 {
				return nil, fmt.Errorf("%s:%d: section header %q names no file type", name, line, text)
			}
			s := section{kind: strings.ToUpper(fs[0]), start: next, line: line}
			if len(fs) > 1 {
				s.arg = strings.Join(fs[1:], " ")
			}
			secs = append(secs, s)
			if s.kind == "DAT" {
				break // the data may hold any byte
			}
		}
		off = next
		line++
	}
	var cfgB, datB []byte
	var datSec *section
	for i, s := range secs {
		body := b[s.start:]
		if i+1 < len(secs) {
			body = b[s.start:secs[i+1].start]
			body = body[:bytes.LastIndex(body, []byte(cffHeader))]
		}
		switch s.kind {
		case "CFG":
			cfgB = body
		case "DAT":
			datB, datSec = body, &secs[i]
		}
	}
	if cfgB == nil || datSec == nil {
		return nil, fmt.Errorf("%s: a .cff needs a \"--- file type: CFG ---\" and a \"--- file type: DAT ... ---\" section", name)
	}
	c, err := parseCFFConfig(name, secs[0].line, cfgB)
	if err != nil {
		return nil, err
	}
	typ, count, _ := strings.Cut(datSec.arg, ":")
	if !strings.EqualFold(strings.TrimSpace(typ), c.DataType) {
		return nil, fmt.Errorf("%s:%d: the DAT section is %q, the cfg says %s", name, datSec.line, strings.TrimSpace(typ), c.DataType)
	}
	if c.DataType != ASCII {
		n, err := strconv.Atoi(strings.TrimSpace(count))
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%s:%d: a binary DAT section states its byte count (\"DAT %s: N\"), not %q", name, datSec.line, c.DataType, strings.TrimSpace(count))
		}
		if n > len(datB) {
			return nil, fmt.Errorf("%s:%d: the DAT section states %d bytes, the file holds %d after it: a truncated file", name, datSec.line, n, len(datB))
		}
		datB = datB[:n]
	}
	return ParseData(c, name+" (DAT)", datB)
}

// parseCFFConfig parses the CFG section, its errors at the .cff's lines.
func parseCFFConfig(name string, header int, b []byte) (*Config, error) {
	c, err := ParseConfig(name, b)
	if err == nil {
		return c, nil
	}
	// ParseConfig counts lines from the section's first; shift them.
	msg := strings.TrimPrefix(err.Error(), name+":")
	if i := strings.IndexByte(msg, ':'); i > 0 {
		if n, e := strconv.Atoi(msg[:i]); e == nil {
			return nil, fmt.Errorf("%s:%d:%s", name, n+header, msg[i+1:])
		}
	}
	return nil, err
}
