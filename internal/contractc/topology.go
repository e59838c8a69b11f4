package contractc

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/seamdc/seam/internal/cli"
	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/diag"
	"github.com/seamdc/seam/internal/topology"
)

func init() {
	register("topology", "scheduler topology from the inventory (Slurm, Kubernetes, Kueue); topology apply, topology drift", runTopology).
		WithExample("contractc topology contracts/examples/threemodule -o topology.conf").
		Sub("apply", "write the topology to Slurm (topology.conf, reconfigured) or to the Kubernetes node labels (--dry-run: print the changes)",
			"contractc topology apply contracts/examples/threemodule --slurm-conf /etc/slurm/slurm.conf --dry-run").
		Sub("drift", "compare the live Slurm or Kubernetes topology with the inventory (exit 2 on drift)",
			"contractc topology drift contracts/examples/threemodule --slurm")
}

const topologyExits = `Exit codes: 0 written (apply: applied, unchanged or a dry run); 1 the tool
failed: bad arguments, an input that cannot make a topology (named by node
or line), an apply refused or rolled back; 2 drift (topology drift only).`

// topoFlags are the flags that say which topology to build, shared by
// topology, topology apply and topology drift.
type topoFlags struct {
	records, leaf, root, generation, fabric, prefix, name *string
	zone                                                  *bool
	inv                                                   *handoverPaths
}

func addTopoFlags(fs *flag.FlagSet) *topoFlags {
	return &topoFlags{
		records:    fs.String("records", "", "build from the design brief's node records (a JSON array) instead of a contract directory"),
		inv:        inventoryFlag(fs),
		leaf:       fs.String("leaf", "rack", "what a leaf switch (and a base block) is: rack or domain (scale-up domain)"),
		root:       fs.String("root", topology.DefaultRoot, "the root switch's name"),
		generation: fs.String("generation", "", "with --records: every node's hardware generation (the records do not say)"),
		fabric:     fs.String("fabric", "", "a network-derived topology.conf (ibnetdiscover, slurmibtopology): its leaves, under the inventory's modules"),
		prefix:     fs.String("label-prefix", topology.DefaultLabelPrefix, "the prefix of seam's node labels (topology.example.com gives the design brief's)"),
		zone:       fs.Bool("zone-label", false, "also set topology.kubernetes.io/zone to the module (opt-in: spread constraints, CSI and cloud controllers act on it)"),
		name:       fs.String("name", "seam", "the Kueue Topology's name, and topology.yaml's entries' prefix"),
	}
}

// source checks the positional arguments against --records: one
// contract directory, or none with --records.
func (f *topoFlags) source(pos []string) (string, error) {
	switch {
	case *f.records != "" && len(pos) > 0:
		return "", cli.Usagef("give a contract directory or --records, not both")
	case *f.records != "":
		if len(f.inv.paths()) > 0 {
			return "", cli.Usagef("--inventory needs a contract directory; --records is the whole input")
		}
		return "--records " + cli.RelDir(*f.records), nil
	case len(pos) != 1:
		return "", cli.Usagef("want one contract directory (or --records FILE), got %d arguments", len(pos))
	case *f.generation != "":
		return "", cli.Usagef("--generation is for --records: a contract's modules carry their generation")
	}
	if *f.leaf != string(topology.LeafRack) && *f.leaf != string(topology.LeafDomain) {
		return "", cli.Usagef("--leaf %q: want rack or domain", *f.leaf)
	}
	return cli.RelDir(pos[0]), nil
}

// errInput is an input that cannot make a topology; its problems are
// printed already.
var errInput = errors.New("the input cannot make a topology")

// build builds the topology the flags ask for.
func (f *topoFlags) build(pos []string, stderr io.Writer) (*topology.Topology, error) {
	opts := topology.Options{Leaf: topology.LeafKind(*f.leaf), Root: *f.root}
	if opts.Leaf != topology.LeafRack && opts.Leaf != topology.LeafDomain {
		return nil, cli.Usagef("--leaf %q: want rack or domain", *f.leaf)
	}
	var t *topology.Topology
	var err error
	if *f.records != "" {
		recs, diags, rerr := topology.ReadRecords(*f.records)
		if len(diags) > 0 {
			diag.Text(stderr, diags.Sorted())
		}
		if rerr != nil {
			return nil, rerr
		}
		t, err = topology.FromRecords(strings.TrimSuffix(filepath.Base(*f.records), ".json"), recs, topology.RecordOptions{Options: opts, Generation: *f.generation})
		if diags.Count(diag.Error) > 0 {
			return nil, errors.Join(fmt.Errorf("%w: %s has errors", errInput, *f.records), err)
		}
	} else {
		t, err = f.fromContract(pos[0], opts, stderr)
	}
	if err != nil {
		return nil, err
	}
	if *f.fabric != "" {
		b, err := os.ReadFile(*f.fabric)
		if err != nil {
			return nil, fmt.Errorf("fabric tree: %w", err)
		}
		conf, err := topology.ParseConf(cli.RelDir(*f.fabric), b)
		if err != nil {
			return nil, err
		}
		return topology.MergeFabric(t, conf)
	}
	return t, nil
}

func (f *topoFlags) fromContract(dir string, opts topology.Options, stderr io.Writer) (*topology.Topology, error) {
	c, diags, err := contract.Load(dir)
	if err != nil {
		return nil, err
	}
	if c != nil && diags.Count(diag.Error) == 0 {
		hd, err := c.ReadInventory(f.inv.paths())
		if err != nil {
			return nil, err
		}
		diags = append(diags, hd...)
	}
	if c == nil || diags.Count(diag.Error) > 0 {
		diag.Text(stderr, errorsOnly(diags).Sorted().Rebase(cli.RelDir(dir)))
		return nil, fmt.Errorf("%w: the contract or its inventory has errors (contractc vet %s)", errInput, dir)
	}
	g, gd := c.Graph()
	if gd.Count(diag.Error) > 0 {
		diag.Text(stderr, errorsOnly(gd).Sorted().Rebase(cli.RelDir(dir)))
		return nil, fmt.Errorf("%w: the inventory does not join the contract (contractc vet %s)", errInput, dir)
	}
	return topology.FromGraph(g, topology.GraphOptions{Options: opts, RackNames: topology.RackNames(g, c.Handovers)})
}

func errorsOnly(l diag.List) diag.List {
	var out diag.List
	for _, d := range l {
		if d.Severity == diag.Error {
			out = append(out, d)
		}
	}
	return out
}

func (f *topoFlags) renderOptions(format string) topology.RenderOptions {
	return topology.RenderOptions{Format: format, LabelPrefix: *f.prefix, ZoneLabel: *f.zone, Name: *f.name}
}

func logger(stderr io.Writer, verbose bool) *slog.Logger {
	level := slog.LevelWarn
	if verbose {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
}

func warn(stderr io.Writer, name string, warnings []string) {
	for _, w := range warnings {
		fmt.Fprintf(stderr, "contractc %s: warning: %s\n", name, w)
	}
}

func runTopology(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "apply":
			return runTopologyApply(args[1:], stdout, stderr)
		case "drift":
			return runTopologyDrift(args[1:], stdout, stderr)
		}
	}
	fs := flag.NewFlagSet("DIR|--records FILE --format "+strings.Join(topology.Formats, "|")+" [-o FILE]\n       contractc topology apply …\n       contractc topology drift …", flag.ContinueOnError)
	format := fs.String("format", topology.FormatSlurmTree, "output: "+strings.Join(topology.Formats, ", "))
	output := fs.String("o", "", "write to FILE (default: standard output)")
	yamlDefault := fs.String("yaml-default", "tree", "slurm-yaml: the cluster_default topology, tree or block")
	tf := addTopoFlags(fs)
	pos, err := cli.Parse(fs, args)
	var src string
	if err == nil {
		src, err = tf.source(pos)
	}
	if err == nil && !slices.Contains(topology.Formats, *format) {
		err = cli.Usagef("--format %q: want one of %s", *format, strings.Join(topology.Formats, ", "))
	}
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printFlags(stderr, "topology", fs)
			fmt.Fprintln(stderr, topologyExits)
			return cli.ExitOK
		}
		return fail(stderr, "topology", fs, err)
	}
	t, err := tf.build(pos, stderr)
	if err != nil {
		return fail(stderr, "topology", fs, err)
	}
	o := tf.renderOptions(*format)
	o.YAMLDefault = *yamlDefault
	o.Command = "contractc topology " + src + " --format " + *format
	out, err := topology.Render(t, o)
	if err != nil {
		return fail(stderr, "topology", fs, err)
	}
	warn(stderr, "topology", out.Warnings)
	if *output == "" {
		_, err = stdout.Write(out.Text)
	} else {
		err = os.WriteFile(*output, out.Text, 0o644)
	}
	if err != nil {
		return fail(stderr, "topology", fs, err)
	}
	if *output != "" {
		fmt.Fprintf(stdout, "wrote %s: %s topology of %s\n", *output, *format, t.Summary())
	}
	return cli.ExitOK
}
