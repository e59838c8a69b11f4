package contractc

import (
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/seamdc/seam/internal/cli"
	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/diag"
	"github.com/seamdc/seam/internal/units"
)

func init() {
	register("budget", "print the site's power and thermal budget; --add RACK=POWER: what one more load would break", runBudget).
		WithExample("contractc budget contracts/examples/threemodule --add ma/r17=130kW")
}

func runBudget(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("DIR", flag.ContinueOnError)
	var adds addList
	fs.Var(&adds, "add", `what-if: add POWER ("20 kW") or nodes ("2 nodes") to rack RACK ("ma/r01"), or a new rack RACK of POWER beside its module's first rack; repeatable`)
	tranche := trancheFlagsOf(fs)
	caps := capFlagsOf(fs) // last: it takes --inventory from another flag if one has it
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
	if caps.target != "" {
		return budgetCap(c, pos[0], adds, caps, stdout, stderr, fs)
	}
	if tranche.set() {
		return budgetTranche(c, b, tranche, stdout, stderr, fs)
	}
	if len(adds) > 0 {
		return whatIf(c, b, adds, stdout, stderr, fs)
	}
	writeBudget(stdout, b)
	writeDesignPUE(stdout, c)
	writeGrid(stdout, c)
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
	fmt.Fprintln(tw, "POWER: feeds (continuous limit = √3·V·I·PF × the breaker's derating, 80 % unless it states one)")
	fmt.Fprintln(tw, "feed\tredundancy\tload\tload, one feed lost\tlimit\tderating\theadroom\tUPS\tstatus")
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
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", f.Feed.ID, f.Feed.Block.Redundancy, kw(f.Load), lost, kw(f.Limit),
			percent(f.Derating), kw(f.Headroom()), ups, status(f.Headroom() >= 0 && len(f.Dropped) == 0 && upsOK))
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "POWER: blocks")
	fmt.Fprintln(tw, "block\tload\trating\theadroom\tstatus")
	for _, bb := range b.Blocks {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", bb.Block.ID, kw(bb.Load), kw(bb.Block.Rating.Canon), kw(bb.Block.Rating.Canon-bb.Load), status(bb.Load <= bb.Block.Rating.Canon))
	}
	worst := worstPDU(b.PDUs)
	if worst != nil {
		fmt.Fprintf(tw, "\nrack PDUs: %d, tightest %s: %s with the rack's other PDU lost, %s\n", len(b.PDUs), worst.PDU.ID, kw(worst.LoadLost), againstLimit(worst.Limit-worst.LoadLost, worst.Limit))
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

// againstLimit says how far a load is from its continuous limit, in
// words that need no sign: "6.6 kW under its continuous limit 136.6 kW",
// "43.4 kW over …".
func againstLimit(headroom, limit float64) string {
	switch {
	case headroom > 0:
		return fmt.Sprintf("%s under its continuous limit %s", kw(headroom), kw(limit))
	case headroom < 0:
		return fmt.Sprintf("%s over its continuous limit %s", kw(-headroom), kw(limit))
	}
	return "at its continuous limit " + kw(limit)
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

func percent(share float64) string {
	return strconv.FormatFloat(math.Round(share*1000)/10, 'f', -1, 64) + " %"
}

// addition is one --add: a rack and the power it gains (kW), or the nodes.
type addition struct {
	Rack  string
	KW    float64
	Nodes int
	Raw   string
}

type addList []addition

func (l *addList) String() string { return fmt.Sprint(*l) }

func (l *addList) Set(v string) error {
	rack, amount, ok := strings.Cut(v, "=")
	if !ok || rack == "" || amount == "" {
		return fmt.Errorf("--add %q: want RACK=POWER, e.g. ma/r01=20kW, ma/r17=130kW or ma/r01=2nodes", v)
	}
	a := addition{Rack: rack, Raw: v}
	if n, ok := strings.CutSuffix(strings.TrimSpace(amount), "nodes"); ok {
		k, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(n, " ")))
		if err != nil || k <= 0 {
			return fmt.Errorf("--add %q: %q is not a positive number of nodes", v, amount)
		}
		a.Nodes = k
	} else if n, ok := strings.CutSuffix(strings.TrimSpace(amount), "node"); ok && strings.TrimSpace(n) == "1" {
		a.Nodes = 1
	} else {
		q, err := units.Parse(amount)
		if err != nil {
			return fmt.Errorf("--add %q: %w", v, err)
		}
		if q.Dim != units.Power || q.Canon <= 0 {
			return fmt.Errorf("--add %q: %q is not a positive power (write kW, e.g. 20kW) or a number of nodes", v, amount)
		}
		a.KW = q.Canon
	}
	*l = append(*l, a)
	return nil
}

// apply adds the load to the model: to an existing rack, or as a new
// rack on the PDUs' feeds and the loop of its module's first rack.
func (a addition) apply(c *contract.Contracts) (string, error) {
	module, _, ok := strings.Cut(a.Rack, "/")
	if !ok {
		return "", fmt.Errorf("--add %s: %q is no rack id: write MODULE/RACK, e.g. ma/r01", a.Raw, a.Rack)
	}
	var mod *contract.Module
	for _, m := range c.Site.Modules {
		if m.ID == module {
			mod = m
		}
	}
	if mod == nil {
		return "", fmt.Errorf("--add %s: the site has no module %q", a.Raw, module)
	}
	for _, r := range mod.Racks {
		if r.ID != a.Rack {
			continue
		}
		add := a.KW
		if a.Nodes > 0 {
			if r.Nodes == 0 {
				return "", fmt.Errorf("--add %s: rack %s declares no nodes, so a node's power is unknown: add POWER instead", a.Raw, r.ID)
			}
			add = r.DesignPower.Canon / float64(r.Nodes) * float64(a.Nodes)
		}
		r.DesignPower.Canon += add
		return fmt.Sprintf("rack %s: %s more (%s → %s)", r.ID, kw(add), kw(r.DesignPower.Canon-add), kw(r.DesignPower.Canon)), nil
	}
	if a.Nodes > 0 {
		return "", fmt.Errorf("--add %s: module %s has no rack %q to add nodes to: add POWER for a new rack", a.Raw, module, a.Rack)
	}
	if len(mod.Racks) == 0 {
		return "", fmt.Errorf("--add %s: module %s has no racks to model a new one on", a.Raw, module)
	}
	like := mod.Racks[0]
	r := *like
	r.ID, r.Path, r.NodeIDs, r.Nodes = a.Rack, "", nil, 0
	r.DesignPower.Canon = a.KW
	r.PDUs = nil
	for _, p := range like.PDUs {
		q := *p // its Path stays the template's: the same breaker, the same derating
		q.ID = a.Rack + "/" + p.ID[len(like.ID)+1:]
		r.PDUs = append(r.PDUs, &q)
	}
	mod.Racks = append(mod.Racks, &r)
	return fmt.Sprintf("new rack %s: %s, on the feeds and loop of %s", r.ID, kw(a.KW), like.ID), nil
}

// limit is one limit of the budget: the load it carries before and
// after the addition, all units running and with one lost.
type limit struct {
	What, Lost    string
	Before, After float64
	Limit         float64
	Unit          string
}

func (l limit) broken() bool { return l.After > l.Limit+1e-9 }

func limits(b contract.Budgets) []limit {
	var out []limit
	for _, f := range b.Feeds {
		if f.Limit == 0 {
			continue
		}
		out = append(out, limit{What: "feed " + f.Feed.ID, Lost: "-", After: f.Load, Limit: f.Limit, Unit: "kW"})
		if f.Feed.Block.Redundancy != "N" && f.LostFeed != "" {
			out = append(out, limit{What: "feed " + f.Feed.ID, Lost: "feed " + f.LostFeed, After: f.LoadLost, Limit: f.Limit, Unit: "kW"})
		}
	}
	for _, bb := range b.Blocks {
		if bb.Block.Rating.Set {
			out = append(out, limit{What: "block " + bb.Block.ID, Lost: "-", After: bb.Load, Limit: bb.Block.Rating.Canon, Unit: "kW"})
		}
	}
	for _, p := range b.PDUs {
		if p.Limit == 0 {
			continue
		}
		n := float64(len(p.Rack.PDUs))
		out = append(out, limit{What: "PDU " + p.PDU.ID, Lost: "-", After: p.Rack.DesignPower.Canon / n, Limit: p.Limit, Unit: "kW"})
		if n > 1 {
			out = append(out, limit{What: "PDU " + p.PDU.ID, Lost: "the rack's other PDU", After: p.LoadLost, Limit: p.Limit, Unit: "kW"})
		}
	}
	for _, l := range b.Loops {
		out = append(out, limit{What: "loop " + l.Loop.ID + " capacity", Lost: "-", After: l.Heat, Limit: l.Capacity, Unit: "kW"})
		if l.Loop.Redundancy != "N" {
			out = append(out, limit{What: "loop " + l.Loop.ID + " capacity", Lost: "one CDU (" + l.Loop.Redundancy + ")", After: l.Heat, Limit: l.CapacityLost, Unit: "kW"})
		}
		if l.FlowNeeded > 0 {
			out = append(out, limit{What: "loop " + l.Loop.ID + " flow", Lost: "-", After: l.FlowNeeded, Limit: l.Flow, Unit: "L/min"},
				limit{What: "loop " + l.Loop.ID + " flow", Lost: "one pump", After: l.FlowNeeded, Limit: l.FlowLost, Unit: "L/min"})
			if l.LostCDU != "" {
				out = append(out, limit{What: "loop " + l.Loop.ID + " flow", Lost: "CDU " + l.LostCDU, After: l.FlowNeeded, Limit: l.FlowCDULost, Unit: "L/min"})
			}
		}
	}
	return out
}

// whatIf adds the loads and names every limit the site would break,
// with every unit running and with one lost; exit 2 when one breaks.
func whatIf(c *contract.Contracts, before contract.Budgets, adds []addition, stdout, stderr io.Writer, fs *flag.FlagSet) int {
	was := map[string]float64{}
	for _, l := range limits(before) {
		was[l.What+"|"+l.Lost] = l.After
	}
	var what []string
	for _, a := range adds {
		s, err := a.apply(c)
		if err != nil {
			return fail(stderr, "budget", fs, err)
		}
		what = append(what, s)
	}
	after := limits(contract.Budget(c))
	fmt.Fprintln(stdout, "WHAT IF: "+strings.Join(what, "; "))
	broken := whatIfTable(stdout, after, was)
	if len(broken) == 0 {
		fmt.Fprintln(stdout, "\nfits: no limit is broken, with every unit running or with one lost")
		return cli.ExitOK
	}
	fmt.Fprintf(stdout, "\ndoes not fit: %d limit(s) broken:\n", len(broken))
	for _, l := range broken {
		with := "with every unit running"
		if l.Lost != "-" {
			with = "with " + l.Lost + " lost"
		}
		fmt.Fprintf(stdout, "  %s %s: %s above its limit %s\n", l.What, with, amount(l.After, l.Unit), amount(l.Limit, l.Unit))
	}
	return cli.ExitFindings
}

func amount(v float64, unit string) string {
	if unit == "kW" {
		return kw(v)
	}
	return thousands(v) + " " + unit
}

// whatIfTable prints every limit a what-if changed or breaks, before
// and after, against what it was (was: by limit and unit lost), and
// returns the broken ones.
func whatIfTable(w io.Writer, after []limit, was map[string]float64) []limit {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "limit\tunit lost\tbefore\tafter\tlimit\theadroom after\tstatus")
	var broken []limit
	for _, l := range after {
		l.Before = was[l.What+"|"+l.Lost]
		if l.After == l.Before && !l.broken() {
			continue
		}
		st := "ok"
		if l.broken() {
			st = "BREAKS"
			if l.Before > l.Limit+1e-9 {
				st = "OVER already"
			}
			broken = append(broken, l)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", l.What, l.Lost, amount(l.Before, l.Unit), amount(l.After, l.Unit), amount(l.Limit, l.Unit), amount(l.Limit-l.After, l.Unit), st)
	}
	tw.Flush()
	return broken
}
