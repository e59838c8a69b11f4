// Package topology turns the inventory into the schedulers' view of the
// site: a tree of modules, their leaves (a rack, or a scale-up domain),
// and the nodes under each, built from the inventory graph or from the
// design brief's node records. It renders the tree as Slurm's
// topology.conf (tree and block plugins) and topology.yaml, as
// Kubernetes node labels (a server-side-apply patch) with Kueue's
// Topology and ResourceFlavors, and as Slurm node features; it merges a
// network-derived tree, compares the model with what a live scheduler
// runs (drift), and applies topology.conf to a running Slurm with a
// backup, a check and a rollback.
package topology

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"github.com/seamdc/seam/internal/topology/names"
)

// LeafKind is what a leaf switch (tree) or base block stands for.
type LeafKind string

// Leaf kinds.
const (
	LeafRack   LeafKind = "rack"   // one leaf per rack
	LeafDomain LeafKind = "domain" // one leaf per scale-up (NVLink) domain
)

// DefaultRoot is the root switch's name, the design brief's.
const DefaultRoot = "spine"

// MaxSwitchName is the longest switch name topology.conf(5) allows.
const MaxSwitchName = names.MaxSwitchName

// Topology is the site as a scheduler sees it: modules, their leaves,
// the nodes under each, and a root so that jobs can still span modules.
type Topology struct {
	Site    string // the site's name, or the records file's
	Leaf    LeafKind
	Root    string
	Modules []*Module // sorted by name
	// Loose are leaves under the root directly: fabric leaves whose
	// nodes sit in more than one module (see Merge).
	Loose []*Leaf
	// Fabric names the network-derived tree the leaves come from; "":
	// the leaves are the inventory's.
	Fabric   string
	Warnings []string
}

// Module is an IT module: one parent switch, one failure domain.
type Module struct {
	Name          string
	Generation    string
	FailureDomain string
	Leaves        []*Leaf // sorted by name
}

// Leaf is a leaf switch of the tree and a base block of the block
// plugin: the nodes of one rack or scale-up domain (or, merged, of one
// fabric leaf switch).
type Leaf struct {
	Name   string
	Module string  // "" for a loose leaf
	Nodes  []*Node // sorted by Slurm name
}

// Node is one compute tray and where it sits.
type Node struct {
	Slurm, Kubernetes string
	Module, Rack      string
	Domain            string // its scale-up domain; "" none
	PowerBlock, Loop  string
	Generation        string
	Leaf              string
	From              string // where it is declared: an element key, or file:line:col
}

// Options shape the tree.
type Options struct {
	Leaf LeafKind // default LeafRack
	Root string   // default DefaultRoot
}

func (o Options) withDefaults() Options {
	if o.Leaf == "" {
		o.Leaf = LeafRack
	}
	if o.Root == "" {
		o.Root = DefaultRoot
	}
	return o
}

// Nodes lists every node, module by module and leaf by leaf, loose
// leaves last.
func (t *Topology) Nodes() []*Node {
	var out []*Node
	for _, l := range t.Leaves() {
		out = append(out, l.Nodes...)
	}
	return out
}

// Leaves lists every leaf, module by module, loose leaves last.
func (t *Topology) Leaves() []*Leaf {
	var out []*Leaf
	for _, m := range t.Modules {
		out = append(out, m.Leaves...)
	}
	return append(out, t.Loose...)
}

// Module returns the module called name, or nil.
func (t *Topology) Module(name string) *Module {
	for _, m := range t.Modules {
		if m.Name == name {
			return m
		}
	}
	return nil
}

// Summary says how big the topology is, for stamps and logs.
func (t *Topology) Summary() string {
	racks := map[string]bool{}
	n := 0
	for _, node := range t.Nodes() {
		racks[node.Module+"/"+node.Rack] = true
		n++
	}
	return fmt.Sprintf("%d modules, %d racks, %d leaves, %d nodes", len(t.Modules), len(racks), len(t.Leaves()), n)
}

// problems collects errors, each naming the node or line, up to a bound.
type problems struct {
	errs []error
	more int
}

func (p *problems) add(format string, args ...any) {
	if len(p.errs) >= 25 {
		p.more++
		return
	}
	p.errs = append(p.errs, fmt.Errorf(format, args...))
}

func (p *problems) err() error {
	if p.more > 0 {
		p.errs = append(p.errs, fmt.Errorf("… and %d more problems", p.more))
	}
	return errors.Join(p.errs...)
}

// assemble groups nodes into modules and leaves and checks what the
// schedulers need: every node in a module and a rack, names Slurm and
// Kubernetes can take, no name twice, no rack or domain in two modules,
// switch names that do not collide.
func assemble(site string, nodes []*Node, o Options) (*Topology, error) {
	o = o.withDefaults()
	t := &Topology{Site: site, Leaf: o.Leaf, Root: o.Root}
	var p problems
	slurm, kube := map[string]*Node{}, map[string]*Node{}
	leafModule := map[string]*Node{} // leaf name → first node in it
	rackModule := map[string]*Node{}
	modules := map[string]*Module{}
	leaves := map[string]*Leaf{}
	for _, n := range nodes {
		checkNode(&p, n, slurm, kube)
		if n.Module == "" || n.Rack == "" {
			continue
		}
		if prev, ok := rackModule[n.Rack]; ok && prev.Module != n.Module {
			p.add("%s: rack %s of node %s is in module %s, but node %s (%s) puts rack %s in module %s: a rack name is one switch, in one module; name racks per module (a-r01, b-r01)",
				n.From, n.Rack, n.Slurm, n.Module, prev.Slurm, prev.From, n.Rack, prev.Module)
			continue
		}
		rackModule[n.Rack] = n
		n.Leaf = n.Rack
		if o.Leaf == LeafDomain && n.Domain != "" {
			n.Leaf = n.Domain
		}
		if prev, ok := leafModule[n.Leaf]; ok && prev.Module != n.Module {
			p.add("%s: scale-up domain %s of node %s is in module %s, but node %s (%s) puts it in module %s: a domain spanning modules cannot be one leaf under one module",
				n.From, n.Leaf, n.Slurm, n.Module, prev.Slurm, prev.From, prev.Module)
			continue
		}
		leafModule[n.Leaf] = n
		m := modules[n.Module]
		if m == nil {
			m = &Module{Name: n.Module, Generation: n.Generation}
			modules[n.Module] = m
			t.Modules = append(t.Modules, m)
		}
		l := leaves[n.Leaf]
		if l == nil {
			l = &Leaf{Name: n.Leaf, Module: n.Module}
			leaves[n.Leaf] = l
			m.Leaves = append(m.Leaves, l)
		}
		l.Nodes = append(l.Nodes, n)
	}
	checkSwitchNames(&p, t)
	if err := p.err(); err != nil {
		return nil, err
	}
	t.sort()
	return t, nil
}

func checkNode(p *problems, n *Node, slurm, kube map[string]*Node) {
	switch {
	case n.Slurm == "":
		p.add("%s: a node without a Slurm name", n.From)
		return
	case n.Module == "":
		p.add("%s: node %s is in no module", n.From, n.Slurm)
	case n.Rack == "":
		p.add("%s: node %s is in no rack: every node must hang off a leaf switch", n.From, n.Slurm)
	}
	// the one check contractc vet makes too (INV027), in its words
	for _, err := range names.Node(n.Slurm, n.Kubernetes) {
		p.add("%s: node %s: %v", n.From, n.Slurm, err)
	}
	if prev, ok := slurm[n.Slurm]; ok {
		p.add("%s: node %s is listed twice (first at %s): host names must be unique", n.From, n.Slurm, prev.From)
	} else {
		slurm[n.Slurm] = n
	}
	if prev, ok := kube[n.Kubernetes]; ok && n.Kubernetes != "" {
		if prev.Slurm != n.Slurm {
			p.add("%s: nodes %s and %s (%s) have one Kubernetes name, %s", n.From, n.Slurm, prev.Slurm, prev.From, n.Kubernetes)
		}
	} else {
		kube[n.Kubernetes] = n
	}
}

// checkSwitchNames: Slurm takes the leaf, module and root names as
// switch names; they must be valid and distinct from each other.
func checkSwitchNames(p *problems, t *Topology) {
	seen := map[string]string{}
	check := func(name, what string) {
		if err := names.Switch(name); err != nil { // vet's INV027 for a rack's name
			p.add("%s: %v", what, err)
		}
		if prev, ok := seen[name]; ok {
			p.add("%s and %s are both called %s: switch names must be unique", what, prev, name)
			return
		}
		seen[name] = what
	}
	check(t.Root, "the root switch")
	for _, m := range t.Modules {
		check(m.Name, "module "+m.Name)
	}
	for _, m := range t.Modules {
		for _, l := range m.Leaves {
			check(l.Name, fmt.Sprintf("leaf %s of module %s", l.Name, m.Name))
		}
	}
}

// sort orders modules, leaves and nodes by name.
func (t *Topology) sort() {
	slices.SortFunc(t.Modules, func(a, b *Module) int { return cmp.Compare(a.Name, b.Name) })
	for _, m := range t.Modules {
		sortLeaves(m.Leaves)
	}
	sortLeaves(t.Loose)
}

func sortLeaves(ls []*Leaf) {
	slices.SortFunc(ls, func(a, b *Leaf) int { return cmp.Compare(a.Name, b.Name) })
	for _, l := range ls {
		slices.SortFunc(l.Nodes, func(a, b *Node) int { return cmp.Compare(a.Slurm, b.Slurm) })
	}
}

// checkLabelValue checks a Kubernetes label value.
func checkLabelValue(s string) error {
	if len(s) > 63 {
		return fmt.Errorf("%d characters, more than 63", len(s))
	}
	for i, c := range s {
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		inner := c == '-' || c == '_' || c == '.'
		if !alnum && !(inner && i > 0 && i < len(s)-1) {
			return fmt.Errorf("%q at position %d: letters, digits, and '-', '_', '.' inside", c, i+1)
		}
	}
	return nil
}
