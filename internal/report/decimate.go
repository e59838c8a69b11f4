package report

import (
	"cmp"
	"math"
	"slices"
	"time"
)

// Point is one plotted sample: seconds since the plot's origin, value in
// the channel's canonical unit.
type Point struct {
	T, V float64
}

// Decimator thins a stream of samples for plotting without hiding an
// excursion: the window [from, to] is cut into equal buckets, and each
// bucket keeps its first, lowest, highest and last sample, in time order
// (the "M4" reduction). A line through the kept points reaches every
// extreme the raw samples reach, so a spike one sample wide still shows.
// Memory is fixed by the bucket count, whatever the run's length.
type Decimator struct {
	from, to time.Time
	width    float64 // seconds per bucket
	buckets  []bucket
	n        int // samples added
}

type bucket struct {
	n                   int
	first, lo, hi, last Point
}

// NewDecimator keeps at most 4×buckets points of the samples between
// from and to (inclusive).
func NewDecimator(from, to time.Time, buckets int) *Decimator {
	buckets = max(buckets, 1)
	span := to.Sub(from).Seconds()
	if span <= 0 {
		span = 1
	}
	return &Decimator{from: from, to: to, width: span / float64(buckets), buckets: make([]bucket, buckets)}
}

// Add offers a sample; samples outside the window are ignored. Samples
// may come in any order, but the first and last of a bucket are the
// first and last offered.
func (d *Decimator) Add(t time.Time, v float64) {
	if t.Before(d.from) || t.After(d.to) || math.IsNaN(v) {
		return
	}
	p := Point{T: t.Sub(d.from).Seconds(), V: v}
	i := min(int(p.T/d.width), len(d.buckets)-1)
	b := &d.buckets[i]
	if b.n == 0 {
		b.first, b.lo, b.hi = p, p, p
	}
	if v < b.lo.V {
		b.lo = p
	}
	if v > b.hi.V {
		b.hi = p
	}
	b.last = p
	b.n++
	d.n++
}

// Len is how many samples were added.
func (d *Decimator) Len() int { return d.n }

// Points returns the kept points in time order, each once.
func (d *Decimator) Points() []Point {
	var out []Point
	for _, b := range d.buckets {
		if b.n == 0 {
			continue
		}
		kept := []Point{b.first, b.lo, b.hi, b.last}
		slices.SortStableFunc(kept, func(a, b Point) int { return cmp.Compare(a.T, b.T) })
		for _, p := range kept {
			if len(out) == 0 || out[len(out)-1] != p {
				out = append(out, p)
			}
		}
	}
	return out
}
