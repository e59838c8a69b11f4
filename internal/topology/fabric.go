package topology

import (
	"fmt"
	"slices"
	"strings"
)

// MergeFabric takes the leaves of a network-derived tree (a
// topology.conf from ibnetdiscover, slurmibtopology or the like: on a
// rail-optimised fabric one leaf switch spans many racks) and puts them
// under seam's module level: a fabric leaf whose nodes are all in one
// module goes under that module; one whose nodes span modules goes
// under the root, with a warning (jobs on it are not kept in a module).
// The fabric's switches above its leaves are replaced by the modules.
// Inventory nodes on no fabric leaf keep seam's leaf; fabric nodes the
// inventory does not know stay on their leaf, with a warning, so that
// Slurm still reaches them.
func MergeFabric(t *Topology, fabric *Conf) (*Topology, error) {
	if len(fabric.Switches) == 0 {
		return nil, fmt.Errorf("%s: no SwitchName lines: a fabric tree is a topology/tree topology.conf", fabric.Source)
	}
	if err := CheckTree(fabric.Switches, nil); err != nil {
		return nil, fmt.Errorf("%s: %w", fabric.Source, err)
	}
	byName := map[string]*Node{}
	for _, n := range t.Nodes() {
		byName[n.Slurm] = n
	}
	out := &Topology{Site: t.Site, Leaf: t.Leaf, Root: t.Root, Fabric: fabric.Source, Warnings: slices.Clone(t.Warnings)}
	modules := map[string]*Module{}
	for _, m := range t.Modules {
		nm := &Module{Name: m.Name, Generation: m.Generation, FailureDomain: m.FailureDomain}
		modules[m.Name] = nm
		out.Modules = append(out.Modules, nm)
	}
	placed := map[string]bool{}
	uppers := 0
	var unknown []string
	for _, sw := range fabric.Switches {
		if len(sw.Nodes) == 0 {
			uppers++
			continue
		}
		l := &Leaf{Name: sw.Name}
		in := map[string]bool{}
		for _, name := range sw.Nodes {
			n := byName[name]
			if n == nil {
				unknown = append(unknown, name)
				n = &Node{Slurm: name, Kubernetes: name, Leaf: sw.Name, From: fmt.Sprintf("%s:%d", fabric.Source, sw.Line)}
			} else {
				in[n.Module] = true
				c := *n
				c.Leaf = sw.Name
				n = &c
			}
			placed[name] = true
			l.Nodes = append(l.Nodes, n)
		}
		mods := sortedSet(in)
		if len(mods) == 1 {
			l.Module = mods[0]
			modules[mods[0]].Leaves = append(modules[mods[0]].Leaves, l)
			continue
		}
		what := "no node of the inventory"
		if len(mods) > 1 {
			what = "nodes of modules " + strings.Join(mods, ", ")
		}
		out.Warnings = append(out.Warnings, fmt.Sprintf("fabric leaf %s (%s:%d) holds %s: it goes under %s, and jobs on it are not kept in one module", sw.Name, fabric.Source, sw.Line, what, t.Root))
		out.Loose = append(out.Loose, l)
	}
	if uppers > 0 {
		out.Warnings = append(out.Warnings, fmt.Sprintf("the inventory's modules replace the fabric's %s above its leaves", plural(uppers, "switch")))
	}
	if len(unknown) > 0 {
		out.Warnings = append(out.Warnings, fmt.Sprintf("%s outside the inventory, kept on their leaves: %s", plural(len(unknown), "fabric node"), strings.Join(firstN(unknown, 6), ", ")))
	}
	var missing []string
	for _, m := range t.Modules {
		for _, l := range m.Leaves {
			var rest []*Node
			for _, n := range l.Nodes {
				if !placed[n.Slurm] {
					rest = append(rest, n)
					missing = append(missing, n.Slurm)
				}
			}
			if len(rest) > 0 {
				modules[m.Name].Leaves = append(modules[m.Name].Leaves, &Leaf{Name: l.Name, Module: m.Name, Nodes: rest})
			}
		}
	}
	if len(missing) > 0 {
		out.Warnings = append(out.Warnings, fmt.Sprintf("%s on no fabric leaf, kept on the inventory's leaf: %s", plural(len(missing), "inventory node"), strings.Join(firstN(missing, 6), ", ")))
	}
	var p problems
	checkSwitchNames(&p, out)
	seen := map[string]bool{}
	for _, l := range out.Loose {
		if seen[l.Name] || out.Module(l.Name) != nil {
			p.add("fabric leaf %s has the name of another switch", l.Name)
		}
		seen[l.Name] = true
	}
	if err := p.err(); err != nil {
		return nil, fmt.Errorf("merging %s: %w", fabric.Source, err)
	}
	out.sort()
	return out, nil
}

func sortedSet(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
