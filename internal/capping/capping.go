// Package capping computes per-node power caps that make a constrained
// part of the site (a rack's PDUs, a PDU, a feed, a block; with one unit
// lost where the budget has one) fit its limit. Caps are uniform across
// a scale-up domain, because a synchronous training job runs at the
// speed of its slowest rank: one node capped lower than its peers slows
// every collective of the domain, so a domain's nodes share one cap.
// Each cap is clamped to the node's allowed range, and the plan states
// what it costs: the share of the uncapped power and the throughput a
// performance model gives for it (docs/capping.md). Pure: no I/O.
package capping

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
)

// Node is one compute node that a cap can be set on.
type Node struct {
	Name       string  // its Slurm name, for messages
	Key        string  // its inventory key: ma/r01/compute-03
	Rack       string  // ma/r01
	Domain     string  // its scale-up domain's key; "": a domain of its own
	BMC        string  // its BMC's name
	BMCAddress string  // where the inventory says its BMC answers
	DesignW    float64 // its uncapped (design) draw, W
	MinW, MaxW float64 // the range a cap may take, W
}

// Site is what caps act on: the nodes and every rack's design load.
type Site struct {
	Name  string
	Nodes []Node
	// RackW is each rack's design load (W), its nodes' included: what
	// is not a node's (switches, shelves' losses, fans) stays as it is.
	RackW map[string]float64
}

// Limit is one limit the target must fit: a breaker's continuous limit
// or a block's rating, and the share of each rack's load it carries
// (a PDU of two carries half its rack, all of it with the other lost).
type Limit struct {
	What   string // "PDU ma/r01/a"
	Lost   string // the unit lost ("" none): "the rack's other PDU"
	LimitW float64
	Share  map[string]float64 // rack → share of its load
}

// Name is the limit as a person says it.
func (l Limit) Name() string {
	if l.Lost == "" {
		return l.What
	}
	return l.What + " with " + l.Lost + " lost"
}

// Model is the performance model: a node's draw is OtherShare of its
// design draw that caps do not touch (CPUs, NICs, fans) and the GPUs'
// share, which a cap lowers; GPU throughput goes as the clock, and the
// clock as the cube root of the GPU power (dynamic power P ∝ f·V² with
// V roughly ∝ f under DVFS, so P ∝ f³). Linear (throughput ∝ GPU
// power) is the pessimistic bound, reported beside it.
type Model struct {
	OtherShare float64 // of the design draw; default 0.125
}

// DefaultModel is the model contractc budget --cap states.
var DefaultModel = Model{OtherShare: 0.125}

// Throughput is the share of the uncapped throughput at a cap of capW
// on a node of designW: by the cube law and by the linear bound.
func (m Model) Throughput(capW, designW float64) (cube, linear float64) {
	if designW <= 0 || capW >= designW {
		return 1, 1
	}
	other := m.OtherShare * designW
	g := math.Max(capW-other, 0) / (designW - other)
	return math.Cbrt(g), g
}

// Plan is the caps for a target.
type Plan struct {
	Target string
	// Needed is false when the target fits uncapped (no caps).
	Needed bool
	// Fraction is the share of each domain's design draw its cap is,
	// before clamping to the domain's range.
	Fraction float64
	Limits   []Check
	Binding  string // the limit with the least headroom once capped
	Domains  []DomainCap
	Caps     []Cap // by node key
	Model    Model
}

// Check is one limit before and after the caps.
type Check struct {
	Limit
	UncappedW, CappedW float64
}

// DomainCap is the one cap of a scale-up domain and what it costs.
type DomainCap struct {
	Domain     string
	Nodes      []string // names
	CapW       float64
	DesignW    float64
	MinW, MaxW float64
	PowerShare float64 // CapW / DesignW
	Throughput float64 // the cube law's share of the uncapped throughput
	Linear     float64 // the linear bound's
}

// Cap is one node's cap: what sat cap apply writes.
type Cap struct {
	Node       string  `json:"node"`
	Key        string  `json:"key"`
	Domain     string  `json:"domain,omitempty"`
	BMC        string  `json:"bmc"`
	BMCAddress string  `json:"bmc_address,omitempty"`
	Watts      float64 `json:"watts"`
	MinW       float64 `json:"min_watts"`
	MaxW       float64 `json:"max_watts"`
	DesignW    float64 `json:"design_watts"`
}

// ErrInfeasible is what Compute returns when even every node at its
// lowest cap does not fit a limit.
var ErrInfeasible = errors.New("caps cannot make it fit")

// domain is a scale-up domain under computation.
type domain struct {
	key            string
	nodes          []int // indices into Site.Nodes
	design, lo, hi float64
	perRack        map[string]int
	coef           []float64 // per limit: W of load per W of the domain's cap
}

func (d *domain) capAt(f float64) float64 { return math.Min(math.Max(f*d.design, d.lo), d.hi) }

// Compute finds the largest uniform fraction of the design draw whose
// caps (one per scale-up domain, clamped to its range) fit every limit.
// Domains with a node on a rack that any limit carries are capped, all
// their nodes, wherever they sit.
func Compute(s *Site, target string, limits []Limit, m Model) (*Plan, error) {
	if len(limits) == 0 {
		return nil, fmt.Errorf("target %s: no limit to fit (it has no breaker or rating in the contract)", target)
	}
	doms, err := domains(s, limits)
	if err != nil {
		return nil, fmt.Errorf("target %s: %w", target, err)
	}
	if len(doms) == 0 {
		return nil, fmt.Errorf("target %s: no node of the inventory is on it, so no cap can lower its load", target)
	}
	base := fixedLoads(s, limits)
	load := func(f float64) []float64 {
		out := slices.Clone(base)
		for _, d := range doms {
			c := d.capAt(f)
			for i, k := range d.coef {
				out[i] += k * c
			}
		}
		return out
	}
	uncapped := slices.Clone(base)
	for _, d := range doms {
		for _, n := range d.nodes {
			nd := s.Nodes[n]
			for i, l := range limits {
				uncapped[i] += l.Share[nd.Rack] * nd.DesignW
			}
		}
	}
	p := &Plan{Target: target, Model: m, Fraction: 1}
	fits := func(ls []float64) int {
		for i, l := range ls {
			if l > limits[i].LimitW+1e-6 {
				return i
			}
		}
		return -1
	}
	if fits(uncapped) < 0 {
		p.Limits = checks(limits, uncapped, uncapped)
		return p, nil
	}
	if i := fits(load(0)); i >= 0 {
		lo := load(0)
		n := 0
		for _, d := range doms {
			n += len(d.nodes)
		}
		return nil, fmt.Errorf("target %s: %s: %w: with all %d nodes of its %d scale-up domain(s) at their lowest cap the load is %.1f kW, above its limit of %.1f kW; take load off it (fewer nodes or racks) instead",
			target, limits[i].Name(), ErrInfeasible, n, len(doms), lo[i]/1000, limits[i].LimitW/1000)
	}
	a, b := 0.0, 1.0
	for range 60 {
		mid := (a + b) / 2
		if fits(load(mid)) < 0 {
			a = mid
		} else {
			b = mid
		}
	}
	p.Needed, p.Fraction = true, a
	capped := slices.Clone(base)
	for _, d := range doms {
		c := math.Max(math.Floor(d.capAt(a)), math.Ceil(d.lo))
		for i, k := range d.coef {
			capped[i] += k * c
		}
		p.Domains = append(p.Domains, domainCap(s, d, c, m))
		for _, n := range d.nodes {
			nd := s.Nodes[n]
			p.Caps = append(p.Caps, Cap{Node: nd.Name, Key: nd.Key, Domain: nd.Domain, BMC: nd.BMC, BMCAddress: nd.BMCAddress,
				Watts: c, MinW: nd.MinW, MaxW: nd.MaxW, DesignW: nd.DesignW})
		}
	}
	slices.SortFunc(p.Caps, func(x, y Cap) int { return strings.Compare(x.Key, y.Key) })
	p.Limits = checks(limits, uncapped, capped)
	best := math.Inf(1)
	for _, c := range p.Limits {
		if h := c.LimitW - c.CappedW; h < best {
			best, p.Binding = h, c.Name()
		}
	}
	return p, nil
}

func checks(limits []Limit, uncapped, capped []float64) []Check {
	out := make([]Check, len(limits))
	for i, l := range limits {
		out[i] = Check{Limit: l, UncappedW: uncapped[i], CappedW: capped[i]}
	}
	return out
}

func domainCap(s *Site, d *domain, c float64, m Model) DomainCap {
	dc := DomainCap{Domain: d.key, CapW: c, DesignW: d.design, MinW: d.lo, MaxW: d.hi, PowerShare: c / d.design}
	dc.Throughput, dc.Linear = m.Throughput(c, d.design)
	for _, n := range d.nodes {
		dc.Nodes = append(dc.Nodes, s.Nodes[n].Name)
	}
	return dc
}

// domains groups the nodes of the racks the limits carry by scale-up
// domain (every node of such a domain, on any rack), with each domain's
// range: the highest minimum and lowest maximum of its nodes, so that
// one cap is valid on all of them.
func domains(s *Site, limits []Limit) ([]*domain, error) {
	onTarget := map[string]bool{}
	for _, l := range limits {
		for r, sh := range l.Share {
			if sh > 0 {
				onTarget[r] = true
			}
		}
	}
	key := func(n Node) string {
		if n.Domain == "" {
			return "node " + n.Key
		}
		return n.Domain
	}
	want := map[string]bool{}
	for _, n := range s.Nodes {
		if onTarget[n.Rack] {
			want[key(n)] = true
		}
	}
	by := map[string]*domain{}
	var out []*domain
	for i, n := range s.Nodes {
		k := key(n)
		if !want[k] {
			continue
		}
		d := by[k]
		if d == nil {
			d = &domain{key: k, lo: math.Inf(-1), hi: math.Inf(1), perRack: map[string]int{}}
			by[k] = d
			out = append(out, d)
		}
		if n.DesignW <= 0 || n.MinW <= 0 || n.MaxW < n.MinW {
			return nil, fmt.Errorf("node %s (%s): design draw %.0f W and cap range %.0f..%.0f W: want a design draw above 0 and 0 < min ≤ max",
				n.Name, n.Key, n.DesignW, n.MinW, n.MaxW)
		}
		d.nodes = append(d.nodes, i)
		d.design = math.Max(d.design, n.DesignW)
		d.lo, d.hi = math.Max(d.lo, n.MinW), math.Min(d.hi, n.MaxW)
		d.perRack[n.Rack]++
	}
	slices.SortFunc(out, func(a, b *domain) int { return strings.Compare(a.key, b.key) })
	for _, d := range out {
		if d.lo > d.hi {
			return nil, fmt.Errorf("scale-up domain %s: its nodes' cap ranges do not overlap (the highest minimum %.0f W is above the lowest maximum %.0f W), so no one cap suits them all",
				d.key, d.lo, d.hi)
		}
		d.coef = make([]float64, len(limits))
		for i, l := range limits {
			for r, c := range d.perRack {
				d.coef[i] += l.Share[r] * float64(c)
			}
		}
	}
	return out, nil
}

// fixedLoads is each limit's load that caps do not change: the racks'
// design loads less their capped nodes' design draws.
func fixedLoads(s *Site, limits []Limit) []float64 {
	nodeW := map[string]float64{}
	for _, n := range s.Nodes {
		nodeW[n.Rack] += n.DesignW
	}
	out := make([]float64, len(limits))
	for i, l := range limits {
		for r, sh := range l.Share {
			out[i] += sh * (s.RackW[r] - nodeW[r])
		}
	}
	return out
}
