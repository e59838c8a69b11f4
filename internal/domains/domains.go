// Package domains is the failure-domain cost of a placement: how many
// interruptions a month a job sees from the failure domains it spans,
// from its own GPUs and nodes and from the site, what they cost it in
// minutes and GPU-hours, the checkpoint interval that minimises the
// cost (Young 1974, Daly 2006) and what a fixed interval costs against
// it, and placement advice: the largest job one domain holds, the jobs
// that must span and what spanning costs, the generation mixes it
// refuses, and which part of a job's loss placement can change.
//
// The model is pure: failure domains with their compute (FromGraph
// reads them from the inventory), rates and job profiles in, a Report
// out. docs/domains.md states the model, its assumptions and sources.
package domains

import (
	"cmp"
	"slices"
	"time"

	"github.com/seamdc/seam/internal/inventory"
)

// Month is what every rate counts per: 30 days.
const Month = 720 * time.Hour

// Rates are interruptions per Month.
type Rates struct {
	// Domain is each failure domain's (its IT modules with their power
	// and cooling: the design brief's "about one a month").
	Domain float64
	// Domains are the failure domains whose rate differs from Domain.
	Domains map[string]float64
	// GPU and Node are per GPU and per node of a job: faults no
	// placement avoids (Llama 3 405B's 419 in 54 days on 16,384 GPUs).
	GPU, Node float64
	// Site stops every job at once (a utility outage, the control plane).
	Site float64
}

// Of is the rate of failure domain name.
func (r Rates) Of(name string) float64 {
	if v, ok := r.Domains[name]; ok {
		return v
	}
	return r.Domain
}

// Domain is a failure domain that holds compute.
type Domain struct {
	Name    string   `json:"name"`
	Modules []string `json:"modules"` // its IT modules, sorted
	Pools   []Pool   `json:"pools"`   // its compute by generation, sorted
}

// Pool is a domain's compute of one hardware generation.
type Pool struct {
	Generation string `json:"generation"`
	Nodes      int    `json:"nodes"`
	GPUs       int    `json:"gpus"`
}

// Pool returns the domain's compute of generation gen.
func (d *Domain) Pool(gen string) Pool {
	for _, p := range d.Pools {
		if p.Generation == gen {
			return p
		}
	}
	return Pool{Generation: gen}
}

// FromGraph reads the failure domains that hold compute from the
// inventory: each node (compute tray) with its GPUs, in the failure
// domain and generation of its IT module. Nodes of a module with no
// failure domain form a domain named after the module.
func FromGraph(g *inventory.Graph) []Domain {
	type key struct{ domain, gen string }
	type module struct{ key, fd, gen string }
	pools := map[key]*Pool{}
	modules := map[string]map[string]bool{}
	byID := map[inventory.ID]module{}
	for _, n := range g.OfKind(inventory.KindCompute) {
		mid := g.Ancestor(n, inventory.KindModule)
		if mid == inventory.None {
			continue
		}
		mod, ok := byID[mid]
		if !ok {
			mod = module{key: g.El(mid).Key, fd: g.El(mid).Key}
			if m := g.Site.Module(mod.key); m != nil {
				mod.fd, mod.gen = cmp.Or(m.FailureDomain, mod.key), m.Generation
			}
			byID[mid] = mod
		}
		mkey, fd, gen := mod.key, mod.fd, mod.gen
		p := pools[key{fd, gen}]
		if p == nil {
			p = &Pool{Generation: gen}
			pools[key{fd, gen}] = p
		}
		p.Nodes++
		p.GPUs += inventory.NodeGPUs(g, n)
		if modules[fd] == nil {
			modules[fd] = map[string]bool{}
		}
		modules[fd][mkey] = true
	}
	var out []Domain
	for fd, ms := range modules {
		d := Domain{Name: fd}
		for m := range ms {
			d.Modules = append(d.Modules, m)
		}
		slices.Sort(d.Modules)
		for k, p := range pools {
			if k.domain == fd {
				d.Pools = append(d.Pools, *p)
			}
		}
		slices.SortFunc(d.Pools, func(a, b Pool) int { return cmp.Compare(a.Generation, b.Generation) })
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b Domain) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// Job is a job profile.
type Job struct {
	Name string `json:"name"`
	GPUs int    `json:"gpus"`
	// Interval runs from the start of one checkpoint to the start of the
	// next (the write included); Write is one checkpoint's write, during
	// which the job does no work; Restart runs from an interruption to
	// the job running again (detect, reschedule, load the checkpoint).
	Interval time.Duration `json:"-"`
	Write    time.Duration `json:"-"`
	Restart  time.Duration `json:"-"`
	// Generation keeps the job on one generation ("": the one that
	// holds it in the fewest domains).
	Generation string `json:"generation,omitempty"`
	// Where is where the profile was declared, for messages.
	Where string `json:"where,omitempty"`
}
