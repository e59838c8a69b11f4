package contractc

import (
	"flag"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"github.com/seamdc/seam/internal/cli"
	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/diag"
	"github.com/seamdc/seam/internal/units"
)

func init() { register("budget", "print the site's power and thermal budget", runBudget) }

func runBudget(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("DIR", flag.ContinueOnError)
	pos, err := cli.Parse(fs, args)
	if err == nil && len(pos) != 1 {
		err = cli.Usagef("want one contract directory, got %d arguments", len(pos))
	}
	if err != nil {
		return fail(stderr, "budget", fs, err)
	}
	c, diags, err := contract.Load(pos[0])
	if err != nil {
		return fail(stderr, "budget", fs, err)
	}
	if c == nil || diags.Count(diag.Error) > 0 {
		diag.Text(stderr, diags.Sorted().Rebase(cli.RelDir(pos[0])))
		return cli.ExitFindings
	}
	b := contract.Budget(c)
	writeBudget(stdout, b)
	var findings diag.List
	for _, d := range contract.Check(c) {
		if len(d.Rule) > 6 && d.Rule[:6] == "BUDGET" {
			findings = append(findings, d)
		}
	}
	if len(findings) > 0 {
		fmt.Fprintln(stdout)
		diag.Text(stdout, findings.Sorted().Rebase(cli.RelDir(pos[0])))
		return cli.ExitFindings
	}
	return cli.ExitOK
}

func kw(v float64) string { return units.Format(round1(v), "kW") }

func round1(v float64) float64 { return math.Round(v*10) / 10 }

func status(ok bool) string {
	if ok {
		return "ok"
	}
	return "OVER"
}

func writeBudget(w io.Writer, b contract.Budgets) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "POWER: feeds (continuous limit = √3·V·I·PF × 80 %)")
	fmt.Fprintln(tw, "feed\tredundancy\tload\tload, one feed lost\tlimit\theadroom\tUPS\tstatus")
	for _, f := range b.Feeds {
		lost := "-"
		if f.Feed.Block.Redundancy != "N" {
			lost = kw(f.LoadLost) + " (" + f.LostFeed + " lost)"
		}
		ups, upsOK := "-", true
		if u := f.Feed.UPS; u != nil {
			ups = u.Rating.Raw + " for " + u.RideThrough.Raw
			upsOK = u.Rating.Canon >= f.Design()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", f.Feed.ID, f.Feed.Block.Redundancy, kw(f.Load), lost, kw(f.Limit),
			kw(f.Headroom()), ups, status(f.Headroom() >= 0 && len(f.Dropped) == 0 && upsOK))
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "POWER: blocks")
	fmt.Fprintln(tw, "block\tload\trating\theadroom\tstatus")
	for _, bb := range b.Blocks {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", bb.Block.ID, kw(bb.Load), kw(bb.Block.Rating.Canon), kw(bb.Block.Rating.Canon-bb.Load), status(bb.Load <= bb.Block.Rating.Canon))
	}
	worst := worstPDU(b.PDUs)
	if worst != nil {
		fmt.Fprintf(tw, "\nrack PDUs: %d, tightest %s: %s with the rack's other PDU lost, limit %s, headroom %s\n", len(b.PDUs), worst.PDU.ID, kw(worst.LoadLost), kw(worst.Limit), kw(worst.Limit-worst.LoadLost))
	}
	if len(b.Loops) == 0 {
		tw.Flush()
		return
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "COOLING: loops (heat to liquid; flow from Q = ṁ·cp·ΔT)")
	fmt.Fprintln(tw, "loop\theat\tBTU/h\ttons\tcapacity, one CDU lost\theadroom\tflow needed\tflow, one pump lost\tflow, one CDU lost\tstatus")
	for _, l := range b.Loops {
		ok := l.CapacityLost >= l.Heat && l.FlowLost >= l.FlowNeeded && l.FlowCDULost >= l.FlowNeeded
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", l.Loop.ID, kw(l.Heat), thousands(l.BTUh()), thousands(l.Tons()),
			kw(l.CapacityLost), kw(l.CapacityLost-l.Heat), flow(l.FlowNeeded), flow(l.FlowLost), flow(l.FlowCDULost), status(ok))
	}
	tw.Flush()
}

func flow(v float64) string { return thousands(v) + " L/min" }

// thousands writes a rounded number with thin groups: 6,387,526.
func thousands(v float64) string {
	s := fmt.Sprintf("%.0f", math.Round(v))
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		s = "-" + s
	}
	return s
}

func worstPDU(pdus []contract.PDUBudget) *contract.PDUBudget {
	var worst *contract.PDUBudget
	for i := range pdus {
		if worst == nil || pdus[i].Limit-pdus[i].LoadLost < worst.Limit-worst.LoadLost {
			worst = &pdus[i]
		}
	}
	return worst
}
