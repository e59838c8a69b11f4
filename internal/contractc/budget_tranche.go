package contractc

import (
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/seamdc/seam/internal/cli"
	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/inventory"
	"github.com/seamdc/seam/internal/units"
)

// trancheFlags are budget's expansion flags: --tranche prints the power
// tranches and when each IT module can be energised; --land models a new
// IT module on the site's tie-ins.
type trancheFlags struct {
	tranche bool
	lands   landList
}

func trancheFlagsOf(fs *flag.FlagSet) *trancheFlags {
	t := &trancheFlags{}
	fs.BoolVar(&t.tranche, "tranche", false, "print the power tranches, when each IT module can be energised, the tie-ins and design PUE")
	fs.Var(&t.lands, "land", `what-if: a new IT module MODULE of RACKS racks of POWER on tie-ins ("md=4x130kW@p3-spare-breakers,l3-stub"): which tie-ins it uses, which budgets it breaks, when it can be energised; implies --tranche`)
	return t
}

func (t *trancheFlags) set() bool { return t.tranche || len(t.lands) > 0 }

// landing is one --land: a new IT module on tie-ins.
type landing struct {
	Module string
	Racks  int
	KW     float64 // each rack
	TieIns []string
	Raw    string
}

type landList []landing

func (l *landList) String() string { return fmt.Sprint(*l) }

func (l *landList) Set(v string) error {
	const want = `want MODULE=RACKSxPOWER@TIE-IN[,TIE-IN...], e.g. md=4x130kW@p3-spare-breakers,l3-stub`
	mod, rest, ok := strings.Cut(v, "=")
	size, ties, ok2 := strings.Cut(rest, "@")
	n, power, ok3 := strings.Cut(size, "x")
	if !ok || !ok2 || !ok3 || mod == "" || ties == "" {
		return fmt.Errorf("--land %q: %s", v, want)
	}
	racks, err := strconv.Atoi(n)
	if err != nil || racks <= 0 {
		return fmt.Errorf("--land %q: %q is not a positive number of racks; %s", v, n, want)
	}
	q, err := units.Parse(addUnitSpace(power))
	if err != nil || q.Dim != units.Power || q.Canon <= 0 {
		return fmt.Errorf("--land %q: %q is not a positive power per rack (write kW, e.g. 130kW)", v, power)
	}
	*l = append(*l, landing{Module: mod, Racks: racks, KW: q.Canon, TieIns: strings.Split(ties, ","), Raw: v})
	return nil
}

// addUnitSpace turns "130kW" into "130 kW".
func addUnitSpace(s string) string {
	s = strings.TrimSpace(s)
	i := strings.IndexFunc(s, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	if i <= 0 || s[i] == ' ' {
		return s
	}
	return s[:i] + " " + s[i:]
}

// budgetTranche prints the tranche plan and, with --land, what a new
// module on tie-ins uses and breaks.
func budgetTranche(c *contract.Contracts, before contract.Budgets, t *trancheFlags, stdout, stderr io.Writer, fs *flag.FlagSet) int {
	if len(c.Ops.Tranches) == 0 {
		return fail(stderr, "budget", fs, cli.Usagef("--tranche: the site declares no power tranches: add site.tranches (docs/operations.md)"))
	}
	pue := contract.DesignPUE(c)
	var landed []*landed
	for _, l := range t.lands {
		ld, err := land(c, l)
		if err != nil {
			return fail(stderr, "budget", fs, err)
		}
		landed = append(landed, ld)
	}
	notBefore := map[string]string{}
	for _, ld := range landed {
		if ld.notBefore != nil {
			notBefore[ld.Module] = ld.notBefore.ID
		}
	}
	plan := contract.PlanTranchesPUE(c, pue, notBefore)
	for _, ld := range landed {
		ld.plan(plan)
	}
	writeTranches(stdout, c, plan)
	if len(landed) == 0 {
		return cli.ExitOK
	}
	broken := writeLandings(stdout, before, contract.Budget(c), landed)
	if broken > 0 {
		return cli.ExitFindings
	}
	return cli.ExitOK
}

// writeDesignPUE prints design PUE and how it is computed, when the site
// declares meters.
func writeDesignPUE(w io.Writer, c *contract.Contracts) { writePUE(w, contract.DesignPUE(c)) }

func writePUE(w io.Writer, p contract.PUE) {
	if !p.OK {
		return
	}
	fmt.Fprintf(w, "\nDESIGN PUE: %.3f (The Green Grid's PUE: total facility power / IT power, at the design draws)\n", p.Value)
	for _, h := range p.How {
		fmt.Fprintln(w, "  "+h)
	}
}

func date(t *contract.Tranche) string {
	if t == nil {
		return "never: no tranche covers it"
	}
	return t.Date + " (" + t.ID + ")"
}

func writeTranches(w io.Writer, c *contract.Contracts, plan contract.TranchePlan) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	factor := "IT × 1 (no meters: design PUE unknown)"
	if plan.PUE.OK {
		factor = fmt.Sprintf("IT × design PUE %.3f", plan.PUE.Value)
	}
	fmt.Fprintf(tw, "POWER TRANCHES (a module's draw = %s; each energised on the first tranche that covers it and every module before it)\n", factor)
	fmt.Fprintln(tw, "tranche\tdate\tcapacity\tcumulative\tenergises\tdraw after\theadroom")
	for _, s := range plan.Steps {
		en := strings.Join(s.Energised, ", ")
		if en == "" {
			en = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.Tranche.ID, s.Tranche.Date, kw(s.Tranche.Capacity.Canon), kw(s.Cumulative), en, kw(s.Load), kw(s.Cumulative-s.Load))
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "module\tIT\tdraw\tenergised from")
	for _, m := range plan.Modules {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", m.Module, kw(m.IT), kw(m.Draw), date(m.Tranche))
	}
	if len(c.Ops.TieIns) > 0 {
		fmt.Fprintln(tw)
		fmt.Fprintln(tw, "tie-in\tkind\tmodule\tprovides\tusable from")
		for _, ti := range c.Ops.TieIns {
			from := "now"
			for _, tr := range c.Ops.Tranches {
				if tr.ID == ti.Tranche.To {
					from = date(tr)
				}
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", ti.ID, ti.Kind, ti.Module.To, provides(ti), from)
		}
	}
	tw.Flush()
	writePUE(w, plan.PUE)
}

func provides(ti *contract.TieIn) string {
	switch ti.Kind {
	case "breaker":
		return fmt.Sprintf("%d × %s positions", ti.Positions, ti.Breaker.Raw)
	case "header_stub":
		v := "unvalved"
		if ti.Valved {
			v = "valved"
		}
		return ti.Flow.Raw + ", " + v
	}
	return fmt.Sprintf("%d fibre pairs", ti.Pairs)
}

// landed is a new module placed on tie-ins.
type landed struct {
	landing
	module           *inventory.Module
	breaker, stub    *contract.TieIn
	fibre            *contract.TieIn
	block            *inventory.Block
	loop             *inventory.Loop
	notBefore        *contract.Tranche
	energised        *contract.Tranche
	draw, cumulative float64
}

// land adds the new module to the site: its racks on the breaker tie-in's
// block (PDUs like the first rack that block feeds), cooled by the header
// stub's loop.
func land(c *contract.Contracts, l landing) (*landed, error) {
	for _, m := range c.Site.Modules {
		if m.ID == l.Module {
			return nil, fmt.Errorf("--land %s: the site already has a module %q: name the new one", l.Raw, l.Module)
		}
	}
	ld := &landed{landing: l}
	byID := map[string]*contract.TieIn{}
	var ids []string
	for _, ti := range c.Ops.TieIns {
		byID[ti.ID] = ti
		ids = append(ids, ti.ID)
	}
	for _, id := range l.TieIns {
		ti := byID[id]
		if ti == nil {
			return nil, fmt.Errorf("--land %s: the site declares no tie-in %q (it has %s)", l.Raw, id, strings.Join(ids, ", "))
		}
		switch ti.Kind {
		case "breaker":
			ld.breaker = ti
		case "header_stub":
			ld.stub = ti
		case "fibre":
			ld.fibre = ti
		}
		for _, tr := range c.Ops.Tranches {
			if tr.ID == ti.Tranche.To && (ld.notBefore == nil || tr.Date > ld.notBefore.Date) {
				ld.notBefore = tr
			}
		}
	}
	if ld.breaker == nil || ld.stub == nil {
		return nil, fmt.Errorf("--land %s: a new IT module needs a breaker tie-in for its power and a header_stub tie-in for its cooling", l.Raw)
	}
	for _, m := range c.Site.Modules {
		if m.ID == ld.breaker.Module.To && len(m.Blocks) > 0 {
			ld.block = m.Blocks[0]
		}
		if m.ID == ld.stub.Module.To && len(m.Loops) > 0 {
			ld.loop = m.Loops[0]
		}
	}
	if ld.block == nil || ld.loop == nil {
		return nil, fmt.Errorf("--land %s: tie-ins %s and %s name modules without a power block or a cooling loop", l.Raw, ld.breaker.ID, ld.stub.ID)
	}
	var like *inventory.Rack
	for _, m := range c.Site.Modules {
		for _, r := range m.Racks {
			for _, p := range r.PDUs {
				if like == nil && strings.HasPrefix(p.Feed.To, ld.block.ID+"/") {
					like = r
				}
			}
		}
	}
	mod := &inventory.Module{ID: l.Module, Kind: "it", FailureDomain: "fd-" + l.Module}
	for i := 1; i <= l.Racks; i++ {
		r := &inventory.Rack{ID: fmt.Sprintf("%s/r%02d", l.Module, i), Module: l.Module, CooledBy: inventory.Ref{To: ld.loop.ID}}
		r.Path = "site.modules." + l.Module + ".racks." + r.ID[len(l.Module)+1:]
		r.DesignPower = inventory.Q{Quantity: units.Quantity{Value: l.KW, Unit: "kW", Dim: units.Power, Canon: l.KW}, Set: true}
		for _, f := range ld.block.Feeds {
			p := &inventory.PDU{ID: r.ID + "/" + f.ID[len(ld.block.ID)+1:], Feed: inventory.Ref{To: f.ID}, Breaker: ld.breaker.Breaker}
			if like != nil {
				for _, lp := range like.PDUs {
					if lp.Feed.To == f.ID {
						p.Breaker, p.Derating, p.Voltage = lp.Breaker, lp.Derating, lp.Voltage
					}
				}
			}
			r.PDUs = append(r.PDUs, p)
		}
		mod.Racks = append(mod.Racks, r)
	}
	ld.module = mod
	c.Site.Modules = append(c.Site.Modules, mod)
	return ld, nil
}

// plan finds when the landed module can be energised: on the plan's
// tranche, or later if a tie-in it uses comes with a later tranche.
func (ld *landed) plan(p contract.TranchePlan) {
	for _, m := range p.Modules {
		if m.Module == ld.Module {
			ld.draw, ld.energised = m.Draw, m.Tranche
		}
	}
	for _, s := range p.Steps {
		ld.cumulative = s.Cumulative
	}
}

// tieInLimits are the landed module's limits at its tie-ins: the breaker
// positions' continuous capacity per feed, and the stub's flow.
func (ld *landed) tieInLimits(after contract.Budgets) []limit {
	var out []limit
	it := 0.0
	for _, r := range ld.module.Racks {
		it += r.DesignPower.Canon
	}
	nf := len(ld.block.Feeds)
	if nf > 0 && ld.breaker.Positions > 0 {
		volts := ld.block.Voltage.Canon
		if ld.breaker.Voltage.Set {
			volts = ld.breaker.Voltage.Canon
		}
		perFeed := float64(ld.breaker.Positions) / float64(nf)
		capKW := perFeed * contract.ContinuousLimit(ld.breaker.Breaker.Canon, volts, ld.block.PowerFactor, contract.DefaultDerating)
		load, lost := it/float64(nf), "-"
		if ld.block.Redundancy != "N" && nf > 1 {
			load, lost = it, "the other feeds"
		}
		out = append(out, limit{What: "tie-in " + ld.breaker.ID + " per feed", Lost: lost, After: load, Limit: capKW, Unit: "kW"})
	}
	for _, l := range after.Loops {
		if l.Loop.ID != ld.loop.ID || l.Heat <= 0 {
			continue
		}
		heat := 0.0
		for _, r := range ld.module.Racks {
			heat += r.DesignPower.Canon * r.LiquidShare()
		}
		out = append(out, limit{What: "tie-in " + ld.stub.ID + " flow", Lost: "-", After: l.FlowNeeded * heat / l.Heat, Limit: ld.stub.Flow.Canon, Unit: "L/min"})
	}
	return out
}

// writeLandings prints what each landed module uses and which limits it
// breaks; it returns how many are broken.
func writeLandings(w io.Writer, before, after contract.Budgets, lds []*landed) int {
	was := map[string]float64{}
	for _, l := range limits(before) {
		was[l.What+"|"+l.Lost] = l.After
	}
	all := limits(after)
	for _, ld := range lds {
		fmt.Fprintf(w, "\nWHAT IF: new IT module %s: %d racks × %s = %s IT, %s drawn\n", ld.Module, ld.Racks, kw(ld.KW), kw(ld.KW*float64(ld.Racks)), kw(ld.draw))
		fmt.Fprintf(w, "  power: tie-in %s (%s on %s), its racks on block %s\n", ld.breaker.ID, provides(ld.breaker), ld.breaker.Module.To, ld.block.ID)
		fmt.Fprintf(w, "  cooling: tie-in %s (%s on %s), on loop %s\n", ld.stub.ID, provides(ld.stub), ld.stub.Module.To, ld.loop.ID)
		if ld.fibre != nil {
			fmt.Fprintf(w, "  network: tie-in %s (%s to the spine; pairs per rack are not declared, so not checked)\n", ld.fibre.ID, provides(ld.fibre))
		}
		when := "energised from " + date(ld.energised)
		if ld.energised == nil {
			when = fmt.Sprintf("cannot be energised: the tranches give %s in all", kw(ld.cumulative))
		}
		fmt.Fprintf(w, "  tranche: %s\n", when)
		all = append(all, ld.tieInLimits(after)...)
	}
	fmt.Fprintln(w)
	broken := whatIfTable(w, all, was)
	for _, ld := range lds {
		if ld.energised == nil {
			broken = append(broken, limit{What: "power tranches", Lost: "-"})
		}
	}
	if len(broken) == 0 {
		fmt.Fprintln(w, "\nfits: no limit is broken, with every unit running or with one lost, and a tranche covers it")
		return 0
	}
	fmt.Fprintf(w, "\ndoes not fit: %d limit(s) broken:\n", len(broken))
	for _, l := range broken {
		if l.Unit == "" {
			fmt.Fprintln(w, "  the power tranches: no tranche covers the new module's draw")
			continue
		}
		with := "with every unit running"
		if l.Lost != "-" {
			with = "with " + l.Lost + " lost"
		}
		fmt.Fprintf(w, "  %s %s: %s above its limit %s\n", l.What, with, amount(l.After, l.Unit), amount(l.Limit, l.Unit))
	}
	return len(broken)
}
