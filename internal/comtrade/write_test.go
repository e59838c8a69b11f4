package comtrade

import (
	"bytes"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// synthetic is a 50 Hz voltage and a current at 1 kHz, with a sag of
// 10 ms and a status channel that marks it; sample 7 of the current is
// missing.
func synthetic(rev, typ string) *Capture {
	const n, hz = 100, 1000.0
	c := &Capture{Config: Config{Station: "seam-sim", Device: "pq1", Revision: rev, DataType: typ, LineHz: 50,
		Analogs: []Analog{
			{ID: "VA", Phase: "A", Unit: "V", A: 0.01, Min: -32767, Max: 32767, Primary: 1, Secondary: 1, PS: "P"},
			{ID: "IA", Phase: "A", Unit: "A", A: 0.001, B: 0.5, Min: -32767, Max: 32767, Primary: 400, Secondary: 5, PS: "S"},
		},
		Statuses: make([]Status, 18),
		Rates:    []Rate{{Hz: hz, EndSample: n}},
		Start:    time.Date(2026, 3, 4, 10, 0, 1, 250000000, time.UTC),
		Trigger:  time.Date(2026, 3, 4, 10, 0, 1, 270000000, time.UTC),
		TimeMult: 1, TimeBase: time.Microsecond}}
	if rev == "1991" {
		c.Analogs[1].Primary, c.Analogs[1].Secondary, c.Analogs[1].PS = 1, 1, "P"
	}
	for i := range c.Statuses {
		c.Statuses[i] = Status{Index: i + 1, ID: fmt.Sprintf("S%d", i+1)}
	}
	c.Analog = [][]float64{make([]float64, n), make([]float64, n)}
	c.Status = make([][]bool, 18)
	for i := range c.Status {
		c.Status[i] = make([]bool, n)
	}
	for k := 0; k < n; k++ {
		t := float64(k) / hz
		amp := 325.0
		sag := k >= 20 && k < 30
		if sag {
			amp = 150
		}
		c.Time = append(c.Time, t)
		c.Analog[0][k] = math.Round(amp*math.Sin(2*math.Pi*50*t)*100) / 100
		c.Analog[1][k] = math.Round(20*math.Sin(2*math.Pi*50*t)*1000)/1000 + 0.5
		c.Status[0][k] = sag
		c.Status[17][k] = k%2 == 0
	}
	c.Analog[1][6] = math.NaN()
	return c
}

// TestRoundTrip writes every revision × data type and reads it back:
// values, missing markers, status bits past the first word, times. The
// 2013 BINARY32 case is the one the samples lack.
func TestRoundTrip(t *testing.T) {
	cases := []struct{ rev, typ string }{
		{"1991", ASCII}, {"1991", Binary}, {"1999", ASCII}, {"1999", Binary},
		{"2013", ASCII}, {"2013", Binary}, {"2013", Binary32}, {"2013", Float32},
	}
	for _, tc := range cases {
		t.Run(tc.rev+"/"+tc.typ, func(t *testing.T) {
			want := synthetic(tc.rev, tc.typ)
			if tc.typ == Binary32 {
				want.Analogs[0].A = 1e-5 // int32 keeps more digits
			}
			var cfg, dat bytes.Buffer
			if err := Write(&cfg, &dat, want); err != nil {
				t.Fatal(err)
			}
			got, err := Parse("x.cfg", cfg.Bytes(), "x.dat", dat.Bytes())
			if err != nil {
				t.Fatalf("%v\n%s", err, cfg.String())
			}
			equalCaptures(t, got, want, 1e-6)
		})
	}
}

func equalCaptures(t *testing.T, got, want *Capture, tol float64) {
	t.Helper()
	if got.Revision != want.Revision || got.DataType != want.DataType || !got.Start.Equal(want.Start) || !got.Trigger.Equal(want.Trigger) {
		t.Fatalf("header %s %s %v %v, want %s %s %v %v", got.Revision, got.DataType, got.Start, got.Trigger, want.Revision, want.DataType, want.Start, want.Trigger)
	}
	if len(got.Time) != len(want.Time) {
		t.Fatalf("%d samples, want %d", len(got.Time), len(want.Time))
	}
	for k := range want.Time {
		if math.Abs(got.Time[k]-want.Time[k]) > 1e-9 {
			t.Fatalf("sample %d at %gs, want %gs", k+1, got.Time[k], want.Time[k])
		}
		for i := range want.Analog {
			g, w := got.Analog[i][k], want.Analog[i][k]
			if math.IsNaN(w) != math.IsNaN(g) || (!math.IsNaN(w) && math.Abs(g-w) > tol) {
				t.Fatalf("channel %d sample %d = %g, want %g", i+1, k+1, g, w)
			}
		}
		for i := range want.Status {
			if got.Status[i][k] != want.Status[i][k] {
				t.Fatalf("status %d sample %d = %v, want %v", i+1, k+1, got.Status[i][k], want.Status[i][k])
			}
		}
	}
	for i := range want.Analogs {
		if got.Analogs[i].ToPrimary() != want.Analogs[i].ToPrimary() {
			t.Errorf("channel %d primary factor %g, want %g", i+1, got.Analogs[i].ToPrimary(), want.Analogs[i].ToPrimary())
		}
	}
}

// TestTimestamps: nrates 0 takes each sample's time from its timestamp
// × timemult, unevenly spaced as recorded.
func TestTimestamps(t *testing.T) {
	want := synthetic("2013", Binary)
	want.Rates = nil
	want.TimeMult = 2
	for k := range want.Time {
		want.Time[k] = float64(k*k) * 2e-6 // 0, 2 µs, 8 µs, ...: stamps k² × 2 µs
	}
	var cfg, dat bytes.Buffer
	if err := Write(&cfg, &dat, want); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(cfg.Bytes(), []byte("\r\n0\r\n0,100\r\n")) {
		t.Fatalf("cfg does not state nrates 0:\n%s", cfg.String())
	}
	got, err := Parse("x.cfg", cfg.Bytes(), "x.dat", dat.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	equalCaptures(t, got, want, 1e-6)
	if len(got.Rates) != 0 || got.TimeMult != 2 {
		t.Errorf("rates %v timemult %g, want none and 2", got.Rates, got.TimeMult)
	}
}

// TestMultiRate: two sampling-rate sections, 1 kHz then 100 Hz.
func TestMultiRate(t *testing.T) {
	c := synthetic("2013", ASCII)
	c.Rates = []Rate{{Hz: 1000, EndSample: 50}, {Hz: 100, EndSample: 100}}
	var cfg, dat bytes.Buffer
	if err := Write(&cfg, &dat, c); err != nil {
		t.Fatal(err)
	}
	got, err := Parse("x.cfg", cfg.Bytes(), "x.dat", dat.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if !near(got.Time[49], 0.049) || !near(got.Time[50], 0.050) || !near(got.Time[51], 0.060) || !near(got.Time[99], 0.540) {
		t.Errorf("times %g %g %g %g, want 0.049 0.050 0.060 0.540", got.Time[49], got.Time[50], got.Time[51], got.Time[99])
	}
	if got.SampleRate() != 1000 {
		t.Errorf("rate %g, want the highest, 1000", got.SampleRate())
	}
}

// TestGoldenConfig pins the cfg the writer produces (the simulator's
// captures): go test ./internal/comtrade -run TestGoldenConfig -update.
func TestGoldenConfig(t *testing.T) {
	for _, rev := range []string{"1991", "1999", "2013"} {
		var cfg, dat bytes.Buffer
		if err := Write(&cfg, &dat, synthetic(rev, Binary)); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join("testdata", "synthetic-"+rev+".cfg")
		if *update {
			if err := os.WriteFile(path, cfg.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(cfg.Bytes(), want) {
			t.Errorf("%s differs (run with -update and check the diff):\n%s", path, cfg.String())
		}
	}
}
