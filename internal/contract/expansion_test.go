package contract

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/seamdc/seam/internal/inventory"
	"github.com/seamdc/seam/internal/units"
)

func kwQ(v float64) Q {
	return Q{Quantity: units.Quantity{Value: v, Unit: "kW", Dim: units.Power, Canon: v}, Set: true}
}

// itSite is a site of IT modules of one rack each, of the given draws.
func itSite(draws map[string]float64, order ...string) *Contracts {
	s := &Site{Name: "t"}
	for _, id := range order {
		s.Modules = append(s.Modules, &inventory.Module{ID: id, Kind: "it",
			Racks: []*inventory.Rack{{ID: id + "/r01", Module: id, DesignPower: kwQ(draws[id])}}})
	}
	return &Contracts{Site: s, Ops: &Operating{}}
}

func TestPlanTranches(t *testing.T) {
	for _, tt := range []struct {
		name      string
		tranches  []*Tranche
		notBefore map[string]string
		want      map[string]string // module → tranche id ("" never)
	}{
		{"each on the first that covers it and those before it",
			[]*Tranche{{ID: "t1", Date: "2027-01-01", Capacity: kwQ(150)}, {ID: "t2", Date: "2027-06-01", Capacity: kwQ(100)}},
			nil, map[string]string{"ma": "t1", "mb": "t2", "mc": ""}},
		{"in date order, whatever the declared order",
			[]*Tranche{{ID: "late", Date: "2028-01-01", Capacity: kwQ(500)}, {ID: "early", Date: "2027-01-01", Capacity: kwQ(100)}},
			nil, map[string]string{"ma": "early", "mb": "late", "mc": "late"}},
		{"a listed module waits for its tranche, and none overtakes it",
			[]*Tranche{{ID: "t1", Date: "2027-01-01", Capacity: kwQ(1000)},
				{ID: "t2", Date: "2027-06-01", Capacity: kwQ(0), Energises: []Ref{{To: "ma"}}}},
			nil, map[string]string{"ma": "t2", "mb": "t2", "mc": "t2"}},
		{"a tie-in's tranche holds a module back",
			[]*Tranche{{ID: "t1", Date: "2027-01-01", Capacity: kwQ(1000)}, {ID: "t2", Date: "2027-06-01", Capacity: kwQ(0)}},
			map[string]string{"mc": "t2"}, map[string]string{"ma": "t1", "mb": "t1", "mc": "t2"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := itSite(map[string]float64{"ma": 100, "mb": 100, "mc": 100}, "ma", "mb", "mc")
			c.Ops.Tranches = tt.tranches
			p := PlanTranchesPUE(c, PUE{}, tt.notBefore)
			got := map[string]string{}
			for _, m := range p.Modules {
				got[m.Module] = ""
				if m.Tranche != nil {
					got[m.Module] = m.Tranche.ID
				}
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestPlanTranchesDrawsAtDesignPUE(t *testing.T) {
	c := itSite(map[string]float64{"ma": 100}, "ma")
	c.Ops.Meters = []*Meter{{ID: "cool", Kind: "cooling", Design: kwQ(25)}}
	c.Ops.Tranches = []*Tranche{{ID: "t1", Date: "2027-01-01", Capacity: kwQ(120)}, {ID: "t2", Date: "2027-02-01", Capacity: kwQ(5)}}
	p := PlanTranches(c)
	assert.InDelta(t, 125, p.Modules[0].Draw, 1e-9, "IT 100 kW × PUE 1.25")
	assert.Equal(t, "t2", p.Modules[0].Tranche.ID, "120 kW does not cover 125 kW; 125 kW does")
}

func TestDesignPUE(t *testing.T) {
	for _, tt := range []struct {
		name   string
		meters []*Meter
		want   float64
		ok     bool
	}{
		{"IT from the racks plus the facility loads", []*Meter{{Kind: "cooling", Design: kwQ(15)}, {Kind: "losses", Design: kwQ(5)}}, 1.2, true},
		{"IT from its meters", []*Meter{{Kind: "it", Design: kwQ(50)}, {Kind: "lighting", Design: kwQ(10)}}, 1.2, true},
		{"a utility meter is the whole facility", []*Meter{{Kind: "utility", Design: kwQ(130)}, {Kind: "cooling", Design: kwQ(99)}}, 1.3, true},
		{"no facility load with a design draw: no design PUE, not 1.0", []*Meter{{Kind: "cooling", Channel: "l1/ma/heat"}}, 0, false},
		{"no meters, no PUE", nil, 0, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := itSite(map[string]float64{"ma": 100}, "ma")
			c.Ops.Meters = tt.meters
			p := DesignPUE(c)
			assert.Equal(t, tt.ok, p.OK)
			assert.InDelta(t, tt.want, p.Value, 1e-9)
		})
	}
}

func TestSpareRuleRoundsUp(t *testing.T) {
	r := SpareRule{Min: 1, Per: 20}
	for _, tt := range []struct{ installed, want int }{{0, 0}, {1, 1}, {20, 1}, {21, 2}, {384, 20}} {
		assert.Equal(t, tt.want, r.Need(tt.installed), "%d installed", tt.installed)
	}
}

func TestRackLoadKPa(t *testing.T) {
	// 1,468.4 kg on 0.72 m²: 20 kN/m²
	l := RackLoad{Mass: 20 * 0.72 * 1000 / Gravity, Footprint: 0.72}
	assert.InDelta(t, 20, l.KPa(), 1e-9)
	assert.Zero(t, RackLoad{Mass: 1000}.KPa(), "no footprint, no load per area")
}
