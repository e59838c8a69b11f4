package contract

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/seamdc/seam/contracts/schema"
	"github.com/seamdc/seam/internal/cueload"
	"github.com/seamdc/seam/internal/diag"
	"github.com/seamdc/seam/internal/inventory"
	"github.com/seamdc/seam/internal/sitegen"
)

// opsSite is the generated site of n cells (sitegen.Inventory: 16 NVL72
// racks per IT module and their handover, 46 trays a rack) with the
// worked example's operating declarations: rack design weights, a floor,
// each facility module's controller, pumps and fans, each IT module's
// optics, spares and the 1-per-20 rule.
func opsSite(tb testing.TB, n int) (*Contracts, *inventory.Graph) {
	tb.Helper()
	site, h, err := sitegen.Inventory(n)
	if err != nil {
		tb.Fatal(err)
	}
	c := &Contracts{Site: site, Handovers: []*inventory.Handover{h}}
	o := &Operating{ModuleFloors: map[string]*Floor{}, Masses: map[string]Amount{}, NetworkSwitches: map[string][]Ref{}}
	c.Ops = o
	amount := func(path string, v float64) { o.Masses[path] = Amount{Value: v, Path: path, Set: true} }
	weights := map[string]float64{"shelf": 20, "compute": 38, "nvswitch": 22, "tor": 8, "mgmt": 8}
	ctl := []Ref{{To: "ctl-sw-1"}, {To: "ctl-sw-2"}}
	for _, m := range site.Modules {
		for _, rd := range m.RackDesigns {
			rd.Path = "site.modules." + m.ID + ".rack_designs." + rd.Name
			amount(rd.Path+".weight", 250)
			amount(rd.Path+".coolant", 50)
			amount(rd.Path+".footprint", 0.72)
			for _, t := range rd.Trays {
				t.Path = rd.Path + ".trays." + t.Name
				amount(t.Path+".weight", weights[t.Name])
			}
		}
		switch m.Kind {
		case "power":
			o.Equipment = append(o.Equipment, &Equipment{ID: m.ID + "-plc", Module: m.ID, Kind: "controller", PartNumber: "VS-PLC-2500", Firmware: "3.4.1", Count: 1, Switches: ctl})
		case "cooling":
			o.Equipment = append(o.Equipment,
				&Equipment{ID: m.ID + "-plc", Module: m.ID, Kind: "controller", PartNumber: "CF-CTRL-1200", Firmware: "7.2.0", Count: 1, Switches: ctl},
				&Equipment{ID: m.ID + "-pumps", Module: m.ID, Kind: "pump", PartNumber: "CF-PUMP-90", Count: 6},
				&Equipment{ID: m.ID + "-fans", Module: m.ID, Kind: "fan", PartNumber: "CF-DRYFAN-1", Count: 12})
		case "it":
			o.Equipment = append(o.Equipment, &Equipment{ID: m.ID + "-optics", Module: m.ID, Kind: "optic", PartNumber: "OSFP-800G-DR8", Count: 64})
		}
	}
	o.NetworkSwitches["ctl/net"] = ctl
	o.Floor = &Floor{Rating: Q{Set: true, Raw: "25 kPa"}}
	o.Floor.Rating.Canon = 25
	o.SpareRule = &SpareRule{Min: 1, Per: 20}
	racks := 16 * n
	for _, s := range []struct {
		pn   string
		need int
	}{{"33-KW-POWER-SHELF", 8 * racks}, {"CF-PUMP-90", 6 * n}, {"CF-DRYFAN-1", 12 * n}, {"OSFP-800G-DR8", 64 * n}} {
		o.Spares = append(o.Spares, &Spare{PartNumber: s.pn, OnHand: o.SpareRule.Need(s.need)})
	}
	g, _ := inventory.Build(site, h)
	return c, g
}

// The generated site's operating declarations check clean; one shelf of
// another part number, one controller on other firmware and a floor
// rated too low are each found.
func TestOperatingRulesOnGeneratedSite(t *testing.T) {
	c, g := opsSite(t, 3)
	var diags diag.List
	checkOperating(c, g, &diags)
	if len(diags) > 0 {
		t.Fatalf("want no findings, got %v", diags)
	}
	c.Handovers[0].Racks[5].Trays[0].PartNumber = "33-KW-SHELF-ALT"
	c.Ops.Equipment[0].Firmware = "3.4.0"
	c.Ops.Floor.Rating.Canon = 15
	checkOperating(c, g, &diags)
	found := map[string]int{}
	for _, d := range diags {
		found[d.Rule]++
	}
	want := map[string]int{RulePartNumber: 1, RuleFirmware: 1, RuleFloor: 16 * 3}
	for rule, n := range want {
		if found[rule] != n {
			t.Errorf("%s: want %d findings, got %d: %v", rule, n, found[rule], diags)
		}
	}
}

// BenchmarkOperatingRules is what the uniformity, spares, floor-loading,
// expansion, meter and controls-network rules add to vet on the
// generated site of 100 IT modules (1,600 racks, 73,600 tray records):
// the goal is under 0.5 s.
func BenchmarkOperatingRules(b *testing.B) {
	for _, n := range []int{100} {
		c, g := opsSite(b, n)
		b.Run(fmt.Sprintf("generated-%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var diags diag.List
				checkOperating(c, g, &diags)
				if len(diags) > 0 {
					b.Fatal(diags)
				}
			}
		})
	}
}

// BenchmarkOperatingDecode is what decoding the operating declarations
// adds to loading the generated CUE site of 100 IT modules: the walk
// over every module's racks and rack designs for weights and floors.
func BenchmarkOperatingDecode(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "gen100")
	if err := sitegen.Write(dir, 100); err != nil {
		b.Fatal(err)
	}
	r, diags, err := cueload.Load(dir, cueload.Config{ImportPath: schema.ImportPath, Files: schema.Files(), Bind: schema.Bind})
	if err != nil || len(diags) > 0 {
		b.Fatal(err, diags)
	}
	b.ReportAllocs()
	for b.Loop() {
		d := &decoder{r: r}
		root := node{d: d, v: r.Value}
		if o := d.operating(root.at("site")); o == nil || len(d.diags) > 0 {
			b.Fatal(d.diags)
		}
	}
}
