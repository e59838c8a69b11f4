package capping

import (
	"fmt"
	"slices"
	"strings"

	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/inventory"
)

// DefaultMinShare is the lowest cap assumed of a node's design draw
// when nothing says better: the inventory records no BMC's
// AllowableMin, so contractc plans with this share (the simulated
// fleet's, and in the range of a GPU's lowest power limit) and sat cap
// apply checks every cap against the range the BMC itself reports.
const DefaultMinShare = 0.4

// SiteOf is the capping site of a contract's inventory graph: every
// compute tray with its rack, scale-up domain (the domain it connects
// to), BMC and design draw, its range minShare..1 of the design draw;
// and every rack's design load from the contract (after any what-if).
func SiteOf(c *contract.Contracts, g *inventory.Graph, minShare float64) *Site {
	s := &Site{Name: c.Site.Name, RackW: map[string]float64{}}
	for _, m := range c.Site.Modules {
		for _, r := range m.Racks {
			s.RackW[r.ID] = r.DesignPower.Canon * 1000
		}
	}
	for _, id := range g.OfKind(inventory.KindCompute) {
		e := g.El(id)
		n := Node{Key: e.Key, Name: e.Key, DesignW: float64(e.PowerW), BMCAddress: e.BMCAddress}
		if r := g.Ancestor(id, inventory.KindRack); r != inventory.None {
			n.Rack = g.El(r).Key
		}
		for _, d := range g.Out(inventory.Connects, id) {
			if g.El(d).Kind == inventory.KindScaleUpDomain {
				n.Domain = g.El(d).Key
			}
		}
		if e.Names != nil {
			if e.Names.Slurm != "" {
				n.Name = e.Names.Slurm
			}
			n.BMC = e.Names.BMC
		}
		n.MinW, n.MaxW = float64(int64(n.DesignW*minShare+0.5)), n.DesignW
		s.Nodes = append(s.Nodes, n)
	}
	return s
}

// Limits are the limits of a target as contractc budget has them: a
// rack (its PDUs), a PDU, a feed or a block, each with every unit
// running and, where the design has one to lose, with one lost (the
// rack's other PDU; the block's other feed). An unknown target is an
// error naming what the site has.
func Limits(c *contract.Contracts, b contract.Budgets, target string) ([]Limit, error) {
	var out []Limit
	for _, p := range b.PDUs {
		if p.Limit == 0 || (p.PDU.ID != target && p.Rack.ID != target) {
			continue
		}
		n := float64(len(p.Rack.PDUs))
		out = append(out, Limit{What: "PDU " + p.PDU.ID, LimitW: p.Limit * 1000, Share: map[string]float64{p.Rack.ID: 1 / n}})
		if n > 1 {
			out = append(out, Limit{What: "PDU " + p.PDU.ID, Lost: "the rack's other PDU", LimitW: p.Limit * 1000, Share: map[string]float64{p.Rack.ID: 1 / (n - 1)}})
		}
	}
	racks := allRacks(c)
	for _, f := range b.Feeds {
		if f.Feed.ID != target || f.Limit == 0 {
			continue
		}
		out = append(out, Limit{What: "feed " + f.Feed.ID, LimitW: f.Limit * 1000, Share: feedShares(racks, f.Feed.ID, "")})
		if f.Feed.Block.Redundancy != "N" {
			for _, other := range f.Feed.Block.Feeds {
				if other != f.Feed {
					out = append(out, Limit{What: "feed " + f.Feed.ID, Lost: "feed " + other.ID, LimitW: f.Limit * 1000, Share: feedShares(racks, f.Feed.ID, other.ID)})
				}
			}
		}
	}
	for _, bb := range b.Blocks {
		if bb.Block.ID != target || !bb.Block.Rating.Set {
			continue
		}
		share := map[string]float64{}
		for _, r := range racks {
			for _, p := range r.PDUs {
				if strings.HasPrefix(p.Feed.To, bb.Block.ID+"/") {
					share[r.ID] = 1
				}
			}
		}
		out = append(out, Limit{What: "block " + bb.Block.ID, LimitW: bb.Block.Rating.Canon * 1000, Share: share})
	}
	if len(out) == 0 {
		return nil, unknownTarget(c, b, target)
	}
	return out, nil
}

func allRacks(c *contract.Contracts) []*contract.Rack {
	var out []*contract.Rack
	for _, m := range c.Site.Modules {
		out = append(out, m.Racks...)
	}
	return out
}

// feedShares is the share of each rack's load on feed with lost down,
// as the budget spreads it: evenly over the rack's live PDUs.
func feedShares(racks []*contract.Rack, feed, lost string) map[string]float64 {
	out := map[string]float64{}
	for _, r := range racks {
		live, on := 0, 0
		for _, p := range r.PDUs {
			if p.Feed.To != lost {
				live++
				if p.Feed.To == feed {
					on++
				}
			}
		}
		if live > 0 && on > 0 {
			out[r.ID] = float64(on) / float64(live)
		}
	}
	return out
}

func unknownTarget(c *contract.Contracts, b contract.Budgets, target string) error {
	var some []string
	for _, r := range allRacks(c) {
		if len(some) < 2 {
			some = append(some, r.ID)
		}
	}
	if len(b.PDUs) > 0 {
		some = append(some, b.PDUs[0].PDU.ID)
	}
	if len(b.Feeds) > 0 {
		some = append(some, b.Feeds[0].Feed.ID)
	}
	if len(b.Blocks) > 0 {
		some = append(some, b.Blocks[0].Block.ID)
	}
	slices.Sort(some)
	return fmt.Errorf("no rack, PDU, feed or block %q with a limit in site %s: name one by its id, such as %s", target, c.Site.Name, strings.Join(some, ", "))
}
