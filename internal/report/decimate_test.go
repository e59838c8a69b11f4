package report

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func at(s float64) time.Time { return t0.Add(time.Duration(math.Round(s * 1e9))) }

func TestDecimatorKeepsEveryExcursion(t *testing.T) {
	// an hour at 10 Hz with two one-sample spikes, one up and one down
	d := NewDecimator(t0, at(3600), 400)
	for i := 0; i <= 36000; i++ {
		v := 415 + math.Sin(float64(i)/50)
		switch i {
		case 12345:
			v = 470
		case 30001:
			v = 300
		}
		d.Add(at(float64(i)/10), v)
	}
	pts := d.Points()
	assert.Equal(t, 36001, d.Len())
	assert.LessOrEqual(t, len(pts), 4*400)
	lo, hi := pts[0], pts[0]
	for i, p := range pts {
		if i > 0 {
			require.Greater(t, p.T, pts[i-1].T, "points out of time order at %d", i)
		}
		if p.V < lo.V {
			lo = p
		}
		if p.V > hi.V {
			hi = p
		}
	}
	assert.Equal(t, Point{T: 1234.5, V: 470}, hi)
	assert.Equal(t, Point{T: 3000.1, V: 300}, lo)
	assert.Equal(t, 0.0, pts[0].T)
	assert.Equal(t, 3600.0, pts[len(pts)-1].T)
}

func TestDecimatorShortSeriesKeptWhole(t *testing.T) {
	d := NewDecimator(t0, at(10), 400)
	for i := 0; i <= 10; i++ {
		d.Add(at(float64(i)), float64(i*i))
	}
	d.Add(at(-1), 99) // before the window
	d.Add(at(11), 99) // after it
	d.Add(at(5), math.NaN())
	pts := d.Points()
	require.Len(t, pts, 11)
	for i, p := range pts {
		assert.Equal(t, Point{T: float64(i), V: float64(i * i)}, p)
	}
}

func TestDecimatorEmptyAndDegenerate(t *testing.T) {
	assert.Empty(t, NewDecimator(t0, at(10), 10).Points())
	d := NewDecimator(t0, t0, 0) // zero-length window, zero buckets
	d.Add(t0, 1)
	assert.Equal(t, []Point{{0, 1}}, d.Points())
}
