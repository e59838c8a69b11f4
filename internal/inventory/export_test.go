package inventory

import "github.com/seamdc/seam/internal/diag"

// NewChecks runs the node, BMC and design-power checks of issue 36
// (INV022–INV024, INV026, INV027) over a graph, with the Slurm and
// Kubernetes uniqueness pass (INV017, INV018) they share a loop with,
// for BenchmarkNewChecks.
func NewChecks(g *Graph) diag.List {
	c := &checker{g: g}
	done := c.beside(func(bc *checker) {
		bc.bmcAddresses()
		bc.bmcNames()
	})
	c.names()
	c.designPower()
	return append(c.diags, done()...)
}

// UniqueNames is the Slurm and Kubernetes uniqueness pass alone, as it
// was before issue 36 (INV017, INV018): BenchmarkNewChecks's baseline,
// timed in the same process on the same graph.
func UniqueNames(g *Graph) diag.List {
	c := &checker{g: g}
	slurm, kube := map[string]ID{}, map[string]ID{}
	for _, id := range g.OfKind(KindCompute) {
		n := g.El(id).Names
		if n == nil {
			continue
		}
		for _, x := range []struct {
			rule, what, name string
			seen             map[string]ID
		}{{RuleSlurmName, "Slurm", n.Slurm, slurm}, {RuleKubeName, "Kubernetes", n.Kubernetes, kube}} {
			if x.name == "" {
				continue
			}
			if prev, ok := x.seen[x.name]; ok {
				c.diags.Errorf(x.rule, g.El(id).Pos, g.El(id).Key, "compute tray %s has %s name %s, as compute tray %s at %s has", g.El(id).Key,
					x.what, x.name, g.El(prev).Key, g.El(prev).Pos)
				continue
			}
			x.seen[x.name] = id
		}
	}
	return c.diags
}
