package profile

import (
	"fmt"
	"sort"
)

// Request is one Modbus read: Count registers (or bits) of Table from
// Start, covering Points.
type Request struct {
	Table  Table
	Start  uint16
	Count  uint16
	Points []*Point // in address order
}

// End is the address after the request's last register.
func (r Request) End() int { return int(r.Start) + int(r.Count) }

func (r Request) String() string {
	return fmt.Sprintf("%s %d..%d (%d points)", r.Table, r.Start, r.End()-1, len(r.Points))
}

// Slice returns the registers of pt out of the registers (or bits) that
// r returned.
func (r Request) Slice(regs []uint16, pt *Point) []uint16 {
	off := int(pt.Address) - int(r.Start)
	return regs[off : off+pt.Registers()]
}

// PlanModbus groups points into as few read requests as the limits
// allow: per table, in address order, a point joins the current request
// when the request then spans at most MaxRegisters (MaxBits for coils
// and discrete inputs) and the unused space it must skip is at most
// MaxGap. Points that share registers (bit alarms) share a request.
func PlanModbus(points []*Point, lim Limits) []Request {
	byTable := map[Table][]*Point{}
	for _, pt := range points {
		if pt.Table != "" {
			byTable[pt.Table] = append(byTable[pt.Table], pt)
		}
	}
	var out []Request
	for _, t := range []Table{Coil, Discrete, Holding, Input} {
		out = append(out, planTable(t, byTable[t], lim)...)
	}
	return out
}

func planTable(t Table, pts []*Point, lim Limits) []Request {
	if len(pts) == 0 {
		return nil
	}
	sort.SliceStable(pts, func(i, j int) bool {
		if pts[i].Address != pts[j].Address {
			return pts[i].Address < pts[j].Address
		}
		return pts[i].Name < pts[j].Name
	})
	max := lim.MaxRegisters
	if t.IsBits() {
		max = lim.MaxBits
	}
	var out []Request
	cur := Request{Table: t, Start: pts[0].Address, Points: pts[:1]}
	end := pts[0].End()
	for _, pt := range pts[1:] {
		newEnd := end
		if pt.End() > newEnd {
			newEnd = pt.End()
		}
		if newEnd-int(cur.Start) <= max && int(pt.Address)-end <= lim.MaxGap {
			cur.Points = append(cur.Points, pt)
			end = newEnd
			continue
		}
		cur.Count = uint16(end - int(cur.Start))
		out = append(out, cur)
		cur = Request{Table: t, Start: pt.Address, Points: []*Point{pt}}
		end = pt.End()
	}
	cur.Count = uint16(end - int(cur.Start))
	return append(out, cur)
}

// BatchSNMP groups points into GETs of at most maxOIDs distinct OIDs, in
// OID order; points that share an OID share a GET.
func BatchSNMP(points []*Point, maxOIDs int) [][]*Point {
	pts := append([]*Point(nil), points...)
	sort.SliceStable(pts, func(i, j int) bool {
		if c := CompareOIDs(pts[i].OID, pts[j].OID); c != 0 {
			return c < 0
		}
		return pts[i].Name < pts[j].Name
	})
	var out [][]*Point
	var cur []*Point
	oids := 0
	for i, pt := range pts {
		shared := i > 0 && pts[i-1].OID == pt.OID
		if !shared && oids == maxOIDs {
			out = append(out, cur)
			cur, oids = nil, 0
		}
		if !shared {
			oids++
		}
		cur = append(cur, pt)
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// CompareOIDs orders numeric OIDs ("1.3.6.1.2") arc by arc.
func CompareOIDs(a, b string) int {
	for a != "" || b != "" {
		var x, y uint64
		x, a = nextArc(a)
		y, b = nextArc(b)
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
	}
	return 0
}

// nextArc reads one arc; an exhausted OID reads as arc 0 followed by
// nothing, and sorts before any longer OID with the same prefix.
func nextArc(s string) (uint64, string) {
	if s == "" {
		return 0, ""
	}
	if s[0] == '.' {
		s = s[1:]
	}
	var n uint64
	i := 0
	for ; i < len(s) && s[i] != '.'; i++ {
		n = n*10 + uint64(s[i]-'0')
	}
	return n + 1, s[i:]
}
