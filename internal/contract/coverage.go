package contract

import (
	"fmt"
	"math"

	"github.com/seamdc/seam/internal/diag"
	"github.com/seamdc/seam/internal/units"
)

// Rule ids for the inventory against the boundaries.
const (
	RuleNoBoundary = "REF007"
	RuleInventory  = "INV001"
)

// relation is one module serving another, where the inventory says so.
type relation struct {
	supplier, consumer, medium string
	what                       string // "power block p1/block powers ma"
	pos                        diag.Pos
}

// checkCoverage reports a module that powers, cools or serves another
// without a boundary between them: a joint nobody has a contract for.
func checkCoverage(c *Contracts, idx *index, diags *diag.List) {
	have := map[string]bool{}
	for _, b := range c.Boundaries {
		have[b.Supplier.To+">"+b.Consumer.To+">"+b.Medium] = true
	}
	seen := map[string]bool{}
	for _, r := range relations(c, idx) {
		key := r.supplier + ">" + r.consumer + ">" + r.medium
		if r.supplier == r.consumer || have[key] || seen[key] || c.Site.Module(r.consumer) == nil {
			continue
		}
		seen[key] = true
		diags.Errorf(RuleNoBoundary, r.pos, "site", "%s, but no %s boundary joins %s to %s: nobody owns this joint", r.what, r.medium, r.supplier, r.consumer).Hint =
			fmt.Sprintf("add boundaries: \"%s-%s\": {supplier: %q, consumer: %q, medium: %q, ...} with its clauses", r.supplier, r.consumer, r.supplier, r.consumer, r.medium)
	}
}

func relations(c *Contracts, idx *index) []relation {
	var out []relation
	for _, m := range c.Site.Modules {
		for _, b := range m.Blocks {
			for _, p := range b.Powers {
				out = append(out, relation{m.ID, p.To, "electrical", "power block " + b.ID + " powers " + p.To, p.Pos})
			}
		}
		for _, l := range m.Loops {
			for _, p := range l.Cools {
				out = append(out, relation{m.ID, p.To, "liquid", "cooling loop " + l.ID + " cools " + p.To, p.Pos})
			}
		}
		for _, n := range m.Networks {
			for _, s := range n.Serves {
				out = append(out, relation{m.ID, s.To, "controls", "network " + n.ID + " serves " + s.To, s.Pos})
			}
		}
		for _, r := range m.Racks {
			if l, ok := idx.loops[r.CooledBy.To]; ok {
				out = append(out, relation{l.Module, m.ID, "liquid", "rack " + r.ID + " is cooled by " + l.ID, r.CooledBy.Pos})
			}
			for _, p := range r.PDUs {
				if f, ok := idx.feeds[p.Feed.To]; ok {
					out = append(out, relation{f.Block.Module, m.ID, "electrical", "PDU " + p.ID + " hangs on feed " + f.ID, p.Feed.Pos})
				}
			}
		}
	}
	return out
}

// checkAgreement reports contract values that contradict the inventory
// they are measured at: a voltage or frequency band that excludes the
// block's nominal, a supply-temperature guarantee that excludes the
// loop's design supply temperature, a UPS ride-through guaranteed for
// longer than the UPS lasts.
func checkAgreement(c *Contracts, idx *index, diags *diag.List) {
	for _, b := range c.Boundaries {
		at := map[string]string{}
		dims := map[string]units.Dimension{}
		for _, ch := range b.Channels {
			at[ch.Name], dims[ch.Name] = ch.At.To, ch.Quantity
		}
		for _, s := range b.Steady {
			nominal, what := inventoryNominal(idx, at[s.Channel.To], dims[s.Channel.To])
			if !nominal.Set {
				continue
			}
			for _, side := range []struct {
				name string
				band Band
			}{{"guarantee", s.Guarantee}, {"require", s.Require}} {
				lo, hi, ok := side.band.Interval()
				if !side.band.Set || !ok || (nominal.Canon >= lo && nominal.Canon <= hi) {
					continue
				}
				d := diags.Errorf(RuleInventory, side.band.Pos, s.Path()+"."+side.name, "%s.%s: the band %s excludes the %s of %s: contract and inventory disagree",
					s.Path(), side.name, showRange(lo, hi, dims[s.Channel.To]), what, nominal.Raw)
				d.Related = []diag.Related{{Pos: nominal.Pos, Message: "the inventory's " + what}}
				d.Hint = "correct the inventory or the band: the channel measures that element"
			}
		}
		for _, f := range b.Failure {
			checkUPSRideThrough(f, idx, diags)
		}
	}
}

// inventoryNominal is the design value the inventory gives for a channel
// measured at element id.
func inventoryNominal(idx *index, id string, dim units.Dimension) (Q, string) {
	block := idx.blocks[id]
	if f, ok := idx.feeds[id]; ok {
		block = f.Block
	}
	switch {
	case block != nil && dim == units.Voltage:
		return block.Voltage, "nominal voltage of block " + block.ID
	case block != nil && dim == units.Frequency:
		return block.Frequency, "nominal frequency of block " + block.ID
	case idx.loops[id] != nil && dim == units.Temperature:
		return idx.loops[id].SupplyTemp, "design supply temperature of loop " + id
	}
	return Q{}, ""
}

func checkUPSRideThrough(f *Failure, idx *index, diags *diag.List) {
	g := f.Guarantee.RideThrough
	if f.Event != "ups_on_battery" || !g.Set {
		return
	}
	var feeds []*Feed
	if feed, ok := idx.feeds[f.Target.To]; ok {
		feeds = []*Feed{feed}
	} else if b, ok := idx.blocks[f.Target.To]; ok {
		feeds = b.Feeds
	}
	shortest, where := math.Inf(1), diag.Pos{}
	for _, feed := range feeds {
		if feed.UPS != nil && feed.UPS.RideThrough.Set && feed.UPS.RideThrough.Canon < shortest {
			shortest, where = feed.UPS.RideThrough.Canon, feed.UPS.RideThrough.Pos
		}
	}
	if len(feeds) > 0 && math.IsInf(shortest, 1) {
		diags.Errorf(RuleInventory, g.Pos, f.Path(), "%s: the guarantee rides through %s on battery, but %s has no UPS in the inventory", f.Path(), g.Raw, f.Target.To).Hint = "declare the UPS on the feed (ups: {rating, ride_through}) or remove the ride-through guarantee"
		return
	}
	if g.Canon > shortest {
		d := diags.Errorf(RuleInventory, g.Pos, f.Path(), "%s: the guarantee rides through %s on battery, but the UPS in the inventory lasts %s", f.Path(), g.Raw, units.Format(shortest/60, "min"))
		d.Related = []diag.Related{{Pos: where, Message: "the UPS's ride_through"}}
		d.Hint = "guarantee no more than the UPS gives, or declare the larger UPS in the inventory"
	}
}
