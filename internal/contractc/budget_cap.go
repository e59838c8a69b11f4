package contractc

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/seamdc/seam/internal/capping"
	"github.com/seamdc/seam/internal/cli"
	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/diag"
)

// capFlags are budget's --cap flags.
type capFlags struct {
	target, out string
	minShare    float64
	inventory   *handoverPaths
}

// capFlagsOf adds --cap, --caps-out and --cap-min to budget's flags
// (and --inventory, unless another of budget's options has it).
func capFlagsOf(fs *flag.FlagSet) *capFlags {
	cf := &capFlags{}
	fs.StringVar(&cf.target, "cap", "", "compute per-node power caps that make TARGET fit (a rack, PDU, feed or block id, with one unit lost where it has one): uniform per scale-up domain, with their cost (docs/capping.md)")
	fs.StringVar(&cf.out, "caps-out", "", "with --cap: write the caps file (JSON, docs/capping.md) that sat cap apply reads")
	fs.Float64Var(&cf.minShare, "cap-min", capping.DefaultMinShare, "with --cap: the lowest cap, a share of a node's design draw (the inventory records no BMC's range; sat cap apply checks the BMC's own)")
	if f := fs.Lookup("inventory"); f != nil {
		cf.inventory, _ = f.Value.(*handoverPaths)
	} else {
		cf.inventory = inventoryFlag(fs)
	}
	return cf
}

// budgetCap is budget --cap: the contract with its handover inventory
// and any --add what-ifs, the caps that make the target fit, printed and
// written; exit 2 when no caps can make it fit.
func budgetCap(c *contract.Contracts, dir string, adds []addition, cf *capFlags, stdout, stderr io.Writer, fs *flag.FlagSet) int {
	if cf.minShare <= 0 || cf.minShare > 1 {
		return fail(stderr, "budget", fs, cli.Usagef("--cap-min %v: want a share of the design draw above 0 and at most 1, such as 0.4", cf.minShare))
	}
	var paths []string
	if cf.inventory != nil {
		paths = cf.inventory.paths()
	}
	hd, err := c.ReadInventory(paths)
	if err != nil {
		return fail(stderr, "budget", fs, err)
	}
	g, gd := c.Graph()
	if errs := append(hd, gd...); g == nil || errs.Count(diag.Error) > 0 {
		diag.Text(stderr, errs.Sorted().Rebase(cli.RelDir(dir)))
		return cli.ExitFindings
	}
	site := capping.SiteOf(c, g, cf.minShare)
	var what []string
	for _, a := range adds {
		s, err := a.apply(c)
		if err != nil {
			return fail(stderr, "budget", fs, err)
		}
		what = append(what, s)
		site.RackW[a.Rack] = rackW(c, a.Rack)
		site.Nodes = append(site.Nodes, addedNodes(site, a)...)
	}
	limits, err := capping.Limits(c, contract.Budget(c), cf.target)
	if err != nil {
		return fail(stderr, "budget", fs, fmt.Errorf("--cap: %w", err))
	}
	if len(what) > 0 {
		fmt.Fprintln(stdout, "WHAT IF: "+strings.Join(what, "; "))
	}
	p, err := capping.Compute(site, cf.target, limits, capping.DefaultModel)
	if errors.Is(err, capping.ErrInfeasible) {
		fmt.Fprintf(stdout, "does not fit: %v\n", err)
		return cli.ExitFindings
	}
	if err != nil {
		return fail(stderr, "budget", fs, fmt.Errorf("--cap: %w", err))
	}
	writeCaps(stdout, p)
	if cf.out != "" {
		f := capping.FileOf(site.Name, p)
		f.Caps = f.Caps[:0:0]
		for _, cp := range p.Caps {
			if cp.BMC != "" {
				f.Caps = append(f.Caps, cp)
			}
		}
		if err := os.WriteFile(cf.out, f.Marshal(), 0o644); err != nil {
			return fail(stderr, "budget", fs, err)
		}
		fmt.Fprintf(stdout, "\n%d caps written to %s (sat cap apply --site BINDING --evidence DIR %s; --dry-run first to see each PATCH)\n", len(f.Caps), cf.out, cf.out)
		if n := len(p.Caps) - len(f.Caps); n > 0 {
			fmt.Fprintf(stdout, "%d node(s) not in the inventory (added by --add, or without a BMC) are not in it: cap them when they are installed\n", n)
		}
	}
	return cli.ExitOK
}

func rackW(c *contract.Contracts, rack string) float64 {
	for _, m := range c.Site.Modules {
		for _, r := range m.Racks {
			if r.ID == rack {
				return r.DesignPower.Canon * 1000
			}
		}
	}
	return 0
}

// addedNodes are the nodes --add RACK=N nodes puts in a rack: like its
// first node (design draw, range, scale-up domain), without a BMC.
func addedNodes(s *capping.Site, a addition) []capping.Node {
	var like *capping.Node
	for i := range s.Nodes {
		if s.Nodes[i].Rack == a.Rack {
			like = &s.Nodes[i]
			break
		}
	}
	if like == nil || a.Nodes == 0 {
		return nil
	}
	var out []capping.Node
	for i := range a.Nodes {
		n := *like
		n.Key = fmt.Sprintf("%s/added-%d", a.Rack, i+1)
		n.Name, n.BMC, n.BMCAddress = n.Key, "", ""
		out = append(out, n)
	}
	return out
}

func writeCaps(w io.Writer, p *capping.Plan) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "CAPS: %s\n", p.Target)
	fmt.Fprintln(tw, "limit\tunit lost\tuncapped\tcapped\tlimit\theadroom\tstatus")
	for _, l := range p.Limits {
		lost := l.Lost
		if lost == "" {
			lost = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", l.What, lost, kw(l.UncappedW/1000), kw(l.CappedW/1000), kw(l.LimitW/1000),
			kw((l.LimitW-l.CappedW)/1000), status(l.CappedW <= l.LimitW+1e-6))
	}
	tw.Flush()
	if !p.Needed {
		fmt.Fprintf(w, "\nfits uncapped: no caps needed on %s\n", p.Target)
		return
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "scale-up domain\tnodes\tcap\tdesign\trange\tpower\tthroughput (cube law)\tat worst (linear)")
	for _, d := range p.Domains {
		fmt.Fprintf(tw, "%s\t%d\t%s W\t%s W\t%s..%s W\t%s\t%s\t%s\n", d.Domain, len(d.Nodes), thousands(d.CapW), thousands(d.DesignW),
			thousands(d.MinW), thousands(d.MaxW), pct(d.PowerShare), pct(d.Throughput), pct(d.Linear))
	}
	tw.Flush()
	fmt.Fprintf(w, "\nbinding limit: %s\n", p.Binding)
	fmt.Fprintf(w, "one cap per scale-up domain: a synchronous job runs at its slowest rank's speed.\n")
	fmt.Fprintf(w, "model: %s of a node's draw is not the GPUs' and stays; GPU throughput ∝ (GPU power)^⅓ (DVFS), at worst ∝ GPU power (docs/capping.md)\n",
		pct(p.Model.OtherShare))
}

func pct(share float64) string { return fmt.Sprintf("%.1f %%", math.Round(share*1000)/10) }
