package comtrade

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse feeds arbitrary cfg and dat bytes, and arbitrary .cff
// bytes: the reader must return a capture or an error, never panic,
// and a capture's channels must all hold as many samples as its times.
func FuzzParse(f *testing.F) {
	pairs := [][2]string{{"sample_ascii.cfg", "sample_ascii.dat"}, {"sample_bin.cfg", "sample_bin.dat"},
		{"sample_iso8859-1_bin.cfg", "sample_iso8859-1_bin.dat"}, {"sample_ascii.cfg", "sample_ascii_missing.dat"}}
	for _, p := range pairs {
		cfg, err1 := os.ReadFile(filepath.Join(samples, p[0]))
		dat, err2 := os.ReadFile(filepath.Join(samples, p[1]))
		if err1 != nil || err2 != nil {
			f.Fatalf("samples: %v %v", err1, err2)
		}
		f.Add(cfg, dat, false)
	}
	for _, name := range []string{"sample_ascii.cff", "sample_float32.cff"} {
		b, err := os.ReadFile(filepath.Join(samples, name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, []byte(nil), true)
	}
	f.Add([]byte(goodCfg), []byte(goodDat), false)
	f.Fuzz(func(t *testing.T, cfg, dat []byte, cff bool) {
		var c *Capture
		var err error
		if cff {
			c, err = ParseCFF("f.cff", cfg)
		} else {
			c, err = Parse("f.cfg", cfg, "f.dat", dat)
		}
		if err != nil {
			return
		}
		for i := range c.Analog {
			if len(c.Analog[i]) != len(c.Time) {
				t.Fatalf("channel %d has %d samples, %d times", i+1, len(c.Analog[i]), len(c.Time))
			}
		}
		for i := range c.Status {
			if len(c.Status[i]) != len(c.Time) {
				t.Fatalf("status %d has %d samples, %d times", i+1, len(c.Status[i]), len(c.Time))
			}
		}
		// What was read writes and reads back.
		if len(c.Time) == 0 || len(c.Rates) == 0 {
			return
		}
		var cb, db bytes.Buffer
		if err := Write(&cb, &db, c); err != nil {
			t.Fatalf("writing what was read: %v", err)
		}
	})
}
