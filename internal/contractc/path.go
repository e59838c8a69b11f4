package contractc

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/seamdc/seam/internal/cli"
	"github.com/seamdc/seam/internal/inventory"
	"github.com/seamdc/seam/internal/units"
)

func init() {
	register("path", "print the power and cooling paths of a node, up to its feeds and loop", runPath).
		WithExample("contractc path contracts/examples/threemodule gpu-a-r01-n01")
}

func runPath(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("DIR NODE [--format text|json] [--inventory FILE…]", flag.ContinueOnError)
	format := formatFlag(fs)
	inv := inventoryFlag(fs)
	pos, err := cli.Parse(fs, args)
	if err == nil && len(pos) != 2 {
		err = cli.Usagef("want a contract directory and a node, got %d arguments", len(pos))
	}
	if err == nil {
		err = checkFormat(*format)
	}
	if err != nil {
		return fail(stderr, "path", fs, err)
	}
	g, err := loadGraph(pos[0], inv.paths(), stderr)
	if err != nil {
		return failLoad(stderr, "path", fs, err)
	}
	id, err := findElement(g, pos[1])
	if err != nil {
		return fail(stderr, "path", fs, err)
	}
	p := inventory.PathOf(g, id)
	if *format == "json" {
		err = writeJSON(stdout, p)
	} else {
		err = writePath(stdout, p)
	}
	if err != nil {
		return fail(stderr, "path", fs, err)
	}
	return cli.ExitOK
}

// writePath renders a path for people: each branch on a line from the
// node up, then each hop once with what matters of it.
func writePath(w io.Writer, p inventory.Path) error {
	name := p.Key
	if p.Slurm != "" {
		name += " (" + p.Slurm + ")"
	}
	fmt.Fprintf(w, "PATH %s: %s", name, p.Kind)
	if p.PowerW > 0 {
		fmt.Fprintf(w, ", %s", watts(p.PowerW))
	}
	fmt.Fprintln(w)
	var seen []inventory.Hop
	at := map[string]bool{}
	for _, part := range []struct {
		what     string
		branches []inventory.Branch
	}{{"power", p.Power}, {"cooling", p.Cooling}} {
		if len(part.branches) == 0 {
			fmt.Fprintf(w, "%s: none\n", part.what)
			continue
		}
		fmt.Fprintf(w, "%s: %s\n", part.what, branches(len(part.branches)))
		for _, b := range part.branches {
			var hops []string
			for _, h := range b {
				hops = append(hops, hopName(h))
				if !at[hopName(h)] {
					at[hopName(h)] = true
					seen = append(seen, h)
				}
			}
			fmt.Fprintf(w, "  %s\n", strings.Join(hops, " ← "))
		}
	}
	if len(seen) == 0 {
		return nil
	}
	fmt.Fprintln(w, "along them:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, h := range seen {
		kind, rating := h.Kind, ""
		if h.Count > 0 {
			kind = count(h.Count, strings.ToUpper(h.Kind))
		}
		if h.PowerW > 0 {
			rating = watts(h.PowerW)
		}
		fmt.Fprintln(tw, row("  "+h.Key, kind, rating, h.Note))
	}
	return tw.Flush()
}

// row joins cells for a tabwriter, leaving off empty cells at its end
// (they would pad the line with spaces).
func row(cells ...string) string {
	for len(cells) > 1 && cells[len(cells)-1] == "" {
		cells = cells[:len(cells)-1]
	}
	return strings.Join(cells, "\t")
}

func branches(n int) string {
	if n == 1 {
		return "1 branch"
	}
	return fmt.Sprintf("%d branches", n)
}

func hopName(h inventory.Hop) string {
	if h.Count > 0 {
		return fmt.Sprintf("%s (%s)", h.Key, count(h.Count, strings.ToUpper(h.Kind)))
	}
	return h.Key
}

// watts is a power for people: kW below a megawatt, MW from one.
func watts(w int64) string {
	if w >= 1_000_000 {
		return units.Format(float64(w)/1e6, "MW")
	}
	return units.Format(float64(w)/1e3, "kW")
}
