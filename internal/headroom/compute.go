package headroom

import (
	"math"
	"time"

	"github.com/seamdc/seam/internal/units"
)

// Reading is a channel's last good reading, in its canonical unit (kW,
// A, V, degC, L/min).
type Reading struct {
	Value float64
	At    time.Time
}

// Value is a computed quantity, in base units; OK is false when a
// reading it needs is missing, stale or implausible: it is then not
// exported.
type Value struct {
	V  float64
	OK bool
}

func val(v float64) Value { return Value{V: v, OK: true} }

func (a Value) add(b Value) Value { return Value{V: a.V + b.V, OK: a.OK && b.OK} }

// Result is the headroom at one instant.
type Result struct {
	Feeds  []FeedResult
	Blocks []BlockResult
	PDUs   []PDUResult
	Loops  []LoopResult
	// Stale lists, per channel, whether it has no fresh good reading.
	Stale map[string]bool
}

// FeedResult is one feed's measured power and headroom.
type FeedResult struct {
	Feed                  *Feed
	Power, Current, Volts Value // W, A, V
	Headroom              Value // W: limit − power
	Utilization           Value // power / limit, 0-1
	LostHeadroom          []Lost
}

// Lost is the headroom of a feed or PDU with another unit lost: its load
// plus its share of the lost unit's, against its limit.
type Lost struct {
	Lost     string
	Headroom Value // W
}

// BlockResult is a power block's load against its rating.
type BlockResult struct {
	Block        *Block
	Power        Value // W, the sum of its feeds
	Headroom     Value // W: rating − power
	LostHeadroom Value // W: the least headroom of any feed with any one feed lost
}

// PDUResult is a rack PDU's measured power against its breaker.
type PDUResult struct {
	PDU          *PDU
	Power        Value // W
	Headroom     Value // W
	LostHeadroom Value // W: the rack's load shared by its other PDUs with this one's sibling lost
}

// LoopResult is a loop's heat against CDU capacity and flow against need.
type LoopResult struct {
	Loop               *Loop
	Supply, Return     Value // degC
	Flow               Value // L/s
	Heat               Value // W
	Headroom           Value // W: capacity with one CDU lost − heat
	FlowNeeded         Value // L/s: the flow the heat needs at the design ΔT
	FlowRatio          Value // flow / needed
	SupplyLo, SupplyHi float64
}

// Plausible is the range a channel's reading must fall in to be used; a
// reading outside it is marked stale (not trusted), not exported.
func plausible(k Kind, v float64) bool {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return false
	}
	switch k {
	case Power:
		return v >= -1 && v < 1e6 // kW
	case Current:
		return v >= 0 && v < 1e6
	case Voltage:
		return v >= 0 && v < 1e5
	case SupplyTemp, ReturnTemp, Temperature:
		return v > -50 && v < 150
	case Flow:
		return v >= 0 && v < 1e7
	}
	return true
}

// Compute turns the readings into headroom at now: a reading older than
// staleAfter, or implausible, is stale and what needs it is not computed.
func Compute(m *Model, readings map[string]Reading, now time.Time, staleAfter time.Duration) Result {
	res := Result{Stale: make(map[string]bool, len(m.Meters))}
	sums := map[string]map[Kind]Value{} // element → kind → sum
	for name, mt := range m.Meters {
		r, ok := readings[name]
		fresh := ok && now.Sub(r.At) <= staleAfter && plausible(mt.Kind, r.Value)
		res.Stale[name] = !fresh
		byKind := sums[mt.At]
		if byKind == nil {
			byKind = map[Kind]Value{}
			sums[mt.At] = byKind
		}
		prev, seen := byKind[mt.Kind]
		v := Value{V: r.Value, OK: fresh}
		if mt.Kind == Voltage || mt.Kind == SupplyTemp || mt.Kind == ReturnTemp || mt.Kind == Temperature {
			// not additive: the lowest voltage, the warmest temperature
			if seen && prev.OK && v.OK {
				if mt.Kind == Voltage {
					v.V = math.Min(prev.V, v.V)
				} else {
					v.V = math.Max(prev.V, v.V)
				}
			}
			if seen {
				v.OK = v.OK && prev.OK
			}
			byKind[mt.Kind] = v
			continue
		}
		if seen {
			v = prev.add(v)
		}
		byKind[mt.Kind] = v
	}
	feedPower := map[string]Value{}
	for _, f := range m.Feeds {
		fr := FeedResult{Feed: f}
		if p, ok := sums[f.ID][Power]; ok {
			fr.Power = Value{V: p.V * 1000, OK: p.OK}
			fr.Headroom = Value{V: f.LimitW - fr.Power.V, OK: p.OK}
			fr.Utilization = Value{V: fr.Power.V / f.LimitW, OK: p.OK}
			feedPower[f.ID] = fr.Power
		}
		fr.Current = sums[f.ID][Current]
		fr.Volts = sums[f.ID][Voltage]
		res.Feeds = append(res.Feeds, fr)
	}
	byFeed := map[string]*FeedResult{}
	for i := range res.Feeds {
		byFeed[res.Feeds[i].Feed.ID] = &res.Feeds[i]
	}
	for _, b := range m.Blocks {
		res.Blocks = append(res.Blocks, blockResult(b, feedPower, byFeed))
	}
	pduPower := map[string]Value{}
	for _, p := range m.PDUs {
		if v, ok := sums[p.ID][Power]; ok {
			pduPower[p.ID] = Value{V: v.V * 1000, OK: v.OK}
		}
	}
	for _, p := range m.PDUs {
		pw, ok := pduPower[p.ID]
		if !ok {
			continue
		}
		pr := PDUResult{PDU: p, Power: pw, Headroom: Value{V: p.LimitW - pw.V, OK: pw.OK}}
		if len(p.Siblings) > 1 {
			rack := Value{OK: true}
			for _, s := range p.Siblings {
				v, ok := pduPower[s]
				if !ok {
					rack.OK = false
					break
				}
				rack = rack.add(v)
			}
			// the rack's load shared by its PDUs with one lost
			pr.LostHeadroom = Value{V: p.LimitW - rack.V/float64(len(p.Siblings)-1), OK: rack.OK}
		}
		res.PDUs = append(res.PDUs, pr)
	}
	for _, l := range m.Loops {
		res.Loops = append(res.Loops, loopResult(l, sums))
	}
	return res
}

// blockResult sums a block's feeds and finds its N-1 headroom: for each
// feed lost, its load spread evenly over the block's other feeds, each
// against its limit.
func blockResult(b *Block, feedPower map[string]Value, byFeed map[string]*FeedResult) BlockResult {
	br := BlockResult{Block: b, Power: Value{OK: len(b.Feeds) > 0}}
	for _, f := range b.Feeds {
		p, ok := feedPower[f.ID]
		if !ok {
			br.Power.OK = false
			break
		}
		br.Power = br.Power.add(p)
	}
	if b.RatingW > 0 {
		br.Headroom = Value{V: b.RatingW - br.Power.V, OK: br.Power.OK}
	}
	if len(b.Feeds) < 2 || !br.Power.OK {
		return br
	}
	least := math.Inf(1)
	for _, lost := range b.Feeds {
		share := feedPower[lost.ID].V / float64(len(b.Feeds)-1)
		for _, f := range b.Feeds {
			if f == lost {
				continue
			}
			h := f.LimitW - (feedPower[f.ID].V + share)
			fr := byFeed[f.ID]
			fr.LostHeadroom = append(fr.LostHeadroom, Lost{Lost: lost.ID, Headroom: val(h)})
			least = math.Min(least, h)
		}
	}
	br.LostHeadroom = val(least)
	return br
}

// loopResult takes the heat from Q = ṁ·cp·ΔT of the measured flow and
// supply and return temperatures (1 kg/L), or else from the heat
// channels of the modules the loop cools.
func loopResult(l *Loop, sums map[string]map[Kind]Value) LoopResult {
	lr := LoopResult{Loop: l, SupplyLo: l.SupplyLo, SupplyHi: l.SupplyH}
	s := sums[l.ID]
	sup, hasSup := s[SupplyTemp]
	ret, hasRet := s[ReturnTemp]
	flow, hasFlow := s[Flow]
	if hasSup {
		lr.Supply = sup
	}
	if hasRet {
		lr.Return = ret
	}
	if hasFlow {
		lr.Flow = Value{V: flow.V / 60, OK: flow.OK}
	}
	heat, anyHeat := Value{OK: true}, false
	for _, mod := range l.Cools {
		if h, ok := sums[mod][Power]; ok {
			heat, anyHeat = heat.add(h), true
		}
	}
	switch {
	case hasSup && hasRet && hasFlow && sup.OK && ret.OK && flow.OK, hasSup && hasRet && hasFlow && !anyHeat:
		kw := flow.V / 60 * l.Cp * (ret.V - sup.V)
		lr.Heat = Value{V: math.Max(kw, 0) * 1000, OK: sup.OK && ret.OK && flow.OK}
	case anyHeat:
		lr.Heat = Value{V: heat.V * 1000, OK: heat.OK}
	}
	if lr.Heat.OK {
		lr.Headroom = val(l.CapacityLostW - lr.Heat.V)
		if l.DeltaTK > 0 {
			lr.FlowNeeded = val(units.FlowFor(lr.Heat.V/1000, l.DeltaTK, l.Cp) / 60)
			if lr.Flow.OK && lr.FlowNeeded.V > 0 {
				lr.FlowRatio = val(lr.Flow.V / lr.FlowNeeded.V)
			}
		}
	}
	return lr
}
