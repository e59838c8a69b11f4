package gridsignal

// Ramp returns the largest rise (up) and the largest fall (down, a
// positive number) between two samples at most window seconds apart:
// up is max over t1 < t2 <= t1+window of v(t2)-v(t1), down the same
// with v(t1)-v(t2). The package doc gives the exact rules (the window in
// samples, ties, a record that never rises). O(n).
func Ramp(s Series, window float64) (up, down Change, err error) {
	up, down, _, err = extremes(s, window)
	return up, down, err
}

// Swing returns the largest max - min within any window of window
// seconds, From and To the times of the two extremes, the earlier
// first. O(n).
func Swing(s Series, window float64) (Change, error) {
	_, _, swing, err := extremes(s, window)
	return swing, err
}

// extremes computes the largest rise, fall and swing in one pass. For
// each sample j it keeps, in two monotonic deques, the minimum and the
// maximum of the W samples before it (the latest sample of equal
// minima or maxima), so each sample enters and leaves each deque once:
// the min deque's values rise from front to back, the max deque's fall.
func extremes(s Series, window float64) (up, down, swing Change, err error) {
	if err = s.check(); err != nil {
		return
	}
	w, err := s.lag(window)
	if err != nil {
		return
	}
	v := s.Values
	var mins, maxs deque
	mins.buf = make([]int, len(v))
	maxs.buf = make([]int, len(v))
	var bu, bd, bs pair // best rise, fall, swing
	for j := 1; j < len(v); j++ {
		x := v[j-1]
		for mins.tail > mins.head && v[mins.buf[mins.tail-1]] >= x {
			mins.tail--
		}
		mins.push(j - 1)
		for maxs.tail > maxs.head && v[maxs.buf[maxs.tail-1]] <= x {
			maxs.tail--
		}
		maxs.push(j - 1)
		mins.expire(j - w)
		maxs.expire(j - w)
		lo, hi := mins.front(), maxs.front()
		rise := pair{v[j] - v[lo], lo, j}
		fall := pair{v[hi] - v[j], hi, j}
		if rise.value > bu.value {
			bu = rise
		}
		if fall.value > bd.value {
			bd = fall
		}
		if rise.value > bs.value {
			bs = rise
		}
		if fall.value > bs.value {
			bs = fall
		}
	}
	return bu.change(s), bd.change(s), bs.change(s), nil
}

// pair is a change between samples i and j.
type pair struct {
	value float64
	i, j  int
}

func (p pair) change(s Series) Change {
	return Change{Value: p.value, From: s.at(p.i), To: s.at(p.j)}
}

// deque is a monotonic deque of sample indices in buf[head:tail]; each
// index is pushed once, so buf needs one slot per sample.
type deque struct {
	buf        []int
	head, tail int
}

// push appends i (the caller has dropped from the back the indices i
// makes useless).
func (d *deque) push(i int) {
	d.buf[d.tail] = i
	d.tail++
}

// expire drops indices before first from the front.
func (d *deque) expire(first int) {
	for d.buf[d.head] < first {
		d.head++
	}
}

func (d *deque) front() int { return d.buf[d.head] }
