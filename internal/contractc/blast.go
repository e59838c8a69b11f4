package contractc

import (
	"cmp"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/seamdc/seam/internal/cli"
	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/cueload"
	"github.com/seamdc/seam/internal/diag"
	"github.com/seamdc/seam/internal/inventory"
	"github.com/seamdc/seam/internal/topology/hostlist"
)

func init() {
	register("blast", "what a failure stops and degrades, over power, cooling and networks (exit 2: it stops nodes)", runBlast).
		WithExample("contractc blast contracts/examples/threemodule l1/loop")
}

func runBlast(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("DIR ELEMENT [ELEMENT…] [--what-if] [--format text|json] [--inventory FILE…]", flag.ContinueOnError)
	whatIf := fs.Bool("what-if", false, "the elements fail together (default: one blast radius each)")
	format := formatFlag(fs)
	inv := inventoryFlag(fs)
	pos, err := cli.Parse(fs, args)
	if err == nil && len(pos) < 2 {
		err = cli.Usagef("want a contract directory and at least one element, got %d arguments", len(pos))
	}
	if err == nil {
		err = checkFormat(*format)
	}
	if err != nil {
		return fail(stderr, "blast", fs, err)
	}
	g, err := loadGraph(pos[0], inv.paths(), stderr)
	if err != nil {
		return failLoad(stderr, "blast", fs, err)
	}
	var ids []inventory.ID
	for _, name := range pos[1:] {
		id, err := findElement(g, name)
		if err != nil {
			return fail(stderr, "blast", fs, err)
		}
		ids = append(ids, id)
	}
	var impacts []inventory.Impact
	if *whatIf {
		impacts = append(impacts, inventory.Blast(g, ids...))
	} else {
		for _, id := range ids {
			impacts = append(impacts, inventory.Blast(g, id))
		}
	}
	if *format == "json" {
		err = writeJSON(stdout, impacts)
	} else {
		err = writeImpacts(stdout, g, impacts)
	}
	if err != nil {
		return fail(stderr, "blast", fs, err)
	}
	if slices.ContainsFunc(impacts, inventory.Impact.Stops) {
		return cli.ExitFindings
	}
	return cli.ExitOK
}

// formatFlag adds --format text|json to fs.
func formatFlag(fs *flag.FlagSet) *string {
	return fs.String("format", "text", "output format: text, json")
}

func checkFormat(format string) error {
	if format != "text" && format != "json" {
		return cli.Usagef("--format: unknown format %q (want text or json)", format)
	}
	return nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// errInvalid is a contract or inventory with errors, printed already.
var errInvalid = errors.New("the contract or its inventory has errors")

// loadGraph loads a contract directory and its handover inventories
// into the inventory graph. Their errors are printed to stderr and come
// back as errInvalid: a graph of a broken contract would answer wrong.
func loadGraph(dir string, inventories []string, stderr io.Writer) (*inventory.Graph, error) {
	c, diags, err := contract.Load(dir)
	if err != nil {
		return nil, err
	}
	var g *inventory.Graph
	if c != nil && diags.Count(diag.Error) == 0 {
		hd, err := c.ReadInventory(inventories)
		if err != nil {
			return nil, err
		}
		diags = append(diags, hd...)
		if diags.Count(diag.Error) == 0 {
			var gd diag.List
			g, gd = c.Graph()
			diags = append(diags, gd...)
		}
	}
	if g == nil || diags.Count(diag.Error) > 0 {
		var errs diag.List
		for _, d := range diags {
			if d.Severity == diag.Error {
				errs = append(errs, d)
			}
		}
		diag.Text(stderr, errs.Sorted().Rebase(cli.RelDir(dir)))
		return nil, fmt.Errorf("%w: fix them first (contractc vet %s)", errInvalid, dir)
	}
	return g, nil
}

// failLoad reports a graph that could not be loaded: exit 2 for a
// contract with errors, 1 for a tool failure.
func failLoad(stderr io.Writer, name string, fs *flag.FlagSet, err error) int {
	if errors.Is(err, errInvalid) {
		fmt.Fprintf(stderr, "contractc %s: %v\n", name, err)
		return cli.ExitFindings
	}
	return fail(stderr, name, fs, err)
}

// findElement resolves what a person calls an element, or says what it
// wanted and the closest names the site has.
func findElement(g *inventory.Graph, name string) (inventory.ID, error) {
	switch ids := g.FindAll(name); {
	case len(ids) == 1:
		return ids[0], nil
	case len(ids) > 1:
		return inventory.None, g.Ambiguous(name, ids)
	}
	var names []string
	for i := range g.Len() {
		e := g.El(inventory.ID(i))
		names = append(names, e.Key)
		if n := e.Names; n != nil {
			names = append(names, n.Slurm, n.Kubernetes, n.BMC)
		}
	}
	msg := fmt.Sprintf("no element %q in site %s: name an element by its key (such as ma/r01/compute-03, p1/block/a or l1/loop/cdu-2), "+
		"a node by its Slurm, Kubernetes or BMC name, or a part by its serial", name, g.Site.Name)
	if close := closest(name, names); len(close) > 0 {
		msg += "; did you mean " + strings.Join(close, " or ") + "?"
	}
	return inventory.None, errors.New(msg)
}

// closest are up to three of names nearest to name, quoted.
func closest(name string, names []string) []string {
	found := cueload.Closest(name, names)
	slices.Sort(found)
	found = slices.Compact(found)
	var out []string
	for _, f := range found[:min(len(found), 3)] {
		if f != "" {
			out = append(out, fmt.Sprintf("%q", f))
		}
	}
	return out
}

func writeImpacts(w io.Writer, g *inventory.Graph, impacts []inventory.Impact) error {
	for i, imp := range impacts {
		if i > 0 {
			fmt.Fprintln(w)
		}
		if err := writeImpact(w, g, imp); err != nil {
			return err
		}
	}
	return nil
}

// writeImpact renders one blast radius for people: what failed, what
// stops and why, what runs on degraded.
func writeImpact(w io.Writer, g *inventory.Graph, imp inventory.Impact) error {
	var failed []string
	for _, k := range imp.Failed {
		id, _ := g.Lookup(k)
		failed = append(failed, fmt.Sprintf("%s (%s)", k, g.El(id).Kind))
	}
	together := ""
	if len(failed) > 1 {
		together = ", failing together"
	}
	fmt.Fprintf(w, "BLAST %s%s\n", strings.Join(failed, " + "), together)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if !imp.Stops() {
		fmt.Fprintln(tw, "stops: nothing")
	} else {
		fmt.Fprintf(tw, "stops: %s (%s), %s, %s, %s\n", count(len(imp.Nodes), "node"), count(imp.GPUs, "GPU"), count(len(imp.Racks), "rack"),
			count(len(imp.Domains), "scale-up domain"), count(len(imp.Modules), "module"))
		for _, l := range []struct {
			what string
			keys []string
		}{{"modules", imp.Modules}, {"racks", imp.Racks}, {"scale-up domains", imp.Domains}, {"nodes", nodeNames(imp.Nodes)}} {
			if len(l.keys) > 0 {
				fmt.Fprintf(tw, "  %s\t%s\n", l.what, strings.Join(l.keys, " "))
			}
		}
		fmt.Fprintln(tw, "because:")
		for _, c := range imp.Causes {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", c.Key, c.Kind, c.Reason, count(c.Nodes, "node"))
		}
	}
	if len(imp.Degraded) == 0 {
		fmt.Fprintln(tw, "degraded: nothing")
	} else {
		fmt.Fprintf(tw, "degraded (%d): run on with less redundancy, capacity or reach\n", len(imp.Degraded))
		for _, d := range imp.Degraded {
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", d.Key, d.Kind, d.Reason)
		}
	}
	return tw.Flush()
}

func count(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// nodeNames are stopped nodes as a Slurm host list (keys for nodes
// without a Slurm name).
func nodeNames(nodes []inventory.StoppedNode) []string {
	var names []string
	for _, n := range nodes {
		names = append(names, cmp.Or(n.Slurm, n.Key))
	}
	if len(names) == 0 {
		return nil
	}
	return []string{hostlist.Compress(names)}
}
