package contractc

import (
	"flag"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"github.com/seamdc/seam/internal/cli"
	"github.com/seamdc/seam/internal/plan"
	"github.com/seamdc/seam/internal/units"
)

func init() {
	register("show", "print a plan for people: cases, steps, checks, duration, coverage", runShow).
		WithExample("contractc show sat.json")
}

func runShow(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("PLAN.json [--case ID-PREFIX]", flag.ContinueOnError)
	only := fs.String("case", "", "show only the cases whose id starts with this")
	pos, err := cli.Parse(fs, args)
	if err == nil && len(pos) != 1 {
		err = cli.Usagef("want one plan file, got %d arguments", len(pos))
	}
	if err != nil {
		return fail(stderr, "show", fs, err)
	}
	p, err := plan.Read(pos[0])
	if err != nil {
		return fail(stderr, "show", fs, err)
	}
	showPlan(stdout, p, *only)
	return cli.ExitOK
}

// showPlan renders a plan from its JSON alone: the header, every case
// with its steps, checks, interlocks and sampling, then the coverage.
func showPlan(w io.Writer, p *plan.Plan, only string) {
	showHeader(w, p)
	locks := map[string]plan.Interlock{}
	for _, il := range p.Interlocks {
		locks[il.ID] = il
	}
	cx := p.CommissioningRules()
	for i, c := range p.Cases {
		if strings.HasPrefix(c.ID, only) {
			showCase(w, i+1, c, cxLevelText(cx, &c), p.Sources, locks)
		}
	}
	if only == "" {
		showCoverage(w, p)
	}
}

func showHeader(w io.Writer, p *plan.Plan) {
	h := p.Header
	scope := "all modules"
	if h.Module != "" {
		scope = "module " + h.Module
	}
	checks := 0
	for _, c := range p.Cases {
		checks += len(c.Checks)
	}
	fmt.Fprintf(w, "PLAN %s: %s, %s\n", h.Site, levelName(h.Level), scope)
	fmt.Fprintf(w, "  %d cases, %d checks, estimated %s\n", len(p.Cases), checks, duration(h.EstimatedS))
	fmt.Fprintf(w, "  format %s, written by %s %s (%s)\n", h.Format, h.Tool.Name, h.Tool.Version, h.Generated)
	fmt.Fprintf(w, "  contracts %s, schema %s %s\n", h.Inputs.Contracts, h.Inputs.SchemaVersion, h.Inputs.Schema)
	if h.Options.MaxHoldS > 0 {
		fmt.Fprintf(w, "  holds capped at %s (--max-hold): a shortened hold proves its clause only in part\n", duration(h.Options.MaxHoldS))
	}
	for _, b := range p.Boundaries {
		fmt.Fprintf(w, "  boundary %s: %s supplies %s; %s\n", b.ID, partyText(b.Supplier), partyText(b.Consumer), signaturesText(b.Signatures))
	}
	for _, lb := range p.LoadBanks {
		fmt.Fprintf(w, "  load bank %s at %s: %s, %s", lb.ID, lb.Module, lb.Kind, kwText(lb.RatingKW))
		if lb.ResolutionKW > 0 {
			fmt.Fprintf(w, " in steps of %s", kwText(lb.ResolutionKW))
		}
		if lb.MaxRateKWPerS > 0 {
			fmt.Fprintf(w, ", ramps up to %s", rateText(lb.MaxRateKWPerS))
		}
		fmt.Fprintln(w)
	}
}

// partyText is a side of a boundary: its module and vendor.
func partyText(p plan.Party) string {
	if p.Party == "" {
		return p.Module
	}
	return p.Module + " (" + p.Party + ")"
}

// signaturesText says which parties signed the boundary's contract.
func signaturesText(sigs []plan.Signature) string {
	var parts []string
	for _, s := range sigs {
		parts = append(parts, s.Party+" "+s.Status)
	}
	return "contract " + strings.Join(parts, ", ")
}

// cxLevelText is a case's commissioning level: "L3 functional".
func cxLevelText(cx *plan.Commissioning, c *plan.Case) string {
	id := cx.LevelOf(c)
	if l, ok := cx.Level(id); ok {
		return l.ID + " " + l.Name
	}
	return id
}

func levelName(l string) string {
	switch l {
	case plan.FAT:
		return "factory acceptance test (FAT)"
	case plan.SAT:
		return "site acceptance test (SAT)"
	case plan.IST:
		return "integrated systems test (IST)"
	}
	return "FAT, SAT and IST"
}

func showCase(w io.Writer, n int, c plan.Case, level string, sources map[string]plan.Source, locks map[string]plan.Interlock) {
	fmt.Fprintf(w, "\n%d. %s  [%s]\n", n, c.ID, duration(c.EstimatedS))
	fmt.Fprintf(w, "   %s\n", c.Title)
	if level != "" {
		fmt.Fprintf(w, "   commissioning level %s\n", level)
	}
	fmt.Fprintf(w, "   proves %s (%s), graded against the %s side\n", c.Clause.Path, c.Clause.Pos, strings.Join(c.Sides, " and the "))
	fmt.Fprintln(w, "   before you start:")
	for _, pre := range c.Preconditions {
		fmt.Fprintf(w, "     - %s\n", pre.Text)
	}
	fmt.Fprintln(w, "   steps:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for i, s := range c.Steps {
		fmt.Fprintf(tw, "     %d\t%s\t%s\t%s\n", i+1, s.ID, stepText(s), duration(s.EstimatedS))
	}
	tw.Flush()
	fmt.Fprintln(w, "   checks (numbers from the contract):")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, k := range c.Checks {
		var from []string
		for _, path := range k.Sources {
			s := sources[path]
			from = append(from, fmt.Sprintf("%s at %s", s.Value, s.Pos))
		}
		fmt.Fprintf(tw, "     %s\t%s\t%s\t%s\t[%s]\n", k.Side, strings.ReplaceAll(k.Kind, "_", " "), k.Channel, k.Describe(), strings.Join(from, ", "))
	}
	tw.Flush()
	fmt.Fprintln(w, "   interlocks (abort: load to zero):")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, id := range c.Interlocks {
		il := locks[id]
		fmt.Fprintf(tw, "     %s\t%s\t%s\n", il.Channel, interlockText(il), il.Reason)
	}
	for _, s := range c.Suppressed {
		fmt.Fprintf(tw, "     %s\tnot interlocked\t%s\n", s.Channel, s.Reason)
	}
	tw.Flush()
	fmt.Fprintln(w, "   sampling:")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, s := range c.Sampling {
		fmt.Fprintf(tw, "     %s\tevery %s or faster\t%s\n", s.Channel, duration(s.MaxPeriodS), s.Reason)
	}
	tw.Flush()
}

func stepText(s plan.Step) string {
	switch s.Op {
	case plan.OpSetLoad:
		return fmt.Sprintf("set %s to %s", s.LoadBank, kwText(*s.KW))
	case plan.OpRamp:
		return withNote(fmt.Sprintf("ramp %s from %s to %s at %s", s.LoadBank, kwText(*s.FromKW), kwText(*s.KW), rateText(s.RateKWPerS)), s.Note)
	case plan.OpSquareWave:
		return withNote(fmt.Sprintf("square wave on %s: %s to %s, period %s, duty %s, edges at %s, %d cycles", s.LoadBank,
			kwText(*s.LowKW), kwText(*s.HighKW), duration(s.PeriodS), units.Format(s.DutyPct, "%"), rateText(s.RateKWPerS), s.Cycles), s.Note)
	case plan.OpHold:
		return withNote("hold "+duration(s.DurationS), s.Note)
	case plan.OpInjectFault:
		return fmt.Sprintf("inject %s at %s (device; by hand: %s)", s.Event, s.Target, s.Action)
	case plan.OpRestore:
		return fmt.Sprintf("restore %s at %s (device; by hand: %s)", s.Event, s.Target, s.Action)
	case plan.OpAwaitAlarm:
		return fmt.Sprintf("wait for alarm %s, at most %s", s.Channel, duration(s.TimeoutS))
	case plan.OpOperator:
		return fmt.Sprintf("OPERATOR: %s. Expect: %s", s.Action, s.Expect)
	}
	return s.Op
}

func withNote(s, note string) string {
	if note == "" {
		return s
	}
	return s + " (" + note + ")"
}

func interlockText(il plan.Interlock) string {
	s := "silent over " + duration(il.MaxSilenceS)
	if il.Min == nil && il.Max == nil {
		return s
	}
	if il.Unit == "" && il.Max != nil && il.Min == nil {
		return "raised, or " + s
	}
	switch {
	case il.Min != nil && il.Max != nil:
		return "outside " + strings.TrimPrefix(bandText(il.Min, il.Max, il.Unit), "within ") + ", or " + s
	case il.Min != nil:
		return "below " + num(*il.Min, il.Unit) + ", or " + s
	}
	return "above " + num(*il.Max, il.Unit) + ", or " + s
}

// bandText reads "within 402.55–427.45 V", "at least 3200 L/min" or
// "at most 5 s" (plan.BandText).
func bandText(lo, hi *float64, unit string) string { return plan.BandText(lo, hi, unit) }

func num(v float64, unit string) string {
	if unit == "" {
		return units.Format(v, "")
	}
	return units.Format(v, unit)
}

func kwText(kw float64) string {
	if math.Abs(kw) >= 1000 {
		return units.Format(kw/1000, "MW")
	}
	return units.Format(kw, "kW")
}

func rateText(kwPerS float64) string {
	if kwPerS >= 1000 {
		return units.Format(kwPerS/1000, "MW/s")
	}
	return units.Format(kwPerS, "kW/s")
}

// duration renders seconds for people: "250 ms", "7.5 s", "5 min",
// "1 h 12 min" (plan.DurationText).
func duration(s float64) string { return plan.DurationText(s) }

func showCoverage(w io.Writer, p *plan.Plan) {
	fmt.Fprintf(w, "\nCOVERAGE: %s\n", summary(p))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "status\tclause\tat\tcases")
	for _, c := range p.Coverage {
		cases := strings.Join(c.Cases, ", ")
		if c.Status == plan.NotAtLevel {
			cases = strings.Join(c.Reasons, "; ")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", strings.ReplaceAll(c.Status, "_", " "), c.Clause, c.Pos, cases)
	}
	tw.Flush()
	first := true
	for _, c := range p.Coverage {
		if c.Status != plan.Partial && c.Status != plan.Untestable {
			continue
		}
		if first {
			fmt.Fprintln(w, "\nwhat the plan cannot prove:")
			first = false
		}
		fmt.Fprintf(w, "  %s (%s):\n", c.Clause, strings.ReplaceAll(c.Status, "_", " "))
		for _, r := range c.Reasons {
			fmt.Fprintf(w, "    - %s\n", r)
		}
	}
}
