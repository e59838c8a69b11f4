package report

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
)

// Flags of a compared quantity.
const (
	Same          = ""               // within the threshold
	Worse         = "worse"          // the margin shrank beyond the threshold
	Better        = "better"         // the margin grew beyond the threshold
	Regressed     = "regressed"      // passed in A, did not in B
	Recovered     = "recovered"      // did not pass in A, passed in B
	OnlyA         = "only in A"      // B has no such check
	OnlyB         = "only in B"      // A has no such check
	NotComparable = "not comparable" // a side has no measured value, or the units differ
)

// Delta is one measured quantity of a check in two runs of the same
// clause, matched by clause path, check id and channel, so that a FAT
// case at the factory meets the SAT case of the same clause on site.
type Delta struct {
	Clause, Check, Channel string
	CaseA, CaseB           string
	Unit                   string
	A, B                   *Check
	// Change is B's measured value minus A's; MarginChange is B's margin
	// minus A's (negative: closer to the limit, or further past it).
	Change, MarginChange float64
	// Consumed is the share of A's margin that B lost (0.25: a quarter).
	Consumed float64
	Flag     string
}

// Comparison is the result of comparing run B against run A.
type Comparison struct {
	A, B      *Run
	Threshold float64 // share of A's margin; see Compare
	Deltas    []Delta
}

// Flagged reports whether any quantity got worse or regressed. A check
// that only one run has is listed, not flagged: a FAT grades failure
// clauses that the site proves at IST, not SAT.
func (c *Comparison) Flagged() bool {
	for _, d := range c.Deltas {
		if d.Flag == Worse || d.Flag == Regressed {
			return true
		}
	}
	return false
}

// Compare matches every check of A with the check of B for the same
// clause, check id and channel, and flags a change of margin larger than
// threshold × |A's margin| (0.2: a fifth of the margin the factory
// measured), any change of verdict, and checks that only one run has.
// The margin is the fair scale: 3 V lost against a 13 V margin matters,
// 3 V against 200 V does not, and 0.2 s matters against a 1 s recovery.
func Compare(a, b *Run, threshold float64) *Comparison {
	cmp := &Comparison{A: a, B: b, Threshold: threshold}
	type ref struct {
		c *Case
		k *Check
	}
	inB := map[string]ref{}
	var orderB []string
	for i := range b.Cases {
		for j := range b.Cases[i].Checks {
			k := &b.Cases[i].Checks[j]
			key := deltaKey(&b.Cases[i], k)
			if _, dup := inB[key]; !dup {
				inB[key] = ref{&b.Cases[i], k}
				orderB = append(orderB, key)
			}
		}
	}
	seen := map[string]bool{}
	for i := range a.Cases {
		ca := &a.Cases[i]
		for j := range ca.Checks {
			ka := &ca.Checks[j]
			key := deltaKey(ca, ka)
			if seen[key] {
				continue
			}
			seen[key] = true
			d := Delta{Clause: ca.ClausePath, Check: ka.ID, Channel: ka.Channel, CaseA: ca.ID, Unit: ka.Unit, A: ka}
			if rb, ok := inB[key]; ok {
				d.CaseB, d.B = rb.c.ID, rb.k
			}
			d.grade(threshold)
			cmp.Deltas = append(cmp.Deltas, d)
		}
	}
	for _, key := range orderB {
		if !seen[key] {
			rb := inB[key]
			d := Delta{Clause: rb.c.ClausePath, Check: rb.k.ID, Channel: rb.k.Channel, CaseB: rb.c.ID, Unit: rb.k.Unit, B: rb.k}
			d.grade(threshold)
			cmp.Deltas = append(cmp.Deltas, d)
		}
	}
	return cmp
}

func deltaKey(c *Case, k *Check) string {
	return c.ClausePath + "\x00" + k.ID + "\x00" + k.Channel
}

func (d *Delta) grade(threshold float64) {
	switch {
	case d.B == nil:
		d.Flag = OnlyA
		return
	case d.A == nil:
		d.Flag = OnlyB
		return
	}
	a, b := d.A, d.B
	if a.HasValue && b.HasValue && a.Unit == b.Unit {
		d.Change, d.MarginChange = b.Measured-a.Measured, b.Margin-a.Margin
		if a.Margin != 0 {
			d.Consumed = -d.MarginChange / math.Abs(a.Margin)
		} else if d.MarginChange != 0 {
			d.Consumed = math.Copysign(math.Inf(1), -d.MarginChange)
		}
	}
	switch {
	case a.Verdict == Pass && b.Verdict != Pass:
		d.Flag = Regressed
	case a.Verdict != Pass && b.Verdict == Pass:
		d.Flag = Recovered
	case !a.HasValue || !b.HasValue || a.Unit != b.Unit:
		d.Flag = NotComparable
	case d.Consumed > threshold:
		d.Flag = Worse
	case d.Consumed < -threshold:
		d.Flag = Better
	}
}

// rank orders flags for reading: what got worse first.
var rank = map[string]int{Regressed: 0, Worse: 1, NotComparable: 2, Recovered: 3, Better: 4, OnlyA: 5, OnlyB: 6, Same: 7}

// WriteText writes the comparison as an aligned table, what got worse
// first.
func (c *Comparison) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "A: %s (%s, %s)\nB: %s (%s, %s)\nflagging a margin change beyond %g %% of A's margin\n\n",
		c.A.Dir, c.A.Level, c.A.Outcome, c.B.Dir, c.B.Level, c.B.Outcome, c.Threshold*100)
	for _, r := range []*Run{c.A, c.B} {
		if !r.OK() {
			fmt.Fprintf(w, "warning: %s does not verify or re-grade: %s\n\n", r.Dir, strings.Join(problems(r), "; "))
		}
	}
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "flag\tclause\tcheck\tchannel\tA\tB\tchange\tmargin A\tmargin B\tverdicts")
	count := map[string]int{}
	for r := range 8 {
		for _, d := range c.Deltas {
			if rank[d.Flag] != r {
				continue
			}
			count[d.Flag]++
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", orDash(d.Flag), d.Clause, d.Check, d.Channel,
				measuredOf(d.A), measuredOf(d.B), d.changeText(), marginOf(d.A), marginOf(d.B), d.verdicts())
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\n%d checks: %d worse, %d regressed, %d better, %d recovered, %d not comparable, %d within the threshold, %d only in A, %d only in B\n",
		len(c.Deltas), count[Worse], count[Regressed], count[Better], count[Recovered], count[NotComparable], count[Same], count[OnlyA], count[OnlyB])
	return err
}

func problems(r *Run) []string {
	out := append([]string{}, r.Integrity...)
	for _, m := range r.Mismatches {
		out = append(out, fmt.Sprintf("%s %s recorded %s, re-graded %s", m.Case, m.Check, m.Recorded, m.Regrade))
	}
	return out
}

func (d *Delta) changeText() string {
	if d.A == nil || d.B == nil || !d.A.HasValue || !d.B.HasValue || d.A.Unit != d.B.Unit {
		return "—"
	}
	s := fmt.Sprintf("%+.4g %s", d.Change, d.Unit)
	if !math.IsInf(d.Consumed, 0) && d.Consumed != 0 {
		s += fmt.Sprintf(" (%+.0f %% of margin)", -d.Consumed*100)
	}
	return s
}

func (d *Delta) verdicts() string {
	v := func(k *Check) string {
		if k == nil {
			return "—"
		}
		return k.Verdict
	}
	return v(d.A) + " → " + v(d.B)
}

func measuredOf(k *Check) string {
	if k == nil {
		return "—"
	}
	return value(*k, k.Measured)
}

func marginOf(k *Check) string {
	if k == nil {
		return "—"
	}
	return value(*k, k.Margin)
}

func orDash(s string) string {
	if s == "" {
		return "ok"
	}
	return s
}

// WriteCSV writes one row per compared check.
func (c *Comparison) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"flag", "clause", "check", "channel", "unit", "case_a", "case_b", "measured_a", "measured_b",
		"change", "margin_a", "margin_b", "margin_consumed", "verdict_a", "verdict_b"})
	num := func(k *Check, v float64) string {
		if k == nil || !k.HasValue {
			return ""
		}
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	for _, d := range c.Deltas {
		var ma, mb, ga, gb, va, vb string
		if d.A != nil {
			ma, ga, va = num(d.A, d.A.Measured), num(d.A, d.A.Margin), d.A.Verdict
		}
		if d.B != nil {
			mb, gb, vb = num(d.B, d.B.Measured), num(d.B, d.B.Margin), d.B.Verdict
		}
		var change, consumed string
		if ma != "" && mb != "" && d.A.Unit == d.B.Unit {
			change = strconv.FormatFloat(d.Change, 'g', -1, 64)
			consumed = strconv.FormatFloat(d.Consumed, 'g', 6, 64)
		}
		cw.Write([]string{orDash(d.Flag), d.Clause, d.Check, d.Channel, d.Unit, d.CaseA, d.CaseB, ma, mb,
			change, ga, gb, consumed, va, vb})
	}
	cw.Flush()
	return cw.Error()
}
