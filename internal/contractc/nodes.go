package contractc

import (
	"cmp"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/seamdc/seam/internal/cli"
	"github.com/seamdc/seam/internal/inventory"
	"github.com/seamdc/seam/internal/topology/hostlist"
)

func init() {
	register("nodes", "list nodes by failure domain, block, feed, loop, rack, scale-up domain or generation", runNodes).
		WithExample("contractc nodes contracts/examples/threemodule --by loop")
}

func runNodes(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("DIR --by "+strings.Join(inventory.Groupings, "|")+" [--format text|json] [--inventory FILE…]", flag.ContinueOnError)
	by := fs.String("by", "", "group nodes by: "+strings.Join(inventory.Groupings, ", "))
	format := formatFlag(fs)
	inv := inventoryFlag(fs)
	pos, err := cli.Parse(fs, args)
	switch {
	case err != nil:
	case len(pos) != 1:
		err = cli.Usagef("want one contract directory, got %d arguments", len(pos))
	case !slices.Contains(inventory.Groupings, *by):
		err = cli.Usagef("--by %q: want one of %s", *by, strings.Join(inventory.Groupings, ", "))
	default:
		err = checkFormat(*format)
	}
	if err != nil {
		return fail(stderr, "nodes", fs, err)
	}
	g, err := loadGraph(pos[0], inv.paths(), stderr)
	if err != nil {
		return failLoad(stderr, "nodes", fs, err)
	}
	groups, err := inventory.NodesBy(g, *by)
	if err != nil {
		return fail(stderr, "nodes", fs, err)
	}
	out := nodeGroups{By: *by, Groups: []nodeGroup{}}
	for _, gr := range groups {
		ng := nodeGroup{Key: gr.Key, Nodes: []nodeRef{}}
		for _, n := range gr.Nodes {
			e := g.El(n)
			ref := nodeRef{Key: e.Key}
			if e.Names != nil {
				ref.Slurm, ref.Kubernetes = e.Names.Slurm, e.Names.Kubernetes
			}
			ng.Nodes = append(ng.Nodes, ref)
			ng.GPUs += inventory.NodeGPUs(g, n)
		}
		out.Groups = append(out.Groups, ng)
	}
	if *format == "json" {
		err = writeJSON(stdout, out)
	} else {
		err = writeNodeGroups(stdout, out)
	}
	if err != nil {
		return fail(stderr, "nodes", fs, err)
	}
	return cli.ExitOK
}

type nodeGroups struct {
	By     string      `json:"by"`
	Groups []nodeGroup `json:"groups"`
}

type nodeGroup struct {
	Key   string    `json:"key"`
	GPUs  int       `json:"gpus"`
	Nodes []nodeRef `json:"nodes"`
}

type nodeRef struct {
	Key        string `json:"key"`
	Slurm      string `json:"slurm,omitempty"`
	Kubernetes string `json:"kubernetes,omitempty"`
}

func writeNodeGroups(w io.Writer, ng nodeGroups) error {
	total := map[string]bool{}
	for _, gr := range ng.Groups {
		for _, n := range gr.Nodes {
			total[n.Key] = true
		}
	}
	fmt.Fprintf(w, "NODES by %s: %s, %s\n", ng.By, count(len(ng.Groups), "group"), count(len(total), "node"))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, gr := range ng.Groups {
		names := make([]string, len(gr.Nodes))
		for i, n := range gr.Nodes {
			names[i] = cmp.Or(n.Slurm, n.Key)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", gr.Key, count(len(gr.Nodes), "node"), count(gr.GPUs, "GPU"), hostlist.Compress(names))
	}
	return tw.Flush()
}
