package comtrade

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// goodCfg is sample_ascii.cfg's shape, small enough to break line by line.
const goodCfg = "ST,DEV,2013\n2,1A,1D\n1,VA,A,,V,0.5,0,0,-32767,32767,1,1,P\n1,S1,,,0\n50\n1\n1000,3\n01/02/2026,10:00:00.000000\n01/02/2026,10:00:00.001000\nASCII\n1\n0,0\n0,0\n"
const goodDat = "1,0,10,0\n2,1000,20,1\n3,2000,30,0\n"

// TestConfigErrors: every bad cfg names the file and line and what is
// wrong.
func TestConfigErrors(t *testing.T) {
	line := func(n int, with string) string {
		ls := strings.Split(goodCfg, "\n")
		ls[n-1] = with
		return strings.Join(ls, "\n")
	}
	tests := []struct{ cfg, want string }{
		{line(1, "ST"), "x.cfg:1: station line"},
		{line(1, "ST,DEV,2020"), "x.cfg:1: revision year \"2020\""},
		{line(2, "3,1A,1D"), "x.cfg:2: channel counts \"3,1A,1D\": want TT,##A,##D with TT = ##A + ##D"},
		{line(3, "1,VA,A,,V,half,0,0,-32767,32767,1,1,P"), "x.cfg:3: analog channel 1: a \"half\" is not a number"},
		{line(3, "1,VA,A,,V,0.5,0,0,-32767,32767,1,1,X"), "x.cfg:3: analog channel 1: PS \"X\""},
		{line(3, "1,VA,A"), "x.cfg:3: analog channel 1: 3 fields"},
		{line(4, "1,S1,,,2"), "x.cfg:4: status channel 1: normal state \"2\""},
		{line(5, "fifty"), "x.cfg:5: line frequency \"fifty\""},
		{line(6, "-1"), "x.cfg:6: nrates \"-1\""},
		{line(7, "1000"), "x.cfg:7: sampling rate \"1000\": want samp,endsamp"},
		{line(8, "31/31/2026,10:00:00"), "x.cfg:8: start time \"31/31/2026,10:00:00\": date \"31/31/2026\" is not a calendar date"},
		{line(9, "01/02/2026,25:00:00"), "x.cfg:9: trigger time"},
		{line(10, "HEX"), "x.cfg:10: data file type \"HEX\": want ASCII, BINARY, BINARY32 or FLOAT32"},
		{line(11, "0"), "x.cfg:11: timemult \"0\""},
		{"ST,DEV,2013\n2,1A,1D\n1,VA,A,,V,0.5,0,0,-32767,32767,1,1,P\n", "x.cfg:2: channel counts \"2,1A,1D\": 2 channels, but the cfg has only 1 more lines"},
		{"ST,DEV,2013\n1,1A,0D\n1,VA,A,,V,0.5,0,0,-32767,32767,1,1,P\n", "x.cfg:4: the cfg ends before its line frequency line"},
		{"ST,DEV\n1,1A,0D\n1,VA,A,,V,0.5,0,0,-32767,32767\n50\n1\n1000,3\n01/02/2026,10:00:00.000000\n01/02/2026,10:00:00.001000\nBINARY32\n", "x.cfg:9: data file type BINARY32 needs the 2013 revision"},
	}
	for _, tt := range tests {
		_, err := ParseConfig("x.cfg", []byte(tt.cfg))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("error %v, want it to contain %q", err, tt.want)
		}
	}
	if _, err := Parse("x.cfg", []byte(goodCfg), "x.dat", []byte(goodDat)); err != nil {
		t.Fatalf("the good cfg and dat: %v", err)
	}
}

// TestDataErrors: every bad dat names the file and sample number.
func TestDataErrors(t *testing.T) {
	bin := strings.Replace(goodCfg, "ASCII", "BINARY", 1)
	tests := []struct{ cfg, dat, want string }{
		{goodCfg, "1,0,10,0\n2,1000,20\n", "x.dat: sample 2: 3 fields, want 4"},
		{goodCfg, "1,0,10,0\n2,1000,x,1\n", "x.dat: sample 2: analog channel 1 (VA): \"x\" is not a number"},
		{goodCfg, "1,0,10,0\n2,1000,20,7\n", "x.dat: sample 2: status channel 1 (S1): \"7\", want 0 or 1"},
		{goodCfg, "1,0,10,0\n2,1000,20,1\n", "x.dat: sample 3: the dat holds 2 samples, the cfg's sampling rates end at sample 3"},
		{goodCfg, "1,zero,10,0\n", "x.dat: sample 1: timestamp \"zero\""},
		{bin, string(make([]byte, 12*2+5)), "x.dat: sample 3: the dat ends 5 bytes into a sample of 12 bytes"},
		{strings.Replace(goodCfg, "1\n1000,3", "0\n0,3", 1), "1,0,10,0\n2,,20,1\n3,2000,30,0\n", "x.dat: sample 2: the timestamp is missing and the cfg has no sampling rate"},
		{strings.Replace(goodCfg, "1\n1000,3", "0\n0,3", 1), "1,5,10,0\n2,4,20,1\n3,6,30,0\n", "x.dat: sample 2: timestamp 4 is before the previous sample's 5"},
	}
	for _, tt := range tests {
		_, err := Parse("x.cfg", []byte(tt.cfg), "x.dat", []byte(tt.dat))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("error %v, want it to contain %q", err, tt.want)
		}
	}
}

// TestFileErrors: Open names what it looked for; a cff's errors name
// its lines.
func TestFileErrors(t *testing.T) {
	dir := t.TempDir()
	lone := filepath.Join(dir, "lone.cfg")
	if err := os.WriteFile(lone, []byte(goodCfg), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(lone); err == nil || !strings.Contains(err.Error(), "no lone.dat beside it") {
		t.Errorf("cfg without dat: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "lone.DAT"), []byte(goodDat), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(lone); err != nil {
		t.Errorf("cfg with an upper-case .DAT: %v", err)
	}
	if _, err := Open(filepath.Join(dir, "x.txt")); err == nil || !strings.Contains(err.Error(), "not a .cfg or .cff file") {
		t.Errorf("x.txt: %v", err)
	}
	cff := read(t, "sample_float32.cff")
	cases := []struct {
		b    []byte
		want string
	}{
		{bytes.Replace(cff, []byte("100.000000,301"), []byte("100.000000"), 1), "x.cff:8: sampling rate \"100.000000\""},
		{bytes.Replace(cff, []byte("FLOAT32: 4214"), []byte("FLOAT32: 9999"), 1), "x.cff:23: the DAT section states 9999 bytes"},
		{bytes.Replace(cff, []byte("FLOAT32: 4214"), []byte("BINARY: 4214"), 1), "x.cff:23: the DAT section is \"BINARY\", the cfg says FLOAT32"},
		{bytes.Replace(cff, []byte("FLOAT32: 4214"), []byte("FLOAT32"), 1), "x.cff:23: a binary DAT section states its byte count"},
		{bytes.Replace(cff, []byte("--- file type: CFG ---"), []byte(""), 1), "x.cff: a .cff needs"},
	}
	for _, c := range cases {
		if _, err := ParseCFF("x.cff", c.b); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want it to contain %q", err, c.want)
		}
	}
}

// TestRevision1991 reads a 1991 cfg (no revision year, 10-field analog
// and 3-field status lines, month-first two-digit-year dates, no
// timemult): the samples hold none.
func TestRevision1991(t *testing.T) {
	cfg := "OLD STATION,REL1\n2,1A,1D\n1,VA,A,BUS,kV,0.01,0,0,-2048,2047\n1,TRIP,1\n60\n1\n960,3\n02/01/96,10:00:00.000\n02/01/96,10:00:00.002\nASCII\n"
	c, err := Parse("old.cfg", []byte(cfg), "old.dat", []byte("1,0,100,1\n2,1042,-100,0\n3,2083,5,0\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Revision != "1991" || c.Station != "OLD STATION" || c.Analogs[0].PS != "P" || c.Analogs[0].ToPrimary() != 1 || c.Statuses[0].Normal != 1 {
		t.Errorf("1991 cfg read as %+v", c.Config)
	}
	if want := time.Date(1996, 2, 1, 10, 0, 0, 0, time.UTC); !c.Start.Equal(want) || !near(c.TriggerOffset(), 0.002) {
		t.Errorf("start %v trigger +%g, want %v (month first) and +0.002", c.Start, c.TriggerOffset(), want)
	}
	if !near(c.Analog[0][1], -1) || !c.Status[0][0] || c.Status[0][1] || c.SampleRate() != 960 {
		t.Errorf("values %v status %v rate %g", c.Analog[0], c.Status[0], c.SampleRate())
	}
}
