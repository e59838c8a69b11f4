package comtrade

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const samples = "../../../shared/samples/comtrade"

func sample(name string) string { return filepath.Join(samples, name) }

func read(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(sample(name))
	if err != nil {
		t.Fatalf("the COMTRADE samples are read in place from %s: %v", samples, err)
	}
	return b
}

// pair parses cfg with dat, both from the samples.
func pair(t *testing.T, cfg, dat string) *Capture {
	t.Helper()
	c, err := Parse(cfg, read(t, cfg), dat, read(t, dat))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// TestSamples reads every sample record in place and checks what its
// files say, value by value where the bytes were decoded by hand.
func TestSamples(t *testing.T) {
	const a, b = 0.1138916015625, 0.05694580078125
	start := time.Date(2011, 1, 12, 5, 55, 30, 75011000, time.UTC)
	tests := []struct {
		name     string
		open     func(t *testing.T) *Capture
		station  string
		rev, typ string
		na, nd   int
		n        int
		hz       float64
		start    time.Time
		trigger  float64 // s after start
		first    []float64
		missing  [][2]int // {analog, sample} that must be NaN
	}{
		{"sample_ascii", func(t *testing.T) *Capture { return pair(t, "sample_ascii.cfg", "sample_ascii.dat") },
			"SMARTSTATION", "2013", ASCII, 4, 4, 40, 1200, start, 0.00325, []float64{a*-83 + b, a*68 + b, a*7 + b, a*-8 + b}, nil},
		{"sample_ascii_missing", func(t *testing.T) *Capture { return pair(t, "sample_ascii.cfg", "sample_ascii_missing.dat") },
			"SMARTSTATION", "2013", ASCII, 4, 4, 40, 1200, start, 0.00325, []float64{a*-83 + b, a*68 + b, a*7 + b, a*-8 + b},
			[][2]int{{0, 1}, {1, 2}, {2, 3}, {3, 4}}},
		{"sample_ascii_utf-8", func(t *testing.T) *Capture { return pair(t, "sample_ascii_utf-8.cfg", "sample_ascii.dat") },
			"SMARTSTATION testing text encoding: hgvcj터파크387", "2013", ASCII, 4, 4, 40, 1200, start, 0.00325, []float64{a*-83 + b}, nil},
		{"sample_sub_char", func(t *testing.T) *Capture { return pair(t, "sample_sub_char.cfg", "sample_ascii.dat") },
			"SMARTSTATION", "2013", ASCII, 4, 4, 40, 1200, start, 0.00325, []float64{a*-83 + b}, nil},
		{"sample_iso8859-1", func(t *testing.T) *Capture { return pair(t, "sample_iso8859-1.cfg", "sample_iso8859-1.dat") },
			"Estação de Medição", "2013", ASCII, 4, 4, 40, 1200, start, 0.00325, []float64{a*-83 + b}, nil},
		{"sample_iso8859-1_bin", func(t *testing.T) *Capture { return pair(t, "sample_iso8859-1_bin.cfg", "sample_iso8859-1_bin.dat") },
			"Estação de Medição", "2013", Binary, 4, 4, 40, 1200, time.Date(2011, 1, 12, 5, 55, 30, 750110000, time.UTC), 0.0325, nil, nil},
		{"sample_bin", func(t *testing.T) *Capture { return pair(t, "sample_bin.cfg", "sample_bin.dat") },
			"station", "1999", Binary, 4, 16, 5, 15360, time.Date(2017, 7, 1, 15, 35, 41, 958268000, time.UTC), 0.000065,
			[]float64{0.000361849 * i16(0x9e6d), 0.000365758 * i16(0xf0bf), 0.000371569 * i16(0x6c4e), 0.000016493 * i16(0x3019)}, nil},
		{"sample_bin_missing", func(t *testing.T) *Capture { return pair(t, "sample_bin.cfg", "sample_bin_missing.dat") },
			"station", "1999", Binary, 4, 16, 5, 15360, time.Date(2017, 7, 1, 15, 35, 41, 958268000, time.UTC), 0.000065, nil,
			[][2]int{{0, 0}, {1, 1}, {2, 2}, {3, 3}}},
		{"sample_ascii.cff", func(t *testing.T) *Capture { return open(t, "sample_ascii.cff") },
			"SMARTSTATION", "2013", ASCII, 4, 4, 40, 1200, start, 0.00325, []float64{a*-83 + b, a*68 + b, a*7 + b, a*-8 + b}, nil},
		{"sample_float32.cff", func(t *testing.T) *Capture { return open(t, "sample_float32.cff") },
			"EXAMPLE", "2013", Float32, 1, 1, 301, 100, time.Date(2021, 2, 17, 17, 37, 12, 422969065, time.UTC), 1.5, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := tt.open(t)
			if c.Station != tt.station || c.Revision != tt.rev || c.DataType != tt.typ {
				t.Errorf("station %q rev %s type %s, want %q %s %s", c.Station, c.Revision, c.DataType, tt.station, tt.rev, tt.typ)
			}
			if len(c.Analogs) != tt.na || len(c.Statuses) != tt.nd || len(c.Time) != tt.n || len(c.Analog[0]) != tt.n {
				t.Errorf("%d analog %d status %d samples, want %d %d %d", len(c.Analogs), len(c.Statuses), len(c.Time), tt.na, tt.nd, tt.n)
			}
			if c.SampleRate() != tt.hz || !c.Start.Equal(tt.start) || !near(c.TriggerOffset(), tt.trigger) {
				t.Errorf("rate %g start %v trigger +%gs, want %g %v +%gs", c.SampleRate(), c.Start, c.TriggerOffset(), tt.hz, tt.start, tt.trigger)
			}
			if !near(c.Time[tt.n-1], float64(tt.n-1)/tt.hz) {
				t.Errorf("last sample at %gs, want %gs", c.Time[tt.n-1], float64(tt.n-1)/tt.hz)
			}
			for i, v := range tt.first {
				if !near(c.Analog[i][0], v) {
					t.Errorf("channel %d sample 1 = %g, want %g", i+1, c.Analog[i][0], v)
				}
			}
			for _, m := range tt.missing {
				if !math.IsNaN(c.Analog[m[0]][m[1]]) {
					t.Errorf("channel %d sample %d = %g, want missing (NaN)", m[0]+1, m[1]+1, c.Analog[m[0]][m[1]])
				}
			}
			for i, ch := range c.Analogs {
				if ch.ID != strings.TrimSpace(ch.ID) || ch.Unit != strings.TrimSpace(ch.Unit) {
					t.Errorf("channel %d id %q unit %q not trimmed", i+1, ch.ID, ch.Unit)
				}
			}
		})
	}
}

// i16 reads a little-endian int16 written as its hex word.
func i16(w uint16) float64 { return float64(int16(w)) }

func open(t *testing.T, name string) *Capture {
	t.Helper()
	c, err := Open(sample(name))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestSampleDetails checks what the table cannot: status channels,
// units, the PS flag and ratios, a float32 value, the cff matching its
// cfg+dat twin.
func TestSampleDetails(t *testing.T) {
	c := pair(t, "sample_ascii.cfg", "sample_ascii.dat")
	// 51N (status 4) turns on at sample 11, 51A at 14 (sample_ascii.dat).
	if c.Status[3][9] || !c.Status[3][10] || c.Status[0][12] || !c.Status[0][13] {
		t.Errorf("status 51N %v..%v, 51A %v..%v: want off then on at samples 11 and 14", c.Status[3][9], c.Status[3][10], c.Status[0][12], c.Status[0][13])
	}
	ia := c.Analogs[0]
	if ia.ID != "IA" || ia.Unit != "A" || ia.PS != "S" || ia.Primary != 933 || ia.Secondary != 1 || ia.ToPrimary() != 933 {
		t.Errorf("IA = %+v, want id IA, unit A, secondary values with ratio 933:1", ia)
	}
	if c.Channel(" ia ") != 0 || c.Channel("3I0") != 3 || c.Channel("VA") != -1 {
		t.Errorf("Channel lookup by id is wrong")
	}
	cff := open(t, "sample_ascii.cff")
	for i := range c.Analog {
		for k := range c.Analog[i] {
			if c.Analog[i][k] != cff.Analog[i][k] {
				t.Fatalf("cff channel %d sample %d = %g, cfg+dat %g", i+1, k+1, cff.Analog[i][k], c.Analog[i][k])
			}
		}
	}
	f := open(t, "sample_float32.cff")
	if f.TimeBase != time.Nanosecond || f.Analogs[0].ID != "test/out1" || f.Statuses[0].ID != "test/bool1" {
		t.Errorf("float32 cff: time base %v, channels %q %q", f.TimeBase, f.Analogs[0].ID, f.Statuses[0].ID)
	}
	if v := f.Analog[0][0]; !near(v, float64(math.Float32frombits(0x4033d203))) {
		t.Errorf("float32 sample 1 = %v, want the bytes 03 d2 33 40 as a float32", v)
	}
	bin := pair(t, "sample_bin.cfg", "sample_bin.dat")
	if bin.Analogs[0].PS != "P" || bin.Analogs[0].ToPrimary() != 1 || bin.Analogs[0].Unit != "kV" {
		t.Errorf("sample_bin VA = %+v, want primary kV", bin.Analogs[0])
	}
}
