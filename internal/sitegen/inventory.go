package sitegen

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/seamdc/seam/internal/inventory"
	"github.com/seamdc/seam/internal/units"
)

// Inventory builds a synthetic site of modules cells in Go, without CUE,
// for the inventory graph's benchmarks: each cell is the worked
// example's (an IT module of 16 GB300 NVL72-like racks at 130 kW on its
// own power block p001/block and cooling loop l001/loop of three
// 1.2 MW CDUs, in its own failure domain), with one controls module for
// all. The handover is what Handover writes for the site, as records
// (no file behind them). 348 cells are 5,568 racks, 100,224 nodes and
// 1,620,288 parts (PSUs, GPUs, CPUs, NICs, DPUs, BMCs, switch ASICs).
func Inventory(modules int) (*inventory.Site, *inventory.Handover, error) {
	if modules < 1 || modules > 9999 {
		return nil, nil, fmt.Errorf("sitegen: %d IT modules: want 1 to 9999", modules)
	}
	site := &inventory.Site{Name: "generated",
		Shared: []*inventory.Shared{{ID: "ctl-net", Kind: "controls_network", Paths: 2}, {ID: "water-main", Kind: "makeup_water", Paths: 2}}}
	ctl := &inventory.Module{ID: "ctl", Kind: "controls", Vendor: "SiteOps", FailureDomain: "fd-site", DependsOn: refs("ctl-net")}
	net := &inventory.Network{ID: "ctl/net", Module: "ctl", Paths: 2}
	ctl.Networks = []*inventory.Network{net}
	var its, powers, coolings []*inventory.Module
	for i := 1; i <= modules; i++ {
		n := fmt.Sprintf("%03d", i)
		c := cell{IT: "m" + n, Power: "p" + n, Cooling: "l" + n, Domain: "fd-" + n}
		its = append(its, itModule(c))
		powers = append(powers, powerModule(c))
		coolings = append(coolings, coolingModule(c))
		net.Serves = append(net.Serves, inventory.Ref{To: c.IT})
		site.LoadBanks = append(site.LoadBanks, &inventory.LoadBank{ID: "lb-" + c.IT, Module: inventory.Ref{To: c.IT},
			Rating: q("2.5 MW"), Resolution: q("5 kW"), MaxRate: q("50 MW/s"), Kind: "resistive"})
	}
	// sorted by id, as the contract decodes them: ctl < l… < m… < p…
	site.Modules = append(append(append(append(site.Modules, ctl), coolings...), its...), powers...)
	h, err := handover(site)
	return site, h, err
}

// handover is Handover's output for site as records: each rack's trays
// are the lines Handover writes, decoded.
func handover(site *inventory.Site) (*inventory.Handover, error) {
	h := &inventory.Handover{File: "generated.json", Site: site.Name}
	serials := map[string]int{}
	serial := func(kind string) string {
		serials[kind]++
		return fmt.Sprintf("SN-%s-%07d", strings.ToUpper(kind), serials[kind])
	}
	mi := -1
	for _, m := range site.Modules {
		if len(m.Racks) > 0 {
			mi++
		}
		for ri, r := range m.Racks {
			d := r.DesignOf
			if d == nil {
				continue
			}
			pos := strings.TrimPrefix(r.ID, m.ID+"/")
			name := RackName(m.ID, pos)
			rec := &inventory.RackRecord{Name: name, Module: m.ID, Position: pos, PartNumber: strings.ToUpper(d.Name),
				Serial: serial("rack"), AssetTag: "AT-" + name}
			for _, line := range trays(d, mi, ri, name, serial) {
				var t inventory.TrayRecord
				if err := json.Unmarshal([]byte(line), &t); err != nil {
					return nil, fmt.Errorf("sitegen: rack %s: %w", name, err)
				}
				rec.Trays = append(rec.Trays, &t)
			}
			h.Racks = append(h.Racks, rec)
		}
	}
	return h, nil
}

var rackIDs = func() []string {
	var out []string
	for i := 1; i <= 16; i++ {
		out = append(out, fmt.Sprintf("r%02d", i))
	}
	return out
}()

func itModule(c cell) *inventory.Module {
	m := &inventory.Module{ID: c.IT, Kind: "it", Vendor: "GPUWorks", Generation: "gb300-nvl72", FailureDomain: c.Domain,
		DependsOn: refs("ctl-net"), RackDesigns: []*inventory.RackDesign{NVL72()}}
	for _, id := range rackIDs {
		r := &inventory.Rack{Path: "site.modules." + c.IT + ".racks." + id, ID: c.IT + "/" + id, Module: c.IT,
			DesignPower: q("130 kW"), GPUs: 72, Nodes: 18, LiquidFraction: q("90 %"), CooledBy: inventory.Ref{To: c.Cooling + "/loop"},
			Design: inventory.Ref{To: "gb300-nvl72"}, DesignOf: m.RackDesigns[0]}
		for _, p := range []string{"a", "b"} {
			r.PDUs = append(r.PDUs, &inventory.PDU{Path: r.Path + ".pdus." + p, ID: r.ID + "/" + p,
				Feed: inventory.Ref{To: c.Power + "/block/" + p}, Breaker: q("250 A")})
		}
		m.Racks = append(m.Racks, r)
	}
	return m
}

func powerModule(c cell) *inventory.Module {
	b := &inventory.Block{Path: "site.modules." + c.Power + ".blocks.block", ID: c.Power + "/block", Module: c.Power,
		Rating: q("2.5 MW"), Voltage: q("415 V"), Frequency: q("50 Hz"), PowerFactor: 0.95, Redundancy: "2N", Powers: refs(c.IT)}
	for _, f := range []string{"a", "b"} {
		b.Feeds = append(b.Feeds, &inventory.Feed{Path: b.Path + ".feeds." + f, ID: b.ID + "/" + f, Block: b, Breaker: q("4000 A"),
			UPS: &inventory.UPS{Rating: q("2.5 MW"), RideThrough: q("5 min")}})
	}
	return &inventory.Module{ID: c.Power, Kind: "power", Vendor: "VoltSkid", Generation: "vs-2500", FailureDomain: c.Domain,
		DependsOn: refs("ctl-net"), Blocks: []*inventory.Block{b}}
}

func coolingModule(c cell) *inventory.Module {
	l := &inventory.Loop{Path: "site.modules." + c.Cooling + ".loops.loop", ID: c.Cooling + "/loop", Module: c.Cooling, Coolant: "pg25",
		SupplyTemp: q("30 degC"), DeltaT: q("10 K"), Redundancy: "N+1", Cools: refs(c.IT)}
	for _, n := range []string{"cdu-1", "cdu-2", "cdu-3"} {
		cdu := &inventory.CDU{ID: l.ID + "/" + n, Capacity: q("1.2 MW"), PumpRedundancy: "N+1"}
		for _, p := range []string{"p1", "p2"} {
			cdu.Pumps = append(cdu.Pumps, &inventory.Pump{ID: cdu.ID + "/" + p, Flow: q("1800 L/min")})
		}
		l.CDUs = append(l.CDUs, cdu)
	}
	return &inventory.Module{ID: c.Cooling, Kind: "cooling", Vendor: "CoolFlow", Generation: "cdu-1200", FailureDomain: c.Domain,
		DependsOn: refs("ctl-net", "water-main"), Loops: []*inventory.Loop{l}}
}

// NVL72 is the worked example's rack design (contracts/examples/
// threemodule/racks.cue) in Go: 8 power shelves of six 5.5 kW PSUs,
// four on PDU a and four on b, 18 compute trays of 6.4 kW (4 GPUs, 2
// CPUs, 4 NICs, a DPU and a BMC each), 9 NVLink switch trays of 1.2 kW,
// a ToR and a management switch; every compute and switch tray liquid.
func NVL72() *inventory.RackDesign {
	slots := func(from, to int) []int {
		var out []int
		for s := from; s <= to; s++ {
			out = append(out, s)
		}
		return out
	}
	part := func(name, kind string, count int, model string) *inventory.PartDesign {
		return &inventory.PartDesign{Name: name, Kind: kind, Count: count, Model: model}
	}
	// sorted by name, as the contract decodes them
	return &inventory.RackDesign{Path: "site.modules.*.rack_designs.gb300-nvl72", Name: "gb300-nvl72", HeightU: 48, Trays: []*inventory.TrayDesign{
		{Name: "compute", Kind: inventory.Compute, HeightU: 1, Slots: append(slots(5, 12), slots(22, 31)...), Model: "GB300 compute tray",
			Power: q("6.4 kW"), Liquid: true, Parts: []*inventory.PartDesign{part("bmc", inventory.BMC, 1, ""),
				part("cpu", inventory.CPU, 2, "Grace"), part("dpu", inventory.DPU, 1, "BlueField-3"), part("gpu", inventory.GPU, 4, "B300"),
				part("nic", inventory.NIC, 4, "ConnectX-8")}},
		{Name: "mgmt", Kind: inventory.ManagementSwitch, HeightU: 1, Slots: []int{46}, Model: "SN2201", Power: q("0.15 kW")},
		{Name: "nvswitch", Kind: inventory.ScaleUpSwitch, HeightU: 1, Slots: slots(13, 21), Model: "NVLink switch tray", Power: q("1.2 kW"), Liquid: true,
			Parts: []*inventory.PartDesign{part("asic", inventory.ASIC, 2, "NVLink 5 switch"), part("bmc", inventory.BMC, 1, "")}},
		{Name: "shelf", Kind: inventory.PowerShelf, HeightU: 1, Slots: append(slots(1, 4), slots(41, 44)...), Model: "33 kW power shelf",
			PSUs: 6, PSUPower: q("5.5 kW"), Feeds: refs("b", "b", "b", "b", "a", "a", "a", "a")},
		{Name: "tor", Kind: inventory.TorSwitch, HeightU: 1, Slots: []int{45}, Model: "SN2201", Power: q("0.15 kW")},
	}}
}

func refs(to ...string) []inventory.Ref {
	out := make([]inventory.Ref, len(to))
	for i, t := range to {
		out[i] = inventory.Ref{To: t}
	}
	return out
}

// q is a quantity as a contract writes it; the generator writes only
// valid ones.
func q(s string) inventory.Q {
	v, err := units.Parse(s)
	if err != nil {
		panic("sitegen: " + err.Error())
	}
	return inventory.Q{Quantity: v, Set: true, Raw: s}
}
