package comtrade

import (
	"bytes"
	"fmt"
	"math"
	"testing"
	"time"
)

// capture10s is the figure: 10 s at 10 kHz × 8 channels.
func capture10s(typ string) *Capture {
	const n, hz, chans = 100_000, 10_000.0, 8
	c := &Capture{Config: Config{Station: "bench", Device: "pq", Revision: "2013", DataType: typ, LineHz: 50,
		Rates: []Rate{{Hz: hz, EndSample: n}}, Start: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), TimeMult: 1, TimeBase: time.Microsecond,
		Statuses: []Status{{Index: 1, ID: "TRIG"}}}}
	c.Time = make([]float64, n)
	c.Status = [][]bool{make([]bool, n)}
	for i := 0; i < chans; i++ {
		c.Analogs = append(c.Analogs, Analog{Index: i + 1, ID: fmt.Sprintf("CH%d", i+1), Unit: "V", A: 0.02, Min: -32767, Max: 32767, Primary: 1, Secondary: 1, PS: "P"})
		c.Analog = append(c.Analog, make([]float64, n))
	}
	for k := 0; k < n; k++ {
		c.Time[k] = float64(k) / hz
		for i := range c.Analog {
			c.Analog[i][k] = math.Round(325*math.Sin(2*math.Pi*50*c.Time[k]+float64(i))*50) / 50
		}
	}
	return c
}

// BenchmarkIngest10s parses a 10 s, 10 kHz, 8-channel record (goal: under 1 s).
func BenchmarkIngest10s(b *testing.B) {
	for _, typ := range []string{Binary, Binary32, Float32, ASCII} {
		var cfg, dat bytes.Buffer
		if err := Write(&cfg, &dat, capture10s(typ)); err != nil {
			b.Fatal(err)
		}
		b.Run(typ, func(b *testing.B) {
			b.SetBytes(int64(dat.Len()))
			for b.Loop() {
				if _, err := Parse("b.cfg", cfg.Bytes(), "b.dat", dat.Bytes()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
