package contract

import (
	"fmt"
	"strings"

	"github.com/seamdc/seam/internal/diag"
)

// Floor-loading rule ids.
const (
	RuleFloor     = "FLOOR001"
	RuleFloorData = "FLOOR002"
)

// Gravity is standard gravity, m/s² (ISO 80000-3): a mass of m kg on a
// area of a m² loads the floor with m·g/a N/m².
const Gravity = 9.80665

// CoolantDensity is the coolant's density in kg/L, water and PG25 alike
// (shared/reference/standards.md: "density ≈ 1.0 kg/L").
const CoolantDensity = 1.0

// RackLoad is a rack's floor loading: its mass, liquid included, over
// its footprint.
type RackLoad struct {
	Rack      *Rack
	Mass      float64 // kg
	Footprint float64 // m2
	// How names where the mass came from.
	How string
	// Missing names what is needed and not declared ("" none).
	Missing string
	Pos     diag.Pos
}

// KPa is the load per area: 1 kPa = 1 kN/m².
func (l RackLoad) KPa() float64 {
	if l.Footprint <= 0 {
		return 0
	}
	return l.Mass * Gravity / l.Footprint / 1000
}

// rackLoad works out a rack's floor loading from its declared weight or
// its design: the empty rack, each tray group's weight × its trays, and
// the coolant it holds.
func rackLoad(c *Contracts, r *Rack) RackLoad {
	m := c.Ops.Masses
	l := RackLoad{Rack: r, Pos: r.Pos}
	rd := r.DesignOf
	if rd != nil {
		if fp, ok := m[rd.Path+".footprint"]; ok {
			l.Footprint = fp.Value
		}
	}
	if w, ok := m[r.Path+".weight"]; ok {
		l.Mass, l.How, l.Pos = w.Value, "declared "+w.Raw, w.Pos
	} else if rd != nil {
		w, ok := m[rd.Path+".weight"]
		if !ok {
			l.Missing = fmt.Sprintf("a weight (rack design %s has none, nor does the rack)", rd.Name)
			return l
		}
		l.Mass, l.Pos = w.Value, w.Pos
		how := []string{"rack " + w.Raw}
		var without []string
		for _, t := range rd.Trays {
			tw, ok := m[t.Path+".weight"]
			if !ok {
				without = append(without, t.Name)
				continue
			}
			l.Mass += tw.Value * float64(len(t.Slots))
			how = append(how, fmt.Sprintf("%d %s × %s", len(t.Slots), t.Name, tw.Raw))
		}
		if v, ok := m[rd.Path+".coolant"]; ok {
			l.Mass += v.Value * CoolantDensity
			how = append(how, fmt.Sprintf("coolant %s × %g kg/L", v.Raw, CoolantDensity))
		}
		l.How = strings.Join(how, " + ")
		if len(without) > 0 {
			l.Missing = fmt.Sprintf("a weight for its %s trays (rack design %s)", strings.Join(without, ", "), rd.Name)
		}
	} else {
		l.Missing = "a weight or a rack design"
	}
	if l.Footprint <= 0 && l.Missing == "" {
		l.Missing = "a footprint (the rack design's footprint, \"0.72 m2\")"
	}
	return l
}

// floorOf is the floor under a module: its own, else the site's.
func (o *Operating) floorOf(module string) *Floor {
	if f := o.ModuleFloors[module]; f != nil {
		return f
	}
	return o.Floor
}

// checkFloor checks every rack's loading against the floor under it.
func checkFloor(c *Contracts, diags *diag.List) {
	if c.Ops == nil {
		return
	}
	for _, m := range c.Site.Modules {
		f := c.Ops.floorOf(m.ID)
		if f == nil || !f.Rating.Set {
			continue
		}
		for _, r := range m.Racks {
			l := rackLoad(c, r)
			if l.Missing != "" {
				diags.Add(diag.Diagnostic{Rule: RuleFloorData, Severity: diag.Warning, Pos: r.Pos, Path: r.Path,
					Message: fmt.Sprintf("%s: the floor is rated %s, but the rack's loading cannot be worked out: it needs %s", r.Path, f.Rating.Raw, l.Missing),
					Hint:    `give the rack design weight, coolant and footprint ("1100 kg", "40 L", "0.72 m2") and each tray group's weight, or the rack its filled weight`,
					Related: []diag.Related{{Pos: f.Rating.Pos, Message: "the floor's rating"}}})
				continue
			}
			kpa := l.KPa()
			if kpa <= f.Rating.Canon*(1+1e-9) {
				continue
			}
			diags.Add(diag.Diagnostic{Rule: RuleFloor, Severity: diag.Error, Pos: r.Pos, Path: r.Path,
				Message: fmt.Sprintf("%s: %.0f kg on %g m² loads the floor with %.1f kN/m² (kPa), above its rating of %s (%s)",
					r.Path, l.Mass, l.Footprint, kpa, f.Rating.Raw, l.How),
				Hint: fmt.Sprintf("put the rack on a floor rated at least %.1f kPa, spread its load (a plinth or load plate over %.2f m²), or use a lighter rack",
					kpa, l.Mass*Gravity/1000/f.Rating.Canon),
				Related: []diag.Related{{Pos: f.Rating.Pos, Message: "the floor's rating"}, {Pos: l.Pos, Message: "the rack's weight"}}})
		}
	}
}
