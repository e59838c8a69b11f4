package contractc

import (
	"cmp"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/seamdc/seam/internal/cli"
	"github.com/seamdc/seam/internal/inventory"
)

func init() {
	register("nodes", "list nodes by failure domain, block, feed, loop, rack, scale-up domain or generation", runNodes)
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
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", gr.Key, count(len(gr.Nodes), "node"), count(gr.GPUs, "GPU"), hostlist(names))
	}
	return tw.Flush()
}

// hostlist writes names as a Slurm host list: runs of names that differ
// only in a number of one width become prefix[01-18]; others stay as
// they are, comma-separated, sorted.
func hostlist(names []string) string {
	names = slices.Clone(names)
	slices.Sort(names)
	var out []string
	prefix, width := "", 0
	var nums []int
	flush := func() {
		switch len(nums) {
		case 0:
		case 1:
			out = append(out, fmt.Sprintf("%s%0*d", prefix, width, nums[0]))
		default:
			out = append(out, prefix+"["+ranges(nums, width)+"]")
		}
		nums = nil
	}
	for _, n := range names {
		i := len(n)
		for i > 0 && n[i-1] >= '0' && n[i-1] <= '9' {
			i--
		}
		v, err := strconv.Atoi(n[i:])
		if i == len(n) || err != nil {
			flush()
			out = append(out, n)
			continue
		}
		if len(nums) > 0 && (n[:i] != prefix || len(n)-i != width) {
			flush()
		}
		prefix, width = n[:i], len(n)-i
		nums = append(nums, v)
	}
	flush()
	return strings.Join(out, ",")
}

// ranges writes sorted numbers as 01-04,07.
func ranges(nums []int, width int) string {
	var parts []string
	for i := 0; i < len(nums); {
		j := i
		for j+1 < len(nums) && nums[j+1] == nums[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%0*d-%0*d", width, nums[i], width, nums[j]))
		} else {
			parts = append(parts, fmt.Sprintf("%0*d", width, nums[i]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}
