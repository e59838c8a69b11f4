package topology

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/seamdc/seam/internal/topology/hostlist"
	"github.com/seamdc/seam/internal/topology/names"
)

// The output formats.
const (
	FormatSlurmTree  = "slurm-tree"     // topology.conf, topology/tree
	FormatSlurmBlock = "slurm-block"    // topology.conf, topology/block
	FormatSlurmYAML  = "slurm-yaml"     // topology.yaml (Slurm 25.05+): the tree and the blocks
	FormatK8s        = "k8s"            // Node labels, a server-side-apply patch
	FormatKueue      = "kueue"          // Kueue Topology and a ResourceFlavor per generation
	FormatFeatures   = "slurm-features" // slurm.conf NodeName Features= per generation
)

// Formats lists the output formats.
var Formats = []string{FormatSlurmTree, FormatSlurmBlock, FormatSlurmYAML, FormatK8s, FormatKueue, FormatFeatures}

// DefaultLabelPrefix prefixes seam's node labels; with
// "topology.example.com" they are the design brief's sketch's.
const DefaultLabelPrefix = "topology.seam.io"

// FieldManager is the server-side-apply field manager seam's labels
// are applied with.
const FieldManager = "seam-topology"

// KueueAPIVersion is the API version of Kueue's Topology and
// ResourceFlavor in the release targeted (v0.17.0: v1beta2 is the
// storage version, v1beta1 deprecated).
const KueueAPIVersion = "kueue.x-k8s.io/v1beta2"

// RenderOptions shape an output.
type RenderOptions struct {
	Format      string
	LabelPrefix string // default DefaultLabelPrefix
	// ZoneLabel also sets topology.kubernetes.io/zone to the module: an
	// opt-in, since default spread constraints, CSI volume binding and
	// cloud controllers act on it.
	ZoneLabel bool
	// YAMLDefault is the topology.yaml entry with cluster_default: true,
	// "tree" (default) or "block".
	YAMLDefault string
	// Name names the Kueue Topology and the topology.yaml entries'
	// prefix; default "seam".
	Name string
	// Command is the command line that generated the output, for its
	// stamp.
	Command string
}

func (o RenderOptions) withDefaults() RenderOptions {
	if o.LabelPrefix == "" {
		o.LabelPrefix = DefaultLabelPrefix
	}
	if o.YAMLDefault == "" {
		o.YAMLDefault = "tree"
	}
	if o.Name == "" {
		o.Name = "seam"
	}
	return o
}

// Output is a rendered file and what its author should know.
type Output struct {
	Text     []byte
	Warnings []string
}

// Render writes the topology in a format, stamped.
func Render(t *Topology, o RenderOptions) (*Output, error) {
	o = o.withDefaults()
	var b strings.Builder
	var warnings []string
	switch o.Format {
	case FormatSlurmTree:
		writeTree(&b, t)
	case FormatSlurmBlock:
		p, err := PlanBlocks(t)
		if err != nil {
			return nil, err
		}
		writeBlocks(&b, t, p)
		warnings = p.Warnings
	case FormatSlurmYAML:
		w, err := writeSlurmYAML(&b, t, o)
		if err != nil {
			return nil, err
		}
		warnings = w
	case FormatK8s:
		if err := writeNodeLabels(&b, t, o); err != nil {
			return nil, err
		}
		if t.Fabric != "" {
			warnings = append(warnings, "node labels name racks and domains from the inventory; the fabric's leaves are not labels")
		}
	case FormatKueue:
		w, err := writeKueue(&b, t, o)
		if err != nil {
			return nil, err
		}
		warnings = w
	case FormatFeatures:
		w, err := writeFeatures(&b, t)
		if err != nil {
			return nil, err
		}
		warnings = w
	default:
		return nil, fmt.Errorf("unknown format %q (want one of %s)", o.Format, strings.Join(Formats, ", "))
	}
	warnings = append(append([]string{}, t.Warnings...), warnings...)
	return &Output{Text: stamp(o.Command, "site "+t.Site+": "+t.Summary(), []byte(b.String())), Warnings: warnings}, nil
}

// writeTree writes topology.conf for topology/tree.
func writeTree(b *strings.Builder, t *Topology) {
	if t.Fabric != "" {
		fmt.Fprintf(b, "# leaves from the fabric (%s), modules from the inventory\n", t.Fabric)
	}
	for _, sw := range t.Tree() {
		b.WriteString("SwitchName=")
		b.WriteString(sw.Name)
		if len(sw.Nodes) > 0 {
			b.WriteString(" Nodes=")
			hostlist.CompressTo(b, sw.Nodes)
		}
		if len(sw.Switches) > 0 {
			b.WriteString(" Switches=")
			hostlist.CompressTo(b, sw.Switches)
		}
		b.WriteByte('\n')
	}
}

// writeBlocks writes topology.conf for topology/block: blocks module by
// module, then BlockSizes.
func writeBlocks(b *strings.Builder, t *Topology, p *BlockPlan) {
	fmt.Fprintf(b, "# topology/block: Slurm aggregates consecutive blocks; listed module by module, BlockSizes level %s\n", levelNote(p))
	for _, m := range t.Modules {
		gen := ""
		if m.Generation != "" {
			gen = " (" + m.Generation + ")"
		}
		fmt.Fprintf(b, "# module %s%s: %d blocks\n", m.Name, gen, len(m.Leaves))
		for _, l := range m.Leaves {
			sw := leafSwitch(l)
			fmt.Fprintf(b, "BlockName=%s Nodes=", l.Name)
			hostlist.CompressTo(b, sw.Nodes)
			b.WriteByte('\n')
		}
	}
	b.WriteString("BlockSizes=")
	for i, s := range p.Sizes {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(s))
	}
	b.WriteByte('\n')
}

func levelNote(p *BlockPlan) string {
	if p.ModuleLevel < 0 {
		return "stops below a module (see the warnings)"
	}
	return fmt.Sprintf("%d is one module", p.Sizes[p.ModuleLevel])
}

// q quotes a YAML scalar (double-quoted; ASCII names need no more).
func q(s string) string { return strconv.Quote(s) }

// writeSlurmYAML writes topology.yaml: the tree and the blocks as two
// topologies, one the cluster default.
func writeSlurmYAML(b *strings.Builder, t *Topology, o RenderOptions) ([]string, error) {
	if o.YAMLDefault != "tree" && o.YAMLDefault != "block" {
		return nil, fmt.Errorf("topology.yaml default %q: want tree or block", o.YAMLDefault)
	}
	fmt.Fprintf(b, "- topology: %s\n  cluster_default: %t\n  tree:\n    switches:\n", q(o.Name+"-tree"), o.YAMLDefault == "tree")
	for _, sw := range t.Tree() {
		fmt.Fprintf(b, "      - switch: %s\n", q(sw.Name))
		if len(sw.Switches) > 0 {
			fmt.Fprintf(b, "        children: %s\n", q(hostlist.Compress(sw.Switches)))
		}
		if len(sw.Nodes) > 0 {
			fmt.Fprintf(b, "        nodes: %s\n", q(hostlist.Compress(sw.Nodes)))
		}
	}
	if len(t.Loose) > 0 {
		return []string{"topology.yaml holds only the tree: leaves spanning modules cannot be blocks"}, nil
	}
	p, err := PlanBlocks(t)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(b, "- topology: %s\n  cluster_default: %t\n  block:\n    block_sizes:\n", q(o.Name+"-block"), o.YAMLDefault == "block")
	for _, s := range p.Sizes {
		fmt.Fprintf(b, "      - %d\n", s)
	}
	b.WriteString("    blocks:\n")
	for _, l := range p.Blocks {
		fmt.Fprintf(b, "      - block: %s\n        nodes: %s\n", q(l.Name), q(hostlist.Compress(leafSwitch(l).Nodes)))
	}
	return p.Warnings, nil
}

// Label keys, after the prefix.
const (
	LabelModule     = "module"
	LabelPowerBlock = "power-block"
	LabelLoop       = "cooling-loop"
	LabelRack       = "rack"
	LabelDomain     = "scale-up-domain"
	LabelGeneration = "generation"
)

// ZoneLabel is Kubernetes' well-known zone label.
const ZoneLabel = "topology.kubernetes.io/zone"

// Labels are the labels seam sets on a node, by key; empty values are
// not set.
func Labels(n *Node, prefix string, zone bool) map[string]string {
	out := map[string]string{}
	for _, l := range newLabelKeys(prefix, zone).of(n, nil) {
		out[l.key] = l.value
	}
	return out
}

type label struct{ key, value string }

// labelKeys are the label keys with their prefix, built once.
type labelKeys struct {
	module, power, loop, rack, domain, generation string
	zone                                          bool
}

func newLabelKeys(prefix string, zone bool) *labelKeys {
	if prefix == "" {
		prefix = DefaultLabelPrefix
	}
	p := prefix + "/"
	return &labelKeys{module: p + LabelModule, power: p + LabelPowerBlock, loop: p + LabelLoop, rack: p + LabelRack,
		domain: p + LabelDomain, generation: p + LabelGeneration, zone: zone}
}

// of appends n's labels to buf, sorted by key.
func (k *labelKeys) of(n *Node, buf []label) []label {
	buf = buf[:0]
	add := func(key, v string) {
		if v != "" {
			buf = append(buf, label{key, v})
		}
	}
	add(k.loop, n.Loop)
	add(k.generation, n.Generation)
	add(k.module, n.Module)
	add(k.power, n.PowerBlock)
	add(k.rack, n.Rack)
	add(k.domain, n.Domain)
	if k.zone {
		add(ZoneLabel, n.Module)
		slices.SortFunc(buf, func(a, b label) int { return strings.Compare(a.key, b.key) })
	}
	return buf
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// writeNodeLabels writes a Node object per node with seam's labels
// only: applied with server-side apply and one field manager, a label
// seam stops setting (a rack moved to another module, a domain gone) is
// removed, which kubectl label --overwrite never does.
func writeNodeLabels(b *strings.Builder, t *Topology, o RenderOptions) error {
	fmt.Fprintf(b, `# Node labels from the inventory, as a server-side-apply patch. Apply with
#   kubectl apply --server-side --field-manager=%s --force-conflicts -f FILE
# One field manager owns these labels, so a label seam no longer sets is removed
# (kubectl label --overwrite never removes one). Apply only to nodes that exist:
# server-side apply creates a missing Node (contractc topology drift lists them).
# Labels alone place nothing: a scheduler must ask for them (Kueue TAS, --format kueue;
# pod affinity or topology spread constraints).
`, FieldManager)
	var p problems
	keys := newLabelKeys(o.LabelPrefix, o.ZoneLabel)
	var buf []label
	b.Grow(len(t.Nodes()) * 400)
	for _, n := range t.Nodes() {
		b.WriteString("---\napiVersion: v1\nkind: Node\nmetadata:\n  name: ")
		b.WriteString(n.Kubernetes)
		b.WriteString("\n  labels:\n")
		buf = keys.of(n, buf)
		for _, l := range buf {
			if err := checkLabelValue(l.value); err != nil {
				p.add("%s: node %s: label %s=%q: %v", n.From, n.Kubernetes, l.key, l.value, err)
			}
			b.WriteString("    ")
			b.WriteString(l.key)
			b.WriteString(": \"")
			b.WriteString(l.value) // label values need no escaping
			b.WriteString("\"\n")
		}
	}
	return p.err()
}

// writeKueue writes Kueue's Topology (module, leaf, host) and a
// ResourceFlavor per generation bound to it.
func writeKueue(b *strings.Builder, t *Topology, o RenderOptions) ([]string, error) {
	leafKey := LabelRack
	if t.Leaf == LeafDomain {
		leafKey = LabelDomain
	}
	fmt.Fprintf(b, `# Kueue topology-aware scheduling over seam's node labels (--format k8s).
# A job asks for one module with the annotation
#   kueue.x-k8s.io/podset-required-topology: %s/%s
# and lands on one generation through its ResourceFlavor.
---
apiVersion: %s
kind: Topology
metadata:
  name: %s
spec:
  levels:
    - nodeLabel: %s/%s
    - nodeLabel: %s/%s
    - nodeLabel: kubernetes.io/hostname
`, o.LabelPrefix, LabelModule, KueueAPIVersion, o.Name, o.LabelPrefix, LabelModule, o.LabelPrefix, leafKey)
	gens := generations(t)
	if len(gens) == 0 {
		return []string{"no generation is known (the records do not say; give --generation): no ResourceFlavor written"}, nil
	}
	for _, g := range gens {
		name := strings.ToLower(g)
		if err := names.DNSName(name); err != nil {
			return nil, fmt.Errorf("generation %q cannot name a ResourceFlavor: %v", g, err)
		}
		fmt.Fprintf(b, "---\napiVersion: %s\nkind: ResourceFlavor\nmetadata:\n  name: %s\nspec:\n  nodeLabels:\n    %s/%s: %s\n  topologyName: %s\n",
			KueueAPIVersion, name, o.LabelPrefix, LabelGeneration, q(g), o.Name)
	}
	return nil, nil
}

func generations(t *Topology) []string {
	var out []string
	for _, n := range t.Nodes() {
		if n.Generation != "" && !slices.Contains(out, n.Generation) {
			out = append(out, n.Generation)
		}
	}
	slices.Sort(out)
	return out
}

// Feature is the Slurm node feature of a hardware generation.
func Feature(generation string) string {
	var b strings.Builder
	b.WriteString("gen_")
	for _, c := range generation {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' {
			b.WriteRune(c)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// writeFeatures writes a NodeName line per module with its generation's
// feature.
func writeFeatures(b *strings.Builder, t *Topology) ([]string, error) {
	b.WriteString(`# Slurm node features for the hardware generation. Merge Features= into
# slurm.conf's NodeName lines (Slurm takes one definition per node); then
#   sbatch --constraint=<feature>
# keeps a job on one generation.
`)
	var warnings []string
	for _, m := range t.Modules {
		var names []string
		gens := map[string]bool{}
		for _, l := range m.Leaves {
			for _, n := range l.Nodes {
				names = append(names, n.Slurm)
				gens[n.Generation] = true
			}
		}
		if gens[""] {
			warnings = append(warnings, fmt.Sprintf("module %s: no generation known: no feature", m.Name))
			continue
		}
		fmt.Fprintf(b, "NodeName=%s Features=%s\n", hostlist.Compress(names), Feature(m.Generation))
	}
	return warnings, nil
}
