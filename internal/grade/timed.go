package grade

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"time"
)

// settle grades settles_within: from time zero + within_s to time zero +
// for_s every good sample is inside [min, max]. It measures when the
// channel was last seen outside the band, counted from time zero.
type settle struct {
	g        *Grader
	lo, hi   float64
	all      window // [t0, t0+for_s]: the measured window
	strict   window // [t0+within_s, t0+for_s]: no sample outside
	gaps     *gaps
	n        int
	lastOut  *Sample
	firstBad *Sample // the first out-of-band sample in strict
	bad      int
}

func bounds(g *Grader) (lo, hi float64, err error) {
	lo, hi, ok := g.c.Accepted()
	if !ok {
		err = fmt.Errorf("%s check %s needs min or max", g.c.Kind, g.c.ID)
	}
	return lo, hi, err
}

func newSettle(g *Grader) (kind, error) {
	lo, hi, err := bounds(g)
	if err != nil {
		return nil, err
	}
	t0, err := g.timeZero()
	if err != nil {
		return nil, err
	}
	wins, err := g.windows() // [t0+within_s, t0+for_s]: no sample outside
	if err != nil {
		return nil, err
	}
	strict := wins[0]
	return &settle{g: g, lo: lo, hi: hi, all: window{From: t0, To: strict.To}, strict: strict, gaps: newGaps(wins, g.maxGap, g.tl.Start)}, nil
}

func (s *settle) out(v float64) bool { return v < s.lo || v > s.hi }

func (s *settle) add(x Sample) {
	if !x.Good || !s.all.Has(x.Time) {
		return
	}
	s.n++
	s.gaps.good(x.Time)
	if !s.out(x.Value) {
		return
	}
	s.lastOut = &x
	if s.strict.Has(x.Time) {
		s.bad++
		if s.firstBad == nil {
			s.firstBad = &x
		}
	}
}

func (s *settle) verdict(v *Verdict) {
	s.gaps.finish()
	t0, unit := s.all.From, s.g.c.Unit
	v.Samples, v.Unit, v.Limit = s.n, "s", ptr(s.g.c.WithinS)
	measured := 0.0
	if s.lastOut != nil {
		measured = s.lastOut.Time.Sub(t0).Seconds()
		v.At = ptr(s.lastOut.Time)
	}
	v.Measured, v.Margin = ptr(measured), ptr(s.g.c.WithinS-measured)
	switch {
	case s.bad > 0:
		v.Outcome = Fail
		v.Detail = fmt.Sprintf("still outside %s %.3g s after the event: %s at %s (%d samples outside after the %g s allowed); last outside at %.3g s",
			band(s.lo, s.hi, unit), s.firstBad.Time.Sub(t0).Seconds(), num(s.firstBad.Value, unit), rel(s.firstBad.Time, s.g.tl.Start),
			s.bad, s.g.c.WithinS, measured)
	case s.n == 0:
		v.Outcome, v.Detail = Error, "no good sample after the event"
	case s.gaps.problem() != "":
		v.Outcome, v.Detail, v.At = Error, s.gaps.problem(), s.gaps.at()
	case s.lastOut == nil:
		v.Outcome = Pass
		v.Detail = fmt.Sprintf("inside %s throughout the %g s after the event (%d samples)", band(s.lo, s.hi, unit), s.g.c.ForS, s.n)
	default:
		v.Outcome = Pass
		v.Detail = fmt.Sprintf("back inside %s %.3g s after the event (allowed %g s) and stayed until %g s (%d samples)",
			band(s.lo, s.hi, unit), measured, s.g.c.WithinS, s.g.c.ForS, s.n)
	}
}

// recovery grades recovery_time: after every load edge of the check's
// steps, the channel is back inside [min, max] within within_s and stays
// there until the next edge of the case (or the case's end). It
// measures, per edge, when the channel was last seen outside the band,
// and keeps the longest.
type recovery struct {
	g      *Grader
	lo, hi float64
	edges  []edge
	gaps   *gaps
	i      int // the edge the next sample may belong to
	n      int
}

type edge struct {
	at, horizon time.Time
	lastOut     *Sample
	firstBad    *Sample // outside after within_s
	bad         int
}

func newRecovery(g *Grader) (kind, error) {
	lo, hi, err := bounds(g)
	if err != nil {
		return nil, err
	}
	var mine, all []time.Time
	for _, id := range g.c.Steps {
		sp := g.tl.Step(id)
		if sp == nil {
			return nil, fmt.Errorf("step %s did not run", id)
		}
		mine = append(mine, sp.Edges...)
	}
	for _, sp := range g.tl.Steps {
		all = append(all, sp.Edges...)
	}
	slices.SortFunc(mine, time.Time.Compare)
	slices.SortFunc(all, time.Time.Compare)
	r := &recovery{g: g, lo: lo, hi: hi}
	var strict []window
	within := seconds(g.c.WithinS)
	for _, e := range mine {
		h := g.tl.End
		if j := sort.Search(len(all), func(j int) bool { return all[j].After(e) }); j < len(all) {
			h = all[j]
		}
		r.edges = append(r.edges, edge{at: e, horizon: h})
		if e.Add(within).Before(h) {
			strict = append(strict, window{From: e.Add(within), To: h})
		}
	}
	r.gaps = newGaps(strict, g.maxGap, g.tl.Start)
	return r, nil
}

func (r *recovery) add(x Sample) {
	if !x.Good {
		return
	}
	for r.i < len(r.edges) && !x.Time.Before(r.edges[r.i].horizon) {
		r.i++
	}
	if r.i == len(r.edges) || x.Time.Before(r.edges[r.i].at) {
		return
	}
	e := &r.edges[r.i]
	r.n++
	r.gaps.good(x.Time)
	if x.Value >= r.lo && x.Value <= r.hi {
		return
	}
	e.lastOut = &x
	if x.Time.Sub(e.at) >= seconds(r.g.c.WithinS) {
		e.bad++
		if e.firstBad == nil {
			e.firstBad = &x
		}
	}
}

func (r *recovery) verdict(v *Verdict) {
	r.gaps.finish()
	v.Samples, v.Unit, v.Limit = r.n, "s", ptr(r.g.c.WithinS)
	if len(r.edges) == 0 {
		v.Outcome, v.Detail = Error, "no load edge was commanded in the graded steps"
		return
	}
	unit, start := r.g.c.Unit, r.g.tl.Start
	longest, worst := 0.0, -1
	var firstBad *edge
	for i := range r.edges {
		e := &r.edges[i]
		if e.lastOut != nil {
			if d := e.lastOut.Time.Sub(e.at).Seconds(); d > longest || worst < 0 {
				longest, worst = d, i
			}
		}
		if e.bad > 0 && firstBad == nil {
			firstBad = e
		}
	}
	v.Measured, v.Margin = ptr(longest), ptr(r.g.c.WithinS-longest)
	if worst >= 0 {
		v.At = ptr(r.edges[worst].lastOut.Time)
	}
	switch {
	case firstBad != nil:
		v.Outcome = Fail
		v.Detail = fmt.Sprintf("after the edge at %s, still outside %s %.3g s later: %s at %s (allowed %g s)",
			rel(firstBad.at, start), band(r.lo, r.hi, unit), firstBad.firstBad.Time.Sub(firstBad.at).Seconds(),
			num(firstBad.firstBad.Value, unit), rel(firstBad.firstBad.Time, start), r.g.c.WithinS)
	case r.n == 0:
		v.Outcome, v.Detail = Error, "no good sample after any load edge"
	case r.gaps.problem() != "":
		v.Outcome, v.Detail, v.At = Error, r.gaps.problem(), r.gaps.at()
	default:
		v.Outcome = Pass
		v.Detail = fmt.Sprintf("back inside %s within %.3g s of each of %d load edges (allowed %g s)",
			band(r.lo, r.hi, unit), longest, len(r.edges), r.g.c.WithinS)
	}
}

// alarm grades alarm_within: the alarm channel (1 raised, 0 not) is
// raised no later than within_s after time zero. A raise during the
// step that causes it counts as 0 s. FAIL needs proof: a good sample not
// raised at or after the limit; a gap that hides the limit is an ERROR.
type alarm struct {
	g           *Grader
	stepStart   time.Time // the start of step from
	t0, limit   time.Time
	before      *Sample // the last good sample before stepStart
	raised      *Sample // the first raised sample at or after stepStart
	lateQuiet   *Sample // a good sample not raised at or after limit, before the raise
	n           int
	lastQuietAt time.Time
}

func newAlarm(g *Grader) (kind, error) {
	sp := g.tl.Step(g.c.From)
	if sp == nil {
		return nil, fmt.Errorf("step %s, its time zero, did not run", g.c.From)
	}
	return &alarm{g: g, stepStart: sp.Start, t0: sp.End, limit: sp.End.Add(seconds(g.c.WithinS))}, nil
}

func raised(v float64) bool { return v >= 0.5 }

func (a *alarm) add(x Sample) {
	if !x.Good {
		return
	}
	if x.Time.Before(a.stepStart) {
		a.before = &x
		return
	}
	if a.raised != nil {
		return
	}
	a.n++
	if raised(x.Value) {
		a.raised = &x
		return
	}
	a.lastQuietAt = x.Time
	if !x.Time.Before(a.limit) && a.lateQuiet == nil {
		a.lateQuiet = &x
	}
}

func (a *alarm) verdict(v *Verdict) {
	v.Samples, v.Unit, v.Limit = a.n, "s", ptr(a.g.c.WithinS)
	start := a.g.tl.Start
	if a.before != nil && raised(a.before.Value) {
		v.Outcome = Error
		v.Detail = fmt.Sprintf("the alarm was already raised at %s, before the event: its delay cannot be measured", rel(a.before.Time, start))
		return
	}
	if a.raised != nil {
		d := math.Max(0, a.raised.Time.Sub(a.t0).Seconds())
		v.Measured, v.Margin, v.At = ptr(d), ptr(a.g.c.WithinS-d), ptr(a.raised.Time)
	}
	switch {
	case a.raised != nil && !a.raised.Time.After(a.limit):
		v.Outcome = Pass
		v.Detail = fmt.Sprintf("raised %.3g s after the event (allowed %g s)", *v.Measured, a.g.c.WithinS)
	case a.lateQuiet != nil && a.raised != nil:
		v.Outcome = Fail
		v.Detail = fmt.Sprintf("raised %.3g s after the event, later than the %g s allowed (not raised at %s)",
			*v.Measured, a.g.c.WithinS, rel(a.lateQuiet.Time, start))
	case a.lateQuiet != nil:
		v.Outcome = Fail
		v.Detail = fmt.Sprintf("not raised within %g s of the event: still quiet at %s, %.3g s after it",
			a.g.c.WithinS, rel(a.lastQuietAt, start), a.lastQuietAt.Sub(a.t0).Seconds())
	case a.n == 0:
		v.Outcome, v.Detail = Error, "no good sample of the alarm after the event"
	default:
		quiet := a.lastQuietAt
		if quiet.IsZero() {
			quiet = a.t0
		}
		v.Outcome = Error
		v.Detail = fmt.Sprintf("no good sample between %s and the limit at %s: whether the alarm was raised in time is unknown",
			rel(quiet, start), rel(a.limit, start))
	}
}
