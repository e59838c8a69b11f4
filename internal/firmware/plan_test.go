package firmware

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/discover"
	"github.com/seamdc/seam/internal/hold"
	"github.com/seamdc/seam/internal/inventory"
	"github.com/seamdc/seam/internal/sitegen"
)

// stageRacks are each stage's racks.
func stageRacks(p *Plan) [][]string {
	out := make([][]string, len(p.Stages))
	for i, s := range p.Stages {
		out[i] = s.Racks
	}
	return out
}

// checkPolicy asserts what no stage may break: racks per module, nodes
// out (those held already counted), one control-plane module, the
// canary first and within its racks.
func checkPolicy(t *testing.T, p *Plan, pol Policy, cps map[string][]string) {
	t.Helper()
	for i, s := range p.Stages {
		assert.Equal(t, i+1, s.Number)
		assert.Equal(t, pol.CanaryRacks > 0 && i == 0, s.Canary, "stage %d", s.Number)
		if s.Canary {
			assert.LessOrEqual(t, len(s.Racks), pol.CanaryRacks, "canary %v", s.Racks)
		}
		byModule := map[string]int{}
		for _, r := range s.Racks {
			byModule[strings.Split(r, "/")[0]]++
		}
		cp := 0
		for m, n := range byModule {
			if pol.MaxRacksPerModule > 0 {
				assert.LessOrEqual(t, n, pol.MaxRacksPerModule, "stage %d module %s", s.Number, m)
			}
			if len(cps[m]) > 0 {
				cp++
			}
		}
		if pol.ControlPlanesApart {
			assert.LessOrEqual(t, cp, 1, "stage %d touches %d control-plane modules: %v", s.Number, cp, s.Racks)
		}
		if pol.MaxNodesPerStage > 0 {
			assert.LessOrEqual(t, len(s.Nodes), pol.MaxNodesPerStage, "stage %d", s.Number)
		}
		assert.Empty(t, s.Exceeds)
	}
}

// Stages under each knob of the policy, on the example: every rack
// differs from the baseline (its compute and switch trays run the
// handover's bmc and bios).
func TestStagesUnderPolicy(t *testing.T) {
	s := exampleSite(t)
	d := discoveryOf(t, s)
	cases := []struct {
		name   string
		policy Policy
		cps    map[string][]string
		module string
		stages int
		first  [][]string // the first stages' racks
		last   []string
	}{
		{name: "no limits: one stage", policy: Policy{}, stages: 1},
		{name: "a canary, then a rack of each module at once", policy: Policy{CanaryRacks: 1, MaxRacksPerModule: 1}, stages: 17,
			first: [][]string{{"ma/r01"}, {"ma/r02", "mb/r01", "mc/r01"}, {"ma/r03", "mb/r02", "mc/r02"}}, last: []string{"mb/r16", "mc/r16"}},
		{name: "control planes apart: a module at a time", policy: Policy{CanaryRacks: 1, MaxRacksPerModule: 1, ControlPlanesApart: true}, cps: everyModule, stages: 48,
			first: [][]string{{"ma/r01"}, {"ma/r02"}}, last: []string{"mc/r16"}},
		{name: "control planes apart, none declared", policy: Policy{CanaryRacks: 1, MaxRacksPerModule: 1, ControlPlanesApart: true}, stages: 17},
		{name: "one control plane: its module alone, the others together", policy: Policy{MaxRacksPerModule: 2, ControlPlanesApart: true},
			cps: map[string][]string{"mb": {"slurmctld"}}, stages: 8, first: [][]string{{"ma/r01", "ma/r02", "mb/r01", "mb/r02", "mc/r01", "mc/r02"}}},
		{name: "nodes per stage", policy: Policy{MaxNodesPerStage: 36}, stages: 24, first: [][]string{{"ma/r01", "ma/r02"}}},
		{name: "one module, a canary of two racks", policy: Policy{CanaryRacks: 2, MaxRacksPerModule: 2}, module: "mb", stages: 8,
			first: [][]string{{"mb/r01", "mb/r02"}, {"mb/r03", "mb/r04"}}, last: []string{"mb/r15", "mb/r16"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := NewPlan(exampleSet(t, c.policy), s, d, Options{Module: c.module, ControlPlanes: c.cps})
			require.NoError(t, err)
			require.Len(t, p.Stages, c.stages, "%v", stageRacks(p))
			checkPolicy(t, p, c.policy, c.cps)
			got := stageRacks(p)
			for i, want := range c.first {
				assert.Equal(t, want, got[i], "stage %d", i+1)
			}
			if c.last != nil {
				assert.Equal(t, c.last, got[len(got)-1])
			}
			racks := 0
			for _, r := range got {
				racks += len(r)
			}
			want := 48
			if c.module != "" {
				want = 16
			}
			assert.Equal(t, want, racks, "every rack that differs is in one stage")
			assert.Equal(t, want*18, p.Summary.Nodes)
		})
	}
}

// pairedSite is a generated module whose scale-up domains span two
// racks each (NVL36×2): r01 with r02, r03 with r04, …
func pairedSite(t *testing.T) *Site {
	t.Helper()
	site, h, err := sitegen.Inventory(1)
	require.NoError(t, err)
	m := site.Module("m001")
	for i := 1; i <= 16; i += 2 {
		m.ScaleUp = append(m.ScaleUp, &inventory.ScaleUpDomain{ID: fmt.Sprintf("m001/nvl-%02d", i), Module: "m001",
			Racks: []inventory.Ref{{To: fmt.Sprintf("r%02d", i)}, {To: fmt.Sprintf("r%02d", i+1)}}})
	}
	g, _ := inventory.Build(site, h)
	return NewSite(g)
}

// Whole scale-up domains: a domain's two racks go in one stage; without
// the knob they may go apart; a domain larger than the policy allows is
// FW008 to vet, and a plan gives it a stage of its own that says so.
func TestWholeScaleUpDomains(t *testing.T) {
	s := pairedSite(t)
	d := discoveryOf(t, s)
	pol := Policy{CanaryRacks: 2, MaxRacksPerModule: 2, WholeScaleUpDomains: true}
	p, err := NewPlan(exampleSet(t, pol), s, d, Options{})
	require.NoError(t, err)
	checkPolicy(t, p, pol, nil)
	require.Len(t, p.Stages, 8)
	assert.Equal(t, []string{"m001/r01", "m001/r02"}, p.Stages[0].Racks)
	assert.Equal(t, []string{"m001/r03", "m001/r04"}, p.Stages[1].Racks)

	apart := Policy{MaxRacksPerModule: 1}
	p, err = NewPlan(exampleSet(t, apart), s, d, Options{})
	require.NoError(t, err)
	checkPolicy(t, p, apart, nil)
	require.Len(t, p.Stages, 16)
	assert.Equal(t, []string{"m001/r01"}, p.Stages[0].Racks)
	assert.Equal(t, []string{"m001/r02"}, p.Stages[1].Racks)
	// r01's half of the domain's switch trays reset: r02's nodes run on,
	// the domain degraded (what --what-if shows)
	p, err = NewPlan(exampleSet(t, apart), s, d, Options{WhatIf: true})
	require.NoError(t, err)
	assert.Len(t, p.Stages[0].Nodes, 18)
	assert.Equal(t, []string{"m001/r01"}, p.Stages[0].BlastRadius.Racks)
	assert.Empty(t, p.Stages[0].BlastRadius.Domains)
	assert.Contains(t, impactText(*p.Stages[0].BlastRadius), "m001/scale-up/nvl-01 (")

	tooBig := Policy{MaxRacksPerModule: 1, WholeScaleUpDomains: true}
	set := exampleSet(t, tooBig)
	var rules []string
	for _, dg := range Vet(set, s) {
		rules = append(rules, dg.Rule+": "+dg.Message)
	}
	assert.Contains(t, rules, "FW008: policy: scale-up domain m001/scale-up/nvl-01 (racks m001/r01, m001/r02) holds 2 racks and 36 nodes, more than a stage may take (max_racks_per_module 1): with whole_scale_up_domains a stage updates it whole")
	p, err = NewPlan(set, s, d, Options{})
	require.NoError(t, err)
	require.Len(t, p.Stages, 8)
	assert.Equal(t, "max_racks_per_module 1: scale-up domain m001/scale-up/nvl-01 (racks m001/r01, m001/r02) holds 2 rack(s)", p.Stages[0].Exceeds)
}

// Nodes another owner holds are not updated and place no firmware
// hold; they are listed with their owners and count against the
// stage's nodes: with one held in ma/r01, it and ma/r02 would be 36
// nodes, more than 35.
func TestHeldNodesSkippedAndCounted(t *testing.T) {
	s := exampleSite(t)
	held := map[string][]hold.Owner{
		"ma/r01/compute-07": {"rma:CASE-7"},
		"ma/r03/compute-01": {"maintenance:CHG-1", "person:alice"},
	}
	pol := Policy{MaxNodesPerStage: 35}
	p, err := NewPlan(exampleSet(t, pol), s, discoveryOf(t, s), Options{Module: "ma", Held: held, Rollout: "fw-test"})
	require.NoError(t, err)
	checkPolicy(t, p, pol, nil)
	require.Len(t, p.Stages, 16)
	st := p.Stages[0]
	assert.Equal(t, []string{"ma/r01"}, st.Racks, "the held node counts: 17 updated + 1 held + 18 of ma/r02 is 36")
	require.Len(t, st.Nodes, 18)
	assert.Equal(t, StageNode{Key: "ma/r01/compute-07", Name: "gpu-a-r01-n07", Action: NodeHeld}, st.Nodes[6])
	assert.Equal(t, []Skipped{{Key: "ma/r01/compute-07", Name: "gpu-a-r01-n07", Owners: []hold.Owner{"rma:CASE-7"}}}, st.Skipped)
	require.Len(t, st.Holds, 1)
	assert.Equal(t, hold.Owner("firmware:fw-test-s01"), st.Holds[0].Owner)
	assert.Len(t, st.Holds[0].Nodes, 17)
	assert.NotContains(t, st.Holds[0].Nodes, "ma/r01/compute-07")
	assert.Equal(t, "firmware rollout fw-test, stage 1: bios, bmc", st.Holds[0].Why)
	for _, tp := range st.Trays {
		assert.NotEqual(t, "ma/r01/compute-07", tp.Key, "a held node's tray is not updated")
	}
	assert.Equal(t, []Skipped{{Key: "ma/r03/compute-01", Name: "gpu-a-r03-n01", Owners: []hold.Owner{"maintenance:CHG-1", "person:alice"}}}, p.Stages[2].Skipped)
	assert.Equal(t, 2, p.Summary.HeldBack)
	assert.Equal(t, 16*18-2, p.Summary.Nodes)
}

// Each tray's updates come in its baseline's order, with the image,
// targets, apply time and reset; then its resets and its checks: the
// versions read back, and a node's burn-in.
func TestTrayUpdatesResetsChecks(t *testing.T) {
	s := exampleSite(t)
	d := discoveryOf(t, s, discover.Finding{Kind: discover.FirmwareDrift, Element: "ma/r01/compute-07", Field: "bios", Found: "1.5.0"})
	set := exampleSet(t, Policy{CanaryRacks: 1, MaxRacksPerModule: 1})
	p, err := NewPlan(set, s, d, Options{Module: "ma"})
	require.NoError(t, err)
	trays := map[string]*TrayPlan{}
	for _, tp := range p.Stages[0].Trays {
		trays[tp.Key] = tp
	}
	require.Len(t, trays, 27, "18 compute and 9 switch trays; the shelves are up to date")
	bmc, bios := set.Baselines["GB300 compute tray"].Components[0], set.Baselines["GB300 compute tray"].Components[1]
	assert.Equal(t, &TrayPlan{Key: "ma/r01/compute-01", Kind: "compute", Node: "gpu-a-r01-n01", Baseline: "GB300 compute tray",
		Updates: []Update{
			{Component: "bmc", From: "25.06-1", To: "25.09-2", SHA256: bmc.SHA256, URI: bmc.URI, Targets: []string{"/redfish/v1/UpdateService/FirmwareInventory/BMC"}, ApplyTime: Immediate, Reset: ResetManager},
			{Component: "bios", From: "1.4.2", To: "1.5.0", SHA256: bios.SHA256, URI: bios.URI, Targets: []string{"/redfish/v1/UpdateService/FirmwareInventory/BIOS"}, ApplyTime: OnReset, Reset: ResetSystem},
		},
		Resets: []string{ResetManager, ResetSystem},
		Checks: []Check{{Check: CheckVersion, Component: "bmc", Want: "25.09-2"}, {Check: CheckVersion, Component: "bios", Want: "1.5.0"}, {Check: CheckBurnin}},
	}, trays["ma/r01/compute-01"])
	// bios drifted to the baseline already: only its BMC is updated
	require.Len(t, trays["ma/r01/compute-07"].Updates, 1)
	assert.Equal(t, "bmc", trays["ma/r01/compute-07"].Updates[0].Component)
	sw := trays["ma/r01/nvswitch-01"]
	assert.Equal(t, []string{"bmc", "bios"}, []string{sw.Updates[0].Component, sw.Updates[1].Component})
	assert.NotContains(t, sw.Checks, Check{Check: CheckBurnin}, "a switch tray is no node")
	assert.Equal(t, []Difference{
		{Baseline: "GB300 compute tray", Component: "bmc", From: "25.06-1", To: "25.09-2", Trays: 288},
		{Baseline: "GB300 compute tray", Component: "bios", From: "1.4.2", To: "1.5.0", Trays: 287},
		{Baseline: "NVLink switch tray", Component: "bmc", From: "25.06-1", To: "25.09-1", Trays: 144},
		{Baseline: "NVLink switch tray", Component: "bios", From: "1.4.2", To: "1.5.0", Trays: 144},
	}, p.Differences)
	assert.Equal(t, Summary{Trays: 560, UpToDate: 128, Differ: 432, Updates: 863, Nodes: 288, Stages: 16}, p.Summary)
}

// A component the trays' BMCs do not report is updated from "(not
// reported)"; a baseline already met plans nothing.
func TestNotReportedAndUpToDate(t *testing.T) {
	s := exampleSite(t)
	d := discoveryOf(t, s)
	set := exampleSet(t, Policy{MaxRacksPerModule: 1})
	c := set.Baselines["GB300 compute tray"]
	c.Components = append(c.Components, &Component{Name: "gpu", Version: "97.00.A1", SHA256: strings.Repeat("ab", 32), Targets: []string{"/redfish/v1/UpdateService/FirmwareInventory/GPU"},
		ApplyTime: OnReset, Reset: ResetSystem})
	p, err := NewPlan(set, s, d, Options{Module: "mc"})
	require.NoError(t, err)
	assert.Contains(t, p.Differences, Difference{Baseline: "GB300 compute tray", Component: "gpu", From: "", To: "97.00.A1", Trays: 288})
	var text bytes.Buffer
	require.NoError(t, p.WriteText(&text))
	assert.Contains(t, text.String(), "GB300 compute tray  gpu   (not reported) → 97.00.A1  288 tray(s)")

	met := exampleSet(t, Policy{MaxRacksPerModule: 1})
	for _, b := range met.Baselines {
		for _, c := range b.Components {
			c.Version = map[string]string{"bmc": "25.06-1", "bios": "1.4.2", "shelf": "2.1.0"}[c.Name]
		}
	}
	p, err = NewPlan(met, s, d, Options{})
	require.NoError(t, err)
	assert.Empty(t, p.Stages)
	assert.Equal(t, Summary{Trays: 1680, UpToDate: 1680}, p.Summary)
	text.Reset()
	require.NoError(t, p.WriteText(&text))
	assert.Contains(t, text.String(), "\nnothing to update\n")
}

// What a stage takes down (--what-if) follows each update's reset: a
// host reset stops the node, a BMC's own reset leaves it running
// unmanaged. Either way the updated nodes are held for their stage.
func TestBlastRadiusFollowsResets(t *testing.T) {
	s := exampleSite(t)
	d := discoveryOf(t, s)
	set := exampleSet(t, Policy{MaxRacksPerModule: 1})
	p, err := NewPlan(set, s, d, Options{Module: "ma", WhatIf: true})
	require.NoError(t, err)
	imp := p.Stages[0].BlastRadius
	require.NotNil(t, imp)
	assert.Len(t, imp.Nodes, 18)
	assert.Equal(t, []string{"ma/r01"}, imp.Racks)
	assert.Equal(t, []string{"ma/r01/scale-up"}, imp.Domains)

	bmcOnly := exampleSet(t, Policy{MaxRacksPerModule: 1})
	bmcOnly.Baselines = map[string]*Baseline{"GB300 compute tray": {Key: "GB300 compute tray", Components: bmcOnly.Baselines["GB300 compute tray"].Components[:1]}}
	p, err = NewPlan(bmcOnly, s, d, Options{Module: "ma", WhatIf: true})
	require.NoError(t, err)
	st := p.Stages[0]
	require.NotNil(t, st.BlastRadius)
	assert.False(t, st.BlastRadius.Stops(), "a BMC's reset stops no node: %v", st.BlastRadius.Nodes)
	require.Len(t, st.BlastRadius.Degraded, 18)
	assert.Equal(t, "ma/r01/compute-01", st.BlastRadius.Degraded[0].Key)
	assert.Equal(t, "stops no node; degraded: ma/r01/compute-01 (its BMC failed: it runs unmanaged), ma/r01/compute-02 (its BMC failed: it runs unmanaged), ma/r01/compute-03 (its BMC failed: it runs unmanaged) and 15 more",
		impactText(*st.BlastRadius))
	assert.Len(t, st.Holds[0].Nodes, 18, "the updated nodes are held all the same")

	p, err = NewPlan(set, s, d, Options{Module: "ma"})
	require.NoError(t, err)
	assert.Nil(t, p.Stages[0].BlastRadius, "only with --what-if")
}

// Trays not read where the inventory puts them are not updated and are
// listed with why; a node among them that its stage's updates stop is
// held with the others.
func TestUnreachedTrays(t *testing.T) {
	s := exampleSite(t)
	d := discoveryOf(t, s,
		discover.Finding{Kind: discover.MissingTray, Element: "ma/r01/compute-18", Message: "node gpu-a-r01-n18 (ma/r01/compute-18) at ma/r01 U31: no BMC reports it"},
		discover.Finding{Kind: discover.WrongRack, Element: "ma/r02/compute-10", Message: "in the wrong rack"},
		discover.Finding{Kind: discover.ExtraTray, Element: "ma/r01 U33", Message: "a tray where the inventory has none"})
	p, err := NewPlan(exampleSet(t, Policy{MaxRacksPerModule: 1}), s, d, Options{Module: "ma"})
	require.NoError(t, err)
	assert.Equal(t, []Unreached{
		{Tray: "ma/r01/compute-18", Node: "gpu-a-r01-n18", Why: "node gpu-a-r01-n18 (ma/r01/compute-18) at ma/r01 U31: no BMC reports it"},
		{Tray: "ma/r02/compute-10", Node: "gpu-a-r02-n10", Why: "in the wrong rack"},
	}, p.Unreached)
	assert.Equal(t, 2, p.Summary.Unreached)
	for _, tp := range p.Stages[0].Trays {
		assert.NotEqual(t, "ma/r01/compute-18", tp.Key)
	}
	assert.Contains(t, p.Stages[0].Nodes, StageNode{Key: "ma/r01/compute-18", Name: "gpu-a-r01-n18", Action: NodeStopped})
}

// Bad discoveries: not JSON (file:line:col), another document (a
// reconcile event), another site, a tray the inventory does not have,
// part of the site only.
func TestDiscoveryRefused(t *testing.T) {
	s := exampleSite(t)
	set := exampleSet(t, Policy{MaxRacksPerModule: 1})
	_, err := ParseDiscovery("d.json", []byte("{\n  \"site\": \"threemodule\",\n  \"bmcs\": 3,,\n}"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "d.json:3:14: not a discovery (sat discover --format json)")
	_, err = ParseDiscovery("ev.json", []byte(`{"source": "sat discover 0.2.0", "type": "inventory.reconcile", "site": "threemodule", "findings": []}`))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `ev.json:1:2: not a discovery (sat discover --format json): json: unknown field "source"`)

	plan := func(site string, declared int, f ...discover.Finding) error {
		b, err := json.Marshal(&discover.Report{Site: site, Declared: declared, Findings: f})
		require.NoError(t, err)
		d, err := ParseDiscovery("disc.json", b)
		require.NoError(t, err)
		_, err = NewPlan(set, s, d, Options{Module: "ma"})
		return err
	}
	assert.EqualError(t, plan("other", 1680), "disc.json: a discovery of site other, not threemodule")
	assert.EqualError(t, plan("threemodule", 1680, discover.Finding{Kind: discover.FirmwareDrift, Element: "ma/r99/compute-01", Field: "bmc", Found: "1"}),
		"disc.json: tray ma/r99/compute-01: no compute tray, scale-up switch tray or power shelf of threemodule has that key (a discovery of another inventory?)")
	assert.EqualError(t, plan("threemodule", 70),
		"disc.json: the discovery compared 70 declared trays, and module ma has 560: a discovery of part of the site (--racks) cannot say what the others run; discover module ma whole")
	assert.NoError(t, plan("threemodule", 560), "a discovery of the module alone")
	assert.NoError(t, plan("threemodule", 1680))

	d := discoveryOf(t, s)
	_, err = NewPlan(set, s, d, Options{Module: "mz"})
	assert.EqualError(t, err, `module "mz": no module of threemodule holds racks with trays (the modules: ma, mb, mc)`)
	_, err = NewPlan(set, s, d, Options{Rollout: "spring rollout"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `rollout "spring rollout": owner "firmware:spring rollout-s01": no spaces`)
}

// The plan is the same, byte for byte, however its inputs' maps are
// built; its rollout name defaults to the baseline digest's.
func TestPlanDeterministic(t *testing.T) {
	set := exampleSet(t, Policy{CanaryRacks: 1, MaxRacksPerModule: 1, WholeScaleUpDomains: true, ControlPlanesApart: true})
	out := func() (string, string) {
		s := exampleSite(t)
		held := map[string][]hold.Owner{}
		for i := 1; i <= 16; i++ {
			held[fmt.Sprintf("mb/r%02d/compute-%02d", i, i)] = []hold.Owner{"rma:CASE-7"}
		}
		p, err := NewPlan(set, s, discoveryOf(t, s), Options{ControlPlanes: everyModule, Held: held, WhatIf: true, Tool: "sat test"})
		require.NoError(t, err)
		var js, text bytes.Buffer
		require.NoError(t, p.WriteJSON(&js))
		require.NoError(t, p.WriteText(&text))
		return js.String(), text.String()
	}
	js, text := out()
	for range 3 {
		js2, text2 := out()
		require.Equal(t, js, js2)
		require.Equal(t, text, text2)
	}
	var back map[string]any
	require.NoError(t, json.Unmarshal([]byte(js), &back))
	assert.Equal(t, Format, back["format"])
	assert.Equal(t, "fw-"+strings.TrimPrefix(set.Digest, "sha256:")[:8], back["rollout"])
	assert.Equal(t, set.Digest, back["baseline"].(map[string]any)["digest"])
	assert.Len(t, back["stages"], 48)
}
