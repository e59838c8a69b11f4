package burnin

import (
	"fmt"

	"github.com/seamdc/seam/internal/inventory"
	"github.com/seamdc/seam/internal/topology"
)

// NodesFrom lists the topology's nodes (Slurm names) with their rack,
// module, tray serial and GPU model (its GPUs' model, else the tray's)
// from the inventory graph, keeping only those in modules (all when
// modules is empty).
func NodesFrom(top *topology.Topology, g *inventory.Graph, modules ...string) ([]Node, error) {
	want := map[string]bool{}
	for _, m := range modules {
		want[m] = true
	}
	var out []Node
	for _, n := range top.Nodes() {
		if len(want) > 0 && !want[n.Module] {
			continue
		}
		if n.Slurm == "" {
			return nil, fmt.Errorf("node %s has no Slurm name: burn-in runs through Slurm", n.From)
		}
		nd := Node{Name: n.Slurm, Rack: n.Rack, Module: n.Module}
		if id, ok := g.Lookup(n.From); ok {
			if e := g.El(id); e.Identity != nil {
				nd.Serial, nd.GPUModel = e.Identity.Serial, e.Identity.Model
			}
			for _, c := range g.Children(id) {
				if e := g.El(c); e.Kind == inventory.KindGPU && e.Identity != nil && e.Identity.Model != "" {
					nd.GPUModel = e.Identity.Model
					break
				}
			}
		}
		out = append(out, nd)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no nodes in module(s) %v", modules)
	}
	return out, nil
}
