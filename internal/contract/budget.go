package contract

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/seamdc/seam/internal/diag"
	"github.com/seamdc/seam/internal/units"
)

// Budget rule ids.
const (
	RuleFeedOverload    = "BUDGET001"
	RuleRedundancy      = "BUDGET002"
	RuleBlockRating     = "BUDGET003"
	RulePDU             = "BUDGET004"
	RuleCoolingCapacity = "BUDGET005"
	RuleFlow            = "BUDGET006"
	RuleUPS             = "BUDGET007"
	RuleRedundancyUnits = "BUDGET008"
)

// DefaultDerating is the share of a breaker's rating that may carry
// continuous load when the breaker states no derating of its own: the US
// NEC's 80 %. A breaker's `derating` field overrides it (100 % for a
// breaker listed for continuous duty at its rating).
const DefaultDerating = 0.8

// ContinuousLimit is the one rule for a breaker's continuous limit, in kW:
// √3·V·I·PF × derating. vet, budget and the live headroom all use it.
func ContinuousLimit(amps, volts, pf, derating float64) float64 {
	return units.ThreePhaseKW(volts, amps, pf) * derating
}

// Budgets is the site's power and thermal budget.
type Budgets struct {
	Feeds  []FeedBudget
	Blocks []BlockBudget
	PDUs   []PDUBudget
	Loops  []LoopBudget
}

// FeedBudget is one feed: its load in normal operation and with the worst
// other feed of its block lost, against its breaker after derating.
type FeedBudget struct {
	Feed     *Feed
	Load     float64  // kW, all feeds healthy
	LoadLost float64  // kW, worst case with one other feed lost
	LostFeed string   // the feed whose loss is worst
	Limit    float64  // kW: √3·V·I·PF × Derating
	Derating float64  // the breaker's share for continuous load, 0-1
	Dropped  []string // racks whose every PDU is on this feed
	DropPos  diag.Pos // where the first of them names the feed
}

// Headroom is the limit less the load that redundancy says must fit.
func (f FeedBudget) Headroom() float64 { return f.Limit - f.Design() }

// Design is the load the feed must carry: with one feed lost when the
// block is redundant.
func (f FeedBudget) Design() float64 {
	if f.Feed.Block.Redundancy == "N" {
		return f.Load
	}
	return f.LoadLost
}

// BlockBudget is a power block's total load against its rating.
type BlockBudget struct {
	Block *Block
	Load  float64
}

// PDUBudget is a rack PDU: the rack's load on it with the rack's other
// PDUs lost, against its breaker after derating.
type PDUBudget struct {
	PDU      *PDU
	Rack     *Rack
	LoadLost float64
	Limit    float64
	Derating float64 // the breaker's share for continuous load, 0-1
	// Volts and PF are what the limit was computed at: the PDU's own
	// voltage when it states one, else its feed's block's.
	Volts, PF  float64
	OwnVoltage bool
}

// LoopBudget is a cooling loop's heat against capacity and flow.
type LoopBudget struct {
	Loop         *Loop
	Heat         float64 // kW to liquid
	Capacity     float64 // kW, all CDUs
	CapacityLost float64 // kW, with the largest CDU lost (per the loop's redundancy)
	FlowNeeded   float64 // L/min for Heat at the design ΔT
	Flow         float64 // L/min, all pumps
	FlowLost     float64 // L/min, with the largest pump lost (per pump redundancy)
	// FlowCDULost is the flow with the largest CDU (and its pumps) lost,
	// for loops whose CDUs are redundant; LostCDU names it.
	FlowCDULost float64
	LostCDU     string
}

// BTUh is the heat in BTU/h.
func (l LoopBudget) BTUh() float64 { return l.Heat * units.BTUPerHourPerKW }

// Tons is the heat in tons of refrigeration.
func (l LoopBudget) Tons() float64 { return l.Heat / units.KWPerTon }

// Budget computes the budgets from the inventory.
func Budget(c *Contracts) Budgets {
	var out Budgets
	// index racks by the block they hang on and the loop that cools them,
	// so that a site of a thousand modules costs no more per feed than one
	onBlock, onLoop := map[string][]*Rack{}, map[string][]*Rack{}
	var racks []*Rack
	for _, m := range c.Site.Modules {
		for _, r := range m.Racks {
			racks = append(racks, r)
			onLoop[r.CooledBy.To] = append(onLoop[r.CooledBy.To], r)
			seen := map[string]bool{}
			for _, p := range r.PDUs {
				if block := parentID(p.Feed.To); !seen[block] {
					seen[block] = true
					onBlock[block] = append(onBlock[block], r)
				}
			}
		}
	}
	for _, m := range c.Site.Modules {
		for _, b := range m.Blocks {
			out.Blocks = append(out.Blocks, BlockBudget{Block: b, Load: blockLoad(b, onBlock[b.ID])})
			for _, f := range b.Feeds {
				out.Feeds = append(out.Feeds, feedBudget(f, onBlock[b.ID], deratingOf(f.Derating)))
			}
		}
		for _, l := range m.Loops {
			out.Loops = append(out.Loops, loopBudget(l, onLoop[l.ID]))
		}
	}
	feeds := map[string]*Feed{}
	for _, fb := range out.Feeds {
		feeds[fb.Feed.ID] = fb.Feed
	}
	for _, r := range racks {
		for _, p := range r.PDUs {
			out.PDUs = append(out.PDUs, pduBudget(r, p, feeds[p.Feed.To], deratingOf(p.Derating)))
		}
	}
	return out
}

// parentID drops the last element of an id: "p1/block/a" → "p1/block".
func parentID(id string) string {
	if i := strings.LastIndex(id, "/"); i >= 0 {
		return id[:i]
	}
	return ""
}

// deratingOf is a breaker's derating as a share, 0-1: its own, or
// DefaultDerating (decoding reported one out of range and left it unset).
func deratingOf(q Q) float64 {
	if !q.Set {
		return DefaultDerating
	}
	return q.Canon / 100
}

func feedLimit(breaker Q, volts, pf, derating float64) float64 {
	return ContinuousLimit(breaker.Canon, volts, pf, derating)
}

func deratingPct(derating float64) string {
	return strconv.FormatFloat(math.Round(derating*1e6)/1e4, 'f', -1, 64)
}

// share is a rack's load on one of its PDUs when the PDUs on the lost
// feed are down; ok is false when every PDU is down.
func share(r *Rack, lost string) (float64, bool) {
	live := 0
	for _, p := range r.PDUs {
		if p.Feed.To != lost {
			live++
		}
	}
	if live == 0 {
		return 0, false
	}
	return r.DesignPower.Canon / float64(live), true
}

func feedBudget(f *Feed, racks []*Rack, derating float64) FeedBudget {
	fb := FeedBudget{Feed: f, Derating: derating, Limit: feedLimit(f.Breaker, f.Block.Voltage.Canon, f.Block.PowerFactor, derating)}
	load := func(lost string) float64 {
		total := 0.0
		for _, r := range racks {
			s, ok := share(r, lost)
			if !ok {
				continue
			}
			for _, p := range r.PDUs {
				if p.Feed.To == f.ID {
					total += s
				}
			}
		}
		return total
	}
	fb.Load = load("")
	fb.LoadLost = fb.Load
	for _, other := range f.Block.Feeds {
		if other == f {
			continue
		}
		if l := load(other.ID); l > fb.LoadLost || fb.LostFeed == "" {
			fb.LoadLost, fb.LostFeed = l, other.ID
		}
	}
	for _, r := range racks {
		if _, ok := share(r, f.ID); !ok && len(r.PDUs) > 0 {
			if len(fb.Dropped) == 0 {
				fb.DropPos = r.PDUs[len(r.PDUs)-1].Feed.Pos
			}
			fb.Dropped = append(fb.Dropped, r.ID)
		}
	}
	return fb
}

func blockLoad(b *Block, racks []*Rack) float64 {
	total := 0.0
	for _, r := range racks {
		for _, p := range r.PDUs {
			if len(p.Feed.To) > len(b.ID) && p.Feed.To[:len(b.ID)+1] == b.ID+"/" {
				total += r.DesignPower.Canon
				break
			}
		}
	}
	return total
}

func pduBudget(r *Rack, p *PDU, f *Feed, derating float64) PDUBudget {
	pb := PDUBudget{PDU: p, Rack: r, Derating: derating, LoadLost: r.DesignPower.Canon / float64(len(r.PDUs))}
	if len(r.PDUs) > 1 {
		pb.LoadLost = r.DesignPower.Canon / float64(len(r.PDUs)-1)
	}
	volts, pf := 0.0, 1.0
	if p.Voltage.Set {
		volts = p.Voltage.Canon
	}
	if f != nil {
		pf = f.Block.PowerFactor
		if volts == 0 {
			volts = f.Block.Voltage.Canon
		}
	}
	pb.Limit = feedLimit(p.Breaker, volts, pf, derating)
	pb.Volts, pb.PF, pb.OwnVoltage = volts, pf, p.Voltage.Set
	return pb
}

func loopBudget(l *Loop, racks []*Rack) LoopBudget {
	lb := LoopBudget{Loop: l}
	for _, r := range racks {
		if r.CooledBy.To == l.ID {
			lb.Heat += r.DesignPower.Canon * r.LiquidShare()
		}
	}
	largestCDU, largestPump := 0.0, 0.0
	for _, cdu := range l.CDUs {
		lb.Capacity += cdu.Capacity.Canon
		largestCDU = math.Max(largestCDU, cdu.Capacity.Canon)
		for _, p := range cdu.Pumps {
			lb.Flow += p.Flow.Canon
			if cdu.PumpRedundancy != "N" {
				largestPump = math.Max(largestPump, p.Flow.Canon)
			}
		}
	}
	lb.CapacityLost = lb.Capacity
	switch l.Redundancy {
	case "N+1":
		lb.CapacityLost -= largestCDU
	case "2N":
		lb.CapacityLost /= 2
	}
	lb.FlowLost = lb.Flow - largestPump
	lb.FlowCDULost = lb.Flow
	if l.Redundancy != "N" {
		for _, cdu := range l.CDUs {
			flow := 0.0
			for _, p := range cdu.Pumps {
				flow += p.Flow.Canon
			}
			if rest := lb.Flow - flow; lb.LostCDU == "" || rest < lb.FlowCDULost {
				lb.FlowCDULost, lb.LostCDU = rest, cdu.ID
			}
		}
	}
	if l.DeltaT.Set && l.DeltaT.Canon > 0 {
		lb.FlowNeeded = units.FlowFor(lb.Heat, l.DeltaT.Canon, l.Cp())
	}
	return lb
}

func checkBudget(b Budgets, diags *diag.List) {
	for _, f := range b.Feeds {
		path := f.Feed.Path
		if !f.Feed.Breaker.Set || f.Limit == 0 {
			continue
		}
		limitText := fmt.Sprintf("%s (breaker %s at %s, PF %g, derated to %s %%)", showPower(f.Limit), f.Feed.Breaker.Raw, f.Feed.Block.Voltage.Raw, f.Feed.Block.PowerFactor, deratingPct(f.Derating))
		if f.Load > f.Limit {
			diags.Errorf(RuleFeedOverload, f.Feed.Breaker.Pos, path, "%s: feed %s carries %s in normal operation, above its continuous limit %s", path, f.Feed.ID, showPower(f.Load), limitText).Hint = "use a larger breaker or move racks to another feed"
		} else if f.Feed.Block.Redundancy != "N" && f.LoadLost > f.Limit {
			diags.Errorf(RuleRedundancy, f.Feed.Breaker.Pos, path, "%s: %s redundancy lost: with feed %s down, feed %s must carry %s, above its continuous limit %s", path, f.Feed.Block.Redundancy, f.LostFeed, f.Feed.ID, showPower(f.LoadLost), limitText).Hint = "size each feed for the whole load, or declare the block N"
		}
		if u := f.Feed.UPS; u != nil && u.Rating.Set && u.Rating.Canon < f.Design() {
			diags.Errorf(RuleUPS, u.Rating.Pos, path+".ups", "%s.ups: the UPS on feed %s is rated %s but must carry %s", path, f.Feed.ID, u.Rating.Raw, showPower(f.Design())).Hint = "size the UPS for the feed's design load"
		}
		if f.Feed.Block.Redundancy != "N" && len(f.Dropped) > 0 {
			diags.Errorf(RuleRedundancy, firstValid(f.DropPos, f.Feed.Pos), path, "%s: %s redundancy lost: %d rack(s) have every PDU on feed %s and lose power with it (%s)", path, f.Feed.Block.Redundancy, len(f.Dropped), f.Feed.ID, strings.Join(f.Dropped, ", ")).Hint = "give each rack a PDU on another feed of the block"
		}
	}
	for _, bb := range b.Blocks {
		if bb.Block.Rating.Set && bb.Load > bb.Block.Rating.Canon {
			diags.Errorf(RuleBlockRating, bb.Block.Rating.Pos, bb.Block.Path, "%s: block %s carries %s of rack design load, above its rating %s", bb.Block.Path, bb.Block.ID, showPower(bb.Load), bb.Block.Rating.Raw).Hint = "raise the block's rating or move racks to another block"
		}
	}
	checkPDUs(b.PDUs, diags)
	for _, l := range b.Loops {
		path := l.Loop.Path
		capPos, flowPos := l.Loop.Pos, l.Loop.DeltaT.Pos
		if len(l.Loop.CDUs) > 0 {
			capPos = firstValid(l.Loop.CDUs[0].Capacity.Pos, capPos)
			if len(l.Loop.CDUs[0].Pumps) > 0 {
				flowPos = firstValid(l.Loop.CDUs[0].Pumps[0].Flow.Pos, flowPos)
			}
		}
		if l.Heat > 0 && l.CapacityLost < l.Heat {
			what := "with one CDU lost (" + l.Loop.Redundancy + ")"
			if l.Loop.Redundancy == "N" {
				what = "with every CDU running"
			}
			diags.Errorf(RuleCoolingCapacity, capPos, path, "%s: loop %s must remove %s but has %s %s", path, l.Loop.ID, showPower(l.Heat), showPower(l.CapacityLost), what).Hint = "add a CDU or larger CDUs, or move racks to another loop"
		}
		if l.FlowNeeded > 0 && l.FlowLost >= l.FlowNeeded && l.FlowCDULost < l.FlowNeeded {
			diags.Errorf(RuleFlow, flowPos, path, "%s: loop %s needs %s to carry %s at ΔT %s but delivers %s with CDU %s and its pumps lost (%s)", path, l.Loop.ID,
				units.Format(math.Round(l.FlowNeeded), "L/min"), showPower(l.Heat), l.Loop.DeltaT.Raw, units.Format(l.FlowCDULost, "L/min"), l.LostCDU, l.Loop.Redundancy).Hint = "size the pumps of the remaining CDUs for the whole flow, or design for a larger ΔT"
		}
		if l.FlowNeeded > 0 && l.FlowLost < l.FlowNeeded {
			diags.Errorf(RuleFlow, flowPos, path, "%s: loop %s needs %s to carry %s at ΔT %s (Q = ṁ·cp·ΔT, cp %g kJ/(kg·K)) but its pumps deliver %s with one pump lost", path, l.Loop.ID,
				units.Format(math.Round(l.FlowNeeded), "L/min"), showPower(l.Heat), l.Loop.DeltaT.Raw, l.Loop.Cp(), units.Format(l.FlowLost, "L/min")).Hint = "add pump capacity or design for a larger ΔT"
		}
	}
}

// checkPDUs reports racks that do not fit on their PDUs with one lost,
// once per breaker declaration: racks generated from one template share
// one finding that names them all.
func checkPDUs(pdus []PDUBudget, diags *diag.List) {
	type key struct {
		module, breaker string
		load, limit     float64
		derating        float64
	}
	groups := map[key][]PDUBudget{}
	var order []key
	for _, p := range pdus {
		if !p.PDU.Breaker.Set || p.Limit == 0 || p.LoadLost <= p.Limit {
			continue
		}
		k := key{p.Rack.Module, p.PDU.Breaker.Raw, p.LoadLost, p.Limit, p.Derating}
		if groups[k] == nil {
			order = append(order, k)
		}
		groups[k] = append(groups[k], p)
	}
	for _, k := range order {
		g := groups[k]
		p := g[0]
		var ids []string
		for _, x := range g {
			ids = append(ids, x.PDU.ID)
		}
		what := "with the rack's other PDU lost"
		if len(p.Rack.PDUs) == 1 {
			what = "as its only PDU"
		}
		at := fmt.Sprintf("at %s, its feed's block voltage", units.Format(p.Volts, "V"))
		if p.OwnVoltage {
			at = fmt.Sprintf("at its own %s", p.PDU.Voltage.Raw)
		}
		diags.Errorf(RulePDU, p.PDU.Breaker.Pos, p.PDU.Path, "%s: %d PDU(s) carry %s %s, above their continuous limit %s (breaker %s %s, PF %g, derated to %s %%): %s",
			p.PDU.Path, len(g), showPower(p.LoadLost), what, showPower(p.Limit), p.PDU.Breaker.Raw, at, p.PF, deratingPct(p.Derating), abbreviate(ids, 6)).Hint = "use a larger PDU breaker or add PDUs"
	}
}

func abbreviate(ids []string, n int) string {
	if len(ids) <= n {
		return strings.Join(ids, ", ")
	}
	return strings.Join(ids[:n], ", ") + fmt.Sprintf(" and %d more", len(ids)-n)
}

// checkRedundancyUnits reports a declared redundancy that the units
// cannot give: N+1 with one unit, 2N with an odd number.
func checkRedundancyUnits(c *Contracts, diags *diag.List) {
	check := func(decl string, n int, what, path string, pos diag.Pos) {
		switch {
		case decl == "N+1" && n < 2:
			diags.Errorf(RuleRedundancyUnits, pos, path, "%s: declared N+1 but has %d %s: losing it loses everything", path, n, what).Hint = "add a unit, or declare N"
		case decl == "2N" && (n < 2 || n%2 != 0):
			diags.Errorf(RuleRedundancyUnits, pos, path, "%s: declared 2N but has %d %s: 2N needs two equal halves", path, n, what).Hint = "give it an even number of units, or declare N+1"
		}
	}
	for _, m := range c.Site.Modules {
		for _, b := range m.Blocks {
			check(b.Redundancy, len(b.Feeds), "feed(s)", b.Path, b.Pos)
		}
		for _, l := range m.Loops {
			check(l.Redundancy, len(l.CDUs), "CDU(s)", l.Path, l.Pos)
			for _, cdu := range l.CDUs {
				check(cdu.PumpRedundancy, len(cdu.Pumps), "pump(s)", l.Path+".cdus."+quoteLabel(cdu.ID[len(l.ID)+1:]), cdu.Pos)
			}
		}
	}
}
