package compile

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/diag"
	"github.com/seamdc/seam/internal/plan"
	"github.com/seamdc/seam/internal/units"
)

// sides lists the sides a level grades: FAT the supplier's own, SAT and
// IST both.
func sides(level string) []string {
	if level == plan.FAT {
		return []string{plan.Guarantee}
	}
	return []string{plan.Guarantee, plan.Require}
}

func other(side string) string {
	if side == plan.Guarantee {
		return plan.Require
	}
	return plan.Guarantee
}

func posText(p diag.Pos) string {
	p = p.Resolved()
	return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col)
}

// src records a contract value a number comes from and returns its path.
func (k *compiler) src(path string, q contract.Q, fallback diag.Pos) string {
	pos := q.Pos
	if !pos.IsValid() {
		pos = fallback
	}
	return k.val(path, pos, q.Raw)
}

// val records a contract value by path, position and text.
func (k *compiler) val(path string, pos diag.Pos, value string) string {
	if _, ok := k.vals[path]; !ok {
		k.vals[path] = plan.Source{Pos: posText(pos), Value: value}
	}
	return path
}

// band is a steady band resolved to canonical [lo, hi] with its sources.
type band struct {
	lo, hi  float64
	sources []string // contract paths
	side    string   // the side it was taken from
	clause  string   // the steady clause it belongs to
}

func (b band) min() *float64 {
	if math.IsInf(b.lo, -1) {
		return nil
	}
	return plan.F(round(b.lo))
}

func (b band) max() *float64 {
	if math.IsInf(b.hi, 1) {
		return nil
	}
	return plan.F(round(b.hi))
}

// readBand resolves a contract band written at path.
func (k *compiler) readBand(b contract.Band, path string, fallback diag.Pos) (band, bool) {
	if !b.Set {
		return band{}, false
	}
	lo, hi, ok := b.Interval()
	if !ok || lo > hi || (math.IsInf(lo, -1) && math.IsInf(hi, 1)) {
		return band{}, false
	}
	out := band{lo: lo, hi: hi}
	for _, f := range []struct {
		name string
		q    contract.Q
	}{{"nominal", b.Nominal}, {"tolerance", b.Tolerance}, {"min", b.Min}, {"max", b.Max}} {
		if f.q.Set {
			out.sources = append(out.sources, k.src(path+"."+f.name, f.q, firstValid(b.Pos, fallback)))
		}
	}
	return out, true
}

func firstValid(ps ...diag.Pos) diag.Pos {
	for _, p := range ps {
		if p.IsValid() {
			return p
		}
	}
	return diag.Pos{}
}

func sideBand(s *contract.Steady, side string) contract.Band {
	if side == plan.Guarantee {
		return s.Guarantee
	}
	return s.Require
}

// steadyFor finds the steady clause a transient or failure settles into:
// the one named by settleInto, else the first on the same channel.
func steadyFor(b *contract.Boundary, channel, settleInto string) *contract.Steady {
	if settleInto != "" {
		for _, s := range b.Steady {
			if s.Name == settleInto {
				return s
			}
		}
	}
	for _, s := range b.Steady {
		if s.Channel.To == channel {
			return s
		}
	}
	return nil
}

// steadyBand is the band a side's recovery or settling is graded
// against: that side's band of the steady clause, else the other side's
// (stricter for a consumer, and stated in the sources).
func (k *compiler) steadyBand(b *contract.Boundary, channel, settleInto, side string) (band, bool) {
	s := steadyFor(b, channel, settleInto)
	if s == nil {
		return band{}, false
	}
	for _, sd := range []string{side, other(side)} {
		if bd, ok := k.readBand(sideBand(s, sd), s.Path()+"."+sd, s.Pos); ok {
			bd.side, bd.clause = sd, s.Name
			return bd, true
		}
	}
	return band{}, false
}

// nominal is the steady nominal a % deviation refers to, with its source.
func (k *compiler) nominal(b *contract.Boundary, channel, settleInto, side string) (float64, string, bool) {
	s := steadyFor(b, channel, settleInto)
	if s == nil {
		return 0, "", false
	}
	for _, sd := range []string{side, other(side)} {
		if n := sideBand(s, sd).Nominal; n.Set {
			return n.Canon, k.src(s.Path()+"."+sd+".nominal", n, s.Pos), true
		}
	}
	return 0, "", false
}

// unitOf is the canonical unit of a channel's values ("" for alarms).
func (k *compiler) unitOf(b *contract.Boundary, channel string) string {
	ch := k.chans[b][channel]
	if ch == nil || ch.Quantity == contract.Alarm {
		return ""
	}
	return units.Canonical(ch.Quantity)
}

func (k *compiler) dimOf(b *contract.Boundary, channel string) units.Dimension {
	if ch := k.chans[b][channel]; ch != nil {
		return ch.Quantity
	}
	return ""
}

// checkID names a check by side and kind, with an optional qualifier.
func checkID(side, kind, qual string) string {
	id := side + "-" + strings.ReplaceAll(kind, "_", "-")
	if qual != "" {
		id += "-" + qual
	}
	return id
}

// sampler collects the slowest sampling each channel allows.
type sampler map[string]plan.Sampling

func (s sampler) need(channel string, period float64, reason string) {
	if channel == "" || period <= 0 {
		return
	}
	period = round(period)
	if cur, ok := s[channel]; ok && cur.MaxPeriodS <= period {
		return
	}
	s[channel] = plan.Sampling{Channel: channel, MaxPeriodS: period, Reason: reason}
}

// within asks for samplesPerWindow samples inside a time limit.
func (s sampler) within(channel string, limit float64, what string) {
	s.need(channel, limit/samplesPerWindow, fmt.Sprintf("at least %d samples within the %s %s", samplesPerWindow, secText(limit), what))
}

func (s sampler) list() []plan.Sampling {
	out := make([]plan.Sampling, 0, len(s))
	for _, v := range s {
		out = append(out, v)
	}
	sortBy(out, func(x plan.Sampling) string { return x.Channel })
	return out
}

func sortBy[T any](xs []T, key func(T) string) {
	slices.SortStableFunc(xs, func(a, b T) int { return cmp.Compare(key(a), key(b)) })
}
