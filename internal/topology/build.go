package topology

import (
	"fmt"
	"slices"
	"strings"

	"github.com/seamdc/seam/internal/inventory"
)

// GraphOptions shape a topology built from the inventory graph.
type GraphOptions struct {
	Options
	// RackNames are the racks' names as the integrator wrote them (rack
	// key "ma/r01" → "a-r01"); a rack not in it is called
	// "<module>-<rack id>". RackNames derives them from the handovers.
	RackNames map[string]string
}

// FromGraph builds the topology of an inventory graph: each compute
// tray is a node, under its rack (or its scale-up domain) under its
// module; names are the trays' Slurm and Kubernetes names.
func FromGraph(g *inventory.Graph, o GraphOptions) (*Topology, error) {
	var nodes []*Node
	var p problems
	powers := powerBlocks(g)
	for _, id := range g.OfKind(inventory.KindCompute) {
		e := g.El(id)
		n := &Node{From: e.Key}
		if e.Names != nil {
			n.Slurm, n.Kubernetes = e.Names.Slurm, e.Names.Kubernetes
		}
		if n.Kubernetes == "" {
			n.Kubernetes = n.Slurm
		}
		if n.Slurm == "" {
			p.add("%s: a compute tray with no Slurm name in the handover inventory", e.Key)
			continue
		}
		mod, rack := g.Ancestor(id, inventory.KindModule), g.Ancestor(id, inventory.KindRack)
		if mod == inventory.None || rack == inventory.None {
			p.add("%s: node %s is in no rack of an IT module", e.Key, n.Slurm)
			continue
		}
		mkey, rkey := g.El(mod).Key, g.El(rack).Key
		n.Module, n.Rack = mkey, rackName(rkey, o.RackNames)
		if m := g.Site.Module(mkey); m != nil {
			n.Generation = m.Generation
			if r := m.Rack(strings.TrimPrefix(rkey, mkey+"/")); r != nil {
				n.PowerBlock, n.Loop = powers[r], moduleOf(r.CooledBy.To)
			}
		}
		for _, d := range g.Out(inventory.Connects, id) {
			if g.El(d).Kind == inventory.KindScaleUpDomain {
				n.Domain = domainName(g.El(d).Key, mkey, rkey, n.Rack)
			}
		}
		nodes = append(nodes, n)
	}
	if err := p.err(); err != nil {
		return nil, err
	}
	t, err := assemble(g.Site.Name, nodes, o.Options)
	if err != nil {
		return nil, err
	}
	for _, m := range t.Modules {
		if sm := g.Site.Module(m.Name); sm != nil {
			m.FailureDomain = sm.FailureDomain
		}
	}
	return t, nil
}

// rackName is a rack's name: the integrator's, else module-rack id.
func rackName(key string, names map[string]string) string {
	if n, ok := names[key]; ok && n != "" {
		return n
	}
	return strings.ReplaceAll(key, "/", "-")
}

// domainName names a scale-up domain: a rack's own domain by its rack,
// a declared one ("ma/scale-up/d01") as "ma-d01".
func domainName(key, module, rackKey, rack string) string {
	if key == rackKey+"/scale-up" {
		return rack
	}
	return module + "-" + strings.TrimPrefix(key, module+"/scale-up/")
}

// moduleOf is the module part of a reference ("l1/loop" → "l1").
func moduleOf(ref string) string {
	m, _, _ := strings.Cut(ref, "/")
	return m
}

// powerBlocks names each rack's power block as the design brief does:
// the power module ("p1"), or "p1-<block>" when the module has several
// blocks; a rack fed from two blocks carries both, joined by '_'.
func powerBlocks(g *inventory.Graph) map[*inventory.Rack]string {
	blocksOf := map[string]int{}
	for _, m := range g.Site.Modules {
		blocksOf[m.ID] = len(m.Blocks)
	}
	out := map[*inventory.Rack]string{}
	for _, m := range g.Site.Modules {
		for _, r := range m.Racks {
			var names []string
			for _, pdu := range r.PDUs {
				parts := strings.Split(pdu.Feed.To, "/")
				name := parts[0]
				if blocksOf[parts[0]] > 1 && len(parts) > 1 {
					name = parts[0] + "-" + parts[1]
				}
				if name != "" && !slices.Contains(names, name) {
					names = append(names, name)
				}
			}
			slices.Sort(names)
			out[r] = strings.Join(names, "_")
		}
	}
	return out
}

// RackNames maps rack keys to the names the handovers give them: the
// per-rack form's name, the brief's records' rack. A handover rack is
// matched as the inventory matches it: by position, else by a name
// that is a rack id, else by the rack id its name ends with after a
// dash.
func RackNames(g *inventory.Graph, hs []*inventory.Handover) map[string]string {
	out := map[string]string{}
	resolve := func(module, name, position string) {
		for _, id := range []string{position, name, name[strings.LastIndex(name, "-")+1:]} {
			if id == "" {
				continue
			}
			key := module + "/" + id
			if e, ok := g.Lookup(key); ok && g.El(e).Kind == inventory.KindRack {
				if _, done := out[key]; !done {
					out[key] = name
				}
				return
			}
		}
	}
	for _, h := range hs {
		for _, r := range h.Racks {
			resolve(r.Module, r.Name, r.Position)
		}
		for _, n := range h.Nodes {
			resolve(n.Module, n.Rack, "")
		}
	}
	return out
}

// RecordOptions shape a topology built from the design brief's records.
type RecordOptions struct {
	Options
	// Generation is every node's hardware generation (the records do
	// not say); "" none.
	Generation string
}

// FromRecords builds the topology of the design brief's node records
// alone (no site contract): a leaf per rack (or nvlink_domain), a
// parent per module, the root.
func FromRecords(site string, recs []*inventory.NodeRecord, o RecordOptions) (*Topology, error) {
	nodes := make([]*Node, 0, len(recs))
	for i, r := range recs {
		from := r.Pos.String()
		if from == "-" {
			from = fmt.Sprintf("record %d", i+1)
		}
		nodes = append(nodes, &Node{Slurm: r.Node, Kubernetes: r.Node, Module: r.Module, Rack: r.Rack, Domain: r.NVLinkDomain,
			PowerBlock: r.PowerBlock, Loop: r.CoolingLoop, Generation: o.Generation, From: from})
	}
	return assemble(site, nodes, o.Options)
}
