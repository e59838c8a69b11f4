package gridsignal

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// BenchmarkMeasures runs the four measures on a site-power record of
// 120 s and of 600 s at 50 samples/s: ramp per 60 s, swing over 10 s,
// the largest line and the band RMS (10 s segments) in 0.1..20 Hz.
func BenchmarkMeasures(b *testing.B) {
	for _, d := range []float64{120, 600} {
		r := rand.New(rand.NewPCG(3, 5))
		s := wave(50, d, func(t float64) float64 {
			return 8e7 + 1e4*t + 2e6*math.Sin(2*math.Pi*0.25*t) + 1e5*r.NormFloat64()
		})
		measures := []struct {
			name string
			f    func() error
		}{
			{"Ramp", func() error { _, _, err := Ramp(s, 60); return err }},
			{"Swing", func() error { _, err := Swing(s, 10); return err }},
			{"LargestLine", func() error { _, err := LargestLine(s, 0.1, 20); return err }},
			{"BandRMS", func() error { _, err := BandRMS(s, 0.1, 20, 10); return err }},
		}
		name := fmt.Sprintf("%gs@50Hz", d)
		b.Run(name+"/all", func(b *testing.B) {
			for b.Loop() {
				for _, m := range measures {
					if err := m.f(); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
		for _, m := range measures {
			b.Run(name+"/"+m.name, func(b *testing.B) {
				for b.Loop() {
					if err := m.f(); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
